"""Building the book's pages from the notebooks: execute (papermill), clean, and stand in for pages not built.

    python -m vlp_lib.book.build execute --scale smoke protoclip   # chapters or notebooks; none: every one
    python -m vlp_lib.book.build clean book/executed/*.ipynb       # idempotent
    python -m vlp_lib.book.build placeholders                      # a "not built yet" page per missing notebook
    python -m vlp_lib.book.build times                             # the last execute's time per notebook, total

``clean`` makes an executed notebook read as results, not as a log: the notebooks keep their live progress bars
(tqdm's text bar, in terminals, papermill and JupyterLab alike), and the rendered page drops them.

* stderr outputs lose their progress-bar lines (tqdm redraws a line with carriage returns; the final state of every
  bar is dropped too, the cell's printed results say what was done) and tqdm's ``TqdmWarning`` /
  ``TqdmExperimentalWarning`` lines; an output left empty is removed. Other stderr (a real warning) stays, a file of
  the repository named by its path in it (``vlp_lib/data/training.py:47: UserWarning: ...``), not by where the
  machine that executed the page keeps its clone, which means nothing to a reader (cleaning elsewhere leaves it).
* the cell papermill injects (tag ``injected-parameters``) gets the tag ``remove-cell``, which myst-nb honours, and
  its assignments are copied as comments under the original ``parameters`` cell. The original cell is the one worth
  reading: every parameter with its type, default and meaning, which is what a reader needs to re-run the page;
  the injected cell only repeats one or two of them without a word of explanation. Nothing is lost: the page
  still says which values it ran with (and its scale note states scale and seeds), and the ``.ipynb`` still holds
  the injected cell, so the executed notebook re-runs as it ran.
* papermill's record of where it read and wrote the notebook (``metadata.papermill.input_path`` / ``output_path``,
  which the page's ``.ipynb`` download shows) names a file of the repository by its path in it and a scratch folder
  of the executing machine (``make verify``'s, ``release repage``'s) by the file name alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlp_lib.book.pages import CHAPTERS, chapter_of, select_notebooks
from vlp_lib.paths import REPO_ROOT

NOTEBOOKS_DIR = Path("notebooks")
EXECUTED_DIR = Path("book/executed")
# Smoke runs (tests, `make book SCALE=smoke`) use one thread per kernel: the tiny models gain little from a second
# one, and on a shared 2-core machine a two-thread OpenMP region (torch, faiss) spins waiting for a core another
# process holds. Measured back to back under the same load: the components notebook at smoke scale took 407 s with
# torch's default two threads and 45 s with one.
SMOKE_ENV = {"OMP_NUM_THREADS": "1"}
TIMES_FILE = ".times.json"  # in the executed folder: the last ``execute``'s seconds per notebook
INJECTED_MARKER = "# This page ran with (papermill -p, replacing the defaults above):"

# tqdm's bar with a total ("desc:  42%|████      | 21/50 [00:03<00:04, 6.91it/s, loss=3.1]") and without one
# ("rendering world: 512img [00:01, 431.20img/s]"): the elapsed-time bracket and its rate.
_BAR = re.compile(r"\d+%\|.*\|\s*\S+/\S+\s*\[")
_RATE = re.compile(r"\[(?:\d+:)?\d{2}:\d{2}(?:<(?:\d+:)?[\d?]{2}:[\d?]{2})?,\s*[^\]]*?(?:/s|s/\w+|\?\w*/s)")
# "<path>:<line>: TqdmWarning: IProgress not found. ..." and its indented source line(s)
_TQDM_WARNING = re.compile(r"^\S.*:\d+: Tqdm\w*Warning: ")


def is_progress_line(line: str) -> bool:
    """Whether one line of a stream (without its newline) is a progress bar's: tqdm redraws with carriage returns,
    so any line holding one is a redrawn bar; a bar also matches tqdm's format without one."""
    return "\r" in line or bool(_BAR.search(line) or _RATE.search(line))


