"""Where the library keeps things on disk (all overridable by environment variables)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_PREFIX = "data:"  # a path inside data_dir(), the same on every machine (run keys stay machine-independent)


def cache_dir() -> Path:
    """Generated worlds, teacher embeddings: recomputable, large. ``VLP_CACHE_DIR`` overrides."""
    path = Path(os.environ.get("VLP_CACHE_DIR", REPO_ROOT / ".cache"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """Data sets the book builds from installed packages (Open Clip Art's renders): made once, kept across caches
    and scratch stores. ``VLP_DATA_DIR`` overrides."""
    path = Path(os.environ.get("VLP_DATA_DIR", REPO_ROOT / "data"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve_data(spec: str) -> str:
    """``spec`` as a path on this machine: ``"data:<relative path>"`` is ``data_dir() / <relative path>`` (how the
    book names the data sets it builds, so that a run's key does not depend on where a clone or ``VLP_DATA_DIR``
    lives); any other string is returned unchanged."""
    if not spec.startswith(DATA_PREFIX):
        return spec
    return str(data_dir() / spec[len(DATA_PREFIX) :].lstrip("/"))


def results_dir() -> Path:
    """The results store (one JSON record per run). ``VLP_RESULTS_DIR`` overrides."""
    path = Path(os.environ.get("VLP_RESULTS_DIR", REPO_ROOT / "results"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def checkpoint_dir() -> Path:
    """Training checkpoints for resume. ``VLP_CHECKPOINT_DIR`` overrides."""
    path = Path(os.environ.get("VLP_CHECKPOINT_DIR", REPO_ROOT / "checkpoints"))
    path.mkdir(parents=True, exist_ok=True)
    return path
