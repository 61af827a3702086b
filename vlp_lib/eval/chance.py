"""Chance levels: what a random guess scores on each metric, so that every number in the book can be read against it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlp_lib.eval.common import ArrayLike, _labels


def chance_level(labels: ArrayLike, k: int = 1) -> float:
    """Probability that a uniformly random guess among the C classes of ``labels`` is right within top-k.

    ``min(k, C) / C``, independent of the class frequencies (a uniform guess is right with probability
    1/C on every sample). See ``majority_rate`` for the always-guess-the-biggest-class baseline.
    """
    y = _labels(labels, "labels")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    n_classes = len(np.unique(y))
    if n_classes == 0:
        raise ValueError("labels is empty")
    return min(k, n_classes) / n_classes


def majority_rate(labels: ArrayLike) -> float:
    """Accuracy of always predicting the most frequent class of ``labels`` (the other chance baseline)."""
    y = _labels(labels, "labels")
    if y.size == 0:
        raise ValueError("labels is empty")
    return float(np.unique(y, return_counts=True)[1].max() / y.size)


def retrieval_chance(n_images: int, captions_per_image: int = 5, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """Expected ``retrieval_recall`` of a uniformly random ranking (same keys).

    Text-to-image: the caption's one image is among k of ``n_images`` random picks with probability
    ``min(k, n_images) / n_images``. Image-to-text: with ``n_texts = n_images * captions_per_image`` texts,
    none of the image's ``captions_per_image`` captions is among k random picks with probability
    ``C(n_texts - captions_per_image, k) / C(n_texts, k)``, so ``R@k = 1 - C(n_t - c, k) / C(n_t, k)``
    (computed as a product of ratios to avoid huge integers).
    """
    if n_images <= 0 or captions_per_image <= 0:
        raise ValueError(f"n_images and captions_per_image must be positive, got {n_images}, {captions_per_image}")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) <= 0:
        raise ValueError(f"ks must be positive integers, got {ks}")
    n_texts = n_images * captions_per_image
    out = {}
    for k in ks:
        miss = 1.0
        for j in range(min(k, n_texts)):
            miss *= max(n_texts - captions_per_image - j, 0) / (n_texts - j)
        out[f"i2t_R@{k}"] = 1.0 - miss
    for k in ks:
        out[f"t2i_R@{k}"] = min(k, n_images) / n_images
    out["mean_recall"] = float(np.mean([out[f"{d}_R@{k}"] for d in ("i2t", "t2i") for k in ks]))
    return out
