import numpy as np
import pytest
from PIL import Image

from vlp_lib import experiment
from vlp_lib.data import world
from vlp_lib.data.csv_data import load_csv
from vlp_lib.data.tokenizer import world_tokenizer

TINY = dict(train_size=128, batch_size=32, epochs=1, task_train=60, task_test=40, retrieval_images=20,
            eval_tasks=["shapes10", "count"])


@pytest.fixture
def no_compute(monkeypatch):
    """Any data generation or model construction fails the test: bad input must be refused first."""

    def forbidden(*args, **kwargs):
        raise AssertionError("computed before validating")

    monkeypatch.setattr(world, "generate", forbidden)
    monkeypatch.setattr(experiment, "generate", forbidden)
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
        ({"world_knobs": {"mismatch_rate": 2.0}}, "mismatch_rate"),
        ({"learning_rate": 0.1}, "learning_rate"),
    ],
)
def test_bad_input_refused_before_any_compute(no_compute, kwargs, param):
    with pytest.raises(ValueError, match=param):
        experiment.make_config(**{"scale": "smoke", **kwargs})


def test_run_end_to_end_and_store(monkeypatch):
    config = experiment.make_config("smoke", seed=0, **TINY)
    record = experiment.run(config, progress=False)
    m = record["metrics"]
    for key in ("shapes10/zeroshot_top1", "shapes10/linear", "shapes10/knn", "shapes10/ari", "count/ami",
                "retrieval/mean_recall", "retrieval/modality_gap", "train_samples_per_s"):
        assert key in m and np.isfinite(m[key])
    assert 0.0 <= m["shapes10/linear"] <= 1.0
    assert {"training", "evaluation", "setup"} <= set(record["timings"])
    assert len(record["history"]) == 4  # 128 pairs / 32 per batch
    # stored: the second call loads the record without training
    monkeypatch.setattr(experiment, "train", lambda *a, **k: pytest.fail("retrained a stored run"))
    assert experiment.run(config, progress=False) == record
    model, tokenizer = experiment.load_trained(record)
    assert tokenizer.vocab_size == model.token_embedding.num_embeddings


def test_csv_pairs(tmp_path):
    rows = ["filepath\ttitle"]
    rng = np.random.default_rng(0)
    for i in range(6):
        Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(tmp_path / f"{i}.png")
        rows.append(f"{i}.png\ta red circle number {i}")
    csv = tmp_path / "pairs.csv"
    csv.write_text("\n".join(rows) + "\n")
    tokenizer = world_tokenizer()
    data = load_csv(csv, tokenizer, image_size=32)
    assert data.images.shape == (6, 32, 32, 3) and data.images.dtype == np.uint8
    assert data.captions[2] == "a red circle number 2"
    again = load_csv(csv, tokenizer, image_size=32)  # decoded once, then memory-mapped
    assert isinstance(again.images, np.memmap) and np.array_equal(again.images, data.images)
    config = experiment.make_config("smoke", train_data=str(csv), batch_size=2, **{
        k: v for k, v in TINY.items() if k not in ("train_size", "batch_size")})
    assert config["train_size"] == 6


def test_csv_missing_column_and_image(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text("path\ttitle\nx.png\thello\n")
    with pytest.raises(ValueError, match="filepath"):
        experiment.make_config("smoke", train_data=str(csv))
    csv.write_text("filepath\ttitle\nmissing.png\thello\n")
    with pytest.raises(ValueError, match="missing"):
        experiment.make_config("smoke", train_data=str(csv))
