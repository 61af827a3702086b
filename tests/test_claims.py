"""The one Claim type judged on in-memory records: pooling over a notebook's rows, the paper's effect on three scales,
evaluation noise, and the statistics behind them (vlp_lib.book.stats), each against a value computed by hand."""

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as scipy_stats

from vlp_lib.book import claims, report, stats


def _records(values, metric="m", config=None):
    return [{"config": {"seed": s, **(config or {})}, "metrics": {metric: float(v)}} for s, v in enumerate(values)]


def test_pooled_variance_is_the_two_way_residual_mean_square():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(5, 4)) + np.arange(5)[:, None] + np.arange(4)[None, :]
    pooled = stats.pooled_variance(y, [0, 1, 2, 3])
    # the additive model's residual sum of squares by least squares on dummies: the same number
    rows, cols = np.meshgrid(range(5), range(4), indexing="ij")
    design = np.column_stack(
        [np.ones(20)]
        + [(rows.ravel() == r) * 1.0 for r in range(1, 5)]
        + [(cols.ravel() == c) * 1.0 for c in range(1, 4)]
    )
    _, residual, *_ = np.linalg.lstsq(design, y.ravel(), rcond=None)
    assert pooled.df == 12 and pooled.variance == pytest.approx(residual[0] / 12)
    assert pooled.usable and pooled.contrast_std([1, -1]) == pytest.approx(math.sqrt(2 * pooled.variance))


def test_a_row_with_another_spread_stops_the_pooling():
    rng = np.random.default_rng(2)
    y = rng.normal(0, 0.001, size=(6, 5))
    y[0] += rng.normal(0, 0.1, size=5)
    assert not stats.pooled_variance(y, range(5)).usable


def test_judge_pools_over_the_notebooks_rows_and_says_so():
    rng = np.random.default_rng(3)
    luck = rng.normal(0, 0.05, size=3)  # a seed's shared luck: cancels in every difference
    rows = {
        name: _records(0.3 + gain + luck + rng.normal(0, 0.01, size=3))
        for name, gain in {"a": 0.04, "b": 0.0, "c": 0.01, "d": 0.0, "e": 0.02}.items()
    }
    claim = claims.Claim("X", "a beats b", "s", "direction", "m", "p", notebook="nb", better="a", reference="b")
    line = claims.judge(claim, rows, "P")
    pooled = stats.pooled_variance(np.array([[r["metrics"]["m"] for r in rows[k]] for k in rows]), [0, 1, 2])
    assert pooled.usable and line["df"] == "8 pooled"
    d = claims.record_differences(rows["a"], rows["b"], "m")
    half = scipy_stats.t.ppf(0.975, 8) * pooled.contrast_std([1, -1]) / math.sqrt(3)
    assert line["interval"] == f"[{100 * (d.mean() - half):+.2f}, {100 * (d.mean() + half):+.2f}] pp"
    # the same claim alone: its own spread, 2 df
    alone = claims.judge(claim, {"a": rows["a"], "b": rows["b"]}, "P")
    assert alone["df"] == "2"
    # judged on a notebook's rows only: the rows its notebook's claims read
    assert claims.pooled_rows([claim]) == {("nb", ""): ["a", "b"]}


def test_a_claims_pool_is_its_own_budgets_rows_only():
    """Two budgets on one page (the head to head's equal samples and equal seconds): the rows of one budget never
    enter the other's pooled variance, so a verdict at equal samples cannot move with the runs at equal seconds."""
    rng = np.random.default_rng(4)
    luck = rng.normal(0, 0.05, size=3)
    rows = {
        name: _records(0.3 + gain + luck + rng.normal(0, 0.01, size=3))
        for name, gain in {"ref": 0.0, "a": 0.03, "b": 0.01, "a_s": 0.02, "b_s": 0.0}.items()
    }

    def claim(better, pool):
        return claims.Claim(
            f"X_{better}",
            "beats ref",
            "s",
            "direction",
            "m",
            "p",
            notebook="nb",
            better=better,
            reference="ref",
            pool=pool,
        )

    by_budget = [claim("a", "samples"), claim("b", "samples"), claim("a_s", "seconds"), claim("b_s", "seconds")]
    assert claims.pooled_rows(by_budget) == {
        ("nb", "samples"): ["a", "ref", "b"],
        ("nb", "seconds"): ["a_s", "ref", "b_s"],
    }
    table = claims.claims_table(by_budget, rows, "P")
    assert table.loc["X_a", "df"] == "4 pooled"  # 3 rows x 3 seeds, not the 5 rows of the page
    # the seconds rows made again (another machine's speed): the samples verdicts read the same
    remade = {**rows, "a_s": _records([0.1, 0.9, 0.5]), "b_s": _records([0.5, 0.2, 0.7])}
    again = claims.claims_table(by_budget, remade, "P")
    assert again.loc[["X_a", "X_b"]].equals(table.loc[["X_a", "X_b"]])
    # one pool for the page, as before: the seconds rows enter the samples claims' variance
    one_pool = [replace(c, pool="") for c in by_budget]
    assert claims.claims_table(one_pool, rows, "P").loc["X_a", "df"] == "8 pooled"


