"""Planning helpers every chapter shares (book-side: outside the code fingerprint, as all of ``vlp_lib.papers``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar, cast

from vlp_lib import experiment
from vlp_lib.config import as_list, scale_defaults
from vlp_lib.run_config import RunConfig

R = TypeVar("R", bound=Hashable)
ConfigFn = Callable[[Any, str, int], RunConfig]  # (row, scale, seed) -> a validated run config


def seeds_parameter(scale: str, seeds: Any, default: Sequence[int], name: str = "seeds") -> list[int]:
    """A notebook's seeds parameter (``name``): ``None`` is ``default`` (the chapter's seeds at ``scale``);
    otherwise a non-empty list of distinct ints >= 0. ``ValueError`` naming ``scale`` or ``name`` before any
    compute."""
    scale_defaults(scale)
    if seeds is None:
        return list(default)
    seeds = as_list(name, seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"{name} must be a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{name} must not repeat, got {seeds!r}")
    return seeds


def run_rows(
    rows: Sequence[R], config: ConfigFn, scale: str, seeds: Sequence[int], progress: bool = True
) -> dict[R, list[dict]]:
    """Every row for every seed: ``{row: [record per seed]}``. Every config is built (and so validated) before
    anything is computed; stored runs are loaded, not retrained (``experiment.run``)."""
    configs = {row: [config(row, scale, s) for s in seeds] for row in rows}
    return {row: [experiment.run(c, progress=progress) for c in cs] for row, cs in configs.items()}


def stored(row: Any, config: ConfigFn, scale: str, seeds: Sequence[int]) -> list[dict] | None:
    """The stored records of ``row`` for every seed, or ``None`` if any is missing (or stale: another code
    fingerprint)."""
    records = [experiment.stored(config(row, scale, s)) for s in seeds]
    return None if any(r is None for r in records) else cast(list[dict], records)


def row_configs(rows: Sequence[Any], config: ConfigFn, scale: str, seed: int, row_type: type) -> dict[Any, RunConfig]:
    """``{row: config(row, scale, seed)}`` for those of ``rows`` that are ``row_type`` rows (a chapter's runs; a
    claim's other rows, such as a teacher trained once for every seed, have none): what a chapter's
    ``claim_configs`` gives the config audit (``vlp_lib.book.audit``)."""
    return {row: config(row, scale, seed) for row in rows if isinstance(row, row_type)}


def untrained_references(
    claims: Sequence[Any], rows: Sequence[Any], config: ConfigFn, scale: str, seeds: Sequence[int]
) -> dict[Any, list[dict]]:
    """The network of each of ``rows`` that is a reference of one of ``claims`` (``Claim.pairs``), evaluated
    untrained for every seed (``experiment.untrained``: the same config, before any step; stored, so computed once):
    what ``claims.reference_learning`` reads, and a page's gain over the untrained network."""
    references = {reference for claim in claims for _, reference in claim.pairs()}
    return {
        row: [experiment.untrained(config(row, scale, s), verbose=False) for s in seeds]
        for row in rows
        if row in references
    }
