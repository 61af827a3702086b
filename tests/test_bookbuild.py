"""The book's page build: cleaning executed notebooks (progress bars, tqdm warnings, papermill's injected cell),
placeholder pages, the chapter map and the scale note. Synthetic notebooks only: nothing is executed."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from vlp_lib.book import build as bookbuild
from vlp_lib.book import pages

BAR = "clip seed 0:  50%|█████     | 4/8 [00:01<00:01,  3.10it/s, episode=1/1, loss=4.101]"


def _stream(text, name="stderr"):
    return {"output_type": "stream", "name": name, "text": text}


def _notebook():
    """What papermill leaves: the parameters cell, the injected one after it, a training cell whose stderr holds
    tqdm's redraws, its final bar and the IProgress warning, and a cell with a real warning."""
    code = (
        lambda source, outputs=(), tags=(): {  # noqa: E731
            "cell_type": "code",
            "execution_count": 1,
            "id": source[:8].replace(" ", "-") or "empty",
            "metadata": {"tags": list(tags)} if tags else {},
            "outputs": list(outputs),
            "source": source,
        }
    )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# A page\n\ntext"},
            code(
                '# Parameters\nscale: str = "laptop"  # smoke | laptop\nseeds: list = [0]  # seeds\n',
                tags=["parameters"],
            ),
            code('# Parameters\nscale = "smoke"\nseeds = [0, 1]\n', tags=["injected-parameters"]),
            code(
                "import vlp_lib",
                [
                    _stream(
                        "/x/site-packages/sentence_transformers/model.py:15: TqdmWarning: IProgress not found. Please "
                        "update jupyter and ipywidgets. See https://ipywidgets.readthedocs.io/en/stable/user_install.html\n"
                        "  from tqdm.autonotebook import trange\n"
                    )
                ],
            ),
            code(
                "train()",
                [
                    _stream("seconds per run: [1.0]\n", name="stdout"),
                    _stream(
                        "\rclip seed 0:   0%|          | 0/8 [00:00<?, ?it/s]\r"
                        + BAR
                        + "\r"
                        + BAR.replace(" 50%", "100%").replace("4/8", "8/8")
                        + "\n"
                    ),
                    _stream("rendering world: 1024img [00:02, 431.20img/s]\n"),
                    {
                        "output_type": "execute_result",
                        "execution_count": 1,
                        "metadata": {},
                        "data": {"text/plain": "42"},
                    },
                ],
            ),
            code(
                "warn()",
                [
                    _stream(
                        [
                            "/x/eval.py:3: UserWarning: a real warning\n",
                            "  warn('a real warning')\n",
                            "\rkmeans: 100%|██████████| 3/3 [00:00<00:00, 99.0it/s]\n",
                        ]
                    )
                ],
            ),
        ],
    }


def test_clean_strips_progress_and_tqdm_warnings_only():
    nb = bookbuild.clean(_notebook())
    stderr = [o["text"] for c in nb["cells"] for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert stderr == ["/x/eval.py:3: UserWarning: a real warning\n  warn('a real warning')\n"]
    text = json.dumps(nb)
    assert "it/s" not in text and "img/s" not in text and "Tqdm" not in text and "IProgress" not in text
    train = nb["cells"][4]
    assert [o["output_type"] for o in train["outputs"]] == ["stream", "execute_result"]  # stdout and result stay
    assert train["outputs"][0]["text"] == "seconds per run: [1.0]\n"
    assert nb["cells"][3]["outputs"] == []  # the warning was all it printed


def test_clean_names_repository_files_in_warnings_by_their_path_in_it():
    from vlp_lib.paths import REPO_ROOT

    here = f"{REPO_ROOT}/vlp_lib/data/training.py:47: UserWarning: 57 captions truncated\n  data = load()\n"
    nb = _notebook()
    nb["cells"][3]["outputs"] = [_stream(here), _stream(f"{REPO_ROOT}/notes.txt\n", name="stdout")]
    out = bookbuild.clean(nb)["cells"][3]["outputs"]
    assert out[0]["text"] == "vlp_lib/data/training.py:47: UserWarning: 57 captions truncated\n  data = load()\n"
    assert out[1]["text"] == f"{REPO_ROOT}/notes.txt\n"  # stdout is the page's own printing: left as printed
    assert bookbuild.clean(copy.deepcopy(nb)) == nb  # cleaning again changes nothing


def test_clean_names_papermills_paths_by_their_path_in_the_repository_or_their_file_name():
    from vlp_lib.paths import REPO_ROOT

    nb = _notebook()
    nb["metadata"]["papermill"] = {
        "input_path": f"{REPO_ROOT}/notebooks/page.ipynb",
        "output_path": "/tmp/vlp-repage-x1/executed/page.ipynb",
        "duration": 1.5,
    }
    out = bookbuild.clean(copy.deepcopy(nb))
    assert out["metadata"]["papermill"] == {
        "input_path": "notebooks/page.ipynb",
        "output_path": "page.ipynb",
        "duration": 1.5,
    }
    assert bookbuild.clean(copy.deepcopy(out)) == out  # relative paths stay as they are
    assert bookbuild.readable_path("book/executed/page.ipynb") == "book/executed/page.ipynb"


def test_clean_hides_the_injected_cell_and_shows_its_values_under_the_parameters():
    nb = bookbuild.clean(_notebook())
    params, injected = nb["cells"][1], nb["cells"][2]
    assert "remove-cell" in injected["metadata"]["tags"] and "injected-parameters" in injected["metadata"]["tags"]
    assert "remove-cell" not in params["metadata"]["tags"]
    assert params["source"].startswith('# Parameters\nscale: str = "laptop"')
    assert params["source"].endswith(f'{bookbuild.INJECTED_MARKER}\n#   scale = "smoke"\n#   seeds = [0, 1]')


def test_clean_is_idempotent_and_leaves_other_notebooks_alone():
    once = bookbuild.clean(_notebook())
    assert bookbuild.clean(copy.deepcopy(once)) == once
    plain = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "id": "a",
                "metadata": {"tags": ["parameters"]},
                "outputs": [],
                "execution_count": None,
                "source": "scale = 'laptop'  # x\n",
            }
        ],
    }
    assert bookbuild.clean(copy.deepcopy(plain)) == plain


