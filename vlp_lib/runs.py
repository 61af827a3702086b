"""The results store: one JSON record per run under ``results/<kind>/<config hash>.json``.

A record holds the run's config, its hash, metrics, per-stage timings, seed, package versions, the
git commit and the *code fingerprint*: a hash of the source of the computing core, decided by folder: every
``.py`` and ``.json`` file of ``vlp_lib`` is in it except those under ``vlp_lib/book/`` (tables, verdicts, plots,
pages, the book's build) and ``vlp_lib/chapters/`` (each paper's run tables, claims, ablation plans and numbers:
they only write configs, and a config is the record's key). Lookups use
the config hash; a record whose fingerprint differs from the current code's is *stale*: it is not
reused, the run is recomputed and the record replaced (the notebook prints that it does so). So
editing a plot or a notebook's prose reuses every result, while editing a loss recomputes.
Set ``VLP_ACCEPT_STALE=1`` to reuse stale records anyway (e.g. to rebuild the book's pages quickly
after a refactor you know changes no number); such records keep their old fingerprint and commit.

Writes are atomic (temporary file + ``os.replace``) and a per-record file lock makes two notebooks
that want the same run at once compute it only once; runs with different configs never contend. Every record
carries a ``checksum`` (SHA-256 of its canonical JSON): a record that does not parse or does not match it (a disk
error, a hand edit) is reported and recomputed, never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
import warnings
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock

from .paths import REPO_ROOT, results_dir

PACKAGE_DIR = Path(__file__).resolve().parent
# Book-side folders of vlp_lib: they plan runs or present them, so editing them never invalidates a stored number.
# Everything else is the computing core (this store included: it decides what a record holds).
BOOK_SIDE_FOLDERS = ("book", "chapters")
TRACKED_PACKAGES = ("torch", "torchvision", "open_clip_torch", "faiss-cpu", "scikit-learn", "numpy", "sentence-transformers")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able config (key order does not matter)."""
    return hashlib.sha256(_canonical(config).encode()).hexdigest()[:16]


def fingerprinted_files() -> list[Path]:
    """The files ``code_fingerprint`` hashes: ``vlp_lib``'s sources and model configs outside ``BOOK_SIDE_FOLDERS``."""
    return [p for p in PACKAGE_DIR.rglob("*") if p.suffix in {".py", ".json"} and "__pycache__" not in p.parts
            and p.relative_to(PACKAGE_DIR).parts[0] not in BOOK_SIDE_FOLDERS]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of the source of the computing core: every ``.py`` / ``.json`` file of ``vlp_lib`` outside the
    ``BOOK_SIDE_FOLDERS`` (model configs included)."""
    h = hashlib.sha256()
    files = sorted(p for p in fingerprinted_files())
    for path in files:
        h.update(str(path.relative_to(PACKAGE_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def record_path(kind: str, config: dict[str, Any], root: Path | None = None) -> Path:
    return (root or results_dir()) / kind / f"{config_hash(config)}.json"


def checksum(record: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON, its own ``checksum`` left out."""
    return hashlib.sha256(_canonical({k: v for k, v in record.items() if k != "checksum"}).encode()).hexdigest()


def read(path: Path) -> dict | None:
    """The record at ``path``, or ``None`` (with a warning) when it is corrupt: not JSON, not a record, or not
    matching its ``checksum``. Records written before checksums existed have none and are read as they are."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        warnings.warn(f"[runs] {path}: corrupt record ({type(e).__name__}); it will be recomputed", stacklevel=2)
        return None
    if not isinstance(record, dict) or ("checksum" in record and record["checksum"] != checksum(record)):
        warnings.warn(f"[runs] {path}: record does not match its checksum; it will be recomputed", stacklevel=2)
        return None
    return record


def load(kind: str, config: dict[str, Any], root: Path | None = None, accept_stale: bool | None = None) -> dict | None:
    """The stored record of this run, or ``None`` if there is none, it is corrupt (``read``) or it is stale."""
    path = record_path(kind, config, root)
    if not path.exists():
        return None
    record = read(path)
    if record is None:
        return None
    if accept_stale is None:
        accept_stale = os.environ.get("VLP_ACCEPT_STALE") == "1"
    if record.get("code_fingerprint") != code_fingerprint() and not accept_stale:
        return None
    return record


def save(kind: str, config: dict[str, Any], metrics: dict[str, Any], timings: dict[str, float] | None = None,
         extra: dict[str, Any] | None = None, root: Path | None = None) -> dict:
    """Write a run's record atomically and return it."""
    path = record_path(kind, config, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "kind": kind,
        "config": config,
        "config_hash": config_hash(config),
        "seed": config.get("seed"),
        "metrics": metrics,
        "timings": timings or {},
        "code_fingerprint": code_fingerprint(),
        "git_commit": git_commit(),
        "versions": package_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **(extra or {}),
    }
    # the checksum covers the record as a reader will see it (JSON turns tuples into lists, other objects into str)
    record = json.loads(json.dumps(record, default=str))
    record["checksum"] = checksum(record)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)
    return record


def save_result(kind: str, config: dict[str, Any], result: dict[str, Any], root: Path | None = None) -> dict:
    """``save`` of a computed result: its ``metrics``, optional ``timings``, and every other key as extra fields."""
    extra = {k: v for k, v in result.items() if k not in ("metrics", "timings")}
    return save(kind, config, result["metrics"], result.get("timings"), extra, root)


def cached(kind: str, config: dict[str, Any], compute: Callable[[], dict[str, Any]], root: Path | None = None,
           verbose: bool = True) -> dict:
    """The record of ``kind``/``config``: loaded if stored and current, else computed and stored.

    ``compute()`` returns a dict with ``metrics`` and optionally ``timings`` and other JSON-able keys.
    """
    record = load(kind, config, root)
    if record is not None:
        return record
    path = record_path(kind, config, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        record = load(kind, config, root)  # another process may have finished it while we waited
        if record is not None:
            return record
        if verbose and path.exists():
            print(f"[runs] {kind}/{path.stem}: stored record was made by other code; recomputing")
        return save_result(kind, config, compute(), root)


def discard(kind: str, config: dict[str, Any], root: Path | None = None) -> None:
    """Remove the record of ``kind``/``config`` (e.g. its checkpoint proved corrupt): the next ``cached`` recomputes."""
    record_path(kind, config, root).unlink(missing_ok=True)


def records(kind: str, root: Path | None = None, include_stale: bool = False) -> list[dict]:
    """Every current record of ``kind`` (for tables that read the store)."""
    folder = (root or results_dir()) / kind
    out = []
    for path in sorted(folder.glob("*.json")):
        record = read(path)
        if record is not None and (include_stale or record.get("code_fingerprint") == code_fingerprint()):
            out.append(record)
    return out
