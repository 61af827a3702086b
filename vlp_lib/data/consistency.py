"""Semantic consistency of an augmentation: is an image's caption still true of its augmented view?

The generated world knows what every caption states (``world.caption(..., facts=...)``) and where every object
is (``world.object_masks``, ``World.boxes``), so the question can be answered per image and per stated fact
instead of by looking at examples. The augmentation is applied exactly as training applies it (``augment`` with
a seeded ``torch.Generator``), with ``return_params=True`` to learn the crop and flip it drew; object masks are
warped with that same crop and flip, and each stated fact is checked on the augmented view:

- **colour** -- every named object still reads as its named colour: the mean colour of the pixels the object
  covers at least ``INTERIOR`` of (after the warp; the most-covered pixels if none is), classified to the nearest
  colour of ``vocab.COLOUR_TABLE`` in CIELAB. Grayscale turns a chromatic colour grey; hue jitter can move red
  to orange; brightness can move red to brown; blur mixes a thin shape with its background.
- **position** -- every stated position ("in the top left corner") is still the 3 x 3 cell of the object's
  centre (``world``'s own rule, thresholds 0.4 / 0.6), and a stated relation ("left of", "above") is still the
  dominant direction between the two centres. A horizontal flip swaps left and right; a crop moves centres.
- **size** -- every size word is still the size bucket of the object's apparent extent: its drawn extent
  ``SIZE_FRACTIONS[size]`` divided by the square root of the crop's area (a crop zooms in), with bucket edges
  halfway between the world's fractions.
- **visibility** -- every named object keeps at least ``MIN_VISIBLE`` of its box inside the crop.

A caption is *fully true* when every fact it states holds. Shapes, the background word and counts are not
checked (a hidden object already fails visibility). Mismatched captions (another image's caption, false before
any augmentation) are left out of the shares. The augmentation "off" is the measurement's own floor: it reads
every fact true.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from vlp_lib.data import vocab
from vlp_lib.data import world as world_mod
from vlp_lib.data.transforms import AUGMENTATIONS, _denormalize, augment, to_model_input

FACTS = ("colour", "position", "size", "visibility")
# A pixel belongs to an object's interior when the object covers at least this fraction of it.
INTERIOR = 0.75
# An object stays visible when at least this fraction of its box area is inside the crop.
MIN_VISIBLE = 0.5
# Size buckets: the apparent extent (fraction of the side) is small below the first edge, large from the second.
SIZE_EDGES = tuple((a + b) / 2 for a, b in zip(world_mod.SIZE_FRACTIONS, world_mod.SIZE_FRACTIONS[1:]))


# --------------------------------------------------------------------------------------------------
# colour names


def _srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in ``[0, 1]`` (``[..., 3]``) -> CIELAB (D65 white)."""
    rgb = np.asarray(rgb, np.float64)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = lin @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


_COLOUR_LAB = _srgb_to_lab(np.array([vocab.COLOUR_TABLE[c]["rgb"] for c in vocab.COLOURS]) / 255.0)


def colour_name_ids(rgb: np.ndarray) -> np.ndarray:
    """Colour id (``vocab.COLOURS``) nearest in CIELAB to each sRGB colour in ``[0, 1]`` (``[..., 3]``)."""
    lab = _srgb_to_lab(rgb)
    return np.linalg.norm(lab[..., None, :] - _COLOUR_LAB, axis=-1).argmin(-1)


def size_bucket(extent: np.ndarray | float) -> np.ndarray:
    """Size id (``vocab.SIZES``) of an object whose extent is ``extent`` of the image side."""
    return np.searchsorted(np.asarray(SIZE_EDGES), np.asarray(extent), side="right")


# --------------------------------------------------------------------------------------------------
# per image