def test_clean_file_rewrites_in_place(tmp_path):
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(_notebook()))
    assert bookbuild.main(["clean", str(path)]) == 0
    assert "it/s" not in path.read_text() and "remove-cell" in path.read_text()


@pytest.mark.parametrize(
    "line,progress",
    [
        (BAR, True),
        ("\r" + BAR, True),
        ("rendering world: 1024img [00:02, 431.20img/s]", True),
        ("Batches: 100%|##########| 1/1 [00:00<00:00,  2.50s/it]", True),
        ("seconds per run: [1.0, 2.0]", False),
        ("/x/eval.py:3: UserWarning: 50% of the points [0, 1] are duplicates", False),
    ],
)
def test_progress_lines(line, progress):
    assert bookbuild.is_progress_line(line) is progress


def test_placeholders_stand_in_for_pages_never_built(tmp_path):
    notebooks, executed = tmp_path / "notebooks", tmp_path / "executed"
    notebooks.mkdir()
    executed.mkdir()
    for name in pages.select_notebooks():
        (notebooks / f"{name}.ipynb").write_text(
            json.dumps(
                {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [f"# Title of {name}\n", "text"]}]}
            )
        )
    (executed / "scorecard.ipynb").write_text("{}")
    (executed / "scorecard.md").write_text("# stale placeholder")
    missing = bookbuild.placeholders(notebooks, executed)
    assert "scorecard" not in missing and not (executed / "scorecard.md").exists()
    assert set(missing) == set(pages.select_notebooks()) - {"scorecard"}
    page = (executed / "protoclip_efficiency.md").read_text()
    assert page.startswith("# Title of protoclip_efficiency\n") and "make book CHAPTERS=protoclip" in page


def test_chapters_cover_every_notebook_and_the_toc():
    root = Path(__file__).resolve().parent.parent
    stems = sorted(p.stem for p in (root / "notebooks").glob("*.ipynb"))
    mapped = pages.select_notebooks()
    assert sorted(mapped) == stems and len(set(mapped)) == len(mapped), "every notebook in exactly one chapter"

    executed = sorted(f.rsplit("/", 1)[1] for f in _toc_files(root) if f.startswith("book/executed/"))
    assert executed == stems, "the book's table of contents shows every executed notebook"
    assert pages.select_notebooks(["protoclip"])[-1] == "scorecard"  # judges the chapter's runs: last
    assert pages.select_notebooks(["protoclip"], scorecard=False) == pages.CHAPTERS["protoclip"]
    assert pages.select_notebooks(["scorecard", "world"]) == ["world_tour", "scorecard"]  # book order
    with pytest.raises(ValueError, match="unknown chapter or notebook 'nope'"):
        pages.select_notebooks(["nope"])


def _toc_files(root):
    def files(node):
        if isinstance(node, dict):
            yield from ([node["file"]] if "file" in node else [])
            yield from ([node["root"]] if "root" in node else [])
            for value in node.values():
                yield from files(value)
        elif isinstance(node, list):
            for item in node:
                yield from files(item)

    return list(files(yaml.safe_load((root / "_toc.yml").read_text())))


