"""Helpers for showing a world in the notebooks: image mosaics, the shape gallery, caption statistics.
None of them is part of any world or task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlp_lib.data import vocab
from vlp_lib.data.world.items import World
from vlp_lib.data.world.randomness import SCENE_STREAM, Draws, _lazy_rng
from vlp_lib.data.world.rendering import render
from vlp_lib.data.world.scenes import _pick_tones
from vlp_lib.data.world.validation import _check_names


def sample_grid(
    images: np.ndarray | World, indices: Sequence[int] | None = None, ncols: int = 8, pad: int = 2, scale: int = 1
) -> np.ndarray:
    """A mosaic of ``images[indices]`` as one uint8 ``[H, W, 3]`` array (white padding), for ``imshow``.

    ``scale`` enlarges every pixel (nearest neighbour) so 32 px images stay crisp in a PNG.
    """
    images = images.images if isinstance(images, World) else images
    indices = list(range(min(len(images), 32))) if indices is None else list(indices)
    if not indices:
        raise ValueError("indices must not be empty")
    tiles = np.asarray(images[indices])
    if scale > 1:
        tiles = tiles.repeat(scale, 1).repeat(scale, 2)
    k, h, w, _ = tiles.shape
    ncols = max(1, min(ncols, k))
    nrows = -(-k // ncols)
    out = np.full((nrows * (h + pad) + pad, ncols * (w + pad) + pad, 3), 255, np.uint8)
    for j in range(k):
        r, c = divmod(j, ncols)
        out[pad + r * (h + pad) : pad + r * (h + pad) + h, pad + c * (w + pad) : pad + c * (w + pad) + w] = tiles[j]
    return out


def gallery(
    shapes: Sequence[str] | None = None,
    colour: str = "blue",
    background: str = "plain",
    image_size: int = 32,
    size: str = "large",
) -> np.ndarray:
    """One centred, unrotated image per shape (default all, in id order): uint8 ``[k, S, S, 3]``.

    For showing the vocabulary (look-alikes side by side); not part of any world or task.
    """
    shapes = _check_names("shapes", shapes, vocab.SHAPES, vocab.SHAPES)
    _check_names("colour", [colour], vocab.COLOURS, [])
    _check_names("background", [background], vocab.BACKGROUNDS, [])
    c, bg = vocab.COLOURS.index(colour), vocab.BACKGROUNDS.index(background)
    tone, tone2 = _pick_tones(Draws(0, 0, SCENE_STREAM), [c], 38)
    out = []
    for i, name in enumerate(shapes):
        obj = dict(
            shape=vocab.SHAPES.index(name),
            colour=c,
            size=vocab.SIZES.index(size),
            cx=0.5,
            cy=0.5,
            angle=0.0,
            position="centre",
        )
        scene = dict(objects=[obj], background=bg, tone=tone, tone2=tone2, texture=dict(variant=0, ox=0.0, oy=0.0))
        out.append(render(scene, image_size, _lazy_rng(0, i), 0.0)[0])
    return np.stack(out)


def caption_statistics(captions: Sequence[str], top: int = 20) -> dict[str, Any]:
    """Length in words of every caption and the ``top`` most frequent words (with their counts)."""
    from collections import Counter

    tokens = [vocab.words(c) for c in captions]
    counts = Counter(w for t in tokens for w in t)
    return dict(lengths=np.array([len(t) for t in tokens], np.int64), top_words=counts.most_common(top))
