"""One image's item (``make_item``) and the ``World`` container of many, with the flat metadata "columns"
that generation and the cache pass around.

Metadata travels as columns (flat arrays, one list of strings per text field) rather than per-image objects:
250,000 images of per-image dicts and small arrays would cost hundreds of MB of Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlp_lib.data import vocab
from vlp_lib.data.world.captioning import caption, summary
from vlp_lib.data.world.randomness import _lazy_rng
from vlp_lib.data.world.rendering import render
from vlp_lib.data.world.scenes import relation_labels, sample_scene

# Label arrays every world carries (all of the primary object where it is per object).
LABEL_KEYS = (
    "shape",
    "superclass",
    "colour",
    "size",
    "position",
    "background",
    "count",
    "mismatched",
    "omitted",
    "junk",
)


@dataclass
class World:
    """A generated image-caption world (see ``generate``)."""

    images: np.ndarray  # uint8 [n, H, W, 3]; memory-mapped when loaded from the cache
    captions: list[str]  # alt-text style, noisy
    summaries: list[str]  # the oracle summary: one clean clause naming every object (see ``summary``)
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

    @property
    def relations(self) -> np.ndarray:
        """int64 ``[n]``: relation of the primary object to the secondary one from their box centres, an index
        into ``RELATION_NAMES`` (left, right, above, below), ``-1`` for one-object images (``relation_labels``,
        computed on each access)."""
        return relation_labels(self.boxes)


_SUPER_IDS = vocab.shape_superclass_ids()


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
        image=image,
        caption=text,
        summary=summary(scene),
        boxes=boxes,
        objects=np.array([(o["shape"], o["colour"], o["size"]) for o in objs], np.int64),
        labels=labels,
    )


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


def _columns(
    captions: list[str],
    summaries: list[str],
    boxes: list[np.ndarray],
    objects: list[np.ndarray],
    labels: dict[str, Any],
) -> dict[str, Any]:
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
