"""DIME-FM's world tasks: ``shapesA``, ``shapes24``, the four robustness variants of shapes10, and the
``avg7`` / ``robust4`` averages of the suite."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from vlp_lib import suite
from vlp_lib.data import tasks, vocab, world

NEW_TASKS = ["shapesA", "shapes24", *tasks.ROBUST_TASKS]
ALL_METRICS = ("zeroshot_top1", "zeroshot_top5", "linear", "knn", "ari", "ami")


def _hashes(images: np.ndarray) -> set[str]:
    return {hashlib.sha1(np.ascontiguousarray(im).tobytes()).hexdigest() for im in images}


def _world(name: str, split: str, n: int, **override) -> world.World:
    spec = tasks.TASKS[name]
    return world.generate(
        n, spec["seeds"][split], override.pop("image_size", spec["image_size"]), **{**spec["knobs"], **override}
    )


# --------------------------------------------------------------------------------------------------------------
# specs and seeds


def test_shape_sets_split_the_24_shapes_into_two_halves():
    a, b = tasks.SHAPE_SET_A, tasks.SHAPE_SET_B
    assert isinstance(a, tuple) and isinstance(b, tuple)
    assert a == tuple(vocab.SHAPES[:12]) and b == tuple(vocab.SHAPES[12:])
    assert not set(a) & set(b) and set(a) | set(b) == set(vocab.SHAPES)
    # names, as the world's shapes / held_out_shapes knobs take them
    assert world.check_knobs(shapes=list(a))["shapes"] == list(a)
    assert world.check_knobs(held_out_shapes=list(b))["shapes"] == list(a)


def test_group_constants():
    assert tasks.SEVEN_TASKS == (
        "shapes10",
        "shapes_colours",
        "clutter10",
        "background",
        "count",
        "colour",
        "superclass",
    )
    assert tasks.ROBUST_TASKS == ("shapes10_clutter", "shapes10_64px", "shapes10_three", "shapes10_gray")
    assert set(NEW_TASKS) <= set(tasks.TASKS) and set(tasks.DIMEFM_TASKS) == set(NEW_TASKS)
    assert tasks.task_names() == [*tasks.SEVEN_TASKS, *NEW_TASKS]


def test_existing_task_seeds_and_specs_are_unchanged():
    for k, name in enumerate(tasks.SEVEN_TASKS):  # stored results depend on these
        base = tasks.TASK_SEED_BASE + 100 * k
        assert tasks.TASKS[name]["seeds"] == dict(train=base, test=base + 1)
    assert tasks.TASKS["shapes10"]["knobs"] == dict(min_objects=1, max_objects=1, shapes=tasks.SHAPES10)
    assert tasks.TASKS["shapes10"]["image_size"] == 32


def test_new_seeds_are_their_own():
    old = [s for name in tasks.SEVEN_TASKS for s in tasks.TASKS[name]["seeds"].values()]
    old += [tasks.RETRIEVAL_SEED, *tasks.RELATION_SEEDS.values()]
    old += [s for spec in tasks.MULTILABEL_TASKS.values() for s in spec["seeds"].values()]
    new = [s for name in NEW_TASKS for s in tasks.TASKS[name]["seeds"].values()]
    assert len(new) == 2 * len(NEW_TASKS) == len(set(new))
    assert not set(new) & set(old) and min(new) >= tasks.TASK_SEED_BASE
    for name in ("shapesA", "shapes10_three"):  # the splits share no image
        train, test = tasks.load_task(name, "train", n=80), tasks.load_task(name, "test", n=80)
        assert not _hashes(train.images) & _hashes(test.images)


# --------------------------------------------------------------------------------------------------------------
# shapesA and shapes24


def test_shapesA_images_hold_only_set_A_shapes():
    t = tasks.load_task("shapesA", "test", n=200)
    w = _world("shapesA", "test", 200)
    ids_a = {vocab.SHAPES.index(s) for s in tasks.SHAPE_SET_A}
    assert t.classnames == list(tasks.SHAPE_SET_A) and t.templates == tasks.TASKS["shapes10"]["templates"]
    assert np.array_equal(np.asarray(t.images), np.asarray(w.images))
    assert all(len(o) == 1 and set(o[:, 0].tolist()) <= ids_a for o in w.objects)
    assert [t.classnames[y] for y in t.labels] == [vocab.SHAPES[s] for s in w.labels["shape"]]
    assert set(t.labels.tolist()) == set(range(12))


def test_shapes24_covers_all_24_labels():
    t = tasks.load_task("shapes24", "test", n=400)
    w = _world("shapes24", "test", 400)
    assert t.classnames == vocab.SHAPES and len(t.classnames) == 24
    assert np.array_equal(t.labels, w.labels["shape"])  # class ids are the world's shape ids
    assert all(len(o) == 1 for o in w.objects)
    assert set(t.labels.tolist()) == set(range(24))


# --------------------------------------------------------------------------------------------------------------
# the robustness variants of shapes10


def test_robust_variants_keep_shapes10_classes_and_change_only_their_shift():
    base = tasks.TASKS["shapes10"]
    base_knobs = world.check_knobs(**base["knobs"])
    gray = [c for c in vocab.COLOURS if c in tasks.GRAY_COLOURS]
    expected = {
        "shapes10_clutter": (dict(clutter=0.6), 32),
        "shapes10_64px": (dict(), 64),
        "shapes10_three": (dict(min_objects=3, max_objects=3), 32),
        "shapes10_gray": (dict(colours=gray), 32),
    }
    assert set(expected) == set(tasks.ROBUST_TASKS)
    for name, (changed, size) in expected.items():
        spec = tasks.TASKS[name]
        assert spec["label"] == base["label"] and spec["classnames"] == base["classnames"], name
        assert spec["templates"] == base["templates"], name
        assert spec["image_size"] == size, name
        eff = world.check_knobs(**spec["knobs"])
        assert {k for k in eff if eff[k] != base_knobs[k]} == set(changed), name
        assert {k: eff[k] for k in changed} == changed, name


def test_shapes10_gray_objects_are_white_grey_or_black():
    t = tasks.load_task("shapes10_gray", "test", n=120)
    w = _world("shapes10_gray", "test", 120)
    gray_ids = {vocab.COLOURS.index(c) for c in ("white", "grey", "black")}
    assert all(set(o[:, 1].tolist()) <= gray_ids for o in w.objects)
    assert set(w.labels["colour"].tolist()) == gray_ids  # all three occur
    assert t.classnames == tasks.SHAPES10 and len(np.unique(t.labels)) == 10


def test_shapes10_three_has_three_objects_labelled_by_the_largest():
    t = tasks.load_task("shapes10_three", "test", n=80)
    w = _world("shapes10_three", "test", 80)
    ids10 = {vocab.SHAPES.index(s) for s in tasks.SHAPES10}
    assert (w.labels["count"] == 3).all() and all(len(o) == 3 for o in w.objects)
    assert all(set(o[:, 0].tolist()) <= ids10 for o in w.objects)
    for label, o in zip(t.labels, w.objects):  # the primary object is strictly the largest and names the image
        assert o[0, 2] > o[1:, 2].max()
        assert t.classnames[label] == vocab.SHAPES[o[0, 0]]


def test_shapes10_64px_differs_from_a_32px_render_in_resolution_only():
    from vlp_lib.data.transforms import to_model_input

    t = tasks.load_task("shapes10_64px", "test", n=40)
    assert t.images.shape == (40, 64, 64, 3)
    w64 = _world("shapes10_64px", "test", 40)
    w32 = _world("shapes10_64px", "test", 40, image_size=32)  # the same scenes at shapes10's size
    assert [o.tolist() for o in w64.objects] == [o.tolist() for o in w32.objects]
    assert w64.captions == w32.captions
    assert all(np.allclose(b64, 2 * b32, atol=1e-3) for b64, b32 in zip(w64.boxes, w32.boxes))
    # evaluation resizes to the model's input size (eval.encode_images -> to_model_input)
    assert tuple(to_model_input(np.asarray(t.images[:4]), image_size=32).shape) == (4, 3, 32, 32)


def test_shapes10_clutter_adds_pixels_not_content():
    w = _world("shapes10_clutter", "test", 40)
    clean = _world("shapes10_clutter", "test", 40, clutter=0.0)
    assert w.knobs["clutter"] == 0.6 and w.image_size == 32
    assert [o.tolist() for o in w.objects] == [o.tolist() for o in clean.objects]
    assert w.captions == clean.captions and np.array_equal(w.labels["shape"], clean.labels["shape"])
    assert all(not np.array_equal(a, b) for a, b in zip(np.asarray(w.images), np.asarray(clean.images)))


# --------------------------------------------------------------------------------------------------------------
# the suite's averages


def _fake_metrics(names, metrics=ALL_METRICS, seed=0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {f"{t}/{m}": float(rng.random()) for t in names for m in metrics}


def _old_add_avg3(metrics, eval_tasks):
    """The suite's avg3 before it was generalised (the reference: avg3 keys and values must not change)."""
    out = dict(metrics)
    if all(t in eval_tasks for t in suite.VALIDATION_TASKS):
        for key in suite.AVG3_METRICS:
            if all(f"{t}/{key}" in out for t in suite.VALIDATION_TASKS):
                out[f"avg3/{key}"] = float(np.mean([out[f"{t}/{key}"] for t in suite.VALIDATION_TASKS]))
    return {k: v for k, v in out.items() if k.startswith("avg3/")}


