"""The book's paper chapters: one folder per paper (``vlp_lib/chapters/<name>/``) with what the book needs of it,
its run tables, its claims as data, its ablation plans and the paper's own numbers.

Each chapter's ``__init__`` registers a ``Chapter`` (cheaply: no torch, no submodule imports), so the book's
build, its pages and the scorecard find every chapter without naming any: ``chapters()`` imports each subpackage
of this folder once. A chapter's claims are loaded only when judged (``Chapter.claims``).

Everything under ``vlp_lib/chapters/`` is book-side: it plans runs (a run's config is its key in the results
store) and presents them, so it is outside the code fingerprint (``vlp_lib.runs.code_fingerprint``).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any

_REGISTRY: dict[str, "Chapter"] = {}


@dataclass(frozen=True)
class Chapter:
    """A paper's chapter.

    ``name``: how ``make book CHAPTERS=<name>`` calls it; ``paper``: the scorecard's paper column; ``notebooks``:
    its notebooks (``notebooks/<stem>.ipynb``) in reading order, which is also execution order (a later notebook
    reuses the runs an earlier one stored); ``module``: the chapter's module (imported only when judged), which
    provides ``claims(scale)`` (scorecard lines, ``vlp_lib.book.report.SCORECARD_COLUMNS``), ``resolve_seeds(scale,
    None)`` (the seeds its claims are judged on) and ``RULES`` (its verdict rules beyond the shared
    ``report.VERDICT_RULE``); ``order``: its place in the book."""

    name: str
    paper: str
    notebooks: tuple[str, ...]
    module: str
    order: int = 100

    def _module(self) -> Any:
        return importlib.import_module(self.module)

    def claims(self, scale: str = "laptop") -> list[dict[str, Any]]:
        """Every claim of the chapter judged on the results store at ``scale`` (trains nothing)."""
        return self._module().claims(scale)

    def seeds(self, scale: str = "laptop") -> list[int]:
        """The seeds the chapter's claims are judged on at ``scale``."""
        return list(self._module().resolve_seeds(scale, None))

    def rules(self) -> list[str]:
        """The chapter's own verdict rules (timing claims, "matches in less time" ...), as sentences."""
        return list(getattr(self._module(), "RULES", []))


def register(chapter: Chapter) -> Chapter:
    """Add ``chapter`` to the registry (called by each chapter's ``__init__``); ``ValueError`` on a second chapter
    of the same name or a notebook claimed by two chapters."""
    other = _REGISTRY.get(chapter.name)
    if other is not None and other != chapter:
        raise ValueError(f"chapter {chapter.name!r} is registered twice")
    for existing in _REGISTRY.values():
        shared = set(existing.notebooks) & set(chapter.notebooks)
        if existing.name != chapter.name and shared:
            raise ValueError(f"notebooks {sorted(shared)} belong to chapters {existing.name!r} and {chapter.name!r}")
    _REGISTRY[chapter.name] = chapter
    return chapter


def chapters() -> list[Chapter]:
    """Every paper chapter, in book order (imports each subpackage of ``vlp_lib.chapters`` once)."""
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")
    return sorted(_REGISTRY.values(), key=lambda c: (c.order, c.name))
