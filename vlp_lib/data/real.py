"""Real image-text pairs for training: an OpenCLIP CSV or WebDataset shards, read into the same ``PairedData`` as
the generated world, so the trainer, every method and the evaluation run unchanged on them.

Sources (``train_data``):

- an OpenCLIP CSV (``.csv`` / ``.tsv``): open_clip's ``--csv-img-key filepath --csv-caption-key title``,
  tab-separated as open_clip's default ``--csv-separator``, or comma-separated when the header has no tab; image
  paths absolute or relative to the CSV's folder;
- WebDataset shards: one ``.tar``, a brace pattern as open_clip's ``--train-data`` (``shards/{00000..00009}.tar``)
  or a folder of ``.tar`` files; each sample an image (``jpg``, ``jpeg``, ``png`` or ``webp``) and its caption
  (``txt``) under one key (``vlp_lib.data.shards`` writes the generated world in this format).

Decoding runs in torch ``DataLoader`` workers: read, decode (PIL), convert to RGB, resize the shorter side and
centre-crop to the model's size. The decoded uint8 images are written once to a memory-mapped cache keyed by the
source's files (the CSV and its images, or the shards: path, size, modification time) and the image size; the
next run maps it. A cache rather than a
stream, because the trainer's seeded episodes (exact resume, ProtoCLIP's K-Means over an episode) index the whole
set; at 64 px a million pairs take 12 GB of disk. Streaming web-scale data is not implemented.

Bad samples are skipped and counted, never fatal one by one: a missing image file, bytes that are not an image, a
sample without an image or without a caption, an empty caption, a shard cut short. When more than
``MAX_BAD_FRACTION`` of a source is bad (or nothing is left) it is refused with a ``ValueError`` naming
``train_data``, the counts and the first examples: a data set that broken is a wrong path or a wrong format, not
noise. Missing files and unreadable shards are found before any decoding. Captions longer than the context are
truncated, as open_clip's tokenizers truncate them, and counted (``LoadReport``).
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import tarfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import torch
from PIL import Image

from vlp_lib.data.paired import PairedData, tokenize_all
from vlp_lib.files import files_digest
from vlp_lib.paths import DATA_PREFIX, cache_dir, resolve_data

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp")
CAPTION_EXTENSION = "txt"
CSV_IMAGE_KEY, CSV_CAPTION_KEY = "filepath", "title"  # open_clip's defaults
MAX_BAD_FRACTION = 0.05
EXAMPLES = 3  # bad samples quoted in a report or an error


@dataclass(frozen=True)
class Sample:
    """Where one pair lives: a CSV row (``image`` a file path, ``caption`` its text) or a shard member (``image``
    the shard's path, ``offset`` / ``size`` of the image bytes and of the caption bytes inside it)."""

    key: str
    image: str
    caption: str | None = None
    image_span: tuple[int, int] | None = None
    caption_span: tuple[int, int] | None = None


@dataclass
class Source:
    """A checked training source: its ``kind`` ("csv" | "shards"), the files that identify it, the samples found
    and the bad ones already known (``{reason: [key, ...]}``) before decoding."""

    kind: str
    files: list[Path]
    samples: list[Sample]
    bad: dict[str, list[str]] = field(default_factory=dict)

    @property
    def n_bad(self) -> int:
        return sum(len(v) for v in self.bad.values())

    def cache_key(self, image_size: int) -> str:
        ident = [(str(f), (st := f.stat()).st_size, st.st_mtime_ns) for f in self.files]
        return hashlib.sha256(json.dumps([self.kind, ident, image_size]).encode()).hexdigest()[:16]


@dataclass
class LoadReport:
    """What loading a source found: pairs kept, bad samples skipped by reason (with examples), captions
    truncated to the context."""

    kept: int
    bad: dict[str, int]
    examples: dict[str, list[str]]
    truncated: int = 0

    def summary(self) -> str:
        parts = [f"{self.kept} pairs"]
        if self.bad:
            parts.append("skipped " + ", ".join(f"{n} {reason}" for reason, n in sorted(self.bad.items())))
        if self.truncated:
            parts.append(f"{self.truncated} captions truncated to the context")
        return "; ".join(parts)


def is_world(train_data: str) -> bool:
    return str(train_data) == "world"


def config_path(train_data: str) -> str:
    """How a run's config names real ``train_data``: ``"data:..."`` as given (a data set the book builds, the same
    key on every machine), any other path absolute."""
    return train_data if train_data.startswith(DATA_PREFIX) else os.path.abspath(train_data)


def check_source(train_data: str | os.PathLike) -> Source:
    """The source ``train_data`` names, checked before anything is decoded: ``ValueError`` naming ``train_data``
    for a path that does not exist, a CSV without rows or without its columns, a shard that is not a tar archive, no
    sample at all, or more than ``MAX_BAD_FRACTION`` of the samples already known bad (missing image files, shard
    members without an image or a caption)."""
    spec = resolve_data(str(train_data))
    path = Path(spec)
    if path.suffix.lower() in (".csv", ".tsv"):
        source = _csv_source(path)
    elif path.is_dir() or ".tar" in spec:
        source = _shard_source(spec)
    else:
        raise ValueError(
            f"train_data must be 'world', an OpenCLIP CSV (.csv / .tsv), WebDataset shards (.tar, a "
            f"brace pattern such as 'shards/{{00000..00009}}.tar', or a folder of .tar files), "
            f"got {spec!r}"
        )
    check_bad(f"train_data {spec!r}", len(source.samples) + source.n_bad, source.n_bad, source.bad)
    return source


def check_bad(spec: str, total: int, n_bad: int, bad: dict[str, list[str]]) -> None:
    """``ValueError`` naming ``spec`` (which starts with the parameter) when ``n_bad`` of ``total`` samples is all
    of them or more than ``MAX_BAD_FRACTION``."""
    if n_bad and (n_bad == total or n_bad > MAX_BAD_FRACTION * total):
        details = "; ".join(
            f"{len(keys)} {reason} (e.g. {', '.join(map(repr, keys[:EXAMPLES]))})"
            for reason, keys in sorted(bad.items())
        )
        raise ValueError(f"{spec}: {n_bad} of {total} samples are bad, more than {MAX_BAD_FRACTION:.0%}: {details}")


def _csv_source(path: Path) -> Source:
    if not path.is_file():
        raise ValueError(f"train_data: no such CSV file {str(path)!r}")
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline()
    if not header.strip():
        raise ValueError(f"train_data: {str(path)!r} is empty (no header, no rows)")
    separator = "\t" if "\t" in header else ","
    try:
        frame = pd.read_csv(path, sep=separator, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ValueError(f"train_data: {str(path)!r} is not a readable CSV: {e}") from None
    for key in (CSV_IMAGE_KEY, CSV_CAPTION_KEY):
        if key not in frame.columns:
            raise ValueError(
                f"train_data: column {key!r} not in {str(path)!r} (columns: {list(frame.columns)}; "
                f"open_clip's --csv-img-key / --csv-caption-key defaults)"
            )
    if frame.empty:
        raise ValueError(f"train_data: {str(path)!r} has no rows")
    samples: list[Sample] = []
    bad: dict[str, list[str]] = {}
    for i, (image, caption) in enumerate(zip(frame[CSV_IMAGE_KEY], frame[CSV_CAPTION_KEY])):
        file = Path(image) if Path(image).is_absolute() else path.parent / image
        key = f"row {i + 2}: {image}"  # the file's line number (the header is line 1)
        if not image or not file.is_file():
            bad.setdefault("missing image file", []).append(key)
        elif not caption.strip():
            bad.setdefault("empty caption", []).append(key)
        else:
            samples.append(Sample(key, str(file), caption))
    # the key covers the image files too: replacing an image under the same CSV decodes again
    return Source("csv", [path.resolve(), *(Path(sample.image) for sample in samples)], samples, bad)


def shard_files(spec: str) -> list[Path]:
    """The shard files of ``spec``: a folder's ``*.tar`` (sorted), a brace pattern (open_clip's
    ``{00000..00009}``), a glob, or one file; ``ValueError`` naming ``train_data`` when none exists."""
    from braceexpand import braceexpand

    path = Path(spec)
    if path.is_dir():
        files = sorted(path.glob("*.tar"))
        if not files:
            raise ValueError(f"train_data: folder {spec!r} holds no .tar shard")
        return files
    files = [Path(f) for pattern in braceexpand(spec) for f in (sorted(glob.glob(pattern)) or [pattern])]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"train_data: {len(missing)} shard(s) of {spec!r} do not exist, e.g. {missing[0]!r}")
    return files


def _shard_source(spec: str) -> Source:
    files = shard_files(spec)
    samples: list[Sample] = []
    bad: dict[str, list[str]] = {}
    for shard in files:
        members, error = _tar_members(shard)
        if error is not None and not members:
            raise ValueError(f"train_data: shard {str(shard)!r} is not a readable tar archive ({error})")
        if error is not None:
            bad.setdefault("cut off by a truncated shard", []).append(f"{shard.name} after {len(members)} members")
        for key, parts in _group(members).items():
            image_ext = next((e for e in IMAGE_EXTENSIONS if e in parts), None)
            name = f"{shard.name}:{key}"
            if image_ext is None:
                bad.setdefault("no image in sample", []).append(name)
            elif CAPTION_EXTENSION not in parts:
                bad.setdefault("no caption in sample", []).append(name)
            else:
                samples.append(Sample(name, str(shard.resolve()), None, parts[image_ext], parts[CAPTION_EXTENSION]))
    return Source("shards", [f.resolve() for f in files], samples, bad)


def _tar_members(shard: Path) -> tuple[list[tarfile.TarInfo], str | None]:
    """The regular-file members of ``shard`` in order, and the error that stopped the reading (``None``: read to the
    end). Only the headers are read."""
    members: list[tarfile.TarInfo] = []
    try:
        with tarfile.open(shard, "r:") as tar:
            while (info := tar.next()) is not None:
                if info.isfile():
                    members.append(info)
    except (tarfile.TarError, OSError, EOFError) as e:
        return members, f"{type(e).__name__}: {e}"
    # tarfile stops quietly at a cut inside a member's data or between members: a whole archive ends in two zero
    # blocks, and every member's data lies inside the file
    size = shard.stat().st_size
    whole = [m for m in members if m.offset_data + m.size <= size]
    with open(shard, "rb") as f:
        f.seek(max(0, size - 1024))
        ended = size >= 1024 and not any(f.read())
    return (whole, None) if ended and len(whole) == len(members) else (whole, "no end-of-archive marker")


def _group(members: list[tarfile.TarInfo]) -> dict[str, dict[str, tuple[int, int]]]:
    """WebDataset's grouping: a sample's key is a member's name up to the first dot of its base name, its field
    the (lower-case) rest; ``{key: {field: (offset, size)}}`` in first-seen order."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for info in members:
        folder, _, base = info.name.rpartition("/")
        stem, dot, ext = base.partition(".")
        if not dot:
            continue
        key = f"{folder}/{stem}" if folder else stem
        out.setdefault(key, {})[ext.lower()] = (info.offset_data, info.size)
    return out


# ----------------------------------------------------------------------------------------------------------------
# decoding (in DataLoader workers)


def to_square(image: Image.Image, size: int) -> np.ndarray:
    """``image`` as uint8 RGB ``[size, size, 3]``: the shorter side resized to ``size`` (bicubic), centre crop."""
    image = image.convert("RGB")
    scale = size / min(image.size)
    image = image.resize(
        (max(size, round(image.width * scale)), max(size, round(image.height * scale))), Image.Resampling.BICUBIC
    )
    left, top = (image.width - size) // 2, (image.height - size) // 2
    return np.asarray(image.crop((left, top, left + size, top + size)), dtype=np.uint8)


def decode_image(data: bytes | str, size: int) -> np.ndarray:
    """Decode image bytes (or a file path) to ``to_square``; PIL's errors (not an image, truncated) propagate."""
    with Image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as image:
        image.load()
        return to_square(image, size)


def _read_span(path: str, span: tuple[int, int]) -> bytes:
    with open(path, "rb") as f:
        f.seek(span[0])
        data = f.read(span[1])
    if len(data) != span[1]:
        raise OSError(f"read {len(data)} of {span[1]} bytes")
    return data


class _Decode(torch.utils.data.Dataset):
    """Sample ``i`` -> ``(i, image uint8 or None, caption or None, reason or "")``: a bad sample is reported, never
    raised, so one broken file does not stop the workers."""

    def __init__(self, samples: Sequence[Sample], size: int):
        self.samples, self.size = samples, size

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[int, np.ndarray | None, str | None, str]:
        s = self.samples[i]
        try:
            # a sample without a caption span carries its caption (CSV rows, folder images)
            caption = (
                cast(str, s.caption) if s.caption_span is None else _read_span(s.image, s.caption_span).decode("utf-8")
            )
        except (OSError, UnicodeDecodeError):
            return i, None, None, "unreadable caption"
        if not caption.strip():
            return i, None, None, "empty caption"
        try:
            data = s.image if s.image_span is None else _read_span(s.image, s.image_span)
            return i, decode_image(data, self.size), caption.strip(), ""
        except FileNotFoundError:
            return i, None, None, "missing image file"
        except (OSError, ValueError, Image.DecompressionBombError, SyntaxError):
            return i, None, None, "not a decodable image"


def decoded(samples: Sequence[Sample], size: int, workers: int, progress: bool = False):
    """``(i, image, caption, reason)`` for every sample, decoded by ``workers`` DataLoader workers (in batches of 64,
    not in order across workers); ``reason`` is "" for a good sample, else why it is bad (image and caption
    ``None``)."""
    from tqdm import tqdm

    loader = torch.utils.data.DataLoader(_Decode(samples, size), batch_size=64, num_workers=workers, collate_fn=list)
    for batch in tqdm(loader, desc="decoding images", total=len(loader), disable=not progress or len(samples) < 1000):
        yield from batch


def _decode_all(source: Source, size: int, workers: int, progress: bool, out: Path) -> tuple[list[str], dict]:
    """Decode every sample with ``workers`` DataLoader workers into the uint8 ``.npy`` file ``out`` (``[kept, size,
    size, 3]``, through a memory map: the images never sit in memory at once); returns the kept captions and
    ``{reason: [key, ...]}`` of the bad samples (those known before decoding included)."""
    n = len(source.samples)
    staging = out.with_name(f".{out.stem}.{os.getpid()}.staging.npy")
    images = np.lib.format.open_memmap(staging, mode="w+", dtype=np.uint8, shape=(max(n, 1), size, size, 3))
    captions: list[str | None] = [None] * n
    bad = {reason: list(keys) for reason, keys in source.bad.items()}
    for i, image, caption, reason in decoded(source.samples, size, workers, progress):
        if reason:
            bad.setdefault(reason, []).append(source.samples[i].key)
        else:
            images[i], captions[i] = image, caption
    keep = [i for i, c in enumerate(captions) if c is not None]
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.npy")
    if len(keep) == n:
        images.flush()
        del images
        os.replace(staging, tmp)
    else:  # compact: the kept rows, in order
        kept = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(keep), size, size, 3))
        for start in range(0, len(keep), 4096):
            kept[start : start + 4096] = images[keep[start : start + 4096]]
        kept.flush()
        del kept, images
        staging.unlink()
    os.replace(tmp, out)
    return [c for c in captions if c is not None], bad  # the captions of ``keep``, in order


