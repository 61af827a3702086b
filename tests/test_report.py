"""The verdict rule (report.paired_test): 95% t intervals of per-seed paired differences, their power, and the
scorecard's columns. Known inputs, values computed by hand with scipy."""

import math

import numpy as np
import pytest
from scipy import stats

from vlp_lib.book import report


def _by_hand(d):
    d = np.asarray(d, dtype=float)
    n, mean, sd = len(d), d.mean(), d.std(ddof=1)
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    mde = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half, mde


def test_interval_and_power_by_hand():
    d = [0.01, 0.02, 0.03]
    t = report.paired_test(d)
    mean, sd, low, high, mde = _by_hand(d)
    assert (t.n, t.mean, t.std) == (3, pytest.approx(mean), pytest.approx(sd))
    assert t.low == pytest.approx(low) and t.high == pytest.approx(high)
    # t(0.975, 2) = 4.303: the interval [-0.0048, +0.0448] still includes 0 with three seeds
    assert low == pytest.approx(0.02 - 4.302653 * 0.01 / math.sqrt(3), rel=1e-6) and t.verdict == "inconclusive"
    assert t.mde == pytest.approx(mde) and t.mde == pytest.approx((4.302653 + 1.060660) * 0.01 / math.sqrt(3), rel=1e-5)
    # at sd 0.01 and mean 0.02 the half-width drops below 0.02 at n = 4 (t(0.975, 3) 0.01 / 2 = 0.0159)
    assert t.seeds_needed == 4 and t.seeds_needed_text() == "4"
    assert report.paired_interval(d) == (pytest.approx(low), pytest.approx(high))


def test_four_verdicts():
    assert report.paired_test([0.02, 0.021, 0.019]).verdict == "reproduced"
    assert report.paired_test([-0.02, -0.021, -0.019], paper_effect=0.01).verdict == "opposite"
    # includes 0, excludes the paper's +5 pp: smaller than claimed
    small = report.paired_test([0.004, -0.003, 0.001, 0.0], paper_effect=0.05)
    assert small.low < 0 < small.high < 0.05 and small.verdict == "smaller than claimed"
    # includes both 0 and the paper's effect
    wide = report.paired_test([0.05, -0.04, 0.03], paper_effect=0.02)
    assert wide.low < 0 and wide.high > 0.02 and wide.verdict == "inconclusive"
    # without a stated size, an interval around 0 is inconclusive however narrow
    assert report.paired_test([0.004, -0.003, 0.001, 0.0]).verdict == "inconclusive"
    # reproduced is about the direction: a positive interval below the paper's effect is still reproduced
    assert report.paired_test([0.02, 0.021, 0.019], paper_effect=0.05).verdict == "reproduced"


def test_fewer_than_two_seeds_is_inconclusive_without_interval():
    for d in ([], [0.5]):
        t = report.paired_test(d, paper_effect=0.01)
        assert t.verdict == "inconclusive" and t.low == -math.inf and t.high == math.inf
        assert math.isnan(t.mde) and math.isnan(t.seeds_needed) and t.seeds_needed_text() == ""
    assert report.direction([0.5]) == "too few seeds"
    # two seeds give an interval (1 degree of freedom, t = 12.7)
    assert report.paired_test([0.02, 0.0201]).verdict == "reproduced"


def test_seeds_needed():
    # no effect at all: never decided without a stated size; with one, the paper's effect gets excluded
    flat = report.paired_test([0.01, -0.01, 0.0])
    assert flat.seeds_needed == math.inf and flat.seeds_needed_text() == ">1000"
    t = report.paired_test([0.01, -0.01, 0.0], paper_effect=0.02)
    n = int(t.seeds_needed)
    assert stats.t.ppf(0.975, n - 1) * 0.01 / math.sqrt(n) < 0.02 <= stats.t.ppf(0.975, n - 2) * 0.01 / math.sqrt(n - 1)
    # a small mean at a large spread needs many seeds: (t sd / mean)^2 ~ (1.96 x 10)^2 = 384
    big = report.seeds_to_decide(0.001, 0.01)
    assert 380 <= big <= 395
    assert report.seeds_to_decide(0.02, 0.0) == 2 and report.seeds_to_decide(0.0, 0.0) == math.inf


