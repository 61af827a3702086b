import dataclasses

import numpy as np
import pytest

from vlp_lib import experiment
from vlp_lib.data import training, vocab, world
from vlp_lib.data.tokenizer import world_tokenizer

TINY = dict(
    train_size=128,
    batch_size=32,
    epochs=1,
    task_train=60,
    task_test=40,
    retrieval_images=20,
    eval_tasks=["shapes10", "count"],
)


@pytest.fixture
def no_compute(monkeypatch):
    """Any data generation or model construction fails the test: bad input must be refused first."""

    def forbidden(*args, **kwargs):
        raise AssertionError("computed before validating")

    monkeypatch.setattr(world, "generate", forbidden)
    monkeypatch.setattr(training, "generate", forbidden)
    monkeypatch.setattr(experiment, "create_model", forbidden)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"scale": "galaxy"}, "scale"),
        ({"train_size": 0}, "train_size"),
        ({"train_size": -5}, "train_size"),
        ({"train_size": 100, "batch_size": 128}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"image_size": 0}, "image_size"),
        ({"model": "vit-huge"}, "model"),
        ({"method": "clop"}, "method"),
        ({"eval_tasks": ["imagenet"]}, "eval_tasks"),
        ({"epochs": 0}, "epochs"),
        ({"precision": "int4"}, "precision"),
        ({"train_data": "/nonexistent/pairs.csv"}, "train_data"),
        ({"train_data": "/nonexistent/{00000..00003}.tar"}, "train_data"),
        ({"train_data": "pairs.parquet"}, "train_data"),
        ({"train_data": 5}, "train_data"),
        ({"tokenizer": "gpt2"}, "tokenizer"),
        ({"world_knobs": {"mismatch_rate": 2.0}}, "mismatch_rate"),
        ({"learning_rate": 0.1}, "learning_rate"),
        ({"eval_probes": "no"}, "eval_probes"),
        ({"world_mix": {"n": 4, "seed": 1}}, "world_mix"),
        ({"world_mix": [{"n": 4}]}, "world_mix"),
        ({"world_mix": [{"n": 0, "seed": 1}]}, "world_mix"),
        ({"world_mix": [{"n": 4, "seed": 10**9}]}, "world_mix"),
        ({"world_mix": [{"n": 4, "seed": 1, "colour": "red"}]}, "world_mix"),
        ({"world_mix": [{"n": 4, "seed": 1, "knobs": {"shapes": ["blob"]}}]}, "shapes"),
        ({"world_mix": [{"n": 200, "seed": 1}], "train_size": 128}, "world_mix"),
    ],
)
def test_bad_input_refused_before_any_compute(no_compute, kwargs, param):
    with pytest.raises(ValueError, match=param):
        experiment.make_config(**{"scale": "smoke", **kwargs})


def test_run_end_to_end_and_store(monkeypatch):
    config = experiment.make_config("smoke", seed=0, **TINY)
    record = experiment.run(config, progress=False)
    m = record["metrics"]
    for key in (
        "shapes10/zeroshot_top1",
        "shapes10/linear",
        "shapes10/knn",
        "shapes10/ari",
        "count/ami",
        "retrieval/mean_recall",
        "retrieval/modality_gap",
        "train_samples_per_s",
    ):
        assert key in m and np.isfinite(m[key])
    assert 0.0 <= m["shapes10/linear"] <= 1.0
    assert {"training", "evaluation", "setup"} <= set(record["timings"])
    assert len(record["history"]) == 4  # 128 pairs / 32 per batch
    # stored: the second call loads the record without training
    monkeypatch.setattr(experiment, "train", lambda *a, **k: pytest.fail("retrained a stored run"))
    assert experiment.run(config, progress=False) == record
    model, tokenizer = experiment.load_trained(record)
    assert tokenizer.vocab_size == model.token_embedding.num_embeddings


def test_world_mix_replaces_the_last_pairs_at_equal_total(tmp_path):
    """A concept-coverage mix: the main world keeps train_size - n pairs, the part's n pairs come last."""
    mix = [{"n": 16, "seed": 7, "knobs": {"shapes": ["ring"], "min_objects": 1, "max_objects": 1}}]
    config = experiment.make_config(
        "smoke", seed=0, **{**TINY, "world_mix": mix, "world_knobs": {"held_out_shapes": ["ring"]}}
    )
    data = training.world_data(config, world_tokenizer())
    assert len(data) == config.train_size == 128
    main = world.generate(112, seed=config.world_seed, image_size=32, held_out_shapes=["ring"])
    part = world.generate(16, seed=7, image_size=32, shapes=["ring"], min_objects=1, max_objects=1)
    assert data.captions == list(main.captions) + list(part.captions)
    np.testing.assert_array_equal(data.images[112:], part.images)
    ring = vocab.SHAPES.index("ring")
    shapes = data.extra["labels"]["shape"]
    assert (shapes[112:] == ring).all() and not (shapes[:112] == ring).any()
    assert "source" not in data.extra  # one training set: a method may concat it with its own sources
    # without a mix: the one world, exactly as before
    plain = experiment.make_config("smoke", seed=0, **TINY)
    assert plain.world_mix == () and training.world_data(plain, world_tokenizer()).captions == list(
        world.generate(128, seed=plain.world_seed, image_size=32).captions
    )


def test_eval_probes_false_evaluates_zero_shot_only(monkeypatch):
    config = experiment.make_config("smoke", seed=0, **{**TINY, "eval_probes": False, "eval_tasks": ["shapes24"]})
    from vlp_lib import suite
    from vlp_lib.data import tasks

    loaded = []
    load_task = tasks.load_task
    monkeypatch.setattr(
        tasks, "load_task", lambda name, split, *a, **k: loaded.append(split) or load_task(name, split, *a, **k)
    )
    data, tokenizer, model = experiment.build(config)
    metrics = suite.evaluate_suite(model, tokenizer, config.eval)
    assert "train" not in loaded  # no probe, no train split
    assert not any(k.split("/")[1] in ("linear", "knn", "ari", "ami") for k in metrics)
    per_class = {k.rsplit("/", 1)[1]: v for k, v in metrics.items() if k.startswith("shapes24/zeroshot_top1/")}
    assert set(per_class) <= set(tasks.TASKS["shapes24"]["classnames"]) and len(per_class) >= 10
    test = load_task("shapes24", "test", n=config.eval.task_test, scale="smoke")
    counts = np.bincount(test.labels, minlength=24)
    weighted = sum(per_class[test.classnames[c]] * counts[c] for c in range(24) if counts[c]) / len(test.labels)
    assert weighted == pytest.approx(metrics["shapes24/zeroshot_top1"])
    # chance levels have the same keys
    assert set(suite.chance_levels(config.eval)) == set(metrics) - {"retrieval/modality_gap"}
    with pytest.raises(ValueError, match="eval_probes"):
        suite.evaluate_suite(model, tokenizer, dataclasses.replace(config.eval, tasks=("presence",)))
