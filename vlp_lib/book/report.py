"""Tables for the book: metrics over seeds as mean ± std, beside chance and the papers' numbers, and the verdict
rule for claims (``VERDICT_RULE``, ``paired_test``): 95% t intervals of per-seed paired differences, with power."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from vlp_lib.book import stats
from vlp_lib.papers import chapters as all_chapters
from vlp_lib.paths import results_dir


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


GAIN_COLUMN = "gain over untrained (pp, 95% interval)"


def metrics_table(
    records: Sequence[dict],
    keys: Sequence[str],
    chance: dict[str, float] | None = None,
    labels: dict[str, str] | None = None,
    untrained: Sequence[dict] | None = None,
) -> pd.DataFrame:
    """One row per metric: mean, std, n seeds, "mean ± std" in percent, chance where known and, with ``untrained``
    (the same networks before any step, one record per seed), their value and the mean per-seed gain over them in
    pp with its 95% t interval (``GAIN_COLUMN``)."""
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
        if untrained is not None and all(key in r["metrics"] for r in untrained):
            row["untrained (%)"] = fmt(*mean_std(seed_values(untrained, key)))
            row[GAIN_COLUMN] = gain_text(records, untrained, key)
        if chance is not None:
            row["chance (%)"] = f"{100 * chance[key]:.1f}" if key in chance else ""
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


def gain_text(records: Sequence[dict], untrained: Sequence[dict], key: str, percent: bool = True) -> str:
    """The mean per-seed gain of ``records`` over their untrained networks on ``key``, with its 95% t interval (the mean
    alone for one seed): in pp for a fraction shown in percent ("+35.7 [+30.1, +41.3]"), else raw to three places for
    a score such as ARI ("+0.003 [-0.004, +0.010]")."""
    mean, h = gain_interval(records, untrained, key)

    def show(x: float) -> str:
        return f"{round(100 * x, 1) + 0.0:+.1f}" if percent else f"{round(x, 3) + 0.0:+.3f}"  # no "-0.0"

    return show(mean) + (f" [{show(mean - h)}, {show(mean + h)}]" if np.isfinite(h) else "")


def gain_interval(records: Sequence[dict], untrained: Sequence[dict], key: str) -> tuple[float, float]:
    """The mean per-seed gain of ``records`` over their untrained networks on ``key`` and the half-width of its 95% t
    interval (infinite for one seed)."""
    gain = record_differences(records, untrained, key)
    mean, std = mean_std(gain)
    return mean, half_width(std, len(gain))


def learning_reading(records: Sequence[dict], untrained: Sequence[dict], keys: Sequence[str]) -> str:
    """Which of ``keys`` training has been shown to raise over the untrained networks (``gain_text``'s 95% t interval
    above zero), which it has not (the interval holds zero) and which it lowered (the interval below zero), as one
    sentence read from the same numbers as the table; metrics the untrained records lack are left out, and metrics
    at 100% in every run, trained or not, are counted apart (they cannot move)."""
    groups: dict[str, list[str]] = {"above": [], "holds": [], "below": []}
    fixed = 0
    for key in keys:
        if not all(key in r["metrics"] for r in untrained) or not all(key in r["metrics"] for r in records):
            continue
        if all(r["metrics"][key] >= 1.0 for r in [*records, *untrained]):
            fixed += 1  # at 100% by construction (a top-5 accuracy over at most five classes): nothing to gain
            continue
        mean, h = gain_interval(records, untrained, key)
        if not np.isfinite(h):
            return f"With {len(records)} seed, no gain has an interval: each is one seed's difference."
        groups["above" if mean - h > 0 else "below" if mean + h < 0 else "holds"].append(f"`{key}`")
    said = f"Training raised {len(groups['above'])} of the {sum(map(len, groups.values()))} metrics above the untrained network"
    if groups["holds"]:
        said += f"; the interval holds zero for {', '.join(groups['holds'])}"
    if groups["below"]:
        said += f"; training lowered {', '.join(groups['below'])} below the random features"
    if fixed:
        said += f" ({fixed} at 100% by construction, such as a top-5 accuracy over at most five classes, left out)"
    return said + "."


def confusion_reading(labels: Sequence[int], predicted: Sequence[int], classnames: Sequence[str], top: int = 4) -> str:
    """The confusion matrix of ``predicted`` against the true ``labels`` read in one sentence: its ``top`` largest
    off-diagonal cells (the share of the true class's images given to another class; and any cell tied with the last
    of them at whole per cents) and the classes whose recall is below twice chance (1 / the number of classes)."""
    from sklearn.metrics import confusion_matrix  # here, as in ``plots``: importing the report stays light

    n = len(classnames)
    shares = confusion_matrix(labels, predicted, labels=list(range(n)), normalize="true")  # a class without images: 0
    off = sorted(
        ((shares[t, p], t, p) for t in range(n) for p in range(n) if t != p and shares[t, p] > 0), reverse=True
    )
    largest = off[:top]
    if largest:  # cells tied with the last one shown, at the shown precision, are shown too
        largest += [c for c in off[top:] if round(100 * c[0]) == round(100 * largest[-1][0])]
    said = "Its largest confusions: " + "; ".join(
        f"{classnames[t]} read as {classnames[p]} ({100 * v:.0f}%)" for v, t, p in largest
    )
    weak = [(shares[c, c], c) for c in range(n) if shares[c, c] < 2 / n]
    if weak:
        said += f". Recall below twice chance ({200 / n:.0f}%): " + ", ".join(
            f"{classnames[c]} {100 * v:.0f}%" for v, c in sorted(weak)
        )
    return said + "."


def gains_table(
    results: Mapping[Any, Sequence[dict]],
    untrained: Mapping[Any, Sequence[dict]],
    metrics: Mapping[str, str],
    label: Callable[[Any], str] = str,
    percent: bool = True,
) -> pd.DataFrame:
    """One line per row of ``untrained`` (``{row: the untrained network's record per seed}``): each metric of
    ``metrics`` (``{key: column}``) as the row's trained value ("mean ± std") and its gain over the untrained network
    (``gain_text``); ``label(row)`` names the line. Fractions are shown in percent ("acc (%)", "acc gain (pp, 95%
    interval)"); with ``percent=False`` a score such as ARI is shown raw ("ARI", "ARI gain (95% interval)"). A metric
    a row's runs do not evaluate is left empty."""
    value_column, gain_column = (
        ("{} (%)", "{} gain (pp, 95% interval)") if percent else ("{}", "{} gain (95% interval)")
    )
    lines = []
    for row, before in untrained.items():
        line: dict[str, Any] = {"model": label(row)}
        for key, name in metrics.items():
            value, gain = value_column.format(name), gain_column.format(name)
            if not all(key in r["metrics"] for r in [*results[row], *before]):
                line[value] = line[gain] = ""
                continue
            line[value] = fmt(*mean_std(seed_values(results[row], key)), percent=percent)
            line[gain] = gain_text(results[row], before, key, percent=percent)
        lines.append(line)
    return pd.DataFrame(lines).set_index("model")


ALPHA = stats.ALPHA  # two-sided: 95% intervals
POWER = stats.POWER  # of the minimum detectable effect and of planned seeds
FDR = 0.05  # Benjamini-Hochberg level across the book's tested claims
MAX_SEEDS = 1_000  # "seeds needed" beyond this reads ">1000"
SEED_BUDGET = 10  # a claim planned to need more seeds than this is marked "needs about N seeds"
# The words of the verdict rule, in the order a table shows them (the paper's direction first, the opposite last).
REPRODUCED = "reproduced"
SMALLER_REPRODUCED = "reproduced, smaller than claimed"
LARGER = "larger than claimed"
SMALLER = "smaller than claimed"
NO_EFFECT = "no effect"
OPPOSITE_WITHIN = "opposite, within the margin"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
# the mirror of DIRECTION_ONLY: below 0, the mean beyond the margin, the interval not (or at 5% FDR only the
# direction stands): "opposite" would claim a size the seeds do not show
OPPOSITE_SIZE = "the opposite direction, size undecided"
# at 5% FDR, a size word whose size does not stand while its direction does: the paper's direction, size undecided
DIRECTION_ONLY = "the paper's direction, size undecided"
# words of a tested claim that decide it (each with a p-value, each counted in its own column, never pooled together)
DECIDED = (
    REPRODUCED,
    SMALLER_REPRODUCED,
    LARGER,
    DIRECTION_ONLY,
    SMALLER,
    NO_EFFECT,
    OPPOSITE_WITHIN,
    OPPOSITE_SIZE,
    OPPOSITE,
)
VERDICTS = (*DECIDED[:6], INCONCLUSIVE, *DECIDED[6:])
# the paper's direction at a size that can be the paper's, or smaller: the claim's direction holds
HOLDS = (REPRODUCED, SMALLER_REPRODUCED, LARGER, DIRECTION_ONLY)
# significantly below 0, whatever the size: the claim's direction is reversed
AGAINST = (OPPOSITE_WITHIN, OPPOSITE_SIZE, OPPOSITE)
# cost claims (seconds, shares of time, overheads): judged as costs against the paper's number (COST_RULE), no test
CHEAPER, AS_CLAIMED, DEARER = "cheaper than claimed", "as claimed", "dearer than claimed"
COST_VERDICTS = (CHEAPER, AS_CLAIMED, DEARER)
COST_FACTOR = 1.5  # a cost within a factor of 1.5 of the paper's reads "as claimed" (COST_RULE)
NOT_RUN = "not run"
# a claim whose evaluations are not replicates (one teacher, subsamples of one corpus): its count is shown, no test
DESCRIBED = "described, not tested"
# A claim whose reference has not learned compares models that have not learned: no verdict on the idea (LEARNED_RULE)
FLOOR = "floor: the reference has not learned"
LEARNED_LEVEL = 0.05
# An equal-seconds claim whose runs did not take equal seconds compares budgets, not ideas (EQUAL_SECONDS_RULE)
UNEQUAL_SECONDS = "not judged: unequal seconds"
SECONDS_TOLERANCE = 0.05
EQUAL_SECONDS_RULE = (
    "An equal-seconds claim is judged only when its runs took equal seconds: the mean training seconds of the claimed "
    "runs over the reference's (the ratio the claim's value states) within ±5%. Outside it the claim reads 'not "
    "judged: unequal seconds' whatever its difference, and leaves the false-discovery-rate family: its two runs "
    "differ in their budget as well as in the idea. Budgets are whole episodes (a tenth of the equal-samples amount), "
    "so a variant whose cost per step falls between two counts cannot land within ±5%, and the page says which."
)


def equal_seconds(ratio: float) -> bool:
    """Whether runs that took ``ratio`` times their reference's seconds took equal seconds (``EQUAL_SECONDS_RULE``)."""
    return abs(ratio - 1.0) <= SECONDS_TOLERANCE


LEARNED_RULE = (
    "Before a comparison is judged, its reference must have learned: per seed, the reference's metric minus the same "
    "network's before any training step (same architecture, initialisation seed and evaluation), and a one-sided "
    "paired t test over the seeds. The reference has learned when p < 0.05 (the reference_learned column gives "
    "the mean gain and p; for a claim with several references, the one that learned least). A claim whose reference "
    "has not learned reads 'floor: the reference has not learned', whatever its difference, and leaves the "
    "false-discovery-rate family: it tests nothing about the idea."
)
# Practical margins, stated before any verdict: a difference within +-1 pp of a fraction shown in percent is below
# the smallest gain any of the five papers reports as a headline improvement in its main tables (1 pp), and at our
# test sets (2,000 images per task) about one standard error of a single accuracy at 25% (0.97 pp); a claim whose
# paper effect is itself inside the margin cannot be shown "no effect" (our precision cannot tell its size from zero).
# A claim on another scale (losses, rank correlations) states its own margin; ARI and AMI take the same 0.01.
NO_EFFECT_MARGIN = 0.01

VERDICT_RULE = (
    "Per seed, the difference between the claimed-better setting and its reference (same seed, so the seed's "
    "common luck cancels); over n seeds its mean with a two-sided 95% confidence interval from the t distribution. "
    "Its spread is pooled over the rows of the claim's notebook that share its seeds and metric (see Pooling) where "
    "their spreads are alike, else the claim's own: mean ± t(0.975, df) sd / sqrt(n) with df (R - 1)(n - 1) pooled "
    "over R rows, n - 1 otherwise. Every claim has a practical margin m in its metric's units: ±1 pp for "
    "accuracies, recalls and mAP (and 0.01 for ARI and AMI), or the claim's own where it states one. Direction and "
    "size are two questions, and each word answers both. "
    "Reproduced: the interval lies entirely above 0 (the paper's direction) and can hold the paper's effect. "
    "Reproduced, smaller than claimed: above 0, but entirely below the paper's effect. "
    "Larger than claimed: entirely above the paper's effect; an effect many times the paper's is not its "
    "reproduction, it says our setting differs from the paper's. "
    "Opposite: the interval lies entirely below -m (beyond the margin, the mirror of no effect's inside it); "
    "'the opposite direction, size undecided' where it lies below 0 and its mean beyond -m but the interval "
    "reaches inside the margin. "
    "No effect: the interval lies inside ±m (two one-sided tests), where the paper's effect is not itself inside "
    "±m; a significant difference smaller than the margin is 'no effect' when the two one-sided tests decide it, "
    "and otherwise 'opposite, within the margin' (below 0, mean inside the margin: counted apart from the "
    "opposites). Smaller than claimed: the interval includes 0 but excludes the paper's effect. Inconclusive: "
    "otherwise, and always with fewer than 2 seeds. The paper's effect is its percentage points taken 1:1 on our "
    "metric, an assumption: the effect-scales column gives the verdict with the effect carried by log-odds and by "
    "the share of above-chance headroom too. Each verdict has a p-value on the two-sided scale (twice the one-sided "
    "p of the test that decides it; the larger of two when two tests decide it): a verdict is reached exactly when "
    "p < 0.05, and it stands in the book when its Benjamini-Hochberg q across the book is at most 0.05 (the FDR "
    "word, the one every page shows). Beside it, the power: the minimum detectable effect at the seeds run (exact, "
    "noncentral t: 3.26 sd at n = 3) and the seeds a new experiment on fresh seeds would plan for 80% power at the "
    "paper's effect (else at the margin), at the spread measured; "
    f"'>{MAX_SEEDS}' beyond {MAX_SEEDS}, and claims planned above {SEED_BUDGET} seeds are marked as needing them. "
    "These counts plan a new experiment; they never top up this one."
)
COST_RULE = (
    "Cost claims (a share of time, an overhead in time per epoch) are judged as costs, against the paper's number "
    f"c: as claimed when the book's cost lies within a factor of {COST_FACTOR:g} of it (from c / {COST_FACTOR:g} to "
    f"{COST_FACTOR:g} c), cheaper than claimed below, dearer than claimed above (a cost twice the claimed one is the "
    "claim failing). A cost is measured once over the seeds' runs on the machine that made them: it has no interval "
    "and stays outside the false discovery rate family."
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
    "Benjamini-Hochberg q-values over the p-values of every tested claim in the book (cost claims and claims not "
    "run, claims at the floor and claims described, not tested, excluded); a verdict stands at a 5% false "
    "discovery rate when its q <= 0.05, else it reads inconclusive. "
    "A word that states a size beside the direction (reproduced but smaller than claimed, larger than claimed) "
    "needs both tests, and so does 'opposite' (below 0 and beyond the margin); where the size does not stand, the "
    "direction alone is put to the same procedure (its p in place of the claim's) and reads 'the paper's "
    "direction, size undecided' (or 'the opposite direction, size undecided') when it stands. The verdict at 5% FDR is the word every page, "
    "the README and the introduction state; the word of the claim judged alone may stand beside it, named as such."
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
    p_direction: float = float("nan")  # a size word's (larger / smaller than claimed) p of its direction alone

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
    """Judge per-seed differences (claimed-better minus reference, paired by seed) by ``VERDICT_RULE`` with the
    practical ``margin`` (``None``: none stated, so no "no effect" and every significant reverse is "opposite"):
    "reproduced", "reproduced, smaller than claimed" / "larger than claimed" (entirely below / above
    ``paper_effect``, a fraction on our metric), "opposite" (entirely below ``-margin``), "the opposite direction,
    size undecided" (below 0, mean beyond ``-margin``, the interval not), "opposite, within the margin" (below 0, mean inside it, not shown inside it), "no effect" (inside ``±margin``, when the paper's
    effect is not inside it), "smaller than claimed" (includes 0, excludes ``paper_effect``), "inconclusive"
    (otherwise, and with fewer than 2 seeds, or a difference that is not finite). ``pooled``: (standard deviation, degrees of freedom) of the differences from
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
    no_effect_possible = margin is not None and (pe is None or abs(pe) >= margin)
    inside = float("nan")
    if margin is not None:
        inside = max(base.one_sided(-margin, above=True), base.one_sided(margin, above=False))
    decided_inside = no_effect_possible and -margin < low and high < margin  # type: ignore[operator]
    if low > 0:
        if pe is not None and pe > 0 and high < pe:
            v, p = SMALLER_REPRODUCED, max(up, base.one_sided(pe, above=False))
        elif pe is not None and pe > 0 and low > pe:
            v, p = LARGER, max(up, base.one_sided(pe, above=True))
        else:
            v, p = REPRODUCED, up
    elif high < 0:
        if margin is None:
            v, p = OPPOSITE, down
        elif high < -margin:  # the size too: the interval clears the margin (the test against -margin decides)
            v, p = OPPOSITE, base.one_sided(-margin, above=False)
        elif mean <= -margin:
            v, p = OPPOSITE_SIZE, down
        elif decided_inside:
            v, p = NO_EFFECT, inside
        else:
            v, p = OPPOSITE_WITHIN, down
    elif decided_inside:
        v, p = NO_EFFECT, inside
    elif pe is not None and not low <= pe <= high:
        v, p = SMALLER, base.one_sided(pe, above=pe < 0)
    else:
        v, p = INCONCLUSIVE, min(up, down)
    target = pe if pe is not None else margin
    return replace(
        base,
        verdict=v,
        p=min(1.0, 2 * p),
        p_direction=_direction_p(v, margin, up, down),
        mde=stats.minimum_detectable_effect(std, n, df, alpha, power),
        seeds_needed=stats.planned_seeds(std, target, rows=base.rows) if target is not None else float("nan"),
    )


def _direction_p(verdict: str, margin: float | None, up: float, down: float) -> float:
    """The two-sided p of a size word's direction alone (``with_fdr`` falls back to it): of "larger than claimed"
    and "reproduced, smaller than claimed" against 0 above, of "opposite" beyond a margin against 0 below."""
    if verdict in (LARGER, SMALLER_REPRODUCED):
        return min(1.0, 2 * up)
    if verdict == OPPOSITE and margin is not None:
        return min(1.0, 2 * down)
    return float("nan")


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
    "the comparison rule (reproduced when the paper's best beats it, opposite when the end point beats the paper's "
    "best beyond the margin, no effect when the two lie within the margin: a flat sweep); "
    "the grid point with the best seed-mean is shown and decides nothing (on a flat curve any point is best 1 time "
    "in len(grid))."
)
EVERY_RULE = (
    "'Every setting beats the reference' claims (and 'X is the best value': X beats every other): reproduced when "
    "every comparison holds the paper's direction by the comparison rule (an intersection of tests needs no "
    "correction; p is the largest), opposite when any comparison is below 0 after Bonferroni over the k comparisons "
    "(the same as Holm's first step, which is all 'any' needs): 'opposite' when that comparison lies below -m by "
    "the same correction, 'the opposite direction, size undecided' when only its mean does, 'opposite, within the "
    "margin' when its mean lies inside it; inconclusive otherwise; the line shows the comparison that decides (the "
    "weakest when reproduced or inconclusive, the opposite one when opposite) with that comparison's own 95% "
    "interval, before the correction: the word is decided by the corrected test, so it can be weaker than that "
    "interval alone would read. The count before it (\"4 of 5 in the paper's direction (1 reproduced + 3 larger than "
    "claimed)\") says how many comparisons, each judged alone, hold the paper's direction, and by which word."
)
BEST_OF_RULE = (
    "'The best of several settings beats the reference' claims: each setting's difference from the reference, "
    "Bonferroni over the k settings (the best is chosen on the same data, so a plain test of it would be too "
    "lenient): reproduced when the smallest p times k is below 0.05, opposite when every setting is opposite "
    "('the opposite direction, size undecided' when every setting is below 0 and some not beyond the margin)."
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


def every_test(tests: Sequence[PairedTest], margin: float | None = None) -> tuple[str, float, int]:
    """``EVERY_RULE`` over the comparisons' tests: (verdict, p, index of the comparison that decides); an opposite
    comparison whose mean lies inside the practical ``margin`` gives "opposite, within the margin"."""
    k = len(tests)
    up = [2 * t.one_sided(0.0, above=True) for t in tests]
    down = [min(1.0, 2 * k * t.one_sided(0.0, above=False)) for t in tests]
    weakest = int(np.nanargmax(up)) if np.isfinite(up).any() else 0
    if all(t.verdict in HOLDS for t in tests):
        return REPRODUCED, min(1.0, max(up)), weakest
    if np.isfinite(down).any() and min(down) < ALPHA:
        worst = int(np.nanargmin(down))
        if margin is None:
            return OPPOSITE, min(down), worst
        t = tests[worst]
        beyond = min(1.0, 2 * k * t.one_sided(-margin, above=False))  # its size too, by the same correction
        if beyond < ALPHA:
            return OPPOSITE, beyond, worst
        return (OPPOSITE_SIZE if t.mean <= -margin else OPPOSITE_WITHIN), min(down), worst
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
    if all(t.verdict == OPPOSITE for t in tests):
        ps = [t.p for t in tests]
        return OPPOSITE, max(ps), int(np.nanargmax(ps))
    if all(t.verdict in (OPPOSITE, OPPOSITE_SIZE) for t in tests):
        return OPPOSITE_SIZE, min(1.0, max(down)), int(np.nanargmax(down))
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
    if t.verdict in HOLDS:
        return "higher"
    return "lower" if t.verdict in AGAINST else "within noise"


def verdict(differences: Sequence[float] | np.ndarray, paper_effect: float | None = None) -> str:
    """``paired_test(differences, paper_effect).verdict`` for the per-seed differences of a claim ("the
    claimed-better setting minus its reference")."""
    return paired_test(differences, paper_effect).verdict


def format_test(test: PairedTest | None, percent: bool = True) -> dict[str, Any]:
    """The scorecard's columns of a test: ``book_value`` (mean difference), ``interval``, ``mde`` and
    ``seeds_needed`` (text; in percentage points for fractions shown in percent, raw otherwise), ``df`` (the
    interval's degrees of freedom, "12 pooled" when pooled) and ``p``."""
    if test is None or test.n == 0:
        return {
            "book_value": "",
            "interval": "",
            "mde": "",
            "seeds_needed": "",
            "df": "",
            "p": float("nan"),
            "p_direction": float("nan"),
        }

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
        "p_direction": test.p_direction,
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
    "p_direction",
    "effect_scales",
    "eval_noise",
    "mde",
    "seeds_needed",
    "seeds",
    "differs_in",
    "reference_learned",
    "verdict_longer",
]
BOOK_COLUMNS = ["q", "verdict_fdr", "primary"]  # added by ``scorecard``: across the book, and the primary claims
CLAIMS_VIEW = {  # column -> header of a page's table of its claims (``claims_view``)
    "claim": "claim (source)",
    "paper_value": "paper",
    "book_value": "book (mean Δ per seed)",
    "interval": "95% interval (df)",
    "verdict_fdr": "verdict at 5% FDR",
    "p": "p / q",
    "mde": "detectable",
    "seeds_needed": "seeds planned",
}


def interval_text(interval: str, df: str) -> str:
    """A claim's ``interval`` with its degrees of freedom ``df`` (``format_test``'s): "[-1.64, +2.14] pp (df 14,
    pooled)"; the interval alone where it has no df, nothing where it has no interval."""
    return f"{interval} (df {df.replace(' pooled', ', pooled')})" if interval and df else interval


def verdict_text(verdict_fdr: str, verdict: str) -> str:
    """The word a page states: the verdict at 5% FDR, with the claim's word judged alone beside it, named as such,
    where the two differ ("inconclusive (alone: reproduced)")."""
    return verdict_fdr if verdict_fdr == verdict else f"{verdict_fdr} (alone: {verdict})"


def p_q_text(p: float, q: float) -> str:
    """A claim's p beside its q across the book, to four places: "0.0235 / 0.0612"; p alone where it has no q, "—"
    where it has no test (not run, or a cost claim)."""

    def number(x: float) -> str:
        return f"{x:.4f}" if np.isfinite(x) else "—"

    return number(p) if not np.isfinite(q) else f"{number(p)} / {number(q)}"


def claims_view(claims: pd.DataFrame, paper: bool = True) -> pd.DataFrame:
    """A page's table of its judged claims (lines with ``SCORECARD_COLUMNS`` and ``BOOK_COLUMNS``, indexed by id:
    ``book_fdr``'s) in fewer, wider columns, so that it fits the page: the claim with its source, the interval with
    its degrees of freedom (``interval_text``), the verdict at 5% FDR with the word judged alone where it differs
    (``verdict_text``), p beside q ("—" where a claim has no test: not run, or a cost claim), the headers of
    ``CLAIMS_VIEW``. ``paper=False`` for the book's own claims (the head to head, the real drawings): no paper
    states them, so the claim goes without its source and the table without the paper's column (the page says
    why). ``ValueError`` for lines not judged across the book: a page states the book's word, never a second one."""
    if "verdict_fdr" not in claims:
        raise ValueError("claims_view shows the verdict at 5% FDR across the book: judge the lines with book_fdr first")

    p = pd.to_numeric(claims["p"], errors="coerce")
    q = pd.to_numeric(claims["q"], errors="coerce")
    view = claims.assign(
        claim=[f"{claim} ({source})" if paper else claim for claim, source in zip(claims["claim"], claims["source"])],
        interval=[interval_text(str(i), str(d)) for i, d in zip(claims["interval"], claims["df"])],
        verdict_fdr=[verdict_text(f, v) for f, v in zip(claims["verdict_fdr"], claims["verdict"])],
        p=[p_q_text(a, b) for a, b in zip(p, q)],
    )
    columns = {k: v for k, v in CLAIMS_VIEW.items() if paper or k != "paper_value"}
    if not paper:
        columns["claim"] = "claim"
    return view[list(columns)].rename(columns=columns)


def split_view(view: pd.DataFrame, last: str = "verdict at 5% FDR") -> tuple[pd.DataFrame, pd.DataFrame]:
    """A page's claims table (``claims_view``'s, or a chapter's own with the same headers, indexed by claim id) as two
    tables of at most six columns, so that each fits the page: the claim, the paper's and the book's numbers and the
    verdict (up to the column ``last``), then the power columns (p / q, the detectable effect, the seeds planned)."""
    cut = list(view.columns).index(last) + 1
    return view.iloc[:, :cut], view.iloc[:, cut:]


def stated(line: Mapping[str, Any]) -> str:
    """A claim's scorecard value with its 95% interval where the line has one ("+0.21 pp, 95% interval [-1.22, +1.64]
    pp"): what a page's sentence states of a claim, the numbers of its claims table and of the scorecard."""
    value, interval = str(line["book_value"]), str(line.get("interval", "") or "")
    return f"{value}, 95% interval {interval}" if interval and interval != "nan" else value


def verdict_line(claims: pd.DataFrame) -> str:
    """One line of a page's verdicts at 5% FDR (``book_fdr``'s lines): how many of its claims read each word, in the
    order of the verdict rule ("9 claims at 5% FDR: 2 reproduced; 1 opposite; 3 at the floor (...)"), the words
    absent left out."""
    counts = claims["verdict_fdr"].value_counts()
    order = [*VERDICTS, *COST_VERDICTS, FLOOR, UNEQUAL_SECONDS, DESCRIBED, NOT_RUN]
    words = [w for w in order if w in counts.index] + [w for w in counts.index if w not in order]
    shown = {
        FLOOR: "at the floor (their reference has not learned)",
        UNEQUAL_SECONDS: "not judged (their runs' seconds are not equal)",
    }
    return f"{len(claims)} claims at 5% FDR: " + "; ".join(f"{int(counts[w])} {shown.get(w, w)}" for w in words) + "."


def with_fdr(card: pd.DataFrame, level: float = FDR) -> pd.DataFrame:
    """``card`` with ``BOOK_COLUMNS`` (``FDR_RULE``): Benjamini-Hochberg q-values over the claims with a finite
    p-value, and each verdict at a ``level`` false discovery rate (a decided verdict whose q exceeds ``level``
    reads "inconclusive", or ``DIRECTION_ONLY`` / ``OPPOSITE_SIZE`` where it states a size and its direction alone
    stands; verdicts without
    a p-value, cost claims and claims not run, are kept)."""
    card = card.copy()
    p = pd.to_numeric(card["p"], errors="coerce").to_numpy(dtype=float)
    q = stats.bh_qvalues(p)
    card["q"] = q
    verdicts = card["verdict"].to_numpy(dtype=object)
    demoted = np.isfinite(q) & (q > level) & card["verdict"].isin(DECIDED).to_numpy()
    fdr = np.where(demoted, INCONCLUSIVE, verdicts)
    if "p_direction" in card:
        direction = pd.to_numeric(card["p_direction"], errors="coerce").to_numpy(dtype=float)
        sized = np.isin(verdicts, [LARGER, SMALLER_REPRODUCED, OPPOSITE])
        second = demoted & sized & np.isfinite(direction)
        if second.any():
            q_direction = stats.bh_qvalues(np.where(second, direction, p))
            fallback = np.where(verdicts == OPPOSITE, OPPOSITE_SIZE, DIRECTION_ONLY)
            fdr = np.where(second & (q_direction <= level), fallback, fdr)
    card["verdict_fdr"] = fdr
    return card


def scorecard(scale: str = "laptop") -> pd.DataFrame:
    """Every headline claim of every chapter of ``vlp_lib.papers`` against this book's stored runs at ``scale``,
    one line each (``SCORECARD_COLUMNS`` and ``BOOK_COLUMNS``), each chapter's primary claim first: the paper's
    value, ours (``book_value``: mean per-seed difference), the 95% t ``interval`` on ``df`` degrees of freedom,
    the ``verdict`` (``VERDICT_RULE``, or a chapter's own rule; "not run" when the runs are not in the results
    store: execute the chapter's notebooks first) and its ``p``, the verdict under each scale of the paper's effect
    (``effect_scales``), the minimum detectable effect at the seeds run (``mde``), the seeds a new experiment would
    plan (``seeds_needed``), the Benjamini-Hochberg ``q`` across the book, the verdict at a 5% false discovery rate
    (``verdict_fdr``: the word the book states) and whether the claim is its chapter's ``primary`` one. Trains
    nothing."""
    lines = []
    for chapter in all_chapters():
        primary = chapter.primary()
        judged = [{**line, "primary": line["id"] == primary} for line in chapter.claims(scale)]
        if primary is not None and primary not in {line["id"] for line in judged}:
            raise ValueError(f"{chapter.name}: its primary claim {primary!r} is not among its claims")
        lines += sorted(judged, key=lambda line: not line["primary"])  # stable: the others keep their order
    card = pd.DataFrame(lines, columns=[*SCORECARD_COLUMNS, "primary"])
    return with_fdr(card)[[*SCORECARD_COLUMNS, *BOOK_COLUMNS]]


def book_fdr(lines: pd.DataFrame, scale: str = "laptop") -> pd.DataFrame:
    """A page's judged claims ``lines`` (``SCORECARD_COLUMNS``, indexed by id) with ``BOOK_COLUMNS``: judged across
    the book (``FDR_RULE``), in the family of the scorecard at ``scale`` with these lines in place of the
    scorecard's lines of the same ids (the same numbers where the page reads the store the scorecard reads). So the
    word a page states is the book's word, never a second one."""
    card = scorecard_lines(scale)
    lines = lines.drop(columns=[c for c in BOOK_COLUMNS if c in lines])
    own = lines.rename_axis("id").reset_index()
    own = own.assign(primary=own["id"].isin(primary_ids()))
    family = pd.concat([card[~card["id"].isin(set(own["id"]))], own]).reindex(columns=[*SCORECARD_COLUMNS, "primary"])
    judged = with_fdr(family).set_index("id")
    return lines.join(judged[BOOK_COLUMNS])


def primary_ids() -> set[str]:
    """The ids of every chapter's primary claim."""
    return {p for chapter in all_chapters() if (p := chapter.primary()) is not None}


_SCORECARD_LINES: dict[tuple[str, tuple[int, float]], pd.DataFrame] = {}


def _store_state() -> tuple[int, float]:
    """How many records the results store holds and when the newest was written: a scorecard computed on one state
    holds until a run is stored."""
    times = [path.stat().st_mtime for path in results_dir().rglob("*.json")]
    return len(times), max(times, default=0.0)


def scorecard_lines(scale: str = "laptop") -> pd.DataFrame:
    """``scorecard(scale)``, computed again only when the results store has changed since (``_store_state``)."""
    key = (scale, _store_state())
    if key not in _SCORECARD_LINES:
        _SCORECARD_LINES.clear()
        _SCORECARD_LINES[key] = scorecard(scale)
    return _SCORECARD_LINES[key]


def verdict_counts(card: pd.DataFrame, column: str = "verdict") -> pd.DataFrame:
    """Claims per paper (rows, book order) and verdict (columns) of ``card``'s ``column``, with the share of tested
    claims decided (``DECIDED``; tested: neither "not run", "not tested" nor a timing claim's rule)."""
    papers = list(dict.fromkeys(card["paper"]))
    table = pd.crosstab(card["paper"], card[column]).reindex(papers).fillna(0).astype(int)
    tested = tested_claims(card)
    decided = tested[column].isin(DECIDED).groupby(tested["paper"]).agg(["sum", "count"]).reindex(papers)
    table["decided"] = [f"{int(s)} of {int(c)}" if c == c else "" for s, c in zip(decided["sum"], decided["count"])]
    return table


TIMING_METRICS = ("kmeans_share", "epoch_overhead")  # cost claims: judged by COST_RULE, not a test


def tested_claims(card: pd.DataFrame) -> pd.DataFrame:
    """The lines of ``card`` whose claim was tested: run, on a reference that has learned (not ``FLOOR``), at equal
    seconds where it says so (not ``UNEQUAL_SECONDS``), with replicates to test (not ``DESCRIBED``), and not a cost
    claim (judged by ``COST_RULE``)."""
    untested = card["verdict"].isin([NOT_RUN, FLOOR, UNEQUAL_SECONDS, DESCRIBED, *COST_VERDICTS]) | card["metric"].isin(
        TIMING_METRICS
    )
    return card[~untested]
