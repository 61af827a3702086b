"""The frozen-model cache: what the book builds once and keeps on disk, keyed by a config and the code.

Frozen components trained by the book itself (PyramidCLIP's crop detector, ICMLM's world-LM, DIME-FM's teacher
features, external teachers' caption features) go through ``frozen_model`` / ``frozen_arrays``: each is built once
and stored under ``cache_dir() / "frozen" / <name>``, keyed by the hash of its config plus the code fingerprint of
whose code builds it (``runs.code_fingerprint(paper)``: the core's, or the core's plus one paper's), so editing that
code rebuilds it, as it recomputes a run, and editing another paper does not. Every cache file here is written
atomically (temporary file + ``os.replace``) under a per-file ``filelock.FileLock``: two notebooks asking at once
compute it once, the second one waits and loads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from filelock import FileLock
from torch import nn

from vlp_lib.paths import cache_dir
from vlp_lib.runs import code_fingerprint, config_hash

T = TypeVar("T")


def content_key(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
    return h.hexdigest()[:20]


def locked_file(path: Path, compute: Callable[[], T], write: Callable[[Any, T], None], read: Callable[[Path], T]) -> T:
    """``read(path)`` if the file exists, else ``compute()`` once, written atomically under a file lock.

    A second process asking for the same ``path`` meanwhile waits on the lock, then reads what the first wrote.
    ``write(file, value)`` writes to an open binary file (the temporary one).
    """
    if path.exists():
        return read(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if path.exists():  # another process finished it while we waited
            return read(path)
        value = compute()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                write(f, value)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return value


def _cached(path: Path, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """One float32 array at ``path`` (``.npy``), computed once (``_locked_file``)."""
    return locked_file(path, lambda: np.asarray(compute(), np.float32), np.save, np.load)


def cached_array(path: Path, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """One float32 array at ``path`` (``.npy``), computed once (``locked_file``)."""
    return locked_file(path, lambda: np.asarray(compute(), np.float32), np.save, np.load)


FROZEN_DIR = "frozen"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_META_KEY = "__meta__"
_STATE_PREFIX = "state:"


def _check_frozen_request(name: Any, config: Any) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"name must be a non-empty string of letters, digits, '_', '.', '-', got {name!r}")
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    try:
        json.dumps(config, sort_keys=True)
    except (TypeError, ValueError) as err:
        raise ValueError(f"config must be JSON-able (it is the cache key): {err}") from None


def frozen_path(name: str, config: Mapping[str, Any], paper: str | None = None) -> Path:
    """Where the frozen component ``name`` built from ``config`` by the code of ``paper`` (``None``: the core) is
    stored: ``cache_dir()/frozen/<name>/<config hash>-<code fingerprint>.npz``."""
    _check_frozen_request(name, config)
    return cache_dir() / FROZEN_DIR / name / f"{config_hash(dict(config))}-{code_fingerprint(paper)}.npz"


def _split_payload(payload: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays (numpy or torch) apart from everything else, which must be JSON-able (it is stored as JSON)."""
    if not isinstance(payload, Mapping):
        raise ValueError(f"build must return a dict, got {type(payload).__name__}")
    arrays, meta = {}, {}
    for key, value in payload.items():
        if not isinstance(key, str) or not key or key == _META_KEY:
            raise ValueError(f"build returned a bad key {key!r}: keys are non-empty strings other than {_META_KEY!r}")
        if isinstance(value, torch.Tensor):
            arrays[key] = value.detach().cpu().numpy()
        elif isinstance(value, np.ndarray):
            if value.dtype == object:
                raise ValueError(f"build returned an object array under {key!r}: arrays must be numeric or bool")
            arrays[key] = value
        else:
            meta[key] = value
    try:
        meta = json.loads(json.dumps(meta))  # the stored form (tuples become lists) on first call and later ones
    except (TypeError, ValueError) as err:
        raise ValueError(f"build returned a value that is neither an array nor JSON-able: {err}") from None
    return arrays, meta


