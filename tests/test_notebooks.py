"""Every notebook: committed without outputs, a documented and typed `parameters` cell with `scale`, a scale note
at the top of every page that reports numbers, and it runs end to end through papermill at smoke scale (marker
`notebooks`: the slow tier; `pytest -m "not notebooks"` is the quick one)."""

import ast
import json
from pathlib import Path

import papermill
import pytest

from vlp_lib.book import build as bookbuild

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"world_tour.ipynb", "clip_baseline.ipynb", "protoclip_ablation.ipynb",
                                           "protoclip_components.ipynb", "protoclip_benchmark.ipynb",
                                           "protoclip_clustering.ipynb", "protoclip_efficiency.ipynb",
                                           "scorecard.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_source_has_no_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path.name} carries outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_is_documented(path):
    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    source = "".join(tagged[0]["source"])
    tree = ast.parse(source)
    assigned = {}  # every parameter the cell assigns (annotated or not) -> its source line
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assert node.lineno == node.end_lineno, f"one line per parameter: line {node.lineno}"
            for target in targets:
                assigned[target.id] = source.splitlines()[node.lineno - 1]
        else:
            assert isinstance(node, (ast.Import, ast.ImportFrom)), f"only parameters and imports: line {node.lineno}"
    imports = [isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body]
    assert imports == sorted(imports, reverse=True), "imports first (papermill would glue them to a parameter)"
    assert "scale" in assigned
    assert all("#" in line for line in assigned.values()), "every parameter has a comment (--help-notebook shows it)"
    # papermill must parse every line, or --help-notebook drops it and -p warns "unknown parameter"
    inspected = papermill.inspect_notebook(str(path))
    assert set(inspected) == set(assigned)
    # and show a type for each: papermill reads it from the annotation (`seeds: Optional[list[int]] = None`)
    untyped = [name for name, p in inspected.items() if p["inferred_type_name"] in ("None", "")]
    assert not untyped, f"parameters that papermill --help-notebook shows as 'Unknown type': {untyped}"
    for name, p in inspected.items():
        assert p["help"], f"{name}: papermill finds no help comment"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_pages_state_their_scale(path):
    """Right after the setup cell (the one after `parameters`), a cell shows `vlp_lib.book.pages.scale_note`, its input
    hidden in the book: every page says at which scale (and with which seeds) its numbers were made."""
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    params = next(i for i, c in enumerate(code) if "parameters" in c["metadata"].get("tags", []))
    note = code[params + 2]
    assert "scale_note(scale" in "".join(note["source"])
    assert "remove-input" in note["metadata"].get("tags", [])
    if path.stem != "world_tour":  # the world tour reports no results: scale only
        assert "results=False" not in "".join(note["source"])


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    """One results store and checkpoint folder for every notebook, as in `make book`: later notebooks (the
    clustering, efficiency and scorecard pages) load the runs earlier ones stored instead of retraining."""
    return tmp_path_factory.mktemp("book_results"), tmp_path_factory.mktemp("book_checkpoints")


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_at_smoke_scale(path, tmp_path, shared_store, monkeypatch):
    monkeypatch.setenv("VLP_RESULTS_DIR", str(shared_store[0]))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(shared_store[1]))
    for name, value in bookbuild.SMOKE_ENV.items():  # one thread per kernel, as `make book SCALE=smoke`
        monkeypatch.setenv(name, value)
    executed = papermill.execute_notebook(
        str(path), str(tmp_path / path.name), parameters={"scale": "smoke"}, kernel_name="python3",
        cwd=str(path.parent), progress_bar=False,
    )
    raw = json.dumps(executed)
    assert "IProgress not found" not in raw  # vlp_lib imports tqdm.autonotebook quietly before its dependencies do
    if path.stem != "world_tour":
        assert "not evidence" in raw  # the scale note
    streams = "".join(out.get("text", "") for cell in bookbuild.clean(executed)["cells"]
                      for out in cell.get("outputs", []) if out.get("output_type") == "stream")
    assert "\r" not in streams and "it/s]" not in streams and "Tqdm" not in streams, "the page shows no progress bars"
    figures = [out["data"] for cell in executed["cells"] for out in cell.get("outputs", [])
               if "<Figure size" in "".join(out.get("data", {}).get("text/plain", ""))]
    assert all("image/png" in data for data in figures), "every displayed figure reaches the page as a PNG"