def test_toc_lists_every_markdown_page_and_every_link_resolves():
    """Every written page of book/ is in the table of contents (the set-up pages in their places: how the experiments
    are set up right after the introduction, the engineering notes before the references), every {doc} link names a
    page and every {ref} label is defined; the old set-up page is gone and nothing links to it."""
    import re

    root = Path(__file__).resolve().parent.parent
    toc = _toc_files(root)
    pages_md = sorted(f"book/{p.stem}" for p in (root / "book").glob("*.md"))
    assert sorted(f for f in toc if not f.startswith("book/executed/")) == pages_md
    assert toc[:2] == ["book/intro", "book/experiments"]
    assert toc[-2:] == ["book/engineering", "book/references"]
    assert not (root / "book" / "setup.md").exists()
    docs = {f.removeprefix("book/") for f in toc}
    texts = {p.name: p.read_text() for p in (root / "book").glob("*.md")}
    labels = {m for text in texts.values() for m in re.findall(r"^\(([\w-]+)\)=$", text, re.M)}
    for name, text in texts.items():
        for target in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", text):
            assert target in docs, f"{name}: {{doc}} link to {target!r}, not a page of the book"
        for label in re.findall(r"\{ref\}`(?:[^`<]*<)?([^`>]+)>?`", text):
            assert label in labels, f"{name}: {{ref}} to {label!r}, no such label"
        assert "setup" not in text.lower(), f"{name} still names the old set-up page"
    for title, page in (
        ("# How the experiments are set up", "experiments.md"),
        ("# Engineering notes", "engineering.md"),
    ):
        assert texts[page].startswith(title + "\n")


def test_experiments_page_has_a_table_per_chapter_and_a_glossary():
    """The experiments page: one section per chapter, tables no wider than six columns, a glossary of the
    abbreviations the pages use, and citations that exist in references.bib."""
    import re

    root = Path(__file__).resolve().parent.parent
    text = (root / "book" / "experiments.md").read_text()
    for heading in (
        "The CLIP baseline",
        "ProtoCLIP",
        "PyramidCLIP",
        "DIME-FM",
        "iCLIP and UniCL",
        "ICMLM",
        "Head to head",
        "Real drawings",
        "Glossary",
    ):
        assert f"\n## {heading}\n" in text, heading
    for term in (
        "| E, E/2, 2E |",
        "avg3",
        "C_big",
        "| PBT |",
        "| ROI |",
        "| TOST |",
        "| BH, q, FDR |",
        "| MDE",
        "| pp |",
    ):
        assert term in text, term
    for page in ("experiments.md", "engineering.md"):
        for line in (root / "book" / page).read_text().splitlines():
            if line.startswith("| ---"):
                assert line.count("|") - 1 <= 6, f"{page}: a table wider than six columns"
    keys = set(re.findall(r"^@\w+\{([^,]+),", (root / "book" / "references.bib").read_text(), re.M))
    for page in ("experiments.md", "engineering.md", "intro.md"):
        for cited in re.findall(r"\{cite\}`([^`]+)`", (root / "book" / page).read_text()):
            assert set(cited.split(",")) <= keys, f"{page}: unknown citation {cited}"


def test_execute_runs_the_scorecard_after_a_paper_chapter_unless_told_not_to(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(bookbuild.subprocess, "run", lambda args, **kwargs: ran.append(Path(args[3]).stem))
    monkeypatch.setattr(bookbuild, "clean_file", lambda path: None)  # papermill wrote nothing to clean
    bookbuild.execute(["iclip"], "smoke", executed_dir=tmp_path)
    assert ran == [*pages.CHAPTERS["iclip"], "scorecard"]
    ran.clear()
    bookbuild.execute(["iclip"], "smoke", executed_dir=tmp_path, scorecard=False)
    assert ran == pages.CHAPTERS["iclip"]


def test_scale_note():
    smoke = pages.scale_note("smoke", [0, 1], training_pairs=256)
    assert "not evidence" in smoke.data and "2 seeds (0, 1)" in smoke.data and "training pairs 256" in smoke.data
    laptop = pages.scale_note_text("laptop", [0, 1, 2], training_pairs=20_480)
    assert "Scale `laptop`" in laptop and "20,480" in laptop and "not evidence" not in laptop
    assert "seed" not in pages.scale_note_text("smoke", results=False, world_pairs=1_024)
    assert "not evidence" not in pages.scale_note_text("smoke", results=False)
    with pytest.raises(ValueError, match="scale must be one of"):
        pages.scale_note_text("huge")
