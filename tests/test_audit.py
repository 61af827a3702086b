"""The config audit (``vlp_lib.book.audit``): every claim's runs differ only in the fields it declares; and a claim's
reference must have learned (``claims.reference_learning``) before the claim is judged."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from vlp_lib import experiment, runs
from vlp_lib.book import audit, claims, report
from vlp_lib.book.claims import Claim, declare
from vlp_lib.papers import chapters

# The comparisons that still differ in more than their idea, each to be mended by re-made runs (the referee's
# instances): TP_Postag at 64 px against every other variant at 32 in the drawings' line-up (the head to head's is at
# one resolution). The list only shrinks: a claim that starts differing in an undeclared field fails here, and so
# does a mended one left on the list.
NOT_YET_MATCHED: dict[tuple[str, str], set[str]] = {}


def _claim(**fields) -> Claim:
    return Claim(
        id="T1",
        text="a test claim",
        source="none",
        kind="direction",
        metric="avg3/linear",
        paper_value="",
        better="a",
        reference="b",
        **fields,
    )


def _chapter(claim: Claim, configs: dict) -> SimpleNamespace:
    return SimpleNamespace(
        name="test",
        claim_list=lambda: [claim],
        resolved_claim=lambda c, scale: c,
        claim_configs=lambda c, scale, seed: {row: cfg.replace(seed=seed) for row, cfg in configs.items()},
        seeds=lambda scale: [0, 1],
    )


def test_a_claim_whose_runs_differ_in_an_undeclared_field_fails_the_audit(monkeypatch, capsys):
    base = experiment.make_config("smoke", method="clip")
    chapter = _chapter(declare([_claim()], {"T1": ("lr",)})[0], {"a": base.replace(image_size=64), "b": base})
    monkeypatch.setattr(audit, "chapters", lambda: [chapter])
    assert audit.main([]) == 1
    printed = capsys.readouterr().out
    assert "UNDECLARED: image_size" in printed and "1 compare runs that differ" in printed
    # declared with a reason, the same runs pass, and the scorecard's text names the difference
    declared = declare([_claim()], {"T1": ("lr",)}, {"T1": (("image_size", "the paper's own setting"),)})[0]
    monkeypatch.setattr(audit, "chapters", lambda: [_chapter(declared, {"a": base.replace(image_size=64), "b": base})])
    assert audit.main([]) == 0
    assert declared.differs_in() == "lr + image_size (the paper's own setting)"


def test_the_audit_reads_the_fields_a_method_and_its_recipe_change():
    base = experiment.make_config("smoke", method="clip")
    proto = experiment.make_config("smoke", method="protoclip", method_kwargs={"use_pbt": False})
    assert {"method", "method_kwargs.use_pbt"} <= audit.differing_fields(proto, base)
    longer = base.replace(epochs=4, warmup_steps=base.train.warmup_steps * 4)
    assert audit.differing_fields(longer, base) == {"epochs", "warmup_steps"}
    assert audit.covers("method", "method_kwargs.use_pbt") and audit.covers("epochs", "warmup_steps")
    assert not audit.covers("method_kwargs.k", "method_kwargs.kmeans_iters") and not audit.covers("lr", "epochs")
    # which other tasks or probes a run evaluates changes none of the metrics both runs have
    assert audit.differing_fields(base.replace(eval_tasks=["shapes10"], eval_probes=False), base) == set()
    # a pair on two seeds is not a pair
    assert audit.differing_fields(base.replace(seed=1), base) == {"seed"}


def test_declaring_fields_for_a_claim_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="T2"):
        declare([_claim()], {"T2": ("lr",)})


def test_every_chapter_compares_runs_that_differ_only_in_what_its_claims_declare():
    """The book's audit at laptop scale, configs only: nothing but ``NOT_YET_MATCHED`` differs undeclared, and every
    claim that compares runs declares its idea's fields."""
    lines = [line for chapter in chapters() for line in audit.audit_chapter(chapter)]
    assert len(lines) == sum(len(c.claim_list()) for c in chapters())
    undeclared = {(line.chapter, line.id): set(line.undeclared) for line in lines if line.undeclared}
    assert undeclared == NOT_YET_MATCHED
    unnamed = [line.id for line in lines if line.differs and not line.declared]
    assert unnamed == []