def _warp(masks: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """``masks [N, M, S, S]`` under the crop and flip ``theta`` exactly as ``random_resized_crop`` warps images."""
    grid = F.affine_grid(theta.to(masks.dtype), list(masks.shape), align_corners=False)
    return F.grid_sample(masks, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def _to_output(u: np.ndarray, theta_row: np.ndarray) -> np.ndarray:
    """Input coordinates in ``[-1, 1]`` -> output coordinates, for one axis of a crop (``theta`` is diagonal)."""
    return (u - theta_row[2]) / theta_row[0] if theta_row[0] else u


def check(world: world_mod.World, name: str, seed: int = 0, indices: Sequence[int] | None = None) -> pd.DataFrame:
    """Which facts of each caption still hold after augmentation ``name`` (one row per image).

    The images ``world.images[indices]`` (default all) are augmented in one batch by ``augment(x, name,
    torch.Generator().manual_seed(seed))``, as training does. Columns: ``index`` (into the world),
    ``mismatched`` (the caption is another image's), one column per fact of ``FACTS`` (1.0 if every statement
    of that kind holds, 0.0 if one fails, NaN if the caption states none), ``true`` (1.0 when every stated fact
    holds) and the operations drawn for the image (``flip``, ``jitter``, ``gray``, ``blur``: applied or not).
    """
    if name not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {sorted(AUGMENTATIONS)}, got {name!r}")
    idx = np.arange(len(world)) if indices is None else np.asarray(indices, np.int64)
    if idx.size == 0:
        raise ValueError("indices must not be empty")
    size = world.image_size
    n = len(idx)
    scenes = [world_mod.sample_scene(world.seed, int(i), world.knobs) for i in idx]
    facts = []
    for i, scene in zip(idx, scenes):
        f: dict[str, Any] = {}
        text, flags = world_mod.caption(world.seed, int(i), world.knobs, scene, facts=f)
        f["mismatched"] = bool(flags["mismatched"])
        facts.append(f)
    m_max = max(len(s["objects"]) for s in scenes)
    masks = np.zeros((n, m_max, size, size), np.float32)
    for k, scene in enumerate(scenes):
        masks[k, : len(scene["objects"])] = world_mod.object_masks(scene, size)

    x = to_model_input(np.asarray(world.images[idx]))
    y, params = augment(x, name, generator=torch.Generator().manual_seed(seed), return_params=True)
    rgb = _denormalize(y).permute(0, 2, 3, 1).numpy()  # [n, S, S, 3] in [0, 1]
    warped = _warp(torch.from_numpy(masks), params["theta"]).numpy()
    theta = params["theta"].numpy().astype(np.float64)
    area = np.abs(theta[:, 0, 0] * theta[:, 1, 1])

    rows = []
    for k, (i, scene, f) in enumerate(zip(idx, scenes, facts)):
        objs = scene["objects"]
        tx, ty = theta[k, 0], theta[k, 1]
        # object centres in the augmented view, as fractions of the side (scene coordinates)
        centres = [((_to_output(2 * o["cx"] - 1, tx) + 1) / 2, (_to_output(2 * o["cy"] - 1, ty) + 1) / 2) for o in objs]
        ok: dict[str, list[bool]] = {fact: [] for fact in FACTS}
        for slot, j in enumerate(f["objects"]):
            o = objs[j]
            cover = warped[k, j]
            inside = cover >= min(INTERIOR, cover.max()) if cover.max() > 0 else None
            seen = -1 if inside is None else int(colour_name_ids(rgb[k][inside].mean(0)))
            ok["colour"].append(seen == o["colour"])
            box = world.boxes[i][j].astype(np.float64) / size * 2 - 1  # x0, y0, x1, y1 in [-1, 1]
            xs = np.sort(_to_output(box[[0, 2]], tx))
            ys = np.sort(_to_output(box[[1, 3]], ty))
            box_area = (xs[1] - xs[0]) * (ys[1] - ys[0])
            kept = (np.clip(xs, -1, 1)[1] - np.clip(xs, -1, 1)[0]) * (np.clip(ys, -1, 1)[1] - np.clip(ys, -1, 1)[0])
            ok["visibility"].append(bool(box_area <= 0 or kept / box_area >= MIN_VISIBLE))
            if f["size"][slot]:
                extent = world_mod.SIZE_FRACTIONS[o["size"]] / np.sqrt(area[k])
                ok["size"].append(int(size_bucket(extent)) == o["size"])
            if f["position"][slot]:
                ok["position"].append(world_mod._position_name(*centres[j]) == o["position"])
        if f["relation"] is not None:
            a, b = f["objects"][:2]
            moved = [dict(cx=c[0], cy=c[1]) for c in (centres[a], centres[b])]
            ok["position"].append(world_mod._relation(*moved) == f["relation"])
        row: dict[str, Any] = {"index": int(i), "mismatched": f["mismatched"]}
        for fact, results in ok.items():
            row[fact] = float(all(results)) if results else np.nan
        row["true"] = float(all(all(r) for r in ok.values()))
        for op in ("flip", "jitter", "gray", "blur"):
            row[op] = bool(params[op][k])
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# summaries


def summarize(per_image: pd.DataFrame) -> pd.Series:
    """Shares of a ``check`` result, mismatched captions left out: ``true`` (caption fully true), each fact's
    share among the captions that state it, and the counts ``n`` and ``n_<fact>`` behind them."""
    ok = per_image[~per_image["mismatched"]]
    out = {"true": ok["true"].mean()}
    out.update({fact: ok[fact].mean() for fact in FACTS})  # NaN (not stated) is skipped by mean
    out["n"] = len(ok)
    out.update({f"n_{fact}": int(ok[fact].notna().sum()) for fact in FACTS})
    return pd.Series(out)


def summary_table(checked: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``summarize`` of each ``check`` result of ``{augmentation: per_image}``: one row per augmentation (index
    ``augmentation``), shares as floats and counts as ints."""
    table = pd.DataFrame({name: summarize(per_image) for name, per_image in checked.items()}).T
    table.index.name = "augmentation"
    return table.astype({c: int for c in ["n"] + [f"n_{fact}" for fact in FACTS]})


def consistency_table(
    world: world_mod.World, names: Sequence[str] = ("none", "protoclip", "simclr"), seed: int = 0
) -> pd.DataFrame:
    """``summarize(check(world, name, seed))`` for each augmentation: one row per name (see ``summary_table``)."""
    return summary_table({name: check(world, name, seed) for name in names})


def by_operation(per_image: pd.DataFrame, ops: Sequence[str] = ("flip", "jitter", "gray", "blur")) -> pd.DataFrame:
    """Fact shares of a ``check`` result split by whether each operation was applied to the image: rows
    ``(operation, applied)``, the columns of ``summarize``. Shows which operation breaks which fact."""
    ok = per_image[~per_image["mismatched"]]
    rows = {}
    for op in ops:
        for applied in (False, True):
            part = ok[ok[op] == applied]
            if len(part):
                rows[(op, applied)] = summarize(part)
    table = pd.DataFrame(rows).T
    table.index.names = ["operation", "applied"]
    return table