def strip_progress(text: str) -> str:
    """``text`` (a stderr stream) without progress-bar lines and tqdm's warnings."""
    lines = text.replace("\r\n", "\n").split("\n")
    kept: list[str] = []
    in_warning = False
    for line in lines:
        if in_warning and line[:1] in (" ", "\t"):  # the warning's source line(s), indented
            continue
        in_warning = bool(_TQDM_WARNING.match(line))
        if in_warning or is_progress_line(line):
            continue
        kept.append(line)
    return "\n".join(kept)


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def clean(nb: dict[str, Any]) -> dict[str, Any]:
    """Clean the notebook ``nb`` (nbformat 4 JSON as a dict) in place and return it; see the module's docstring.
    Running it twice changes nothing more."""
    injected: list[str] = []
    for cell in nb.get("cells", []):
        tags = cell.setdefault("metadata", {}).get("tags", [])
        if "injected-parameters" in tags:
            if "remove-cell" not in tags:
                cell["metadata"]["tags"] = [*tags, "remove-cell"]
            injected += [
                line
                for line in _text(cell.get("source", "")).splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
        if cell.get("cell_type") != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = strip_progress(_text(out.get("text", ""))).replace(f"{REPO_ROOT}/", "")
                if not text.strip():
                    continue
                out["text"] = text
            outputs.append(out)
        cell["outputs"] = outputs
    papermill = nb.get("metadata", {}).get("papermill", {})
    for key in ("input_path", "output_path"):
        if isinstance(papermill.get(key), str):
            papermill[key] = readable_path(papermill[key])
    if injected:
        for cell in nb["cells"]:
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                source = _text(cell.get("source", ""))
                if INJECTED_MARKER not in source:
                    cell["source"] = (
                        source.rstrip("\n")
                        + "\n\n"
                        + "\n".join([INJECTED_MARKER] + [f"#   {line}" for line in injected])
                    )
                break
    return nb


def readable_path(path: str) -> str:
    """``path`` as a reader can follow it: a file of the repository by its path in it, any other absolute path (a
    scratch folder of the machine that executed the page) by its file name alone; a relative path as it is."""
    if not os.path.isabs(path):
        return path
    try:
        return Path(path).relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return Path(path).name


def clean_file(path: str | Path) -> None:
    """``clean`` the notebook file ``path`` (rewritten only when something changed)."""
    path = Path(path)
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    before = json.dumps(nb, sort_keys=True)
    clean(nb)
    if json.dumps(nb, sort_keys=True) != before:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def notebook_title(path: Path) -> str:
    """The first Markdown heading of a notebook (its page title in the book)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in _text(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def placeholders(notebooks_dir: Path = NOTEBOOKS_DIR, executed_dir: Path = EXECUTED_DIR) -> list[str]:
    """A "not built yet" page ``<name>.md`` in ``executed_dir`` for every notebook of ``CHAPTERS`` never executed
    there (so the table of contents and the references to it still resolve), and no such page beside an executed
    notebook. Returns the stems that got a placeholder."""
    executed_dir.mkdir(parents=True, exist_ok=True)
    missing = []
    for name in select_notebooks():
        page = executed_dir / f"{name}.md"
        if (executed_dir / f"{name}.ipynb").exists():
            page.unlink(missing_ok=True)
            continue
        missing.append(name)
        page.write_text(
            f"# {notebook_title(notebooks_dir / f'{name}.ipynb')}\n\n"
            "```{note}\n"
            f"Not built yet: this page is `notebooks/{name}.ipynb` executed. Build it with "
            f"`make book CHAPTERS={chapter_of(name)}` (or every chapter with `make book`).\n"
            "```\n",
            encoding="utf-8",
        )
    return missing


def execute(
    names: Sequence[str] = (),
    scale: str = "laptop",
    notebooks_dir: Path = NOTEBOOKS_DIR,
    executed_dir: Path = EXECUTED_DIR,
    parameters: dict[str, str] | None = None,
    scorecard: bool = True,
) -> float:
    """Execute the notebooks of chapters (or notebooks) ``names`` (all when empty; with ``scorecard``, the
    scorecard after a paper chapter's: ``select_notebooks``) with papermill at ``scale`` (and ``parameters``,
    papermill's ``-p name value``) into ``executed_dir``, clean each, print each one's time and the total; returns
    the total seconds. ``subprocess.CalledProcessError`` when a notebook fails (its executed copy shows where)."""
    selected = select_notebooks(names, scorecard)
    executed_dir.mkdir(parents=True, exist_ok=True)
    total = 0.0
    measured: list[tuple[str, float]] = []
    for name in selected:
        src, out = notebooks_dir / f"{name}.ipynb", executed_dir / f"{name}.ipynb"
        print(f"== {src} (scale={scale})", flush=True)
        (executed_dir / f"{name}.md").unlink(missing_ok=True)  # a placeholder must not shadow the page
        t0 = time.perf_counter()
        env = {**SMOKE_ENV, **os.environ} if scale == "smoke" else None  # a thread count set by the user wins
        subprocess.run(
            [
                sys.executable,
                "-m",
                "papermill",
                str(src),
                str(out),
                "-k",
                "python3",
                "-p",
                "scale",
                scale,
                *(arg for name, value in (parameters or {}).items() for arg in ("-p", name, value)),
                "--cwd",
                str(notebooks_dir),
            ],
            check=True,
            env=env,
        )
        seconds = time.perf_counter() - t0
        clean_file(out)
        total += seconds
        measured.append((name, seconds))
        print(f"   {seconds:.0f} s", flush=True)
    (executed_dir / TIMES_FILE).write_text(json.dumps({"scale": scale, "seconds": dict(measured)}, indent=1) + "\n")
    print(format_times(scale, dict(measured)), flush=True)
    return total


def format_times(scale: str, seconds: dict[str, float]) -> str:
    """One line per notebook with its seconds, then the total."""
    total = sum(seconds.values())
    lines = [f"  {name:<24}{s:7.0f} s" for name, s in seconds.items()]
    return "\n".join(
        [f"notebooks executed at scale={scale}:", *lines, f"  {'total':<24}{total:7.0f} s ({total / 60:.1f} min)"]
    )


def times(executed_dir: Path = EXECUTED_DIR) -> str:
    """The last ``execute``'s times (``format_times``), or a line saying none was recorded."""
    path = executed_dir / TIMES_FILE
    if not path.exists():
        return "no notebook executed yet"
    record = json.loads(path.read_text())
    return format_times(record["scale"], record["seconds"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.book.build", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("execute", help="execute chapters' notebooks into book/executed/ and clean them")
    p.add_argument("names", nargs="*", help=f"chapters ({', '.join(CHAPTERS)}) or notebook names; none: all")
    p.add_argument("--scale", default="laptop")
    p = sub.add_parser("clean", help="strip progress bars and tqdm warnings, hide the injected parameters cell")
    p.add_argument("paths", nargs="+")
    sub.add_parser("placeholders", help="a 'not built yet' page for every notebook never executed")
    sub.add_parser("times", help="the last execute's time per notebook and the total")
    args = parser.parse_args(argv)
    if args.command == "execute":
        names = [n for arg in args.names for n in arg.replace(",", " ").split()]
        try:
            execute(names, args.scale)
        except ValueError as err:
            parser.error(str(err))
        except subprocess.CalledProcessError as err:
            print(f"failed: {' '.join(err.cmd)}", file=sys.stderr)
            return err.returncode or 1
    elif args.command == "clean":
        for path in args.paths:
            clean_file(path)
    elif args.command == "times":
        print(times())
    else:
        missing = placeholders()
        if missing:
            print(f"not built yet (placeholder pages): {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
