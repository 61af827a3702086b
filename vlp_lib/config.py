"""Scales: one dictionary per scale, so a notebook's ``scale`` parameter picks every size at once.

Explicit notebook parameters win over these defaults (``resolve`` merges them). All checks raise
``ValueError`` naming the parameter before any data is generated or any model is built.
"""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

SCALES: dict[str, dict[str, Any]] = {
    # tests and CI: every notebook in well under a minute on 2 cores (tests the pipeline; the numbers mean nothing)
    "smoke": dict(
        model="rn-tiny",
        image_size=32,
        train_size=512,
        epochs=1,
        batch_size=64,
        lr=1e-3,
        warmup_steps=2,
        task_train=200,
        task_test=100,
        retrieval_images=50,
        tsne_points=100,
    ),
    # the default: the whole book executes in about 150 minutes on a 2-core CPU (the set-up page's build times)
    "laptop": dict(
        # the laptop recipe (benchmarks/bench_recipe.py): the fastest learner per CPU-second on 2 cores
        model="rn-tiny",
        image_size=32,
        train_size=40_960,
        epochs=8,
        batch_size=128,
        lr=2e-3,
        warmup_steps=128,  # 5% of the 2,560 steps
        task_train=5_000,
        task_test=2_000,
        retrieval_images=1_000,
        tsne_points=2_000,
    ),
    # the papers' setting (ProtoCLIP Table I): a GPU and real data
    "paper": dict(
        model="RN50",
        image_size=224,
        train_size=2_500_000,
        epochs=32,
        batch_size=512,
        lr=5e-4,
        warmup_steps=2_000,
        task_train=50_000,
        task_test=10_000,
        retrieval_images=5_000,
        tsne_points=8_000,
    ),
}


def scale_defaults(scale: str) -> dict[str, Any]:
    """The default parameters of ``scale``; ``ValueError`` naming ``scale`` if it is unknown."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {scale!r}")
    return dict(SCALES[scale])


def resolve(scale: str, **overrides: Any) -> dict[str, Any]:
    """Scale defaults with the explicit (non-``None``) ``overrides`` on top."""
    params = scale_defaults(scale)
    params.update({k: v for k, v in overrides.items() if v is not None})
    return params


def check_positive_int(name: str, value: Any) -> int:
    """``value`` as an int > 0, else ``ValueError`` naming ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int,))
        and not (isinstance(value, float) and value.is_integer())
    ):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if int(value) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_nonnegative_int(name: str, value: Any) -> int:
    """``value`` as an int >= 0 (a seed; numpy's integers count, a bool or a float does not), else ``ValueError``
    naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, low: float | None = None, low_open: bool = False) -> float:
    """``value`` as a finite float (at least ``low``, or above it with ``low_open``), else ``ValueError`` naming
    ``name``; numpy's numbers count, a bool or a string is not a number."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool (numpy's included), else ``ValueError`` naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def as_list(name: str, value: Any) -> list[Any]:
    """A list-valued notebook parameter from what papermill passes: a list, one scalar (``-p seeds 3``), or a
    string (``-p seeds "[0, 1]"`` or ``-p sweeps episode_size,external_teacher``; papermill's ``-p`` does not
    parse lists, its ``-y`` does). Numeric items of a string become ints. ``ValueError`` naming ``name``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("[", "(")):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError) as err:
                raise ValueError(f"{name}: cannot read {value!r} as a list") from err
        else:
            value = [int(v) if v.strip().lstrip("-").isdigit() else v.strip() for v in text.split(",") if v.strip()]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list, got {value!r}")
    return list(value)
