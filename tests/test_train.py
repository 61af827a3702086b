import math

import numpy as np
import pytest
import torch

from vlp_lib.methods import CLIP, create_method
from vlp_lib.models import MAX_LOGIT_SCALE, create_model
from vlp_lib.train import TrainConfig, episode_indices, lr_factor, param_groups, train


def _setup(synthetic_pairs, **cfg):
    data, vocab, ctx = synthetic_pairs
    config = TrainConfig(**{"epochs": 2, "batch_size": 16, "lr": 1e-3, "warmup_steps": 2, "progress": False, **cfg})
    model = create_model("vit-tiny", vocab, ctx, seed=config.seed)
    return data, config, model


def test_same_seed_same_run(synthetic_pairs):
    runs = []
    for _ in range(2):
        data, config, model = _setup(synthetic_pairs, seed=5)
        runs.append((train(model, CLIP(), data, config).history, model.state_dict()))
    assert [h["loss"] for h in runs[0][0]] == [h["loss"] for h in runs[1][0]]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])


def test_resume_continues_exactly(synthetic_pairs, tmp_path):
    data, config, model = _setup(synthetic_pairs, seed=1)
    full = train(model, CLIP(), data, config)
    reference = model.state_dict()

    class Interrupted(CLIP):
        def on_episode_start(self, model, episode):
            if episode.number == 1:
                raise KeyboardInterrupt

    ckpt = tmp_path / "run.pt"
    data, config, model = _setup(synthetic_pairs, seed=1)
    with pytest.raises(KeyboardInterrupt):
        train(model, Interrupted(), data, config, checkpoint_path=ckpt)
    assert ckpt.exists()
    data, config, model = _setup(synthetic_pairs, seed=1)  # a fresh process would start from scratch
    resumed = train(model, CLIP(), data, config, checkpoint_path=ckpt)
    assert resumed.resumed_from_episode == 1
    assert [h["loss"] for h in resumed.history] == pytest.approx([h["loss"] for h in full.history], rel=1e-5)
    state = model.state_dict()
    assert all(torch.allclose(state[k], reference[k], atol=1e-6) for k in reference)


def test_loss_decreases_on_learnable_pairs(synthetic_pairs):
    # each caption token encodes the image's mean brightness bucket: a learnable pairing
    data, vocab, ctx = synthetic_pairs
    bucket = (data.images.reshape(len(data), -1).mean(1) > np.median(data.images.reshape(len(data), -1).mean(1)))
    data.tokens[:, 1] = torch.from_numpy(bucket.astype(np.int64) + 3)
    config = TrainConfig(epochs=8, batch_size=16, lr=2e-3, warmup_steps=2, progress=False)
    model = create_model("vit-tiny", vocab, ctx, seed=0)
    losses = [h["loss"] for h in train(model, CLIP(), data, config).history]
    assert np.mean(losses[-4:]) < np.mean(losses[:4])


def test_no_weight_decay_on_gains_biases_temperatures():
    model = create_model("vit-tiny", 50, 8)
    groups = param_groups(model, CLIP(), weight_decay=0.1)
    no_decay = {id(p) for g in groups if g["weight_decay"] == 0.0 for p in g["params"]}
    named = dict(model.named_parameters())
    assert id(named["logit_scale"]) in no_decay
    assert all(id(p) in no_decay for n, p in named.items() if p.ndim < 2)
    assert id(named["visual.conv1.weight"]) not in no_decay
    assert sum(len(g["params"]) for g in groups) == len(named)


def test_lr_schedule_warmup_then_cosine():
    assert lr_factor(0, 100, 10) == pytest.approx(0.1)
    assert lr_factor(9, 100, 10) == pytest.approx(1.0)
    assert lr_factor(10, 100, 10) == pytest.approx(1.0)
    assert lr_factor(55, 100, 10) == pytest.approx(0.5)
    assert lr_factor(100, 100, 10) == pytest.approx(0.0)


def test_locked_image_phase_freezes_image_tower(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs, image_lock_fraction=0.5)

    class Snapshot(CLIP):
        def on_episode_start(self, model, episode):
            if episode.number == 1:  # the lock starts at the second half of the steps
                self.visual = {k: v.clone() for k, v in model.visual.state_dict().items()}

    method = Snapshot()
    train(model, method, data, config)
    after = model.visual.state_dict()
    assert all(torch.equal(method.visual[k], after[k]) for k in after)


def test_image_tower_schedule_anneals_to_zero_at_the_lock(synthetic_pairs):
    """The official protoclip_cosine_lr: the image tower's cosine ends at the lock step, the rest goes on."""
    data, config, model = _setup(synthetic_pairs, image_lock_fraction=0.5, epochs=4, warmup_steps=1)
    history = train(model, CLIP(), data, config).history
    lock = len(history) // 2
    image_lr = [h["image_lr"] for h in history]
    assert image_lr[lock - 1] < 0.2 * config.lr and all(v == 0.0 for v in image_lr[lock:])
    assert all(a >= b for a, b in zip(image_lr[1:lock], image_lr[2:lock]))  # decreasing after warm-up
    assert history[lock]["lr"] > 0.4 * config.lr  # the text side is half-way through its cosine


def test_temperature_clamped(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs, lr=0.5, warmup_steps=0, epochs=1)
    with torch.no_grad():
        model.logit_scale.fill_(MAX_LOGIT_SCALE)
    train(model, CLIP(), data, config)
    assert model.logit_scale.item() <= MAX_LOGIT_SCALE + 1e-6


def test_episode_indices_are_a_permutation_prefix():
    idx = episode_indices(0, 3, 100, 40)
    assert len(idx) == 40 and len(set(idx.tolist())) == 40
    assert np.array_equal(idx, episode_indices(0, 3, 100, 40))
    assert not np.array_equal(idx, episode_indices(0, 4, 100, 40))


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"batch_size": 1000}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"episode_size": 1000}, "episode_size"),
        ({"epochs": 0}, "epochs"),
        ({"precision": "fp8"}, "precision"),
        ({"augmentation": "heavy"}, "augmentation"),
    ],
)
def test_bad_config_refused_before_compute(synthetic_pairs, kwargs, param):
    data, _, _ = synthetic_pairs
    with pytest.raises(ValueError, match=param):
        TrainConfig(**{"batch_size": 16, **kwargs}).validate(len(data))


def test_methods_factory():
    assert isinstance(create_method("clip"), CLIP)
    with pytest.raises(ValueError, match="method"):
        create_method("protoclop")