def test_direction_uses_the_t_interval():
    assert report.direction([0.02, 0.021, 0.019]) == "higher"
    assert report.direction([-0.02, -0.021, -0.019]) == "lower"
    assert report.direction([0.01, 0.02, 0.03]) == "within noise"  # was "higher" under mean - 2 se > 0
    assert "t distribution" in report.VERDICT_RULE and "smaller than claimed" in report.VERDICT_RULE.lower()


def test_format_test():
    text = report.format_test(report.paired_test([0.01, 0.02, 0.03]))
    assert text == {"book_value": "+2.00 pp", "interval": "[-0.48, +4.48] pp", "mde": "3.10 pp", "seeds_needed": "4"}
    raw = report.format_test(report.paired_test([0.05, 0.06, 0.07]), percent=False)
    assert raw["book_value"] == "+0.060" and raw["interval"].startswith("[+0.035")
    assert report.format_test(None) == {"book_value": "", "interval": "", "mde": "", "seeds_needed": ""}


def test_equivalence_rule_needs_the_interval_inside_the_margin():
    assert report.equivalence_test([0.001, -0.002, 0.0005, 0.001], margin=0.01) == "reproduced"
    assert report.equivalence_test([0.05, 0.06, 0.055], margin=0.01) == "opposite"
    assert report.equivalence_test([0.02, -0.03, 0.01], margin=0.01) == "inconclusive"
    assert report.equivalence_test([0.0], margin=0.01) == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        report.equivalence_test([0.0, 0.1], margin=0)


def test_sweep_rule_wants_the_best_near_the_papers_and_beating_the_end_point():
    def recs(values):
        return [{"config": {"seed": s}, "metrics": {"m": v}} for s, v in enumerate(values)]

    sweep = {
        0.0: recs([0.40, 0.41, 0.40]),
        0.1: recs([0.45, 0.45, 0.46]),
        0.2: recs([0.47, 0.48, 0.47]),
        0.4: recs([0.44, 0.45, 0.44]),
    }
    assert report.sweep_test(sweep, "m", paper_best=0.2, endpoint=0.0) == "reproduced"
    assert report.sweep_test(sweep, "m", paper_best=0.1, endpoint=0.0) == "reproduced"  # a neighbour is best
    # regression (issue 25): the end point having the best seed-mean used to read "opposite" with no test at all;
    # "opposite" now needs the paper's best to lose to the end point by VERDICT_RULE
    flat = {k: recs([0.40, 0.41, 0.40]) for k in sweep}
    assert report.sweep_test(flat, "m", paper_best=0.2, endpoint=0.0) == "inconclusive"
    low = {k: recs([0.39, 0.40, 0.39]) for k in sweep}  # means 0.400 (paper's best) vs 0.401 (the end point)
    tiny = {**low, 0.2: recs([0.40, 0.41, 0.39]), 0.0: recs([0.395, 0.402, 0.406])}
    assert report.sweep_test(tiny, "m", paper_best=0.2, endpoint=0.0) == "inconclusive"
    noisy = {**flat, 0.0: recs([0.43, 0.39, 0.42]), 0.2: recs([0.40, 0.42, 0.39])}
    assert report.sweep_test(noisy, "m", paper_best=0.2, endpoint=0.0) == "inconclusive"
    falls = {**flat, 0.0: recs([0.50, 0.51, 0.50])}  # the end point beats the paper's best on every seed
    assert report.sweep_test(falls, "m", paper_best=0.2, endpoint=0.0) == "opposite"
    with pytest.raises(ValueError, match="paper_best"):
        report.sweep_test(sweep, "m", paper_best=0.3, endpoint=0.0)


def test_a_missing_or_broken_seed_decides_nothing():
    """Regression (issue 25): a NaN difference compared False everywhere and read "smaller than claimed"."""
    for differences in ([float("nan"), 0.01, 0.02], [0.01, float("inf"), 0.02]):
        test = report.paired_test(differences, paper_effect=0.05)
        assert test.verdict == "inconclusive" and test.n == 3
        assert test.low == float("-inf") and test.high == float("inf")
    assert report.paired_test([0.01, 0.012, 0.011], paper_effect=0.05).verdict == "reproduced"