def _prefixed(d: dict[str, float], group: str) -> dict[str, float]:
    return {k: v for k, v in d.items() if k.startswith(f"{group}/")}


def test_avg7_and_robust4_equal_the_means_when_all_their_tasks_are_evaluated():
    names = [*tasks.SEVEN_TASKS, *tasks.ROBUST_TASKS, "shapesA"]
    metrics = _fake_metrics(names)
    avg = suite.group_averages(metrics, names)
    assert set(_prefixed(avg, "avg7")) == {f"avg7/{m}" for m in ("zeroshot_top1", "zeroshot_top5", "linear", "knn")}
    for m in ("zeroshot_top1", "zeroshot_top5", "linear", "knn"):
        assert avg[f"avg7/{m}"] == pytest.approx(np.mean([metrics[f"{t}/{m}"] for t in tasks.SEVEN_TASKS]))
    assert set(_prefixed(avg, "robust4")) == {"robust4/zeroshot_top1"}
    assert avg["robust4/zeroshot_top1"] == pytest.approx(
        np.mean([metrics[f"{t}/zeroshot_top1"] for t in tasks.ROBUST_TASKS])
    )
    assert _prefixed(avg, "avg3") == pytest.approx(_old_add_avg3(metrics, names))
    assert set(avg) == set(_prefixed(avg, "avg3")) | set(_prefixed(avg, "avg7")) | set(_prefixed(avg, "robust4"))
    assert not set(avg) & set(metrics)  # only new keys


