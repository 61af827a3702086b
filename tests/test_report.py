"""The verdict rule (report.paired_test): 95% t intervals of per-seed paired differences, their power, and the
scorecard's columns. Known inputs, values computed by hand with scipy."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlp_lib.book import report
from vlp_lib.book import stats as sstats


def _by_hand(d):
    d = np.asarray(d, dtype=float)
    n, mean, sd = len(d), d.mean(), d.std(ddof=1)
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    mde = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half, mde


def test_interval_and_power_by_hand():
    d = [0.01, 0.02, 0.03]
    t = report.paired_test(d)
    mean, sd, low, high, _ = _by_hand(d)
    assert (t.n, t.mean, t.std, t.df) == (3, pytest.approx(mean), pytest.approx(sd), 2)
    assert t.low == pytest.approx(low) and t.high == pytest.approx(high)
    # t(0.975, 2) = 4.303: the interval [-0.0048, +0.0448] still includes 0 with three seeds
    assert low == pytest.approx(0.02 - 4.302653 * 0.01 / math.sqrt(3), rel=1e-6) and t.verdict == "inconclusive"
    # the exact minimum detectable effect (noncentral t): 3.26 sd at n = 3, not the 3.10 of t(.975) + t(.8)
    assert t.mde == pytest.approx(3.2640 * 0.01, rel=1e-4)
    # its p: twice the one-sided p in the direction of the mean, t = 0.02 / (0.01 / sqrt 3) on 2 df
    assert t.p == pytest.approx(2 * stats.t.sf(0.02 / (0.01 / math.sqrt(3)), 2))
    assert report.paired_interval(d) == (pytest.approx(low), pytest.approx(high))


def test_the_verdicts():
    assert report.paired_test([0.02, 0.021, 0.019]).verdict == "reproduced"
    assert report.paired_test([-0.02, -0.021, -0.019], paper_effect=0.01).verdict == "opposite"
    # includes 0, excludes the paper's +5 pp: smaller than claimed
    small = report.paired_test([0.004, -0.003, 0.001, 0.0], paper_effect=0.05)
    assert small.low < 0 < small.high < 0.05 and small.verdict == "smaller than claimed"
    # includes both 0 and the paper's effect
    wide = report.paired_test([0.05, -0.04, 0.03], paper_effect=0.02)
    assert wide.low < 0 and wide.high > 0.02 and wide.verdict == "inconclusive"
    # without a stated size or a margin, an interval around 0 is inconclusive however narrow
    assert report.paired_test([0.004, -0.003, 0.001, 0.0]).verdict == "inconclusive"
    # with the 1 pp margin it is "no effect" (two one-sided tests) ...
    none = report.paired_test([0.004, -0.003, 0.001, 0.0], margin=0.01)
    assert -0.01 < none.low and none.high < 0.01 and none.verdict == "no effect"
    # ... unless the paper's own effect is inside the margin: our precision cannot tell its size from zero
    assert report.paired_test([0.004, -0.003, 0.001, 0.0], paper_effect=0.005, margin=0.01).verdict == "inconclusive"
    # every decided verdict has p < 0.05, an undecided one p >= 0.05
    for t in (small, none, report.paired_test([0.02, 0.021, 0.019])):
        assert t.p < 0.05
    assert wide.p >= 0.05


def test_direction_and_size_are_two_questions():
    """Regression (issue 25): an effect 13 times smaller than the paper's read "reproduced"."""
    t = report.paired_test([0.009, 0.010, 0.011], paper_effect=0.1365)
    assert t.low > 0 and t.high < 0.1365 and t.verdict == "reproduced, smaller than claimed"
    # its p is the larger of the two one-sided tests (above 0, below the paper's effect)
    assert t.p == pytest.approx(2 * max(t.one_sided(0, True), t.one_sided(0.1365, False)))
    # an interval reaching the paper's effect is plainly reproduced
    assert report.paired_test([0.02, 0.021, 0.019], paper_effect=0.0205).verdict == "reproduced"


