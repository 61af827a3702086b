"""Randomness: cheap independent streams per ``(seed, index, stream)``.

Every image draws its scene, caption, paraphrases and render noise from its own streams, so image ``i`` is a
function of ``(seed, i, image_size, knobs)`` only (see ``vlp_lib.data.world``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

# Independent random streams per index.
SCENE_STREAM, CAPTION_STREAM, RENDER_STREAM, PARAPHRASE_STREAM = 0, 1, 2, 3


class Draws:
    """Uniform draws of one ``(seed, index, stream)``, from Python's Mersenne Twister.

    Seeding ``random.Random`` costs ~7 us against ~35 us for ``np.random.default_rng`` and a draw is a
    C call instead of a numpy call, which matters at thousands of scenes per second. Only ``random()``
    is used (the rest is built on it here): Python guarantees that sequence for a given seed across
    versions, unlike ``randrange``/``shuffle``.
    """

    __slots__ = ("random",)

    def __init__(self, seed: int, index: int, stream: int):
        # injective for index < 2**56 and stream < 2**8, any seed >= 0
        self.random = random.Random((seed << 64) | (index << 8) | stream).random

    def below(self, k: int) -> int:
        """Uniform int in ``[0, k)``."""
        return min(int(self.random() * k), k - 1)

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.random()

    def pick(self, seq: Sequence) -> Any:
        return seq[self.below(len(seq))]

    def sample(self, k: int, m: int) -> list[int]:
        """``min(m, k)`` distinct ints from ``range(k)`` in random order (partial Fisher-Yates)."""
        pool = list(range(k))
        for i in range(min(m, k)):
            j = i + self.below(k - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[: min(m, k)]


def _lazy_rng(seed: int, index: int):
    """The numpy generator of image ``index``'s render noise, created only when a texture needs it."""
    cell: list = []

    def get() -> np.random.Generator:
        if not cell:
            cell.append(np.random.default_rng([seed, index, RENDER_STREAM]))
        return cell[0]

    return get
