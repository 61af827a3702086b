"""Every notebook: committed without outputs, a documented `parameters` cell with `scale`, and it runs
end to end through papermill at smoke scale."""

import json
from pathlib import Path

import papermill
import pytest

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
    lines = [line for line in "".join(tagged[0]["source"]).splitlines() if "=" in line and not line.startswith("#")]
    assert any(line.startswith("scale =") for line in lines)
    assert all("#" in line for line in lines), "every parameter has a comment (papermill --help-notebook shows it)"
    # papermill must parse every line, or --help-notebook drops it and -p warns "unknown parameter"
    assert set(papermill.inspect_notebook(str(path))) == {line.split("=")[0].strip() for line in lines}


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    """One results store and checkpoint folder for every notebook, as in `make book`: later notebooks (the
    clustering, efficiency and scorecard pages) load the runs earlier ones stored instead of retraining."""
    return tmp_path_factory.mktemp("book_results"), tmp_path_factory.mktemp("book_checkpoints")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_at_smoke_scale(path, tmp_path, shared_store, monkeypatch):
    monkeypatch.setenv("VLP_RESULTS_DIR", str(shared_store[0]))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(shared_store[1]))
    papermill.execute_notebook(
        str(path), str(tmp_path / path.name), parameters={"scale": "smoke"}, kernel_name="python3",
        cwd=str(path.parent), progress_bar=False,
    )
