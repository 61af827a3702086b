import math

import pytest
import torch

from vlp_lib.models import MAX_LOGIT_SCALE, available_models, clamp_logit_scale_, create_model, model_image_size


@pytest.mark.parametrize("name", ["vit-tiny", "rn-tiny"])
def test_cpu_presets_forward(name):
    model = create_model(name, vocab_size=50, context_length=8, seed=0)
    assert model_image_size(model) == 32
    images = torch.randn(4, 3, 32, 32)
    texts = torch.randint(3, 49, (4, 8))
    texts[:, -1] = 49
    out = model(images, texts)
    assert out["image_features"].shape == out["text_features"].shape == (4, 128)
    assert torch.allclose(out["image_features"].norm(dim=-1), torch.ones(4), atol=1e-5)
    # CLIP's temperature is initialised at 0.07
    assert math.isclose(model.logit_scale.exp().item(), 1 / 0.07, rel_tol=1e-5)
    assert model.token_embedding.num_embeddings == 50


def test_seed_fixes_initialisation():
    a = create_model("vit-tiny", 50, 8, seed=3).state_dict()
    b = create_model("vit-tiny", 50, 8, seed=3).state_dict()
    c = create_model("vit-tiny", 50, 8, seed=4).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_paper_presets_are_open_clip_configs():
    assert {"RN50", "ViT-B-32"} <= set(available_models())


def test_unknown_model_is_refused():
    with pytest.raises(ValueError, match="model"):
        create_model("resnet-9000", 50, 8)


def test_logit_scale_clamped_at_100():
    p = torch.nn.Parameter(torch.tensor(10.0))
    clamp_logit_scale_(p)
    assert p.item() == pytest.approx(MAX_LOGIT_SCALE)
    assert math.isclose(math.exp(MAX_LOGIT_SCALE), 100.0)
