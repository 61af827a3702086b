"""Tests of the evaluation additions: multi-label mAP, per-class accuracy, ``avg3/zeroshot_top5`` and the suite
on image-only models. Real code on synthetic data or the smoke-scale world."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from vlp_lib import eval as ev
from vlp_lib import suite

# the smallest suite the tests run: two tasks at smoke scale, a handful of images
TINY_SUITE = suite.EvalConfig(
    tasks=("shapes10", "count"), scale="smoke", seed=0, task_train=40, task_test=20, retrieval_images=10
)


# --------------------------------------------------------------------------------------------------------------
# multilabel_map


def test_multilabel_map_hand_case_with_ties_and_an_empty_class():
    # class 0: ranking +, -, -, +  -> AP = 1/2 * 1/1 + 1/2 * 2/4 = 0.75
    # class 1: perfect ranking     -> AP = 1
    # class 2: tie at the top between a positive and a negative, then a positive:
    #          thresholds 0.5 (P = 1/2, R = 1/2) and 0.1 (P = 2/3, R = 1) -> AP = 1/4 + 1/3
    # class 3: no positive         -> skipped
    scores = np.array([[0.9, 0.2, 0.5, 0.3], [0.8, 0.1, 0.5, 0.9], [0.1, 0.7, 0.1, 0.1], [0.3, 0.0, 0.05, 0.2]])
    targets = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    expected = (0.75 + 1.0 + (0.25 + 1 / 3)) / 3
    assert ev.multilabel_map(scores, targets) == pytest.approx(expected, abs=1e-12)
    # scikit-learn counts the empty class as AP 0 in its macro mean; the book skips it
    with pytest.warns(UserWarning):
        sk = average_precision_score(targets, scores, average="macro")
    assert sk == pytest.approx(3 * expected / 4, abs=1e-12)


def test_multilabel_map_equals_sklearn_macro_average():
    rng = np.random.default_rng(0)
    for trial in range(5):
        n, c = 50, 7
        targets = (rng.random((n, c)) < 0.3).astype(np.int64)
        targets[trial, :] = 1  # every class has a positive
        scores = rng.normal(size=(n, c)) + 1.5 * targets * rng.random()
        scores[:, 0] = np.round(scores[:, 0], 1)  # ties
        expected = average_precision_score(targets, scores, average="macro")
        assert ev.multilabel_map(scores, targets) == pytest.approx(expected, abs=1e-12)
        # torch inputs, bool targets and any monotone transform of the scores give the same number
        got = ev.multilabel_map(torch.as_tensor(scores, dtype=torch.float64).sigmoid(), torch.as_tensor(targets).bool())
        assert got == pytest.approx(expected, abs=1e-12)
    # one class with positives among several: the AP of that class
    targets = np.zeros((4, 3), dtype=np.int64)
    targets[[0, 2], 1] = 1
    scores = np.array([[0.0, 0.9, 0.0], [0.0, 0.8, 0.0], [0.0, 0.1, 0.0], [0.0, 0.3, 0.0]])
    assert ev.multilabel_map(scores, targets) == pytest.approx(0.75)


@pytest.mark.parametrize(
    "scores, targets, match",
    [
        (np.zeros((4, 3)), np.zeros((4, 2), dtype=int), "targets must have the shape"),
        (np.zeros(4), np.zeros(4, dtype=int), "scores"),
        (np.zeros((4, 2)), np.array([[0, 2], [1, 0], [0, 1], [1, 1]]), "binary"),
        (np.zeros((2, 2)), np.array([[0.5, 1.0], [1.0, 0.0]]), "binary"),
        (np.zeros((2, 2)), np.zeros((2, 2), dtype=int), "no positive"),
        (np.array([[np.nan, 0.0], [0.0, 1.0]]), np.array([[1, 0], [0, 1]]), "scores must be finite"),
    ],
)
def test_multilabel_map_errors(scores, targets, match):
    with pytest.raises(ValueError, match=match):
        ev.multilabel_map(scores, targets)


# --------------------------------------------------------------------------------------------------------------
# per_class_accuracy


def test_per_class_accuracy_hand_case():
    labels = np.array([0, 0, 0, 0, 2, 2, 5])
    preds = np.array([0, 0, 1, 2, 2, 0, 5])
    acc = ev.per_class_accuracy(preds, labels)
    assert acc == {0: 0.5, 2: 0.5, 5: 1.0}
    assert list(acc) == [0, 2, 5] and all(type(k) is int for k in acc)
    # weighted by class counts the values give the overall accuracy; their plain mean is balanced accuracy
    counts = {c: int((labels == c).sum()) for c in acc}
    assert sum(acc[c] * counts[c] for c in acc) / len(labels) == pytest.approx((preds == labels).mean())
    assert ev.per_class_accuracy(torch.as_tensor(preds), torch.as_tensor(labels)) == acc


def test_per_class_accuracy_errors():
    with pytest.raises(ValueError, match="predictions"):
        ev.per_class_accuracy(np.zeros(3, dtype=int), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="labels must be 1-D"):
        ev.per_class_accuracy(np.zeros(4, dtype=int), np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match="predictions must hold integer"):
        ev.per_class_accuracy(np.full(2, 0.5), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="labels is empty"):
        ev.per_class_accuracy(np.zeros(0, dtype=int), np.zeros(0, dtype=int))


# --------------------------------------------------------------------------------------------------------------
# the suite: avg3/zeroshot_top5 and image-only models


class ImageOnly(torch.nn.Module):
    """An image-only model: an open_clip CLIP's image tower, no text tower."""

    def __init__(self, clip: torch.nn.Module):
        super().__init__()
        self.visual = clip.visual

    def encode_image(self, x: torch.Tensor) -> torch.Tensor:
        return self.visual(x)


