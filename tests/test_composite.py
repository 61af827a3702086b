"""DIME-FM's model pieces: the ``rn-small`` teacher stand-in, ``create_model(..., embed_dim=...)`` for a student
with the teacher's embedding width, and ``CompositeCLIP`` (student image tower + frozen teacher text tower)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vlp_lib import eval as ev
from vlp_lib import experiment, suite
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.eval import common
from vlp_lib.models import (
    DEFAULT_PRECISION,
    CompositeCLIP,
    TextTower,
    available_models,
    count_parameters,
    create_model,
    image_embed_dim,
    model_image_size,
    text_embed_dim,
)

CAPTIONS = ["a red circle", "a small blue square on the left", "two green triangles", "a grey star"]


@pytest.fixture(scope="module")
def tokenizer():
    return world_tokenizer()


def _models(tokenizer, student_embed_dim=None):
    """A fresh rn-tiny student (eval mode) and rn-small teacher (eval mode) for the world tokenizer."""
    student = create_model(
        "rn-tiny", tokenizer.vocab_size, tokenizer.context_length, image_size=32, seed=0, embed_dim=student_embed_dim
    )
    teacher = create_model("rn-small", tokenizer.vocab_size, tokenizer.context_length, image_size=32, seed=1)
    return student.eval(), teacher.eval()


@pytest.fixture(scope="module")
def composite(tokenizer):
    student, teacher = _models(tokenizer)
    return CompositeCLIP(student, teacher).eval(), student, teacher


def _images(n=4, seed=0):
    return torch.randn(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------------------------------------------
# rn-small: the teacher stand-in


def test_rn_small_is_a_preset_larger_than_rn_tiny_in_both_towers(tokenizer):
    assert "rn-small" in available_models()
    assert DEFAULT_PRECISION["rn-small"] == "fp32"
    tiny, small = _models(tokenizer)
    # twice rn-tiny's ResNet width (the stem's first conv has width // 2 channels), the same embedding width
    assert small.visual.conv1.out_channels == 2 * tiny.visual.conv1.out_channels
    assert image_embed_dim(small) == text_embed_dim(small) == image_embed_dim(tiny) == 128
    assert count_parameters(small.visual) > 2 * count_parameters(tiny.visual)
    assert count_parameters(TextTower(small)) > count_parameters(TextTower(tiny))
    assert small.transformer.width > tiny.transformer.width and small.transformer.layers > tiny.transformer.layers
    # the text tower follows the tokenizer, not the config's placeholder vocabulary and context length
    assert small.token_embedding.num_embeddings == tokenizer.vocab_size
    assert small.context_length == tokenizer.context_length
    with torch.no_grad():
        out = small(_images(), tokenizer(CAPTIONS))
    assert out["image_features"].shape == out["text_features"].shape == (4, 128)
    assert model_image_size(small) == 32
    # a run config accepts it as the model (its precision is the CPU presets' fp32)
    config = experiment.make_config("smoke", model="rn-small")
    assert config.model == "rn-small" and config.train.precision == "fp32"


# --------------------------------------------------------------------------------------------------------------
# create_model's embed_dim


def test_embed_dim_override_sets_both_projections(tokenizer):
    model = create_model("rn-tiny", tokenizer.vocab_size, tokenizer.context_length, seed=0, embed_dim=64)
    assert image_embed_dim(model) == text_embed_dim(model) == 64
    with torch.no_grad():
        out = model(_images(2), tokenizer(CAPTIONS[:2]))
    assert out["image_features"].shape == out["text_features"].shape == (2, 64)


def test_embed_dim_of_the_config_is_the_default_model(tokenizer):
    args = ("rn-tiny", tokenizer.vocab_size, tokenizer.context_length)
    default = create_model(*args, seed=5).state_dict()
    explicit = create_model(*args, seed=5, embed_dim=128).state_dict()
    assert default.keys() == explicit.keys()
    assert all(torch.equal(default[k], explicit[k]) for k in default)


@pytest.mark.parametrize("bad", [0, -8, 1.5, "128", True])
def test_bad_embed_dim_is_refused_before_any_compute(bad, monkeypatch):
    import open_clip

    monkeypatch.setattr(open_clip, "create_model", lambda *a, **k: pytest.fail("built a model before validating"))
    with pytest.raises(ValueError, match="embed_dim"):
        create_model("rn-tiny", 50, 8, embed_dim=bad)


# --------------------------------------------------------------------------------------------------------------
# CompositeCLIP


def test_composite_encodes_images_with_the_image_model_and_texts_with_the_text_model(composite, tokenizer):
    comp, student, teacher = composite
    images, tokens = _images(), tokenizer(CAPTIONS)
    with torch.no_grad():
        for normalize in (False, True):
            assert torch.equal(
                comp.encode_image(images, normalize=normalize), student.encode_image(images, normalize=normalize)
            )
            assert torch.equal(
                comp.encode_text(tokens, normalize=normalize), teacher.encode_text(tokens, normalize=normalize)
            )
        # the text side is the teacher's, not the student's own text tower
        assert not torch.allclose(comp.encode_text(tokens), student.encode_text(tokens))
        out = comp(images, tokens)
    assert torch.equal(out["image_features"], F.normalize(student.encode_image(images), dim=-1))
    assert out["logit_scale"].item() == pytest.approx(100.0, rel=1e-6)


def test_composite_holds_only_the_student_image_tower_and_the_teacher_text_tower(composite):
    comp, student, teacher = composite
    assert comp.visual is student.visual
    assert count_parameters(comp) == count_parameters(student.visual) + count_parameters(TextTower(teacher))
    # DIME-FM's fixed logit scale: exp = 100, a buffer, not a trained parameter
    assert math.isclose(comp.logit_scale.exp().item(), 100.0, rel_tol=1e-6)
    assert "logit_scale" not in dict(comp.named_parameters())
    assert "logit_scale" in comp.state_dict()
    # what eval's helpers read
    assert ev.has_text_tower(comp)
    assert model_image_size(comp) == 32
    assert common._model_dtype(comp) == torch.float32
    assert image_embed_dim(comp) == text_embed_dim(comp) == comp.embed_dim == 128
    assert comp.context_length == teacher.context_length and comp.vocab_size == teacher.vocab_size


def test_text_tower_is_frozen_and_gets_no_gradient(tokenizer):
    student, teacher = _models(tokenizer)
    comp = CompositeCLIP(student, teacher)
    text_params = list(TextTower(teacher).parameters())
    assert text_params and not any(p.requires_grad for p in text_params)
    # the teacher's image tower is not part of the composite and is left as it was
    assert all(p.requires_grad for p in teacher.visual.parameters())
    # only the student's image tower is trainable
    trainable = {id(p) for p in comp.parameters() if p.requires_grad}
    assert trainable == {id(p) for p in student.visual.parameters()}
    comp.train()
    assert comp.visual.training and not comp.text.training
    out = comp(_images(8, seed=1), tokenizer(CAPTIONS * 2))
    assert not out["text_features"].requires_grad
    logits = out["logit_scale"] * out["image_features"] @ out["text_features"].T
    loss = F.cross_entropy(logits, torch.arange(8))
    loss.backward()
    assert all(p.grad is None for p in text_params)
    assert all(p.grad is None for p in teacher.visual.parameters())
    assert sum(float(p.grad.abs().sum()) for p in student.visual.parameters() if p.grad is not None) > 0


def test_mismatched_embed_dims_are_refused_before_freezing(tokenizer):
    student, teacher = _models(tokenizer, student_embed_dim=64)
    with pytest.raises(ValueError, match=r"image_model.*64.*text_model.*128"):
        CompositeCLIP(student, teacher)
    assert all(p.requires_grad for p in teacher.parameters())  # nothing was frozen
    # the student built with the teacher's width is accepted
    wide = create_model(
        "rn-tiny", tokenizer.vocab_size, tokenizer.context_length, seed=0, embed_dim=text_embed_dim(teacher)
    )
    assert CompositeCLIP(wide, teacher).embed_dim == 128


def test_models_without_the_needed_tower_are_refused(composite):
    _, student, teacher = composite
    with pytest.raises(ValueError, match="image_model"):
        CompositeCLIP(torch.nn.Linear(2, 2), teacher)
    with pytest.raises(ValueError, match="text_model"):
        CompositeCLIP(student, student.visual)


def test_composite_runs_the_evaluation_suite(composite, tokenizer):
    comp, student, _ = composite
    config = experiment.make_config("smoke", task_train=40, task_test=20, retrieval_images=10, eval_tasks=["shapes10"])
    metrics = suite.evaluate_suite(comp, tokenizer, config.eval)
    # zero-shot and retrieval, as for any CLIP: the keys of the chance levels, plus the modality gap
    assert set(metrics) == set(suite.chance_levels(config.eval)) | {"retrieval/modality_gap"}
    assert {"shapes10/zeroshot_top1", "shapes10/zeroshot_top5", "retrieval/mean_recall"} <= set(metrics)
    assert all(np.isfinite(v) for v in metrics.values())
    assert all(0.0 <= metrics[k] <= 1.0 for k in metrics if "zeroshot" in k or "R@" in k)
    # the probes see the student's image features: the same numbers as the student's image tower alone
    probes = suite.evaluate_suite(student, None, config.eval, text_tower=False)
    assert probes == {k: metrics[k] for k in probes}
    assert not comp.training  # evaluation gives the model back in the mode it was in