@pytest.mark.parametrize("missing", [*tasks.SEVEN_TASKS, *tasks.ROBUST_TASKS])
def test_an_average_needs_every_task_of_its_group(missing):
    names = [t for t in (*tasks.SEVEN_TASKS, *tasks.ROBUST_TASKS) if t != missing]
    metrics = _fake_metrics(names)
    avg = suite.group_averages(metrics, names)
    assert bool(_prefixed(avg, "avg7")) == (missing not in tasks.SEVEN_TASKS)
    assert bool(_prefixed(avg, "robust4")) == (missing not in tasks.ROBUST_TASKS)
    assert bool(_prefixed(avg, "avg3")) == (missing not in suite.VALIDATION_TASKS)
    assert _prefixed(avg, "avg3") == pytest.approx(_old_add_avg3(metrics, names))


def test_averages_of_an_image_only_model_are_its_probe_metrics():
    names = [*tasks.SEVEN_TASKS, *tasks.ROBUST_TASKS]
    metrics = _fake_metrics(names, metrics=("linear", "knn", "ari", "ami"))
    avg = suite.group_averages(metrics, names)
    assert set(avg) == {"avg3/linear", "avg3/knn", "avg7/linear", "avg7/knn"}
    assert avg == pytest.approx(
        {
            **_old_add_avg3(metrics, names),
            **{f"avg7/{m}": np.mean([metrics[f"{t}/{m}"] for t in tasks.SEVEN_TASKS]) for m in ("linear", "knn")},
        }
    )


