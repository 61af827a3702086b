"""Real evaluation data: held-out image-text pairs for retrieval, from an OpenCLIP CSV or WebDataset shards.

Named in ``eval_tasks`` as ``"pairs:<source>"`` (any ``train_data`` source of ``data.real``; ``"pairs:data:<path>"``
inside ``paths.data_dir()``); its metrics are keyed by the source's stem (``"pairs:data/test_pairs.csv"`` ->
``test_pairs/i2t_R@1`` ... ``test_pairs/mean_recall``, as ``eval.retrieval_recall`` names them). Images are decoded
once at ``folder_tasks.IMAGE_SIZE`` into ``data.real``'s cache.

Real captions repeat ("jigsaw" for fourteen drawings) and so do images: a pair whose caption or image (its decoded
pixels) another pair of the set shares is left out, since its features tie with the other's and retrieval's ranks
count a tie against the query (``eval.retrieval_recall``); what is left is one caption per image, one image per
caption. A set larger than asked is subsampled with a fixed seed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from vlp_lib.data import folder_tasks, real
from vlp_lib.paths import resolve_data

PREFIX = "pairs:"
SUBSAMPLE_SEED = 0


@dataclass(frozen=True)
class PairSet:
    """Unique held-out pairs: uint8 images ``[N, H, W, 3]`` and their captions, and how many pairs were left out."""

    images: np.ndarray
    captions: list[str]
    n_repeated: int


def is_pair_set(name: object) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def metric_name(name: str) -> str:
    """The prefix of a pair set's metrics: its source's stem (``test_pairs`` for ``pairs:.../test_pairs.csv``)."""
    return Path(name[len(PREFIX) :].rstrip("/")).stem


def check_pair_set(name: str) -> None:
    """``ValueError`` naming ``eval_tasks`` when the source does not read (``real.check_source``)."""
    try:
        real.check_source(name[len(PREFIX) :])
    except ValueError as e:
        raise ValueError(f"eval_tasks: {name!r}: {e}") from None


def unique_pairs(images: np.ndarray, captions: list[str]) -> np.ndarray:
    """Indices of the pairs whose caption and image no other pair shares, in order."""
    digests = [hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest() for image in images]
    n_caption, n_image = Counter(captions), Counter(digests)
    return np.asarray([i for i, (c, d) in enumerate(zip(captions, digests)) if n_caption[c] == 1 and n_image[d] == 1])


def load_pair_set(name: str, n: int | None = None) -> PairSet:
    """The unique pairs of pair set ``name`` (``n`` at most, a fixed-seed subsample); ``ValueError`` naming
    ``eval_tasks`` when none is left."""
    source = resolve_data(name[len(PREFIX) :])
    images, captions, n_repeated = _unique(source, real.check_source(source).cache_key(folder_tasks.IMAGE_SIZE))
    if not len(captions):
        raise ValueError(f"eval_tasks: {name!r}: no pair has a caption and an image of its own")
    keep = np.arange(len(captions))
    if n is not None and n < len(keep):
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(len(keep), n, replace=False))
    return PairSet(images[keep], [captions[i] for i in keep], n_repeated)


@lru_cache(maxsize=4)
def _unique(source: str, cache_key: str) -> tuple[np.ndarray, list[str], int]:
    """The decoded unique pairs of ``source`` (``cache_key``: its files' identity, so that a changed source is
    read again)."""
    data, _ = real.load_pairs(source, _no_tokens, folder_tasks.IMAGE_SIZE, progress=False)
    keep = unique_pairs(data.images, data.captions)
    return np.asarray(data.images[keep]), [data.captions[i] for i in keep], len(data.captions) - len(keep)


def _no_tokens(captions: Sequence[str]) -> torch.Tensor:
    """A stand-in tokenizer for ``real.load_pairs``: the evaluation tokenizes the captions with the model's own."""
    return torch.zeros(len(captions), 1, dtype=torch.long)
