"""The PyramidCLIP chapter's plan and claims (``vlp_lib.papers.pyramidclip.book``): configs, paper numbers, verdicts."""

import re

import pytest

from vlp_lib.book.claims import judge
from vlp_lib.data import training
from vlp_lib.papers.pyramidclip.book import chapter, paper


def _records(values: list[float], metric: str) -> list[dict]:
    return [{"seed": s, "metrics": {metric: v}, "config": {"seed": s}} for s, v in enumerate(values)]


def test_every_row_has_a_valid_config_with_warmup_at_most_a_tenth(monkeypatch):
    monkeypatch.setattr(training, "generate", lambda *a, **k: pytest.fail("a plan generates no data"))
    rows = {*chapter.TABLE6, *chapter.BENCHMARK, *chapter.CONTROLS, *chapter.ALPHA_SWEEP}
    for row in rows:
        c = chapter.config(row, "laptop", 0)
        steps = c.train.epochs * c.train_size // c.train.batch_size
        assert 1 <= c.train.warmup_steps <= 0.1 * steps
        assert c.train.augmentation == "none"  # the global view G (crop 90-100%)
        assert {"presence", "relation", *("shapes10", "shapes_colours", "clutter10")} <= set(c.eval.tasks)
    assert chapter.config(chapter.CLEAN[0], "laptop").world_knobs["mismatch_rate"] == 0.0
    assert (
        chapter.config(chapter.CLIP_2E, "laptop").train.epochs
        == 2 * chapter.config(chapter.CLIP, "laptop").train.epochs
    )


def test_table6_is_cumulative_and_its_weights_sum_to_one():
    terms = [set(row.kwargs().get("weights", {"clip": 1.0})) for row in chapter.TABLE6]
    assert terms[0] == {"clip"} and terms[1] == {"lt"}
    for before, after in zip(terms[1:], terms[2:]):
        assert before <= after and len(after - before) <= 1
    for row in chapter.TABLE6[1:]:
        assert sum(row.kwargs()["weights"].values()) == pytest.approx(1.0)
    assert (
        chapter.TABLE6[-2].kwargs()["alpha"] == 0.0 and chapter.TABLE6[-1].kwargs()["alpha"] == paper.NUMBERS["alpha"]
    )


def test_claims_take_the_paper_numbers_from_paper_py():
    by_id = {c.id: c for c in chapter.CLAIMS}
    t6 = paper.TABLE6["ResNet50"]
    # P1's pyramid has no ROI terms: Table 6's nearest row without them (L_LT + L_GS, not softened), 34.7 vs 29.2
    assert by_id["P1"].paper_effect == pytest.approx((t6["+ L_GS"][0] - t6["L_CLIP"][0]) / 100) == 0.055
    assert by_id["P1_detector"].paper_effect == pytest.approx((t6["+ Soften"][0] - t6["L_CLIP"][0]) / 100)
    assert by_id["P7"].paper_effect == pytest.approx((t6["+ L_GS"][0] - t6["L_LT"][0]) / 100)
    assert by_id["P3"].paper_effect == pytest.approx((19.2 - 5.5) / 100)
    assert {c.notebook for c in chapter.CLAIMS} <= set(chapter.CLAIM_NOTEBOOKS)


def test_the_headline_is_the_pyramid_without_the_detector_and_the_detector_is_a_claim_of_its_own():
    by_id = {c.id: c for c in chapter.CLAIMS}
    assert (by_id["P1"].better, by_id["P1"].reference) == (chapter.NO_RELATION, chapter.CLIP)
    assert not chapter.uses_rois(chapter.check_weights(chapter.NO_RELATION.kwargs()["weights"]))
    assert (by_id["P1_detector"].better, by_id["P1_detector"].reference) == (chapter.PYRAMID, chapter.CLIP)
    assert chapter.PRIMARY == "P1" and by_id["P1"].paper_effect < by_id["P1_detector"].paper_effect
    # the primary claim at the longer length: its two rows trained LONGER times as long
    long_claim = by_id["P1"].mapped(chapter.longer)
    assert [row.units for row in long_claim.rows()] == [chapter.LONGER, chapter.LONGER]
    epochs = [chapter.config(row, "smoke", 0).to_dict()["epochs"] for row in (long_claim.better, by_id["P1"].better)]
    assert epochs[0] == chapter.LONGER * epochs[1]


def test_a_difference_of_gains_is_judged_per_seed():
    claim = next(c for c in chapter.CLAIMS if c.id == "P3")
    metric = claim.metric
    results = {
        claim.better: _records([0.50, 0.52, 0.51], metric),
        claim.reference: _records([0.40, 0.41, 0.40], metric),
        claim.minus[0]: _records([0.45, 0.46, 0.45], metric),
        claim.minus[1]: _records([0.44, 0.45, 0.45], metric),
    }
    line = judge(claim, results, chapter.PAPER)
    # the direction is reproduced; the size (+10 pp) is below the paper's +13.7 pp: two answers
    assert line["verdict"] == "reproduced, smaller than claimed" and line["seeds"] == 3
    assert line["book_value"].startswith("+10.00")  # (10, 11, 11) - (1, 1, 0) pp = 9, 10, 11
    missing = judge(claim, {claim.better: results[claim.better]}, chapter.PAPER)
    assert missing["verdict"] == "not run"


