"""Rendering: pixels and boxes of a scene (PIL at 4x supersampling, box-downsampled), textured backgrounds,
and per-object visibility masks."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from vlp_lib.data import vocab
from vlp_lib.data.world.geometry import _packed_geometry
from vlp_lib.data.world.scenes import SIZE_FRACTIONS

# Objects and textures are drawn at this multiple of the output side, then box-downsampled (anti-aliasing).
SUPERSAMPLE = 4

_RGB = [vocab.COLOUR_TABLE[c]["rgb"] for c in vocab.COLOURS]


# Texture variants (quantised parameters) per background: a finite set, so each is a cached tile.
_STRIPE_ANGLES = [a + j for a in (0, 45, 90, 135) for j in (-10, -5, 0, 5, 10)]
_PERIODS = [5, 6, 7, 8]  # output pixels


def _texture_variants(name: str) -> list[tuple]:
    if name == "striped":
        return [(a, p) for a in _STRIPE_ANGLES for p in _PERIODS]
    if name == "gradient":
        return [(a, 0) for a in range(0, 360, 45)]
    if name == "wavy":
        return [(a, p) for a in (0, 90) for p in _PERIODS]
    return [(0, p) for p in _PERIODS]


@lru_cache(maxsize=256)
def _texture_tile(name: str, variant: tuple, image_size: int) -> np.ndarray:
    """uint8 palette indices of a texture, at 2x the output resolution and twice the image side, so that
    any crop of one image side is a valid texture with a random phase."""
    res = 2  # texture samples per output pixel; edges are further smoothed by the 4x object canvas
    side = 2 * image_size * res
    c = (np.arange(side, dtype=np.float64) + 0.5) / res  # output-pixel units
    xx, yy = np.meshgrid(c, c, indexing="xy")
    angle, period = variant
    a = math.radians(angle)
    if name == "striped":
        mask = ((xx * math.cos(a) + yy * math.sin(a)) / period) % 1.0 < 0.5
    elif name == "dotted":
        q = period + 1.0
        mask = (xx % q - q / 2) ** 2 + (yy % q - q / 2) ** 2 < (0.3 * q) ** 2
    elif name == "checkered":
        q = period + 1.0
        mask = (np.floor(xx / q) + np.floor(yy / q)) % 2 == 0
    elif name == "grid":
        q = period + 2.0
        mask = (xx % q < 1.0) | (yy % q < 1.0)
    elif name == "wavy":
        u, v = (xx, yy) if angle == 0 else (yy, xx)
        mask = ((v + 1.5 * np.sin(u * (2 * np.pi / 12.0))) / period) % 1.0 < 0.5
    elif name == "gradient":  # a ramp over one image side, palette index 0..255
        proj = (xx - image_size) * math.cos(a) + (yy - image_size) * math.sin(a)
        return np.clip((proj / image_size + 0.5) * 255, 0, 255).astype(np.uint8)
    else:  # pragma: no cover - plain and speckled need no tile
        raise AssertionError(name)
    return mask.astype(np.uint8)


def _background(scene: dict[str, Any], image_size: int, rng: Callable[[], np.random.Generator]) -> Image.Image:
    """RGB canvas (4x the output side) filled with the scene's two-tone texture."""
    name = vocab.BACKGROUNDS[scene["background"]]
    canvas = image_size * SUPERSAMPLE
    tone, tone2 = scene["tone"], scene["tone2"]
    if name == "plain":
        return Image.new("RGB", (canvas, canvas), tone)
    tex = scene["texture"]
    if name == "speckled":
        res = image_size
        index = (rng().random((res, res)) < 0.35).astype(np.uint8)
        palette = list(tone) + list(tone2)
    else:
        variants = _texture_variants(name)
        tile = _texture_tile(name, variants[tex["variant"] % len(variants)], image_size)
        res = tile.shape[0] // 2
        if name == "gradient":
            x0 = y0 = res // 2
            ramp = np.linspace(0, 1, 256)[:, None]
            palette = np.round(np.array(tone) * (1 - ramp) + np.array(tone2) * ramp).astype(int).ravel().tolist()
        else:
            x0, y0 = int(tex["ox"] * res), int(tex["oy"] * res)
            palette = list(tone) + list(tone2)
        index = tile[y0 : y0 + res, x0 : x0 + res]
    img = Image.frombytes("P", (res, res), np.ascontiguousarray(index).tobytes())
    img.putpalette(palette)
    return img.convert("RGB").resize((canvas, canvas), Image.Resampling.NEAREST)


