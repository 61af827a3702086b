import numpy as np
import pytest
import torch

from vlp_lib import train as train_module
from vlp_lib.methods import CLIP, create_method
from vlp_lib.models import MAX_LOGIT_SCALE, create_model
from vlp_lib.train import TrainConfig, clip_gradients, episode_indices, lr_factor, param_groups, train


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


def test_prefetched_batches_are_the_same_run(synthetic_pairs, monkeypatch):
    """The next batch made on a second thread (a GPU's path, forced here on the CPU) trains the same run bit for bit:
    the episode's augmentation stream is drawn in step order, one batch at a time."""
    runs = []
    for prefetch in (False, True):
        monkeypatch.setattr(train_module, "prefetches", lambda device, prefetch=prefetch: prefetch)
        data, config, model = _setup(synthetic_pairs, seed=3, episode_size=64)
        runs.append((train(model, CLIP(), data, config).history, model.state_dict()))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])


@pytest.mark.parametrize("max_norm", [0.05, 1e3])  # every gradient clipped / none
def test_clip_gradients_is_torchs_clipping(max_norm):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(n)) for n in (5, 7, 3)]
    grads = [torch.randn_like(p) for p in params]
    ours, theirs = ([p.detach().clone().requires_grad_() for p in params] for _ in range(2))
    for a, b, g in zip(ours, theirs, grads):
        a.grad, b.grad = g.clone(), g.clone()
    norm = clip_gradients(ours, max_norm)
    assert torch.equal(norm, torch.nn.utils.clip_grad_norm_(theirs, max_norm))
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(ours, theirs))


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
    bucket = data.images.reshape(len(data), -1).mean(1) > np.median(data.images.reshape(len(data), -1).mean(1))
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


# --------------------------------------------------------------------------------------------------
# side data, named views and samplers: what methods other than CLIP/ProtoCLIP read from a batch


def _with_extras(data):
    n = len(data)
    data.extra.update(
        {
            "teacher_image": torch.arange(n * 3, dtype=torch.float32).view(n, 3),
            "summaries": [f"summary {i}" for i in range(n)],
            "labels": {"shape": np.arange(n) % 5, "colour": np.arange(n) % 3},
        }
    )
    return data


class _Recorder(CLIP):
    """CLIP's loss, recording what the batch offers (side data, views) on the first steps."""

    required_extras = ("teacher_image", "summaries", "labels")
    views = ("local",)

    def __init__(self, read: bool = True):
        super().__init__()
        self.read = read
        self.seen = []

    def loss(self, model, batch):
        if self.read:
            self.seen.append(
                {
                    "indices": batch.indices.copy(),
                    "text_indices": batch.text_indices.copy(),
                    "source": batch.source,
                    "teacher_image": batch.side("teacher_image"),
                    "summaries": batch.extra["summaries"],
                    "labels": batch.side("labels"),
                    "local": batch.view("local"),
                    "local_again": batch.view("local"),
                    "off": batch.view("off"),
                    "images": batch.images,
                    "texts": batch.texts,
                    "cached": sorted(k[1] for k in batch._cache),
                }
            )
        return super().loss(model, batch)


def test_side_data_gathered_by_the_batch_indices(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs, epochs=1, batch_size=32)
    data = _with_extras(data)
    method = _Recorder()
    train(model, method, data, config)
    for s in method.seen:
        idx = s["indices"]
        assert torch.equal(s["teacher_image"], data.extra["teacher_image"][torch.as_tensor(idx)])
        assert s["summaries"] == [f"summary {i}" for i in idx]
        assert np.array_equal(s["labels"]["shape"], idx % 5) and np.array_equal(s["labels"]["colour"], idx % 3)
        assert np.array_equal(s["text_indices"], idx) and (s["source"] == "data").all()


def test_side_data_is_gathered_only_when_read(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs, epochs=1, batch_size=32)
    data = _with_extras(data)

    class ReadsOne(_Recorder):
        def loss(self, model, batch):
            batch.side("summaries")
            self.seen.append(sorted(k[1] for k in batch._cache))
            return CLIP.loss(self, model, batch)

    method = ReadsOne()
    train(model, method, data, config)
    assert method.seen and all(keys == ["summaries"] for keys in method.seen)


def test_views_are_seeded_apart_and_built_from_the_raw_images(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs, epochs=1, batch_size=32)
    data = _with_extras(data)
    first = _Recorder()
    train(model, first, data, config)
    data2, config2, model2 = _setup(synthetic_pairs, epochs=1, batch_size=32)
    second = _Recorder()
    train(model2, second, _with_extras(data2), config2)
    from vlp_lib.data.transforms import to_model_input

    for a, b in zip(first.seen, second.seen):
        assert torch.equal(a["local"], b["local"])  # deterministic from (seed, episode, step, name)
        assert a["local"] is a["local_again"]  # built once per batch
        assert a["local"].shape == a["images"].shape and not torch.equal(a["local"], a["images"])
        assert torch.equal(a["off"], to_model_input(data.images[a["indices"]]))
    assert not torch.equal(first.seen[0]["local"], first.seen[1]["local"])  # a new draw every step


