"""Two training lengths on a page: the table, sentence and figure of the claims a chapter judges again with every run
they compare trained longer (``claims.with_longer``, ``claims.TREND_RULE``). The head to head and the real drawings
both show them; a chapter's folder never imports another's, so what both use is here. Presentation only: it reads the
claims' lines (their ``book_value``, ``interval``, ``verdict_fdr`` and ``verdict_longer``) and stores nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import pandas as pd

from vlp_lib.book import report
from vlp_lib.book.claims import Claim, claims_table


def longer_lines(
    claims: Sequence[Claim],
    results: Mapping[Any, Sequence[dict]],
    paper: str,
    longer: Callable[[Any], Hashable],
    ids: Sequence[str],
) -> pd.DataFrame:
    """The claims of ``ids`` among ``claims`` judged on their rows at the longer length (``longer(row)``) in
    ``results``: the lines whose verdict and value ``verdict_longer`` states (the same claims, pools and rules),
    indexed by claim id; what ``lengths_figure`` draws at the longer length."""
    return claims_table([c.mapped(longer) for c in claims if c.id in ids], results, paper)


def longer_parts(text: str, factor: float) -> tuple[str, str, str]:
    """A ``verdict_longer`` text ("at 4x: reproduced (+7.08 pp, 95% interval [+1.30, +12.85]); holds") as its
    verdict, its mean value ("+7.08 pp"; an equal-seconds one with its ratio to the reference's seconds: "+0.92 pp,
    0.98x the seconds") and its trend word; ``("", "", "")`` for an empty text."""
    if not text:
        return "", "", ""
    head, _, word = text.partition("; ")
    verdict, _, value = head.removeprefix(f"at {factor:g}x: ").partition(" (")
    value = value.split(", 95% interval")[0].removesuffix(")")
    if " (at " in value:  # an equal-seconds value's ratio: "+0.92 pp (at 0.98x ...)" as "+0.92 pp, 0.98x the seconds"
        value = value.replace(" (at ", ", ").removesuffix(")").replace(" the reference's seconds", " the seconds")
    return verdict, value, word


def lengths_table(
    claims: pd.DataFrame,
    ids: Sequence[str],
    factor: float,
    label_of: Callable[[str], str],
    label_column: str = "comparison",
) -> pd.DataFrame:
    """Per claim of ``ids`` (``claims``: the page's lines at 5% FDR, ``report.book_fdr``'s), labelled by
    ``label_of(id)`` in column ``label_column``: its value at the book's length with its interval, its verdict at 5%
    FDR (with its word judged alone where the two differ: the trend compares the words judged alone at both lengths),
    and its verdict, value and trend at ``factor`` times the training (``verdict_longer``)."""
    shown = [i for i in ids if i in claims.index]
    return pd.DataFrame(
        {
            label_column: [label_of(i) for i in shown],
            "at 1x: mean Δ per seed, 95% interval": [report.stated(claims.loc[i]) for i in shown],
            # the word judged alone beside it where they differ: the trend compares the two lengths' words judged alone
            "verdict at 5% FDR": [
                report.verdict_text(str(claims.loc[i, "verdict_fdr"]), str(claims.loc[i, "verdict"]))
                if "verdict" in claims.columns
                else claims.loc[i, "verdict_fdr"]
                for i in shown
            ],
            f"at {factor:g}x: verdict (value); trend": claims.loc[shown, "verdict_longer"],
        },
        index=pd.Index(shown, name="id"),
    )


def trend_summary(claims: pd.DataFrame, ids: Sequence[str], factor: float, label_of: Callable[[str], str]) -> str:
    """The claims of ``ids`` at ``factor`` times the training in one sentence: grouped by their verdict there (each
    labelled by ``label_of`` with its mean), then their trends (``claims.TREND_RULE``'s words) with how many claims
    read each ("reproduced: PyramidCLIP (+26.24 pp), ...; inconclusive: ...; trend: the reference learns only with
    more training (7)"); "not run at the longer length" where no claim has one."""
    verdicts: dict[str, list[str]] = {}
    trends: dict[str, int] = {}
    for i in ids:
        text = str(claims.loc[i, "verdict_longer"]) if i in claims.index else ""
        verdict, mean, word = longer_parts(text, factor)
        if not verdict:
            continue
        label = label_of(i)
        verdicts.setdefault(verdict, []).append(f"{label} ({mean})" if mean else label)
        trends[word or "no trend word"] = trends.get(word or "no trend word", 0) + 1
    if not verdicts:
        return "not run at the longer length"
    by_verdict = "; ".join(f"{v}: {', '.join(labels)}" for v, labels in verdicts.items())
    return by_verdict + "; trend: " + ", ".join(f"{word} ({n})" for word, n in trends.items())


def interval(line: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """A claim line's mean difference and 95% interval in pp (its ``book_value`` and ``interval`` texts, the numbers
    the tables print: the value's first number, the interval's two; an equal-seconds value's ratio in brackets is
    not read), or ``None`` without an interval."""
    mean = re.findall(r"[-+]?\d+\.\d+", str(line["book_value"]))[:1]
    bounds = re.findall(r"[-+]?\d+\.\d+", str(line["interval"]))[:2]
    return (float(mean[0]), float(bounds[0]), float(bounds[1])) if mean and len(bounds) == 2 else None


NOT_JUDGED = (report.FLOOR, report.UNEQUAL_SECONDS)  # drawn hollow: a comparison the rules withhold a verdict from


def lengths_figure(
    claims: pd.DataFrame,
    long_lines: pd.DataFrame,
    ids: Sequence[str],
    factor: float,
    label_of: Callable[[str], str],
    xlabel: str,
    title: str,
    path: Any = None,
    longer_label: str | None = None,
) -> Any:
    """Each claim of ``ids`` at the book's length and at ``factor`` times it (``longer_label``, default "4x the
    samples"): its mean and 95% interval (``claims``' lines at 1x, ``long_lines``' at the longer length: the intervals
    the verdicts read), hollow where the claim is not judged there (``NOT_JUDGED``: its reference has not learned, or
    its runs' seconds differ), the ±1 pp no-effect margin shaded, the legend beside the axes; saved with
    ``plots.save`` at ``path``."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    from vlp_lib.book import plots

    shown = [i for i in ids if i in claims.index]
    with mpl.rc_context(plots.STYLE):
        fig = Figure(figsize=(8.0, 0.55 * len(shown) + 1.6), layout="constrained")
        ax = fig.subplots()
        ax.axvspan(-100 * report.NO_EFFECT_MARGIN, 100 * report.NO_EFFECT_MARGIN, color="0.9", zorder=0)
        ax.axvline(0.0, color="0.4", lw=0.8)
        for color, (offset, lines, label, marker) in enumerate(
            (
                (-0.15, claims, "the book's length (1x)", "o"),
                (0.15, long_lines, longer_label or f"{factor:g}x the samples", "s"),
            )
        ):
            verdicts = lines["verdict"] if "verdict" in lines.columns else pd.Series(dtype=str)
            points = [
                (y, interval(lines.loc[i]), verdicts.get(i) not in NOT_JUDGED)
                for y, i in enumerate(shown)
                if i in lines.index
            ]
            for judged in (True, False):
                drawn = [(y, t) for y, t, is_judged in points if t is not None and is_judged == judged]
                if not drawn:
                    continue
                ax.errorbar(
                    [t[0] for _, t in drawn],
                    [y + offset for y, _ in drawn],
                    xerr=[[t[0] - t[1] for _, t in drawn], [t[2] - t[0] for _, t in drawn]],
                    fmt=marker,
                    color=f"C{color}",
                    markerfacecolor=None if judged else "none",
                    capsize=3,
                    label=label if judged else f"{label}, not judged",
                )
        ax.set_yticks(range(len(shown)), [label_of(i) for i in shown])
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if path is not None:
        plots.save(fig, path)
    return fig
