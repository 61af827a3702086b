"""Claims as data, judged on stored runs: the kinds the later chapters share (iCLIP, ICMLM).

A claim names rows of its chapter (any hashable: a chapter's ``Row``) and a metric; ``judge`` turns it into one
scorecard line (``report.SCORECARD_COLUMNS``) from ``{row: [record per seed]}`` and never trains. Kinds:

- ``"direction"``: ``better`` beats ``reference`` (``report.VERDICT_RULE`` on the per-seed differences);
- ``"interaction"``: the per-seed signed sum of ``terms`` (sign, row, metric) is above 0 (a difference of
  differences, e.g. "the gap is larger on IN-1K than on VOC"), same rule;
- ``"every"``: each of ``candidates`` beats ``reference`` or, with ``better`` set, ``better`` beats each of
  ``candidates`` (``EVERY_RULE``); the line shows the weakest comparison;
- ``"sweep"``: ``report.SWEEP_RULE`` over ``grid`` ((value, row) in sweep order) with ``paper_best`` and
  ``endpoint`` (grid values);
- ``"not_run"``: planned, not run (``reason``).

``paper_effect`` is the paper's difference as a fraction on our metric (points / 100), where it gives one;
``percent=False`` shows a claim's values raw (losses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..book.report import SCORECARD_COLUMNS, format_test, paired_test, per_seed, record_differences, seed_values, \
    sweep_test

KINDS = ("direction", "interaction", "every", "sweep", "not_run")
EVERY_RULE = ("'Every setting beats the reference' claims: reproduced when every per-setting comparison is "
              "reproduced (VERDICT_RULE), opposite when any is opposite, inconclusive otherwise; the line shows "
              "the comparison with the smallest mean difference.")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper on a chapter's rows (see the module docstring for ``kind``)."""

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
    terms: tuple[tuple[int, Hashable, str], ...] = ()
    candidates: tuple[Hashable, ...] = ()
    grid: tuple[tuple[Any, Hashable], ...] = ()
    paper_best: Any = None
    endpoint: Any = None
    percent: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r} (claim {self.id})")

    def rows(self) -> list[Hashable]:
        """Every row the claim reads."""
        rows = [self.better, self.reference, *self.candidates, *(t[1] for t in self.terms), *(r for _, r in self.grid)]
        return list(dict.fromkeys(r for r in rows if r is not None))


def interaction_differences(terms: Sequence[tuple[int, Hashable, str]],
                            results: Mapping[Hashable, Sequence[dict]]) -> np.ndarray:
    """Per seed (the seeds every term's row has, in order), the signed sum of ``terms`` (sign, row, metric)."""
    values = [(sign, per_seed(results[row], metric)) for sign, row, metric in terms]
    seeds = sorted(set.intersection(*(set(v) for _, v in values)))
    return np.array([sum(sign * v[s] for sign, v in values) for s in seeds], dtype=float)


def _label(row: Hashable) -> str:
    return str(getattr(row, "label", row))


def judge(claim: Claim, results: Mapping[Hashable, Sequence[dict]], paper: str) -> dict[str, Any]:
    """The scorecard line of ``claim`` (of ``paper``) from ``{row: records}``: "not run" when a row it reads has
    no records, and always for kind "not_run"."""
    line = {"id": claim.id, "paper": paper, "claim": claim.text, "source": claim.source, "notebook": claim.notebook,
            "metric": claim.metric, "paper_value": claim.paper_value, **format_test(None), "verdict": "not run",
            "seeds": 0}
    if claim.kind == "not_run" or any(not results.get(row) for row in claim.rows()):
        return line
    if claim.kind == "sweep":
        per_setting = {value: results[row] for value, row in claim.grid}
        means = {v: float(np.mean(seed_values(r, claim.metric))) for v, r in per_setting.items()}
        best = max(means, key=means.get)
        test = paired_test(record_differences(per_setting[best], per_setting[claim.endpoint], claim.metric))
        line.update(format_test(test, claim.percent), seeds=test.n,
                    verdict=sweep_test(per_setting, claim.metric, claim.paper_best, claim.endpoint))
        scale = 100 if claim.percent else 1
        line["book_value"] = (f"best at {best} ({scale * means[best]:.2f}); best - {claim.endpoint}: "
                              f"{line['book_value']}")
        return line
    if claim.kind == "every":
        def differences(row: Hashable) -> np.ndarray:
            if claim.better is not None:  # better beats each candidate
                return record_differences(results[claim.better], results[row], claim.metric)
            return record_differences(results[row], results[claim.reference], claim.metric)

        tests = {row: paired_test(differences(row), claim.paper_effect) for row in claim.candidates}
        verdicts = [t.verdict for t in tests.values()]
        weakest = min(tests, key=lambda r: tests[r].mean)
        test = tests[weakest]
        line.update(format_test(test, claim.percent), seeds=test.n,
                    verdict="reproduced" if all(v == "reproduced" for v in verdicts)
                    else "opposite" if "opposite" in verdicts else "inconclusive")
        line["book_value"] = (f"{verdicts.count('reproduced')} of {len(verdicts)} reproduced; weakest "
                              f"{_label(weakest)}: {line['book_value']}")
        return line
    if claim.kind == "interaction":
        d = interaction_differences(claim.terms, results)
    else:
        d = record_differences(results[claim.better], results[claim.reference], claim.metric)
    test = paired_test(d, claim.paper_effect)
    line.update(format_test(test, claim.percent), verdict=test.verdict, seeds=test.n)
    return line


def claims_table(claims: Sequence[Claim], results: Mapping[Hashable, Sequence[dict]], paper: str,
                 notebook: str | None = None) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on ``{row: records}``, indexed by claim id."""
    notebooks = sorted({c.notebook for c in claims})
    if notebook is not None and notebook not in notebooks:
        raise ValueError(f"notebook must be one of {notebooks}, got {notebook!r}")
    lines = [judge(c, results, paper) for c in claims if notebook is None or c.notebook == notebook]
    return pd.DataFrame(lines, columns=SCORECARD_COLUMNS).set_index("id")


def judge_stored(claims: Sequence[Claim], stored: Callable[[Hashable], Sequence[dict] | None],
                 paper: str) -> list[dict[str, Any]]:
    """Every claim judged on the stored records ``stored(row)`` gives (``None``: not run); trains nothing."""
    rows = {row for c in claims for row in c.rows()}
    results = {row: records for row in rows if (records := stored(row)) is not None}
    return [judge(c, results, paper) for c in claims]
