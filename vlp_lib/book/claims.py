"""Claims as data, judged on stored runs: the one ``Claim`` type and the one ``judge`` of every chapter.

A claim names rows of its chapter (any hashable: a chapter's ``Row``) and a metric; ``judge`` turns it into one
scorecard line (``report.SCORECARD_COLUMNS``) from ``{row: [record per seed]}`` and never trains. Kinds:

- ``"direction"``: ``better`` beats ``reference`` (``report.VERDICT_RULE`` on the per-seed differences, against
  ``paper_effect``); with ``minus`` (a second pair of rows), the per-seed difference of the two gains,
  (better - reference) - (minus[0] - minus[1]);
- ``"interaction"``: the per-seed signed sum of ``terms`` (sign, row, metric) is above 0 (a difference of
  differences, e.g. "the gap is larger on IN-1K than on VOC"), same rule;
- ``"every"``: each of ``candidates`` beats ``reference`` or, with ``better`` set, ``better`` beats each of
  ``candidates`` (``EVERY_RULE``); the line shows the weakest comparison;
- ``"best_of"``: the best of ``candidates`` by seed-mean beats ``reference`` or, with ``better`` set (and no
  ``reference``), ``better`` beats the best of ``candidates`` ("is the best value"; VERDICT_RULE, no paper effect);
- ``"sweep"``: ``report.SWEEP_RULE`` over ``grid`` ((value, row) in sweep order) with ``paper_best`` and
  ``endpoint`` (grid values);
- ``"equivalence"``: ``better`` is within ``margin`` of ``reference`` (``report.EQUIVALENCE_RULE``; its seeds to
  decide by ``equivalence_seeds``);
- ``"noninferiority"``: ``better`` is not below ``reference`` by more than ``margin`` (``noninferiority_verdict``);
- ``"match"``: ``better`` matches ``reference`` in less time: non-inferiority with ``margin`` and fewer
  ``relative_epochs`` (``MATCH_RULE``);
- ``"timing"``: a measured share or overhead of ``better``'s time over ``reference`` (``metric``: a key of
  ``TIMING_MEASURES``) within a factor of 2 of ``paper_effect`` (``TIMING_RULE``);
- ``"correlation"``: Spearman's rho between ``better``'s per-class values ``keys`` and ``reference``'s, per seed:
  reproduced when rho > 0 in every seed, opposite when rho < 0 in every seed; with a ``control`` row,
  rho(reference) - rho(control) per seed by VERDICT_RULE;
- ``"every_draw"``: an ordering ``check`` that must hold in every evaluation of a record outside the rows (DIME-FM's
  MMD kernels and draws): ``judge``'s ``checks`` gives, per check, each evaluation's (holds, reverse holds);
- ``"not_run"``: planned, not run (``reason``).

``paper_effect`` is the paper's difference as a fraction on our metric (points / 100), where it gives one;
``percent=False`` shows a claim's values raw (losses, ARI, rank correlations).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vlp_lib.book.report import (
    SCORECARD_COLUMNS,
    PairedTest,
    equivalence_test,
    format_test,
    paired_differences,
    paired_test,
    per_seed,
    record_differences,
    seed_values,
    sweep_test,
)

KINDS = (
    "direction",
    "interaction",
    "every",
    "best_of",
    "sweep",
    "equivalence",
    "noninferiority",
    "match",
    "timing",
    "correlation",
    "every_draw",
    "not_run",
)
EVERY_RULE = (
    "'Every setting beats the reference' claims: reproduced when every per-setting comparison is "
    "reproduced (VERDICT_RULE), opposite when any is opposite, inconclusive otherwise; the line shows "
    "the comparison with the smallest mean difference."
)
TIMING_RULE = (
    "Timing claims: reproduced when the book's value is within a factor of 2 of the paper's, not "
    "reproduced otherwise (a measured share of time, no interval)."
)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper on a chapter's rows (see the module docstring for ``kind`` and the fields it reads)."""

    id: str
    text: str
    source: str
    kind: str
    metric: str
    paper_value: str
    paper_effect: float | None = None
    notebook: str = ""
    better: Hashable | None = None
    reference: Hashable | None = None
    minus: tuple[Hashable, Hashable] | None = None
    terms: tuple[tuple[int, Hashable, str], ...] = ()
    candidates: tuple[Hashable, ...] = ()
    grid: tuple[tuple[Any, Hashable], ...] = ()
    paper_best: Any = None
    endpoint: Any = None
    margin: float | None = None
    control: Hashable | None = None
    keys: tuple[str, ...] = ()
    check: str | None = None
    percent: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r} (claim {self.id})")

    def rows(self) -> list[Hashable]:
        """Every row the claim reads."""
        rows = [
            self.better,
            self.reference,
            self.control,
            *(self.minus or ()),
            *self.candidates,
            *(t[1] for t in self.terms),
            *(r for _, r in self.grid),
        ]
        return list(dict.fromkeys(r for r in rows if r is not None))


