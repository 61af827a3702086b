"""The real-drawings chapter (``vlp_lib.papers.drawings``): its plan on real pairs (the committed drawings stand in for
the chapter's own, which ``make openclipart`` builds), its data checks before any compute, its claims and its tables
on made-up records."""

import numpy as np
import pandas as pd
import pytest

from vlp_lib import runs
from vlp_lib.book.claims import UNTRAINED_ATTACHED
from vlp_lib.book.lineup import CLIP, VARIANTS
from vlp_lib.data import folder_tasks
from vlp_lib.papers.drawings.book import chapter

REAL = "tests/data/openclipart"
TASKS = [f"folder:{REAL}/categories", f"pairs:{REAL}/pairs.csv"]
CLASSES = f"folder:{REAL}/categories/train"


@pytest.fixture
def data():
    return chapter.check_data(f"{REAL}/pairs.csv", TASKS, CLASSES)


@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_every_variant_builds_one_setting_at_every_scale(scale, data):
    sizes = chapter.sizes_on(scale, data)
    reference = chapter.config(CLIP, scale, 0, data)
    assert chapter.config(chapter.UNTRAINED, scale, 0, data) == reference  # the learning check: CLIP's own network
    for v in chapter.DEFAULT_VARIANTS:
        c = chapter.config(v, scale, 0, data)
        assert c.method == VARIANTS[v].method and c.train_data == reference.train_data
        assert (c.train.batch_size, c.train.lr, list(c.eval.tasks)) == (sizes["batch_size"], sizes["lr"], TASKS)
        if c.method in ("iclip", "unicl"):
            assert c.method_args.class_data["folder"].endswith("categories/train")
        if c.method == "pyramidclip":
            assert "rs" not in c.method_args.weights and c.method_args.summary == "column"  # the title as T_S