def test_fewer_than_two_seeds_is_inconclusive_without_interval():
    for d in ([], [0.5]):
        t = report.paired_test(d, paper_effect=0.01)
        assert t.verdict == "inconclusive" and t.low == -math.inf and t.high == math.inf
        assert math.isnan(t.mde) and math.isnan(t.seeds_needed) and t.seeds_needed_text() == ""
    assert report.direction([0.5]) == "too few seeds"
    # two seeds give an interval (1 degree of freedom, t = 12.7)
    assert report.paired_test([0.02, 0.0201]).verdict == "reproduced"


def test_seeds_are_planned_for_power_at_the_papers_effect():
    """Regression (issue 25): seeds-to-decide plugged in the observed mean (50% power at best, optional stopping
    when used to add seeds); the plan is the smallest n with 80% exact power at the paper's effect."""
    t = report.paired_test([0.01, -0.01, 0.0], paper_effect=0.02)
    n = int(t.seeds_needed)
    assert sstats.power_two_sided(0.02, 0.01 / math.sqrt(n), n - 1) >= 0.8
    assert sstats.power_two_sided(0.02, 0.01 / math.sqrt(n - 1), n - 2) < 0.8
    # the observed mean does not enter: the same spread plans the same seeds whatever the mean
    assert report.paired_test([0.03, 0.01, 0.02], paper_effect=0.02).seeds_needed == n
    # without a paper effect or a margin there is nothing to plan for
    assert math.isnan(report.paired_test([0.01, -0.01, 0.0]).seeds_needed)
    # a 0.3 pp effect at a 1 pp spread needs about (2.8 / 0.3)^2 = 87 seeds
    assert 85 <= sstats.planned_seeds(0.01, 0.003) <= 92
    # the smallest such n for every kind (found by bisection: the power grows with n), and none within the cap
    for kind, rows in (("difference", 2), ("noninferiority", 5), ("equivalence", 3)):
        n = int(sstats.planned_seeds(0.01, 0.004, kind, rows))
        power = {"difference": sstats.power_two_sided, "noninferiority": sstats.power_one_sided}.get(
            kind, sstats.power_equivalence
        )
        assert power(0.004, 0.01 / math.sqrt(n), (n - 1) * (rows - 1)) >= 0.8
        assert n == 2 or power(0.004, 0.01 / math.sqrt(n - 1), (n - 2) * (rows - 1)) < 0.8
    assert sstats.planned_seeds(0.01, 0.003, max_seeds=50) == math.inf


def test_direction_uses_the_t_interval():
    assert report.direction([0.02, 0.021, 0.019]) == "higher"
    assert report.direction([-0.02, -0.021, -0.019]) == "lower"
    assert report.direction([0.01, 0.02, 0.03]) == "within noise"  # was "higher" under mean - 2 se > 0
    assert "t distribution" in report.VERDICT_RULE and "smaller than claimed" in report.VERDICT_RULE.lower()


def test_format_test():
    text = report.format_test(report.paired_test([0.01, 0.02, 0.03], paper_effect=0.02))
    assert {k: text[k] for k in ("book_value", "interval", "mde", "df")} == {
        "book_value": "+2.00 pp",
        "interval": "[-0.48, +4.48] pp",
        "mde": "3.26 pp",
        "df": "2",
    }
    raw = report.format_test(report.paired_test([0.05, 0.06, 0.07]), percent=False)
    assert raw["book_value"] == "+0.060" and raw["interval"].startswith("[+0.035")
    assert report.format_test(None)["interval"] == "" and math.isnan(report.format_test(None)["p"])
    pooled = report.format_test(report.paired_test([0.01, 0.02, 0.03], pooled=(0.01, 12)))
    assert pooled["df"] == "12 pooled"


def test_equivalence_rule_needs_the_interval_inside_the_margin():
    assert report.equivalence_test([0.001, -0.002, 0.0005, 0.001], margin=0.01)[0] == "reproduced"
    assert report.equivalence_test([0.05, 0.06, 0.055], margin=0.01)[0] == "opposite"
    assert report.equivalence_test([0.02, -0.03, 0.01], margin=0.01)[0] == "inconclusive"
    assert report.equivalence_test([0.0], margin=0.01)[0] == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        report.equivalence_test([0.0, 0.1], margin=0)


