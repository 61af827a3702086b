"""DIME-FM's inputs from files, beside the training pairs: the frozen teacher from a checkpoint, an image corpus from an
image folder and a text corpus from a text file (the chapter's ``teacher_checkpoint``, ``unpaired_images`` and
``unpaired_texts``). DIME-FM distils a teacher trained elsewhere (CLIP-ViT-L/14, OpenAI's 400M pairs) with public
images and sentences that were never paired (Sec. 3; Supp A.1: 40M images, 28.4M sentences); these readers bring
such inputs in from disk.

Each input is named in a run config by a *spec*, a small dict that fixes what was read: the file's or the folder's
absolute path and a digest (the checkpoint's and the text file's SHA-256 of their bytes, the folder's SHA-256 of its
image files' relative paths, sizes and modification times, as ``data.real`` keys its decoded-image cache). The spec
is part of the run's key, so a run on other weights, images or sentences never reuses a stored record; a file
changed after its spec was made is refused (``ValueError`` naming the parameter), never read silently.

- ``checkpoint_spec``: a teacher checkpoint is the state dict of the teacher's open_clip ``CLIP`` (the architecture
  the teacher's run config names: its ``model`` preset, its tokenizer's vocabulary and context length, its image
  size), saved as ``torch.save(model.state_dict())``, as open_clip's training script saves it (``{"state_dict":
  ...}``, a ``module.`` prefix allowed), or in this book's own checkpoint format (``train.save_checkpoint``: what
  every run of the book leaves in its checkpoint folder; its ``"model"``). Read with ``torch.load(weights_only=True)``
  (no code from the file runs) and loaded strictly: a missing, unexpected or mis-shaped tensor is refused. The
  teacher is built as ``experiment.load_trained`` builds a stored teacher run (``create_model`` at the teacher's
  seed, then its weights), so a checkpoint of the book's own teacher gives the very teacher, and the same student.
- ``image_folder_spec``: every ``.jpg``, ``.jpeg``, ``.png`` and ``.webp`` file under a folder, recursively (an
  ``ImageFolder`` tree works: its class folders are ignored), decoded once (``data.real.decoded``: RGB, the shorter
  side resized, centre crop) and cached; undecodable files are skipped and counted, refused past
  ``data.real.MAX_BAD_FRACTION`` as training data is.
- ``text_file_spec``: a UTF-8 text file, one sentence a line; blank lines are skipped, the rest kept in order,
  duplicates included (a corpus' frequencies are part of it).

Computing side: the DIME-FM method reads its inputs through here (``papers.dimefm.method``).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlp_lib import files
from vlp_lib.cache import frozen_arrays
from vlp_lib.data import real
from vlp_lib.runs import paper_of_module
from vlp_lib.train import CHECKPOINT_MAGIC

PAPER = paper_of_module(__name__)  # whose fingerprint keys the decoded image folders
CHECKPOINT_KEYS = ("path", "sha256")
FOLDER_KEYS = ("folder", "digest", "images")
TEXT_FILE = "file"  # a DIME-FM ``texts`` spec of this kind: the sentences of a text file
TEXT_FILE_KEYS = ("kind", "path", "sha256", "sentences")
STATE_PREFIX = "module."  # DistributedDataParallel's prefix in open_clip's training checkpoints
MISMATCHES_SHOWN = 3  # tensors quoted when a checkpoint does not fit the teacher


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return files.file_sha256(path)


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of the file's bytes (``files.file_sha256``, hashed once per path, size and modification time in a
    process: a teacher checkpoint is hundreds of megabytes)."""
    st = os.stat(path)
    return _sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def check_spec(name: str, spec: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """``spec`` as a dict with exactly ``keys`` (the form a run config holds), else ``ValueError`` naming ``name``."""
    if not isinstance(spec, Mapping) or set(spec) != set(keys):
        raise ValueError(f"{name} must be a path or a spec with the keys {list(keys)}, got {spec!r}")
    return dict(spec)


def _existing(name: str, path: Any, kind: str) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"{name} must be the path of {kind}, got {path!r}")
    p = Path(path).expanduser()
    found = p.is_dir() if kind == "a folder" else p.is_file()
    if not found:
        raise ValueError(f"{name}: no such {'folder' if kind == 'a folder' else 'file'} {str(path)!r}")
    return p


# ----------------------------------------------------------------------------------------------------------------
# the teacher from a checkpoint


