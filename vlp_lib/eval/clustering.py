"""K-Means clustering of features scored by ARI / AMI (ProtoCLIP Sec. IV-G3, Table XII) and the modality gap of
Liang et al. 2022 (ProtoCLIP Sec. I).
"""

from __future__ import annotations

import numpy as np
import torch.nn.functional as F
from sklearn.metrics import (
    adjusted_mutual_info_score,
    adjusted_rand_score,
)

from vlp_lib.cluster import kmeans
from vlp_lib.eval.common import ArrayLike, _check_dim, _check_len, _feats, _labels


def clustering_scores(
    feats: ArrayLike, labels: ArrayLike, seed: int = 0, niter: int = 20, nredo: int = 3
) -> dict[str, float]:
    """ARI and AMI of K-Means pseudo labels against ground truth (ProtoCLIP Table XII).

    K = number of distinct labels (Sec. IV-G3: "the number of clusters is determined by the number of ground
    truth classes"). The features are L2-normalised first: the models compare representations by cosine
    similarity, and ProtoCLIP clusters normalised representations.

    K-Means is ``vlp_lib.cluster.kmeans``: faiss's Lloyd iterations (``niter`` = 20, as ProtoCLIP's
    prototype K-Means, Sec. IV-D) from k-means++ seeds, the best of ``nredo`` restarts. faiss's own random
    seeding often merges two classes into one cluster and splits another (ARI ~0.85 on perfectly separated
    blobs). Scores by scikit-learn's ``adjusted_rand_score`` and ``adjusted_mutual_info_score``;
    deterministic given ``seed``.
    """
    x = F.normalize(_feats(feats, "feats"), dim=-1).numpy()
    y = _labels(labels, "labels")
    _check_len(len(x), len(y), "labels", "feats")
    n_clusters = len(np.unique(y))
    if n_clusters < 2:
        raise ValueError("labels must hold at least two classes")
    if len(x) < n_clusters:
        raise ValueError(f"feats has {len(x)} rows, fewer than the {n_clusters} classes in labels")
    if nredo <= 0 or niter <= 0:
        raise ValueError(f"niter and nredo must be positive, got {niter}, {nredo}")
    _, best_pred = kmeans(x, n_clusters, niter=niter, nredo=nredo, seed=seed)
    return {"ari": float(adjusted_rand_score(y, best_pred)), "ami": float(adjusted_mutual_info_score(y, best_pred))}


def modality_gap(image_feats: ArrayLike, text_feats: ArrayLike) -> float:
    """``||mean(normalised image feats) - mean(normalised text feats)||``, the gap of Liang et al. [6].

    ProtoCLIP Sec. I: "the range between the mean representations in the image and text spaces".
    """
    img = F.normalize(_feats(image_feats, "image_feats"), dim=-1)
    txt = F.normalize(_feats(text_feats, "text_feats"), dim=-1)
    _check_dim(img, txt, "image_feats", "text_feats")
    if len(img) == 0 or len(txt) == 0:
        raise ValueError("image_feats and text_feats must be non-empty")
    return float((img.double().mean(0) - txt.double().mean(0)).norm())
