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
- ``"timing"``: a cost claim, a measured share or overhead of ``better``'s time over ``reference`` (``metric``: a
  key of ``TIMING_MEASURES``) against ``paper_effect`` (``report.COST_RULE``: cheaper / as / dearer than claimed);
- ``"correlation"``: Spearman's rho between ``better``'s per-class values ``keys`` and ``reference``'s, per seed:
  reproduced when rho > 0 in every seed, opposite when rho < 0 in every seed; with a ``control`` row,
  rho(reference) - rho(control) per seed by VERDICT_RULE;
- ``"every_draw"``: an ordering ``check`` that must hold in every evaluation of a record outside the rows (DIME-FM's
  MMD kernels and draws): ``judge``'s ``checks`` gives, per check, each evaluation's (holds, reverse holds);
- ``"not_run"``: planned, not run (``reason``).

``paper_effect`` is the paper's difference as a fraction on our metric (points / 100), where it gives one;
``percent=False`` shows a claim's values raw (losses, ARI, rank correlations). ``knobs`` are the run-config fields the claim's idea
changes, and ``declared`` the other differences the paper's own comparison carries, each ``(field, the paper's
reason)``: ``vlp_lib.book.audit`` checks that the compared runs differ in nothing else. ``pool`` names the claims of a
notebook whose variance is pooled together (``report.POOLING_RULE``): by default the whole notebook's; a notebook that
judges claims at two budgets gives each budget its own, so that one budget's verdicts never move with the other's runs.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from vlp_lib import runs
from vlp_lib.book import stats
from vlp_lib.book.report import (
    AGAINST,
    AS_CLAIMED,
    CHEAPER,
    COST_FACTOR,
    COST_RULE,
    COST_VERDICTS,
    DEARER,
    DESCRIBED,
    FLOOR,
    HOLDS,
    INCONCLUSIVE,
    LEARNED_LEVEL,
    NO_EFFECT_MARGIN,
    NOT_RUN,
    SCORECARD_COLUMNS,
    SEED_BUDGET,
    UNEQUAL_SECONDS,
    PairedTest,
    best_of_test,
    equal_seconds,
    equivalence_verdict,
    every_test,
    format_test,
    noninferiority_test,
    paired_differences,
    paired_test,
    per_seed,
    record_differences,
    seed_values,
    seeds_text,
)
from vlp_lib.book.report import BEST_OF_RULE as BEST_OF_RULE  # the chapters read the rules here too
from vlp_lib.book.report import EVERY_RULE as EVERY_RULE
from vlp_lib.book.report import SWEEP_RULE as SWEEP_RULE

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
SIGN_TEST_SEEDS = 6  # the fewest values whose two-sided sign test can reach p < 0.05 (2 * 0.5**6 = 0.031)
CORRELATION_RULE = (
    "Rank-correlation claims without a control: Spearman's rho per seed, and a two-sided sign test over the seeds "
    "(the seeds share one teacher and one set of classes, so their rho are not independent draws of the claim: "
    "only their signs are counted): reproduced when the test finds rho > 0 (p < 0.05: at least 6 seeds, all "
    "positive), opposite when it finds rho < 0; with fewer than 6 seeds no signs can reach p < 0.05, so the "
    "claim is described (its rho per seed), not tested; with a control row, rho minus the control's rho per seed by "
    "the comparison rule."
)
EVERY_DRAW_RULE = (
    "'In every draw' checks (orderings of statistics of whole corpora, such as DIME-FM's MMDs): described, not "
    "tested. Their evaluations (kernels, subsampling draws) share one teacher and resample one corpus each, so they "
    "are not replicates of the claim, and a count of them cannot be a test: the page shows in how many evaluations "
    "the ordering holds, outside the false-discovery-rate family."
)
TIMING_RULE = COST_RULE  # the chapters read the rules here too
RAW_MARGINS = {"/ari": 0.01, "/ami": 0.01}  # metric suffix -> practical margin of a raw (not percent) metric


def practical_margin(claim: Claim) -> float | None:
    """The claim's practical margin in its metric's units (``report.VERDICT_RULE``): its own ``margin`` where it
    states one, else ``NO_EFFECT_MARGIN`` (1 pp) for a metric shown in percent or ``RAW_MARGINS`` by the metric's
    suffix; ``None`` where none is stated (no "no effect", every significant reverse is "opposite")."""
    if claim.margin is not None:
        return claim.margin
    if claim.percent:
        return NO_EFFECT_MARGIN
    return next((m for suffix, m in RAW_MARGINS.items() if claim.metric.endswith(suffix)), None)