def default_workers() -> int:
    return max(1, min(4, (os.cpu_count() or 1)))


def load_pairs(
    train_data: str | os.PathLike,
    tokenizer: Callable[[Sequence[str]], torch.Tensor],
    image_size: int,
    workers: int | None = None,
    progress: bool = True,
) -> tuple[PairedData, LoadReport]:
    """The pairs of a CSV or shard source (``check_source``) at ``image_size``, decoded once by ``workers``
    DataLoader workers (default: up to 4) into the cache and memory-mapped from it afterwards; the bad samples
    skipped (``ValueError`` naming ``train_data`` past ``MAX_BAD_FRACTION``); captions tokenized with ``tokenizer``
    (truncated at its context). Returns the data and what was found (``LoadReport``, also warned when anything
    was skipped or truncated)."""
    source = check_source(train_data)
    folder = cache_dir() / "real"
    key = source.cache_key(image_size)
    images_file, meta_file = folder / f"{key}.npy", folder / f"{key}.json"
    meta = _read_meta(images_file, meta_file)
    if meta is None:
        folder.mkdir(parents=True, exist_ok=True)
        meta_file.unlink(missing_ok=True)  # the metadata marks a whole cache: gone until the images are rewritten
        captions, bad = _decode_all(
            source, image_size, default_workers() if workers is None else workers, progress, images_file
        )
        total = len(source.samples) + source.n_bad
        check_bad(f"train_data {str(train_data)!r}", total, sum(len(v) for v in bad.values()), bad)
        meta = {"captions": captions, "bad": bad, "n": len(captions)}
        tmp_meta = meta_file.with_name(f".{meta_file.name}.{os.getpid()}.tmp")
        tmp_meta.write_text(json.dumps(meta))
        os.replace(tmp_meta, meta_file)
    captions = meta["captions"]
    tokens = tokenize_all(tokenizer, captions)
    report = LoadReport(
        len(captions),
        {r: len(k) for r, k in meta["bad"].items()},
        {r: k[:EXAMPLES] for r, k in meta["bad"].items()},
        _n_truncated(tokenizer, captions, tokens),
    )
    if report.bad or report.truncated:
        warnings.warn(f"train_data {str(train_data)!r}: {report.summary()}", stacklevel=2)
    return PairedData(np.load(images_file, mmap_mode="r"), captions, tokens), report


