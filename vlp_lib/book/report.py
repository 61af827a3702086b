"""Tables for the book: metrics over seeds as mean ± std, beside chance and the papers' numbers, and the verdict
rule for claims (``VERDICT_RULE``, ``paired_test``): 95% t intervals of per-seed paired differences, with power."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from vlp_lib.book import stats
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


ALPHA = stats.ALPHA  # two-sided: 95% intervals
POWER = stats.POWER  # of the minimum detectable effect and of planned seeds
FDR = 0.05  # Benjamini-Hochberg level across the book's tested claims
MAX_SEEDS = 1_000  # "seeds needed" beyond this reads ">1000"
SEED_BUDGET = 10  # a claim planned to need more seeds than this is marked "needs about N seeds"
DECIDED = ("reproduced", "reproduced, smaller than claimed", "smaller than claimed", "no effect", "opposite")
VERDICTS = (*DECIDED[:4], "inconclusive", "opposite")
# "No effect" margins, stated before any verdict: a difference within +-1 pp of a fraction shown in percent is below
# the smallest gain any of the five papers reports as a headline improvement in its main tables (1 pp), and at our
# test sets (2,000 images per task) about one standard error of a single accuracy at 25% (0.97 pp); a claim whose
# paper effect is itself inside the margin cannot be shown "no effect" (our precision cannot tell its size from zero).
# Raw metrics (losses, ARI, rank correlations) have no declared margin.
NO_EFFECT_MARGIN = 0.01

VERDICT_RULE = (
    "Per seed, the difference between the claimed-better setting and its reference (same seed, so the seed's "
    "common luck cancels); over n seeds its mean with a two-sided 95% confidence interval from the t distribution. "
    "Its spread is pooled over the rows of the claim's notebook that share its seeds and metric (POOLING_RULE) where "
    "their spreads are alike, else the claim's own: mean ± t(0.975, df) sd / sqrt(n) with df (R - 1)(n - 1) pooled "
    "over R rows, n - 1 otherwise. Direction and size are two questions. Reproduced: the interval lies entirely "
    "above 0 (the paper's direction) and does not lie below the paper's effect; 'reproduced, smaller than claimed': "
    "above 0 but entirely below the paper's effect. Opposite: entirely below 0. No effect: inside ±1 pp (two one-sided "
    "tests; percent metrics, where the paper's effect is not itself inside ±1 pp). Smaller than claimed: it includes "
    "0 but excludes the paper's effect. Inconclusive: otherwise, and always with fewer than 2 seeds. The paper's "
    "effect is its percentage points taken 1:1 on our metric, an assumption: the effect-scales column gives the "
    "verdict with the effect carried by log-odds and by the share of above-chance headroom too (EFFECT_SCALES_RULE). "
    "Each verdict has a p-value on the two-sided scale (twice the one-sided p of the test that decides it; the "
    "larger of two when two tests decide it): a verdict is reached exactly when p < 0.05. Beside it, the power: the "
    "minimum detectable effect at the seeds run (exact, noncentral t: 3.26 sd at n = 3) and the seeds a new "
    "experiment on fresh seeds would plan for 80% power at the paper's effect (else at the 1 pp margin), at the "
    f"spread measured; '>{MAX_SEEDS}' beyond {MAX_SEEDS}, and claims planned above {SEED_BUDGET} seeds are marked "
    "as needing them. These counts plan a new experiment; they never top up this one."
)
POOLING_RULE = (
    "Pooled variance: for each notebook and metric, the rows its claims read form a rows x seeds table (the seeds "
    "every row has; a notebook that judges claims at two budgets pools each budget's claims over that budget's rows "
    "only, so that no verdict moves with the other budget's runs); the additive model value = row + seed + noise "
    "(seeds as blocks) gives the residual variance on (R - 1)(S - 1) degrees of freedom, and a claim comparing "
    "rows by coefficients c (1 and -1 for A minus B) uses the per-seed standard deviation sqrt(variance sum c^2). "
    "Used when the table has at least 3 rows and Bartlett's "
    "test does not find the rows' spreads unlike (p >= 0.05); otherwise, and for claims across metrics, the claim's "
    "own differences decide on n - 1 degrees of freedom."
)
FDR_RULE = (
    "Benjamini-Hochberg q-values over the p-values of every tested claim (timing claims and claims "
    "not run excluded); a verdict stands at a 5% false discovery rate when its q <= 0.05, else it reads "
    "inconclusive in the FDR column."
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


def half_width(std: float, n: int, alpha: float = ALPHA, df: float | None = None) -> float:
    """Half-width of the two-sided ``1 - alpha`` t interval of a mean of ``n`` values with standard deviation
    ``std`` on ``df`` degrees of freedom (n - 1 by default): ``t(1 - alpha/2, df) std / sqrt(n)``; ``inf`` with
    fewer than two values."""
    df = n - 1 if df is None else df
    if n < 2 or df < 1:
        return float("inf")
    return float(stats.t_quantile(1 - alpha / 2, df) * std / np.sqrt(n))


minimum_detectable_effect = stats.minimum_detectable_effect


@dataclass(frozen=True)
class PairedTest:
    """A claim "A beats B" judged on per-seed differences A - B by ``VERDICT_RULE``.

    ``std``: the standard deviation the interval uses (pooled where ``pooled``, on ``df`` degrees of freedom);
    ``own_std``: the differences' own; ``low`` / ``high``: the two-sided ``1 - alpha`` t interval of the mean
    (infinite below two seeds); ``p``: the p-value of the verdict (``VERDICT_RULE``; ``nan`` below two seeds);
    ``mde``: ``minimum_detectable_effect`` at the ``n`` seeds run; ``seeds_needed``: seeds a new experiment would
    plan (``stats.planned_seeds``; ``inf`` beyond ``MAX_SEEDS``, ``nan`` when unknown)."""

    n: int
    mean: float
    std: float
    low: float
    high: float
    verdict: str
    mde: float
    seeds_needed: float
    paper_effect: float | None = None
    df: float = 0.0
    p: float = float("nan")
    own_std: float = float("nan")
    pooled: bool = False

    @property
    def rows(self) -> int:
        """The rows the test's variance spans, back from its degrees of freedom (R - 1)(n - 1); 2 when not pooled."""
        return int(round(self.df / (self.n - 1))) + 1 if self.n > 1 else 2

    @property
    def se(self) -> float:
        return self.std / np.sqrt(self.n) if self.n else float("nan")

    def one_sided(self, bound: float, above: bool) -> float:
        """p-value of "the true mean is above ``bound``" (``above``) or below it, one-sided t on ``df``."""
        if self.n < 2 or self.df < 1 or not np.isfinite(self.mean):
            return float("nan")
        if self.se == 0:
            return 0.0 if (self.mean > bound if above else self.mean < bound) else 1.0
        t = (self.mean - bound) / self.se
        return float(scipy_stats.t.sf(t if above else -t, self.df))

    def seeds_needed_text(self) -> str:
        """ "4", ">1000", or "" when unknown (fewer than two seeds)."""
        return seeds_text(self.seeds_needed)


