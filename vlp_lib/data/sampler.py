"""Which pairs each episode trains on, and in which order: the trainer's samplers.

A sampler turns ``(seed, episode)`` into an ``EpisodePlan``: the data indices of the episode's images and of its
texts, position by position (batch ``b`` takes positions ``b * B`` to ``(b + 1) * B``), and the source of each
position. A plan is a pure function of ``(seed, episode)``, as the trainer's augmentation is, so a resumed run
continues exactly and two runs can be compared sample for sample.

- ``EpisodeSampler`` (the default): ``episode_size`` draws without replacement (ProtoCLIP III-D; for CLIP an
  episode is an epoch). ``paired=False`` gives the texts their own, independent order: DIME-FM's unpaired
  loading (Supp. D, Tab. 2; the official code's two ``DataLoader``s, the text one restarting when exhausted).
- ``MixedSampler``: every batch holds a fixed share of each of several sources, ``round(r * B)`` of one and the
  rest of the other (iCLIP: class-only data beside image-text pairs, Supp. A "we sample 50% images from both
  datasets"; Tab. 1 sweeps r at a fixed total number of samples).

Each plan records how many samples of each source it holds (``EpisodePlan.seen``); the trainer sums them over
the run into ``TrainResult.extra["samples_seen"]``, so that runs are compared at equal total samples.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast, overload

import numpy as np

from vlp_lib.config import check_bool

# Stream tags: each order draws from its own generator seeded with (seed, episode, tag[, source]), so that one
# order never shifts another (the images of an unpaired run are those of the paired run with the same seed).
_IMAGES = 0xE915  # the trainer's historical episode stream: the default order is unchanged
_TEXTS = 0x7E47
_SOURCES = 0x313C


def episode_indices(seed: int, episode: int, n_data: int, episode_size: int) -> np.ndarray:
    """Episode ``episode``'s data indices: ``episode_size`` draws without replacement (III-D)."""
    rng = np.random.default_rng([seed, episode, _IMAGES])
    return rng.permutation(n_data)[:episode_size]


def stream(rng: np.random.Generator, pool: np.ndarray, length: int) -> np.ndarray:
    """``length`` elements of ``pool``: successive random permutations of it, concatenated (a loader that
    reshuffles and restarts whenever it is exhausted), so every element appears once before any repeats."""
    passes = [pool[rng.permutation(len(pool))] for _ in range(math.ceil(length / len(pool)))]
    return np.concatenate(passes)[:length] if passes else pool[:0]


@dataclass(frozen=True)
class EpisodePlan:
    """An episode's order. Position ``p`` pairs the image ``images[p]`` with the text ``texts[p]``."""

    images: np.ndarray  # int [L]: data indices of the images
    texts: np.ndarray  # int [L]: data indices of the texts (the same array as ``images`` for paired data)
    source: np.ndarray  # int [L]: each position's source, an index into ``source_names``
    source_names: tuple[str, ...] = ("data",)

    def seen(self, n_positions: int | None = None) -> dict[str, int]:
        """How many samples of each source the first ``n_positions`` positions hold (all by default)."""
        counts = np.bincount(self.source[:n_positions], minlength=len(self.source_names))
        return {name: int(c) for name, c in zip(self.source_names, counts)}

    def names(self, positions: np.ndarray) -> np.ndarray:
        """The source name of each of ``positions`` (a numpy string array, ``[len(positions)]``)."""
        return np.asarray(self.source_names)[self.source[positions]]


class Sampler:
    """Base class: ``check`` refuses a bad setting before any compute, ``plan`` orders one episode, ``size`` says
    how many samples one epoch passes over."""

    def size(self, n_data: int) -> int:
        """The number of samples an epoch is a pass over (the trainer counts ``epochs`` and the episode length in
        them): all ``n_data`` rows by default."""
        return n_data

    def check(self, n_data: int, episode_length: int, batch_size: int) -> None:
        """``ValueError`` naming the parameter when this sampler cannot serve the trainer's setting."""

    def plan(self, seed: int, episode: int, n_data: int, episode_length: int, batch_size: int) -> EpisodePlan:
        raise NotImplementedError