def interaction_differences(
    terms: Sequence[tuple[int, Hashable, str]], results: Mapping[Any, Sequence[dict]]
) -> np.ndarray:
    """Per seed (the seeds every term's row has, in order), the signed sum of ``terms`` (sign, row, metric)."""
    values = [(sign, per_seed(results[row], metric)) for sign, row, metric in terms]
    seeds = sorted(set.intersection(*(set(v) for _, v in values)))
    return np.array([sum(sign * v[s] for sign, v in values) for s in seeds], dtype=float)


def equivalence_seeds(mean: float, std: float, margin: float, max_seeds: int = 1_000) -> str:
    """Seeds that would decide an equivalence claim at this mean and spread: the smallest n >= 2 whose 95% t
    half-width is below ``margin - |mean|`` (inside) or ``|mean| - margin`` (outside); ">1000" beyond."""
    from scipy import stats

    target = abs(margin - abs(mean))
    if not (np.isfinite(mean) and np.isfinite(std)):
        return ""
    if std == 0:
        return "2"
    n = np.arange(2, max_seeds + 1)
    decided = stats.t.ppf(0.975, n - 1) * std / np.sqrt(n) < target
    return str(int(n[np.argmax(decided)])) if decided.any() else f">{max_seeds}"


def noninferiority_verdict(test: PairedTest, margin: float, faster: bool = True) -> str:
    """ "Not below by more than ``margin``" (and, for "match" claims, ``faster``): "opposite" when not faster or the
    interval lies below ``-margin``, "reproduced" when the interval lies above ``-margin``, "inconclusive"
    otherwise and with fewer than two seeds."""
    if not faster:
        return "opposite"
    if test.n < 2:
        return "inconclusive"
    if test.high < -margin:
        return "opposite"
    return "reproduced" if test.low > -margin else "inconclusive"


def relative_epochs(records: Sequence[dict], clip_records: Sequence[dict]) -> float:
    """Training time in units of one reference epoch (ProtoCLIP's "Rel." of Table IV): the run's time spent on
    episodes (feature extraction, K-Means, PBT and training steps) over the time of one epoch of
    ``clip_records``."""

    def seconds(r: dict) -> float:
        t = r["timings"]
        return t.get("training", 0.0) + t.get("episode_start", 0.0)  # data loading is inside "training"

    clip_epoch = sum(seconds(r) / r["config"]["epochs"] for r in clip_records) / len(clip_records)
    return sum(seconds(r) for r in records) / len(records) / clip_epoch


def episode_shares(records: Sequence[dict]) -> dict[str, float]:
    """Share of episode time per stage (ProtoCLIP's Fig. 9), summed over ``records``."""
    stages = ("feature_extraction", "kmeans", "pbt", "training")
    totals = {s: sum(r["timings"].get(s, 0.0) for r in records) for s in stages}
    whole = sum(totals.values())
    return {s: v / whole for s, v in totals.items()}


def epoch_overhead(records: Sequence[dict], clip_records: Sequence[dict]) -> float:
    """Extra time per epoch over the reference (ProtoCLIP's Fig. 9, +34.8%): ``relative_epochs`` per epoch
    trained, minus 1."""
    epochs = sum(r["config"]["epochs"] for r in records) / len(records)
    return relative_epochs(records, clip_records) / epochs - 1


# "timing" claims: metric -> (measure of (records, reference records), its book_value format)
TIMING_MEASURES: dict[str, tuple[Callable[[Sequence[dict], Sequence[dict]], float], str]] = {
    "kmeans_share": (lambda a, b: episode_shares(a)["kmeans"], "{:.1f}%"),
    "epoch_overhead": (epoch_overhead, "{:+.1f}%"),
}


def rank_correlations(records: Sequence[dict], reference: Sequence[dict], keys: Sequence[str]) -> dict[int, float]:
    """``{seed: Spearman rho}`` between each record's values of ``keys`` (NaN where missing, left out) and the
    reference record of the same seed (a reference with one record, a teacher, serves every seed)."""
    from scipy.stats import spearmanr

    def values(record: dict) -> np.ndarray:
        return np.array([record["metrics"].get(k, np.nan) for k in keys], dtype=float)

    ref = {int(r["config"]["seed"]): r for r in reference}
    out = {}
    for record in records:
        seed = int(record["config"]["seed"])
        if len(ref) > 1 and seed not in ref:
            continue
        other = ref[seed] if len(ref) > 1 else next(iter(ref.values()))
        a, b = values(record), values(other)
        both = np.isfinite(a) & np.isfinite(b)
        out[seed] = float(spearmanr(a[both], b[both]).statistic)
    return out