def test_reading_views_and_side_data_changes_no_number_of_the_run(synthetic_pairs):
    """The invariant: asking for views and side data draws nothing from the run's own streams."""
    histories = []
    for read in (False, True):
        data, config, model = _setup(synthetic_pairs, seed=3, epochs=1, batch_size=32, augmentation="protoclip")
        histories.append(train(model, _Recorder(read=read), _with_extras(data), config).history)
    assert histories[0] == histories[1]


@pytest.mark.parametrize(
    "extra, match",
    [
        ({}, "teacher_image"),
        ({"teacher_image": np.zeros((5, 3))}, "teacher_image"),
        ({"teacher_image": 3.0}, "teacher_image"),
    ],
)
def test_missing_side_data_refused_before_compute(synthetic_pairs, extra, match):
    data, config, model = _setup(synthetic_pairs)
    data.extra.update(extra)

    class Needs(CLIP):
        required_extras = ("teacher_image",)

        def on_episode_start(self, model, episode):
            raise AssertionError("computed before refusing")

    with pytest.raises(ValueError, match=f"required_extras.*{match}"):
        train(model, Needs(), data, config)


def test_unknown_view_refused_before_compute(synthetic_pairs):
    data, config, model = _setup(synthetic_pairs)

    class Wants(CLIP):
        views = ("pyramid",)

    with pytest.raises(ValueError, match="views"):
        train(model, Wants(), data, config)


def test_batch_view_and_side_refuse_bad_names(synthetic_pairs):
    from vlp_lib.methods import Batch

    data, _, _ = synthetic_pairs
    idx = np.arange(4)
    batch = Batch(
        torch.zeros(4, 3, 32, 32),
        data.tokens[idx],
        idx,
        idx,
        0,
        1,
        data=data,
        view_fn=lambda name, draw: torch.zeros(4, 3, 32, 32),
    )
    with pytest.raises(ValueError, match="view"):
        batch.view("pyramid")
    with pytest.raises(ValueError, match="boxes"):
        batch.side("boxes")
    with pytest.raises(ValueError, match="of"):
        batch.side("boxes", of="caption")
    assert "boxes" not in batch.extra and len(batch.extra) == 0


def test_default_sampler_is_the_historical_order(synthetic_pairs):
    from vlp_lib.data.sampler import EpisodeSampler

    histories = []
    for sampler in (None, EpisodeSampler(paired=True)):
        data, config, model = _setup(synthetic_pairs, seed=2, epochs=1, batch_size=32)
        result = train(model, CLIP(), data, config, sampler=sampler)
        histories.append(result.history)
        assert result.extra["samples_seen"] == {"data": len(result.history) * config.batch_size}
    assert histories[0] == histories[1]


def test_unpaired_sampler_feeds_texts_in_their_own_order(synthetic_pairs):
    from vlp_lib.data.sampler import EpisodeSampler

    data, config, model = _setup(synthetic_pairs, epochs=1, batch_size=32)
    method = _Recorder()
    method.required_extras = ("teacher_text",)
    data.extra["teacher_text"] = np.arange(len(data)) * 10
    paired = _Recorder()
    train(model, method, _with_extras(data), config, sampler=EpisodeSampler(paired=False))
    data2, config2, model2 = _setup(synthetic_pairs, epochs=1, batch_size=32)
    train(model2, paired, _with_extras(data2), config2)
    for s, p in zip(method.seen, paired.seen):
        assert np.array_equal(s["indices"], p["indices"])  # the images of the paired run
        assert not np.array_equal(s["text_indices"], s["indices"])
        assert torch.equal(s["texts"], data.tokens[s["text_indices"]])


def test_mixed_sampler_batches_and_accounting(synthetic_pairs):
    from vlp_lib.data.sampler import MixedSampler

    data, config, model = _setup(synthetic_pairs, epochs=1)
    pools = {"class": np.arange(0, 16), "paired": np.arange(16, 64)}
    method = _Recorder()
    method.required_extras = ()
    result = train(model, method, _with_extras(data), config, sampler=MixedSampler(pools, ratio=0.25))
    for s in method.seen:
        assert list(s["source"]) == ["class"] * 4 + ["paired"] * 12  # round(0.25 * 16) rows, then the rest
        assert (s["indices"][:4] < 16).all() and (s["indices"][4:] >= 16).all()
    steps = len(result.history)
    assert result.extra["samples_seen"] == {"class": 4 * steps, "paired": 12 * steps}
