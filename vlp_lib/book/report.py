"""Tables for the book: metrics over seeds as mean ± std, beside chance and the papers' numbers, and the verdict
rule for claims (``VERDICT_RULE``, ``paired_test``): 95% t intervals of per-seed paired differences, with power."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vlp_lib.papers import chapters as all_chapters


def seed_values(records: Sequence[dict], key: str) -> np.ndarray:
    """``key`` of every record's metrics (one per seed)."""
    return np.array([r["metrics"][key] for r in records], dtype=float)


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value)."""
    v = np.asarray(list(values), dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def fmt(mean: float, std: float, percent: bool = True) -> str:
    """ "12.3 ± 0.4" for fractions shown in percent, "0.123 ± 0.004" otherwise."""
    return f"{100 * mean:.1f} ± {100 * std:.1f}" if percent else f"{mean:.3f} ± {std:.3f}"


def metrics_table(
    records: Sequence[dict],
    keys: Sequence[str],
    chance: dict[str, float] | None = None,
    labels: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per metric: mean, std, n seeds, "mean ± std" in percent, and chance where known."""
    rows = []
    for key in keys:
        m, s = mean_std(seed_values(records, key))
        row = {
            "metric": (labels or {}).get(key, key),
            "mean": m,
            "std": s,
            "seeds": len(records),
            "this book (%)": fmt(m, s),
        }
        if chance is not None:
            row["chance (%)"] = f"{100 * chance[key]:.1f}" if key in chance else ""
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


ALPHA = 0.05  # two-sided: 95% intervals
POWER = 0.8  # of the minimum detectable effect
MAX_SEEDS = 1_000  # "seeds needed" beyond this reads ">1000"
VERDICTS = ("reproduced", "smaller than claimed", "inconclusive", "opposite")

VERDICT_RULE = (
    "Per seed, the difference between the claimed-better setting and its reference (same seed, so the seed's "
    "common luck cancels); over n seeds its mean with a two-sided 95% confidence interval from the t distribution "
    "with n - 1 degrees of freedom, mean ± t(0.975, n-1) sd / sqrt(n). Reproduced: the interval lies entirely above "
    "0 (the paper's direction). Opposite: entirely below 0. Smaller than claimed: it includes 0 but excludes the "
    "paper's effect (only where the paper states a size; its percentage points, measured on ImageNet or CIFAR/STL "
    "after hours of training, are assumed to be the same fraction on our metric, an assumption, not a law). "
    "Inconclusive: it includes 0 and, where stated, the paper's effect; always with fewer than 2 seeds. Beside "
    "every verdict, its power: the minimum detectable effect at the seeds run (paired t-test, two-sided alpha 0.05, "
    "power 0.8: (t(0.975, n-1) + t(0.8, n-1)) sd / sqrt(n)) and the seeds that would decide the claim at the "
    "measured spread (the smallest n whose half-width t(0.975, n-1) sd / sqrt(n) would keep 0, or else the "
    f"paper's effect, out of an interval around the measured mean; '>{MAX_SEEDS}' beyond {MAX_SEEDS})."
)


def paired_differences(better: dict[int, float], reference: dict[int, float]) -> np.ndarray:
    """``better[seed] - reference[seed]`` for every seed both have, in seed order."""
    seeds = sorted(set(better) & set(reference))
    return np.array([better[s] - reference[s] for s in seeds], dtype=float)


def per_seed(records: Sequence[dict], key: str) -> dict[int, float]:
    """``{seed: metric}`` of run records."""
    return {int(r["config"]["seed"]): float(r["metrics"][key]) for r in records}


def record_differences(better: Sequence[dict], reference: Sequence[dict], key: str) -> np.ndarray:
    """``paired_differences`` of metric ``key`` between two runs' records (one record per seed)."""
    return paired_differences(per_seed(better, key), per_seed(reference, key))


def _t(q: float | np.ndarray, df: int | np.ndarray) -> np.ndarray:
    from scipy import stats

    return stats.t.ppf(q, df)


def half_width(std: float, n: int, alpha: float = ALPHA) -> float:
    """Half-width of the two-sided ``1 - alpha`` t interval of a mean of ``n`` values with sample std ``std``:
    ``t(1 - alpha/2, n-1) std / sqrt(n)``; ``inf`` with fewer than two values."""
    if n < 2:
        return float("inf")
    return float(_t(1 - alpha / 2, n - 1) * std / np.sqrt(n))


