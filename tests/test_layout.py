"""The package layout: a paper-neutral core and one folder per paper, papers found by registry, a fingerprint per
paper, book-side code outside every fingerprint, and no import cycle (module level or inside functions)."""

import ast
import importlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

import vlp_lib.papers
from vlp_lib import papers, runs
from vlp_lib.book import pages, report
from vlp_lib.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "vlp_lib"
PAPER_NAMES = ("protoclip", "pyramidclip", "dimefm", "iclip", "icmlm", "headtohead", "drawings")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def _imports(path: Path) -> set[str]:
    module = _module_name(path)
    return _imports_of(path.read_text(), module if path.name == "__init__.py" else module.rsplit(".", 1)[0])


def _imports_of(source: str, package: str) -> set[str]:
    """The vlp_lib modules ``source`` (of a module in ``package``) imports, at module level and inside functions:
    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module, else ``pkg``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {n for n in found if n in MODULES}


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _is_paper(module: str) -> bool:
    return module.startswith("vlp_lib.papers.")


def _paper(module: str) -> str:
    return module.split(".")[2]


def _book_side(module: str) -> bool:
    return module.startswith("vlp_lib.book") or (_is_paper(module) and ".book" in module[len("vlp_lib.papers.") :])


def test_no_import_cycle_anywhere_in_the_package():
    names = sorted(GRAPH)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a, targets in GRAPH.items() for b in targets if a != b]
    cols = [index[b] for a, targets in GRAPH.items() for b in targets if a != b]
    adjacency = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    cycles = [
        sorted(n for n in names if labels[index[n]] == label) for label in set(labels) if (labels == label).sum() > 1
    ]
    assert not cycles, f"import cycles (strongly connected modules): {cycles}"


def test_the_cycle_finder_sees_imports_inside_functions_and_relative_ones():
    source = (
        "import os\n\ndef f():\n    from vlp_lib import experiment\n    from ..data.tasks import load_task\n"
        "    class C:\n        def g(self):\n            from . import clip\n"
    )
    assert _imports_of(source, "vlp_lib.methods") == {
        "vlp_lib.experiment",
        "vlp_lib.data.tasks",
        "vlp_lib.methods.clip",
    }


def test_the_core_names_no_paper_and_no_book_code():
    for module, targets in GRAPH.items():
        if _is_paper(module) or _book_side(module) or module == "vlp_lib.papers":
            continue
        bad = {t for t in targets if t.startswith("vlp_lib.papers") or _book_side(t)}
        assert not bad, f"core module {module} imports {sorted(bad)}"


def test_a_paper_never_imports_another_paper_and_computing_code_never_imports_book_code():
    for module, targets in GRAPH.items():
        if not _is_paper(module):
            continue
        others = {t for t in targets if _is_paper(t) and _paper(t) != _paper(module)}
        assert not others, f"{module} imports another paper: {sorted(others)}"
        if not _book_side(module):
            book = {t for t in targets if _book_side(t)}
            assert not book, f"computing module {module} imports book-side {sorted(book)}"


def test_every_paper_folder_is_registered_with_its_notebooks_and_methods():
    folders = sorted(p.name for p in (PACKAGE / "papers").iterdir() if (p / "__init__.py").exists())
    assert sorted(c.name for c in papers.chapters()) == folders == sorted(PAPER_NAMES)
    from vlp_lib import methods

    for chapter in papers.chapters():
        for notebook in chapter.notebooks:
            assert (REPO_ROOT / "notebooks" / f"{notebook}.ipynb").exists(), notebook
        assert pages.CHAPTERS[chapter.name] == list(chapter.notebooks)
        for method in chapter.methods:
            cls = methods.method_class(method)
            assert (
                cls.__module__ == f"vlp_lib.papers.{chapter.name}.method" and methods.paper_of(method) == chapter.name
            )
    assert methods.paper_of("clip") is None


def claims(scale: str) -> list[dict]:  # this module stands in for a chapter's module
    return [{**{column: "" for column in report.SCORECARD_COLUMNS}, "id": "f1", "paper": "FakeCLIP"}]


def test_scorecard_gathers_every_registered_chapter_without_naming_it(monkeypatch):
    fake = papers.Chapter("fake", "FakeCLIP", ("world_tour",), __name__, order=999)
    monkeypatch.setitem(papers._REGISTRY, "fake", fake)
    card = report.scorecard("smoke")
    assert card["paper"].iloc[-1] == "FakeCLIP" and card["id"].iloc[-1] == "f1"
    assert "ProtoCLIP" in set(card["paper"])


def test_register_refuses_a_notebook_or_a_method_of_two_papers(monkeypatch):
    monkeypatch.setattr(papers, "_REGISTRY", dict(papers._REGISTRY))
    taken = papers.chapters()[0]
    with pytest.raises(ValueError, match="belong to chapters"):
        papers.register(papers.Chapter("other", "Other", (taken.notebooks[0],), "x"))
    with pytest.raises(ValueError, match="belong to papers"):
        papers.register(papers.Chapter("other", "Other", (), "x", methods=(taken.methods[0],)))


def test_importing_the_report_loads_no_paper():
    code = "import sys, vlp_lib.book.report; print(any(m.startswith('vlp_lib.papers.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stdout.strip() == "False"  # importing report loads no chapter until a scorecard is asked for


# --- the fingerprint per paper ------------------------------------------------------------------------------------


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    copy = tmp_path / "vlp_lib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(runs, "PACKAGE_DIR", copy)
    runs.code_fingerprint.cache_clear()
    yield copy
    runs.code_fingerprint.cache_clear()


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")
    runs.code_fingerprint.cache_clear()


def test_editing_one_paper_leaves_every_other_papers_stored_runs_loaded(package_copy, tmp_path):
    store = tmp_path / "store"
    scopes = (None, *PAPER_NAMES)
    configs = {scope: {"method": scope or "clip", "seed": 0} for scope in scopes}
    for scope, config in configs.items():
        runs.save(runs.RUN_KIND, config, {"acc": 0.5}, root=store, paper=scope)

    def loaded() -> dict:
        return {
            scope: runs.load(runs.RUN_KIND, config, root=store, paper=scope) is not None
            for scope, config in configs.items()
        }

    assert all(loaded().values())
    # a paper's book side (claims, tables) and the book's own code: nothing is stale
    _edit(package_copy / "papers" / "protoclip" / "book" / "chapter.py")
    _edit(package_copy / "book" / "report.py")
    assert all(loaded().values())
    # PyramidCLIP's detector: PyramidCLIP's runs only
    _edit(package_copy / "papers" / "pyramidclip" / "detector.py")
    assert loaded() == {scope: scope != "pyramidclip" for scope in scopes}
    assert len(runs.records(runs.RUN_KIND, root=store)) == len(scopes) - 1
    # ICMLM's loss: ICMLM's runs too, nobody else's
    _edit(package_copy / "papers" / "icmlm" / "loss.py")
    assert loaded() == {scope: scope not in ("pyramidclip", "icmlm") for scope in scopes}
    # the core (the training loop, a model config): every run
    _edit(package_copy / "train.py")
    assert not any(loaded().values())


def test_a_record_is_loaded_only_in_its_own_scope(tmp_path):
    store = tmp_path / "store"
    runs.save("x", {"a": 1}, {"m": 1.0}, root=store, paper="iclip")
    assert runs.load("x", {"a": 1}, root=store, paper="iclip") is not None
    assert runs.load("x", {"a": 1}, root=store) is None  # the core's fingerprint is another
    with pytest.raises(ValueError, match="paper must be a folder"):
        runs.code_fingerprint("no_such_paper")


def test_fingerprinted_files_by_folder():
    core = {p.relative_to(PACKAGE).as_posix() for p in runs.fingerprinted_files()}
    assert {"train.py", "runs.py", "model_configs/rn-tiny.json", "eval/probes.py"} <= core
    assert not {f for f in core if f.startswith(("papers/", "book/"))}
    proto = {p.relative_to(PACKAGE).as_posix() for p in runs.fingerprinted_files("protoclip")}
    assert core < proto
    assert {"papers/protoclip/method.py", "papers/protoclip/prototypes.py"} <= proto
    assert not {f for f in proto if f.startswith("papers/protoclip/book/") or f.startswith("papers/icmlm/")}


# --- a sixth paper: one folder -------------------------------------------------------------------------------------

SIXTH = {
    "__init__.py": '''
        """A toy paper: CLIP with its loss scaled, to show that a folder is all a paper needs."""
        from vlp_lib.papers import Chapter, register

        CHAPTER = register(Chapter(name="toypaper", paper="ToyCLIP", notebooks=(), methods=("toyclip",),
                                   module="vlp_lib.papers.toypaper.book.chapter", order=990))
        ''',
    "method.py": """
        from vlp_lib.losses.clip import clip_loss
        from vlp_lib.methods.base import Method


        class ToyCLIP(Method):
            name = "toyclip"

            def loss(self, model, batch):
                out = model(batch.images, batch.texts)
                loss = 0.5 * clip_loss(out["image_features"], out["text_features"], out["logit_scale"])
                return loss, {"loss_toy": loss.item()}
        """,
    "book/__init__.py": "",
    "book/chapter.py": """
        from vlp_lib import experiment
        from vlp_lib.book.report import SCORECARD_COLUMNS

        RULES = []


        def config(scale, seed):
            return experiment.make_config("smoke", method="toyclip", seed=seed, train_size=128, batch_size=32,
                                          task_train=40, task_test=20, retrieval_images=20, eval_tasks=["shapes10"])


        def resolve_seeds(scale, seeds):
            return [0]


        def claims(scale):
            record = experiment.stored(config(scale, 0))
            value = "not run" if record is None else f"{record['metrics']['shapes10/linear']:.3f}"
            return [{**{c: "" for c in SCORECARD_COLUMNS}, "id": "T1", "paper": "ToyCLIP", "verdict": value}]
        """,
}


def test_a_sixth_paper_is_one_folder_that_registers_trains_and_reaches_the_scorecard(tmp_path, monkeypatch):
    extra = tmp_path / "extra_papers"
    for name, source in SIXTH.items():
        (extra / "toypaper" / name).parent.mkdir(parents=True, exist_ok=True)
        (extra / "toypaper" / name).write_text(textwrap.dedent(source))
    monkeypatch.setattr(vlp_lib.papers, "__path__", [*vlp_lib.papers.__path__, str(extra)])
    monkeypatch.setattr(papers, "_REGISTRY", dict(papers._REGISTRY))
    try:
        assert "toypaper" in [c.name for c in papers.chapters()]
        from vlp_lib import experiment, methods

        assert "toyclip" in methods.available_methods() and methods.paper_of("toyclip") == "toypaper"
        chapter = importlib.import_module("vlp_lib.papers.toypaper.book.chapter")
        config = chapter.config("smoke", 0)
        assert report.scorecard("smoke").set_index("id").loc["T1", "verdict"] == "not run"
        record = experiment.run(config, progress=False)
        assert record["scope"] == "toypaper" and record["code_fingerprint"] == runs.code_fingerprint("toypaper")
        assert "loss_toy" in record["history"][-1]
        card = report.scorecard("smoke").set_index("id")
        assert card.loc["T1", "paper"] == "ToyCLIP"
        assert card.loc["T1", "verdict"] == f"{record['metrics']['shapes10/linear']:.3f}"
    finally:
        for name in [m for m in sys.modules if m.startswith("vlp_lib.papers.toypaper")]:
            del sys.modules[name]
        runs.code_fingerprint.cache_clear()


def test_toc_reading_order_is_execution_order():
    toc = (REPO_ROOT / "_toc.yml").read_text()
    in_toc = [line.split("book/executed/")[1].strip() for line in toc.splitlines() if "book/executed/" in line]
    assert in_toc == pages.select_notebooks()


def test_run_rows_validates_every_config_before_computing_and_stored_needs_every_seed(monkeypatch):
    from vlp_lib import experiment
    from vlp_lib.book import plan

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
    monkeypatch.setattr(experiment, "stored", lambda c: stored.get((c["row"], c["seed"])))
    assert plan.stored("good", config, "smoke", [0, 1]) == [{"r": 0}, {"r": 1}]
    assert plan.stored("half", config, "smoke", [0, 1]) is None


def test_one_claim_type_and_one_judge_for_every_chapter():
    """Claims are data of one ``vlp_lib.book.claims.Claim`` type, judged by one ``judge``."""
    defined = {
        (module, node.name)
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name in ("Claim", "judge")
    }
    assert defined == {("vlp_lib.book.claims", "Claim"), ("vlp_lib.book.claims", "judge")}