def test_the_papers_base_is_read_from_its_numbers_and_carried_three_ways():
    claim = claims.Claim(
        "P1", "t", "s", "direction", "m", "+9.3 pp (RN50: 38.5 vs 29.2)", paper_effect=0.093, better="a", reference="b"
    )
    assert claims.paper_base(claim) == pytest.approx(0.292)
    # the worked example: 9.3, 6.1 and 1.6 pp at our 15% with 10% chance
    scales = stats.effect_on_scales(0.093, 0.292, 0.15, paper_chance=0.001, our_chance=0.10)
    assert scales["points"] == pytest.approx(0.093)
    assert scales["logit"] == pytest.approx(0.0613, abs=5e-4) and scales["headroom"] == pytest.approx(0.016, abs=5e-4)
    results = {"a": _records([0.20, 0.21, 0.205]), "b": _records([0.15, 0.151, 0.149])}
    text = claims.judge(claim, results, "P")["effect_scales"]
    assert text.startswith("points +9.30 pp: reproduced, smaller than claimed") and "headroom" in text
    # a pair whose difference is not the paper's effect is not taken for its base
    assert claims.paper_base(claims.Claim("Q", "t", "s", "direction", "m", "41.35 vs 27.7", paper_effect=0.05)) is None


def test_evaluation_noise_bounds_a_differences_test_set_share():
    records = _records([0.25, 0.25, 0.25], "shapes10/linear", {"task_test": 1000, "retrieval_images": 500})
    # the figure: 1.9 pp at 1,000 test images and 25% accuracy
    assert claims.evaluation_noise(records, "shapes10/linear") == pytest.approx(math.sqrt(2 * 0.25 * 0.75 / 1000))
    assert claims.evaluation_noise(records, "shapes10/ari") != claims.evaluation_noise(records, "shapes10/ari")  # nan
    from vlp_lib.suite import AVERAGE_GROUPS

    tasks = AVERAGE_GROUPS["avg3"][0]
    accuracies = dict(zip(tasks, (0.2, 0.5, 0.8)))
    metrics = {"avg3/linear": 0.5, **{f"{t}/linear": a for t, a in accuracies.items()}}
    group = [{"config": {"seed": 0, "task_test": 1000}, "metrics": metrics}]
    by_hand = math.sqrt(sum(2 * a * (1 - a) / 1000 for a in accuracies.values())) / 3
    assert claims.evaluation_noise(group, "avg3/linear") == pytest.approx(by_hand)


def test_a_row_trained_once_stays_out_of_the_pool():
    rng = np.random.default_rng(4)
    rows = {name: _records(0.3 + rng.normal(0, 0.01, size=3)) for name in "abcd"}
    rows["teacher"] = [{"config": {"seed": 7}, "metrics": {"m": 0.9}}]
    claim = claims.Claim("X", "a beats b", "s", "direction", "m", "p", notebook="nb", better="a", reference="b")
    table, spanned = claims.pooled_table(rows, list(rows), "m", [0, 1, 2])
    assert "teacher" not in spanned and table.df == 6
    assert claims.judge(claim, rows, "P")["df"] in ("6 pooled", "2")  # pooled unless Bartlett objects


def test_a_run_read_under_two_labels_enters_the_pool_once():
    """The ProtoCLIP ablation's base run is the default bar of every sweep: four labels, one run per seed."""
    rng = np.random.default_rng(5)
    rows = {}
    for name in "abc":
        rows[name] = [
            {"config": {"seed": s}, "config_hash": f"{name}{s}", "metrics": {"m": 0.3 + rng.normal(0, 0.01)}}
            for s in range(3)
        ]
    rows["a again"] = [dict(r) for r in rows["a"]]
    table, spanned = claims.pooled_table(rows, list(rows), "m", [0, 1, 2])
    assert spanned == ("a", "b", "c") and table.df == 4  # (3 - 1) x (3 - 1), not (4 - 1) x (3 - 1)
    by_hand = [{**r, "config_hash": None} for r in rows["a"]]  # records without hashes: no way to tell, all count
    table, spanned = claims.pooled_table({**rows, "a again": by_hand}, list(rows), "m", [0, 1, 2])
    assert len(spanned) == 4 and table.df == 6


def test_an_every_claims_count_names_its_words_and_never_calls_larger_a_reproduction():
    tests = [SimpleNamespace(verdict=w) for w in (report.LARGER, report.REPRODUCED, report.LARGER, "inconclusive")]
    assert claims.settings_count(tests) == "3 of 4 in the paper's direction (1 reproduced + 2 larger than claimed)"
    assert claims.settings_count(tests[3:]) == "0 of 1 in the paper's direction"
