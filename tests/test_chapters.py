"""The package layout: chapters found by registry, book-side code outside the fingerprint, a paper-neutral core."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vlp_lib import chapters, runs
from vlp_lib.book import pages, report
from vlp_lib.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "vlp_lib"


def test_every_chapter_folder_is_registered_with_existing_notebooks():
    folders = sorted(p.name for p in (PACKAGE / "chapters").iterdir() if (p / "__init__.py").exists())
    assert sorted(c.name for c in chapters.chapters()) == folders
    for chapter in chapters.chapters():
        for notebook in chapter.notebooks:
            assert (REPO_ROOT / "notebooks" / f"{notebook}.ipynb").exists(), notebook
        assert pages.CHAPTERS[chapter.name] == list(chapter.notebooks)


def claims(scale: str) -> list[dict]:  # this module stands in for a chapter's module
    return [{**{column: "" for column in report.SCORECARD_COLUMNS}, "id": "f1", "paper": "FakeCLIP"}]


def test_scorecard_gathers_every_registered_chapter_without_naming_it(monkeypatch):
    fake = chapters.Chapter("fake", "FakeCLIP", ("world_tour",), __name__, order=999)
    monkeypatch.setitem(chapters._REGISTRY, "fake", fake)
    card = report.scorecard("smoke")
    assert card["paper"].iloc[-1] == "FakeCLIP" and card["id"].iloc[-1] == "f1"
    assert "ProtoCLIP" in set(card["paper"])


def test_register_refuses_a_notebook_of_two_chapters(monkeypatch):
    monkeypatch.setattr(chapters, "_REGISTRY", dict(chapters._REGISTRY))
    taken = chapters.chapters()[0].notebooks[0]
    with pytest.raises(ValueError, match="belong to chapters"):
        chapters.register(chapters.Chapter("other", "Other", (taken,), "x"))


def _imports(path: Path) -> set[str]:
    """Absolute names of the vlp_lib modules a source file imports (relative imports resolved)."""
    module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    package = package.removesuffix(".__init__")
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names |= {prefix} | {f"{prefix}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n for n in names if n.startswith("vlp_lib")}


def test_the_computing_core_never_imports_book_side_code():
    for path in runs.fingerprinted_files():
        if path.suffix != ".py":
            continue
        bad = {n for n in _imports(path) if n.startswith(("vlp_lib.book", "vlp_lib.chapters"))}
        assert not bad, f"{path.relative_to(REPO_ROOT)} imports book-side {sorted(bad)}"


def test_no_import_cycle_between_report_and_chapters():
    # report imports only the registry; the registry imports no chapter and no book module
    assert not {n for n in _imports(PACKAGE / "chapters" / "__init__.py") if n.startswith("vlp_lib.")} - {"vlp_lib.chapters"}
    code = ("import sys, vlp_lib.book.report; "
            "print(any(m.startswith('vlp_lib.chapters.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stdout.strip() == "False"  # importing report loads no chapter until a scorecard is asked for


def test_fingerprint_is_decided_by_folder(tmp_path, monkeypatch):
    copy = tmp_path / "vlp_lib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(runs, "PACKAGE_DIR", copy)

    def fingerprint() -> str:
        runs.code_fingerprint.cache_clear()
        return runs.code_fingerprint()

    try:
        before = fingerprint()
        for book_side in (copy / "chapters" / "protoclip" / "chapter.py", copy / "book" / "report.py"):
            book_side.write_text(book_side.read_text() + "\n# a table's format changed\n")
        assert fingerprint() == before
        for core in (copy / "losses" / "clip.py", copy / "runs.py", copy / "model_configs" / "rn-tiny.json"):
            original = core.read_text()
            core.write_text(original + "\n")
            assert fingerprint() != before, core.name
            core.write_text(original)
        assert fingerprint() == before
    finally:
        runs.code_fingerprint.cache_clear()


def test_toc_reading_order_is_execution_order():
    toc = (REPO_ROOT / "_toc.yml").read_text()
    in_toc = [line.split("book/executed/")[1].strip() for line in toc.splitlines() if "book/executed/" in line]
    assert in_toc == pages.select_notebooks()


def test_run_rows_validates_every_config_before_computing_and_stored_needs_every_seed(monkeypatch):
    from vlp_lib import experiment
    from vlp_lib.chapters import plan

    computed = []
    monkeypatch.setattr(experiment, "run", lambda config, progress=True: computed.append(config) or {"c": config})

    def config(row, scale, seed):
        if row == "bad" and seed == 1:
            raise ValueError("row 'bad': lr must be positive")
        return {"row": row, "seed": seed}

    with pytest.raises(ValueError, match="lr must be positive"):
        plan.run_rows(["good", "bad"], config, "smoke", [0, 1])
    assert computed == []  # the bad row's second seed stopped everything before the first run
    out = plan.run_rows(["good", "other"], config, "smoke", [0, 1])
    assert [r["c"]["seed"] for r in out["good"]] == [0, 1] and list(out) == ["good", "other"]

    stored = {("good", 0): {"r": 0}, ("good", 1): {"r": 1}, ("half", 0): {"r": 2}}
    monkeypatch.setattr(runs, "load", lambda kind, c: stored.get((c["row"], c["seed"])))
    assert plan.stored("good", config, "smoke", [0, 1]) == [{"r": 0}, {"r": 1}]
    assert plan.stored("half", config, "smoke", [0, 1]) is None