@pytest.fixture(scope="module")
def clip_and_tokenizer():
    from vlp_lib.data.tokenizer import world_tokenizer
    from vlp_lib.models import create_model

    tokenizer = world_tokenizer()
    return create_model("rn-tiny", tokenizer.vocab_size, tokenizer.context_length, image_size=32, seed=0), tokenizer


def test_has_text_tower(clip_and_tokenizer):
    clip, _ = clip_and_tokenizer
    assert ev.has_text_tower(clip)
    assert not ev.has_text_tower(ImageOnly(clip))
    assert not ev.has_text_tower(clip.visual)


def test_avg3_averages_zero_shot_top5_and_keeps_the_other_keys(monkeypatch):
    fake = {"shapes10": 0.1, "shapes_colours": 0.2, "clutter10": 0.6}

    def evaluate_task(model, tokenizer, name, *args, **kwargs):
        v = fake[name]
        return {"zeroshot_top1": v, "zeroshot_top5": 2 * v, "linear": v + 0.1, "knn": v + 0.2, "ari": 0.0, "ami": 0.0}

    class TextModel:
        def encode_text(self, tokens):
            raise AssertionError("evaluate_task is replaced")

    monkeypatch.setattr(suite, "evaluate_task", evaluate_task)
    monkeypatch.setattr(suite, "evaluate_retrieval", lambda *a, **k: {"mean_recall": 0.5})
    config = dataclasses.replace(TINY_SUITE, tasks=tuple(fake))
    m = suite.evaluate_suite(TextModel(), lambda texts: None, config)
    assert m["retrieval/mean_recall"] == 0.5
    assert m["avg3/zeroshot_top5"] == pytest.approx(2 * np.mean(list(fake.values())))
    assert m["avg3/zeroshot_top1"] == pytest.approx(np.mean(list(fake.values())))
    assert m["avg3/linear"] == pytest.approx(np.mean(list(fake.values())) + 0.1)
    assert m["avg3/knn"] == pytest.approx(np.mean(list(fake.values())) + 0.2)
    # chance levels have the same avg3 keys: mean of min(5, C)/C over the three tasks
    chance = suite.chance_levels(config)
    assert {k for k in chance if k.startswith("avg3/")} == {f"avg3/{k}" for k in suite.AVG3_METRICS}
    assert chance["avg3/zeroshot_top5"] == pytest.approx(np.mean([chance[f"{t}/zeroshot_top5"] for t in fake]))
    # without the three validation tasks there is no avg3
    assert not any(k.startswith("avg3/") for k in suite.chance_levels(TINY_SUITE))


def test_suite_on_an_image_only_model(clip_and_tokenizer):
    clip, _ = clip_and_tokenizer
    metrics = suite.evaluate_suite(ImageOnly(clip), None, TINY_SUITE)
    expected = {
        f"{t}/{m}" for t in TINY_SUITE.tasks for m in ("linear", "linear_macro", "knn", "knn_macro", "ari", "ami")
    }
    assert set(metrics) == expected
    assert all(np.isfinite(v) for v in metrics.values())
    # chance levels of an image-only model: the same keys, so every metric has its chance level
    assert set(suite.chance_levels(TINY_SUITE, text_tower=False)) == expected


