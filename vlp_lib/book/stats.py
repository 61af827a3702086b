"""The statistics behind the book's verdicts, on plain numbers (no records): exact power of t tests, the minimum
detectable effect, seeds planned for a power, the variance pooled over a chapter's rows, Benjamini-Hochberg q-values
and a paper's effect carried onto our metric.

Every test here is a t test on per-seed paired differences. With ``se`` the standard error of their mean and
``df`` its degrees of freedom (n - 1 for a claim's own n seeds, (R - 1)(n - 1) when the variance is pooled over R
rows, ``pooled_variance``), a true mean difference ``delta`` gives a t statistic with a noncentral t distribution,
noncentrality ``delta / se``: the exact power used throughout (scipy's ``nct``), not the normal approximation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

ALPHA = 0.05  # two-sided: 95% intervals; each one-sided test at alpha / 2
POWER = 0.8


def t_quantile(q: float, df: float) -> float:
    """``t(q, df)``; ``inf`` (no interval) below one degree of freedom."""
    return float(stats.t.ppf(q, df)) if df >= 1 else float("inf")


def power_two_sided(delta: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """Exact power of the two-sided t test of mean 0 at level ``alpha`` when the true mean is ``delta``."""
    if df < 1 or not se > 0:
        return float("nan") if not se >= 0 else float(delta != 0)
    crit = t_quantile(1 - alpha / 2, df)
    nc = abs(delta) / se
    # scipy's nct gives NaN far in a tail: there the upper tail's mass is 1 and the lower tail's 0
    upper, lower = stats.nct.sf(crit, df, nc), stats.nct.cdf(-crit, df, nc)
    return float((upper if np.isfinite(upper) else 1.0) + (lower if np.isfinite(lower) else 0.0))


def power_one_sided(shift: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """Exact power of one one-sided t test at level ``alpha / 2`` (the book's intervals are two-sided 1 - alpha)
    when the true mean lies ``shift`` beyond the tested bound (non-inferiority: ``shift`` = true difference + margin)."""
    if df < 1 or not se > 0:
        return float("nan")
    power = stats.nct.sf(t_quantile(1 - alpha / 2, df), df, shift / se)
    return float(power) if np.isfinite(power) else float(shift > 0)  # NaN far in the tail


def power_equivalence(margin: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """Power of two one-sided tests (within ``±margin``, each at ``alpha / 2``) when the true mean is 0: the
    Bonferroni lower bound 1 - 2 P(one side fails), exact for each side."""
    side = power_one_sided(margin, se, df, alpha)
    return float(max(0.0, 1 - 2 * (1 - side))) if np.isfinite(side) else float("nan")


def minimum_detectable_effect(
    std: float, n: int, df: float | None = None, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The smallest true mean difference a two-sided paired t test on ``n`` seeds (standard deviation of the
    differences ``std``, ``df`` degrees of freedom: n - 1 unless pooled) detects with probability ``power``, from
    the noncentral t (exact: 3.26 sd at n = 3, 11.55 sd at n = 2, not the 3.10 and 9.96 of the normal-quantile
    formula); ``nan`` below two seeds or without degrees of freedom."""
    df = n - 1 if df is None else df
    if n < 2 or df < 1 or not np.isfinite(std):
        return float("nan")
    if std == 0:
        return 0.0
    se = std / np.sqrt(n)
    return float(optimize.brentq(lambda d: power_two_sided(d, se, df, alpha) - power, 1e-9 * se, 100 * se))


def planned_seeds(
    std: float,
    effect: float,
    kind: str = "difference",
    rows: int = 2,
    alpha: float = ALPHA,
    power: float = POWER,
    max_seeds: int = 1_000,
) -> float:
    """Seeds a new experiment (fresh seeds, fixed before it runs) needs to reach ``power`` when the per-seed
    differences have standard deviation ``std``: ``kind`` "difference" detects a true ``effect`` with the two-sided
    test, "noninferiority" clears ``-effect`` (the margin) when the true difference is 0, "equivalence" shows
    ``±effect`` (the margin) when it is 0. ``rows`` > 2: the variance pooled over that many rows ((rows - 1)(n - 1)
    degrees of freedom). ``inf`` beyond ``max_seeds``; ``nan`` without a finite spread or a positive effect."""
    if not (np.isfinite(std) and np.isfinite(effect)) or effect == 0:
        return float("nan")
    effect = abs(effect)
    if std == 0:
        return 2.0
    test = {"difference": power_two_sided, "noninferiority": power_one_sided, "equivalence": power_equivalence}[kind]

    def enough(n: int) -> bool:
        return test(effect, std / np.sqrt(n), (n - 1) * (max(rows, 2) - 1), alpha) >= power

    # the power grows with n (a smaller standard error on more degrees of freedom): the first n that reaches it by
    # doubling, then bisection (about 20 exact powers where counting up from 2 took up to ``max_seeds``: the
    # scorecard plans a few hundred claims)
    low, high = 1, 2  # not enough at ``low`` (n = 1 has no test), to be checked at ``high``
    while not enough(high):
        if high >= max_seeds:
            return float("inf")
        low, high = high, min(2 * high, max_seeds)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return float(high)


@dataclass(frozen=True)
class Pooled:
    """The residual variance of a rows x seeds table under the additive model value = row + seed + noise (seeds
    as blocks), its degrees of freedom (R - 1)(S - 1), and Bartlett's test of equal spread across the rows
    (``homogeneity_p``, on each row's residuals). ``usable``: at least 3 rows, 2 seeds, and the rows' spreads not
    shown to differ (p >= 0.05); a contrast sum_r c_r row_r then has per-seed standard deviation
    ``sqrt(variance * sum c_r^2)`` on ``df`` degrees of freedom."""

    variance: float
    df: int
    rows: int
    seeds: tuple[int, ...]
    homogeneity_p: float

    @property
    def usable(self) -> bool:
        return self.rows >= 3 and len(self.seeds) >= 2 and self.homogeneity_p >= 0.05 and np.isfinite(self.variance)

    def contrast_std(self, coefficients: Sequence[float]) -> float:
        """Per-seed standard deviation of the contrast with these row coefficients."""
        return float(np.sqrt(self.variance * float(np.sum(np.square(coefficients)))))


def pooled_variance(table: np.ndarray, seeds: Sequence[int]) -> Pooled:
    """``Pooled`` of a rows x seeds array (every row measured on every seed of ``seeds``)."""
    y = np.asarray(table, dtype=float)
    r, s = y.shape
    if r < 2 or s < 2 or not np.isfinite(y).all():
        return Pooled(float("nan"), 0, r, tuple(seeds), float("nan"))
    residual = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = (r - 1) * (s - 1)
    variance = float(np.sum(residual**2) / df)
    spreads = [row for row in residual]
    p = float(stats.bartlett(*spreads).pvalue) if all(np.ptp(row) > 0 for row in spreads) else float("nan")
    return Pooled(variance, df, r, tuple(int(x) for x in seeds), p)


def bh_qvalues(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values) of ``p_values`` (scipy's ``false_discovery_control``);
    NaN entries stay NaN and do not count."""
    p = np.asarray(p_values, dtype=float)
    q = np.full_like(p, np.nan)
    finite = np.isfinite(p)
    if finite.any():
        q[finite] = stats.false_discovery_control(np.clip(p[finite], 0, 1), method="bh")
    return q


EFFECT_SCALES = ("points", "logit", "headroom")
EFFECT_SCALES_RULE = (
    "A paper's effect is carried onto our metric three ways, each a declared assumption: 'points' takes its "
    "percentage points 1:1 (the verdict column); 'logit' keeps the shift in log-odds from the paper's reference "
    "value to its improved one, applied at our reference's mean; 'headroom' keeps the gain as the same share of "
    "the reference's margin above chance (paper: its reference minus the benchmark's chance, taken as 0 for "
    "ImageNet-scale label sets unless a claim states one; ours: our reference's mean minus our chance level)."
)


def effect_on_scales(
    paper_effect: float,
    paper_base: float | None,
    ours_base: float | None,
    paper_chance: float = 0.0,
    our_chance: float = 0.0,
) -> dict[str, float]:
    """The paper's effect (a fraction) on our metric under each of ``EFFECT_SCALES`` (``EFFECT_SCALES_RULE``);
    'logit' and 'headroom' are ``nan`` without both reference values inside (0, 1)."""
    out = {"points": float(paper_effect), "logit": float("nan"), "headroom": float("nan")}
    if paper_base is None or ours_base is None or not (0 < paper_base < 1 and 0 < ours_base < 1):
        return out
    improved = paper_base + paper_effect
    if 0 < improved < 1:
        shift = np.log(improved / (1 - improved)) - np.log(paper_base / (1 - paper_base))
        logit = np.log(ours_base / (1 - ours_base)) + shift
        out["logit"] = float(1 / (1 + np.exp(-logit)) - ours_base)
    if paper_base - paper_chance > 0:
        out["headroom"] = float(paper_effect * (ours_base - our_chance) / (paper_base - paper_chance))
    return out