def _records(kind_gains: dict[int, float], untrained: dict[int, float] | None) -> list[dict]:
    """A row's records on seeds 0-4 of a smoke CLIP config, with metric ``avg3/linear``; ``untrained`` stores each
    seed's network untrained (its metric) in the results store."""
    out = []
    for seed, value in kind_gains.items():
        config = experiment.make_config("smoke", method="clip", seed=seed).to_dict()
        if untrained is not None:
            runs.save(runs.UNTRAINED_KIND, config, {"avg3/linear": untrained[seed]})
        out.append({"config": config, "metrics": {"avg3/linear": value}, "scope": runs.CORE, "kind": runs.RUN_KIND})
    return out


def test_a_claim_whose_reference_has_not_learned_is_at_the_floor_and_leaves_the_fdr_family():
    claim = _claim()
    seeds = range(5)
    better = {"avg3/linear": [0.30 + 0.01 * s for s in seeds]}
    untrained = {s: 0.20 + 0.003 * (s % 2) for s in seeds}
    learned_reference = {s: 0.25 + 0.004 * s for s in seeds}  # +5 pp over its untrained network on every seed
    results = {"a": _records(dict(enumerate(better["avg3/linear"])), None), "b": _records(learned_reference, untrained)}
    line = claims.judge(claim, results, "ToyCLIP")
    assert line["reference_learned"].startswith("yes, +") and line["verdict"] != report.FLOOR
    flat = {s: untrained[s] + (0.002 if s % 2 else -0.002) for s in seeds}  # no gain over the untrained network
    results["b"] = _records(flat, untrained)
    floor = claims.judge(claim, results, "ToyCLIP")
    assert floor["verdict"] == report.FLOOR and floor["reference_learned"].startswith("no, ")
    assert floor["interval"] and floor["book_value"]  # its numbers stay shown
    card = report.with_fdr(pd.DataFrame([{**floor, "id": "T1"}, {**line, "id": "T2"}]))
    assert np.isnan(card["q"].iloc[0]) and len(report.tested_claims(card)) == 1


def test_a_sweeps_reference_is_the_end_of_the_grid_its_verdict_compares_with():
    """iCLIP's I2_zs compares r = 0.5 with r = 0.9, not with the grid's first setting: r = 0.9's learning is checked."""
    grid = (("0.1", "r1"), ("0.5", "r5"), ("0.9", "r9"))
    claim = replace(_claim(), kind="sweep", better=None, reference=None, grid=grid, paper_best="0.5", endpoint="0.9")
    assert claim.pairs() == [("r5", "r9")]
    assert claim.mapped(lambda row: row + "x3").pairs() == [("r5x3", "r9x3")]


def test_a_reference_without_a_stored_untrained_network_is_not_judged_on_it():
    results = {"a": _records({0: 0.3, 1: 0.31}, None), "b": _records({0: 0.2, 1: 0.21}, None)}
    line = claims.judge(_claim(), results, "ToyCLIP")
    assert line["reference_learned"] == claims.NOT_CHECKED and line["verdict"] != report.FLOOR


def _line_records(values: dict[int, float]) -> list[dict]:
    return [{"config": {"seed": s}, "metrics": {"avg3/linear": v}} for s, v in values.items()]


@pytest.mark.parametrize(
    ("short", "long", "word"),
    [
        (0.05, 0.08, "holds"),  # +5 pp, then +8 pp: the paper's direction at both lengths
        (0.0, 0.06, "appears only with more training"),
        (0.05, 0.0, "fades with more training"),
        (0.05, -0.06, "flips"),
        (0.0, 0.0, "no direction at either length (no effect at both)"),  # inside the margin at both: decided
        (-0.06, -0.08, "opposite at both lengths"),  # never "undecided": both lengths decide, against the paper
        (0.0, -0.06, "the opposite appears only with more training"),
    ],
)
def test_a_headline_claim_is_judged_again_at_the_longer_length(short, long, word):
    claim = _claim(paper_effect=0.05)
    noise = {s: 0.004 * ((s * 7) % 5 - 2) for s in range(5)}
    reference = {s: 0.30 + 0.01 * s for s in range(5)}
    rows = {
        "a": _line_records({s: reference[s] + short + noise[s] for s in range(5)}),
        "b": _line_records(reference),
        "a4": _line_records({s: reference[s] + 0.1 + long + noise[(s + 1) % 5] for s in range(5)}),
        "b4": _line_records({s: reference[s] + 0.1 for s in range(5)}),
    }
    (line,) = claims.judge_stored([claim], rows.get, "ToyCLIP", longer={"a": "a4", "b": "b4"}.get, longer_ids=["T1"])
    assert line["verdict_longer"].endswith(f"; {word}"), line["verdict_longer"]
    # a claim not named, or a longer length not run, has no longer verdict
    (line,) = claims.judge_stored([claim], rows.get, "ToyCLIP", longer={"a": "a9", "b": "b9"}.get, longer_ids=["T1"])
    assert line["verdict_longer"] == ""
    with pytest.raises(ValueError, match="T2"):
        claims.judge_stored([claim], rows.get, "ToyCLIP", longer=str, longer_ids=["T2"])