def read_state_dict(path: str | os.PathLike, name: str = "teacher_checkpoint") -> dict[str, torch.Tensor]:
    """The model weights in the checkpoint file ``path`` (formats: the module docstring), on the CPU; ``ValueError``
    naming ``name`` for a file that does not load or holds no state dict. The file is only read: a corrupt book
    checkpoint is refused, not deleted as the trainer's own resume does."""
    p = Path(path)
    blob = p.read_bytes()
    head = len(CHECKPOINT_MAGIC)
    if blob[:head] == CHECKPOINT_MAGIC:  # the book's format: magic, SHA-256 of the payload, torch.save bytes
        payload = blob[head + 32 :]
        if hashlib.sha256(payload).digest() != blob[head : head + 32]:
            raise ValueError(f"{name}: {str(path)!r} is a checkpoint of this book that is corrupt or cut short")
        blob = payload
    try:
        obj = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    except Exception as err:  # pickle, zip and torch errors alike: not a file torch.load reads as weights
        raise ValueError(
            f"{name}: {str(path)!r} does not load as a torch checkpoint of weights ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}); save the teacher with "
            "torch.save(model.state_dict(), path)"
        ) from None
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model"):  # open_clip's training checkpoints; this book's
            if isinstance(obj.get(key), Mapping):
                obj = obj[key]
                break
    if not isinstance(obj, Mapping) or not obj or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ValueError(
            f"{name}: {str(path)!r} holds no state dict (a dict of tensors, or one under 'state_dict' or 'model')"
        )
    state = {str(k): v for k, v in obj.items()}
    if all(k.startswith(STATE_PREFIX) for k in state):
        state = {k[len(STATE_PREFIX) :]: v for k, v in state.items()}
    return state


def _describe(teacher: Any, tokenizer: Any) -> str:
    return (
        f"the teacher's open_clip CLIP {teacher.model!r} at {teacher.image_size} px with the {teacher.tokenizer!r} "
        f"tokenizer ({tokenizer.vocab_size:,} tokens, context {tokenizer.context_length})"
    )


def teacher_from_state(
    teacher: Any, state: Mapping[str, torch.Tensor], name: str = "teacher_checkpoint", path: str = ""
) -> tuple[torch.nn.Module, Any]:
    """The teacher of run config ``teacher`` (eval mode) with the weights ``state``, and its tokenizer: built as
    ``experiment.load_trained`` builds a stored run's model (``create_model`` at the run's seed), then loaded
    strictly. ``ValueError`` naming ``name`` when the weights do not fit the architecture."""
    from vlp_lib.data.training import make_tokenizer  # late: it imports the run config, which imports the methods
    from vlp_lib.models import create_model

    tokenizer = make_tokenizer(teacher)
    model = create_model(
        teacher.model, tokenizer.vocab_size, tokenizer.context_length, image_size=teacher.image_size, seed=teacher.seed
    )
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k} {tuple(state[k].shape)} (expected {tuple(own[k].shape)})"
        for k in own
        if k in state and state[k].shape != own[k].shape
    ]
    if missing or unexpected or shapes:
        problems = [
            f"{label}: {', '.join(items[:MISMATCHES_SHOWN])}{' ...' if len(items) > MISMATCHES_SHOWN else ''}"
            for label, items in (("missing", missing), ("unexpected", unexpected), ("shapes differ", shapes))
            if items
        ]
        raise ValueError(
            f"{name}: {path!r} does not match {_describe(teacher, tokenizer)}: {len(missing)} tensors missing, "
            f"{len(unexpected)} unexpected, {len(shapes)} of another shape ({'; '.join(problems)})"
        )
    model.load_state_dict(dict(state))
    return model.eval(), tokenizer


def checkpoint_spec(path: Any, teacher: Any, name: str = "teacher_checkpoint") -> dict[str, Any]:
    """The spec of the teacher checkpoint at ``path`` for the teacher run config ``teacher`` (a ``RunConfig``: the
    architecture): ``{"path", "sha256"}``, after checking that the file exists, loads and fits the architecture
    (``ValueError`` naming ``name`` otherwise)."""
    p = _existing(name, path, "a checkpoint file")
    teacher_from_state(teacher, read_state_dict(p, name), name, str(path))
    return {"path": str(p.resolve()), "sha256": file_sha256(p)}


def load_teacher(spec: Mapping[str, Any], teacher: Any, name: str = "teacher_checkpoint") -> tuple[Any, Any]:
    """The teacher (eval mode) and its tokenizer from the checkpoint of ``spec`` (``checkpoint_spec``), with the
    architecture of the run config ``teacher``; ``ValueError`` naming ``name`` if the file is gone or changed."""
    spec = check_spec(name, spec, CHECKPOINT_KEYS)
    p = _existing(name, spec["path"], "a checkpoint file")
    if file_sha256(p) != spec["sha256"]:
        raise ValueError(f"{name}: {spec['path']!r} changed since the run's config was made (its SHA-256 differs)")
    return teacher_from_state(teacher, read_state_dict(p, name), name, spec["path"])