def seeds_text(n: float) -> str:
    """ "4", ">1000", or "" for ``nan``."""
    if np.isnan(n):
        return ""
    return f">{MAX_SEEDS}" if np.isinf(n) else str(int(n))


def _undecided(n: int, mean: float, std: float, paper_effect: float | None) -> PairedTest:
    inf = float("inf")
    return PairedTest(n, mean, std, -inf, inf, "inconclusive", float("nan"), float("nan"), paper_effect, own_std=std)


def paired_test(
    differences: Sequence[float] | np.ndarray,
    paper_effect: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    margin: float | None = None,
    pooled: tuple[float, float] | None = None,
) -> PairedTest:
    """Judge per-seed differences (claimed-better minus reference, paired by seed) by ``VERDICT_RULE``:
    "reproduced", "reproduced, smaller than claimed", "opposite", "no effect" (inside ``±margin``, when a margin
    is given and the paper's effect is not inside it), "smaller than claimed" (includes 0, excludes
    ``paper_effect``, a fraction on our metric), "inconclusive" (otherwise, and with fewer than 2 seeds, or a
    difference that is not finite). ``pooled``: (standard deviation, degrees of freedom) of the differences from
    ``stats.pooled_variance``, replacing their own."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0:
        return _undecided(0, float("nan"), float("nan"), paper_effect)
    if not np.isfinite(
        d
    ).all():  # a missing or broken seed decides nothing (NaN compares False: no verdict by accident)
        return _undecided(n, float("nan"), float("nan"), paper_effect)
    mean, own = mean_std(d)
    if n < 2:
        return _undecided(n, mean, own, paper_effect)
    std, df = (own, float(n - 1)) if pooled is None else (float(pooled[0]), float(pooled[1]))
    half = half_width(std, n, alpha, df)
    low, high = mean - half, mean + half
    pe = paper_effect
    base = PairedTest(
        n, mean, std, low, high, "", float("nan"), float("nan"), pe, df, own_std=own, pooled=pooled is not None
    )
    up, down = base.one_sided(0.0, above=True), base.one_sided(0.0, above=False)
    if low > 0:
        if pe is not None and pe > 0 and high < pe:
            v, p = "reproduced, smaller than claimed", max(up, base.one_sided(pe, above=False))
        else:
            v, p = "reproduced", up
    elif high < 0:
        v, p = "opposite", down
    elif margin is not None and -margin < low and high < margin and (pe is None or abs(pe) >= margin):
        v, p = "no effect", max(base.one_sided(-margin, above=True), base.one_sided(margin, above=False))
    elif pe is not None and not low <= pe <= high:
        v, p = "smaller than claimed", base.one_sided(pe, above=pe < 0)
    else:
        v, p = "inconclusive", min(up, down)
    target = pe if pe is not None else margin
    return replace(
        base,
        verdict=v,
        p=min(1.0, 2 * p),
        mde=stats.minimum_detectable_effect(std, n, df, alpha, power),
        seeds_needed=stats.planned_seeds(std, target, rows=base.rows) if target is not None else float("nan"),
    )


EQUIVALENCE_RULE = (
    "'No difference' claims (e.g. a distilled student matches its reference): with a margin m stated per claim, "
    "reproduced when the 95% t interval of the per-seed differences lies inside (-m, m) (two one-sided tests), "
    "opposite when it lies entirely outside it, inconclusive otherwise (and with fewer than 2 seeds); seeds "
    "planned for 80% power to show the margin when the true difference is 0."
)
NONINFERIORITY_RULE = (
    "'Not worse by more than m' claims: reproduced when the 95% interval lies above -m (one-sided test at 2.5%), "
    "opposite when it lies below -m, inconclusive otherwise; seeds planned for 80% power to clear -m when the true "
    "difference is 0."
)
SWEEP_RULE = (
    "'Best at X' claims on a sweep: the paper's best grid point minus the end point the claim names, per seed, by "
    "VERDICT_RULE (reproduced when the paper's best beats it, opposite when the end point beats the paper's best); "
    "the grid point with the best seed-mean is shown and decides nothing (on a flat curve any point is best 1 time "
    "in len(grid))."
)
EVERY_RULE = (
    "'Every setting beats the reference' claims (and 'X is the best value': X beats every other): reproduced when "
    "every comparison is reproduced by VERDICT_RULE (an intersection of tests needs no correction; p is the "
    "largest), opposite when any comparison is opposite after Bonferroni over the k comparisons (the same as Holm's "
    "first step, which is all 'any' needs), inconclusive otherwise; the line shows the comparison that decides (the "
    "weakest when reproduced or inconclusive, the opposite one when opposite)."
)
BEST_OF_RULE = (
    "'The best of several settings beats the reference' claims: each setting's difference from the reference, "
    "Bonferroni over the k settings (the best is chosen on the same data, so a plain test of it would be too "
    "lenient): reproduced when the smallest p times k is below 0.05, opposite when every setting is opposite."
)


def equivalence_test(
    differences: Sequence[float] | np.ndarray, margin: float, pooled: tuple[float, float] | None = None
) -> tuple[str, float]:
    """``EQUIVALENCE_RULE``: ("reproduced" / "opposite" / "inconclusive", p) for per-seed differences that a claim
    says are within ``margin`` (> 0) of zero (``equivalence_verdict`` of their ``paired_test``)."""
    return equivalence_verdict(paired_test(differences, pooled=pooled), margin)


def equivalence_verdict(test: PairedTest, margin: float) -> tuple[str, float]:
    """``EQUIVALENCE_RULE``: ("reproduced" / "opposite" / "inconclusive", p) of ``test`` against ``±margin``."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    t = test
    if t.n < 2 or not np.isfinite(t.mean):
        return "inconclusive", float("nan")
    inside = max(t.one_sided(-margin, above=True), t.one_sided(margin, above=False))
    outside = min(t.one_sided(margin, above=True), t.one_sided(-margin, above=False))
    if -margin < t.low and t.high < margin:
        return "reproduced", min(1.0, 2 * inside)
    if t.low >= margin or t.high <= -margin:
        return "opposite", min(1.0, 2 * outside)
    return "inconclusive", min(1.0, 2 * min(inside, outside))