def cost_verdict(value: float, paper: float) -> str:
    """``report.COST_RULE``: "cheaper than claimed", "as claimed" or "dearer than claimed" for a measured cost
    ``value`` against the paper's ``paper`` (both > 0 for a factor to mean anything; a cost at or below 0 against a
    positive claim is cheaper, and a claim of 0 cost is as claimed only at 0 or less)."""
    if not (np.isfinite(value) and np.isfinite(paper)):
        raise ValueError(f"a cost verdict needs finite numbers, got {value!r} against {paper!r}")
    if paper <= 0:
        return AS_CLAIMED if value <= paper else DEARER
    if value > COST_FACTOR * paper:
        return DEARER
    return CHEAPER if value < paper / COST_FACTOR else AS_CLAIMED


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
    paper_base: float | None = None
    paper_chance: float = 0.0
    pool: str = ""
    knobs: tuple[str, ...] = ()
    declared: tuple[tuple[str, str], ...] = ()
    # a comparison at equal training seconds: judged only when its runs' seconds are equal (report.EQUAL_SECONDS_RULE);
    # its rows' records carry ``seconds`` (the training seconds, ``lineup.variant_record``)
    equal_seconds: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r} (claim {self.id})")

    def pairs(self) -> list[tuple[Hashable, Hashable]]:
        """The (claimed, reference) row pairs its verdict compares, by its kind: the runs ``vlp_lib.book.audit``
        checks for undeclared differences, and the references whose learning ``reference_learning`` checks."""
        if self.kind in ("not_run", "every_draw"):
            return []
        if self.kind == "interaction":
            plus = [row for sign, row, _ in self.terms if sign > 0]
            minus = [row for sign, row, _ in self.terms if sign < 0]
            return list(zip(plus, minus))
        if self.kind == "sweep":  # the verdict compares the paper's best setting with the named end of the grid
            per_setting = dict(self.grid)
            return [(per_setting[self.paper_best], per_setting[self.endpoint])]
        if self.kind in ("every", "best_of"):
            if self.better is not None:
                return [(self.better, c) for c in self.candidates]
            return [(c, self.reference) for c in self.candidates]
        pairs: list[tuple[Hashable, Hashable]] = []
        if self.better is not None and self.reference is not None:
            pairs.append((self.better, self.reference))
        if self.minus is not None:
            pairs.append(self.minus)
        if self.control is not None and self.reference is not None:
            pairs.append((self.reference, self.control))
        return pairs

    def differs_in(self) -> str:
        """The scorecard's ``differs_in``: the idea's fields (``knobs``), then "+ field (why)" for each other
        difference its paper's comparison carries (``declared``); "" for a claim that declares none."""
        parts = [", ".join(self.knobs)] if self.knobs else []
        parts += [f"+ {name} ({why})" for name, why in self.declared]
        return " ".join(parts)

    def mapped(self, row: Callable[[Any], Hashable]) -> Claim:
        """The same claim on other rows: every row it reads passed through ``row`` (the same claim at another
        training length: ``judge_stored``'s ``longer``)."""
        return replace(
            self,
            better=None if self.better is None else row(self.better),
            reference=None if self.reference is None else row(self.reference),
            control=None if self.control is None else row(self.control),
            minus=None if self.minus is None else (row(self.minus[0]), row(self.minus[1])),
            candidates=tuple(row(r) for r in self.candidates),
            terms=tuple((sign, row(r), metric) for sign, r, metric in self.terms),
            grid=tuple((value, row(r)) for value, r in self.grid),
        )

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


def declare(
    claims: Sequence[Claim],
    knobs: Mapping[str, tuple[str, ...]],
    declared: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
) -> list[Claim]:
    """``claims`` with the config fields each one's idea changes (``knobs``, by claim id) and the other differences
    its paper's comparison carries (``declared``: ``(field, the paper's reason)`` by claim id; a claim not named keeps
    its own), which ``vlp_lib.book.audit`` checks against the runs' configs. ``ValueError`` naming an id that is no claim's."""
    declared = declared or {}
    ids = {c.id for c in claims}
    unknown = sorted((set(knobs) | set(declared)) - ids)
    if unknown:
        raise ValueError(f"knobs or declarations for claims that do not exist: {unknown}")
    return [
        replace(c, knobs=tuple(knobs.get(c.id, c.knobs)), declared=tuple(declared.get(c.id, c.declared)))
        for c in claims
    ]


def interaction_differences(
    terms: Sequence[tuple[int, Hashable, str]], results: Mapping[Any, Sequence[dict]]
) -> np.ndarray:
    """Per seed (the seeds every term's row has, in order), the signed sum of ``terms`` (sign, row, metric)."""
    values = [(sign, per_seed(results[row], metric)) for sign, row, metric in terms]
    seeds = sorted(set.intersection(*(set(v) for _, v in values)))
    return np.array([sum(sign * v[s] for sign, v in values) for s in seeds], dtype=float)


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
        "effect_scales": "",
        "eval_noise": "",
        "verdict": "not run",
        "seeds": 0,
        "differs_in": claim.differs_in(),
        "reference_learned": "",
        "verdict_longer": "",
    }


def _run_keys(records: Sequence[dict]) -> tuple[str, ...] | None:
    """The sorted config hashes of ``records`` (the runs they are), ``None`` where one has no hash (made by hand)."""
    keys = [r.get("config_hash") for r in records]
    return None if any(k is None for k in keys) else tuple(sorted(str(k) for k in keys))


def pooled_table(
    results: Mapping[Any, Sequence[dict]],
    rows: Sequence[Hashable],
    metric: str,
    seeds: Sequence[int] | None = None,
) -> tuple[stats.Pooled, tuple[Hashable, ...]] | None:
    """``stats.pooled_variance`` of ``metric`` over those of ``rows`` that ran, report it and have every one of
    ``seeds`` (a claim's; default: the seeds all such rows share), on exactly those seeds (``POOLING_RULE``), with
    the rows it spans; ``None`` without two such rows and two seeds. A row run on other seeds (a teacher trained
    once) stays out of the table rather than shrinking it. A row whose records are those of a row already in the
    table (the same runs read under a second label, as the ablation's base run is every sweep's default bar) enters
    once: counted twice it would add degrees of freedom that no run gave."""
    values = {}
    runs_seen: set[tuple[str, ...]] = set()
    for row in rows:
        records = results.get(row)
        if records and all(metric in r.get("metrics", {}) for r in records):
            runs = _run_keys(records)
            if runs is not None and runs in runs_seen:
                continue
            if runs is not None:
                runs_seen.add(runs)
            values[row] = per_seed(records, metric)
    if seeds is not None:
        values = {row: v for row, v in values.items() if set(seeds) <= set(v)}
    if len(values) < 2:
        return None
    seeds = sorted(set.intersection(*(set(v) for v in values.values())) if seeds is None else seeds)
    if len(seeds) < 2:
        return None
    table = np.array([[v[s] for s in seeds] for v in values.values()])
    return stats.pooled_variance(table, seeds), tuple(values)


