"""The book's shipped evidence: executed pages and the run records behind them, in ``release/``, with a manifest; and
the check that today's code re-makes them.

    python -m vlp_lib.book.release make [chapters] --scale laptop   # ship book/executed + the store (maintainers)
    python -m vlp_lib.book.release repage chapters-or-pages         # pages again, from the shipped records
    python -m vlp_lib.book.release install                          # the release's pages into book/executed
    python -m vlp_lib.book.release restore                          # its records into the results store
    python -m vlp_lib.book.release check                            # the release whole: pages, records, checksums
    python -m vlp_lib.book.release recommit                         # name commits that exist for old entries
    python -m vlp_lib.book.release verify [chapters]                # re-make from empty caches, compare

``release/`` holds ``executed/<notebook>.ipynb`` (cleaned executed notebooks, figures as embedded PNGs: they open on
GitHub with their outputs), ``records/<kind>/<hash>.json.gz`` (every current record of the results store at the
release's scale, gzip-compressed: a training record is about 105 kB of JSON, mostly its loss history, and 26 kB
compressed) and ``manifest.json``: per chapter its notebooks, the commit, the code fingerprints of its scopes
(``runs.code_fingerprint``) with a hash per fingerprinted file, the date, the machine, the scale, the seeds and each
notebook's minutes; per record file its SHA-256.

``make`` ships only committed work: a chapter whose code (``vlp_lib/``) or notebooks differ from the last commit is
refused, so the manifest names a commit a reader can check out (``recommit`` finds one for entries made before this
rule: the newest commit whose fingerprinted files are those that made the numbers).

``install`` copies the release's pages into ``book/executed/`` with a provenance note under each page's title:
where its numbers come from (commit, date, machine, scale, seeds) and, when the code its runs depend on has changed
since (a per-paper fingerprint differs), which files changed. A page executed here (``make book EXECUTE=1``) is
never overwritten: installed pages carry the marker ``RELEASE_MARK`` in their metadata.

``repage`` executes chapters' pages (or single pages) again on the release's own records and ships them, for a page
whose prose, tables or figures changed while its runs did not (the book side re-stamps no record): nothing is re-made,
and the chapter keeps its records and the minutes that making them took.

``verify`` executes chapters' notebooks at the release's scale into a scratch store (``VLP_RESULTS_DIR``,
``VLP_CACHE_DIR`` and ``VLP_CHECKPOINT_DIR`` in a temporary folder: the release and the working store are never
touched), then compares every metric and every logged number of the loss history of every run both have
(``TOLERANCE``) and every claim's verdict, and reports
records of the release the re-make did not produce. Exit status 1 on any difference. A chapter's measurements of the
machine (``Chapter.measurements``: the head to head's equal-seconds calibration, which chooses its runs) are taken
from the release, not measured again, so the re-make re-makes the runs they chose; how far a new measurement drifts
is printed beside, never failing.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import gzip
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from vlp_lib import runs
from vlp_lib.book.build import EXECUTED_DIR, TIMES_FILE, clean, execute
from vlp_lib.book.pages import CHAPTERS, chapter_of, select_notebooks
from vlp_lib.files import file_sha256
from vlp_lib.papers import Chapter
from vlp_lib.papers import chapters as paper_chapters
from vlp_lib.paths import REPO_ROOT, results_dir

RELEASE_DIR = REPO_ROOT / "release"
MANIFEST = "manifest.json"
PAGES = "executed"
RECORDS = "records"
RELEASE_MARK = "vlp_release"  # notebook metadata key of a page installed from the release
# Metrics compared by ``verify``: the same code on the same CPU kind should give identical numbers, but the linear
# probes' liblinear solver draws from a process-global random state when scikit-learn fits classes in threads
# (one difference of 1.2e-5 was seen); 1e-4 (0.01 pp) is far below any effect the book reports. Across CPU kinds
# (other SIMD widths) float summation order changes and training drifts: expect differences of about 1 pp and
# verdicts on a knife's edge to flip; ``verify`` reports both.
TOLERANCE = 1e-4
# Measurements of the machine, not results of the code: a re-make on the same CPU trains at another speed (the ICMLM
# chapter's first verify: 44 runs' train_samples_per_s differed by up to 44%, every other metric within TOLERANCE)
NOT_COMPARED = frozenset({"train_samples_per_s"})


def machine() -> dict[str, Any]:
    """The CPU model, its logical cores and the platform, as the manifest states them, and the CPU kind: its family,
    model and stepping (a virtual machine may name only "AMD EPYC") and the widest SIMD instructions torch uses. Two
    machines of one kind re-make the release's numbers exactly; another kind sums floats in another order, and
    training drifts (``TOLERANCE``)."""
    model = platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model", "stepping") and key not in fields:
                fields[key] = value.strip()
            if line.strip() == "":
                break
    except OSError:
        pass
    model = fields.get("model name", model)
    kind = " ".join(f"{k.removeprefix('cpu ')} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields)
    import torch  # the SIMD level its CPU kernels run at (AVX2, AVX512 ...): what decides the float summation order

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "cpu_kind": kind or None,
        "simd": torch.backends.cpu.get_cpu_capability(),
    }


def same_kind(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Whether two manifests' machines are of one CPU kind (``None``: one of them does not say)."""
    if not a.get("cpu_kind") or not b.get("cpu_kind"):
        return None
    return (a["cpu_kind"], a.get("simd")) == (b["cpu_kind"], b.get("simd"))


