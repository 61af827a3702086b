"""Evaluation tasks and the retrieval set of the generated world."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from vlp_lib.config import scale_defaults
from vlp_lib.data import tasks, vocab, world
from vlp_lib.data.tokenizer import world_tokenizer


def _hashes(images: np.ndarray) -> set[str]:
    return {hashlib.sha1(np.ascontiguousarray(im).tobytes()).hexdigest() for im in images}


def test_required_tasks_exist():
    assert {"shapes10", "shapes_colours", "clutter10", "background", "count"} <= set(tasks.TASKS)
    assert len(tasks.TASKS["shapes10"]["classnames"]) == 10
    assert 90 <= len(tasks.TASKS["shapes_colours"]["classnames"]) <= 110
    assert tasks.TASKS["clutter10"]["image_size"] == 64
    seeds = [s for spec in tasks.TASKS.values() for s in spec["seeds"].values()] + [tasks.RETRIEVAL_SEED]
    assert len(set(seeds)) == len(seeds) and min(seeds) >= tasks.TASK_SEED_BASE
    # shapes10 holds look-alike pairs
    names = tasks.TASKS["shapes10"]["classnames"]
    assert sum(vocab.LOOKALIKES[s] in names for s in names) >= 8


@pytest.mark.parametrize("name", list(tasks.TASKS))
def test_task_loads(name):
    spec = tasks.TASKS[name]
    t = tasks.load_task(name, "test", n=60)
    size = spec["image_size"]
    assert t.name == name and t.split == "test" and len(t) == 60
    assert t.images.shape == (60, size, size, 3) and t.images.dtype == np.uint8
    assert t.labels.dtype == np.int64 and t.labels.min() >= 0 and t.labels.max() < len(t.classnames)
    assert len(np.unique(t.labels)) > 1
    assert t.stands_in_for and t.classnames == spec["classnames"]
    assert 4 <= len(t.templates) <= 8
    for template in t.templates:
        assert template.count("{}") == 1 and template.format(t.classnames[0]) != template
    tok = world_tokenizer()
    words = {w for c in t.classnames for w in vocab.words(c)} | {w for tp in t.templates for w in vocab.words(tp)}
    assert words <= set(tok.word_to_id)


def test_labels_match_world_labels():
    t = tasks.load_task("shapes_colours", "train", n=40)
    spec = tasks.TASKS["shapes_colours"]
    w = world.generate(40, spec["seeds"]["train"], 32, **spec["knobs"])
    for label, shape, colour in zip(t.labels, w.labels["shape"], w.labels["colour"]):
        assert t.classnames[label] == f"{vocab.COLOURS[colour]} {vocab.SHAPES[shape]}"
    t = tasks.load_task("count", "train", n=40)
    w = world.generate(40, tasks.TASKS["count"]["seeds"]["train"], 32)
    assert np.array_equal(t.labels + 1, w.labels["count"])


def test_splits_and_training_world_are_disjoint():
    for name in ("shapes10", "background"):
        train = tasks.load_task(name, "train", n=150)
        test = tasks.load_task(name, "test", n=150)
        assert not _hashes(train.images) & _hashes(test.images)
        assert len(_hashes(train.images)) == 150
    train_world = world.generate(150, 0, cache=False, max_objects=1)
    assert not _hashes(train_world.images) & _hashes(tasks.load_task("shapes10", "test", n=150).images)


def test_default_sizes_come_from_scale():
    smoke = scale_defaults("smoke")
    assert len(tasks.load_task("count", "test", scale="smoke")) == smoke["task_test"]
    assert len(tasks.load_task("count", "train", scale="smoke")) == smoke["task_train"]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(name="cifar10", split="test"), "name"),
        (dict(name="shapes10", split="val"), "split"),
        (dict(name="shapes10", split="test", n=0), "n"),
        (dict(name="shapes10", split="test", scale="huge"), "scale"),
    ],
)
def test_bad_task_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        tasks.load_task(**kwargs)


def test_retrieval_set():
    r = tasks.load_retrieval(n_images=20)
    assert r.images.shape == (20, 32, 32, 3) and len(r) == 20
    assert len(r.captions) == 100 and r.captions_per_image == 5
    assert np.array_equal(r.text_image_index, np.repeat(np.arange(20), 5))
    w = world.generate(20, tasks.RETRIEVAL_SEED, 32, **tasks.RETRIEVAL_KNOBS)
    assert r.summaries == w.summaries
    junk = vocab.junk_words()
    for i in range(20):
        caps = r.captions[5 * i : 5 * i + 5]
        assert len(set(caps)) == 5  # five different paraphrases
        for cap in caps:
            assert not set(vocab.words(cap)) & junk
            # clean: every object of image i is named
            assert all(vocab.SHAPES[s] in cap.lower() for s in w.objects[i][:, 0])
    assert len(tasks.load_retrieval(scale="smoke")) == scale_defaults("smoke")["retrieval_images"]


def test_bad_retrieval_arguments():
    with pytest.raises(ValueError, match="n_images"):
        tasks.load_retrieval(n_images=0)
    with pytest.raises(ValueError, match="captions_per_image"):
        tasks.load_retrieval(n_images=2, captions_per_image=100)


def test_definitions_cover_every_shape():
    assert set(vocab.DEFINITIONS) == set(vocab.SHAPES)
    assert len(set(vocab.DEFINITIONS.values())) == len(vocab.SHAPES)


def test_presence_task_is_multi_hot_over_every_object():
    t = tasks.load_multilabel_task("presence", "test", n=60)
    spec = tasks.MULTILABEL_TASKS["presence"]
    assert tasks.multilabel_task_names() == ["presence", "objects", "objects_shift"]
    assert not set(tasks.multilabel_task_names()) & set(tasks.TASKS)  # probes, not tasks of the suite
    assert t.name == "presence" and t.split == "test" and len(t) == 60 and t.stands_in_for
    assert t.images.shape == (60, 32, 32, 3) and t.images.dtype == np.uint8
    assert t.classnames == vocab.SHAPES and t.targets.shape == (60, 24) and t.targets.dtype == np.int64
    w = world.generate(60, spec["seeds"]["test"], 32, **spec["knobs"])
    assert np.array_equal(np.asarray(t.images), np.asarray(w.images))
    for row, objs in zip(t.targets, w.objects):
        assert set(np.flatnonzero(row).tolist()) == set(objs[:, 0].tolist())
    assert set(w.labels["count"].tolist()) == {1, 2, 3} and (t.targets.sum(1) > 1).any()
    assert (t.targets.sum(0) > 0).sum() >= 20  # most shapes occur
    assert tasks.task_words() <= set(world_tokenizer().word_to_id)


def test_presence_seeds_are_their_own():
    seeds = [s for spec in tasks.TASKS.values() for s in spec["seeds"].values()] + [tasks.RETRIEVAL_SEED]
    ml = [s for spec in tasks.MULTILABEL_TASKS.values() for s in spec["seeds"].values()]
    assert len(set(ml)) == len(ml) and not set(ml) & set(seeds) and min(ml) >= tasks.TASK_SEED_BASE
    train = tasks.load_multilabel_task("presence", "train", n=40)
    test = tasks.load_multilabel_task("presence", "test", n=40)
    assert not _hashes(train.images) & _hashes(test.images)
    assert len(tasks.load_multilabel_task("presence", "test", scale="smoke")) == scale_defaults("smoke")["task_test"]


def test_shape_multi_hot():
    objs = [np.array([[3, 0, 1], [3, 2, 0], [5, 1, 0]]), np.array([[0, 0, 2]]), np.zeros((0, 3), np.int64)]
    hot = tasks.shape_multi_hot(objs, num_classes=6)
    assert hot.tolist() == [[0, 0, 0, 1, 0, 1], [1, 0, 0, 0, 0, 0], [0] * 6]
    with pytest.raises(ValueError, match="num_classes"):
        tasks.shape_multi_hot(objs, num_classes=0)
    with pytest.raises(ValueError, match=r"objects\[0\]"):
        tasks.shape_multi_hot(objs, num_classes=4)
    with pytest.raises(ValueError, match=r"objects\[0\]"):
        tasks.shape_multi_hot([np.array([1, 2, 3])])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(name="voc", split="test"), "name"),
        (dict(name="presence", split="val"), "split"),
        (dict(name="presence", split="test", n=-3), "n"),
        (dict(name="presence", split="test", scale="huge"), "scale"),
    ],
)
def test_bad_multilabel_task_arguments(kwargs, name, monkeypatch):
    monkeypatch.setattr(world, "generate", lambda *a, **k: pytest.fail("generated before validating"))
    with pytest.raises(ValueError, match=name):
        tasks.load_multilabel_task(**kwargs)