def claim_seeds(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> list[int]:
    """The seeds every row the claim reads has (those of its per-seed differences)."""
    sets = [{int(r["config"]["seed"]) for r in results[row]} for row in claim.rows() if results.get(row)]
    return sorted(set.intersection(*sets)) if sets else []


def contrast(claim: Claim, better: Hashable, reference: Hashable) -> dict[Hashable, float] | None:
    """The row coefficients of a claim's per-seed difference (better - reference, minus ``minus``'s, or the
    signed ``terms``); ``None`` when its terms read other metrics than the claim's (no pooled variance then)."""
    coefficients: dict[Hashable, float] = {}
    if claim.kind == "interaction":
        if any(metric != claim.metric for _, _, metric in claim.terms):
            return None
        pairs = [(float(sign), row) for sign, row, _ in claim.terms]
    else:
        pairs = [(1.0, better), (-1.0, reference)]
        if claim.minus is not None:
            pairs += [(-1.0, claim.minus[0]), (1.0, claim.minus[1])]
    for sign, row in pairs:
        coefficients[row] = coefficients.get(row, 0.0) + sign
    return {row: c for row, c in coefficients.items() if c}


def tested(
    claim: Claim,
    differences: np.ndarray,
    coefficients: Mapping[Hashable, float] | None,
    pool: tuple[stats.Pooled, tuple[Hashable, ...]] | None,
    paper_effect: float | None = None,
) -> PairedTest:
    """``paired_test`` of a claim's per-seed differences, on the pooled variance where ``POOLING_RULE`` allows
    (the pool usable, spanning the contrast's rows, on exactly the differences' seeds), with the claim's "no
    effect" margin (``practical_margin``)."""
    margin = practical_margin(claim)
    pooled = None
    if pool is not None and coefficients is not None:
        table, rows = pool
        if table.usable and set(coefficients) <= set(rows) and len(differences) == len(table.seeds):
            pooled = (table.contrast_std(list(coefficients.values())), float(table.df))
    return paired_test(differences, paper_effect, margin=margin, pooled=pooled)


def _pairwise(
    claim: Claim,
    results: Mapping[Any, Sequence[dict]],
    pool: Any,
    better: Hashable,
    reference: Hashable,
    paper_effect: float | None = None,
) -> PairedTest:
    d = record_differences(results[better], results[reference], claim.metric)
    coefficients = contrast(replace(claim, kind="direction", minus=None), better, reference)
    return tested(claim, d, coefficients, pool, paper_effect)


def compared_rows(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> tuple[Hashable, Hashable]:
    """The (better, reference) rows a pairwise claim compares; for "best_of", the best of ``candidates`` by
    seed-mean stands for ``better`` or, with ``better`` set, for ``reference`` (shown; ``judge`` tests them all)."""
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


def claim_test(
    claim: Claim, results: Mapping[Any, Sequence[dict]], pool_rows: Sequence[Hashable] | None = None
) -> PairedTest:
    """The paired test behind a pairwise or "interaction" claim's line (against ``paper_effect`` for "direction"
    and "interaction" claims), pooled over ``pool_rows`` (default: every row of ``results``) where allowed."""
    return _claim_test(claim, results, claim_pool(claim, results, pool_rows), claim_differences(claim, results))


def claim_pool(
    claim: Claim, results: Mapping[Any, Sequence[dict]], pool_rows: Sequence[Hashable] | None = None
) -> tuple[stats.Pooled, tuple[Hashable, ...]] | None:
    """``pooled_table`` of the claim's metric over ``pool_rows`` (default: every row of ``results``) on its seeds."""
    rows = list(results) if pool_rows is None else pool_rows
    return pooled_table(results, rows, claim.metric, claim_seeds(claim, results))


def _claim_test(
    claim: Claim,
    results: Mapping[Any, Sequence[dict]],
    pool: tuple[stats.Pooled, tuple[Hashable, ...]] | None,
    differences: np.ndarray,
) -> PairedTest:
    effect = claim.paper_effect if claim.kind in ("direction", "interaction") else None
    better, reference = compared_rows(claim, results) if claim.kind != "interaction" else (None, None)
    return tested(claim, differences, contrast(claim, better, reference), pool, effect)


_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*(?:vs\.?|->|→)\s*(\d+(?:\.\d+)?)")


def paper_base(claim: Claim) -> float | None:
    """The paper's reference value (a fraction) behind ``paper_effect``: ``claim.paper_base``, else the pair "A vs
    B" / "B -> A" in ``paper_value`` whose difference is the paper's effect (within 0.15 pp); ``None`` if neither."""
    if claim.paper_base is not None or claim.paper_effect is None:
        return claim.paper_base
    for a, b in _PAIR.findall(claim.paper_value):
        a_, b_ = float(a) / 100, float(b) / 100
        if abs(a_ - b_ - claim.paper_effect) < 0.0015:
            return b_
        if abs(b_ - a_ - claim.paper_effect) < 0.0015:
            return a_
    return None


@functools.lru_cache(maxsize=64)
def _chance(eval_config: str) -> dict[str, float]:
    from vlp_lib.suite import EvalConfig, chance_levels

    return chance_levels(EvalConfig.from_record(json.loads(eval_config)))


def our_chance(records: Sequence[dict], metric: str) -> float:
    """What a random guesser scores on ``metric`` under the records' evaluation (``suite.chance_levels``); 0 where
    it names no chance level for the metric."""
    config = records[0]["config"]
    keys = ("eval_tasks", "scale", "task_train", "task_test", "retrieval_images", "eval_probes")
    if any(k not in config for k in keys[:5]):  # a record without an evaluation config (made by hand): no chance level
        return 0.0
    try:
        return float(_chance(json.dumps({k: config[k] for k in keys if k in config}, sort_keys=True)).get(metric, 0.0))
    except Exception as err:  # noqa: BLE001  a chance level is a nicety of the effect scales, never worth a failed page
        warnings.warn(f"no chance level for {metric} ({type(err).__name__}: {err}); the headroom scale takes 0")
        return 0.0


def effect_scales(claim: Claim, results: Mapping[Any, Sequence[dict]], d: np.ndarray, test: PairedTest) -> str:
    """The verdict with the paper's effect on each of ``stats.EFFECT_SCALES`` ("points +9.30 pp: ...; logit ...;
    headroom ..."): direction claims on a percent metric with a stated effect; "" otherwise."""
    if claim.kind != "direction" or claim.paper_effect is None or not claim.percent or claim.minus is not None:
        return ""
    reference = results[claim.reference]
    ours = float(np.mean(seed_values(reference, claim.metric)))
    effects = stats.effect_on_scales(
        claim.paper_effect, paper_base(claim), ours, claim.paper_chance, our_chance(reference, claim.metric)
    )
    pooled = (test.std, test.df) if test.pooled else None
    parts = []
    for scale, effect in effects.items():
        if np.isfinite(effect):
            verdict = paired_test(d, effect, margin=practical_margin(claim), pooled=pooled).verdict
            parts.append(f"{scale} {100 * effect:+.2f} pp: {verdict}")
    return "; ".join(parts)


ACCURACY_METRICS = ("zeroshot_top1", "zeroshot_top5", "linear", "knn")
EVALUATION_NOISE_RULE = (
    "Evaluation noise: the test sets are fixed and finite, so a per-seed difference of accuracies carries at most "
    "sqrt(2 p (1 - p) / N) of evaluation noise (N test images, p the reference's accuracy; the two models err on "
    "the same images often, which makes the true share smaller), for a group average sqrt(sum 2 p_i (1 - p_i) / N) / "
    "k over its k tasks; shown beside the share of the differences' own variance it could explain (metrics that are "
    "not accuracies or recalls: none stated)."
)


def evaluation_noise(records: Sequence[dict], metric: str) -> float:
    """The upper bound of evaluation noise in one per-seed difference of ``metric`` (``EVALUATION_NOISE_RULE``)
    at the accuracy ``records`` (the reference's runs) reach; ``nan`` where no bound is stated."""
    from vlp_lib.suite import AVERAGE_GROUPS

    config = records[0]["config"]
    group, _, name = metric.partition("/")

    def p(key: str) -> float:
        return float(np.mean([r["metrics"].get(key, np.nan) for r in records]))

    try:
        if group in AVERAGE_GROUPS and name in ACCURACY_METRICS:
            tasks = [t for t in AVERAGE_GROUPS[group][0] if f"{t}/{name}" in records[0]["metrics"]]
            ps = np.array([p(f"{t}/{name}") for t in tasks])
            n = int(config["task_test"])
            return float(np.sqrt(np.sum(2 * ps * (1 - ps) / n)) / len(ps)) if len(ps) else float("nan")
        if name in ACCURACY_METRICS:
            n = int(config["task_test"])
        elif group.startswith("retrieval") and "R@" in name:
            n = int(config["retrieval_images"])
        else:
            return float("nan")
    except (KeyError, TypeError, ValueError):
        return float("nan")
    value = p(metric)
    return float(np.sqrt(2 * value * (1 - value) / n)) if np.isfinite(value) else float("nan")


def noise_text(records: Sequence[dict], metric: str, test: PairedTest) -> str:
    """ "0.95 pp (24% of the spread)": ``evaluation_noise`` and the share of the differences' own variance it
    could explain; "" where no bound is stated."""
    bound = evaluation_noise(records, metric)
    if not np.isfinite(bound):
        return ""
    own = test.own_std
    share = f" ({min(1.0, bound**2 / own**2):.0%} of the spread)" if np.isfinite(own) and own > 0 else ""
    return f"{100 * bound:.2f} pp{share}"


def _sign_test(values: Sequence[float] | np.ndarray) -> tuple[str, float]:
    """Two-sided sign test of ``values`` against 0 (``CORRELATION_RULE``): (verdict, p)."""
    from scipy.stats import binomtest

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v != 0)]
    if len(v) < 2:
        return "inconclusive", float("nan")
    positive = int((v > 0).sum())
    p = float(binomtest(positive, len(v)).pvalue)
    if p < 0.05:
        return ("reproduced" if positive * 2 > len(v) else "opposite"), p
    return "inconclusive", p