def test_text_tower_false_gives_the_full_models_probe_numbers(clip_and_tokenizer):
    clip, tokenizer = clip_and_tokenizer
    full = suite.evaluate_task(clip, tokenizer, "count", "smoke", 40, 20, seed=0)
    probes = suite.evaluate_task(clip, None, "count", "smoke", 40, 20, seed=0, text_tower=False)
    probe_keys = ("linear", "linear_macro", "knn", "knn_macro", "ari", "ami")
    assert list(full) == ["zeroshot_top1", "zeroshot_top5", "zeroshot_top1_macro", *probe_keys]
    assert probes == {k: full[k] for k in probe_keys}
    # the image-only wrapper computes the same image features, so the same probe numbers
    assert suite.evaluate_task(ImageOnly(clip), None, "count", "smoke", 40, 20, seed=0) == probes


def test_text_tower_errors_before_any_compute(clip_and_tokenizer, monkeypatch):
    clip, _ = clip_and_tokenizer
    monkeypatch.setattr(suite.task_lib, "load_task", lambda *a, **k: pytest.fail("loaded data before validating"))
    with pytest.raises(ValueError, match="text_tower"):
        suite.evaluate_suite(ImageOnly(clip), None, TINY_SUITE, text_tower=True)
    with pytest.raises(ValueError, match="tokenizer"):
        suite.evaluate_suite(clip, None, TINY_SUITE)
    with pytest.raises(ValueError, match="tokenizer"):
        suite.evaluate_task(clip, None, "count", "smoke", 40, 20)


def test_zero_shot_per_class(clip_and_tokenizer):
    from vlp_lib.data import tasks

    clip, tokenizer = clip_and_tokenizer
    task = tasks.load_task("count", "test", n=20, scale="smoke")
    per_class = suite.zero_shot_per_class(clip, tokenizer, task)
    present = sorted(set(int(c) for c in task.labels))
    assert list(per_class) == [task.classnames[c] for c in present]
    # weighted by class counts: the zero-shot top-1 accuracy
    counts = np.bincount(task.labels, minlength=len(task.classnames))
    weighted = sum(per_class[task.classnames[c]] * counts[c] for c in present) / len(task.labels)
    pred = suite.zero_shot_predictions(clip, tokenizer, task)
    assert weighted == pytest.approx(float((pred == task.labels).mean()))


def test_zero_shot_from_precomputed_features_gives_the_same_numbers():

    from vlp_lib.data import tasks as task_lib
    from vlp_lib.data.tokenizer import world_tokenizer
    from vlp_lib.eval import encode_images, zero_shot_accuracy
    from vlp_lib.models import create_model

    tokenizer = world_tokenizer(24)
    model = create_model("rn-tiny", tokenizer.vocab_size, 24, image_size=32, seed=0)
    task = task_lib.load_task("shapes10", "test", n=60, scale="smoke")
    args = (model, tokenizer, task.images, task.labels, task.classnames, task.templates)
    assert zero_shot_accuracy(*args) == zero_shot_accuracy(*args, image_features=encode_images(model, task.images))


def _grids_asked(monkeypatch, probe: str) -> list:
    """The ``Cs`` each call of ``suite.<probe>`` is given, in order (the probe itself still runs)."""
    grids = []
    real_probe = getattr(suite, probe)

    def spy(*args, Cs=None, **kwargs):
        grids.append(Cs)
        return real_probe(*args, Cs=Cs, **kwargs)

    monkeypatch.setattr(suite, probe, spy)
    return grids


def test_the_probe_grid_is_the_scales(clip_and_tokenizer, monkeypatch):
    # smoke probes fit two values of C (its runs only test the pipeline); every other scale the whole grid
    clip, _ = clip_and_tokenizer
    grids = _grids_asked(monkeypatch, "linear_probe")
    suite.evaluate_task(clip, None, "count", "smoke", 40, 20, seed=0, text_tower=False)
    suite.evaluate_task(clip, None, "count", "laptop", 40, 20, seed=0, text_tower=False)
    assert grids == [suite.PROBE_CS["smoke"], None]


def test_the_svm_probe_grid_is_the_scales(clip_and_tokenizer, monkeypatch):
    clip, _ = clip_and_tokenizer
    grids = _grids_asked(monkeypatch, "multilabel_svm_probe")
    for scale in ("smoke", "laptop"):
        assert 0.0 <= suite.presence_map(clip, scale, 40, 20, name="objects") <= 1.0
    assert grids == [suite.SVM_CS["smoke"], None]
