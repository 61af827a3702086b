"""Knobs of the world: their defaults and validation (``check_knobs``), and the seed check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlp_lib.config import check_nonnegative_int
from vlp_lib.data import vocab

# Knob defaults imitate web alt-text; see ``generate`` for their meaning.
DEFAULT_KNOBS: dict[str, Any] = dict(
    min_objects=1,
    max_objects=3,
    shapes=None,
    colours=None,
    backgrounds=None,
    held_out_shapes=(),
    mismatch_rate=0.1,
    omit_rate=0.5,
    junk_rate=0.3,
    paraphrase=True,
    synonym_rate=0.5,
    clutter=0.0,
)
_RATES = ("mismatch_rate", "omit_rate", "junk_rate", "synonym_rate", "clutter")


def _check_rate(name: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not 0.0 <= float(value) <= 1.0
    ):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_names(name: str, value: Any, allowed: Sequence[str], default: Sequence[str]) -> list[str]:
    """A subset of ``allowed`` in canonical order; ``None`` means ``default``."""
    if value is None:
        return list(default)
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError(f"{name} must be a list of names, got {value!r}")
    unknown = [v for v in value if v not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown names {unknown}; known: {list(allowed)}")
    return [a for a in allowed if a in set(value)]


def check_knobs(**knobs: Any) -> dict[str, Any]:
    """The effective knobs (defaults filled in, names in canonical order); ``ValueError`` naming a bad one."""
    unknown = sorted(set(knobs) - set(DEFAULT_KNOBS))
    if unknown:
        raise ValueError(f"unknown knob(s) {unknown}; known: {sorted(DEFAULT_KNOBS)}")
    k = {**DEFAULT_KNOBS, **knobs}
    out: dict[str, Any] = {}
    for name in ("min_objects", "max_objects"):
        v = k[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 3:
            raise ValueError(f"{name} must be an integer in 1..3, got {v!r}")
        out[name] = int(v)
    if out["min_objects"] > out["max_objects"]:
        raise ValueError(f"min_objects ({out['min_objects']}) must be <= max_objects ({out['max_objects']})")
    held = _check_names("held_out_shapes", k["held_out_shapes"], vocab.SHAPES, [])
    shapes = _check_names("shapes", k["shapes"], vocab.SHAPES, vocab.SHAPES)
    out["shapes"] = [s for s in shapes if s not in held]
    if not out["shapes"]:
        raise ValueError("shapes: no shape left to draw once held_out_shapes are removed")
    out["held_out_shapes"] = held
    out["colours"] = _check_names("colours", k["colours"], vocab.COLOURS, vocab.COLOURS)
    out["backgrounds"] = _check_names("backgrounds", k["backgrounds"], vocab.BACKGROUNDS, vocab.BACKGROUNDS)
    for name in ("colours", "backgrounds"):
        if not out[name]:
            raise ValueError(f"{name} must not be empty")
    for name in _RATES:
        out[name] = _check_rate(name, k[name])
    if not isinstance(k["paraphrase"], (bool, np.bool_)):
        raise ValueError(f"paraphrase must be a bool, got {k['paraphrase']!r}")
    out["paraphrase"] = bool(k["paraphrase"])
    return out


def _check_seed(seed: Any) -> int:
    return check_nonnegative_int("seed", seed)
