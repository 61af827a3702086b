"""A probe of the verdict rule (report.VERDICT_RULE, COST_RULE, FDR_RULE): synthetic per-seed differences at the edge
of each word, each of which must give the word the rule promises. The referee's instances are among them: -0.75 pp
against a +3 pp paper effect, +19 pp against +2.8, a cost at twice the paper's, a flat sweep."""

import numpy as np
import pandas as pd
import pytest

from vlp_lib.book import claims, report
from vlp_lib.book.claims import Claim

PP = 0.01


def _exact(mean_pp: float, sd_pp: float, n: int = 5) -> np.ndarray:
    """``n`` per-seed differences (fractions) with exactly this mean and sample standard deviation (pp)."""
    z = np.linspace(-1.0, 1.0, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return (mean_pp + sd_pp * z) * PP


def _test(mean_pp, sd_pp, paper_pp=None, n=5, margin=report.NO_EFFECT_MARGIN):
    effect = None if paper_pp is None else paper_pp * PP
    return report.paired_test(_exact(mean_pp, sd_pp, n), effect, margin=margin)


@pytest.mark.parametrize(
    ("mean", "sd", "paper", "word"),
    [
        # the referee's M7: significant, but a difference a reader would call nothing
        (-0.75, 0.1, 3.0, report.NO_EFFECT),  # [-0.87, -0.63]: inside ±1 pp, decided by two one-sided tests
        (-0.75, 0.45, 3.0, report.OPPOSITE_WITHIN),  # [-1.31, -0.19]: below 0, mean inside the margin, not shown inside
        (-1.5, 0.3, 3.0, report.OPPOSITE),  # [-1.87, -1.13]: the whole interval beyond the margin
        (-0.99, 0.2, 3.0, report.OPPOSITE_WITHIN),  # the mean just inside -1 pp, the interval crossing it
        (-1.01, 0.2, 3.0, report.OPPOSITE_SIZE),  # the mean just beyond it, the interval not
        # the referee's M7_fair_coco: -1.56 pp [-2.63, -0.49] is below 0, but its size is not shown beyond 1 pp
        (-1.56, 0.86, 3.0, report.OPPOSITE_SIZE),
        (-3.0, 0.86, 3.0, report.OPPOSITE),  # [-4.07, -1.93]
        # the referee's table11_no_aug_retrieval: seven times the paper's effect is not its reproduction
        (19.0, 2.0, 2.8, report.LARGER),
        (3.4, 0.5, 2.8, report.REPRODUCED),  # the interval holds the paper's +2.8
        (1.0, 0.2, 3.0, report.SMALLER_REPRODUCED),  # above 0, entirely below the paper's
        (0.2, 0.5, 3.0, report.NO_EFFECT),  # around 0, inside the margin
        (0.5, 1.5, 3.0, report.SMALLER),  # includes 0, excludes +3
        (1.5, 2.0, 3.0, report.INCONCLUSIVE),  # includes both
        (2.0, 0.3, None, report.REPRODUCED),  # no stated size: any clear gain in the direction
    ],
)
def test_each_word_at_its_edge(mean, sd, paper, word):
    t = _test(mean, sd, paper)
    assert t.verdict == word, (t.low / PP, t.high / PP)
    assert (t.p < 0.05) == (word in report.DECIDED)


def test_the_opposite_needs_the_margin_only_where_one_is_stated():
    # a raw metric with no margin stated: every significant reverse is opposite
    assert _test(-0.2, 0.05, None, margin=None).verdict == report.OPPOSITE


def test_the_words_are_the_rules_words():
    for word in report.DECIDED:
        assert word in (report.VERDICT_RULE + report.FDR_RULE).lower()
    assert report.OPPOSITE_WITHIN in report.DECIDED and report.OPPOSITE_WITHIN != report.OPPOSITE


@pytest.mark.parametrize(
    ("cost", "paper", "word"),
    [
        (0.696, 0.348, report.DEARER),  # fig9_overhead: +69.6% against +34.8%, twice the claimed cost
        (0.670, 0.348, report.DEARER),  # the release's +67.0%: 1.93x
        (0.50, 0.348, report.AS_CLAIMED),  # 1.44x: within a factor of 1.5
        (0.348, 0.348, report.AS_CLAIMED),
        (0.20, 0.348, report.CHEAPER),  # below a factor of 1.5
        (-0.05, 0.348, report.CHEAPER),  # faster than the reference
    ],
)
def test_a_cost_is_judged_as_a_cost(cost, paper, word):
    assert claims.cost_verdict(cost, paper) == word


def _records(values, metric="m"):
    return [{"config": {"seed": s}, "metrics": {metric: float(v)}} for s, v in enumerate(values)]


def _line(claim, results):
    return claims.judge(claim, results, "P", pool_rows=list(results))


def test_a_cost_claim_line_says_dearer_than_claimed_at_twice_the_paper():
    # ProtoCLIP's Fig. 9: its epoch overhead over CLIP's epochs, at twice the paper's +34.8%
    clip = [{"config": {"seed": s, "epochs": 1}, "timings": {"training": 10.0}, "metrics": {}} for s in range(3)]
    proto = [{"config": {"seed": s, "epochs": 1}, "timings": {"training": 16.96}, "metrics": {}} for s in range(3)]
    claim = Claim("c", "costs +34.8%", "Fig. 9", "timing", "epoch_overhead", "+34.8%", 0.348, better="p", reference="c")
    line = _line(claim, {"p": proto, "c": clip})
    assert line["verdict"] == report.DEARER and "+69.6%" in line["book_value"]


def test_a_flat_sweep_is_no_effect():
    rng = np.random.default_rng(0)
    seeds = rng.normal(0.5, 0.03, size=5)  # each seed's own luck, shared by every setting
    grid = tuple((value, f"r{value}") for value in (1, 2, 5, 10))
    results = {row: _records(seeds + rng.normal(0, 0.001, size=5)) for _, row in grid}
    claim = Claim(
        "s", "best at 5", "Fig.", "sweep", "m", "best at 5", notebook="n", grid=grid, paper_best=5, endpoint=10
    )
    line = _line(claim, results)
    assert line["verdict"] == report.NO_EFFECT and line["p"] < 0.05


def test_a_sweep_far_above_the_papers_gain_is_larger_than_claimed():
    # iCLIP's I2_tr: +25 pp between two shares where the paper's table gives +1.6
    base = np.linspace(0.2, 0.3, 5)
    results = {"a": _records(base + 0.25 + np.linspace(-0.01, 0.01, 5)), "b": _records(base)}
    claim = Claim(
        "s",
        "best at a",
        "T",
        "sweep",
        "m",
        "+1.6 pp",
        0.016,
        notebook="n",
        grid=(("a", "a"), ("b", "b")),
        paper_best="a",
        endpoint="b",
    )
    assert _line(claim, results)["verdict"] == report.LARGER


def test_every_opposite_within_the_margin_is_not_counted_with_the_opposites():
    base = np.linspace(0.4, 0.6, 5)
    results = {
        "icmlm": _records(base + np.array([-0.0075, -0.0030, -0.0090, -0.0110, -0.0070])),
        "tp": _records(base),
    }
    claim = Claim(
        "m7", "ICMLM beats TP", "Supp B", "every", "m", ">= +3.1 pp", 0.031, better="icmlm", candidates=("tp",)
    )
    line = _line(claim, results)
    assert line["verdict"] == report.OPPOSITE_WITHIN


def _card(lines):
    columns = [*report.SCORECARD_COLUMNS, "primary"]
    return pd.DataFrame([{c: line.get(c, "") for c in columns} for line in lines], columns=columns)


def test_fdr_keeps_the_direction_of_a_size_word_that_does_not_stand():
    # "larger than claimed" needs two tests; where the size falls at 5% FDR, the direction alone may stand
    lines = [
        {"id": "big", "paper": "P", "verdict": report.LARGER, "p": 0.04, "p_direction": 0.001, "metric": "m"},
        *({"id": f"x{i}", "paper": "P", "verdict": report.INCONCLUSIVE, "p": 0.5, "metric": "m"} for i in range(5)),
    ]
    card = report.with_fdr(_card(lines))
    assert card.loc[0, "q"] > 0.05 and card.loc[0, "verdict_fdr"] == report.DIRECTION_ONLY


def test_fdr_keeps_the_direction_of_an_opposite_whose_size_does_not_stand():
    # "opposite" claims its size beyond the margin; where that falls at 5% FDR, the reversed direction may stand
    t = _test(-3.0, 0.86, 3.0)
    assert t.verdict == report.OPPOSITE and t.p_direction < t.p < 0.05
    lines = [
        {"id": "far", "paper": "P", "verdict": report.OPPOSITE, "p": 0.04, "p_direction": 0.001, "metric": "m"},
        *({"id": f"x{i}", "paper": "P", "verdict": report.INCONCLUSIVE, "p": 0.5, "metric": "m"} for i in range(5)),
    ]
    card = report.with_fdr(_card(lines))
    assert card.loc[0, "q"] > 0.05 and card.loc[0, "verdict_fdr"] == report.OPPOSITE_SIZE


def test_an_every_claim_reads_opposite_only_when_the_reverse_clears_the_margin():
    far = [_test(-3.0, 0.3, 3.0), _test(1.0, 0.2, 3.0)]
    near = [_test(-1.2, 0.3, 3.0), _test(1.0, 0.2, 3.0)]  # below 0 after Bonferroni, the mean alone beyond -1 pp
    assert report.every_test(far, report.NO_EFFECT_MARGIN)[0] == report.OPPOSITE
    assert report.every_test(near, report.NO_EFFECT_MARGIN)[0] == report.OPPOSITE_SIZE


def test_fdr_demotes_a_word_whose_q_is_above_5_percent():
    lines = [
        {"id": "weak", "paper": "P", "verdict": report.OPPOSITE_WITHIN, "p": 0.04, "metric": "m"},
        *({"id": f"x{i}", "paper": "P", "verdict": report.INCONCLUSIVE, "p": 0.5, "metric": "m"} for i in range(5)),
    ]
    assert report.with_fdr(_card(lines)).loc[0, "verdict_fdr"] == report.INCONCLUSIVE


def test_described_claims_stay_outside_the_fdr_family_and_the_tested_claims():
    # evaluations that are not replicates (one teacher, one corpus resampled): a count, no test
    lines = [
        {"id": "mmd", "paper": "P", "verdict": report.DESCRIBED, "p": float("nan"), "metric": "MMD^2"},
        {"id": "t", "paper": "P", "verdict": report.REPRODUCED, "p": 0.001, "metric": "m"},
    ]
    card = report.with_fdr(_card(lines))
    assert card.loc[0, "verdict_fdr"] == report.DESCRIBED and not np.isfinite(card.loc[0, "q"])
    assert list(report.tested_claims(card)["id"]) == ["t"]
    assert report.DESCRIBED not in report.DECIDED


def test_cost_claims_stay_outside_the_fdr_family_and_the_tested_claims():
    lines = [
        {"id": "cost", "paper": "P", "verdict": report.DEARER, "p": float("nan"), "metric": "epoch_overhead"},
        {"id": "t", "paper": "P", "verdict": report.REPRODUCED, "p": 0.001, "metric": "m"},
    ]
    card = report.with_fdr(_card(lines))
    assert card.loc[0, "verdict_fdr"] == report.DEARER and list(report.tested_claims(card)["id"]) == ["t"]