def _label(row: Hashable) -> str:
    return str(getattr(row, "label", row))


def blank_line(claim: Claim, paper: str) -> dict[str, Any]:
    """The scorecard line of ``claim`` (of ``paper``) before judging: verdict "not run"."""
    return {
        "id": claim.id,
        "paper": paper,
        "claim": claim.text,
        "source": claim.source,
        "notebook": claim.notebook,
        "metric": claim.metric,
        "paper_value": claim.paper_value,
        **format_test(None),
        "verdict": "not run",
        "seeds": 0,
    }


def compared_rows(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> tuple[Hashable, Hashable]:
    """The (better, reference) rows a pairwise claim compares; for "best_of", the best of ``candidates`` by
    seed-mean stands for ``better`` or, with ``better`` set, for ``reference``."""
    better, reference = claim.better, claim.reference
    if claim.kind == "best_of":
        best = max(claim.candidates, key=lambda r: float(np.mean(seed_values(results[r], claim.metric))))
        if better is None:
            better = best
        else:
            reference = best
    return better, reference


def claim_differences(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> np.ndarray:
    """The per-seed differences ``judge`` tests for a pairwise or "interaction" claim."""
    if claim.kind == "interaction":
        return interaction_differences(claim.terms, results)
    better, reference = compared_rows(claim, results)
    d = record_differences(results[better], results[reference], claim.metric)
    if claim.minus is not None:
        d = d - record_differences(results[claim.minus[0]], results[claim.minus[1]], claim.metric)
    return d


def claim_test(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> PairedTest:
    """``report.paired_test`` of ``claim_differences``, against ``paper_effect`` for "direction" and "interaction"
    claims: the test behind ``judge``'s line."""
    effect = claim.paper_effect if claim.kind in ("direction", "interaction") else None
    return paired_test(claim_differences(claim, results), effect)


def _judge_every(claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any]) -> dict[str, Any]:
    def differences(row: Hashable) -> np.ndarray:
        if claim.better is not None:  # better beats each candidate
            return record_differences(results[claim.better], results[row], claim.metric)
        return record_differences(results[row], results[claim.reference], claim.metric)

    tests = {row: paired_test(differences(row), claim.paper_effect) for row in claim.candidates}
    verdicts = [t.verdict for t in tests.values()]
    weakest = min(tests, key=lambda r: tests[r].mean)
    test = tests[weakest]
    line.update(
        format_test(test, claim.percent),
        seeds=test.n,
        verdict="reproduced"
        if all(v == "reproduced" for v in verdicts)
        else "opposite"
        if "opposite" in verdicts
        else "inconclusive",
    )
    line["book_value"] = (
        f"{verdicts.count('reproduced')} of {len(verdicts)} reproduced; weakest {_label(weakest)}: {line['book_value']}"
    )
    return line


def _judge_sweep(claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any]) -> dict[str, Any]:
    per_setting = {value: results[row] for value, row in claim.grid}
    means = {v: float(np.mean(seed_values(r, claim.metric))) for v, r in per_setting.items()}
    best = max(means, key=lambda v: means[v])
    test = paired_test(record_differences(per_setting[best], per_setting[claim.endpoint], claim.metric))
    line.update(
        format_test(test, claim.percent),
        seeds=test.n,
        verdict=sweep_test(per_setting, claim.metric, claim.paper_best, claim.endpoint),
    )
    scale = 100 if claim.percent else 1
    line["book_value"] = f"best at {best} ({scale * means[best]:.2f}); best - {claim.endpoint}: {line['book_value']}"
    return line


def _judge_correlation(claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any]) -> dict[str, Any]:
    rho = rank_correlations(results[claim.better], results[claim.reference], claim.keys)
    if claim.control is None:
        values = np.array(list(rho.values()))
        verdict = (
            "inconclusive"
            if len(values) < 2
            else "reproduced"
            if (values > 0).all()
            else "opposite"
            if (values < 0).all()
            else "inconclusive"
        )
        line.update(
            book_value=f"rho {', '.join(f'{v:+.2f}' for v in values)} (seeds {sorted(rho)})",
            verdict=verdict,
            seeds=len(values),
        )
        return line
    control = rank_correlations(results[claim.better], results[claim.control], claim.keys)
    test = paired_test(paired_differences(rho, control))
    line.update(format_test(test, percent=False), verdict=test.verdict, seeds=test.n)
    line["book_value"] = (
        f"{line['book_value']} (rho {_label(claim.reference).split(' ')[0]} "
        f"{np.mean(list(rho.values())):+.2f}, {_label(claim.control).split(' ')[0]} "
        f"{np.mean(list(control.values())):+.2f})"
    )
    return line


