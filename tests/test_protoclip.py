"""ProtoCLIP end to end: two tiny episodes through the one trainer, and its config checks."""

import numpy as np
import pytest

from vlp_lib import experiment
from vlp_lib.models import create_model
from vlp_lib.papers.protoclip.method import ProtoCLIP
from vlp_lib.train import TrainConfig, train

TINY = dict(train_size=96, batch_size=16, task_train=60, task_test=40, retrieval_images=20, eval_tasks=["shapes10"])


def test_two_episodes_end_to_end(synthetic_pairs):
    data, vocab, ctx = synthetic_pairs
    model = create_model("rn-tiny", vocab, ctx, seed=0)
    external = np.random.default_rng(0).normal(size=(len(data), 8)).astype(np.float32)
    method = ProtoCLIP(
        embed_dim=128,
        head_hidden=32,
        head_dim=16,
        images_per_prototype=4,
        target_temperature=0.01,
        external_features=external,
    )
    config = TrainConfig(epochs=2, batch_size=16, episode_size=32, warmup_steps=1, progress=False)
    result = train(model, method, data, config)
    # 2 epochs of 64 pairs in episodes of 32 pairs = 4 episodes, 2 steps each
    assert len(result.history) == 8
    assert {"loss_clip", "loss_proto", "loss_external"} <= set(result.history[0])
    assert all(np.isfinite(h["loss"]) for h in result.history)
    for stage in ("feature_extraction", "kmeans", "pbt", "training"):
        assert result.timings[stage] > 0
    s = method.state
    assert s["classifier_i"].shape == (8, 16) and s["labels_t"].shape == (32,)
    # PBT (Eq. 7): the image classifier row j is the mean of the image features of text prototype j
    assert method.proto_logit_scale.exp().item() <= 100.0 + 1e-4


def test_warmup_episodes_train_clip_only(synthetic_pairs):
    data, vocab, ctx = synthetic_pairs
    model = create_model("rn-tiny", vocab, ctx, seed=0)
    method = ProtoCLIP(embed_dim=128, head_hidden=32, head_dim=16, images_per_prototype=4, warmup_episodes=2)
    history = train(
        model, method, data, TrainConfig(epochs=1, batch_size=16, episode_size=32, warmup_steps=1, progress=False)
    ).history
    assert all("loss_proto" not in h for h in history)


def test_proto_only_without_clip(synthetic_pairs):
    data, vocab, ctx = synthetic_pairs
    model = create_model("rn-tiny", vocab, ctx, seed=0)
    method = ProtoCLIP(embed_dim=128, head_hidden=32, head_dim=16, images_per_prototype=4, clip_weight=0.0)
    history = train(
        model, method, data, TrainConfig(epochs=1, batch_size=16, episode_size=32, warmup_steps=1, progress=False)
    ).history
    assert all("loss_clip" not in h and "loss_proto" in h for h in history)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"k": 10_000}, "k"),
        ({"k": 0}, "k"),
        ({"target_temperature": "warm"}, "target_temperature"),
        ({"external_teacher": "roberta"}, "external_teacher"),
        ({"images_per_prototype": 0}, "images_per_prototype"),
        ({"kmeans_init": "spectral"}, "kmeans_init"),
        ({"colour": 1}, "colour"),
    ],
)
def test_bad_protoclip_arguments_refused(kwargs, param):
    with pytest.raises(ValueError, match=param):
        experiment.make_config("smoke", method="protoclip", method_kwargs=kwargs, **TINY)


def test_protoclip_run_through_experiment():
    config = experiment.make_config(
        "smoke",
        method="protoclip",
        episode_size=48,
        epochs=2,
        method_kwargs={"images_per_prototype": 6, "head_hidden": 32, "head_dim": 16},
        **TINY,
    )
    record = experiment.run(config, progress=False)
    assert {"feature_extraction", "kmeans", "pbt", "training"} <= set(record["timings"])
    assert np.isfinite(record["metrics"]["shapes10/linear"])


def test_infonce_warmup_and_locked_image_phase_train_clip_alone(synthetic_pairs):
    """Official recipe: the first episode and the LiT phase train L_CLIP alone at weight 1, even for the
    L_Proto-only ablation; no K-Means runs in an episode that is wholly locked."""
    data, vocab, ctx = synthetic_pairs
    model = create_model("rn-tiny", vocab, ctx, seed=0)
    method = ProtoCLIP(
        embed_dim=128, head_hidden=32, head_dim=16, images_per_prototype=4, clip_weight=0.0, warmup_episodes=1
    )
    config = TrainConfig(
        epochs=4, batch_size=16, episode_size=32, warmup_steps=1, image_lock_fraction=0.5, progress=False
    )
    history = train(model, method, data, config).history
    by_episode = {}
    for h in history:
        by_episode.setdefault(h["episode"], []).append(h)
    assert len(by_episode) == 8
    clip_only = [e for e, hs in by_episode.items() if all("loss_clip" in h and "loss_proto" not in h for h in hs)]
    proto_only = [e for e, hs in by_episode.items() if all("loss_proto" in h and "loss_clip" not in h for h in hs)]
    assert clip_only == [0, 4, 5, 6, 7] and proto_only == [1, 2, 3]


def test_external_teacher_term_uses_one_hot_targets(synthetic_pairs, monkeypatch):
    from vlp_lib.papers.protoclip import method as protoclip

    temperatures = []
    real = protoclip.soft_targets
    monkeypatch.setattr(protoclip, "soft_targets", lambda c, y, tau: temperatures.append(tau) or real(c, y, tau))
    data, vocab, ctx = synthetic_pairs
    model = create_model("rn-tiny", vocab, ctx, seed=0)
    external = np.random.default_rng(0).normal(size=(len(data), 8)).astype(np.float32)
    method = ProtoCLIP(
        embed_dim=128,
        head_hidden=32,
        head_dim=16,
        images_per_prototype=4,
        target_temperature=0.01,
        external_features=external,
    )
    train(model, method, data, TrainConfig(epochs=1, batch_size=16, episode_size=32, warmup_steps=1, progress=False))
    # per step: image and text targets at tau_y, the external ones one-hot
    assert temperatures and temperatures[:3] == [0.01, 0.01, 0.0]
