"""Every notebook: committed without outputs, a documented and typed `parameters` cell with `scale`, a scale note
at the top of every page that reports numbers, and it runs end to end through papermill at smoke scale (marker
`notebooks`: the slow tier; `pytest -m "not notebooks"` is the quick one)."""

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest
from smoke_notebooks import IN_MAKE_TEST, MEASURED_SECONDS, NOTEBOOKS, ON_REAL, SMOKE_PARAMETERS

from vlp_lib.book import build as bookbuild
from vlp_lib.paths import REPO_ROOT

REAL_NOTEBOOKS = [
    pytest.param(
        p,
        marks=() if p.stem in IN_MAKE_TEST else (pytest.mark.real_pairs,),
        id=p.stem,
    )
    for p in NOTEBOOKS
    if p.stem not in ("world_tour", "scorecard", *SMOKE_PARAMETERS)
]


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {
        "world_tour.ipynb",
        "clip_baseline.ipynb",
        "protoclip_ablation.ipynb",
        "protoclip_components.ipynb",
        "protoclip_benchmark.ipynb",
        "protoclip_clustering.ipynb",
        "protoclip_efficiency.ipynb",
        "scorecard.ipynb",
    }


def test_every_notebook_in_make_test_has_its_measured_seconds():
    """A fresh clone orders the notebook tier's chains by ``MEASURED_SECONDS`` (its pytest cache is empty): a notebook
    without them would count 40 s, and a long one started last keeps a core working alone at the end."""
    in_make_test = {p.stem for p in NOTEBOOKS} | {stem + ON_REAL for stem in IN_MAKE_TEST}
    assert not in_make_test - set(MEASURED_SECONDS), "measure them (pytest's cache: vlp/notebook_seconds)"


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


def assert_figures_are_pngs(executed) -> None:
    figures = [
        out["data"]
        for cell in executed["cells"]
        for out in cell.get("outputs", [])
        if "<Figure size" in "".join(out.get("data", {}).get("text/plain", ""))
    ]
    assert all("image/png" in data for data in figures), "every displayed figure reaches the page as a PNG"
    images = [
        out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})
    ]
    no_alt = [out for out in images if not out.get("metadata", {}).get("image/png", {}).get("alt")]
    assert not no_alt, f"{len(no_alt)} figure(s) shown without an alt text (vlp_lib.book.plots.show)"


# what shows a figure in a notebook without its alt text: pyplot's show, IPython's display of a figure, a figure as a
# cell's last expression (Jupyter's own display)
BARE_FIGURE = re.compile(r"plt\.show\(\)|display\((fig\b|plots\.)|^fig\s*$", re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_is_shown_with_its_alt_text(path):
    """Every figure a notebook draws is shown by ``plots.show(fig, alt)``, its alt text (a sentence saying what it
    shows) written beside the code that draws it, so that the page's image describes itself instead of naming its
    file; the executed notebooks are checked too (``assert_figures_are_pngs``)."""
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            assert not BARE_FIGURE.search(source), f"{path.name}: a figure shown without alt text:\n{source}"


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_at_smoke_scale(path, smoke_runs):
    executed = smoke_runs[path.stem].result()
    raw = json.dumps(executed)
    assert "IProgress not found" not in raw  # vlp_lib imports tqdm.autonotebook quietly before its dependencies do
    if path.stem != "world_tour":
        assert "not evidence" in raw  # the scale note
    streams = "".join(
        out.get("text", "")
        for cell in bookbuild.clean(executed)["cells"]
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )
    assert "\r" not in streams and "it/s]" not in streams and "Tqdm" not in streams, "the page shows no progress bars"
    assert_figures_are_pngs(executed)


@pytest.mark.notebooks
@pytest.mark.parametrize("path", REAL_NOTEBOOKS)
def test_runs_on_real_pairs(path, smoke_runs):
    """Every chapter notebook trains and judges on real image-text pairs (an OpenCLIP CSV) and an image-folder task,
    end to end without an error: the page names the data, and its figures reach it as PNGs."""
    executed = smoke_runs[path.stem + ON_REAL].result()
    raw = json.dumps(executed)
    assert "image-text pairs from `pairs.csv`" in raw, "the page names the real data it trained on"
    assert_figures_are_pngs(executed)


LIST_MARKER = re.compile(r"^\s*([+*-]|\d+\.)\s")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_plumbing_is_collapsed_and_inline_math_is_never_cut_by_a_list(path):
    """The cell after the parameters (imports, paths, checks) is collapsed on the page (``hide-input``), so the page
    opens with its parameters and results; and no markdown line starts with a list marker while an inline ``$``
    is open (the line would become a bullet and the equation raw TeX: "+ \\mathcal{L}_{cls}$")."""
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tags = code[1].get("metadata", {}).get("tags", [])
    assert {"hide-input", "remove-input"} & set(tags), f"{path.name}: its setup cell is not collapsed"
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for paragraph in "".join(cell["source"]).split("\n\n"):
            if paragraph.lstrip().startswith("$$"):
                continue
            open_dollars = 0
            for line in paragraph.split("\n"):
                assert not (open_dollars % 2 and LIST_MARKER.match(line)), f"{path.name}: {line!r} cuts inline math"
                open_dollars += line.count("$") - line.count("\\$")


@pytest.mark.notebooks
def test_the_built_book_reads_offline_and_whole(smoke_runs, tmp_path):
    """The smoke-built book as a reader without network sees it (jupyter-book build of the executed notebooks):
    no resource loaded from the network (MathJax is bundled), no pandas truncation, no TeX outside rendered math,
    and every claim of the scorecard on its page."""
    stems = [p.stem for p in NOTEBOOKS]
    if set(stems) - set(smoke_runs):
        pytest.skip("needs every notebook executed (the whole notebook tier)")
    root = REPO_ROOT
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "book", tmp_path / "book", ignore=shutil.ignore_patterns("executed"))
    (tmp_path / "book" / "executed").mkdir()
    for stem in stems:
        nbformat.write(bookbuild.clean(smoke_runs[stem].result()), tmp_path / "book" / "executed" / f"{stem}.ipynb")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(tmp_path), "-q"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    html = tmp_path / "_build" / "html"
    pages_html = {p: p.read_text() for p in html.rglob("*.html") if "_static" not in p.parts}
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    network = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//")
    math = re.compile(r"<(span|div) class=\"math[^\"]*\">.*?</\1>", re.S)
    for page, text in pages_html.items():
        assert not network.search(text), f"{page.name} loads a resource from the network"
        assert "rows ×" not in text, f"{page.name}: pandas truncated a table"
        visible = re.sub(r"<(script|style)\b.*?</\1>", "", math.sub("", text), flags=re.S)
        visible = re.sub(r"<pre\b.*?</pre>|<code\b.*?</code>", "", visible, flags=re.S)
        for delimiter in ("\\(", "\\)", "$\\", "\\mathcal"):
            assert delimiter not in visible, f"{page.name} shows raw TeX {delimiter!r}"
    scorecard = pages_html[html / "book" / "executed" / "scorecard.html"]
    from vlp_lib.papers import chapters

    ids = [line["id"] for chapter in chapters() for line in chapter.claims("smoke")]
    missing = [i for i in ids if f"; {i})</td>" not in scorecard]  # each claim's cell: "claim (source; id)"
    assert not missing, f"claims missing from the scorecard page: {missing}"
