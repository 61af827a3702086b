"""The ICMLM chapter's plan and claims (``vlp_lib.papers.icmlm.book``): configs at equal samples, ICMLM's start from
TP_Postag, the label sets the world can tell apart, paper numbers, verdicts, bad parameters."""

from dataclasses import replace
from typing import cast

import pytest

from vlp_lib.book import claims as claim_lib
from vlp_lib.data import training
from vlp_lib.papers.icmlm import lexicon
from vlp_lib.papers.icmlm.book import chapter, paper
from vlp_lib.papers.icmlm.method import ICMLMArgs
from vlp_lib.run_config import RunConfig


def _records(values: list[float], metric: str) -> list[dict]:
    return [{"seed": s, "metrics": {metric: v}, "config": {"seed": s}} for s, v in enumerate(values)]


def _samples(c: RunConfig) -> float:
    return c.train.epochs * c.train_size


def test_every_row_has_a_valid_config_and_icmlm_starts_from_tp_postag(monkeypatch):
    monkeypatch.setattr(training, "generate", lambda *a, **k: pytest.fail("a plan generates no data"))
    for scale in chapter.CHAPTER_SCALES:
        for row in chapter.ROWS:
            c = chapter.config(row, scale, 1)
            sizes = chapter.CHAPTER_SCALES[scale]
            assert (c.model, c.image_size, c.seed) == (sizes["model"], sizes["image_size"], 1)
            assert c.world_knobs["mismatch_rate"] == 0.0 and c.world_knobs["junk_rate"] == 0.0
            if row.method == "icmlm":
                assert isinstance(c.method_args, ICMLMArgs)
                assert c.method_args.init == chapter.config(chapter.TP_POSTAG, scale, 1)
    laptop = {row: chapter.config(row, "laptop") for row in chapter.ROWS}
    # the equal-samples control: TP_Postag-2x sees what TP_Postag + the ICMLM phase see together
    assert (
        _samples(laptop[chapter.TP_POSTAG_2X])
        == 2 * _samples(laptop[chapter.TP_POSTAG])
        == _samples(laptop[chapter.TP_POSTAG]) + _samples(laptop[chapter.TFM])
        == 20_480
    )
    kwargs = {row: c.method_args.to_dict() for row, c in laptop.items()}  # the record form
    assert kwargs[chapter.TFM]["lambda"] == 0.0  # Supp Tab. 2 trains with lambda = 0 (the default is 0.1)
    lams = [cast(ICMLMArgs, laptop[r].method_args).lam for r in chapter.lambda_rows([0, 0.1, 1])]
    assert lams == [0.0, 0.1, 1.0]
    big = laptop[chapter.TFM_BIG].method_args
    assert isinstance(big, ICMLMArgs) and (big.layers, big.heads) == (2, 4)
    assert kwargs[chapter.TP_LABEL] == {"label_set": "label"}
    assert kwargs[chapter.TP_CLUSTER] == {"label_set": "cluster", "k": chapter.CLUSTERS}
    # the K sweep differs by K alone
    strip = lambda c: {k: v for k, v in c.to_dict().items() if k not in ("method_kwargs", "eval_tasks")}  # noqa: E731
    assert all(strip(laptop[chapter.SIZES[k]]) == strip(laptop[chapter.TP_POSTAG]) for k in chapter.K_SWEEP)
    assert [kwargs[chapter.SIZES[k]]["k"] for k in chapter.K_SWEEP] == [10, 25, 50, 100]
    # every row evaluates what its claims read
    for claim in chapter.CLAIMS:
        if claim.metric.startswith(("objects", "shapes_colours")):
            for row in claim.rows():
                assert claim.metric.split("/")[0] in laptop[row].eval.tasks, (claim.id, row.label)
        if claim.metric.startswith("zsl/"):
            assert all(row.zsl for row in claim.rows()), claim.id
        if claim.metric.startswith("proxy/") and claim.metric != chapter.TP_LOSS:
            assert all(row.method == "icmlm" for row in claim.rows()), claim.id


def test_the_primary_claim_at_the_longer_length_keeps_equal_samples():
    """``longer``: ICMLM from a TP_Postag start trained LONGER times as long, then LONGER times its own phase,
    against TP_Postag-2x LONGER times as long: equal samples at both lengths; the rows of the book's length unchanged."""
    claim = next(c for c in chapter.CLAIMS if c.id == chapter.PRIMARY).mapped(chapter.longer)
    assert chapter.PRIMARY in chapter.LONGER_IDS
    configs = {row: chapter.config(row, "laptop") for row in claim.rows()}
    tp_2x = configs[chapter.longer(chapter.TP_POSTAG_2X)]
    for head in (chapter.TFM, chapter.ATT_FC):
        icmlm = configs[chapter.longer(head)]
        init = cast(ICMLMArgs, icmlm.method_args).init
        assert init is not None and _samples(init) == chapter.LONGER * _samples(chapter.config(chapter.TP_POSTAG))
        assert _samples(init) + _samples(icmlm) == _samples(tp_2x) == chapter.LONGER * 20_480
    assert chapter.longer(chapter.TFM).zsl is False  # the longer runs' claims read the targets only
    assert chapter.config(chapter.TFM).method_args == chapter.config(replace(chapter.TFM, init_epochs=1)).method_args