def test_noninferiority_seeds_count_the_margin_not_zero():
    """Regression (issue 25): differences -0.4, +0.1, -0.3 pp already clear a -1 pp margin (lower bound -0.86 pp),
    yet seeds-to-decide counted seeds to exclude 0 (10)."""
    t = report.paired_test([-0.004, 0.001, -0.003])
    verdict, p = report.noninferiority_test(t, 0.01)
    assert t.low == pytest.approx(-0.0086, abs=2e-4) and verdict == "reproduced" and p < 0.05
    planned = sstats.planned_seeds(t.std, 0.01, "noninferiority")
    assert planned <= 3
    assert sstats.planned_seeds(t.std, 0.01, "equivalence") <= 4


def test_every_needs_a_bonferroni_step_for_opposite():
    ok = report.paired_test([0.02, 0.021, 0.019])
    slightly = report.paired_test([-0.02, -0.013, -0.027])  # opposite alone (p about 0.04), not after k = 5
    assert slightly.verdict == "opposite" and 0.02 < slightly.p < 0.05
    verdict, p, which = report.every_test([ok, ok, ok, ok, slightly])
    assert verdict == "inconclusive"
    clear = report.paired_test([-0.02, -0.021, -0.019])
    verdict, p, which = report.every_test([ok, clear])
    assert verdict == "opposite" and which == 1 and p == pytest.approx(min(1, 2 * clear.p))
    assert report.every_test([ok, ok])[0] == "reproduced"


def test_best_of_is_corrected_for_the_choice():
    borderline = report.paired_test([0.02, 0.013, 0.027])  # reproduced alone (p about 0.04)
    assert borderline.verdict == "reproduced"
    flat = report.paired_test([0.01, -0.01, 0.0])
    assert report.best_of_test([borderline, flat, flat])[0] == "inconclusive"  # 3 x p > 0.05
    assert report.best_of_test([report.paired_test([0.02, 0.021, 0.019]), flat])[0] == "reproduced"


def test_a_missing_or_broken_seed_decides_nothing():
    """Regression (issue 25): a NaN difference compared False everywhere and read "smaller than claimed"."""
    for differences in ([float("nan"), 0.01, 0.02], [0.01, float("inf"), 0.02]):
        test = report.paired_test(differences, paper_effect=0.05)
        assert test.verdict == "inconclusive" and test.n == 3
        assert test.low == float("-inf") and test.high == float("inf")
    assert report.paired_test([0.01, 0.012, 0.011], paper_effect=0.05).verdict == "reproduced, smaller than claimed"


def test_fdr_demotes_only_what_bh_does_not_keep():
    card = pd.DataFrame(
        {
            "paper": ["A"] * 4,
            "metric": ["m"] * 4,
            "verdict": ["reproduced", "opposite", "inconclusive", "not run"],
            "p": [0.001, 0.04, 0.5, float("nan")],
        }
    )
    out = report.with_fdr(card)
    assert out["q"].iloc[0] == pytest.approx(0.003) and out["q"].iloc[1] == pytest.approx(0.06)
    assert list(out["verdict_fdr"]) == ["reproduced", "inconclusive", "inconclusive", "not run"]
    counts = report.verdict_counts(out, "verdict_fdr")
    assert counts.loc["A", "decided"] == "1 of 3"


