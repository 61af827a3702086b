"""Generation and the on-disk cache: ``generate`` renders (in worker processes for large worlds) or loads a
world (see the package docstring of ``vlp_lib.data.world`` for the cache layout)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from vlp_lib.config import check_positive_int
from vlp_lib.data import vocab
from vlp_lib.data.world.items import LABEL_KEYS, World, _concat, _render_range, _world
from vlp_lib.data.world.validation import _check_seed, check_knobs
from vlp_lib.paths import cache_dir


def world_code(folder: Path = Path(__file__).parent, vocabulary: Path = Path(vocab.__file__)) -> str:
    """A hash of the source that makes a world: this package (scenes, rendering, captions) and the vocabulary. It is
    part of the cache key, so a change to how worlds are made renders them again; nothing is bumped by hand."""
    h = hashlib.sha256()
    for path in [*sorted(folder.glob("*.py")), vocabulary]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


WORLD_VERSION = world_code()

# Worlds at least this large are rendered by worker processes, and show a progress bar.
PARALLEL_MIN_N = 4_000
PROGRESS_MIN_N = 5_000
CHUNK = 1_000


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


def _render(
    n: int,
    seed: int,
    image_size: int,
    knobs: dict[str, Any],
    images: np.ndarray,
    start: int,
    workers: int,
    progress: bool,
) -> dict[str, Any]:
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
            parts.append(
                _render(n, seed, image_size, eff, images, start, workers or _default_workers(todo), show(todo))
            )
            images.flush()
            del images
            _write_columns(tmp, _concat(parts))
            (tmp / "info.json").write_text(
                json.dumps(dict(version=WORLD_VERSION, n=n, seed=seed, image_size=image_size, knobs=eff), indent=1)
            )
            os.replace(tmp, key_dir / f"n{n}")  # publish atomically
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old_n in sizes:  # open memory maps of the old files stay valid (POSIX unlink semantics)
            shutil.rmtree(key_dir / f"n{old_n}", ignore_errors=True)
        return _load(key_dir / f"n{n}", n, seed, eff)


def _load(path: Path, n: int, seed: int, knobs: dict[str, Any]) -> World:
    """The first ``n`` images of the cached world at ``path``, images memory-mapped."""
    return _world(np.load(path / "images.npy", mmap_mode="r")[:n], _read_columns(path, n), seed, knobs)