def _comparisons(
    claim: Claim, results: Mapping[Any, Sequence[dict]], pool: Any
) -> tuple[str, float, list[PairedTest], list[tuple[Hashable, Hashable]], int]:
    """An "every" or "best_of" claim's pairwise tests: (verdict, p, the tests, their (better, reference) rows, the
    index of the comparison that decides: ``EVERY_RULE`` / ``BEST_OF_RULE``)."""
    every = claim.kind == "every" or claim.better is not None  # "better is the best value": it beats every other
    if every:
        pairs = [
            (claim.better, row) if claim.better is not None else (row, claim.reference) for row in claim.candidates
        ]
    else:
        pairs = [(row, claim.reference) for row in claim.candidates]
    tests = [_pairwise(claim, results, pool, *pair) for pair in pairs]
    if every and claim.paper_effect is not None:  # planned at the paper's effect, where it states one (else the margin)
        tests = [replace(t, seeds_needed=stats.planned_seeds(t.std, claim.paper_effect, rows=t.rows)) for t in tests]
    verdict, p, decides = every_test(tests, practical_margin(claim)) if every else best_of_test(tests)
    return verdict, p, tests, pairs, decides


def decisive_comparison(
    claim: Claim, results: Mapping[Any, Sequence[dict]], pool_rows: Sequence[Hashable] | None = None
) -> tuple[PairedTest, Hashable, Hashable]:
    """The paired test a claim's line shows, with its (better, reference) rows: for "every" and "best_of" claims the
    comparison that decides (the weakest, the opposite one, the best), for the others ``claim_test``'s. So a table
    beside the line never shows another comparison's numbers."""
    if claim.kind in ("every", "best_of"):
        _, _, tests, pairs, decides = _comparisons(claim, results, claim_pool(claim, results, pool_rows))
        return tests[decides], *pairs[decides]
    better, reference = compared_rows(claim, results) if claim.kind != "interaction" else (None, None)
    return claim_test(claim, results, pool_rows), better, reference


