"""Scenes: what is in image ``i`` (cheap, no pixels), and the geometry words of a scene.

``sample_scene`` draws the objects (shape, colour, size, centre, rotation), the background and its tones from
the scene stream. ``_position_name`` (3 x 3 grid cell of a centre) and ``relation_from_offset`` (left / right /
above / below between two centres) are the world's only definitions of positions and relations: captions,
``vlp_lib.data.consistency`` and the relation labels of ``relation_labels`` (``World.relations``) all use them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vlp_lib.data import vocab
from vlp_lib.data.world.randomness import SCENE_STREAM, Draws

# Object extent as a fraction of the image side: at 32 px small/medium/large are about 11/14/18 px,
# large enough to tell look-alikes (square / rectangle, star / hexagram) apart with some effort.
SIZE_FRACTIONS = (0.34, 0.44, 0.56)
# Random rotation of every object (degrees): enough to vary, too little to turn a square into a diamond.
MAX_ROTATION = 20.0
# Overlap allowed between two objects' boxes, as a fraction of the smaller box (rejection sampling).
MAX_OVERLAP = 0.15

# Muted background tones (RGB); each scene takes the first tone (in a random order) far enough from
# all of its object colours, so that no object disappears into its background.
BG_TONES = [
    (235, 228, 210),
    (205, 208, 212),
    (188, 212, 232),
    (212, 232, 198),
    (238, 210, 222),
    (225, 215, 170),
    (62, 66, 76),
    (40, 56, 80),
    (58, 78, 60),
    (92, 62, 82),
]
MIN_CONTRAST = 110.0


def _position_name(cx: float, cy: float) -> str:
    col = 0 if cx < 0.4 else 2 if cx > 0.6 else 1
    row = 0 if cy < 0.4 else 2 if cy > 0.6 else 1
    return vocab.POSITIONS[3 * row + col]


def _place(d: Draws, halves: list[float], tries: int = 30) -> list[tuple[float, float]]:
    """Object centres (fractions of the side) inside the image, by rejection sampling: each object's box
    may cover at most ``MAX_OVERLAP`` of a smaller box placed before it (else the least overlapping try)."""
    placed: list[tuple[float, float, float]] = []
    for half in halves:
        span = 1 - 2 * half
        best, best_overlap = (0.5, 0.5), math.inf
        for _ in range(tries):
            cx, cy = half + span * d.random(), half + span * d.random()
            worst = 0.0
            for px, py, ph in placed:  # inlined: this loop dominates scene sampling
                w = min(cx + half, px + ph) - max(cx - half, px - ph)
                h = min(cy + half, py + ph) - max(cy - half, py - ph)
                if w > 0 and h > 0:
                    worst = max(worst, w * h / (4 * min(half, ph) ** 2))
            if worst < best_overlap:
                best, best_overlap = (cx, cy), worst
            if worst <= MAX_OVERLAP:
                break
        placed.append((best[0], best[1], half))
    return [(x, y) for x, y, _ in placed]


def _sizes(d: Draws, m: int) -> list[int]:
    """Size ids, primary first and strictly the largest when there are several objects."""
    if m == 1:
        return [d.below(3)]
    primary = 1 + d.below(2)
    return [primary] + [d.below(primary) for _ in range(m - 1)]


@lru_cache(maxsize=4)
def _tone_table(delta: int) -> list[tuple[tuple, tuple, list[float]]]:
    """Per background tone: (tone, second tone, contrast to each colour id)."""
    table = []
    for t in BG_TONES:
        tone = np.array(t, float)
        tone2 = np.clip(tone + (delta if tone.mean() < 128 else -delta), 0, 255)
        contrast = [
            float(min(np.linalg.norm(tone - rgb), np.linalg.norm(tone2 - rgb)))
            for rgb in (np.array(vocab.COLOUR_TABLE[c]["rgb"], float) for c in vocab.COLOURS)
        ]
        table.append((tuple(int(v) for v in tone), tuple(int(v) for v in tone2), contrast))
    return table


def _pick_tones(d: Draws, colours: list[int], delta: int) -> tuple[tuple, tuple]:
    """Background tone and second tone, both at least MIN_CONTRAST from every object colour."""
    table = _tone_table(delta)
    best, best_score = None, -1.0
    for t in d.sample(len(table), len(table)):
        tone, tone2, contrast = table[t]
        score = min(contrast[c] for c in colours)
        if score >= MIN_CONTRAST:
            return tone, tone2
        if score > best_score:
            best, best_score = (tone, tone2), score
    assert best is not None  # BG_TONES is not empty and every score beats -1
    return best


def sample_scene(seed: int, index: int, knobs: dict[str, Any]) -> dict[str, Any]:
    """The content of image ``index``: objects (primary first), background and its texture parameters.

    Positions are fractions of the image side, so a scene does not depend on the image size.
    ``knobs`` must be effective knobs (``check_knobs``).
    """
    d = Draws(seed, index, SCENE_STREAM)
    m = knobs["min_objects"] + d.below(knobs["max_objects"] - knobs["min_objects"] + 1)
    shape_ids = _ids(tuple(knobs["shapes"]), "shapes")
    colour_ids = _ids(tuple(knobs["colours"]), "colours")
    shapes = [d.pick(shape_ids) for _ in range(m)]
    # distinct colours when possible, so "the red one" names one object
    colours = [colour_ids[i] for i in d.sample(len(colour_ids), m)]
    colours += [d.pick(colour_ids) for _ in range(m - len(colours))]
    sizes = _sizes(d, m)
    placed = _place(d, [SIZE_FRACTIONS[size] / 2 for size in sizes])
    objects = [
        dict(
            shape=shapes[i],
            colour=colours[i],
            size=sizes[i],
            cx=placed[i][0],
            cy=placed[i][1],
            angle=d.uniform(-MAX_ROTATION, MAX_ROTATION),
            position=_position_name(placed[i][0], placed[i][1]),
        )
        for i in range(m)
    ]
    bg = vocab.BACKGROUNDS.index(d.pick(knobs["backgrounds"]))
    tone, tone2 = _pick_tones(d, colours, 80 if vocab.BACKGROUNDS[bg] == "gradient" else 38)
    texture = dict(variant=d.below(1 << 30), ox=d.random(), oy=d.random())
    return dict(objects=objects, background=bg, tone=tone, tone2=tone2, texture=texture)


@lru_cache(maxsize=64)
def _ids(names: tuple[str, ...], kind: str) -> list[int]:
    table = vocab.SHAPES if kind == "shapes" else vocab.COLOURS
    return [table.index(s) for s in names]


# --------------------------------------------------------------------------------------------------
# relations between two objects

# Relation ids of ``relation_labels`` (``World.relations``): the keys of ``vocab.RELATIONS``, in their order.
RELATION_NAMES: tuple[str, ...] = tuple(vocab.RELATIONS)


def relation_from_offset(dx: float, dy: float) -> str:
    """The relation ("left", "right", "above", "below") of a point at offset ``(dx, dy)`` from another (image y
    grows downwards): the dominant axis decides, ties go to left / right. The world's one rule for relations."""
    if abs(dx) >= abs(dy):
        return "left" if dx < 0 else "right"
    return "above" if dy < 0 else "below"


