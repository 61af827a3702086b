"""The results store: one JSON record per run under ``results/<kind>/<config hash>.json``.

A record holds the run's config, its hash, metrics, per-stage timings, seed, package versions, the
git commit and the *code fingerprint* of the code that computed it. The fingerprint is per paper, decided by
folder (``fingerprinted_files``):

- the **core**: every ``.py`` and ``.json`` file of ``vlp_lib`` outside ``vlp_lib/papers/`` and outside any folder
  named ``book`` (tables, verdicts, plots, pages, the book's build: they present stored numbers, never compute
  one);
- a **paper** ``P``: the core plus ``vlp_lib/papers/P/`` outside its ``book/`` (its method, loss and paper-only
  modules; its run tables, claims and the paper's numbers only write configs, and a config is the record's key).

A record says whose fingerprint it carries (``scope``: ``"core"`` or the paper's name): a training run belongs to
the paper that defines its method (``vlp_lib.methods.paper_of``; CLIP runs to the core), any other result to the
paper whose code computes it (``paper_of_module(__name__)``). So editing PyramidCLIP's detector re-makes
PyramidCLIP's runs and leaves every ProtoCLIP, DIME-FM, iCLIP and ICMLM record current; editing the core re-makes
everything. Lookups use the config hash; a record whose fingerprint differs from the current code's is *stale*: it
is not reused, the run is recomputed and the record replaced (the notebook prints that it does so). So editing a
plot or a notebook's prose reuses every result, while editing a loss recomputes that paper's runs.
Set ``VLP_ACCEPT_STALE=1`` to reuse stale records anyway (e.g. to rebuild the book's pages quickly
after a refactor you know changes no number); such records keep their old fingerprint and commit.

Writes are atomic (temporary file + ``os.replace``) and a per-record file lock makes two notebooks
that want the same run at once compute it only once; runs with different configs never contend. Every record
carries a ``checksum`` (SHA-256 of its canonical JSON): a record that does not parse or does not match it (a disk
error, a hand edit) is reported and recomputed, never loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from filelock import FileLock

from vlp_lib.paths import REPO_ROOT, results_dir

PACKAGE_DIR = Path(__file__).resolve().parent
PAPERS_FOLDER = "papers"  # vlp_lib/papers/<paper>/: one folder per paper, each with a fingerprint of its own
# Book-side folders (vlp_lib/book/ and every paper's book/): they plan runs or present them, so editing them never
# invalidates a stored number. Everything else is computing code (this store included: it decides what a record holds).
BOOK_SIDE_FOLDER = "book"
CORE = "core"  # the scope of a record computed by the core alone
# the store's kind of a training run (``vlp_lib.experiment.run``), and of its network evaluated untrained
# (``vlp_lib.experiment.untrained``: keyed by the same config)
RUN_KIND = "train"
UNTRAINED_KIND = "untrained"
TRACKED_PACKAGES = (
    "torch",
    "torchvision",
    "open_clip_torch",
    "faiss-cpu",
    "scikit-learn",
    "numpy",
    "sentence-transformers",
)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(config: Mapping[str, Any]) -> str:
    """A short stable hash of a JSON-able config (key order does not matter). A typed config is hashed in its record
    form (``RunConfig.to_dict()``); passing the object itself is refused rather than hashed by its ``str``."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a JSON-able dict (a RunConfig's to_dict()), got {type(config).__name__}")
    return hashlib.sha256(_canonical(config).encode()).hexdigest()[:16]


def paper_of_module(module: str) -> str | None:
    """The paper whose folder holds ``module`` (a dotted name: ``__name__``), or ``None`` for the core."""
    parts = module.split(".")
    if len(parts) > 2 and parts[0] == PACKAGE_DIR.name and parts[1] == PAPERS_FOLDER:
        return parts[2]
    return None


def paper_folder(paper: str) -> Path:
    """The folder of ``paper``: ``vlp_lib/papers/<paper>/``, or wherever the papers package finds it (a paper added
    to ``vlp_lib.papers.__path__``, as the layout test does). ``ValueError`` naming ``paper`` if there is none."""
    folder = PACKAGE_DIR / PAPERS_FOLDER / paper
    if (folder / "__init__.py").exists():
        return folder
    try:  # imports only the papers package, never a paper: the core stays below them
        spec = importlib.util.find_spec(f"{PACKAGE_DIR.name}.{PAPERS_FOLDER}.{paper}")
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise ValueError(f"paper must be a folder of vlp_lib/{PAPERS_FOLDER}/ or None (the core), got {paper!r}")
    return Path(spec.origin).parent


def _scope(paper: str | None) -> str:
    if paper is None or paper == CORE:
        return CORE
    if not isinstance(paper, str) or not paper.isidentifier():
        raise ValueError(f"paper must be a folder of vlp_lib/{PAPERS_FOLDER}/ or None (the core), got {paper!r}")
    paper_folder(paper)
    return paper


def _computing(files: list[Path], root: Path) -> list[Path]:
    return [
        p
        for p in files
        if p.suffix in {".py", ".json"}
        and "__pycache__" not in p.parts
        and BOOK_SIDE_FOLDER not in p.relative_to(root).parts
    ]