# ----------------------------------------------------------------------------------------------------------------
# an image corpus from a folder


def image_files(folder: Path) -> list[Path]:
    """The image files under ``folder``, recursively (``data.real.IMAGE_EXTENSIONS``, any case), sorted by path."""
    extensions = {f".{e}" for e in real.IMAGE_EXTENSIONS}
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in extensions and p.is_file())


def _listing_digest(folder: Path, files: list[Path]) -> str:
    listing = [(str(p.relative_to(folder)), (st := p.stat()).st_size, st.st_mtime_ns) for p in files]
    return hashlib.sha256(repr(listing).encode()).hexdigest()


def image_folder_spec(folder: Any, name: str = "unpaired_images") -> dict[str, Any]:
    """The spec of the image corpus under ``folder``: ``{"folder", "digest", "images"}`` (absolute path, digest of the
    listing, number of image files); ``ValueError`` naming ``name`` for a missing folder or one without images."""
    root = _existing(name, folder, "a folder").resolve()
    files = image_files(root)
    if not files:
        raise ValueError(
            f"{name}: {str(folder)!r} holds no image file ({', '.join('.' + e for e in real.IMAGE_EXTENSIONS)}, "
            "searched recursively)"
        )
    return {"folder": str(root), "digest": _listing_digest(root, files), "images": len(files)}


def folder_images(spec: Mapping[str, Any], image_size: int, name: str = "unpaired_images") -> np.ndarray:
    """The images of the folder spec ``spec`` as uint8 ``[N, image_size, image_size, 3]`` (in path order, bad files
    skipped), decoded once and cached. ``ValueError`` naming ``name`` if the folder changed since the spec was made,
    or past ``data.real.MAX_BAD_FRACTION`` undecodable files."""
    spec = check_spec(name, spec, FOLDER_KEYS)
    root = _existing(name, spec["folder"], "a folder")
    files = image_files(root)
    if _listing_digest(root, files) != spec["digest"]:
        raise ValueError(f"{name}: {spec['folder']!r} changed since the run's config was made (files added or edited)")

    def build() -> dict[str, Any]:
        samples = [real.Sample(str(p), str(p), "-") for p in files]  # an image of the corpus has no caption
        images = np.zeros((len(samples), image_size, image_size, 3), dtype=np.uint8)
        kept: list[int] = []
        bad: dict[str, list[str]] = {}
        for i, image, _, reason in real.decoded(samples, image_size, real.default_workers()):
            if reason:
                bad.setdefault(reason, []).append(samples[i].key)
            else:
                images[i] = image
                kept.append(i)
        real.check_bad(f"{name} {spec['folder']!r}", len(samples), len(samples) - len(kept), bad)
        return {"images": images[sorted(kept)], "skipped": {r: len(k) for r, k in bad.items()}}

    key = {"folder": spec, "image_size": int(image_size)}
    return frozen_arrays("dimefm-image-folder", key, build, verbose=False, paper=PAPER)["images"]


# ----------------------------------------------------------------------------------------------------------------
# a text corpus from a file


def is_text_file(spec: Any) -> bool:
    """Whether a DIME-FM ``texts`` value names a text file (``{"kind": "file", ...}``)."""
    return isinstance(spec, Mapping) and spec.get("kind") == TEXT_FILE


def _sentences(path: Path, name: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: {str(path)!r} is not UTF-8 text ({err})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def text_file_spec(path: Any, name: str = "unpaired_texts") -> dict[str, Any]:
    """The ``texts`` spec of the text file at ``path`` (one sentence a line): ``{"kind": "file", "path", "sha256",
    "sentences"}``; ``ValueError`` naming ``name`` for a missing file, one that is not UTF-8, or one without a
    sentence."""
    if is_text_file(path):  # {"kind": "file", "path": ...}: the rest is read here
        path = path.get("path")
    p = _existing(name, path, "a text file")
    sentences = _sentences(p, name)
    if not sentences:
        raise ValueError(f"{name}: {str(path)!r} holds no sentence (one a line; blank lines are skipped)")
    return {"kind": TEXT_FILE, "path": str(p.resolve()), "sha256": file_sha256(p), "sentences": len(sentences)}


def read_text_file(spec: Mapping[str, Any], name: str = "unpaired_texts") -> list[str]:
    """The sentences of the text file of ``spec`` (``text_file_spec``), in order; ``ValueError`` naming ``name`` if
    the file is gone or changed since the spec was made."""
    spec = check_spec(name, spec, TEXT_FILE_KEYS)
    p = _existing(name, spec["path"], "a text file")
    if file_sha256(p) != spec["sha256"]:
        raise ValueError(f"{name}: {spec['path']!r} changed since the run's config was made (its SHA-256 differs)")
    return _sentences(p, name)