@overload
def _pool(name: str, pool: Sequence[int] | np.ndarray, n_data: int) -> np.ndarray: ...
@overload
def _pool(name: str, pool: Sequence[int] | np.ndarray | None, n_data: int) -> np.ndarray | None: ...
def _pool(name: str, pool: Sequence[int] | np.ndarray | None, n_data: int) -> np.ndarray | None:
    """A validated pool of data indices (``None``: all the data)."""
    if pool is None:
        return None
    arr = np.asarray(pool)
    if arr.ndim != 1 or len(arr) == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be a non-empty 1-d array of data indices, got {arr.dtype} {arr.shape}")
    if arr.min() < 0 or arr.max() >= n_data:
        raise ValueError(f"{name} holds indices outside the data (0 .. {n_data - 1}): {arr.min()} .. {arr.max()}")
    return arr.astype(np.int64)


class EpisodeSampler(Sampler):
    """Episodes of draws without replacement; texts paired with their images, or in an independent order.

    Args:
        paired: ``True`` (default): position ``p`` holds pair ``images[p]`` with its own caption, the trainer's
            historical order. ``False``: DIME-FM's unpaired loading, the texts come from an independent
            permutation (stream ``_TEXTS``); the images stay those of the paired run with the same seed.
        images: data indices the images are drawn from (default: all). The episode must fit in it.
        texts: data indices the texts are drawn from when unpaired (default: all): e.g. the caption rows of a
            text-only corpus merged with ``paired.concat``. A text pool smaller than the episode restarts with
            a new permutation, as the official code's text loader.
    """

    def __init__(
        self,
        paired: bool = True,
        images: Sequence[int] | np.ndarray | None = None,
        texts: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        check_bool("paired", paired)
        if paired and texts is not None:
            raise ValueError("texts is a pool for unpaired loading: give it with paired=False")
        self.paired = paired
        self.images = images
        self.texts = texts

    def size(self, n_data: int) -> int:
        """The image pool's size (all the data without one): an epoch is a pass over the images, as the official
        DIME-FM code's epoch is a pass of its image loader (the text loader is recycled), whatever the size of
        the text corpus beside them."""
        pool = _pool("images", self.images, n_data)
        return n_data if pool is None else len(pool)

    def check(self, n_data: int, episode_length: int, batch_size: int) -> None:
        images = _pool("images", self.images, n_data)
        _pool("texts", self.texts, n_data)
        if images is not None and episode_length > len(images):
            raise ValueError(f"episode_size ({episode_length}) is larger than the image pool ({len(images)} images)")

    def plan(self, seed: int, episode: int, n_data: int, episode_length: int, batch_size: int) -> EpisodePlan:
        pool = _pool("images", self.images, n_data)
        if pool is None:
            images = episode_indices(seed, episode, n_data, episode_length)
        else:
            images = pool[episode_indices(seed, episode, len(pool), episode_length)]
        if self.paired:
            texts = images
        else:
            text_pool = _pool("texts", self.texts, n_data)
            rng = np.random.default_rng([seed, episode, _TEXTS])
            texts = stream(rng, np.arange(n_data) if text_pool is None else text_pool, episode_length)
        return EpisodePlan(images, texts, np.zeros(len(images), dtype=np.int64))


class MixedSampler(Sampler):
    """Several sources in every batch at fixed shares: iCLIP's class-only + image-text batches (r = B_cls / B).

    Args:
        pools: source name -> its data indices (``paired.concat`` returns them), in order.
        ratio: the first source's share r of every batch: it gets ``round(r * B)`` rows and the last source
            the rest. With more than two sources, one share per source but the last.

    Batch ``b`` holds its rows source by source, in the order of ``pools`` (the first ``round(r * B)`` rows are
    the first source's). Each source is read in its own order (seeded by ``(seed, episode, source name)``, so a
    source's order does not depend on the ratio or on the other sources: a sweep over r shares its random
    numbers), restarting with a new permutation when exhausted. Every batch holds B samples whatever r is: runs
    with the same ``epochs`` and ``episode_size`` see the same total, and ``EpisodePlan.seen`` says how it splits.

    ``epoch_source``: the source whose pool size an epoch counts (``size``), e.g. iCLIP's image-text pairs, so that
    ``epochs`` means the same total samples at every r and whatever the size of the class data beside them (Supp
    Tab. 1 compares ratios "with the same number of samples"); ``None`` (default): all the merged data.
    """

    def __init__(
        self,
        pools: Mapping[str, Sequence[int] | np.ndarray],
        ratio: float | Sequence[float],
        epoch_source: str | None = None,
    ) -> None:
        if not isinstance(pools, Mapping) or len(pools) < 2:
            raise ValueError(f"pools must map at least two source names to data indices, got {pools!r}")
        ratios: list[float] = [cast(float, ratio)] if np.ndim(ratio) == 0 else list(cast(Sequence[float], ratio))
        if len(ratios) != len(pools) - 1:
            raise ValueError(f"ratio must give a share for each source but the last ({len(pools) - 1}), got {ratio!r}")
        for r in ratios:
            if isinstance(r, bool) or not isinstance(r, (int, float, np.number)) or not 0.0 <= r <= 1.0:
                raise ValueError(f"ratio must be a share in [0, 1], got {r!r}")
        if sum(ratios) > 1.0 + 1e-9:
            raise ValueError(f"ratio: the shares sum to more than 1 ({sum(ratios)})")
        if epoch_source is not None and epoch_source not in pools:
            raise ValueError(f"epoch_source must be one of the pools {list(pools)} or None, got {epoch_source!r}")
        self.pools = dict(pools)
        self.ratios = [float(r) for r in ratios]
        self.epoch_source = epoch_source

    def size(self, n_data: int) -> int:
        """The samples an epoch counts: the pool of ``epoch_source``, or all ``n_data`` rows without one."""
        if self.epoch_source is None:
            return n_data
        return len(_pool(f"pools[{self.epoch_source!r}]", self.pools[self.epoch_source], n_data))

    def counts(self, batch_size: int) -> list[int]:
        """Rows per batch of each source: ``round(r * B)`` for all but the last, which gets the rest."""
        counts = [round(r * batch_size) for r in self.ratios]
        return counts + [batch_size - sum(counts)]

    def check(self, n_data: int, episode_length: int, batch_size: int) -> None:
        for name, pool in self.pools.items():
            _pool(f"pools[{name!r}]", pool, n_data)
        counts = self.counts(batch_size)
        if counts[-1] < 0:
            raise ValueError(f"ratio {self.ratios} leaves no room for the last source in a batch of {batch_size}")

    def plan(self, seed: int, episode: int, n_data: int, episode_length: int, batch_size: int) -> EpisodePlan:
        n_batches = math.ceil(episode_length / batch_size)
        blocks, sources = [], []
        for i, (name, pool) in enumerate(self.pools.items()):
            count = self.counts(batch_size)[i]
            rng = np.random.default_rng([seed, episode, _SOURCES, zlib.crc32(name.encode())])
            drawn = stream(rng, _pool(name, pool, n_data), n_batches * count)
            blocks.append(drawn.reshape(n_batches, count))
            sources.append(np.full((n_batches, count), i, dtype=np.int64))
        images = np.concatenate(blocks, axis=1).reshape(-1)[:episode_length]
        source = np.concatenate(sources, axis=1).reshape(-1)[:episode_length]
        return EpisodePlan(images, images, source, tuple(self.pools))
