"""Real evaluation data: a classification task from image folders (torchvision's ``ImageFolder`` layout).

Named in ``eval_tasks`` as ``"folder:<path>"``, where ``<path>`` holds ``train/<class>/*`` and ``test/<class>/*``
(the same classes in both; ``"folder:data:<path>"``: a folder inside ``paths.data_dir()``); its metrics are keyed by
the folder's name (``"folder:data/pets"`` -> ``pets/zeroshot_top1``, ``pets/linear`` ...). Class names are the
folder names (``_`` read as a space), zero-shot prompts ``"a photo of a {}."``. Images are decoded in DataLoader
workers (``data.real``) at ``IMAGE_SIZE`` (CLIP's evaluation size; ``encode_images`` resizes to the model's), a split
larger than asked is subsampled with a fixed seed, and an image that does not decode is skipped and counted (refused
past ``real.MAX_BAD_FRACTION``).
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np

from vlp_lib.data import real
from vlp_lib.data.labelled import Task
from vlp_lib.files import files_digest
from vlp_lib.paths import resolve_data

PREFIX = "folder:"
IMAGE_SIZE = 224
TEMPLATES = ("a photo of a {}.",)
SUBSAMPLE_SEED = 0


def is_folder_task(name: object) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def metric_name(name: str) -> str:
    """The prefix of a task's metrics: the folder's name for a folder task, the task's own name otherwise."""
    return Path(name[len(PREFIX) :]).name if is_folder_task(name) else name


def check_folder_task(name: str) -> tuple[Path, list[str]]:
    """The root and class names of folder task ``name``; ``ValueError`` naming ``eval_tasks`` when the folder, a
    split, or two classes are missing, or the splits' classes differ."""
    from torchvision.datasets.folder import find_classes

    root = Path(resolve_data(name[len(PREFIX) :])).expanduser()
    classes = {}
    for split in ("train", "test"):
        if not (root / split).is_dir():
            raise ValueError(
                f"eval_tasks: {name!r} needs the folders {str(root / 'train')!r} and "
                f"{str(root / 'test')!r} (ImageFolder layout: <split>/<class>/<image>)"
            )
        try:
            classes[split], _ = find_classes(str(root / split))
        except FileNotFoundError as e:
            raise ValueError(f"eval_tasks: {name!r}: {e}") from None
    if classes["train"] != classes["test"] or len(classes["train"]) < 2:
        raise ValueError(
            f"eval_tasks: {name!r} needs the same classes (at least two) in train/ and test/, got "
            f"{classes['train']} and {classes['test']}"
        )
    return root, classes["train"]


def content_digest(name: str) -> str:
    """The digest of the contents of every file of folder task ``name``, both splits (``files.files_digest``, in path
    order): what keys a run evaluated on it."""
    root, _ = check_folder_task(name)
    return files_digest(sorted(p for split in ("train", "test") for p in (root / split).rglob("*") if p.is_file()))


def load_folder_task(name: str, split: str, n: int | None = None):
    """Split ``split`` of folder task ``name`` as a ``tasks.Task`` (``n`` images at most)."""

    root, classes = check_folder_task(name)
    images, labels = _decoded(str(root / split), n, _stamp(root / split))
    return Task(
        name=metric_name(name),
        split=split,
        images=images,
        labels=labels,
        classnames=[c.replace("_", " ") for c in classes],
        templates=list(TEMPLATES),
        stands_in_for=str(root),
        description=f"image folders at {root}",
    )


def _stamp(folder: Path) -> float:
    return max((p.stat().st_mtime for p in folder.rglob("*")), default=0.0)


@lru_cache(maxsize=8)
def _decoded(folder: str, n: int | None, stamp: float) -> tuple[np.ndarray, np.ndarray]:
    """Decoded images and labels of one split (cached per process, keyed also by the newest file's time)."""
    from torchvision.datasets import ImageFolder

    listing = ImageFolder(folder, loader=lambda path: path, allow_empty=True).samples
    if n is not None and len(listing) > n:
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(len(listing), n, replace=False))
        listing = [listing[i] for i in keep]
    samples = [real.Sample(path, path, "-") for path, _ in listing]  # a class image has no caption
    images = np.zeros((len(samples), IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
    kept: list[int] = []
    bad: dict[str, list[str]] = {}
    for i, image, _, reason in real.decoded(samples, IMAGE_SIZE, real.default_workers()):
        if reason:
            bad.setdefault(reason, []).append(samples[i].key)
        else:
            images[i] = image
            kept.append(i)
    real.check_bad(f"eval_tasks: folder {folder!r}", len(samples), len(samples) - len(kept), bad)
    if bad:
        warnings.warn(
            f"eval_tasks: folder {folder!r}: skipped " + ", ".join(f"{len(k)} {r}" for r, k in bad.items()),
            stacklevel=2,
        )
    kept.sort()
    return images[kept], np.array([listing[i][1] for i in kept], dtype=np.int64)
