"""Shape geometry: every shape of ``vocab.SHAPES`` as polygons (or a ring) in unit coordinates."""

from __future__ import annotations

import math
from functools import cache, lru_cache

import numpy as np

from vlp_lib.data import vocab


def _regular(k: int, r: float = 1.0, phase: float = -90.0) -> np.ndarray:
    t = np.deg2rad(phase + 360.0 * np.arange(k) / k)
    return np.stack([r * np.cos(t), r * np.sin(t)], 1)


def _star(k: int, inner: float) -> np.ndarray:
    t = np.deg2rad(-90.0 + 180.0 * np.arange(2 * k) / k)
    r = np.where(np.arange(2 * k) % 2 == 0, 1.0, inner)
    return np.stack([r * np.cos(t), r * np.sin(t)], 1)


def _ellipse(rx: float, ry: float, k: int = 32) -> np.ndarray:
    t = np.linspace(0, 2 * np.pi, k, endpoint=False)
    return np.stack([rx * np.cos(t), ry * np.sin(t)], 1)


def _rect(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.array([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], float)


def _crescent(d: float = 0.5, r2: float = 0.85, k: int = 20) -> np.ndarray:
    """Unit disc minus a disc of radius ``r2`` shifted right by ``d``: a moon opening to the right."""
    x = (1 - r2**2 + d**2) / (2 * d)
    y = math.sqrt(1 - x**2)
    a0, b0 = math.atan2(y, x), math.atan2(y, x - d)
    outer = np.linspace(a0, 2 * np.pi - a0, k)
    inner = np.linspace(2 * np.pi - b0, b0, k)
    pts = np.concatenate(
        [np.stack([np.cos(outer), np.sin(outer)], 1), np.stack([d + r2 * np.cos(inner), r2 * np.sin(inner)], 1)]
    )
    return pts + [0.2, 0]  # centre the thin moon in its box


def _spiral(turns: float = 1.75, k: int = 40) -> np.ndarray:
    t = np.linspace(0, 2 * np.pi * turns, k)
    r = 0.22 + 0.78 * t / t[-1]
    return np.stack([r * np.cos(t), r * np.sin(t)], 1)


def _stroke(points: np.ndarray, width: float, miter_limit: float = 2.0) -> np.ndarray:
    """Outline polygon of a polyline stroked with ``width`` (mitred joins): one fill call instead of
    one per segment, which is what makes PIL's wide lines slow."""
    p = np.asarray(points, float)
    seg = np.diff(p, axis=0)
    normal = np.stack([-seg[:, 1], seg[:, 0]], 1) / np.linalg.norm(seg, axis=1, keepdims=True)
    n = np.concatenate([normal[:1], normal[:-1] + normal[1:], normal[-1:]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    # scale each joint's normal so the stroke keeps its width across the corner, up to the limit
    cos = np.concatenate([[1.0], (n[1:-1] * normal[:-1]).sum(1), [1.0]])
    offset = n * np.minimum(1 / np.maximum(cos, 1e-6), miter_limit)[:, None] * width / 2
    return np.concatenate([p + offset, (p - offset)[::-1]])


@lru_cache(maxsize=1)
def shape_geometry() -> dict[str, list[tuple[str, np.ndarray]]]:
    """Shape name -> primitives in unit coordinates (extent about [-1, 1], y down).

    A primitive is ``("poly", points)`` (filled polygon; strokes are pre-outlined with ``_stroke``) or
    ``("ring", [[radius, width]])`` (an ellipse outline, PIL draws it fast and rotation cannot change it).
    Letters and bars are built from rectangles so their corners stay crisp.
    """
    zig_x = np.linspace(-0.88, 0.88, 6)
    wave_x = np.linspace(-1, 1, 17)
    g = {
        "square": [("poly", _rect(-0.8, -0.8, 0.8, 0.8))],
        "rectangle": [("poly", _rect(-1.0, -0.52, 1.0, 0.52))],
        "pentagon": [("poly", _regular(5) + [0, 0.1])],
        "hexagon": [("poly", _regular(6, phase=0.0))],
        "circle": [("poly", _ellipse(0.9, 0.9))],
        "ellipse": [("poly", _ellipse(1.0, 0.58))],
        "ring": [("ring", np.array([[0.8, 0.36]]))],
        "crescent": [("poly", _crescent())],
        "star": [("poly", _star(5, 0.42) + [0, 0.1])],
        "hexagram": [("poly", _star(6, 0.58))],
        "sparkle": [("poly", _star(4, 0.3))],
        "burst": [("poly", _star(8, 0.55))],
        "triangle": [("poly", np.array([(0, -0.9), (0.95, 0.75), (-0.95, 0.75)]))],
        "arrowhead": [("poly", np.array([(0, -0.95), (0.9, 0.85), (0, 0.3), (-0.9, 0.85)]))],
        "arrow": [
            ("poly", np.array([(-1, -0.2), (0.15, -0.2), (0.15, -0.62), (1, 0), (0.15, 0.62), (0.15, 0.2), (-1, 0.2)]))
        ],
        "chevron": [("poly", _stroke(np.array([(-0.85, 0.4), (0, -0.45), (0.85, 0.4)]), 0.42))],
        "cross": [("poly", _rect(-0.9, -0.2, 0.9, 0.2)), ("poly", _rect(-0.2, -0.9, 0.2, 0.9))],
        "letter t": [("poly", _rect(-0.85, -0.95, 0.85, -0.56)), ("poly", _rect(-0.2, -0.95, 0.2, 0.95))],
        "letter e": [
            ("poly", _rect(-0.7, -0.95, -0.3, 0.95)),
            ("poly", _rect(-0.7, -0.95, 0.7, -0.6)),
            ("poly", _rect(-0.7, -0.17, 0.5, 0.17)),
            ("poly", _rect(-0.7, 0.6, 0.7, 0.95)),
        ],
        "letter f": [
            ("poly", _rect(-0.7, -0.95, -0.3, 0.95)),
            ("poly", _rect(-0.7, -0.95, 0.7, -0.6)),
            ("poly", _rect(-0.7, -0.17, 0.5, 0.17)),
        ],
        "bar": [("poly", _rect(-1.0, -0.2, 1.0, 0.2))],
        "zigzag": [("poly", _stroke(np.stack([zig_x, np.where(np.arange(6) % 2 == 0, 0.42, -0.42)], 1), 0.32))],
        "wave": [("poly", _stroke(np.stack([wave_x * 0.88, 0.42 * np.sin(wave_x * 1.5 * np.pi)], 1), 0.32))],
        "spiral": [("poly", _stroke(_spiral(), 0.26))],
    }
    assert list(g) == vocab.SHAPES
    return g


@cache
def _packed_geometry(shape: int) -> tuple[np.ndarray, list[tuple[int, int]], tuple[float, float] | None]:
    """Shape id -> (all polygon points stacked, (start, stop) per polygon, ring (radius, width) or None)."""
    prims = shape_geometry()[vocab.SHAPES[shape]]
    if prims[0][0] == "ring":
        return np.zeros((0, 2)), [], (float(prims[0][1][0, 0]), float(prims[0][1][0, 1]))
    points = np.concatenate([p for _, p in prims])
    stops = np.cumsum([len(p) for _, p in prims]).tolist()
    return points, list(zip([0] + stops[:-1], stops)), None