def _fingerprinted(paper: str | None) -> list[tuple[str, Path]]:
    """``(name, file)`` of every file ``code_fingerprint(paper)`` hashes, sorted by name: the name is the path inside
    the package (``papers/<paper>/...`` also for a paper found outside the package's folder)."""
    core = [
        (p.relative_to(PACKAGE_DIR).as_posix(), p)
        for p in _computing(list(PACKAGE_DIR.rglob("*")), PACKAGE_DIR)
        if p.relative_to(PACKAGE_DIR).parts[0] != PAPERS_FOLDER
    ]
    scope = _scope(paper)
    if scope != CORE:
        folder = paper_folder(scope)
        core += [
            (f"{PAPERS_FOLDER}/{scope}/{p.relative_to(folder).as_posix()}", p)
            for p in _computing(list(folder.rglob("*")), folder)
        ]
    return sorted(core)


def fingerprinted_files(paper: str | None = None) -> list[Path]:
    """The files ``code_fingerprint(paper)`` hashes: the core's sources and model configs (``vlp_lib`` outside
    ``papers/`` and ``book/`` folders) and, for a paper, its folder outside its ``book/``."""
    return [path for _, path in _fingerprinted(paper)]


@cache
def code_fingerprint(paper: str | None = None) -> str:
    """Hash of the source that computes the records of ``paper`` (``None``: the core's): ``fingerprinted_files``."""
    h = hashlib.sha256()
    for name, path in _fingerprinted(paper):
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def current(record: dict[str, Any]) -> bool:
    """Whether ``record`` was made by the current code of its scope (records before scopes existed: never)."""
    scope = record.get("scope")
    try:
        return scope is not None and record.get("code_fingerprint") == code_fingerprint(scope)
    except ValueError:  # a scope whose folder is gone
        return False


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
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
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


def load(
    kind: str,
    config: dict[str, Any],
    root: Path | None = None,
    accept_stale: bool | None = None,
    paper: str | None = None,
) -> dict | None:
    """The stored record of this run, or ``None`` if there is none, it is corrupt (``read``) or it is stale: made by
    other code of the scope ``paper`` (``None``: the core) than the current one."""
    path = record_path(kind, config, root)
    if not path.exists():
        return None
    record = read(path)
    if record is None:
        return None
    if accept_stale is None:
        accept_stale = os.environ.get("VLP_ACCEPT_STALE") == "1"
    if not accept_stale and (record.get("scope") != _scope(paper) or not current(record)):
        return None
    return record


def save(
    kind: str,
    config: dict[str, Any],
    metrics: dict[str, Any],
    timings: dict[str, float] | None = None,
    extra: dict[str, Any] | None = None,
    root: Path | None = None,
    paper: str | None = None,
) -> dict:
    """Write a run's record atomically and return it, stamped with the fingerprint of ``paper`` (``None``: the
    core)."""
    path = record_path(kind, config, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "kind": kind,
        "config": config,
        "config_hash": config_hash(config),
        "seed": config.get("seed"),
        "metrics": metrics,
        "timings": timings or {},
        "scope": _scope(paper),
        "code_fingerprint": code_fingerprint(paper),
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


def save_result(
    kind: str, config: dict[str, Any], result: dict[str, Any], root: Path | None = None, paper: str | None = None
) -> dict:
    """``save`` of a computed result: its ``metrics``, optional ``timings``, and every other key as extra fields."""
    extra = {k: v for k, v in result.items() if k not in ("metrics", "timings")}
    return save(kind, config, result["metrics"], result.get("timings"), extra, root, paper)


def cached(
    kind: str,
    config: dict[str, Any],
    compute: Callable[[], dict[str, Any]],
    root: Path | None = None,
    verbose: bool = True,
    paper: str | None = None,
) -> dict:
    """The record of ``kind``/``config``: loaded if stored and current, else computed and stored.

    ``compute()`` returns a dict with ``metrics`` and optionally ``timings`` and other JSON-able keys. ``paper``:
    whose code computes it (``paper_of_module(__name__)`` in a paper's module; ``None``: the core's).
    """
    record = load(kind, config, root, paper=paper)
    if record is not None:
        return record
    path = record_path(kind, config, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        record = load(kind, config, root, paper=paper)  # another process may have finished it while we waited
        if record is not None:
            return record
        if verbose and path.exists():
            print(f"[runs] {kind}/{path.stem}: stored record was made by other code; recomputing")
        return save_result(kind, config, compute(), root, paper)


def discard(kind: str, config: dict[str, Any], root: Path | None = None) -> None:
    """Remove the record of ``kind``/``config`` (e.g. its checkpoint proved corrupt): the next ``cached`` recomputes."""
    record_path(kind, config, root).unlink(missing_ok=True)


def records(kind: str, root: Path | None = None, include_stale: bool = False) -> list[dict]:
    """Every current record of ``kind`` (for tables that read the store)."""
    folder = (root or results_dir()) / kind
    out = []
    for path in sorted(folder.glob("*.json")):
        record = read(path)
        if record is not None and (include_stale or current(record)):
            out.append(record)
    return out