def _relation(a: dict, b: dict) -> str:
    """Where ``a`` is relative to ``b`` (object dicts with centres ``cx``, ``cy``; image y grows downwards)."""
    return relation_from_offset(a["cx"] - b["cx"], a["cy"] - b["cy"])


def relation_labels(boxes: Sequence[np.ndarray]) -> np.ndarray:
    """Relation of each sample's primary object to its secondary one, from their box centres: int64 ``[n]``, an
    index into ``RELATION_NAMES`` (left, right, above, below), ``-1`` where a sample has fewer than two boxes.

    ``boxes[i]`` is ``[m_i, 4]`` ``(x0, y0, x1, y1)`` in any unit (``World.boxes``: primary first, secondary
    second). The rule is ``relation_from_offset``, the one captions use, applied to *box* centres: what a detector
    sees. Captions apply it to the scene's drawing centres, which differ slightly from box centres (rotation, the
    shape's own offset inside its box, clipping at the border), so on near-diagonal pairs a caption's stated
    relation can disagree with this label (a test bounds how often).
    """
    out = np.full(len(boxes), -1, np.int64)
    for i, b in enumerate(boxes):
        b = np.asarray(b, np.float64)
        if b.ndim != 2 or b.shape[1] != 4:
            raise ValueError(f"boxes[{i}] must have shape [m, 4], got {b.shape}")
        if len(b) >= 2:
            (ax, ay), (bx, by) = (b[:2, :2] + b[:2, 2:]) / 2
            out[i] = RELATION_NAMES.index(relation_from_offset(ax - bx, ay - by))
    return out