def _n_truncated(tokenizer: Any, captions: Sequence[str], tokens: torch.Tensor) -> int:
    """Captions with more tokens than the context holds between start and end. Only a row that fills the context
    (no padding, id 0, left) can be one; those are encoded again (``tokenizer.encode``: the world's
    ``WordTokenizer`` and open_clip's ``SimpleTokenizer`` both have it) to tell a caption that fits exactly from a
    longer one, which the cut rows cannot."""
    encode, context = getattr(tokenizer, "encode", None), getattr(tokenizer, "context_length", None)
    if encode is None or context is None or not len(tokens):
        return 0
    full = np.flatnonzero((tokens[:, -1] != 0).numpy())
    return sum(len(encode(captions[i])) > context - 2 for i in full.tolist())


def _read_meta(images_file: Path, meta_file: Path) -> dict | None:
    """The cache's metadata when the cache is whole (both files, readable, as many images as captions), else
    ``None``: a cache cut short by an interruption or a full disk is decoded again, never loaded."""
    try:
        meta = json.loads(meta_file.read_text())
        images = np.load(images_file, mmap_mode="r")
    except (OSError, ValueError, json.JSONDecodeError):
        return None
    return (
        meta if isinstance(meta, dict) and images.shape[0] == meta.get("n") == len(meta.get("captions", ())) else None
    )


def content_digest(train_data: str | os.PathLike, source: Source | None = None) -> str:
    """The digest of the contents of every file ``train_data`` reads (``files.files_digest``: the CSV and each image
    it names, or the shards): what keys a run on it, so that other pixels or captions under the same path are
    another run (``RunConfig.data_digest``). ``source``: ``train_data``'s checked source where the caller has it."""
    return files_digest((source or check_source(train_data)).files)


def count_pairs(train_data: str | os.PathLike) -> int:
    """How many pairs a source offers before decoding (``check_source``: samples not already known bad)."""
    return len(check_source(train_data).samples)
