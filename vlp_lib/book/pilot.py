"""Seeds planned from a pilot, not topped up: every chapter's notebooks run once on pilot seeds that no verdict uses,
and each claim's seed count is planned from the spread the pilot measured (``report.VERDICT_RULE``'s power
calculation, pooled over the notebook's rows as the verdicts are), before the book's own seeds are judged.

    python -m vlp_lib.book.pilot run --scale laptop [chapters]   # the chapters' notebooks on PILOT_SEEDS
    python -m vlp_lib.book.pilot plan --scale laptop             # judge the pilot, write the seed plan

``run`` executes into ``<results>/pilot/<scale>/`` (the book's pages are untouched; the runs go to the results
store, keyed by their seeds like any other). ``plan`` writes ``<results>/seed_plan_<scale>.csv``: per claim the
pilot's seeds, the seeds a verdict would need for 80% power at the paper's effect (or the 1 pp margin, or the
claim's margin), and whether that is within ``report.SEED_BUDGET``; the scorecard shows it beside each claim
("needs about N seeds (pilot)") when the file exists. The pilot's numbers never enter a verdict: pilot and
verdict seeds are disjoint (``check_disjoint``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from vlp_lib.book import report
from vlp_lib.book.build import execute
from vlp_lib.book.pages import CHAPTERS, SCORECARD
from vlp_lib.config import scale_defaults
from vlp_lib.papers import chapters
from vlp_lib.paths import results_dir

PILOT_SEEDS = (100, 101)  # two seeds per row: pooled over a notebook's R rows, R - 1 degrees of freedom
PLAN_COLUMNS = ["id", "paper", "pilot_seeds", "pilot_df", "planned_seeds", "within_budget"]


def plan_path(scale: str) -> Path:
    """Where the seed plan of ``scale`` is kept: beside the runs it was planned from."""
    return results_dir() / f"seed_plan_{scale}.csv"


def check_disjoint(scale: str) -> None:
    """``ValueError`` when a chapter judges its verdicts on a pilot seed (a pilot seed would then decide a verdict)."""
    for chapter in chapters():
        shared = set(chapter.seeds(scale)) & set(PILOT_SEEDS)
        if shared:
            raise ValueError(f"chapter {chapter.name} judges on pilot seeds {sorted(shared)} at scale {scale}")


def run(scale: str, names: Sequence[str] = ()) -> float:
    """Execute the paper chapters' notebooks (``names``: chapters, all by default) on ``PILOT_SEEDS``; returns the
    seconds taken."""
    scale_defaults(scale)
    check_disjoint(scale)
    papers = [c.name for c in chapters()]
    unknown = [n for n in names if n not in papers]
    if unknown:
        raise ValueError(f"pilot chapters must be among {papers}, got {unknown}")
    notebooks = [nb for name in (names or papers) for nb in CHAPTERS[name] if nb != SCORECARD]
    seeds = "[" + ", ".join(map(str, PILOT_SEEDS)) + "]"
    return execute(notebooks, scale, executed_dir=results_dir() / "pilot" / scale, parameters={"seeds": seeds})


def _number(text: str) -> float:
    """The seed count in a scorecard's ``seeds_needed`` text ("4", ">1000", "needs about 87"); ``nan`` if none."""
    words = str(text).replace("needs about", "").strip()
    if words.startswith((">", "needs more than")):
        return float("inf")
    return float(words) if words.isdigit() else float("nan")


def plan(scale: str) -> pd.DataFrame:
    """Every claim judged on the pilot's stored runs (``PLAN_COLUMNS``): the pilot's seeds and degrees of freedom,
    the seeds planned for 80% power, and whether they fit ``report.SEED_BUDGET``; trains nothing."""
    scale_defaults(scale)
    lines = [line for chapter in chapters() for line in chapter.claims(scale, list(PILOT_SEEDS))]
    card = pd.DataFrame(lines, columns=report.SCORECARD_COLUMNS)
    planned = card["seeds_needed"].map(_number)
    return pd.DataFrame(
        {
            "id": card["id"],
            "paper": card["paper"],
            "pilot_seeds": card["seeds"],
            "pilot_df": card["df"],
            "planned_seeds": planned,
            "within_budget": np.where(planned.isna(), "", np.where(planned <= report.SEED_BUDGET, "yes", "no")),
        },
        columns=PLAN_COLUMNS,
    )


def stored_plan(scale: str) -> pd.DataFrame | None:
    """The seed plan written by ``plan`` for ``scale``, or ``None`` before any pilot."""
    path = plan_path(scale)
    return pd.read_csv(path) if path.exists() else None


def with_plan(card: pd.DataFrame, scale: str) -> pd.DataFrame:
    """``card`` (a scorecard) with the column ``pilot_plan``: each claim's seeds planned from the pilot ("4",
    "needs about 87 (over the budget of 10)"), "" where no pilot was run or it planned nothing."""
    table = stored_plan(scale)
    card = card.copy()
    if table is None:
        card["pilot_plan"] = ""
        return card
    planned = dict(zip(table["id"], table["planned_seeds"]))

    def text(claim_id: str) -> str:
        n = float(planned.get(claim_id, float("nan")))
        if np.isnan(n):
            return ""
        shown = f">{report.MAX_SEEDS}" if np.isinf(n) else str(int(n))
        return shown if n <= report.SEED_BUDGET else f"needs about {shown} (over the budget of {report.SEED_BUDGET})"

    card["pilot_plan"] = card["id"].map(text)
    return card


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.book.pilot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help=f"execute the chapters' notebooks on the pilot seeds {list(PILOT_SEEDS)}")
    p.add_argument("names", nargs="*", help="paper chapters; none: all")
    p.add_argument("--scale", default="laptop")
    p = sub.add_parser("plan", help="judge the pilot and write the seed plan next to the results")
    p.add_argument("--scale", default="laptop")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            run(args.scale, args.names)
        else:
            table = plan(args.scale)
            table.to_csv(plan_path(args.scale), index=False)
            print(table.to_string(index=False))
            print(f"written: {plan_path(args.scale)}")
    except ValueError as err:
        parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