def noninferiority_test(test: PairedTest, margin: float) -> tuple[str, float]:
    """``NONINFERIORITY_RULE``: ("reproduced" / "opposite" / "inconclusive", p) of ``test`` against ``-margin``."""
    if test.n < 2 or not np.isfinite(test.mean):
        return "inconclusive", float("nan")
    above, below = test.one_sided(-margin, above=True), test.one_sided(-margin, above=False)
    if test.low > -margin:
        return "reproduced", min(1.0, 2 * above)
    if test.high < -margin:
        return "opposite", min(1.0, 2 * below)
    return "inconclusive", min(1.0, 2 * min(above, below))


def every_test(tests: Sequence[PairedTest]) -> tuple[str, float, int]:
    """``EVERY_RULE`` over the comparisons' tests: (verdict, p, index of the comparison that decides)."""
    k = len(tests)
    up = [2 * t.one_sided(0.0, above=True) for t in tests]
    down = [min(1.0, 2 * k * t.one_sided(0.0, above=False)) for t in tests]
    weakest = int(np.nanargmax(up)) if np.isfinite(up).any() else 0
    if all(t.verdict.startswith("reproduced") for t in tests):
        return "reproduced", min(1.0, max(up)), weakest
    if np.isfinite(down).any() and min(down) < ALPHA:
        worst = int(np.nanargmin(down))
        return "opposite", min(down), worst
    finite = [x for x in (*up, *down) if np.isfinite(x)]
    return "inconclusive", min(1.0, max(up)) if finite else float("nan"), weakest