def test_the_drawings_are_named_in_the_data_folder_and_a_missing_build_names_its_command(tmp_path, monkeypatch):
    assert chapter.DRAWINGS.train_data == "data:openclipart/64px/pairs.csv"
    assert chapter.DRAWINGS.eval_tasks == (chapter.CATEGORY, chapter.SUBCATEGORY, chapter.HELD_OUT)
    monkeypatch.setenv("VLP_DATA_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="make openclipart"):
        chapter.check_data()
    with pytest.raises(ValueError, match="real pairs"):
        chapter.check_data("world", TASKS, CLASSES)
    with pytest.raises(ValueError, match="eval_tasks"):
        chapter.check_data(f"{REAL}/pairs.csv", [f"pairs:{REAL}/pairs.csv"], CLASSES)  # no folder task: no claim metric


def test_on_your_own_pairs_the_class_data_defaults_to_the_first_folder_task(tmp_path, monkeypatch, capsys):
    # the drawings are not built here: nothing on a reader's own pairs may read them unless a parameter names them
    monkeypatch.setenv("VLP_DATA_DIR", str(tmp_path))
    data = chapter.check_data(f"{REAL}/pairs.csv", TASKS)  # no class_data
    assert data.class_data == TASKS[0]
    note = capsys.readouterr().out
    assert note.startswith("note: class_data") and TASKS[0] in note
    assert not chapter.skipped(chapter.DEFAULT_VARIANTS, data)  # iCLIP and UniCL run on it
    for v in ("iclip", "unicl"):  # the plan (validated configs, nothing trained): the task's train split
        assert chapter.config(v, "smoke", 0, data).method_args.class_data["folder"].endswith("categories/train")
    assert "train split" in chapter.inputs(data)["class-labelled images (iCLIP, UniCL)"]
    # the notebook's parameters as papermill gives them: its default class_data is None, not the drawings' folder
    assert chapter.check_data(f"{REAL}/pairs.csv", TASKS, None) == data
    # on the drawings themselves the default stays their category folder
    assert chapter.default_class_data(chapter.TRAIN_DATA, chapter.EVAL_TASKS, verbose=False) == chapter.CLASS_DATA


def test_on_your_own_pairs_without_a_folder_task_the_class_data_is_asked_for_before_any_compute(tmp_path, monkeypatch):
    monkeypatch.setenv("VLP_DATA_DIR", str(tmp_path))  # the drawings not built: the error must not be theirs
    with pytest.raises(ValueError, match=r"^class_data: .*-p class_data folder:PATH"):
        chapter.check_data(f"{REAL}/pairs.csv", [f"pairs:{REAL}/pairs.csv"])
    # eval_tasks left at its default (the drawings' tasks) names eval_tasks, not train_data
    with pytest.raises(ValueError, match=r"^eval_tasks: .*make openclipart"):
        chapter.check_data(f"{REAL}/pairs.csv")
    # the drawings' folder named explicitly as class data names class_data
    with pytest.raises(ValueError, match=r"^class_data: .*make openclipart"):
        chapter.check_data(f"{REAL}/pairs.csv", TASKS, chapter.CLASS_DATA)
    with pytest.raises(ValueError, match="class_data must be"):
        chapter.check_data(f"{REAL}/pairs.csv", TASKS, 7)


def test_the_notebook_on_your_own_pairs_checks_its_defaults_before_any_compute(tmp_path, monkeypatch, capsys):
    """The drawings notebook's parameters and checking cells on a user's CSV and folder task, no class_data: they pass
    with the folder task as the class data, training nothing."""
    import json
    from pathlib import Path

    from vlp_lib import experiment

    monkeypatch.setenv("VLP_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(experiment, "run", lambda *a, **k: pytest.fail("trained while checking the parameters"))
    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "drawings.ipynb"
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    index = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec("".join(cells[index]["source"]), namespace)
    assert namespace["class_data"] is None  # the default names no data of the drawings
    namespace.update(scale="smoke", train_data=f"{REAL}/pairs.csv", eval_tasks=TASKS)
    exec("".join(cells[index + 1]["source"]), namespace)
    assert namespace["data"].class_data == TASKS[0] and "iclip" in namespace["variants"]
    assert TASKS[0] in capsys.readouterr().out


def test_claims_read_the_first_folder_task_and_a_variant_not_run_says_why(data):
    assert chapter.claim_metric(chapter.DRAWINGS) == "category/linear"
    assert {"test_pairs/mean_recall", "subcategory/linear", "category/knn_macro"} <= set(
        chapter.metrics_on(chapter.DRAWINGS)
    )
    claims = chapter.claims_on(data, variants=[CLIP, "protoclip"])
    assert [c.id for c in claims] == [c.id for c in chapter.CLAIMS]
    assert all(c.metric == "categories/linear" for c in claims)
    kinds = {c.id: c.kind for c in claims}
    assert kinds["D_clip_learns"] == kinds["D_protoclip"] == "direction" and kinds["D_unicl"] == "not_run"
    assert folder_tasks.is_folder_task(chapter.CLASS_DATA)


def _records(values: dict[str, float], seeds=(0, 1, 2), untrained: dict[str, float] | None = None) -> list[dict]:
    """Made-up records of ``seeds``; with ``untrained``, each carries its network untrained (as a chapter attaches
    it: what the scorecard's learning rule reads)."""
    rng = np.random.default_rng(0)
    out = [{"config": {"seed": s}, "metrics": {k: v + 0.01 * rng.normal() for k, v in values.items()}} for s in seeds]
    if untrained is not None:
        for record, network in zip(out, _untrained(untrained, seeds)):
            record[UNTRAINED_ATTACHED] = network
    return out


def _untrained(values: dict[str, float], seeds=(0, 1, 2)) -> list[dict]:
    return [{**r, "kind": runs.UNTRAINED_KIND} for r in _records(values, seeds)]


def test_the_learning_check_reads_the_scorecards_rule_at_both_lengths(data):
    metric = chapter.claim_metric(data)
    long_seeds = (0, 1)
    learned = {
        CLIP: _records({metric: 0.65}, untrained={metric: 0.55}),
        chapter.UNTRAINED: _untrained({metric: 0.55}),
    }
    flat = {CLIP: _records({metric: 0.55}, untrained={metric: 0.55}), chapter.UNTRAINED: _untrained({metric: 0.55})}
    sentence = chapter.learning_sentence(learned, data)
    assert "learned by the scorecard's rule (one-sided paired t, p < 0.05): yes, +10.0 pp" in sentence
    assert "CLIP learned" in sentence
    assert f"at {chapter.LONGER}x" not in sentence  # no longer rows: one length
    assert "is at the floor" in chapter.learning_sentence(flat, data)
    longer = {
        chapter.longer(CLIP): _records({metric: 0.75}, long_seeds, untrained={metric: 0.55}),
        chapter.longer(chapter.UNTRAINED): _untrained({metric: 0.55}, long_seeds),
    }
    both = chapter.learning_sentence({**flat, **longer}, data)
    assert f"at {chapter.LONGER}x the samples (seeds 0, 1)" in both and "yes, +20.0 pp" in both
    assert "every claim at the book's length is at the floor" in both
    table = chapter.learning_table(learned, data)
    assert list(table.columns) == ["untrained (%)", "CLIP (%)", "gain"] and "+10.0 pp" in table.iloc[0]["gain"]
    table = chapter.learning_table({**learned, **longer}, data)
    assert list(table.columns)[3:] == [f"CLIP at {chapter.LONGER}x (%)", f"gain at {chapter.LONGER}x"]
    assert "+20.0 pp" in table.iloc[0][f"gain at {chapter.LONGER}x"]
    gains = chapter.gains_table({**learned, "tp_postag": _records({metric: 0.6})}, [CLIP, "tp_postag"], data)
    assert gains.loc["categories: zero-shot top-1", "TP_Postag (K = 50)"] == "—"  # no text tower, no zero-shot


def test_every_claim_is_judged_again_at_four_times_the_samples_on_the_first_three_seeds(data, tmp_path):
    assert chapter.LONGER_IDS == tuple(c.id for c in chapter.CLAIMS)  # CLIP learns and every idea against CLIP
    assert chapter.longer_seeds("laptop", [0, 1, 2, 3, 4]) == [0, 1, 2]
    assert chapter.row_seeds(chapter.longer("protoclip"), "laptop", [0, 1, 2, 3, 4]) == [0, 1, 2]
    assert chapter.row_seeds("protoclip", "laptop", [0, 1, 2, 3, 4]) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="already"):
        chapter.longer(chapter.longer(CLIP))
    short, long = (chapter.config(row, "laptop", 0, data) for row in (CLIP, chapter.longer(CLIP)))
    assert long.train.epochs == pytest.approx(chapter.LONGER * short.train.epochs, rel=0.01)  # the same recipe, longer
    assert chapter.config(chapter.longer(chapter.UNTRAINED), "laptop", 0, data) == long
    metric = chapter.claim_metric(data)
    seeds = (0, 1, 2)
    results = {
        CLIP: _records({metric: 0.55}, (0, 1, 2, 3, 4), untrained={metric: 0.55}),  # not learned at 1x
        chapter.UNTRAINED: _untrained({metric: 0.55}, (0, 1, 2, 3, 4)),
        "protoclip": _records({metric: 0.565}, (0, 1, 2, 3, 4)),
        chapter.longer(CLIP): _records({metric: 0.66}, seeds, untrained={metric: 0.55}),
        chapter.longer(chapter.UNTRAINED): _untrained({metric: 0.55}, seeds),
        chapter.longer("protoclip"): _records({metric: 0.70}, seeds),
    }
    claims = chapter.claims_on(data, variants=[CLIP, "protoclip"])
    table = chapter.claims_table(results, claims).assign(verdict_fdr=lambda t: t["verdict"])
    assert table.loc["D_protoclip", "verdict"] == "floor: the reference has not learned"
    assert table.loc["D_protoclip", "verdict_longer"].startswith(f"at {chapter.LONGER}x: reproduced (+4.")
    assert table.loc["D_protoclip", "verdict_longer"].endswith("; the reference learns only with more training")
    assert table.loc["D_clip_learns", "verdict_longer"].startswith(f"at {chapter.LONGER}x: reproduced (+11.")
    lengths = chapter.lengths_table(table)
    assert list(lengths.index) == list(chapter.LONGER_IDS) and lengths.loc["D_unicl", lengths.columns[-1]] == ""
    assert lengths.loc["D_clip_learns", "comparison"] == "CLIP − untrained"
    assert "reproduced: CLIP − untrained (+11." in chapter.trend_summary(table)
    note = chapter.headline_note(table.reset_index(names="id"))
    assert note.startswith(f"Trained {chapter.LONGER}x as long (seeds 0, 1, 2;")
    long_lines = chapter.longer_lines(results, claims)
    assert "D_protoclip" in long_lines.index and "D_unicl" not in long_lines.index  # a claim not run has no line
    fig = chapter.lengths_figure(table, long_lines, data, tmp_path / "two_lengths.png")
    assert (tmp_path / "two_lengths.png").is_file() and len(fig.axes[0].get_yticklabels()) == len(lengths)


def test_the_paper_scale_runs_shipped_from_a_gpu_are_shown_against_clip_seed_by_seed(tmp_path):
    summary = chapter.paper_scale_runs()
    assert summary is not None and summary["scale"] == "paper" and summary["sizes"]["model"] == "RN50"
    clip = next(r for r in summary["runs"] if r["variant"] == CLIP and r["seed"] == 0)
    unicl = next(r for r in summary["runs"] if r["variant"] == "unicl" and r["seed"] == 0)
    table = chapter.paper_scale_table(summary)
    label = "category: linear probe"
    assert table.loc["CLIP", label] == f"{100 * clip['metrics']['category/linear']:.1f}"
    difference = 100 * (unicl["metrics"]["category/linear"] - clip["metrics"]["category/linear"])
    assert table.loc["UniCL (r = 0.5)", label] == f"{difference:+.1f} pp"
    sentence = chapter.paper_scale_sentence(summary)
    assert ", bf16, on an NVIDIA" in sentence  # RN50's precision (models.DEFAULT_PRECISION)
    assert "judge no claim" in sentence and "Not run: ProtoCLIP" in sentence
    stale = {**summary, "runs": [{**r, "code_fingerprint": "0" * 16} for r in summary["runs"]]}
    assert not chapter.paper_scale_current(stale) and "has changed since" in chapter.paper_scale_sentence(stale)
    assert chapter.paper_scale_runs(tmp_path / "none.json") is None


def test_the_transfer_table_sets_each_ideas_verdict_on_real_drawings_beside_the_worlds(monkeypatch):
    # the words at 5% FDR on both sides (the words the two pages state) at 1x, each judged alone at 4x
    world = pd.DataFrame(
        [
            {
                "id": "H_protoclip_samples",
                "verdict": "reproduced",
                "verdict_fdr": "inconclusive",
                "book_value": "-0.4 pp",
                "verdict_longer": "at 4x: reproduced (+7.08 pp, 95% interval [+1.30, +12.85]); holds",
            },
            {
                "id": "H_unicl_samples",
                "verdict": "no effect",
                "verdict_fdr": "floor: the reference has not learned",
                "book_value": "+0.1 pp",
                "verdict_longer": "at 4x: reproduced (+19.70 pp, 95% interval [+13.93, +25.47]); holds",
            },
        ]
    ).set_index("id")
    monkeypatch.setattr(chapter, "world_claims", lambda scale: world)
    drawings = pd.DataFrame(
        {
            "verdict": ["reproduced", "reproduced", None, "opposite"],
            "verdict_fdr": ["inconclusive", "reproduced", None, "opposite"],
            "book_value": ["+0.2 pp", "+2.0 pp", "", ""],
            "verdict_longer": ["at 4x: reproduced (+3.00 pp, 95% interval [+1.00, +5.00]); holds", "", "", ""],
        },
        index=["D_protoclip", "D_unicl", "D_iclip", "D_not_a_variant"],
    )
    table = chapter.transfer_table(drawings)
    assert list(table.index) == [VARIANTS[v].label for v in ("protoclip", "unicl", "iclip")]
    assert len(table.columns) <= 5  # with the index, six columns: the page's width
    proto, unicl, iclip = (table.loc[VARIANTS[v].label] for v in ("protoclip", "unicl", "iclip"))
    assert proto["world, 1x"] == "inconclusive (-0.4 pp)" and proto["drawings, 1x"] == "inconclusive (+0.2 pp)"
    assert proto["world, 4x"] == "reproduced (+7.08 pp)" and proto["drawings, 4x"] == "reproduced (+3.00 pp)"
    assert proto["what carried over"] == (
        "1x: same verdict: inconclusive (world -0.4 pp, drawings +0.2 pp); "
        "4x: same verdict: reproduced (world +7.08 pp, drawings +3.00 pp)"
    )
    assert (
        unicl["what carried over"]
        == "1x: not comparable: the world's at the floor; 4x: not comparable: the drawings' not run"
    )
    assert iclip["what carried over"].startswith("1x: not comparable: the world's not run")