def _draw_object(draw: ImageDraw.ImageDraw, obj: dict[str, Any], canvas: int, fill: Any) -> list[float]:
    """Draw one object on a canvas of side ``canvas`` (supersampled pixels); returns its box ``[x0, y0, x1, y1]``."""
    half = SIZE_FRACTIONS[obj["size"]] / 2 * canvas
    x, y = obj["cx"] * canvas, obj["cy"] * canvas
    points, cuts, ring = _packed_geometry(obj["shape"])
    if ring is not None:  # rotation cannot change a ring
        r, w = ring[0] * half, ring[1] * half
        draw.ellipse([x - r, y - r, x + r, y + r], outline=fill, width=max(1, int(round(w))))
        return [x - r, y - r, x + r, y + r]
    a = math.radians(obj["angle"])
    ca, sa = math.cos(a) * half, math.sin(a) * half
    xy = points @ np.array([[ca, sa], [-sa, ca]]) + (x, y)  # one transform for all of the shape's polygons
    flat = xy.ravel().tolist()
    for lo, hi in cuts:
        draw.polygon(flat[2 * lo : 2 * hi], fill=fill)
    return [*xy.min(0).tolist(), *xy.max(0).tolist()]


def render(
    scene: dict[str, Any], image_size: int, rng: Callable[[], np.random.Generator], clutter: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pixels and boxes of ``scene``: uint8 ``[S, S, 3]`` and float32 ``[m, 4]`` in output pixels.

    ``rng()`` returns the generator of render noise (speckle texture, clutter); the scene itself is
    already decided.
    """
    canvas = image_size * SUPERSAMPLE
    img = _background(scene, image_size, rng)
    draw = ImageDraw.Draw(img)
    if clutter > 0:  # distractor strokes in random colours, behind the objects
        g = rng()
        width = max(1, canvas // 64)
        for _ in range(int(round(clutter * 10))):
            pts = g.uniform(0, canvas, 6).tolist()
            colour = tuple(int(c) for c in g.integers(0, 256, 3))
            draw.line(pts, fill=colour, width=width * int(g.integers(1, 4)), joint="curve")
    boxes = np.zeros((len(scene["objects"]), 4), np.float32)
    for i, obj in enumerate(scene["objects"]):
        boxes[i] = _draw_object(draw, obj, canvas, _RGB[obj["colour"]])
    boxes = np.minimum(np.maximum(boxes / SUPERSAMPLE, 0), image_size)
    out = np.asarray(img.reduce(SUPERSAMPLE))
    if clutter > 0:  # sensor-like noise, after downsampling so it stays pixel-sized
        noise = rng().normal(0.0, 24.0 * clutter, out.shape)
        out = np.clip(out + noise, 0, 255).astype(np.uint8)
    return out, boxes


def object_masks(scene: dict[str, Any], image_size: int) -> np.ndarray:
    """Where each object of ``scene`` is visible in its rendered image: float32 ``[m, S, S]``, the fraction of
    each output pixel it covers (drawn with ``render``'s geometry at the same supersampling; objects drawn
    later hide earlier ones, as in ``render``). Objects are in ``scene["objects"]`` order, as ``World.boxes``."""
    canvas = image_size * SUPERSAMPLE
    layers = []
    for obj in scene["objects"]:
        img = Image.new("L", (canvas, canvas), 0)
        _draw_object(ImageDraw.Draw(img), obj, canvas, 255)
        layers.append(np.asarray(img) > 0)
    covered = np.zeros((canvas, canvas), bool)
    out = np.zeros((len(layers), image_size, image_size), np.float32)
    for i in range(len(layers) - 1, -1, -1):  # the last object drawn is on top
        visible = layers[i] & ~covered
        covered |= layers[i]
        out[i] = visible.reshape(image_size, SUPERSAMPLE, image_size, SUPERSAMPLE).mean(axis=(1, 3))
    return out