def test_the_world_lexicon_puts_no_verb_in_the_top_50_but_in_the_top_100():
    captions = chapter.training_captions("laptop", 0)
    at = {
        k: {pos: lexicon.tag_vocabulary(captions, pos, k) for pos in (("NN", "ADJ"), ("NN", "ADJ", "VB"))}
        for k in (chapter.K_DEFAULT, chapter.K_COMPOSITION)
    }
    assert at[50][("NN", "ADJ")] == at[50][("NN", "ADJ", "VB")]  # why M3's verb claims run at K = 100
    verbs = [t for t in at[100][("NN", "ADJ", "VB")] if lexicon.pos_of(t) == "VB"]
    assert verbs and set(at[100][("NN", "ADJ")]) != set(at[100][("NN", "ADJ", "VB")])


def test_claims_take_the_paper_numbers_from_paper_py():
    by_id = {c.id: c for c in chapter.CLAIMS}
    assert by_id["M1_voc"].paper_value.startswith("+1.6 pp, +2.4 pp")  # 81.8 - 80.2, 82.6 - 80.2
    assert by_id["M2"].paper_effect == pytest.approx((43.9 - 34.0 - (82.6 - 80.2)) / 100)
    assert by_id["M5_in1k_tfm"].paper_effect == pytest.approx((50.6 - 46.7) / 100)
    assert by_id["M6_proxy"].paper_effect == pytest.approx((65.2 - 58.5) / 100)
    assert by_id["M8"].paper_effect == pytest.approx((65.2 - paper.BERT_ALONE) / 100)
    assert "CUB +2.2, AWA2 +1.0" in by_id["M10_C-13"].paper_value  # 13.7 - 11.5; 33.8 - 32.8
    assert by_id["M4"].paper_best == 50 and by_id["M4"].endpoint == 100
    assert by_id["M12"].kind == "not_run"
    assert {c.notebook for c in chapter.CLAIMS} == set(chapter.CLAIM_NOTEBOOKS) == {"labels", "heads"}
    assert len({c.id for c in chapter.CLAIMS}) == len(chapter.CLAIMS)


def test_icmlm_beats_every_tp_claim_reads_each_comparison():
    claim = next(c for c in chapter.CLAIMS if c.id == "M10_C-13")
    m = claim.metric
    results = {chapter.TFM: _records([0.30, 0.31, 0.33], m)}
    results.update(
        {row: _records([0.20 + i / 100, 0.205 + i / 100, 0.22 + i / 100], m) for i, row in enumerate(claim.candidates)}
    )
    line = claim_lib.judge(claim, results, "ICMLM")
    assert line["verdict"] == "reproduced" and line["book_value"].startswith(
        "3 of 3 in the paper's direction (3 reproduced); weakest TP_Cluster"
    )
    results[chapter.TP_POSTAG] = _records([0.40, 0.41, 0.42], m)  # one TP above ICMLM in every seed
    assert claim_lib.judge(claim, results, "ICMLM")["verdict"] == "opposite"


def test_interaction_claim_m8_is_image_minus_lm_alone_per_seed():
    claim = next(c for c in chapter.CLAIMS if c.id == "M8")
    records = [
        {"seed": s, "metrics": {chapter.PROXY: 0.5 + s / 100, chapter.LM_ALONE: 0.3}, "config": {"seed": s}}
        for s in range(3)
    ]
    d = claim_lib.interaction_differences(claim.terms, {chapter.TFM: records})
    assert d.tolist() == pytest.approx([0.2, 0.21, 0.22])


@pytest.mark.parametrize(
    "check, value, name",
    [
        (chapter.check_label_sizes, [0], "label_sizes"),
        (chapter.check_label_sizes, [10, 10], "label_sizes"),
        (chapter.check_label_sizes, [1000], "label_sizes"),  # more tags than the world lexicon holds
        (chapter.check_label_sizes, "50", "label_sizes"),
        (chapter.check_lambdas, [-0.1], "lambdas"),
        (chapter.check_lambdas, [0.1, 0.1], "lambdas"),
        (chapter.check_lambdas, ["a"], "lambdas"),
        (lambda v: chapter.resolve_seeds("laptop", v), [-1], "seeds"),
    ],
)
def test_bad_parameters_are_refused_naming_them(check, value, name):
    with pytest.raises(ValueError, match=name):
        check(value)


def test_default_parameters():
    assert chapter.check_label_sizes(None) == [10, 25, 50, 100]
    assert chapter.check_lambdas(None) == [0.0, 0.1, 1.0]
    assert chapter.check_label_sizes(None, "smoke") == [50, 100] and chapter.check_lambdas(None, "smoke") == [0.0, 0.1]
    assert chapter.check_lambdas(0.5) == [0.5] and chapter.lambda_rows([0.0])[0] == chapter.TFM
    assert chapter.size_rows([50])[0] == chapter.TP_POSTAG
    assert chapter.resolve_seeds("smoke", None) == [0]  # smoke runs every line once: not evidence
