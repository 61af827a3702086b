"""Tables for the book: metrics over seeds as mean ± std, beside chance and the papers' numbers."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd


def seed_values(records: Sequence[dict], key: str) -> np.ndarray:
    """``key`` of every record's metrics (one per seed)."""
    return np.array([r["metrics"][key] for r in records], dtype=float)


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value)."""
    v = np.asarray(list(values), dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def fmt(mean: float, std: float, percent: bool = True) -> str:
    """"12.3 ± 0.4" for fractions shown in percent, "0.123 ± 0.004" otherwise."""
    return f"{100 * mean:.1f} ± {100 * std:.1f}" if percent else f"{mean:.3f} ± {std:.3f}"


def metrics_table(records: Sequence[dict], keys: Sequence[str], chance: dict[str, float] | None = None,
                  labels: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per metric: mean, std, n seeds, "mean ± std" in percent, and chance where known."""
    rows = []
    for key in keys:
        m, s = mean_std(seed_values(records, key))
        row = {"metric": (labels or {}).get(key, key), "mean": m, "std": s, "seeds": len(records),
               "this book (%)": fmt(m, s)}
        if chance is not None:
            row["chance (%)"] = f"{100 * chance[key]:.1f}" if key in chance else ""
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


VERDICT_RULE = (
    "Per seed, the difference between the claimed-better setting and its reference (same seed, so the seed's "
    "common luck cancels); mean ± std over seeds, standard error se = std / sqrt(seeds). Reproduced: "
    "mean - 2 se > 0. Not reproduced: mean + 2 se < 0 (the opposite holds). Inconclusive otherwise, and "
    "with fewer than 3 seeds."
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


def direction(differences: Sequence[float]) -> str:
    """"higher" / "lower" / "within noise" (or "too few seeds") for per-seed differences, by the rule of
    ``VERDICT_RULE``: the mean is more than two standard errors away from zero."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 3:
        return "too few seeds"
    mean, std = mean_std(d)
    se = std / np.sqrt(len(d))
    if mean - 2 * se > 0:
        return "higher"
    if mean + 2 * se < 0:
        return "lower"
    return "within noise"


def verdict(differences: Sequence[float]) -> str:
    """"reproduced" / "not reproduced" / "inconclusive" for the per-seed differences of a claim ("the
    claimed-better setting minus its reference"), by ``VERDICT_RULE``."""
    return {"higher": "reproduced", "lower": "not reproduced"}.get(direction(differences), "inconclusive")


def scorecard(scale: str = "laptop") -> pd.DataFrame:
    """Every headline claim of the book's papers against this book's stored runs at ``scale``: columns
    ``paper``, ``claim``, ``paper_value``, ``book_value``, ``verdict`` (reproduced / not reproduced /
    inconclusive by ``VERDICT_RULE`` and the rules in ``vlp_lib.protoclip_chapter``; "not run" when the
    runs are not in the results store: execute the chapter's notebooks first). Trains nothing."""
    from . import protoclip_chapter  # late: the chapter plans import this module

    return pd.DataFrame(protoclip_chapter.claims(scale),
                        columns=["paper", "claim", "paper_value", "book_value", "verdict"])


def paired_interval(differences: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided ``confidence`` interval of the mean of per-seed paired differences, from the t distribution
    with n - 1 degrees of freedom; ``(-inf, inf)`` with fewer than two seeds."""
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    if len(d) < 2:
        return float("-inf"), float("inf")
    half = stats.t.ppf(0.5 + confidence / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean() - half), float(d.mean() + half)
