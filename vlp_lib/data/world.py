"""The procedural image-caption world: the book's default training and evaluation data (no network needed).

Every image is a scene of 1-3 coloured shapes on a textured background, rendered with PIL at 4x
supersampling and box-downsampled, with an alt-text style caption (noisy, like web data), a clean
one-clause summary, the bounding box of every object and labels of the primary (largest) object.
Vocabulary and caption templates live in ``vlp_lib.data.vocab``.

Determinism: image ``i`` is a function of ``(seed, i, image_size, knobs)`` only. Each index draws from its
own independent streams (``Draws(seed, i, stream)`` for the scene and the caption, and
``np.random.default_rng([seed, i, RENDER_STREAM])`` for pixel noise), so

- the same call gives byte-identical arrays, in one process or split across worker processes;
- the world of ``n`` images is a prefix of the world of ``n' > n`` with the same seed and knobs;
- a mismatched caption is the caption of a pseudo-random *other index* ``j`` (drawn from ``i``'s caption
  stream, not limited to ``n``), re-derived from ``(seed, j)`` without rendering ``j``.

Caching: ``generate`` stores worlds under ``cache_dir() / "world" / <key> / "n<N>"`` (``images.npy`` loaded
with ``mmap_mode="r"``, ``meta.npz``, ``text.json``, ``info.json``), with ``<key>`` a hash of
``(WORLD_VERSION, seed, image_size, knobs)``. A request for ``n`` returns the prefix of any cached ``N >= n``
without rendering; a larger request renders only the missing indices. Directories are written under a
temporary name and published with one ``os.replace``; a ``filelock.FileLock`` per key serialises concurrent
generators (two notebooks at once never corrupt the cache).
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from filelock import FileLock
from PIL import Image, ImageDraw

from vlp_lib.config import check_positive_int
from vlp_lib.data import vocab
from vlp_lib.paths import cache_dir

# Bump whenever rendering, scene sampling or captioning changes: it is part of the cache key.
WORLD_VERSION = 2

SUPERSAMPLE = 4
# Object extent as a fraction of the image side: at 32 px small/medium/large are about 11/14/18 px,
# large enough to tell look-alikes (square / rectangle, star / hexagram) apart with some effort.
SIZE_FRACTIONS = (0.34, 0.44, 0.56)
# Random rotation of every object (degrees): enough to vary, too little to turn a square into a diamond.
MAX_ROTATION = 20.0
# Overlap allowed between two objects' boxes, as a fraction of the smaller box (rejection sampling).
MAX_OVERLAP = 0.15

# Independent random streams per index.
SCENE_STREAM, CAPTION_STREAM, RENDER_STREAM, PARAPHRASE_STREAM = 0, 1, 2, 3

# Worlds at least this large are rendered by worker processes, and show a progress bar.
PARALLEL_MIN_N = 4_000
PROGRESS_MIN_N = 5_000
CHUNK = 1_000

# Muted background tones (RGB); each scene takes the first tone (in a random order) far enough from
# all of its object colours, so that no object disappears into its background.
BG_TONES = [
    (235, 228, 210), (205, 208, 212), (188, 212, 232), (212, 232, 198), (238, 210, 222),
    (225, 215, 170), (62, 66, 76), (40, 56, 80), (58, 78, 60), (92, 62, 82),
]
MIN_CONTRAST = 110.0

# Knob defaults imitate web alt-text; see ``generate`` for their meaning.
DEFAULT_KNOBS: dict[str, Any] = dict(
    min_objects=1,
    max_objects=3,
    shapes=None,
    colours=None,
    backgrounds=None,
    held_out_shapes=(),
    mismatch_rate=0.1,
    omit_rate=0.5,
    junk_rate=0.3,
    paraphrase=True,
    synonym_rate=0.5,
    clutter=0.0,
)
_RATES = ("mismatch_rate", "omit_rate", "junk_rate", "synonym_rate", "clutter")

# Label arrays every world carries (all of the primary object where it is per object).
LABEL_KEYS = (
    "shape", "superclass", "colour", "size", "position", "background", "count",
    "mismatched", "omitted", "junk",
)


@dataclass
class World:
    """A generated image-caption world (see ``generate``)."""

    images: np.ndarray  # uint8 [n, H, W, 3]; memory-mapped when loaded from the cache
    captions: list[str]  # alt-text style, noisy
    summaries: list[str]  # one clean clause naming every object
    boxes: list[np.ndarray]  # float32 [m_i, 4] (x0, y0, x1, y1) in output pixels
    objects: list[np.ndarray]  # int64 [m_i, 3] (shape id, colour id, size id), same order as boxes
    labels: dict[str, np.ndarray]  # int64 [n] per key in LABEL_KEYS
    seed: int
    knobs: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.captions)

    @property
    def image_size(self) -> int:
        return int(self.images.shape[1])


# --------------------------------------------------------------------------------------------------
# knobs


def _check_rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_names(name: str, value: Any, allowed: Sequence[str], default: Sequence[str]) -> list[str]:
    """A subset of ``allowed`` in canonical order; ``None`` means ``default``."""
    if value is None:
        return list(default)
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError(f"{name} must be a list of names, got {value!r}")
    unknown = [v for v in value if v not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown names {unknown}; known: {list(allowed)}")
    return [a for a in allowed if a in set(value)]


def check_knobs(**knobs: Any) -> dict[str, Any]:
    """The effective knobs (defaults filled in, names in canonical order); ``ValueError`` naming a bad one."""
    unknown = sorted(set(knobs) - set(DEFAULT_KNOBS))
    if unknown:
        raise ValueError(f"unknown knob(s) {unknown}; known: {sorted(DEFAULT_KNOBS)}")
    k = {**DEFAULT_KNOBS, **knobs}
    out: dict[str, Any] = {}
    for name in ("min_objects", "max_objects"):
        v = k[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 3:
            raise ValueError(f"{name} must be an integer in 1..3, got {v!r}")
        out[name] = int(v)
    if out["min_objects"] > out["max_objects"]:
        raise ValueError(f"min_objects ({out['min_objects']}) must be <= max_objects ({out['max_objects']})")
    held = _check_names("held_out_shapes", k["held_out_shapes"], vocab.SHAPES, [])
    shapes = _check_names("shapes", k["shapes"], vocab.SHAPES, vocab.SHAPES)
    out["shapes"] = [s for s in shapes if s not in held]
    if not out["shapes"]:
        raise ValueError("shapes: no shape left to draw once held_out_shapes are removed")
    out["held_out_shapes"] = held
    out["colours"] = _check_names("colours", k["colours"], vocab.COLOURS, vocab.COLOURS)
    out["backgrounds"] = _check_names("backgrounds", k["backgrounds"], vocab.BACKGROUNDS, vocab.BACKGROUNDS)
    for name in ("colours", "backgrounds"):
        if not out[name]:
            raise ValueError(f"{name} must not be empty")
    for name in _RATES:
        out[name] = _check_rate(name, k[name])
    if not isinstance(k["paraphrase"], (bool, np.bool_)):
        raise ValueError(f"paraphrase must be a bool, got {k['paraphrase']!r}")
    out["paraphrase"] = bool(k["paraphrase"])
    return out


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


# --------------------------------------------------------------------------------------------------
# randomness: cheap independent streams per (seed, index, stream)


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


# --------------------------------------------------------------------------------------------------
# scenes: what is in image i (cheap, no pixels)


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
        dict(shape=shapes[i], colour=colours[i], size=sizes[i], cx=placed[i][0], cy=placed[i][1],
             angle=d.uniform(-MAX_ROTATION, MAX_ROTATION), position=_position_name(placed[i][0], placed[i][1]))
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
# captions and summaries


def _article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _object_phrase(obj: dict, d: Draws, knobs: dict[str, Any], detail: bool, where: bool,
                   record: dict | None = None) -> str:
    """ "a crimson star", with ``detail`` sometimes "a small crimson star", with ``where`` sometimes
    "... in the top left corner". ``record`` receives ``size`` and ``position``: whether the phrase names them."""
    colour = vocab.COLOURS[obj["colour"]]
    if d.random() < knobs["synonym_rate"]:
        colour = d.pick(vocab.COLOUR_SYNONYMS[colour])
    words = [colour, vocab.SHAPES[obj["shape"]]]
    sized = detail and d.random() < 0.3
    if sized:
        words.insert(0, d.pick(vocab.SIZES_TABLE[vocab.SIZES[obj["size"]]]))
    phrase = _article(" ".join(words))
    placed = where and d.random() < 0.2
    if placed:
        phrase += " " + d.pick(vocab.POSITIONS_TABLE[obj["position"]])
    if record is not None:
        record.update(size=sized, position=placed)
    return phrase


def _relation(a: dict, b: dict) -> str:
    """Where ``a`` is relative to ``b`` (image y grows downwards)."""
    dx, dy = a["cx"] - b["cx"], a["cy"] - b["cy"]
    if abs(dx) >= abs(dy):
        return "left" if dx < 0 else "right"
    return "above" if dy < 0 else "below"


def _join(phrases: list[str], d: Draws, objs: list[dict], paraphrase: bool, record: dict | None = None) -> str:
    """The object phrases as one; ``record["relation"]`` receives the relation of the first object to the second
    that the text states ("left", "right", "above", "below"), or None."""
    if record is not None:
        record["relation"] = None
    if len(phrases) == 1:
        return phrases[0]
    if len(phrases) == 2:
        if not paraphrase:
            return f"{phrases[0]} and {phrases[1]}"
        related = d.random() < 0.5
        options = vocab.RELATIONS[_relation(objs[0], objs[1])] if related else vocab.PAIRINGS
        if record is not None and related:
            record["relation"] = _relation(objs[0], objs[1])
        return f"{phrases[0]} {d.pick(options)} {phrases[1]}"
    return ", ".join(phrases[:-1]) + f" and {phrases[-1]}"


_COUNT_FREE = [t for t, s in enumerate(vocab.CAPTION_TEMPLATES) if "{count}" not in s]


def describe(scene: dict[str, Any], d: Draws, knobs: dict[str, Any], template: int | None = None,
             facts: dict[str, Any] | None = None) -> tuple[str, bool]:
    """One caption of ``scene`` before junk and mismatch: ``(text, omitted)``.

    ``template`` forces a template id (the retrieval set uses distinct ones per image); otherwise
    ``knobs["paraphrase"]`` picks a random template or the fixed one. ``facts`` (a dict), if given, receives
    what the text states, without changing it: ``objects`` (the scene's object indices in the order the text
    names them; each named object's colour is stated), ``size`` and ``position`` (per named object, whether
    its size word / position phrase is stated) and ``relation`` (of the first named object to the second, or
    None). ``caption(..., facts=...)`` passes it through.
    """
    objs = scene["objects"]
    m = len(objs)
    omitted = m > 1 and d.random() < knobs["omit_rate"]
    paraphrase = knobs["paraphrase"]
    order = [0] if omitted else (d.sample(m, m) if paraphrase else list(range(m)))
    if template is None:
        if paraphrase:
            template = d.pick(_COUNT_FREE) if omitted else d.below(len(vocab.CAPTION_TEMPLATES))
        else:
            template = vocab.FIXED_TEMPLATE
    mentioned = [objs[i] for i in order]
    # positions of three objects make captions longer than the text context: at most two
    where = paraphrase and len(mentioned) <= 2
    records: list[dict] = [{} for _ in mentioned]
    phrases = [_object_phrase(o, d, knobs, detail=paraphrase, where=where, record=r)
               for o, r in zip(mentioned, records)]
    bg_words = vocab.BACKGROUNDS_TABLE[vocab.BACKGROUNDS[scene["background"]]]
    bg = d.pick(bg_words) if paraphrase else bg_words[0]
    text = vocab.CAPTION_TEMPLATES[template].format(
        objs=_join(phrases, d, mentioned, paraphrase, record=facts), bg=bg, count=vocab.COUNT_WORDS[len(order) - 1]
    )
    if facts is not None:
        facts.update(objects=list(order), size=[r["size"] for r in records],
                     position=[r["position"] for r in records])
    if paraphrase and d.random() < 0.3:  # alt text is often capitalised
        text = text[0].upper() + text[1:]
    return text, omitted


def _add_junk(text: str, d: Draws) -> str:
    for _ in range(1 + int(d.random() < 0.3)):
        junk, sep = d.pick(vocab.JUNK_PHRASES), d.pick([" ", " - ", " | ", ", "])
        text = f"{junk}{sep}{text}" if d.random() < 0.5 else f"{text}{sep}{junk}"
    return text


def caption(seed: int, index: int, knobs: dict[str, Any], scene: dict | None = None,
            allow_mismatch: bool = True, facts: dict[str, Any] | None = None) -> tuple[str, dict[str, int]]:
    """The alt-text caption of image ``index`` and its noise flags ``{mismatched, omitted, junk}``.

    ``scene`` is re-derived from ``(seed, index)`` if not given. ``facts`` (a dict), if given, receives what
    the caption states about ``scene`` (see ``describe``); when the caption is mismatched they are what the
    replaced caption would have stated, and the flag says so.
    """
    scene = sample_scene(seed, index, knobs) if scene is None else scene
    draws = Draws(seed, index, CAPTION_STREAM)
    text, omitted = describe(scene, draws, knobs, facts=facts)
    junk = draws.random() < knobs["junk_rate"]
    if junk:
        text = _add_junk(text, draws)
    mismatched = allow_mismatch and draws.random() < knobs["mismatch_rate"]
    if mismatched:
        # another image's caption, re-derived from its index: independent of n (prefix property)
        other = draws.below(2**31 - 1)
        other += other == index
        text, _ = caption(seed, other, knobs, allow_mismatch=False)
    return text, dict(mismatched=int(mismatched), omitted=int(omitted), junk=int(junk))


def summary(scene: dict[str, Any]) -> str:
    """One clean clause naming every object with canonical words: "a red star and a blue ring on a ..."."""
    phrases = [_article(f"{vocab.COLOURS[o['colour']]} {vocab.SHAPES[o['shape']]}") for o in scene["objects"]]
    objs = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + f" and {phrases[-1]}"
    return f"{objs} on a {vocab.BACKGROUNDS[scene['background']]} background"


def paraphrases(seed: int, index: int, knobs: dict[str, Any], k: int = 5) -> list[str]:
    """``k`` clean captions of image ``index`` from ``k`` distinct templates (no omission, junk or mismatch).

    The retrieval set (MS-COCO stand-in) uses them: five different descriptions of the true content.
    """
    clean = {**knobs, "omit_rate": 0.0, "paraphrase": True}
    scene = sample_scene(seed, index, knobs)
    d = Draws(seed, index, PARAPHRASE_STREAM)
    templates = d.sample(len(vocab.CAPTION_TEMPLATES), k)
    return [describe(scene, d, clean, template=t)[0] for t in templates]


# --------------------------------------------------------------------------------------------------
# rendering


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
    pts = np.concatenate([np.stack([np.cos(outer), np.sin(outer)], 1),
                          np.stack([d + r2 * np.cos(inner), r2 * np.sin(inner)], 1)])
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
        "arrow": [("poly", np.array([(-1, -0.2), (0.15, -0.2), (0.15, -0.62), (1, 0), (0.15, 0.62),
                                     (0.15, 0.2), (-1, 0.2)]))],
        "chevron": [("poly", _stroke(np.array([(-0.85, 0.4), (0, -0.45), (0.85, 0.4)]), 0.42))],
        "cross": [("poly", _rect(-0.9, -0.2, 0.9, 0.2)), ("poly", _rect(-0.2, -0.9, 0.2, 0.9))],
        "letter t": [("poly", _rect(-0.85, -0.95, 0.85, -0.56)), ("poly", _rect(-0.2, -0.95, 0.2, 0.95))],
        "letter e": [("poly", _rect(-0.7, -0.95, -0.3, 0.95)), ("poly", _rect(-0.7, -0.95, 0.7, -0.6)),
                     ("poly", _rect(-0.7, -0.17, 0.5, 0.17)), ("poly", _rect(-0.7, 0.6, 0.7, 0.95))],
        "letter f": [("poly", _rect(-0.7, -0.95, -0.3, 0.95)), ("poly", _rect(-0.7, -0.95, 0.7, -0.6)),
                     ("poly", _rect(-0.7, -0.17, 0.5, 0.17))],
        "bar": [("poly", _rect(-1.0, -0.2, 1.0, 0.2))],
        "zigzag": [("poly", _stroke(np.stack([zig_x, np.where(np.arange(6) % 2 == 0, 0.42, -0.42)], 1), 0.32))],
        "wave": [("poly", _stroke(np.stack([wave_x * 0.88, 0.42 * np.sin(wave_x * 1.5 * np.pi)], 1), 0.32))],
        "spiral": [("poly", _stroke(_spiral(), 0.26))],
    }
    assert list(g) == vocab.SHAPES
    return g


@lru_cache(maxsize=None)
def _packed_geometry(shape: int) -> tuple[np.ndarray, list[tuple[int, int]], tuple[float, float] | None]:
    """Shape id -> (all polygon points stacked, (start, stop) per polygon, ring (radius, width) or None)."""
    prims = shape_geometry()[vocab.SHAPES[shape]]
    if prims[0][0] == "ring":
        return np.zeros((0, 2)), [], (float(prims[0][1][0, 0]), float(prims[0][1][0, 1]))
    points = np.concatenate([p for _, p in prims])
    stops = np.cumsum([len(p) for _, p in prims]).tolist()
    return points, list(zip([0] + stops[:-1], stops)), None


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
    return img.convert("RGB").resize((canvas, canvas), Image.NEAREST)


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


def make_item(seed: int, index: int, image_size: int, knobs: dict[str, Any]) -> dict[str, Any]:
    """Everything about image ``index``: pixels, caption, summary, objects, boxes and labels."""
    scene = sample_scene(seed, index, knobs)
    image, boxes = render(scene, image_size, _lazy_rng(seed, index), knobs["clutter"])
    text, flags = caption(seed, index, knobs, scene)
    objs = scene["objects"]
    primary = objs[0]
    labels = dict(
        shape=primary["shape"],
        superclass=_SUPER_IDS[primary["shape"]],
        colour=primary["colour"],
        size=primary["size"],
        position=vocab.POSITIONS.index(primary["position"]),
        background=scene["background"],
        count=len(objs),
        **flags,
    )
    return dict(
        image=image, caption=text, summary=summary(scene), boxes=boxes,
        objects=np.array([(o["shape"], o["colour"], o["size"]) for o in objs], np.int64), labels=labels,
    )


_SUPER_IDS = vocab.shape_superclass_ids()


def _render_range(args: tuple) -> tuple[int, np.ndarray, dict[str, Any]]:
    """Worker: images ``[start, stop)`` and their metadata columns (top level so processes can pickle it)."""
    seed, start, stop, image_size, knobs = args
    images = np.empty((stop - start, image_size, image_size, 3), np.uint8)
    captions, summaries, boxes, objects = [], [], [], []
    labels: dict[str, list[int]] = {k: [] for k in LABEL_KEYS}
    for j, index in enumerate(range(start, stop)):
        item = make_item(seed, index, image_size, knobs)
        images[j] = item["image"]
        captions.append(item["caption"])
        summaries.append(item["summary"])
        boxes.append(item["boxes"])
        objects.append(item["objects"])
        for k in LABEL_KEYS:
            labels[k].append(item["labels"][k])
    return start, images, _columns(captions, summaries, boxes, objects, labels)


# --------------------------------------------------------------------------------------------------
# generation and cache
#
# Metadata travels as "columns" (flat arrays, one list of strings per text field) rather than per-image
# objects: 250,000 images of per-image dicts and small arrays would cost hundreds of MB of Python objects.


def _columns(captions: list[str], summaries: list[str], boxes: list[np.ndarray], objects: list[np.ndarray],
             labels: dict[str, Any]) -> dict[str, Any]:
    return dict(
        captions=captions,
        summaries=summaries,
        counts=np.array([len(b) for b in boxes], np.int64),
        boxes=np.concatenate(boxes).astype(np.float32) if boxes else np.zeros((0, 4), np.float32),
        objects=np.concatenate(objects).astype(np.int64) if objects else np.zeros((0, 3), np.int64),
        labels={k: np.asarray(labels[k], np.int64) for k in LABEL_KEYS},
    )


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(
        captions=[c for p in parts for c in p["captions"]],
        summaries=[c for p in parts for c in p["summaries"]],
        counts=np.concatenate([p["counts"] for p in parts]),
        boxes=np.concatenate([p["boxes"] for p in parts]),
        objects=np.concatenate([p["objects"] for p in parts]),
        labels={k: np.concatenate([p["labels"][k] for p in parts]) for k in LABEL_KEYS},
    )


def _world(images: np.ndarray, cols: dict[str, Any], seed: int, knobs: dict[str, Any]) -> World:
    cuts = np.cumsum(cols["counts"])[:-1]
    return World(
        images=images,
        captions=cols["captions"],
        summaries=cols["summaries"],
        boxes=np.split(cols["boxes"], cuts),
        objects=np.split(cols["objects"], cuts),
        labels=cols["labels"],
        seed=seed,
        knobs=dict(knobs),
    )


def _cache_key(seed: int, image_size: int, knobs: dict[str, Any]) -> str:
    blob = json.dumps(dict(version=WORLD_VERSION, seed=seed, image_size=image_size, knobs=knobs), sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:20]


def _cached_sizes(key_dir: Path) -> list[int]:
    if not key_dir.is_dir():
        return []
    return sorted(int(p.name[1:]) for p in key_dir.iterdir() if p.name.startswith("n") and p.name[1:].isdigit())


def _read_columns(path: Path, n: int) -> dict[str, Any]:
    """The metadata of the first ``n`` images of the cached world at ``path``."""
    text = json.loads((path / "text.json").read_text())
    with np.load(path / "meta.npz") as meta:
        counts = meta["counts"][:n]
        m = int(counts.sum())
        return dict(
            captions=text["captions"][:n],
            summaries=text["summaries"][:n],
            counts=counts.astype(np.int64),
            boxes=meta["boxes"][:m],
            objects=meta["objects"][:m].astype(np.int64),
            labels={k: meta[f"label_{k}"][:n].astype(np.int64) for k in LABEL_KEYS},
        )


def _write_columns(path: Path, cols: dict[str, Any]) -> None:
    np.savez(
        path / "meta.npz",
        counts=cols["counts"].astype(np.int8),
        boxes=cols["boxes"].astype(np.float32),
        objects=cols["objects"].astype(np.int16),
        **{f"label_{k}": v for k, v in cols["labels"].items()},
    )
    (path / "text.json").write_text(json.dumps(dict(captions=cols["captions"], summaries=cols["summaries"])))


def _render(n: int, seed: int, image_size: int, knobs: dict[str, Any], images: np.ndarray, start: int,
            workers: int, progress: bool) -> dict[str, Any]:
    """Render indices ``[start, n)`` into ``images[start:n]``; returns their metadata columns."""
    from tqdm import tqdm

    jobs = [(seed, a, min(a + CHUNK, n), image_size, knobs) for a in range(start, n, CHUNK)]
    parts = []
    if workers > 1 and len(jobs) > 1:
        # fork where there is one: spawn re-executes the caller's __main__ in every worker, which deadlocks
        # an unguarded script that is itself inside a results-store lock. The workers only run PIL and
        # numpy, and the bar is created after the pool, so no torch or tqdm thread state is inherited.
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        with mp.get_context(method).Pool(workers) as pool:
            bar = tqdm(total=n - start, desc="rendering world", unit="img", disable=not progress)
            for a, chunk, cols in pool.imap(_render_range, jobs):
                images[a : a + len(chunk)] = chunk
                parts.append(cols)
                bar.update(len(chunk))
    else:
        bar = tqdm(total=n - start, desc="rendering world", unit="img", disable=not progress)
        for job in jobs:
            a, chunk, cols = _render_range(job)
            images[a : a + len(chunk)] = chunk
            parts.append(cols)
            bar.update(len(chunk))
    bar.close()
    return _concat(parts)


def _default_workers(n_render: int) -> int:
    return 1 if n_render < PARALLEL_MIN_N else max(1, min(2, os.cpu_count() or 1))


def generate(
    n: int,
    seed: int,
    image_size: int = 32,
    *,
    workers: int | None = None,
    progress: bool | None = None,
    cache: bool = True,
    **knobs: Any,
) -> World:
    """Generate (or load from the cache) the first ``n`` images of the world ``(seed, image_size, knobs)``.

    Args:
        n: number of images (> 0).
        seed: non-negative int. Evaluation tasks use seeds >= 10**9 (``vlp_lib.data.tasks``): keep
            training seeds below that so no training image is a test image.
        image_size: output side in pixels (> 0); rendering is at 4x and box-downsampled.
        workers: processes for rendering; default 1 below ``PARALLEL_MIN_N`` images to render, else 2.
            Does not change the result.
        progress: show a tqdm bar; default when at least ``PROGRESS_MIN_N`` images are rendered.
        cache: read and write the on-disk cache (``False``: render in memory, for tests and benchmarks).
        **knobs: the world's content and noise, defaults imitate web alt-text:
            min_objects, max_objects (1, 3): objects per image, uniform in [min, max]; 1..3.
            shapes (None = all): names of the shapes that may be drawn.
            colours, backgrounds (None = all): names of the allowed colours / background textures.
            held_out_shapes (()): shapes never drawn (concept-coverage experiments, DIME-FM).
            mismatch_rate (0.1): fraction of captions replaced by another image's caption.
            omit_rate (0.5): probability that a multi-object caption names only the primary object.
            junk_rate (0.3): probability of adding non-visual phrases ("free shipping", "IMG 2041").
            paraphrase (True): draw among many templates, synonyms of sizes, positions and relations;
                ``False``: one fixed template "a red star and a blue ring on a striped background".
            synonym_rate (0.5): probability that a colour is named with a synonym (crimson for red).
            clutter (0.0): 0..1, distractor strokes behind the objects and pixel noise.

    Returns:
        ``World``; ``images`` is memory-mapped from the cache when ``cache`` is on.

    Raises:
        ValueError naming the parameter, before anything is rendered.
    """
    n = check_positive_int("n", n)
    image_size = check_positive_int("image_size", image_size)
    seed = _check_seed(seed)
    eff = check_knobs(**knobs)
    if workers is not None:
        workers = check_positive_int("workers", workers)

    def show(todo: int) -> bool:
        return todo >= PROGRESS_MIN_N if progress is None else bool(progress)

    if not cache:
        images = np.empty((n, image_size, image_size, 3), np.uint8)
        cols = _render(n, seed, image_size, eff, images, 0, workers or _default_workers(n), show(n))
        return _world(images, cols, seed, eff)

    root = cache_dir() / "world"
    root.mkdir(parents=True, exist_ok=True)
    key = _cache_key(seed, image_size, eff)
    key_dir = root / key
    with FileLock(str(root / f"{key}.lock")):
        sizes = _cached_sizes(key_dir)
        if sizes and sizes[-1] >= n:
            return _load(key_dir / f"n{sizes[-1]}", n, seed, eff)
        key_dir.mkdir(exist_ok=True)
        for stale in key_dir.glob(".tmp-*"):  # left by a killed writer: every writer holds the lock
            shutil.rmtree(stale, ignore_errors=True)
        start = sizes[-1] if sizes else 0
        tmp = key_dir / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            images = np.lib.format.open_memmap(tmp / "images.npy", "w+", np.uint8, (n, image_size, image_size, 3))
            parts = []
            if start:  # extend the cached prefix: render only the new indices
                old = key_dir / f"n{start}"
                images[:start] = np.load(old / "images.npy", mmap_mode="r")
                parts.append(_read_columns(old, start))
            todo = n - start
            parts.append(_render(n, seed, image_size, eff, images, start, workers or _default_workers(todo), show(todo)))
            images.flush()
            del images
            _write_columns(tmp, _concat(parts))
            (tmp / "info.json").write_text(json.dumps(
                dict(version=WORLD_VERSION, n=n, seed=seed, image_size=image_size, knobs=eff), indent=1))
            os.replace(tmp, key_dir / f"n{n}")  # publish atomically
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old_n in sizes:  # open memory maps of the old files stay valid (POSIX unlink semantics)
            shutil.rmtree(key_dir / f"n{old_n}", ignore_errors=True)
        return _load(key_dir / f"n{n}", n, seed, eff)


def _load(path: Path, n: int, seed: int, knobs: dict[str, Any]) -> World:
    """The first ``n`` images of the cached world at ``path``, images memory-mapped."""
    return _world(np.load(path / "images.npy", mmap_mode="r")[:n], _read_columns(path, n), seed, knobs)


def sample_grid(images: np.ndarray | World, indices: Sequence[int] | None = None, ncols: int = 8,
                pad: int = 2, scale: int = 1) -> np.ndarray:
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


def gallery(shapes: Sequence[str] | None = None, colour: str = "blue", background: str = "plain",
            image_size: int = 32, size: str = "large") -> np.ndarray:
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
        obj = dict(shape=vocab.SHAPES.index(name), colour=c, size=vocab.SIZES.index(size), cx=0.5, cy=0.5, angle=0.0,
                   position="centre")
        scene = dict(objects=[obj], background=bg, tone=tone, tone2=tone2, texture=dict(variant=0, ox=0.0, oy=0.0))
        out.append(render(scene, image_size, _lazy_rng(0, i), 0.0)[0])
    return np.stack(out)


def caption_statistics(captions: Sequence[str], top: int = 20) -> dict[str, Any]:
    """Length in words of every caption and the ``top`` most frequent words (with their counts)."""
    from collections import Counter

    tokens = [vocab.words(c) for c in captions]
    counts = Counter(w for t in tokens for w in t)
    return dict(lengths=np.array([len(t) for t in tokens], np.int64), top_words=counts.most_common(top))
