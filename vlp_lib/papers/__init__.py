"""The papers: one folder per paper (``vlp_lib/papers/<name>/``) holding everything only that paper uses.

A paper's folder has two sides:

- the computing side: its method (``method.py``, registered by name), its loss (``loss.py``) and its paper-only
  modules (a detector, a world-LM, prototypes ...). Its stored results are stamped with the fingerprint of the
  core plus this side (``vlp_lib.runs.code_fingerprint(paper)``), so editing one paper re-makes that paper's runs
  and no other's;
- the book side, ``book/``: run tables, claims as data (``vlp_lib.book.claims``), ablation plans and the paper's
  own numbers. It plans runs (a run's config is its key in the results store) and presents them; it computes no
  stored number, so it is outside every fingerprint.

Each paper's ``__init__`` registers a ``Chapter`` (cheaply: no torch, no submodule imports), so the core's method
registry (``vlp_lib.methods``), the book's build, its pages and the scorecard find every paper without naming
any: ``chapters()`` imports each subpackage of this folder once. A paper depends on the core, never on another
paper. Adding a sixth paper is adding a folder (README: "A sixth paper").
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any

_REGISTRY: dict[str, Chapter] = {}


@dataclass(frozen=True)
class Chapter:
    """A paper's chapter.

    ``name``: the paper's folder, and how ``make book CHAPTERS=<name>`` calls it; ``paper``: the scorecard's paper
    column; ``notebooks``:
    its notebooks (``notebooks/<stem>.ipynb``) in reading order, which is also execution order (a later notebook
    reuses the runs an earlier one stored); ``module``: the chapter's module (imported only when judged), which
    provides ``claims(scale)`` (scorecard lines, ``vlp_lib.book.report.SCORECARD_COLUMNS``), ``CLAIMS`` and
    ``claim_configs(claim, scale, seed)`` (the run configs of the rows a claim reads: ``vlp_lib.book.audit``), ``resolve_seeds(scale,
    None)`` (the seeds its claims are judged on) and ``RULES`` (its verdict rules beyond the shared
    ``report.VERDICT_RULE``); ``methods``: the names of the methods its ``method`` module defines (the core's
    registry imports that module when a run asks for one of them); ``order``: its place in the book; ``reads``: the
    other papers whose stored runs its pages read (their fingerprints decide whether its released pages are current);
    ``measurements``: the record kinds it stores that measure the machine rather than result from the code (the head to
    head's equal-seconds calibration): a re-make (``release verify``) takes them from the release instead of measuring
    them again, so that it re-makes the runs they chose, and the module's ``remeasured(scale)`` says how far a new
    measurement drifted."""

    name: str
    paper: str
    notebooks: tuple[str, ...]
    module: str
    methods: tuple[str, ...] = ()
    order: int = 100
    reads: tuple[str, ...] = ()
    measurements: tuple[str, ...] = ()

    def _module(self) -> Any:
        return importlib.import_module(self.module)

    def claims(self, scale: str = "laptop", seeds: Any = None) -> list[dict[str, Any]]:
        """Every claim of the chapter judged on the results store at ``scale`` (trains nothing), on its seeds or
        on ``seeds`` (a pilot's)."""
        return self._module().claims(scale) if seeds is None else self._module().claims(scale, seeds)

    def seeds(self, scale: str = "laptop") -> list[int]:
        """The seeds the chapter's claims are judged on at ``scale``."""
        return list(self._module().resolve_seeds(scale, None))

    def remeasured(self, scale: str = "laptop") -> str:
        """The chapter's report of its ``measurements`` measured again by the store's runs ("" without any)."""
        report = getattr(self._module(), "remeasured", None)
        return report(scale) if self.measurements and report is not None else ""

    def headline_note(self, lines: Any) -> str:
        """The chapter's own sentence for its opening page's headline (``vlp_lib.book.findings.headline``) from its
        scorecard lines ``lines`` (a frame with ``id`` and ``verdict_fdr``): the module's ``headline_note`` where it
        has one (PyramidCLIP: which decided claims hold without its trained detector), else ""."""
        note = getattr(self._module(), "headline_note", None)
        return str(note(lines)) if note is not None else ""

    def primary(self) -> str | None:
        """The id of the chapter's primary claim (its module's ``PRIMARY``: the paper's headline result as its
        abstract states it), ``None`` for a chapter of the book's own (the head to head, the real drawings)."""
        return getattr(self._module(), "PRIMARY", None)

    def rules(self) -> list[str]:
        """The chapter's own verdict rules (timing claims, "matches in less time" ...), as sentences."""
        return list(getattr(self._module(), "RULES", []))

    def claim_list(self) -> list[Any]:
        """Every claim of the chapter (its module's ``CLAIMS``: ``vlp_lib.book.claims.Claim``)."""
        return list(self._module().CLAIMS)

    def resolved_claim(self, claim: Any, scale: str = "laptop") -> Any:
        """``claim`` with its rows as its runs are planned at ``scale`` (the module's ``resolved_claim`` where a
        claim's rows are resolved by a plan, as ProtoCLIP's Fig. 6 bars; else the claim as it is)."""
        resolve = getattr(self._module(), "resolved_claim", None)
        return claim if resolve is None else resolve(claim, scale)

    def claim_configs(self, claim: Any, scale: str = "laptop", seed: int = 0) -> dict[Any, Any]:
        """The run config of each row ``claim`` reads that is one run of ``seed`` at ``scale`` (the module's
        ``claim_configs``; a row trained once for every seed, a teacher, has none): configs only, nothing trained
        (``vlp_lib.book.audit``)."""
        return dict(self._module().claim_configs(claim, scale, seed))


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
        methods = set(existing.methods) & set(chapter.methods)
        if existing.name != chapter.name and methods:
            raise ValueError(f"methods {sorted(methods)} belong to papers {existing.name!r} and {chapter.name!r}")
    _REGISTRY[chapter.name] = chapter
    return chapter


def chapters() -> list[Chapter]:
    """Every paper chapter, in book order (imports each subpackage of ``vlp_lib.papers`` once)."""
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")
    return sorted(_REGISTRY.values(), key=lambda c: (c.order, c.name))


def paper_of_method(method: str) -> str | None:
    """The paper (folder name) that defines ``method``, or ``None`` when no paper does (a core method: CLIP)."""
    for chapter in chapters():
        if method in chapter.methods:
            return chapter.name
    return None