def best_of_test(tests: Sequence[PairedTest]) -> tuple[str, float, int]:
    """``BEST_OF_RULE`` over each setting's test against the reference: (verdict, p, index of the best)."""
    k = len(tests)
    up = [min(1.0, 2 * k * t.one_sided(0.0, above=True)) for t in tests]
    down = [2 * t.one_sided(0.0, above=False) for t in tests]
    if not np.isfinite(up).any():
        return "inconclusive", float("nan"), 0
    best = int(np.nanargmin(up))
    if up[best] < ALPHA:
        return "reproduced", up[best], best
    if all(t.verdict == "opposite" for t in tests):
        return "opposite", min(1.0, max(down)), int(np.nanargmax(down))
    return "inconclusive", up[best], best


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
    """``paired_test(differences, paper_effect).verdict`` for the per-seed differences of a claim ("the
    claimed-better setting minus its reference")."""
    return paired_test(differences, paper_effect).verdict


def format_test(test: PairedTest | None, percent: bool = True) -> dict[str, Any]:
    """The scorecard's columns of a test: ``book_value`` (mean difference), ``interval``, ``mde`` and
    ``seeds_needed`` (text; in percentage points for fractions shown in percent, raw otherwise), ``df`` (the
    interval's degrees of freedom, "12 pooled" when pooled) and ``p``."""
    if test is None or test.n == 0:
        return {"book_value": "", "interval": "", "mde": "", "seeds_needed": "", "df": "", "p": float("nan")}

    def num(x: float, sign: bool = True) -> str:
        if not np.isfinite(x):
            return "∞" if x > 0 else "-∞"
        return (f"{100 * x:+.2f}" if sign else f"{100 * x:.2f}") if percent else (f"{x:+.3f}" if sign else f"{x:.3f}")

    unit = " pp" if percent else ""
    two = test.n >= 2 and np.isfinite(test.mean)
    return {
        "book_value": f"{num(test.mean)}{unit}",
        "interval": f"[{num(test.low)}, {num(test.high)}]{unit}" if two else "",
        "mde": f"{num(test.mde, sign=False)}{unit}" if two else "",
        "seeds_needed": test.seeds_needed_text(),
        "df": (f"{int(test.df)} pooled" if test.pooled else str(int(test.df))) if two else "",
        "p": test.p,
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
    "df",
    "verdict",
    "p",
    "effect_scales",
    "eval_noise",
    "mde",
    "seeds_needed",
    "seeds",
]
BOOK_COLUMNS = ["q", "verdict_fdr"]  # added by ``scorecard``: across the book
CLAIMS_VIEW = {  # column -> header of a page's table of its claims (``claims_view``)
    "claim": "claim (source)",
    "paper_value": "paper",
    "book_value": "book (mean Δ per seed)",
    "interval": "95% interval (df)",
    "verdict": "verdict",
    "p": "p",
    "mde": "detectable",
    "seeds_needed": "seeds planned",
}