def _judge_every(
    claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any], pool: Any
) -> dict[str, Any]:
    verdict, p, tests, pairs, decides = _comparisons(claim, results, pool)
    test = tests[decides]
    rows = list(claim.candidates)
    line.update(format_test(test, claim.percent), seeds=test.n, verdict=verdict, p=p)
    if claim.kind == "best_of" and claim.better is None:
        line["book_value"] += f" (best: {_label(rows[decides])}; Bonferroni over {len(rows)})"
        return _mark(line, test)
    what = "the opposite one" if verdict in AGAINST else "weakest"
    line["book_value"] = f"{settings_count(tests)}; {what} {_label(rows[decides])}: {line['book_value']}"
    return _mark(line, test)


def settings_count(tests: Sequence[Any]) -> str:
    """How many of an "every" claim's comparisons, each judged alone, hold in the paper's direction, and by which
    words ("4 of 5 in the paper's direction (1 reproduced + 3 larger than claimed)"): *larger than claimed* is the
    paper's direction, not its reproduction, so the count never calls it one."""
    words = [t.verdict for t in tests if t.verdict in HOLDS]
    shown = " + ".join(f"{words.count(w)} {w}" for w in HOLDS if w in words)
    return f"{len(words)} of {len(tests)} in the paper's direction" + (f" ({shown})" if shown else "")


def _judge_sweep(
    claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any], pool: Any
) -> dict[str, Any]:
    per_setting = {value: row for value, row in claim.grid}
    for name, value in (("paper_best", claim.paper_best), ("endpoint", claim.endpoint)):
        if value not in per_setting:
            raise ValueError(f"claim {claim.id}: {name} {value!r} is not a grid value of {list(per_setting)}")
    means = {v: float(np.mean(seed_values(results[r], claim.metric))) for v, r in per_setting.items()}
    best = max(means, key=lambda v: means[v])
    best_row, end_row = per_setting[claim.paper_best], per_setting[claim.endpoint]
    test = _pairwise(claim, results, pool, best_row, end_row, claim.paper_effect)
    if claim.percent:
        line["eval_noise"] = noise_text(results[per_setting[claim.endpoint]], claim.metric, test)
    verdict = test.verdict  # no paper effect on a sweep: reproduced, no effect (flat), opposite (within the margin)
    line.update(format_test(test, claim.percent), seeds=test.n, verdict=verdict)
    if verdict == "inconclusive":
        line["p"] = min(1.0, 2 * min(test.one_sided(0.0, True), test.one_sided(0.0, False)))
    scale = 100 if claim.percent else 1
    line["book_value"] = (
        f"{claim.paper_best} - {claim.endpoint}: {line['book_value']} (best seed-mean at {best}: {scale * means[best]:.2f})"
    )
    return _mark(line, test)


def _judge_correlation(claim: Claim, results: Mapping[Any, Sequence[dict]], line: dict[str, Any]) -> dict[str, Any]:
    rho = rank_correlations(results[claim.better], results[claim.reference], claim.keys)
    if claim.control is None:
        values = np.array(list(rho.values()))
        verdict, p = _sign_test(values)
        if len(values) < SIGN_TEST_SEEDS:  # planned too few to decide whatever the signs: a description, not a test
            verdict, p = DESCRIBED, float("nan")
        line.update(
            book_value=f"rho {', '.join(f'{v:+.2f}' for v in values)} (seeds {sorted(rho)})",
            verdict=verdict,
            p=p,
            seeds=len(values),
        )
        return line
    control = rank_correlations(results[claim.better], results[claim.control], claim.keys)
    test = paired_test(paired_differences(rho, control), margin=practical_margin(claim))
    line.update(format_test(test, percent=False), verdict=test.verdict, seeds=test.n)
    line["book_value"] = (
        f"{line['book_value']} (rho {_label(claim.reference).split(' ')[0]} "
        f"{np.mean(list(rho.values())):+.2f}, {_label(claim.control).split(' ')[0]} "
        f"{np.mean(list(control.values())):+.2f})"
    )
    return line


# A record's key for its untrained network's record, attached by a chapter whose claims read evaluations beyond the
# suite (ICMLM's attribute ZSL and proxy task): that record carries the same evaluations, so those claims are checked
UNTRAINED_ATTACHED = "untrained"


def untrained_records(records: Sequence[dict]) -> list[dict] | None:
    """The untrained network of each run of ``records`` (``vlp_lib.experiment.untrained``: the same config, evaluated
    before any step): the one a chapter attached (``UNTRAINED_ATTACHED``), else the results store's; ``None`` when
    one is not stored. Records that are themselves untrained networks are their own."""
    out = []
    for record in records:
        if record.get("kind") == runs.UNTRAINED_KIND:
            out.append(record)
            continue
        if UNTRAINED_ATTACHED in record:  # a chapter's own: with the evaluations it adds to its runs' suite
            out.append(record[UNTRAINED_ATTACHED])
            continue
        if "config" not in record:
            return None
        found = runs.load(runs.UNTRAINED_KIND, record["config"], paper=record.get("scope"))
        if found is None:
            return None
        out.append(found)
    return out


