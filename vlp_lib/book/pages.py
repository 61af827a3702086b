"""What the book's pages say about themselves: the chapters (which notebooks make which chapter) and the scale
note at the top of every page that reports numbers.

Cheap at import time (the standard library and the chapters' registrations): ``vlp_lib.book.build`` and the tests
read ``CHAPTERS`` without importing torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vlp_lib.papers import chapters as paper_chapters

SCORECARD = "scorecard"


def _book_chapters() -> dict[str, list[str]]:
    """The book's chapters as `make book CHAPTERS=...` names them, each with its notebooks (notebooks/<name>.ipynb)
    in reading order, which is execution order: the world and the baseline, every paper chapter registered in
    ``vlp_lib.papers`` (a paper chapter trains its own reference rows and needs no other chapter's runs), then the
    scorecard, which judges every chapter's claims from the results store and trains nothing."""
    book = {"world": ["world_tour"], "baseline": ["clip_baseline"]}
    book.update({c.name: list(c.notebooks) for c in paper_chapters()})
    book[SCORECARD] = [SCORECARD]
    return book


CHAPTERS: dict[str, list[str]] = _book_chapters()

# What a reader should make of a page's numbers at each scale.
SCALE_MEANING = {
    "smoke": (
        "Smoke scale trains for seconds on a few hundred pairs to test that the pipeline runs end to "
        "end: accuracies are near chance and verdicts meaningless. The book's results are built with "
        "`make book` (laptop scale)."
    ),
    "laptop": (
        "Models trained for minutes on a 2-core CPU (on the generated world unless the page names other data): "
        "read directions and per-seed differences, not absolute numbers against the papers'."
    ),
    "paper": "The papers' sizes (ProtoCLIP's Table I): a GPU and real data.",
}


def chapter_of(notebook: str) -> str:
    """The chapter (a key of ``CHAPTERS``) that notebook ``notebook`` (a stem: ``"scorecard"``) belongs to."""
    for chapter, notebooks in CHAPTERS.items():
        if notebook in notebooks:
            return chapter
    raise ValueError(f"notebook {notebook!r} is in no chapter of vlp_lib.book.pages.CHAPTERS")


def select_notebooks(names: Sequence[str] = (), scorecard: bool = True) -> list[str]:
    """The notebooks (stems, in book order) of the chapters or notebooks ``names``; every notebook when empty. With
    ``scorecard``, the scorecard is added whenever a paper chapter is selected (it judges that chapter's claims).
    ``ValueError`` naming an unknown name."""
    if not names:
        return [nb for notebooks in CHAPTERS.values() for nb in notebooks]
    known = {nb for notebooks in CHAPTERS.values() for nb in notebooks}
    wanted: list[str] = []
    for name in names:
        if name in CHAPTERS:
            wanted += CHAPTERS[name]
        elif name in known:
            wanted.append(name)
        else:
            raise ValueError(f"CHAPTERS: unknown chapter or notebook {name!r}; chapters: {', '.join(CHAPTERS)}")
    papers = {c.name for c in paper_chapters()}
    if scorecard and any(chapter_of(nb) in papers for nb in wanted):
        wanted.append(SCORECARD)
    return [nb for notebooks in CHAPTERS.values() for nb in notebooks if nb in wanted]


def scale_note_text(scale: str, seeds: Sequence[int] | None = None, *, results: bool = True, **sizes: Any) -> str:
    """The Markdown of ``scale_note``."""
    if scale not in SCALE_MEANING:
        raise ValueError(f"scale must be one of {sorted(SCALE_MEANING)}, got {scale!r}")
    facts = [f"scale `{scale}`"]
    if seeds is not None:
        seeds = list(seeds)
        facts.append(f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(str(s) for s in seeds)})")
    facts += [
        f"{name.replace('_', ' ')} {value:,}"
        if isinstance(value, int) and not isinstance(value, bool)
        else f"{name.replace('_', ' ')} {value}"
        for name, value in sizes.items()
        if value is not None
    ]
    stated = "; ".join(facts)
    stated = stated[0].upper() + stated[1:] + "."
    if not results:
        return f"> **{stated}**" + (" A small world for testing the pipeline." if scale == "smoke" else "")
    if scale == "smoke":
        return f"> **Smoke run: these numbers are not evidence.** {stated} {SCALE_MEANING[scale]}"
    return f"> **{stated}** {SCALE_MEANING[scale]}"


def scale_note(scale: str, seeds: Sequence[int] | None = None, *, results: bool = True, **sizes: Any):
    """A page's statement of the scale and seeds its numbers were made at, as ``IPython.display.Markdown``
    (the last expression of a code cell renders it). ``sizes`` (``training_pairs=20_480``) are listed after the
    seeds. At smoke scale it says plainly that the numbers are not evidence; ``results=False`` (a page that
    reports no results, such as the world tour) states the scale and sizes only."""
    from IPython.display import Markdown

    return Markdown(scale_note_text(scale, seeds, results=results, **sizes))