def interval_text(interval: str, df: str) -> str:
    """A claim's ``interval`` with its degrees of freedom ``df`` (``format_test``'s): "[-1.64, +2.14] pp (df 14,
    pooled)"; the interval alone where it has no df, nothing where it has no interval."""
    return f"{interval} (df {df.replace(' pooled', ', pooled')})" if interval and df else interval


def claims_view(claims: pd.DataFrame, paper: bool = True) -> pd.DataFrame:
    """A page's table of its judged claims (lines with ``SCORECARD_COLUMNS``, indexed by id) in fewer, wider
    columns, so that it fits the page: the claim with its source, the interval with its degrees of freedom
    (``interval_text``), p to four places ("—" where a claim has no test: not run, or a timing claim), the headers
    of ``CLAIMS_VIEW``. ``paper=False`` for the book's own claims (the head to head, the real drawings): no paper
    states them, so the claim goes without its source and the table without the paper's column (the page says
    why)."""
    view = claims.assign(
        claim=[f"{claim} ({source})" if paper else claim for claim, source in zip(claims["claim"], claims["source"])],
        interval=[interval_text(str(i), str(d)) for i, d in zip(claims["interval"], claims["df"])],
        p=[f"{p:.4f}" if np.isfinite(p) else "—" for p in pd.to_numeric(claims["p"], errors="coerce")],
    )
    columns = {k: v for k, v in CLAIMS_VIEW.items() if paper or k != "paper_value"}
    if not paper:
        columns["claim"] = "claim"
    return view[list(columns)].rename(columns=columns)


def with_fdr(card: pd.DataFrame, level: float = FDR) -> pd.DataFrame:
    """``card`` with ``BOOK_COLUMNS`` (``FDR_RULE``): Benjamini-Hochberg q-values over the claims with a finite
    p-value, and each verdict at a ``level`` false discovery rate (a decided verdict whose q exceeds ``level``
    reads "inconclusive"; verdicts without a p-value, timing claims and claims not run, are kept)."""
    card = card.copy()
    p = pd.to_numeric(card["p"], errors="coerce").to_numpy(dtype=float)
    q = stats.bh_qvalues(p)
    card["q"] = q
    demoted = np.isfinite(q) & (q > level) & card["verdict"].isin(DECIDED).to_numpy()
    card["verdict_fdr"] = np.where(demoted, "inconclusive", card["verdict"])
    return card


def scorecard(scale: str = "laptop") -> pd.DataFrame:
    """Every headline claim of every chapter of ``vlp_lib.papers`` against this book's stored runs at ``scale``,
    one line each (``SCORECARD_COLUMNS`` and ``BOOK_COLUMNS``): the paper's value, ours (``book_value``: mean
    per-seed difference), the 95% t ``interval`` on ``df`` degrees of freedom, the ``verdict`` (``VERDICT_RULE``,
    or a chapter's own rule; "not run" when the runs are not in the results store: execute the chapter's notebooks
    first) and its ``p``, the verdict under each scale of the paper's effect (``effect_scales``), the minimum
    detectable effect at the seeds run (``mde``), the seeds a new experiment would plan (``seeds_needed``), the
    Benjamini-Hochberg ``q`` across the book and the verdict at a 5% false discovery rate (``verdict_fdr``).
    Trains nothing."""
    lines = [line for chapter in all_chapters() for line in chapter.claims(scale)]
    return with_fdr(pd.DataFrame(lines, columns=SCORECARD_COLUMNS))


def verdict_counts(card: pd.DataFrame, column: str = "verdict") -> pd.DataFrame:
    """Claims per paper (rows, book order) and verdict (columns) of ``card``'s ``column``, with the share of tested
    claims decided (``DECIDED``; tested: neither "not run", "not tested" nor a timing claim's rule)."""
    papers = list(dict.fromkeys(card["paper"]))
    table = pd.crosstab(card["paper"], card[column]).reindex(papers).fillna(0).astype(int)
    tested = tested_claims(card)
    decided = tested[column].isin(DECIDED).groupby(tested["paper"]).agg(["sum", "count"]).reindex(papers)
    table["decided"] = [f"{int(s)} of {int(c)}" if c == c else "" for s, c in zip(decided["sum"], decided["count"])]
    return table


TIMING_METRICS = ("kmeans_share", "epoch_overhead")  # claims judged by a factor rule, not a test


def tested_claims(card: pd.DataFrame) -> pd.DataFrame:
    """The lines of ``card`` whose claim was tested: run, and not a timing claim (judged by a factor rule)."""
    return card[~card["verdict"].isin(["not run", "not reproduced"]) & ~card["metric"].isin(TIMING_METRICS)]