def test_claims_table_refuses_an_unknown_notebook():
    with pytest.raises(ValueError, match="notebook"):
        chapter.claims_table({}, notebook="ablation")


def test_every_pyramid_notebook_shows_its_claims_and_all_reach_the_scorecard():
    import json

    from vlp_lib.book import report
    from vlp_lib.paths import REPO_ROOT

    card = report.scorecard("smoke")
    card_ids = set(card.loc[card["paper"] == "PyramidCLIP", "id"])
    shown = set()
    for name in chapter.CLAIM_NOTEBOOKS:
        cells = json.loads((REPO_ROOT / "notebooks" / f"pyramidclip_{name}.ipynb").read_text())["cells"]
        assert f'claims_table(results, notebook="{name}")' in "".join("".join(c["source"]) for c in cells)
        shown |= set(chapter.claims_table({}, notebook=name).index)
    assert shown == card_ids == {c.id for c in chapter.CLAIMS}


def test_every_claim_on_a_run_with_the_trained_detector_says_so_and_has_its_counterpart_without():
    by_id = {c.id: c for c in chapter.CLAIMS}
    for row in {*chapter.TABLE6, *chapter.BENCHMARK, *chapter.CONTROLS, *chapter.ALPHA_SWEEP}:
        # "untrained detector" (the control) is no trained detector: the word stands alone
        said = re.search(rf"\b{chapter.TRAINED_DETECTOR}", row.label) is not None
        assert said == chapter.uses_trained_detector(row), row.label
    assert not chapter.uses_trained_detector(chapter.DETECTOR_CONTROL)
    for claim in chapter.CLAIMS:
        says = re.search(rf"\b{chapter.TRAINED_DETECTOR}|detector trained", claim.text) is not None
        assert says == chapter.carries_detector(claim), claim.id
    for claim_id in ("P2", "P4"):
        full, without = by_id[claim_id], by_id[f"{claim_id}_no_detector"]
        assert (full.better, without.better) == (chapter.PYRAMID, chapter.NO_RELATION)
        assert (full.reference, full.metric, full.paper_effect) == (
            without.reference,
            without.metric,
            without.paper_effect,
        )
        assert not chapter.carries_detector(without) and without.knobs == full.knobs


def test_a_paper_difference_inside_the_margin_is_judged_as_a_tie():
    from vlp_lib.book import report

    claim = next(c for c in chapter.CLAIMS if c.id == "P3_i2t")
    assert claim.kind == "equivalence" and claim.margin == report.NO_EFFECT_MARGIN
    assert abs(claim.paper_effect) < claim.margin
    metric = claim.metric
    tie = {
        claim.better: _records([0.300, 0.310, 0.305], metric),
        claim.reference: _records([0.301, 0.309, 0.305], metric),
    }
    assert judge(claim, tie, chapter.PAPER)["verdict"] == "reproduced"
    apart = {claim.better: _records([0.20, 0.21, 0.20], metric), claim.reference: _records([0.32, 0.33, 0.33], metric)}
    assert judge(claim, apart, chapter.PAPER)["verdict"] == "opposite"


def test_the_opening_page_says_which_decided_claims_hold_without_the_detector():
    import pandas as pd

    from vlp_lib.book import findings

    lines = pd.DataFrame(
        {
            "id": ["P1", "P1_detector", "P4_no_detector", "P6", "P12"],
            "verdict_fdr": [
                "smaller than claimed",
                "reproduced",
                "opposite",
                "inconclusive",
                "floor: the reference has not learned",
            ],
        }
    )
    note = chapter.headline_note(lines)
    assert note.startswith("Of the claims decided without the trained detector, none of 2 holds (P1: smaller than")
    assert "every claim that holds with it (P1_detector)" in note and "P6" not in note and "P12" not in note
    assert chapter.headline_note(lines[lines["id"] == "P6"]) == ""
    card = lines.assign(
        paper=chapter.PAPER,
        verdict=lines["verdict_fdr"],
        primary=False,
        claim="c",
        source="s",
        book_value="",
        interval="",
        paper_value="",
        verdict_longer="",
        metric="m",
    )
    text = findings.headline(card, chapter.PAPER, [0, 1, 2], note)
    assert note in text and "cost" not in text  # no cost claims: no clause on them
    costs = card.assign(verdict_fdr=["as claimed", *card["verdict_fdr"][1:]])
    assert "judged as a cost" in findings.headline(costs, chapter.PAPER, [0, 1, 2])