def _file_hashes(scope: str) -> dict[str, str]:
    """SHA-256 of every file behind ``scope``'s code fingerprint (``runs.fingerprinted_files``), by repository path."""
    paths = runs.fingerprinted_files(None if scope == runs.CORE else scope)
    return {path.relative_to(runs.PACKAGE_DIR.parent).as_posix(): file_sha256(path) for path in paths}


def _git(*args: str) -> str | None:
    """``git args`` in the repository: its output, or ``None`` where git or the repository is not there."""
    try:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def uncommitted(chapter: str) -> list[str]:
    """The files a chapter's pages come from that differ from the last commit (changed, staged or untracked): the
    package's code (``vlp_lib/``: the fingerprinted files that make the numbers and the book side that shows them) and
    the chapter's notebooks. ``ValueError`` outside a git repository."""
    paths = ["vlp_lib", *(f"notebooks/{nb}.ipynb" for nb in CHAPTERS[chapter])]
    out = _git("status", "--porcelain", "--untracked-files=all", "--", *paths)
    if out is None:
        raise ValueError("a release is made from a git checkout: git status failed in " + str(REPO_ROOT))
    return sorted({line[3:].strip() for line in out.splitlines() if line.strip() and "__pycache__" not in line})


def check_committed(chapter: str) -> None:
    """``ValueError`` naming the files of ``chapter`` that differ from the last commit (``uncommitted``): a release
    names a commit a reader can check out."""
    changed = uncommitted(chapter)
    if changed:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise ValueError(
            f"chapter {chapter}: {shown} differ from the last commit: commit them first, so that the manifest names "
            "a commit a reader can check out"
        )


def head_commit() -> str:
    """The commit checked out (``ValueError`` outside a git repository)."""
    out = _git("rev-parse", "HEAD")
    if out is None:
        raise ValueError("a release is made from a git checkout: git rev-parse HEAD failed in " + str(REPO_ROOT))
    return out.strip()


def _blob_sha256(commit: str, paths: Sequence[str]) -> dict[str, str | None]:
    """SHA-256 of each of ``paths`` as committed at ``commit`` (``None``: not in that commit)."""
    out: dict[str, str | None] = {}
    for path in paths:
        try:
            blob = subprocess.run(
                ["git", "show", f"{commit}:{path}"], cwd=REPO_ROOT, capture_output=True, timeout=60, check=False
            )
        except (OSError, subprocess.SubprocessError):
            blob = None
        out[path] = hashlib.sha256(blob.stdout).hexdigest() if blob is not None and blob.returncode == 0 else None
    return out


def commit_of(entry: dict[str, Any]) -> str | None:
    """The newest commit at which every fingerprinted file of a manifest entry (``entry["files"]``) is the one that
    made its numbers, or ``None``: a commit a reader can check out to re-make them."""
    wanted = {path: digest for files in entry.get("files", {}).values() for path, digest in files.items()}
    history = _git("rev-list", "HEAD")
    for commit in (history or "").split():
        if _blob_sha256(commit, sorted(wanted)) == wanted:
            return commit
    return None


def _is_checkable(commit: str | None) -> bool:
    """Whether ``commit`` names a commit a reader can check out: not a dirty tree's, not unknown, and in this
    repository's history where that can be told (a git checkout with its whole history)."""
    if not commit or str(commit).endswith("-dirty"):
        return False
    if (_git("rev-parse", "--is-shallow-repository") or "").strip() != "false":
        return True  # no git, or a shallow clone: the history is not here to look the commit up in
    return _git("cat-file", "-e", f"{commit}^{{commit}}") is not None


