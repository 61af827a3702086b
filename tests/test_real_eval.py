"""Evaluation on real data: data sets named inside the data folder (``data:``, the same run key on every machine),
held-out pairs for retrieval (``pairs:``, repeated captions and images left out), class-balanced accuracies beside
top-1, and the learning check (``experiment.untrained``: the same network before any step)."""

import shutil

import numpy as np
import pytest

from vlp_lib import experiment, runs, suite
from vlp_lib.data import pair_sets
from vlp_lib.eval import linear_probe, macro_accuracy, per_class_accuracy
from vlp_lib.paths import resolve_data

DRAWINGS = "tests/data/openclipart"
TINY = dict(batch_size=32, epochs=1, task_train=60, task_test=40, retrieval_images=20)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A data folder holding the committed drawings as ``drawings/`` (pairs, class folders) and a held-out CSV."""
    root = tmp_path / "data"
    shutil.copytree(DRAWINGS, root / "drawings")
    lines = (root / "drawings" / "pairs.csv").read_text().splitlines()
    (root / "drawings" / "test_pairs.csv").write_text("\n".join(lines[:1] + lines[-60:]) + "\n")
    monkeypatch.setenv("VLP_DATA_DIR", str(root))
    return root


def test_a_data_set_in_the_data_folder_keeps_its_name_in_the_run_key(data_dir, tmp_path):
    assert resolve_data("data:drawings/pairs.csv") == str(data_dir / "drawings" / "pairs.csv")
    assert resolve_data("elsewhere/pairs.csv") == "elsewhere/pairs.csv"
    config = experiment.make_config(
        "smoke",
        train_data="data:drawings/pairs.csv",
        eval_tasks=["folder:data:drawings/categories"],
        **TINY,
    )
    assert config.train_data == "data:drawings/pairs.csv" and config.train_size == 512
    moved = tmp_path / "moved"
    shutil.move(data_dir, moved)  # another machine, another folder: the same key
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLP_DATA_DIR", str(moved))
        again = experiment.make_config(
            "smoke", train_data="data:drawings/pairs.csv", eval_tasks=["folder:data:drawings/categories"], **TINY
        )
    assert runs.config_hash(again.to_dict()) == runs.config_hash(config.to_dict())
    with pytest.raises(ValueError, match="train_data"):
        experiment.make_config("smoke", train_data="data:drawings/pairs.csv", **TINY)  # gone from the old folder


def test_a_path_outside_the_data_folder_is_keyed_absolute(data_dir, monkeypatch):
    monkeypatch.chdir(data_dir)
    config = experiment.make_config("smoke", train_data="drawings/pairs.csv", eval_tasks=["shapes10"], **TINY)
    assert config.train_data == str(data_dir / "drawings" / "pairs.csv")


def test_unique_pairs_leave_out_repeated_captions_and_images():
    images = np.zeros((5, 2, 2, 3), np.uint8)
    images[1] += 1
    images[2] += 2
    images[3] += 2  # the same pixels as image 2
    images[4] += 4
    captions = ["a", "b", "c", "d", "a"]  # caption "a" twice
    assert pair_sets.unique_pairs(images, captions).tolist() == [1]


def test_held_out_pairs_are_ranked_and_named_by_their_file(data_dir):
    config = experiment.make_config(
        "smoke",
        train_data="data:drawings/pairs.csv",
        eval_tasks=["pairs:data:drawings/test_pairs.csv"],
        **TINY,
    )
    pairs = pair_sets.load_pair_set("pairs:data:drawings/test_pairs.csv")
    assert 0 < len(pairs.captions) <= 60 and len(pairs.captions) + pairs.n_repeated == 60
    assert len(set(pairs.captions)) == len(pairs.captions)
    _, tokenizer, model = experiment.build(config)
    metrics = suite.evaluate_suite(model.eval(), tokenizer, config.eval)
    n = min(20, len(pairs.captions))
    assert metrics["test_pairs/pairs"] == n
    for key in ("i2t_R@1", "t2i_R@10", "mean_recall"):
        assert 0.0 <= metrics[f"test_pairs/{key}"] <= 1.0
    chance = suite.chance_levels(config.eval)
    assert chance["test_pairs/t2i_R@1"] == pytest.approx(1 / n)
    with pytest.raises(ValueError, match="eval_tasks"):
        experiment.make_config("smoke", eval_tasks=["pairs:data:drawings/missing.csv"], **TINY)


def test_class_balanced_accuracy_is_the_mean_of_the_classes_accuracies():
    labels = np.array([0] * 8 + [1, 2])
    majority = np.zeros(10, int)  # names the largest class: 80 % top-1
    assert macro_accuracy(majority, labels) == pytest.approx(1 / 3)
    assert macro_accuracy(labels, labels) == 1.0
    assert macro_accuracy(majority, labels) == pytest.approx(
        np.mean(list(per_class_accuracy(majority, labels).values()))
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 4))
    y = (x[:, 0] > 0).astype(int)
    probe = linear_probe(x[:80], y[:80], x[80:], y[80:], Cs=(1.0,))
    assert 0.5 < probe["accuracy_macro"] <= 1.0


def test_the_untrained_network_is_evaluated_on_the_runs_own_tasks(data_dir):
    config = experiment.make_config(
        "smoke", train_data="data:drawings/pairs.csv", eval_tasks=["folder:data:drawings/categories"], **TINY
    )
    before = experiment.untrained(config, verbose=False)["metrics"]
    after = experiment.run(config, progress=False)["metrics"]
    for key in (
        "categories/linear",
        "categories/linear_macro",
        "categories/knn_macro",
        "categories/zeroshot_top1_macro",
    ):
        assert key in before and key in after and 0.0 <= before[key] <= 1.0
    assert before != {k: after[k] for k in before}
    assert experiment.untrained(config, verbose=False)["metrics"] == before  # stored: read again, not recomputed
    chance = suite.chance_levels(config.eval)
    assert chance["categories/knn_macro"] == pytest.approx(1 / 8)