# the scorecard's reference_learned of a claim whose reference's untrained network is not stored: judged as before,
# and counted on the scorecard's first screen, so a reader sees how many verdicts lack the learning check
NOT_CHECKED = "not checked: no untrained network stored"
NOT_CHECKED_METRIC = "not checked: the untrained network lacks this evaluation"
UNCHECKED = (NOT_CHECKED, NOT_CHECKED_METRIC)  # the scorecard counts both: a verdict without its learning check


def reference_learning(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> tuple[str, bool | None]:
    """Whether the references of ``claim``'s comparisons (``Claim.pairs``) have learned (``LEARNED_RULE``): the text
    of the scorecard's ``reference_learned`` ("yes, +12.3 pp (p = 0.004)", "no, ..."; for several references the one
    that learned least) and ``True`` / ``False``; ``("", None)`` where it is not measured: a cost claim, a reference
    that is itself an untrained network, or a metric the reference's own records lack; ``(NOT_CHECKED, None)`` where a
    reference's untrained network is not stored (its chapter has not run it), ``(NOT_CHECKED_METRIC, None)`` where
    it is stored but has not been evaluated on the claim's metric (an evaluation beyond the run's suite, e.g.
    ICMLM's attribute ZSL): the scorecard counts both."""
    if claim.kind in ("timing", "not_run", "every_draw"):
        return "", None
    weakest: tuple[float, float, bool] | None = None  # (p, mean gain, learned)
    for row in dict.fromkeys(reference for _, reference in claim.pairs()):
        records = results.get(row)
        if not records or all(r.get("kind") == runs.UNTRAINED_KIND for r in records):
            return "", None
        untrained = untrained_records(records)
        if untrained is None:
            return NOT_CHECKED, None
        if any(claim.metric not in r.get("metrics", {}) for r in records):
            return "", None
        if any(claim.metric not in r.get("metrics", {}) for r in untrained):
            return NOT_CHECKED_METRIC, None  # an evaluation the untrained network has not had: counted, not hidden
        d = record_differences(records, untrained, claim.metric)
        if len(d) < 2:
            return "", None
        with np.errstate(divide="ignore", invalid="ignore"):
            p = float(scipy_stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
        mean = float(np.mean(d))
        p = p if np.isfinite(p) else (0.0 if mean > 0 else 1.0)  # no spread: every seed gained alike, or none did
        line = (p, mean, p < LEARNED_LEVEL)
        weakest = line if weakest is None or line[0] > weakest[0] else weakest
    if weakest is None:
        return "", None
    p, mean, learned = weakest
    gain = f"{100 * mean:+.1f} pp" if claim.percent else f"{mean:+.3f}"
    return f"{'yes' if learned else 'no'}, {gain} (p = {p:.3f})", learned


def judge(
    claim: Claim,
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
    pool_rows: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """The scorecard line of ``claim`` (of ``paper``) from ``{row: records}`` (``_judge``), with whether its reference
    has learned (``reference_learning``): a claim whose reference has not is judged ``FLOOR`` and has no p-value,
    so it leaves the book's false-discovery-rate family (``report.with_fdr``)."""
    line = _judge(claim, results, paper, checks, pool_rows)
    if line["verdict"] == NOT_RUN:
        return line
    line["reference_learned"], learned = reference_learning(claim, results)
    if learned is False and line["verdict"] not in COST_VERDICTS:
        line.update(verdict=FLOOR, p=float("nan"), p_direction=float("nan"))
    if claim.equal_seconds:
        ratio = seconds_ratio(claim, results)
        line["book_value"] = f"{line['book_value']} (at {ratio:.2f}x the reference's seconds)"
        # runs that did not take equal seconds are no equal-seconds comparison, whether or not the reference learned
        # (its learning check stays in reference_learned)
        if not equal_seconds(ratio):
            line.update(verdict=UNEQUAL_SECONDS, p=float("nan"), p_direction=float("nan"))
    return line


def seconds_over(records: Sequence[dict], reference: Sequence[dict]) -> float:
    """An equal-seconds run's achieved ratio: the mean over seeds of ``records``' training ``seconds`` over the mean of
    ``reference``'s (what ``report.EQUAL_SECONDS_RULE`` reads, and the pages' tables show)."""
    return float(np.mean([r["seconds"] for r in records])) / float(np.mean([r["seconds"] for r in reference]))


def seconds_ratio(claim: Claim, results: Mapping[Any, Sequence[dict]]) -> float:
    """``seconds_over`` of an equal-seconds ``claim``'s runs and its reference's (``Claim.pairs``; the pair furthest
    from 1 where there are several)."""
    ratios = [seconds_over(results[better], results[reference]) for better, reference in claim.pairs()]
    return max(ratios, key=lambda r: abs(r - 1.0))


def _judge(
    claim: Claim,
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
    pool_rows: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """``judge`` before the learning check: "not run" when a row it reads has
    no records, always for kind "not_run". ``checks``: for "every_draw" claims, ``{check: (each
    evaluation's (holds, reverse holds), seeds, what one evaluation is)}`` ("not run" without it). ``pool_rows``:
    the rows whose variance is pooled (``report.POOLING_RULE``; default every row of ``results``)."""
    line = blank_line(claim, paper)
    if claim.kind == "not_run":
        line["book_value"] = f"not run: {claim.reason}" if claim.reason else ""
        return line
    if claim.kind == "every_draw":
        if checks is None or claim.check is None or claim.check not in checks:
            return line
        outcomes, seeds, what = checks[claim.check]
        holds = sum(h for h, _ in outcomes)
        # the evaluations share one teacher and subsample one corpus each: not replicates, so no test (EVERY_DRAW_RULE)
        line.update(
            book_value=f"holds in {holds} of {len(outcomes)} {what}",
            verdict=DESCRIBED,
            p=float("nan"),
            seeds=seeds,
        )
        return line
    if any(not results.get(row) for row in claim.rows()):
        return line
    pool = claim_pool(claim, results, pool_rows)
    if claim.kind == "sweep":
        return _judge_sweep(claim, results, line, pool)
    if claim.kind in ("every", "best_of"):
        return _judge_every(claim, results, line, pool)
    if claim.kind == "correlation":
        return _judge_correlation(claim, results, line)
    if claim.kind == "timing":
        a, b = results[claim.better], results[claim.reference]
        measure, text = TIMING_MEASURES[claim.metric]
        value = measure(list(a), list(b))
        if claim.paper_effect is None:
            raise ValueError(f"claim {claim.id}: a cost claim needs the paper's number (paper_effect)")
        verdict = cost_verdict(value, claim.paper_effect)
        ratio = value / claim.paper_effect if claim.paper_effect > 0 else float("nan")
        line.update(
            book_value=text.format(100 * value) + (f" ({ratio:.2f}x the paper's)" if np.isfinite(ratio) else ""),
            seeds=len(a),
            verdict=verdict,
        )
        return line
    d = claim_differences(claim, results)
    test = _claim_test(claim, results, pool, d)
    margin = claim.margin if claim.margin is not None else 0.0
    if claim.kind in ("equivalence", "noninferiority", "match"):
        kind = "equivalence" if claim.kind == "equivalence" else "noninferiority"
        test = replace(test, seeds_needed=stats.planned_seeds(test.std, margin, kind, rows=test.rows))
    line.update(format_test(test, claim.percent), verdict=test.verdict, seeds=test.n)
    line["effect_scales"] = effect_scales(claim, results, d, test)
    if claim.percent and claim.reference is not None and claim.kind != "interaction":
        line["eval_noise"] = noise_text(results[claim.reference], claim.metric, test)
    if claim.kind == "equivalence":
        line["verdict"], line["p"] = equivalence_verdict(test, margin)
    elif claim.kind in ("noninferiority", "match"):
        line["verdict"], line["p"] = noninferiority_test(test, margin)
    if claim.kind == "match":
        a, b = list(results[claim.better]), list(results[claim.reference])
        rel, rel_reference = relative_epochs(a, b), relative_epochs(b, b)
        line["book_value"] += f" at {rel:.2f} vs {rel_reference:.2f} relative epochs"
        if rel >= rel_reference:  # not faster: the claim's "in less time" fails, measured, not tested
            line["verdict"], line["p"] = "opposite", float("nan")
    return _mark(line, test)


def _mark(line: dict[str, Any], test: PairedTest) -> dict[str, Any]:
    """Mark a claim that a new experiment would plan beyond ``SEED_BUDGET`` seeds: "needs about N" ("needs more
    than 1000" beyond ``MAX_SEEDS``)."""
    if test.seeds_needed > SEED_BUDGET:
        text = seeds_text(test.seeds_needed)
        line["seeds_needed"] = f"needs more than {text[1:]}" if text.startswith(">") else f"needs about {text}"
    return line


def claims_table(
    claims: Sequence[Claim],
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    notebook: str | None = None,
    notebooks: Sequence[str] | None = None,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
    longer: Callable[[Any], Hashable] | None = None,
    longer_ids: Sequence[str] = (),
    factor: float | None = None,
) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on ``{row: records}``, indexed by claim id;
    ``notebooks``: the valid notebook names (default: those of ``claims``). With ``longer``, the claims of
    ``longer_ids`` get their ``verdict_longer`` from the rows ``longer`` maps theirs to, where ``results`` has them
    (``with_longer``): the scorecard's line."""
    valid = list(notebooks) if notebooks is not None else sorted({c.notebook for c in claims})
    if notebook is not None and notebook not in valid:
        shown = tuple(valid) if notebooks is not None else valid
        raise ValueError(f"notebook must be one of {shown}, got {notebook!r}")
    pools = pooled_rows(claims)
    picked = [c for c in claims if notebook is None or c.notebook == notebook]
    lines = [judge(c, results, paper, checks, pools[pool_key(c)]) for c in picked]
    ids = [i for i in longer_ids if i in {c.id for c in picked}]
    if longer is not None and ids:
        lines = with_longer(picked, lines, results, paper, longer, ids, checks, factor)
    return pd.DataFrame(lines, columns=SCORECARD_COLUMNS).set_index("id")


def pool_key(claim: Claim) -> tuple[str, str]:
    """The group of claims whose rows a claim's test pools over: its notebook and its ``pool``."""
    return claim.notebook, claim.pool


def pooled_rows(claims: Sequence[Claim]) -> dict[tuple[str, str], list[Hashable]]:
    """``{pool_key: the rows its claims read}``: the rows whose variance a claim's test pools
    (``report.POOLING_RULE``), the same on the notebook's page and on the scorecard."""
    out: dict[tuple[str, str], list[Hashable]] = {}
    for c in claims:
        rows = out.setdefault(pool_key(c), [])
        rows += [r for r in c.rows() if r not in rows]
    return out


def trend(claim: Claim, line: dict, longer_line: dict) -> str:
    """``TREND_RULE``'s word for a claim from its scorecard line at the book's length (``line``) and at a longer one
    (``longer_line``: ``judge_stored`` judges it on the claim's rows mapped to that length)."""
    short, long = line["verdict"], longer_line["verdict"]
    if NOT_RUN in (short, long) or claim.kind in ("timing", "correlation", "every_draw"):
        return ""
    if long == UNEQUAL_SECONDS:
        return "not judged at the longer length: unequal seconds"
    if FLOOR in (short, long):
        if short == long:
            return "the reference has not learned at either length"
        return "the reference learns only with more training" if short == FLOOR else ""
    if short == UNEQUAL_SECONDS:
        return "judged only at the longer length (unequal seconds at the book's)"
    short_holds, long_holds = short in HOLDS, long in HOLDS
    short_against, long_against = short in AGAINST, long in AGAINST
    if (short_holds and long_against) or (short_against and long_holds):
        return "flips"
    if short_holds and long_holds:
        return "holds"
    if short_against and long_against:
        return "opposite at both lengths"
    if long_holds:
        return "appears only with more training"
    if short_holds:
        return "fades with more training"
    if long_against:
        return "the opposite appears only with more training"
    if short_against:
        return "the opposite fades with more training"
    # neither length finds a direction; a decided word without one ("no effect", "smaller than claimed") is named
    if short == long == INCONCLUSIVE:
        return "undecided at both lengths"
    words = f"{short} at both" if short == long else f"{short} at the book's length, {long} at the longer"
    return f"no direction at either length ({words})"


TREND_RULE = (
    "A headline claim is judged again, by the same rules, with every run it compares trained longer (the chapter "
    "states the factor, at least 3x, and the seeds: the book's, or the first three of them). Its trend compares the "
    "two verdicts, each judged alone: the longer one is outside the false-discovery-rate family, so the book's length "
    "is read by its word before the adjustment too (a page shows that word beside the word at 5% FDR where the two "
    "differ: 'inconclusive (alone: reproduced)'). The words: 'holds' (the paper's direction at both lengths); "
    "'appears only with more training' (at the longer length only); 'fades with more training' (at the book's "
    "only); 'flips' (the paper's direction at one length, its opposite at the other); 'opposite at both lengths', "
    "'the opposite appears only with more training' and 'the opposite fades with more training' for the opposite "
    "direction; 'no direction at either length' where neither length finds one and one of them decides without "
    "one ('no effect', 'smaller than claimed'; both words are given); 'undecided at both lengths' where both are "
    "inconclusive; 'the reference learns only with more training' where the book's length is at the floor and the "
    "longer one is not, 'the reference has not learned at either length', and no word where only the longer length "
    "is at the floor; for an equal-seconds claim, 'not judged at the longer length: unequal seconds' where the longer "
    "runs missed the reference's seconds by more than 5%, and 'judged only at the longer length' where only the "
    "book's length missed them. A trend is to be read before extrapolating, not as a second verdict."
)


def judge_stored(
    claims: Sequence[Claim],
    stored: Callable[[Any], Sequence[dict] | None],
    paper: str,
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
    longer: Callable[[Any], Hashable] | None = None,
    longer_ids: Sequence[str] = (),
    factor: float | None = None,
) -> list[dict[str, Any]]:
    """Every claim judged on the stored records ``stored(row)`` gives (``None``: not run); trains nothing. The claims
    of ``longer_ids`` are judged again on their rows at the longer length (``longer(row)``, read through ``stored``
    too, ``factor`` times the training): ``verdict_longer`` is that verdict and its ``trend`` ("" where a length is
    not run; ``with_longer``)."""
    rows = {row for c in claims for row in c.rows()}
    results = {row: records for row in rows if (records := stored(row)) is not None}
    pools = pooled_rows(claims)
    lines = [judge(c, results, paper, checks, pools[pool_key(c)]) for c in claims]
    if longer is None or not longer_ids:
        return lines
    long_rows = {longer(row) for c in claims if c.id in longer_ids for row in c.rows()}
    long_results = {row: records for row in long_rows if (records := stored(row)) is not None}
    return with_longer(claims, lines, long_results, paper, longer, longer_ids, checks, factor)


def with_longer_claims(
    claims: Sequence[Claim], longer: Callable[[Any], Hashable], longer_ids: Sequence[str]
) -> list[Claim]:
    """``claims`` and, after them, the claims of ``longer_ids`` on their rows at the longer length (``longer(row)``):
    every comparison a chapter judges, at either length (whose references get an untrained network)."""
    return [*claims, *(c.mapped(longer) for c in claims if c.id in longer_ids)]


def with_longer(
    claims: Sequence[Claim],
    lines: Sequence[dict[str, Any]],
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    longer: Callable[[Any], Hashable],
    longer_ids: Sequence[str],
    checks: Mapping[str, tuple[Sequence[tuple[bool, bool]], int, str]] | None = None,
    factor: float | None = None,
) -> list[dict[str, Any]]:
    """``lines`` (the scorecard lines of ``claims``, in order) with ``verdict_longer`` filled for the claims of
    ``longer_ids``: each judged again, by the same rules, on its rows at the longer length (``longer(row)``, ``factor``
    times the training) in ``results`` ("at 4x: verdict (value, 95% interval [low, high]); trend", ``TREND_RULE``; the
    interval where the line has one); left "" where those rows are not in ``results``."""
    unknown = sorted(set(longer_ids) - {c.id for c in claims})
    if unknown:
        raise ValueError(f"longer_ids: no such claims {unknown}")
    long_claims = [c.mapped(longer) for c in claims if c.id in longer_ids]
    long_pools = pooled_rows(long_claims)
    by_id = {c.id: (c, line) for c, line in zip(claims, lines)}
    for long_claim in long_claims:
        claim, line = by_id[long_claim.id]
        long_line = judge(long_claim, results, paper, checks, long_pools[pool_key(long_claim)])
        word = trend(claim, line, long_line)
        if long_line["verdict"] != NOT_RUN:
            # the value with its interval where the line has one: a longer verdict is read with its uncertainty
            interval = f", 95% interval {long_line['interval']}" if long_line.get("interval") else ""
            value = f" ({long_line['book_value']}{interval})" if long_line["book_value"] else ""
            length = f"at {factor:g}x: " if factor is not None else ""
            line["verdict_longer"] = f"{length}{long_line['verdict']}{value}" + (f"; {word}" if word else "")
    return list(lines)