def _write_payload(f: Any, payload: tuple[dict[str, np.ndarray], dict[str, Any]]) -> None:
    arrays, meta = payload
    # typed Any: numpy's stub would match the arrays against savez's allow_pickle keyword (no key is _META_KEY)
    stored: dict[str, Any] = {**arrays, _META_KEY: np.array(json.dumps(meta))}
    np.savez(f, **stored)


def _read_payload(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != _META_KEY}
        meta = json.loads(str(z[_META_KEY]))
    return arrays, meta


def frozen_arrays(
    name: str,
    config: Mapping[str, Any],
    build: Callable[[], Mapping[str, Any]],
    verbose: bool = True,
    paper: str | None = None,
) -> dict[str, Any]:
    """A frozen component stored as arrays, built once per ``(name, config, code)`` and cached.

    ``build()`` returns a dict: numpy arrays and torch tensors are stored as arrays (tensors come back as
    numpy arrays), every other value must be JSON-able (numbers, strings, lists, dicts: metrics, timings).
    The first call computes and stores it; later calls, in this process or another, load it. Two processes
    asking at once compute it once (file lock). The key is ``runs.config_hash(config)`` plus
    ``runs.code_fingerprint(paper)``: a change to the core, or to the paper ``paper`` whose code builds it (pass
    ``runs.paper_of_module(__name__)``), rebuilds it.

    Returns the stored dict (the same on the first and every later call).

    Raises:
        ValueError naming ``name`` or ``config`` if they cannot key a cache, before ``build`` runs.
    """
    if not callable(build):
        raise ValueError(f"build must be callable, got {build!r}")
    path = frozen_path(name, config, paper)

    def compute() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        if verbose:
            print(f"[frozen] building {name}/{path.stem} once (cached for later calls)", flush=True)
        return _split_payload(build())

    arrays, meta = locked_file(path, compute, _write_payload, _read_payload)
    return {**arrays, **meta}


def frozen_model(
    name: str,
    config: Mapping[str, Any],
    architecture: Callable[[], nn.Module],
    train: Callable[[nn.Module], Mapping[str, Any] | None],
    verbose: bool = True,
    paper: str | None = None,
) -> tuple[nn.Module, dict[str, Any]]:
    """A frozen ``nn.Module`` trained once by the book and cached (PyramidCLIP's detector, ICMLM's world-LM...).

    ``architecture()`` makes the untrained module (it should seed its own initialisation);
    ``train(module)`` trains it in place (seeding what it draws) and returns JSON-able information to keep with
    it (accuracy, seconds), or ``None``. Both run under ``torch.random.fork_rng``: the caller's torch random
    state is the same after a call that trains and after one that loads. On the first
    call the trained ``state_dict`` and that information are stored by ``frozen_arrays``; later calls rebuild
    ``architecture()`` and load the stored weights without training.

    Returns:
        ``(module, info)``: the module in eval mode with ``requires_grad`` off, and the stored information.

    Raises:
        ValueError naming ``name``, ``config``, ``architecture`` or ``train`` before anything is trained.
    """
    for arg, fn in (("architecture", architecture), ("train", train)):
        if not callable(fn):
            raise ValueError(f"{arg} must be callable, got {fn!r}")

    def make() -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            module = architecture()
        if not isinstance(module, nn.Module):
            raise ValueError(f"architecture must return an nn.Module, got {type(module).__name__}")
        return module

    def build() -> dict[str, Any]:
        module = make()
        start = time.perf_counter()
        with torch.random.fork_rng(devices=[]):  # built or loaded, the caller's random state ends the same
            info = dict(train(module) or {})
        info.setdefault("build_seconds", round(time.perf_counter() - start, 3))
        state = {f"{_STATE_PREFIX}{k}": v for k, v in module.state_dict().items()}
        return {**state, "info": info}

    stored = frozen_arrays(name, config, build, verbose=verbose, paper=paper)
    module = make()
    module.load_state_dict(
        {
            k[len(_STATE_PREFIX) :]: torch.from_numpy(np.array(v))
            for k, v in stored.items()
            if k.startswith(_STATE_PREFIX)
        }
    )
    module.eval().requires_grad_(False)
    return module, stored["info"]
