"""PyramidCLIP (``vlp_lib.papers.pyramidclip.method``): the ROI branch, the loss of Eq. 6 and its side data, bad input."""

import numpy as np
import pytest
import torch

from vlp_lib import experiment
from vlp_lib.data import training
from vlp_lib.losses.clip import clip_loss
from vlp_lib.methods import create_method
from vlp_lib.methods.base import Batch
from vlp_lib.models import create_model
from vlp_lib.papers.pyramidclip.method import FULL_WEIGHTS, TERMS, RoiEncoder
from vlp_lib.papers.pyramidclip.summaries import summarize_all

SMOKE = dict(
    train_size=64,
    epochs=1,
    batch_size=32,
    warmup_steps=1,
    task_train=40,
    task_test=20,
    retrieval_images=10,
    eval_tasks=["shapes10"],
)
TINY_DETECTOR = 60


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("model_name", ["rn-tiny", "vit-tiny"])
def test_roi_branch_ignores_padding_and_roi_order(model_name):
    model = create_model(model_name, 64, 8, image_size=32, seed=0)
    encoder = RoiEncoder(model.visual, roi_dim=68).eval()
    rois = torch.randn(4, 3, 68, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[True, True, True], [True, False, False], [True, True, False], [True, True, True]])
    out = encoder(model.visual, rois, mask)
    assert out.shape == (4, model.text_projection.shape[1])
    changed = rois.clone()
    changed[~mask] = 100.0  # padding slots carry garbage
    torch.testing.assert_close(encoder(model.visual, changed, mask), out, atol=1e-5, rtol=1e-5)
    permuted = rois[:, [2, 0, 1]]  # no positional embedding (§3.3): the ROI set, not its order, matters
    full = mask.all(1)
    torch.testing.assert_close(
        encoder(model.visual, permuted, mask[:, [2, 0, 1]])[full], out[full], atol=1e-5, rtol=1e-5
    )


def _batch(model, n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    images = torch.randn(n, 3, 32, 32, generator=g)
    texts = torch.randint(3, 60, (n, 8), generator=g)
    return Batch(images=images, texts=texts, indices=np.arange(n), positions=np.arange(n), step=0, total_steps=1)


def test_clip_term_at_alpha_zero_is_the_clip_loss():
    model = create_model("rn-tiny", 64, 8, image_size=32, seed=0)
    batch = _batch(model)
    method = create_method("pyramidclip", weights={"clip": 1.0}, alpha=0.0)
    loss, logs = method.loss(model, batch)
    out = model(batch.images, batch.texts)
    torch.testing.assert_close(
        loss, clip_loss(out["image_features"], out["text_features"], out["logit_scale"]), atol=1e-5, rtol=1e-5
    )
    assert set(logs) == {"loss_clip", "logit_scale"}


def test_method_declares_the_side_data_and_views_its_terms_read():
    model = create_model("rn-tiny", 64, 8, image_size=32, seed=0)
    full = create_method("pyramidclip", visual=model.visual)
    assert set(full.required_extras) == {"summary_tokens", "rois", "roi_mask"} and full.views == ("local",)
    lt = create_method("pyramidclip", weights={"lt": 1.0})
    assert lt.required_extras == () and lt.views == ("local",) and lt.roi is None
    assert set(FULL_WEIGHTS) == {"gs", "lt", "rs", "rt"} and set(TERMS) >= set(FULL_WEIGHTS)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"weights": {"gs": 0.5, "lt": 0.4}}, "weights"),
        ({"weights": {"gs": 0.5, "xx": 0.5}}, "weights"),
        ({"weights": {"gs": 1.5, "lt": -0.5}}, "weights"),
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
        ({"summary": "t5"}, "summary"),
        ({"detector": "vinvl"}, "detector"),
        ({"detector_images": 10}, "detector_images"),
        ({"views": ["local"]}, "unknown"),
    ],
)
def test_bad_arguments_are_refused_before_any_compute(kwargs, param, monkeypatch):
    monkeypatch.setattr(training, "generate", lambda *a, **k: pytest.fail("generated data for a bad config"))
    with pytest.raises(ValueError, match=param):
        experiment.make_config("smoke", method="pyramidclip", method_kwargs=kwargs, **SMOKE)


def test_full_pyramidclip_trains_through_the_experiment_and_evaluates_on_full_images():
    config = experiment.make_config(
        "smoke",
        method="pyramidclip",
        seed=0,
        augmentation="none",
        method_kwargs={"detector_images": TINY_DETECTOR},
        **SMOKE,
    )
    record = experiment.run(config, progress=False, verbose=False)
    history = record["history"]
    assert {"loss_gs", "loss_lt", "loss_rs", "loss_rt"} <= set(history[0])
    assert np.isfinite([h["loss"] for h in history]).all()
    assert "shapes10/zeroshot_top1" in record["metrics"]  # inference: the full image and caption only


def test_summaries_and_rois_become_side_data_of_the_training_pairs():
    config = experiment.make_config(
        "smoke",
        method="pyramidclip",
        seed=0,
        method_kwargs={"detector_images": TINY_DETECTOR, "detector": "untrained"},
        **SMOKE,
    )
    data, tokenizer, model = experiment.build(config)
    kwargs = experiment.method_arguments(config, data, model, tokenizer)
    assert kwargs["visual"] is model.visual
    assert data.extra["summary_tokens"].shape == data.tokens.shape
    assert data.extra["rois"].shape == (len(data), 3, 68) and data.extra["roi_mask"].any(1).all()
    torch.testing.assert_close(data.extra["summary_tokens"], tokenizer(summarize_all(data.captions)))


def test_detection_stand_in_probes_score_a_model_and_have_chance_levels():
    from vlp_lib.suite import EvalConfig, chance_levels, evaluate_suite

    model = create_model("rn-tiny", 64, 8, image_size=32, seed=0)
    config = EvalConfig(
        tasks=("presence", "relation"),
        scale="smoke",
        task_train=120,
        task_test=60,
        retrieval_images=10,
        seed=0,
    )
    metrics = evaluate_suite(model, None, config, text_tower=False)
    chance = chance_levels(config, text_tower=False)
    assert set(metrics) == set(chance) == {"presence/map", "relation/linear"}
    assert 0 < metrics["presence/map"] <= 1 and 0 <= metrics["relation/linear"] <= 1
    assert 0 < chance["presence/map"] < 0.3 and 0.2 <= chance["relation/linear"] <= 0.5