def recommit(release: Path = RELEASE_DIR) -> dict[str, str | None]:
    """Give every manifest entry whose commit cannot be checked out (a ``-dirty`` tree's, or unknown) the commit at
    which its fingerprinted files are those that made its numbers (``commit_of``); returns ``{chapter: commit}`` of
    the entries looked at (``None``: no commit has those files)."""
    manifest = read_manifest(release)
    if manifest is None:
        return {}
    found = {}
    for name, entry in manifest["chapters"].items():
        if _is_checkable(entry.get("commit")):
            continue
        found[name] = commit_of(entry)
        if found[name] is not None:
            entry["commit"] = found[name]
    (release / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return found


def _code_shape(source: str) -> str:
    """A Python file's syntax tree without its docstrings (module, class and function): what runs."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def restamp(names: Sequence[str], release: Path = RELEASE_DIR) -> dict[str, list[str]]:
    """Give chapters ``names`` today's fingerprints where their code changed since their entry only in docstrings and
    comments (each changed file's syntax tree, docstrings aside, the same as at the entry's commit): their records
    stand, stamped with today's fingerprints (``_restamp_records``), and their pages stop warning that the code
    changed. ``ValueError``, nothing written, naming the first file
    whose code changed (re-make that chapter), or a file not at the entry's commit. Returns ``{chapter: files}``."""
    manifest = read_manifest(release)
    if manifest is None:
        raise ValueError(f"no release at {release}")
    done: dict[str, list[str]] = {}
    renamed: dict[str, dict[str, str]] = {}  # scope -> {old fingerprint: today's}
    for name in names:
        entry = manifest["chapters"].get(name)
        if entry is None:
            raise ValueError(f"chapter {name} is not in the release")
        changed = changed_files(entry)
        for path in changed:
            before = _git("show", f"{entry['commit']}:{path}")
            if before is None:
                raise ValueError(f"chapter {name}: {path} is not at its commit {entry['commit']}: re-make it")
            now = REPO_ROOT / path
            if not path.endswith(".py") or not now.exists() or _code_shape(before) != _code_shape(now.read_text()):
                raise ValueError(f"chapter {name}: the code of {path} changed since its records: re-make it")
        scopes = list(entry["fingerprints"])
        stamped = dict(entry["fingerprints"])
        entry["fingerprints"] = {
            scope: runs.code_fingerprint(None if scope == runs.CORE else scope) for scope in scopes
        }
        entry["files"] = {scope: _file_hashes(scope) for scope in scopes}
        for scope in scopes:
            if stamped[scope] != entry["fingerprints"][scope]:
                renamed.setdefault(scope, {})[stamped[scope]] = entry["fingerprints"][scope]
        done[name] = changed
    _restamp_records(release, manifest, renamed)
    (release / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return done


def _restamp_records(release: Path, manifest: dict[str, Any], renamed: dict[str, dict[str, str]]) -> None:
    """The release's records made by a scope's old fingerprint (``renamed[scope]``: old -> today's) stamped with
    today's, their checksums and the manifest's hashes made again: the runs of code that changed only in docstrings
    are today's code's runs. A fingerprint that a chapter not re-stamped still names keeps its records (that chapter
    rests on them); ``restamp`` that chapter too."""
    kept = {(scope, fp) for entry in manifest["chapters"].values() for scope, fp in entry["fingerprints"].items()}
    for key in sorted(manifest["records"]):
        path = release / key
        record = read_record(path)
        scope, fingerprint = str(record.get("scope")), str(record.get("code_fingerprint"))
        new = renamed.get(scope, {}).get(fingerprint)
        if new is None or (scope, fingerprint) in kept:
            continue
        record["code_fingerprint"] = new
        record["checksum"] = runs.checksum(record)
        path.write_bytes(gzip.compress(json.dumps(record, indent=1, sort_keys=True).encode(), mtime=0))
        manifest["records"][key] = file_sha256(path)


def _paper_chapter(name: str) -> Chapter | None:
    """The registered paper chapter ``name``, ``None`` for the book's own chapters (world, baseline, scorecard)."""
    return next((c for c in paper_chapters() if c.name == name), None)


def _scopes(chapter: str) -> list[str]:
    """The record scopes a chapter's pages rest on: the core, the chapter's paper if it defines methods, and the
    papers whose runs it reads (``Chapter.reads``: the head to head trains other papers' methods, and their runs
    belong to those papers)."""
    found = _paper_chapter(chapter)
    if found is None:
        return [runs.CORE]
    return [runs.CORE, *([chapter] if found.methods else []), *found.reads]


def _seeds(chapter: str, scale: str) -> list[int]:
    found = _paper_chapter(chapter)
    return found.seeds(scale) if found else []


def _page_scale(path: Path) -> str | None:
    nb = json.loads(path.read_text())
    return nb.get("metadata", {}).get("papermill", {}).get("parameters", {}).get("scale")


def chapter_entry(chapter: str, scale: str, executed_dir: Path = EXECUTED_DIR) -> dict[str, Any]:
    """The manifest's entry of ``chapter`` made now: ``ValueError`` when one of its pages is missing from
    ``executed_dir`` or was executed at another scale."""
    notebooks = CHAPTERS[chapter]
    for nb in notebooks:
        page = executed_dir / f"{nb}.ipynb"
        if not page.exists():
            raise ValueError(f"chapter {chapter}: {page} is missing: execute it first (make book CHAPTERS={chapter})")
        if _page_scale(page) != scale:
            raise ValueError(f"chapter {chapter}: {page} was executed at scale {_page_scale(page)!r}, not {scale!r}")
    times_path = executed_dir / TIMES_FILE
    times = json.loads(times_path.read_text()) if times_path.exists() else {}
    seconds = times.get("seconds", {}) if times.get("scale") == scale else {}
    return {
        "notebooks": notebooks,
        "commit": head_commit(),
        "fingerprints": {scope: runs.code_fingerprint(scope) for scope in _scopes(chapter)},
        "files": {scope: _file_hashes(scope) for scope in _scopes(chapter)},
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "scale": scale,
        "seeds": _seeds(chapter, scale),
        "minutes": {nb: round(seconds[nb] / 60, 1) for nb in notebooks if nb in seconds},
    }


def _measurement_kinds() -> frozenset[str]:
    """The record kinds that measure the machine (``Chapter.measurements``): read whatever code stored them, so they
    are shipped and kept whatever code made them, until a chapter measures them again."""
    return frozenset(kind for chapter in paper_chapters() for kind in chapter.measurements)


def _store_records(scale: str, root: Path | None = None) -> Iterator[tuple[str, Path, dict]]:
    """(kind, path, record) of every current record of the results store at ``scale``, and of every measurement
    (``_measurement_kinds``) whatever code made it (records without a scale in their config, e.g. frozen caches,
    are kept)."""
    root = root or results_dir()
    measurements = _measurement_kinds()
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.json")):
            record = runs.read(path)
            if record is None or not (runs.current(record) or folder.name in measurements):
                continue
            config = record.get("config", {})
            if isinstance(config, dict) and config.get("scale", scale) != scale:
                continue
            yield folder.name, path, record


def make(
    names: Sequence[str] = (),
    scale: str = "laptop",
    executed_dir: Path = EXECUTED_DIR,
    release: Path = RELEASE_DIR,
) -> dict[str, Any]:
    """Ship chapters ``names`` (all when empty) from ``executed_dir`` and the results store into ``release``:
    their pages, every current record at ``scale`` (a record made by other code than today's is refused: it is
    not copied, and a chapter whose scopes have no current record is an error) and the manifest; a record of the
    release that no chapter's code makes any more (``_orphaned``: re-made chapters' old runs) leaves it. Returns it."""
    chosen = list(names) or list(CHAPTERS)
    unknown = [n for n in chosen if n not in CHAPTERS]
    if unknown:
        raise ValueError(f"chapters must be among {list(CHAPTERS)}, got {unknown}")
    manifest_path = release / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"chapters": {}, "records": {}}
    if manifest.get("scale", scale) != scale:
        raise ValueError(f"the release is at scale {manifest['scale']!r}; make it again from scratch for {scale!r}")
    for name in chosen:
        check_committed(name)
    entries = {name: chapter_entry(name, scale, executed_dir) for name in chosen}
    shipped = list(_store_records(scale))
    for name in chosen:
        scopes = set(_scopes(name)) - {runs.CORE}
        if scopes and not any(r.get("scope") in scopes for _, _, r in shipped):
            raise ValueError(f"chapter {name}: no record of {sorted(scopes)} made by today's code in {results_dir()}")
    (release / PAGES).mkdir(parents=True, exist_ok=True)
    for name, entry in entries.items():
        for nb in entry["notebooks"]:
            shutil.copy(executed_dir / f"{nb}.ipynb", release / PAGES / f"{nb}.ipynb")
        manifest["chapters"][name] = entry
    written = set()
    for kind, path, _ in shipped:
        target = release / RECORDS / kind / f"{path.name}.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        written.add(key := target.relative_to(release).as_posix())
        manifest["records"][key] = file_sha256(target)
    measurements = _measurement_kinds()
    for key in sorted(set(manifest["records"]) - written):
        if (release / key).exists() and _orphaned(read_record(release / key), manifest["chapters"], measurements):
            (release / key).unlink(missing_ok=True)
            del manifest["records"][key]
    manifest["scale"] = scale
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def repage(names: Sequence[str], release: Path = RELEASE_DIR) -> dict[str, Any]:
    """Execute the pages of ``names`` (chapters, or notebooks of a chapter: one page without its chapter's others,
    which may load trained models this machine would train again) from the release's own records and ship them: for
    pages whose prose, tables or figures changed while their runs did not (book-side code: ``vlp_lib/book/``, a
    paper's ``book/``, the notebooks). Nothing is re-made: the pages run on a scratch store unpacked from the release. A page that loads a
    trained model whose checkpoint is not here (the release ships records, not checkpoints) trains its run again,
    which rewrites the run's record: when every such run gives the release's numbers (``compare_records``), the
    pages are executed once more on the checkpoints now made, and must then change no record; pages that make a
    record the release lacks, or a number it does not hold, are refused, nothing shipped (re-make the chapter:
    ``make``). Each chapter's entry keeps its records, minutes, date and machine (what making its runs measured) and
    names HEAD, whose fingerprinted files are those that made the numbers, as its commit. Refused before any compute
    when a chapter is not in the release, its code is uncommitted or its fingerprints differ from its entry's (its
    records are stale: re-make it)."""
    manifest = read_manifest(release)
    if manifest is None:
        raise ValueError(f"no release at {release}: ship chapters with make first")
    if not names:
        raise ValueError("name the chapters (or pages) to execute again")
    # the pages named (a chapter's own: the scorecard, which executing a paper chapter adds, only when named) and
    # their chapters, whose entries are checked and updated
    pages = select_notebooks(names, scorecard=False)
    chapters = list(dict.fromkeys(chapter_of(nb) for nb in pages))
    unknown = [c for c in chapters if c not in manifest["chapters"]]
    if unknown:
        raise ValueError(f"chapters not in the release: {unknown}; ship them with make")
    for name in chapters:
        check_committed(name)
        entry = manifest["chapters"][name]
        if {scope: runs.code_fingerprint(scope) for scope in _scopes(name)} != entry["fingerprints"]:
            shown = ", ".join(changed_files(entry)[:8]) or "its scopes"
            raise ValueError(
                f"chapter {name}: the code that made its records changed since ({shown}): re-make it (make {name})"
            )
    refused = f"the pages {', '.join(pages)} need runs the release does not hold: re-make their chapters (make)"
    with tempfile.TemporaryDirectory(prefix="vlp-repage-") as tmp:
        scratch = Path(tmp)
        store = unpack(release, scratch)
        for attempt in (1, 2):  # the second on the records the first rewrote, which name the checkpoints it made
            before = {path: file_sha256(path) for path in store.rglob("*.json")}
            # the named chapters' records are current (checked above); the others' enter only through the book's
            # false-discovery-rate family and the scorecard, read as the release's scorecard reads them (stale too:
            # ``findings.release_scorecard``), so a page's verdicts at 5% FDR are the scorecard's
            with using_store(store, accept_stale=True):
                execute(pages, manifest["scale"], executed_dir=scratch / "executed", scorecard=False)
            remade = sorted(path for path in store.rglob("*.json") if before.get(path) != file_sha256(path))
            if not remade:
                break
            new = [str(path.relative_to(store)) for path in remade if path not in before]
            if new:
                raise ValueError(f"{refused}; they made {len(new)} records (e.g. {new[0]})")
            shipped = unpack(release, scratch / "shipped")
            differences, _ = compare_records(shipped, store)
            if differences or attempt == 2:
                shown = "; ".join(differences[:3]) or f"{len(remade)} records rewritten on the second pass"
                raise ValueError(f"{refused}; {shown}")
            # the second pass reads the release's own records (their timings too: a run trained again here took this
            # machine's seconds), each naming the checkpoint made here
            for path in remade:
                record = json.loads((shipped / path.relative_to(store)).read_text())
                made = json.loads(path.read_text())
                if "checkpoint" in made:
                    record["checkpoint"] = made["checkpoint"]
                record["checksum"] = runs.checksum(record)
                path.write_text(json.dumps(record, indent=1, sort_keys=True))
            print(
                f"{len(remade)} runs trained again for the checkpoints the pages load (the release ships records, not "
                "checkpoints), with the release's numbers: the pages are executed again on those checkpoints, "
                "reading the release's records"
            )
        for nb in pages:
            shutil.copy(scratch / "executed" / f"{nb}.ipynb", release / PAGES / f"{nb}.ipynb")
        for name in chapters:
            # the day its pages were executed again: the entry's date and machine stay those of its runs
            manifest["chapters"][name].update(
                notebooks=CHAPTERS[name], commit=head_commit(), executed=datetime.date.today().isoformat()
            )
    (release / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def read_record(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def _orphaned(record: dict[str, Any], chapters: dict[str, Any], measurements: frozenset[str]) -> bool:
    """Whether a record of the release was made by code that no chapter of the release was shipped with: its scope's
    fingerprint differs from every shipping chapter's that rests on the scope. Such a record backs no page (each
    page's runs are those of its chapter's fingerprints): ``make`` drops it, ``check`` reports it. A record
    of a scope no chapter names, without a scope, or of a kind in ``measurements`` (``_measurement_kinds``: a
    measurement of the machine), is kept."""
    if record.get("kind") in measurements:
        return False
    scope = record.get("scope")
    shipped_with = {entry["fingerprints"][scope] for entry in chapters.values() if scope in entry["fingerprints"]}
    return bool(shipped_with) and record.get("code_fingerprint") not in shipped_with


def read_manifest(release: Path = RELEASE_DIR) -> dict[str, Any] | None:
    """The release's manifest, or ``None`` when there is no release."""
    path = release / MANIFEST
    return json.loads(path.read_text()) if path.exists() else None


def changed_files(entry: dict[str, Any]) -> list[str]:
    """The fingerprinted files of a chapter's scopes that differ from the release's (changed, added or gone)."""
    out = []
    for scope, files in entry.get("files", {}).items():
        now = _file_hashes(scope)
        out += [f for f in sorted(set(files) | set(now)) if files.get(f) != now.get(f)]
    return sorted(set(out))


def provenance(entry: dict[str, Any], minutes: float | None = None) -> str:
    """The note under an installed page's title: where its numbers come from (the commit, the day and machine its
    runs were made, and the day its page was executed again where ``repage`` did so later) and whether today's code
    still makes them."""
    m = entry["machine"]
    seeds = ", ".join(map(str, entry["seeds"])) or "as the page states"
    took = f"; this page took {minutes:.1f} min to execute" if minutes is not None else ""
    executed = entry.get("executed")  # set by ``repage``: the page executed again later on the same records
    again = f"; executed again on the release's records on {executed}" if executed and executed != entry["date"] else ""
    text = (
        f"```{{note}}\nNumbers from the book's release: commit `{(entry['commit'] or 'unknown')[:12]}`, "
        f"{entry['date']}, {m['cpu']} ({m['cores']} cores), scale `{entry['scale']}`, seeds {seeds}{took}{again}.\n```"
    )
    changed = changed_files(entry)
    if changed:
        shown = ", ".join(f"`{f}`" for f in changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        text += (
            "\n\n```{warning}\nThe code these runs depend on has changed since the release: "
            f"{shown}. Re-make this chapter with `make book CHAPTERS=<chapter> EXECUTE=1`.\n```"
        )
    return text


def install(release: Path = RELEASE_DIR, executed_dir: Path = EXECUTED_DIR) -> list[str]:
    """Copy the release's pages into ``executed_dir`` with their provenance note, except pages executed here
    (without ``RELEASE_MARK``); returns the notebooks installed."""
    manifest = read_manifest(release)
    if manifest is None:
        return []
    executed_dir.mkdir(parents=True, exist_ok=True)
    installed = []
    for entry in manifest["chapters"].values():
        for nb in entry["notebooks"]:
            target = executed_dir / f"{nb}.ipynb"
            if target.exists() and not json.loads(target.read_text()).get("metadata", {}).get(RELEASE_MARK):
                continue  # executed here: newer than the release
            page = clean(json.loads((release / PAGES / f"{nb}.ipynb").read_text()))
            note = {"cell_type": "markdown", "metadata": {}, "source": provenance(entry, entry["minutes"].get(nb))}
            if page["nbformat"] >= 4 and page.get("nbformat_minor", 0) >= 5:
                note["id"] = f"release-{nb}"[:64]
            first = next((i for i, c in enumerate(page["cells"]) if c["cell_type"] == "markdown"), -1)
            page["cells"].insert(first + 1, note)
            page["metadata"][RELEASE_MARK] = True
            (executed_dir / f"{nb}.md").unlink(missing_ok=True)  # a placeholder must not shadow the page
            target.write_text(json.dumps(page, indent=1, ensure_ascii=False) + "\n")
            installed.append(nb)
    return installed


def missing_chapters(release: Path = RELEASE_DIR) -> list[str]:
    """The book's chapters the release does not hold yet (all of them when there is no release)."""
    manifest = read_manifest(release)
    return [c for c in CHAPTERS if manifest is None or c not in manifest["chapters"]]


def check(release: Path = RELEASE_DIR, complete: bool = True) -> list[str]:
    """What is wrong with the release (empty: nothing): a page missing, a record file missing, altered (its
    SHA-256) or not a whole record (its own checksum), a page at another scale than the release; with
    ``complete``, also a chapter of the book the release does not hold (a release is built chapter by chapter:
    ``complete=False`` checks what is shipped so far)."""
    manifest = read_manifest(release)
    if manifest is None:
        return [f"no release at {release}"]
    problems = []
    missing = missing_chapters(release)
    if missing and complete:
        problems.append(f"chapters not in the release: {missing}")
    for name, entry in manifest["chapters"].items():
        if not _is_checkable(entry.get("commit")):
            problems.append(
                f"{name}: commit {entry.get('commit')!r} cannot be checked out (`python -m vlp_lib.book.release "
                "recommit` finds the commit whose files made its numbers)"
            )
        for nb in entry["notebooks"]:
            page = release / PAGES / f"{nb}.ipynb"
            if not page.exists():
                problems.append(f"{name}: page {nb} missing")
            elif _page_scale(page) != manifest["scale"]:
                problems.append(f"{name}: page {nb} executed at {_page_scale(page)!r}")
    measurements = _measurement_kinds()
    for rel, digest in manifest["records"].items():
        path = release / rel
        if not path.exists():
            problems.append(f"record {rel} missing")
            continue
        if file_sha256(path) != digest:
            problems.append(f"record {rel} altered (SHA-256)")
            continue
        record = read_record(path)
        if "checksum" in record and record["checksum"] != runs.checksum(record):
            problems.append(f"record {rel} is not whole (its checksum)")
        elif _orphaned(record, manifest["chapters"], measurements):
            problems.append(
                f"record {rel} was made by code no chapter of the release was shipped with (scope "
                f"{record.get('scope')!r}): it backs no page; `release make` drops it"
            )
    return problems


def unpack(release: Path, root: Path) -> Path:
    """The release's records as a results store under ``root`` (for judging claims on them); returns the store."""
    store = root / "results"
    restore(release, store)
    return store


def restore(release: Path = RELEASE_DIR, store: Path | None = None) -> int:
    """Copy the release's records into the working results store (``store``, default ``results_dir()``), keeping
    every record already there; returns how many were copied. Then a notebook opened in JupyterLab, or a chapter
    re-executed, loads the shipped runs instead of training them (a missing checkpoint is re-made by its run, with
    the same numbers: ``experiment.trained_state``), and a chapter the release holds in part trains only the rest."""
    store = store or results_dir()
    copied = 0
    for rel in (read_manifest(release) or {}).get("records", {}):
        kind, name = Path(rel).parts[1], Path(rel).name[: -len(".gz")]
        target = store / kind / name
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress((release / rel).read_bytes()))
        copied += 1
    return copied


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Environment variables set (``None``: unset) inside the block, restored after it."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def using_store(store: Path, accept_stale: bool = False) -> AbstractContextManager[None]:
    """Read the results store ``store`` (``VLP_RESULTS_DIR``) inside the block, stale records too if asked."""
    return environment(
        VLP_RESULTS_DIR=str(store), VLP_ACCEPT_STALE="1" if accept_stale else os.environ.get("VLP_ACCEPT_STALE")
    )


def verdicts(store: Path, scale: str, accept_stale: bool = False) -> dict[str, dict[str, str]]:
    """``{chapter: {claim id: verdict}}`` of every paper chapter judged on the records of ``store``."""
    with using_store(store, accept_stale):
        return {c.name: {line["id"]: line["verdict"] for line in c.claims(scale)} for c in paper_chapters()}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers_apart(a: Any, b: Any, tolerance: float) -> bool:
    """Whether ``b`` is not the number ``a`` is to ``tolerance`` (a number that is gone or not a number is apart)."""
    if not _is_number(b):
        return True
    return abs(float(b) - float(a)) > tolerance


def compare_records(
    release_store: Path, remade_store: Path, tolerance: float = TOLERANCE, measured: frozenset[str] = frozenset()
) -> tuple[list[str], int]:
    """Differences between two stores' records of the same runs, and how many runs both have: every metric (the
    machine's speed, ``NOT_COMPARED``, is not a result) and every logged number of the loss history, step by step,
    beyond ``tolerance``; a history cut short or grown is a difference. A run of the release the re-make lacks is
    not reported here (``not_remade``); records of the ``measured`` kinds (taken from the release) are not runs."""
    out, compared = [], 0
    for path in sorted(release_store.rglob("*.json")):
        other = remade_store / path.relative_to(release_store)
        if not other.exists() or path.parent.name in measured:
            continue
        compared += 1
        a, b = json.loads(path.read_text()), json.loads(other.read_text())
        run = f"{path.parent.name}/{path.stem}"
        for key, value in a.get("metrics", {}).items():
            new = b.get("metrics", {}).get(key)
            if key not in NOT_COMPARED and _is_number(value) and _numbers_apart(value, new, tolerance):
                out.append(f"{run} {key}: release {value!r}, re-made {new!r}")
        history, remade = a.get("history", []), b.get("history", [])
        if len(history) != len(remade):
            out.append(f"{run} history: {len(history)} logged steps in the release, {len(remade)} re-made")
            continue
        for entry, new_entry in zip(history, remade):
            apart = [k for k, v in entry.items() if _is_number(v) and _numbers_apart(v, new_entry.get(k), tolerance)]
            if apart:  # the first step that differs says enough about a run
                step = entry.get("step")
                out.append(
                    f"{run} history at step {step}: "
                    + ", ".join(f"{k} release {entry[k]!r}, re-made {new_entry.get(k)!r}" for k in apart)
                )
                break
    return out, compared


def not_remade(release_store: Path, remade_store: Path, remade: set[str]) -> tuple[list[str], list[str]]:
    """Records of the release whose scope is a re-made chapter's but that the re-make did not produce:
    ``(missing, unattributed)``. A record is *missing* when no chapter outside ``remade`` reads its scope (so it can
    only be the re-made chapter's own run, and today's code no longer makes it); *unattributed* when one does (the
    head to head trains its runs in the papers' scopes: they are that chapter's, and only re-making it checks them).
    Records carry their scope, not the chapter that made them: this is as far as the release can attribute them."""
    readers = {scope for c in paper_chapters() if c.name not in remade for scope in c.reads}
    missing, unattributed = [], []
    for path in sorted(release_store.rglob("*.json")):
        scope = json.loads(path.read_text()).get("scope")
        if scope not in remade or (remade_store / path.relative_to(release_store)).exists():
            continue
        line = f"{path.parent.name}/{path.stem} ({scope})"
        if scope in readers:
            unattributed.append(line)
        else:
            missing.append(f"{line}: in the release, not re-made")
    return missing, unattributed


def restore_measurements(release_store: Path, store: Path, kinds: frozenset[str]) -> int:
    """Copy the release's records of ``kinds`` (a chapter's ``measurements``) into ``store``; returns how many."""
    copied = 0
    for kind in sorted(kinds):
        for path in sorted((release_store / kind).glob("*.json")):
            target = store / kind / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
            copied += 1
    return copied


def verify(
    names: Sequence[str], release: Path = RELEASE_DIR, keep: Path | None = None, ship: bool = False
) -> list[str]:
    """Re-make chapters ``names`` (all when empty) from empty caches into a scratch store and compare them with
    the release (module docstring); returns the differences (empty: verified). ``ship``: a re-make without a
    difference is shipped (``make``: its pages, its records with today's fingerprints and timings, its minutes and
    machine), so that code changed without changing a number (a faster evaluation) re-stamps the release; a re-make
    with any difference ships nothing."""
    manifest = read_manifest(release)
    if manifest is None:
        raise ValueError(f"no release at {release} to verify against")
    scale = manifest["scale"]
    shipped = list(names) or list(CHAPTERS)
    if ship:  # what ``make`` would refuse at the end of the re-make, refused before it
        pages_only = [n for n in shipped if n not in CHAPTERS]
        if pages_only:
            raise ValueError(f"--ship ships whole chapters, not pages: {pages_only}; chapters: {', '.join(CHAPTERS)}")
        for name in shipped:
            check_committed(name)
    scratch = Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix="vlp-verify-"))
    remade = {c for c in (names or list(CHAPTERS)) if c in {p.name for p in paper_chapters()}}
    release_store = unpack(release, scratch / "release")
    measured = frozenset(kind for c in paper_chapters() if c.name in remade for kind in c.measurements)
    restored = restore_measurements(release_store, scratch / "remade", measured)
    if restored:
        print(f"taken from the release, not measured again: {restored} records of {', '.join(sorted(measured))}")
    scratch_dirs = {"VLP_RESULTS_DIR": "remade", "VLP_CACHE_DIR": "cache", "VLP_CHECKPOINT_DIR": "checkpoints"}
    with environment(**{key: str(scratch / sub) for key, sub in scratch_dirs.items()}):
        execute(select_notebooks(names), scale, executed_dir=scratch / "executed")
    with using_store(scratch / "remade"):
        for c in paper_chapters():
            if c.name in remade and (report := c.remeasured(scale)):
                print(f"measured again (reported, not compared):\n{report}")
    differences, compared = compare_records(release_store, scratch / "remade", measured=measured)
    missing, unattributed = not_remade(release_store, scratch / "remade", remade)
    differences += missing
    if unattributed:
        print(
            f"not compared: {len(unattributed)} records of the release in the scopes re-made may belong to chapters "
            "that read those scopes and were not re-made (re-make them too to check them):\n  "
            + "\n  ".join(unattributed)
        )
    before, after = verdicts(release_store, scale, accept_stale=True), verdicts(scratch / "remade", scale)
    for chapter in sorted(remade):
        for claim, verdict in before[chapter].items():
            if after[chapter].get(claim) != verdict:
                differences.append(f"claim {claim}: release {verdict!r}, re-made {after[chapter].get(claim)!r}")
    here = machine()
    for chapter in sorted(remade):
        entry = manifest["chapters"].get(chapter, {})
        kind = same_kind(entry.get("machine", {}), here)
        if not kind:
            print(
                f"{chapter}: the release was made on {entry.get('machine', {}).get('cpu_kind') or 'a CPU of unstated kind'}"
                f" ({entry.get('machine', {}).get('simd') or 'SIMD unstated'}), this re-make on {here['cpu_kind']} "
                f"({here['simd']}): on another CPU kind expect differences of about 1 pp, and verdicts near a "
                "threshold to move"
            )
    judged = sum(len(before[chapter]) for chapter in remade)
    print(f"compared: {compared} records of the release re-made, {judged} verdicts judged again")
    if ship and not differences:
        with using_store(scratch / "remade"):
            make(shipped, scale, executed_dir=scratch / "executed", release=release)
        print(f"shipped: {', '.join(names) or 'every chapter'} re-made by today's code, every number the release's")
    return differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.book.release", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make", help="ship chapters' executed pages and the store's current records")
    p.add_argument("names", nargs="*")
    p.add_argument("--scale", default="laptop")
    p = sub.add_parser("repage", help="execute chapters' pages (or pages) again from the release's records, ship them")
    p.add_argument("names", nargs="+")
    sub.add_parser("install", help="the release's pages into book/executed (pages executed here are kept)")
    sub.add_parser("restore", help="the release's records into the working results store (records there are kept)")
    p = sub.add_parser("restamp", help="today's fingerprints for chapters whose code changed only in docstrings")
    p.add_argument("names", nargs="+")
    sub.add_parser("recommit", help="name, for each chapter, a commit whose files made its numbers (not a dirty tree)")
    p = sub.add_parser("check", help="the release whole: every chapter, page, record and its checksum")
    p.add_argument("--partial", action="store_true", help="check what is shipped so far; name the chapters missing")
    p = sub.add_parser("verify", help="re-make chapters from empty caches and compare with the release")
    p.add_argument("names", nargs="*")
    p.add_argument("--keep", default=None, help="a folder for the scratch store (default: a temporary one)")
    p.add_argument("--ship", action="store_true", help="ship the re-make if no number differs (today's fingerprints)")
    args = parser.parse_args(argv)
    names = [n for arg in getattr(args, "names", []) for n in arg.replace(",", " ").split()]
    try:
        if args.command == "make":
            manifest = make(names, args.scale)
            size = sum(p.stat().st_size for p in RELEASE_DIR.rglob("*") if p.is_file())
            print(
                f"release: {len(manifest['chapters'])} chapters, {len(manifest['records'])} records, {size / 1e6:.1f} MB"
            )
        elif args.command == "repage":
            repage(names)
            print(f"pages shipped again from the release's records: {', '.join(names)}")
        elif args.command == "install":
            installed = install()
            print(
                f"installed from the release: {', '.join(installed) or 'nothing (no release, or every page executed here)'}"
            )
        elif args.command == "restamp":
            for name, files in restamp(names).items():
                print(f"{name}: restamped ({', '.join(files) or 'no file changed'}: docstrings and comments only)")
        elif args.command == "recommit":
            for name, commit in recommit().items():
                print(f"{name}: {commit or 'no commit has the files that made its numbers'}")
        elif args.command == "restore":
            print(f"restored {restore()} records of the release into {results_dir()}")
        elif args.command == "check":
            problems = check(complete=not args.partial)
            missing = missing_chapters()
            if args.partial and missing:
                print(f"not in the release yet (their pages read 'not built yet'): {', '.join(missing)}")
            print("\n".join(problems) or "release whole")
            return 1 if problems else 0
        else:
            differences = verify(names, keep=args.keep, ship=args.ship)
            print("\n".join(differences) or f"verified: the re-made numbers match the release within {TOLERANCE}")
            return 1 if differences else 0
    except ValueError as err:
        parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
