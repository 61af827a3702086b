"""Real paired data from an OpenCLIP-style CSV: one row per pair, an image path and a caption.

The same ``PairedData`` as the generated world, so the trainer and every method run unchanged on
real data. Images are decoded once, resized (shorter side, then centre crop) to the model's size
and cached as a uint8 ``.npy`` next to the CSV's cache key, so a second run only memory-maps them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from PIL import Image
from tqdm import tqdm

from ..paths import cache_dir
from .paired import PairedData, tokenize_all


def check_csv(path: str | os.PathLike, image_key: str = "filepath", caption_key: str = "title",
              separator: str = "\t") -> pd.DataFrame:
    """Read and validate the CSV (``ValueError`` naming ``train_data`` for a missing file, missing
    columns or missing image files) before anything is decoded."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"train_data: no such CSV file {str(path)!r}")
    frame = pd.read_csv(path, sep=separator)
    for key in (image_key, caption_key):
        if key not in frame.columns:
            raise ValueError(f"train_data: column {key!r} not in {str(path)!r} (columns: {list(frame.columns)})")
    if frame.empty:
        raise ValueError(f"train_data: {str(path)!r} has no rows")
    files = [_resolve(path, f) for f in frame[image_key]]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"train_data: {len(missing)} image file(s) missing, e.g. {missing[0]!r}")
    return frame


def _resolve(csv_path: Path, image_path: str) -> Path:
    p = Path(image_path)
    return p if p.is_absolute() else csv_path.parent / p


def _load_image(path: Path, size: int) -> np.ndarray:
    with Image.open(path) as im:
        im = im.convert("RGB")
        scale = size / min(im.size)
        im = im.resize((max(size, round(im.width * scale)), max(size, round(im.height * scale))), Image.BICUBIC)
        left, top = (im.width - size) // 2, (im.height - size) // 2
        return np.asarray(im.crop((left, top, left + size, top + size)), dtype=np.uint8)


def load_csv(path: str | os.PathLike, tokenizer: Callable[[Sequence[str]], torch.Tensor], image_size: int,
             image_key: str = "filepath", caption_key: str = "title", separator: str = "\t") -> PairedData:
    """Pairs from an OpenCLIP CSV (tab-separated by default, as open_clip's ``--csv-separator``)."""
    path = Path(path).resolve()
    frame = check_csv(path, image_key, caption_key, separator)
    stat = path.stat()
    key = hashlib.sha256(f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{image_size}".encode()).hexdigest()[:16]
    cached = cache_dir() / "csv" / f"{key}.npy"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp.npy")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(frame), image_size, image_size, 3))
        for i, f in enumerate(tqdm(frame[image_key], desc="decoding images", disable=len(frame) < 1000)):
            out[i] = _load_image(_resolve(path, f), image_size)
        out.flush()
        del out
        os.replace(tmp, cached)
    captions = [str(c) for c in frame[caption_key]]
    return PairedData(np.load(cached, mmap_mode="r"), captions, tokenize_all(tokenizer, captions))