def minimum_detectable_effect(std: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true mean difference a paired t-test on ``n`` seeds detects with probability ``power``
    (two-sided ``alpha``): ``(t(1 - alpha/2, n-1) + t(power, n-1)) std / sqrt(n)``; ``nan`` below two seeds."""
    if n < 2:
        return float("nan")
    return float((_t(1 - alpha / 2, n - 1) + _t(power, n - 1)) * std / np.sqrt(n))


def seeds_to_decide(
    mean: float, std: float, paper_effect: float | None = None, alpha: float = ALPHA, max_seeds: int = MAX_SEEDS
) -> float:
    """Seeds that would decide a claim if the per-seed differences kept this mean and spread: the smallest
    n >= 2 whose half-width ``t(1 - alpha/2, n-1) std / sqrt(n)`` is below ``|mean|`` (the interval would exclude
    0) or, with a ``paper_effect``, below ``|mean - paper_effect|`` (it would exclude the paper's effect), whichever
    comes first. ``inf`` beyond ``max_seeds``; ``nan`` if ``std`` is not finite."""
    if not (np.isfinite(mean) and np.isfinite(std)):
        return float("nan")
    target = abs(mean) if paper_effect is None else max(abs(mean), abs(mean - paper_effect))
    n = np.arange(2, max_seeds + 1)
    decided = _t(1 - alpha / 2, n - 1) * std / np.sqrt(n) < target
    return float(n[np.argmax(decided)]) if decided.any() else float("inf")


@dataclass(frozen=True)
class PairedTest:
    """A claim "A beats B" judged on per-seed differences A - B by ``VERDICT_RULE``.

    ``low`` / ``high``: the two-sided ``1 - alpha`` t interval of the mean (infinite below two seeds); ``mde``:
    ``minimum_detectable_effect`` at the ``n`` seeds run; ``seeds_needed``: ``seeds_to_decide`` at the measured
    spread (a whole number; ``inf`` beyond ``MAX_SEEDS``, ``nan`` below two seeds)."""

    n: int
    mean: float
    std: float
    low: float
    high: float
    verdict: str
    mde: float
    seeds_needed: float
    paper_effect: float | None = None

    def seeds_needed_text(self) -> str:
        """ "4", ">1000", or "" when unknown (fewer than two seeds)."""
        if np.isnan(self.seeds_needed):
            return ""
        return f">{MAX_SEEDS}" if np.isinf(self.seeds_needed) else str(int(self.seeds_needed))


def paired_test(
    differences: Sequence[float] | np.ndarray,
    paper_effect: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
) -> PairedTest:
    """Judge per-seed differences (claimed-better minus reference, paired by seed) by ``VERDICT_RULE``:
    "reproduced" (interval above 0), "opposite" (below 0), "smaller than claimed" (includes 0, excludes
    ``paper_effect``, a fraction on our metric), "inconclusive" (otherwise, and with fewer than 2 seeds)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0:
        return PairedTest(
            0,
            float("nan"),
            float("nan"),
            float("-inf"),
            float("inf"),
            "inconclusive",
            float("nan"),
            float("nan"),
            paper_effect,
        )
    if not np.isfinite(
        d
    ).all():  # a missing or broken seed decides nothing (NaN compares False: no verdict by accident)
        return PairedTest(
            n,
            float("nan"),
            float("nan"),
            float("-inf"),
            float("inf"),
            "inconclusive",
            float("nan"),
            float("nan"),
            paper_effect,
        )
    mean, std = mean_std(d)
    if n < 2:
        return PairedTest(
            n, mean, std, float("-inf"), float("inf"), "inconclusive", float("nan"), float("nan"), paper_effect
        )
    half = half_width(std, n, alpha)
    low, high = mean - half, mean + half
    if low > 0:
        v = "reproduced"
    elif high < 0:
        v = "opposite"
    elif paper_effect is not None and not low <= paper_effect <= high:
        v = "smaller than claimed"
    else:
        v = "inconclusive"
    return PairedTest(
        n,
        mean,
        std,
        low,
        high,
        v,
        minimum_detectable_effect(std, n, alpha, power),
        seeds_to_decide(mean, std, paper_effect, alpha),
        paper_effect,
    )


EQUIVALENCE_RULE = (
    "'No difference' claims (e.g. a distilled student matches its reference): with a margin m stated per claim, "
    "reproduced when the 95% t interval of the per-seed differences lies inside (-m, m), opposite when it lies "
    "entirely outside it, inconclusive otherwise (and with fewer than 2 seeds)."
)
SWEEP_RULE = (
    "'Best at X' claims on a sweep: reproduced when the grid point with the best seed-mean is the paper's best or "
    "its neighbour and the per-seed difference best minus the named end point is reproduced (VERDICT_RULE); "
    "opposite only through a test: when that difference is opposite, or, when the end point itself has the best "
    "seed-mean, when the paper's best minus the end point is opposite (VERDICT_RULE); inconclusive otherwise."
)


def equivalence_test(differences: Sequence[float] | np.ndarray, margin: float) -> str:
    """``EQUIVALENCE_RULE``: "reproduced" / "opposite" / "inconclusive" for per-seed differences that a claim
    says are within ``margin`` (> 0) of zero."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    t = paired_test(differences)
    if t.n < 2:
        return "inconclusive"
    if -margin < t.low and t.high < margin:
        return "reproduced"
    if t.low >= margin or t.high <= -margin:
        return "opposite"
    return "inconclusive"


def sweep_test(per_setting: dict[Any, Sequence[dict]], key: str, paper_best: Any, endpoint: Any) -> str:
    """``SWEEP_RULE`` on a sweep's records ``{grid value: [record per seed]}`` (grid values in sweep order):
    whether ``paper_best`` (or a neighbour) has the best seed-mean ``key`` and beats ``endpoint`` per seed."""
    grid = list(per_setting)
    for name, value in (("paper_best", paper_best), ("endpoint", endpoint)):
        if value not in per_setting:
            raise ValueError(f"{name} {value!r} is not a grid value of the sweep {grid}")
    means = [float(np.mean(seed_values(per_setting[g], key))) for g in grid]
    best = grid[int(np.argmax(means))]
    near = abs(grid.index(best) - grid.index(paper_best)) <= 1
    # the best seed-mean at the end point is no verdict by itself (on a flat curve it happens 1 in len(grid) times):
    # the paper's best is then tested against the end point, and only that test can say "opposite"
    compared = best if best != endpoint else paper_best
    verdict = (
        paired_test(record_differences(per_setting[compared], per_setting[endpoint], key)).verdict
        if compared != endpoint
        else "inconclusive"
    )
    if verdict == "opposite":
        return "opposite"
    return "reproduced" if best != endpoint and near and verdict == "reproduced" else "inconclusive"


def paired_interval(differences: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided ``confidence`` interval of the mean of per-seed paired differences, from the t distribution
    with n - 1 degrees of freedom; ``(-inf, inf)`` with fewer than two seeds."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 2:
        return float("-inf"), float("inf")
    mean, std = mean_std(d)
    half = half_width(std, len(d), 1 - confidence)
    return mean - half, mean + half


def direction(differences: Sequence[float] | np.ndarray) -> str:
    """ "higher" / "lower" / "within noise" (or "too few seeds", below two) for per-seed differences, by the
    interval of ``VERDICT_RULE``: the 95% t interval of their mean lies above 0, below 0, or includes it."""
    t = paired_test(differences)
    if t.n < 2:
        return "too few seeds"
    return {"reproduced": "higher", "opposite": "lower"}.get(t.verdict, "within noise")


def verdict(differences: Sequence[float] | np.ndarray, paper_effect: float | None = None) -> str:
    """``paired_test(differences, paper_effect).verdict``: "reproduced" / "opposite" / "smaller than claimed" /
    "inconclusive" for the per-seed differences of a claim ("the claimed-better setting minus its reference")."""
    return paired_test(differences, paper_effect).verdict


def format_test(test: PairedTest | None, percent: bool = True) -> dict[str, str]:
    """The scorecard's text columns of a test: ``book_value`` (mean difference), ``interval``, ``mde`` and
    ``seeds_needed``; in percentage points for fractions shown in percent (``percent``), raw otherwise."""
    if test is None or test.n == 0:
        return {"book_value": "", "interval": "", "mde": "", "seeds_needed": ""}

    def num(x: float, sign: bool = True) -> str:
        if not np.isfinite(x):
            return "∞" if x > 0 else "-∞"
        return (f"{100 * x:+.2f}" if sign else f"{100 * x:.2f}") if percent else (f"{x:+.3f}" if sign else f"{x:.3f}")

    unit = " pp" if percent else ""
    return {
        "book_value": f"{num(test.mean)}{unit}",
        "interval": f"[{num(test.low)}, {num(test.high)}]{unit}" if test.n >= 2 else "",
        "mde": f"{num(test.mde, sign=False)}{unit}" if test.n >= 2 else "",
        "seeds_needed": test.seeds_needed_text(),
    }


SCORECARD_COLUMNS = [
    "id",
    "paper",
    "claim",
    "source",
    "notebook",
    "metric",
    "paper_value",
    "book_value",
    "interval",
    "verdict",
    "mde",
    "seeds_needed",
    "seeds",
]


def scorecard(scale: str = "laptop") -> pd.DataFrame:
    """Every headline claim of every chapter of ``vlp_lib.papers`` against this book's stored runs at ``scale``,
    one line each (``SCORECARD_COLUMNS``): the paper's value, ours (``book_value``: mean per-seed difference), the
    95% t ``interval``, the ``verdict`` (``VERDICT_RULE``, or a chapter's own rule for timing and "matches in less
    time" claims; "not run" when the runs are not in the results store: execute the chapter's notebooks first), the
    minimum detectable effect at the seeds run (``mde``) and the seeds that would decide the claim at the measured
    spread (``seeds_needed``). Trains nothing."""
    lines = [line for chapter in all_chapters() for line in chapter.claims(scale)]
    return pd.DataFrame(lines, columns=SCORECARD_COLUMNS)