def test_avg3_matches_the_old_implementation_on_partial_metrics():
    names = list(suite.VALIDATION_TASKS)
    metrics = _fake_metrics(names, seed=3)
    del metrics["clutter10/knn"]  # a metric one task lacks is not averaged
    avg = suite.group_averages(metrics, names + ["count"])
    assert set(avg) == {"avg3/zeroshot_top1", "avg3/zeroshot_top5", "avg3/linear"}
    assert avg == _old_add_avg3(metrics, names)
    assert suite.group_averages(metrics, names[:2]) == {}


def test_group_average_validates_its_group():
    metrics = _fake_metrics(["shapes10"])
    assert suite.group_average(metrics, ["shapes10"], "solo", ["shapes10"], ["linear"]) == {
        "solo/linear": metrics["shapes10/linear"]
    }
    with pytest.raises(ValueError, match="group"):
        suite.group_average(metrics, ["shapes10"], "", ["shapes10"])
    with pytest.raises(ValueError, match="group_tasks"):
        suite.group_average(metrics, ["shapes10"], "g", [])
    with pytest.raises(ValueError, match="group_tasks"):
        suite.group_average(metrics, ["shapes10"], "g", "shapes10")


def _fake_task(name, split, n=None, scale="laptop"):
    spec = tasks.TASKS[name]
    c = len(spec["classnames"])
    return tasks.Task(
        name=name,
        split=split,
        images=np.zeros((n, 2, 2, 3), np.uint8),
        labels=np.arange(n, dtype=np.int64) % c,
        classnames=list(spec["classnames"]),
        templates=list(spec["templates"]),
        stands_in_for=spec["stands_in_for"],
    )


@pytest.mark.parametrize("text_tower", [True, False])
def test_chance_levels_and_the_suite_give_the_same_average_keys(monkeypatch, text_tower):
    names = [*tasks.SEVEN_TASKS, *tasks.ROBUST_TASKS]
    config = suite.EvalConfig(tasks=tuple(names), scale="smoke", task_train=40, task_test=200, retrieval_images=10)
    fake = _fake_metrics(names)

    def evaluate_task(model, tokenizer, name, *args, text_tower=None, **kwargs):
        keep = ALL_METRICS if text_tower else ("linear", "knn", "ari", "ami")
        return {m: fake[f"{name}/{m}"] for m in keep}

    class TextModel:
        def encode_text(self, tokens):
            raise AssertionError("evaluate_task is replaced")

    monkeypatch.setattr(suite, "evaluate_task", evaluate_task)
    monkeypatch.setattr(suite, "evaluate_retrieval", lambda *a, **k: {"mean_recall": 0.5})
    monkeypatch.setattr(suite.task_lib, "load_task", _fake_task)
    metrics = suite.evaluate_suite(TextModel(), lambda texts: None, config, text_tower=text_tower)
    chance = suite.chance_levels(config, text_tower=text_tower)
    groups = ("avg3/", "avg7/", "robust4/")
    assert {k for k in metrics if k.startswith(groups)} == {k for k in chance if k.startswith(groups)}
    assert ("robust4/zeroshot_top1" in chance) == text_tower
    assert chance["avg7/linear"] == pytest.approx(
        np.mean([1 / len(tasks.TASKS[t]["classnames"]) for t in tasks.SEVEN_TASKS])
    )
    if text_tower:
        assert chance["robust4/zeroshot_top1"] == pytest.approx(0.1)
        assert metrics["robust4/zeroshot_top1"] == pytest.approx(
            np.mean([fake[f"{t}/zeroshot_top1"] for t in tasks.ROBUST_TASKS])
        )