@pytest.mark.parametrize(
    ("short", "long", "word"),
    [
        (
            report.NO_EFFECT,
            report.INCONCLUSIVE,
            "no direction at either length (no effect at the book's length, inconclusive at the longer)",
        ),
        (report.NO_EFFECT, report.NO_EFFECT, "no direction at either length (no effect at both)"),
        (report.SMALLER, report.SMALLER, "no direction at either length (smaller than claimed at both)"),
        (report.INCONCLUSIVE, report.INCONCLUSIVE, "undecided at both lengths"),
        (report.NO_EFFECT, report.REPRODUCED, "appears only with more training"),
    ],
)
def test_a_trend_names_a_decided_word_without_a_direction(short, long, word):
    """ "No effect" and "smaller than claimed" decide a claim without a direction: a trend never calls them undecided."""
    assert claims.trend(_claim(paper_effect=0.05), {"verdict": short}, {"verdict": long}) == word


def test_the_untrained_networks_of_a_claims_references_are_evaluated_and_read(tmp_path):
    from vlp_lib.book import plan

    def config(row, scale, seed):
        return experiment.make_config(
            scale,
            method="clip",
            seed=seed,
            eval_tasks=["shapes10"],
            task_train=60,
            task_test=40,
            retrieval_images=20,
            lr=1e-3 if row == "a" else 2e-3,
        )

    found = plan.untrained_references([_claim()], ["a", "b"], config, "smoke", [0, 1])
    assert set(found) == {"b"} and all(r["kind"] == runs.UNTRAINED_KIND for r in found["b"])
    trained = [
        {"config": config("b", "smoke", s).to_dict(), "metrics": {"shapes10/linear": 0.9}, "scope": runs.CORE}
        for s in (0, 1)
    ]
    assert claims.untrained_records(trained) == found["b"]  # the judge reads them from the store


def test_a_trend_from_the_floor_names_the_reference_not_the_idea():
    claim = _claim()
    floor, opposite = {"verdict": report.FLOOR}, {"verdict": report.OPPOSITE}
    assert claims.trend(claim, floor, opposite) == "the reference learns only with more training"
    assert claims.trend(claim, floor, floor) == "the reference has not learned at either length"
    assert claims.trend(claim, opposite, floor) == ""


def test_an_evaluation_the_untrained_network_lacks_is_counted_and_an_attached_one_is_read():
    """A claim on a metric beyond the suite (ICMLM's ZSL): the store's untrained record lacks it, so the claim is not
    checked (``NOT_CHECKED_METRIC``, counted like a missing network); a chapter that evaluates the untrained network
    too attaches that record to each run (``UNTRAINED_ATTACHED``), and the check reads it."""
    claim = replace(_claim(), metric="zsl/5/top1")
    better = _records({s: 0.3 + 0.01 * s for s in range(5)}, {s: 0.1 for s in range(5)})
    reference = _records({s: 0.2 + 0.004 * s for s in range(5)}, {s: 0.1 for s in range(5)})
    for record, value in zip([*better, *reference], [0.40, 0.41, 0.42, 0.43, 0.44, 0.3, 0.31, 0.32, 0.33, 0.34]):
        record["metrics"]["zsl/5/top1"] = value
    line = claims.judge(claim, {"a": better, "b": reference}, "ToyCLIP")
    assert line["reference_learned"] == claims.NOT_CHECKED_METRIC and line["verdict"] != report.FLOOR
    for record in reference:  # the untrained network's ZSL: 0.1 on every seed, the reference gains about +22 pp
        record[claims.UNTRAINED_ATTACHED] = {"config": record["config"], "metrics": {"zsl/5/top1": 0.1}}
    line = claims.judge(claim, {"a": better, "b": reference}, "ToyCLIP")
    assert line["reference_learned"].startswith("yes, +2"), line["reference_learned"]