def judge(
    claim: Claim,
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
) -> dict[str, Any]:
    """The scorecard line of ``claim`` (of ``paper``) from ``{row: records}``: "not run" when a row it reads has
    no records, always for kind "not_run". ``checks``: for "every_draw" claims, ``{check: (each
    evaluation's (holds, reverse holds), seeds, what one evaluation is)}`` ("not run" without it)."""
    line = blank_line(claim, paper)
    if claim.kind == "not_run":
        return line
    if claim.kind == "every_draw":
        if checks is None or claim.check is None or claim.check not in checks:
            return line
        outcomes, seeds, what = checks[claim.check]
        holds, reverse = sum(h for h, _ in outcomes), sum(r for _, r in outcomes)
        verdict = "reproduced" if holds == len(outcomes) else "opposite" if reverse == len(outcomes) else "inconclusive"
        line.update(book_value=f"holds in {holds} of {len(outcomes)} {what}", verdict=verdict, seeds=seeds)
        return line
    if any(not results.get(row) for row in claim.rows()):
        return line
    if claim.kind == "sweep":
        return _judge_sweep(claim, results, line)
    if claim.kind == "every":
        return _judge_every(claim, results, line)
    if claim.kind == "correlation":
        return _judge_correlation(claim, results, line)
    if claim.kind == "timing":
        a, b = results[claim.better], results[claim.reference]
        measure, text = TIMING_MEASURES[claim.metric]
        value = measure(list(a), list(b))
        ratio = value / claim.paper_effect if claim.paper_effect else float("nan")
        line.update(
            book_value=text.format(100 * value),
            seeds=len(a),
            verdict="reproduced" if 0.5 <= ratio <= 2 else "not reproduced",
        )
        return line
    d = claim_differences(claim, results)
    test = claim_test(claim, results)
    line.update(format_test(test, claim.percent), verdict=test.verdict, seeds=test.n)
    margin = claim.margin if claim.margin is not None else 0.0
    if claim.kind == "best_of":
        better, reference = compared_rows(claim, results)
        line["book_value"] += (
            f" (best: {_label(better)})" if claim.better is None else f" (best other: {_label(reference)})"
        )
    elif claim.kind == "equivalence":
        line["verdict"] = equivalence_test(d, margin)
        line["seeds_needed"] = equivalence_seeds(test.mean, test.std, margin) if test.n >= 2 else ""
    elif claim.kind == "noninferiority":
        line["verdict"] = noninferiority_verdict(test, margin)
        line["seeds_needed"] = ""
    elif claim.kind == "match":
        a, b = list(results[claim.better]), list(results[claim.reference])
        rel, rel_reference = relative_epochs(a, b), relative_epochs(b, b)
        line["book_value"] += f" at {rel:.2f} vs {rel_reference:.2f} relative epochs"
        line["verdict"] = noninferiority_verdict(test, margin, rel < rel_reference)
    return line


def claims_table(
    claims: Sequence[Claim],
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    notebook: str | None = None,
    notebooks: Sequence[str] | None = None,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on ``{row: records}``, indexed by claim id;
    ``notebooks``: the valid notebook names (default: those of ``claims``)."""
    valid = list(notebooks) if notebooks is not None else sorted({c.notebook for c in claims})
    if notebook is not None and notebook not in valid:
        shown = tuple(valid) if notebooks is not None else valid
        raise ValueError(f"notebook must be one of {shown}, got {notebook!r}")
    lines = [judge(c, results, paper, checks) for c in claims if notebook is None or c.notebook == notebook]
    return pd.DataFrame(lines, columns=SCORECARD_COLUMNS).set_index("id")


def judge_stored(
    claims: Sequence[Claim],
    stored: Callable[[Any], Sequence[dict] | None],
    paper: str,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
) -> list[dict[str, Any]]:
    """Every claim judged on the stored records ``stored(row)`` gives (``None``: not run); trains nothing."""
    rows = {row for c in claims for row in c.rows()}
    results = {row: records for row in rows if (records := stored(row)) is not None}
    return [judge(c, results, paper, checks) for c in claims]
