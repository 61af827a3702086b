"""Planning helpers every chapter shares (book-side: outside the code fingerprint, as all of ``vlp_lib.chapters``)."""

from __future__ import annotations

from typing import Any, Sequence

from ..config import as_list, scale_defaults


def seeds_parameter(scale: str, seeds: Any, default: Sequence[int]) -> list[int]:
    """A notebook's ``seeds`` parameter: ``None`` is ``default`` (the chapter's seeds at ``scale``); otherwise a
    non-empty list of distinct ints >= 0. ``ValueError`` naming ``scale`` or ``seeds`` before any compute."""
    scale_defaults(scale)
    if seeds is None:
        return list(default)
    seeds = as_list("seeds", seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must not repeat, got {seeds!r}")
    return seeds