def test_claims_view_fits_a_claims_table_into_fewer_wider_columns():
    claims = pd.DataFrame(
        [
            {
                "id": "a",
                "claim": "A helps",
                "source": "Table 3",
                "paper_value": "+1.0 pp",
                "book_value": "+0.50 pp",
                "interval": "[-1.64, +2.14] pp",
                "df": "14 pooled",
                "verdict": "reproduced",
                "verdict_fdr": "inconclusive",
                "p": 0.023456,
                "q": 0.0612,
                "mde": "2.65 pp",
                "seeds_needed": "7",
                "notebook": "x",
                "metric": "m",
            },
            {
                "id": "b",
                "claim": "B helps",
                "source": "Fig. 2",
                "paper_value": "+2.0 pp",
                "book_value": "",
                "interval": "",
                "df": "",
                "verdict": "not run",
                "verdict_fdr": "not run",
                "p": float("nan"),
                "q": float("nan"),
                "mde": "",
                "seeds_needed": "",
                "notebook": "x",
                "metric": "m",
            },
        ]
    ).set_index("id")
    with pytest.raises(ValueError, match="book_fdr"):  # a page states the book's word: judged across the book
        report.claims_view(claims.drop(columns=["verdict_fdr", "q"]))
    view = report.claims_view(claims)
    assert list(view.columns) == list(report.CLAIMS_VIEW.values()) and list(view.index) == ["a", "b"]
    assert view.loc["a", "claim (source)"] == "A helps (Table 3)"
    assert view.loc["a", "95% interval (df)"] == "[-1.64, +2.14] pp (df 14, pooled)"
    assert view.loc["a", "p / q"] == "0.0235 / 0.0612" and view.loc["b", "p / q"] == "—"
    assert view.loc["b", "95% interval (df)"] == ""
    # the verdict at 5% FDR, with the word judged alone beside it, named as such, where the two differ
    assert view.loc["a", "verdict at 5% FDR"] == "inconclusive (alone: reproduced)"
    assert view.loc["b", "verdict at 5% FDR"] == "not run"
    assert report.interval_text("[-1.0, +1.0] pp", "2") == "[-1.0, +1.0] pp (df 2)"
    # the book's own claims: no paper column, the claim without its source
    own = report.claims_view(claims, paper=False)
    assert "paper" not in own.columns and own.loc["a", "claim"] == "A helps"
    assert list(own.columns) == [
        "claim",
        *[h for k, h in report.CLAIMS_VIEW.items() if k not in ("claim", "paper_value")],
    ]


def test_a_pages_verdicts_in_one_line_and_its_claims_in_two_tables_of_at_most_six_columns():
    claims = pd.DataFrame({"verdict_fdr": ["opposite", "reproduced", report.FLOOR, "reproduced"]})
    assert report.verdict_line(claims) == (
        "4 claims at 5% FDR: 2 reproduced; 1 opposite; 1 at the floor (their reference has not learned)."
    )
    view = pd.DataFrame(columns=list(report.CLAIMS_VIEW.values()), index=pd.Index(["a"], name="id"))
    verdicts, power = report.split_view(view)
    assert list(verdicts.columns)[-1] == "verdict at 5% FDR" and len(verdicts.columns) <= 6 >= len(power.columns)
    assert report.stated({"book_value": "+1.00 pp", "interval": ""}) == "+1.00 pp"


def test_the_confusion_reading_names_the_largest_cells_and_the_weak_classes():
    labels = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    predicted = [0, 1, 1, 1, 1, 1, 0, 2, 2]
    said = report.confusion_reading(labels, predicted, ["a", "b", "c"], top=2)
    assert (
        said == "Its largest confusions: a read as b (67%); c read as a (33%). Recall below twice chance (67%): a 33%."
    )


def test_the_learning_reading_sorts_metrics_by_their_gains_interval():
    def records(values):
        return [{"config": {"seed": s}, "metrics": dict(zip(("up", "flat", "down"), v))} for s, v in enumerate(values)]

    trained = records([(0.6, 0.50, 0.10), (0.7, 0.40, 0.11), (0.65, 0.60, 0.09)])
    untrained = records([(0.1, 0.45, 0.30), (0.1, 0.50, 0.31), (0.12, 0.50, 0.29)])
    said = report.learning_reading(trained, untrained, ["up", "flat", "down", "absent"])
    assert said == (
        "Training raised 1 of the 3 metrics above the untrained network; the interval holds zero for `flat`; "
        "training lowered `down` below the random features."
    )
    assert "no gain has an interval" in report.learning_reading(trained[:1], untrained[:1], ["up"])
    certain = [{**r, "metrics": {**r["metrics"], "top5": 1.0}} for r in trained]
    sure = [{**r, "metrics": {**r["metrics"], "top5": 1.0}} for r in untrained]
    assert report.learning_reading(certain, sure, ["up", "top5"]).endswith(
        "above the untrained network (1 at 100% by construction, such as a top-5 accuracy over at most five classes, "
        "left out)."
    )
