"""Tests of vlp_lib.losses.soft: the soft-target contrastive loss, its target builders and PyramidCLIP Eqs. 1-5."""

from __future__ import annotations

import math

import open_clip
import pytest
import torch
import torch.nn.functional as F

from vlp_lib.losses.soft import multi_positive_targets, smoothed_targets, soft_contrastive, soft_info_nce


def features(n: int = 16, d: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    img = F.normalize(torch.randn(n, d, generator=g), dim=-1)
    txt = F.normalize(torch.randn(n, d, generator=g), dim=-1)
    return img, txt


@pytest.mark.parametrize("scale", [1.0, 1 / 0.07, 100.0])
def test_alpha_zero_is_open_clip_clip_loss(scale):
    img, txt = features()
    logit_scale = torch.tensor(scale)
    expected = open_clip.loss.ClipLoss()(img, txt, logit_scale)
    for literal in (True, False):
        got = soft_info_nce(img, txt, logit_scale, alpha=0.0, literal=literal)
        # 1e-6 absolute, relative for large losses: at scale 100 random pairs give a loss ~54, where one float32
        # ulp is 4e-6 and the two reduction orders (cross_entropy vs log_softmax * targets) may differ by one
        assert torch.allclose(got, expected, atol=1e-6, rtol=1e-6), (literal, got.item(), expected.item())


def test_identity_targets_are_cross_entropy():
    g = torch.Generator().manual_seed(1)
    logits = 5.0 * torch.randn(12, 12, generator=g)
    assert torch.allclose(
        soft_contrastive(logits, torch.eye(12)), F.cross_entropy(logits, torch.arange(12)), atol=1e-6, rtol=0
    )
    # non-square (B queries against C candidates) and general one-hot targets
    logits = torch.randn(6, 10, generator=g)
    labels = torch.tensor([3, 0, 9, 9, 1, 5])
    assert torch.allclose(
        soft_contrastive(logits, F.one_hot(labels, 10).float()), F.cross_entropy(logits, labels), atol=1e-6, rtol=0
    )


def test_soft_contrastive_matches_the_formula_and_ignores_masked_zero_targets():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(5, 7, generator=g, dtype=torch.float64)
    targets = torch.rand(5, 7, generator=g, dtype=torch.float64)
    targets = targets / targets.sum(1, keepdim=True)
    manual = -(targets * (logits - logits.logsumexp(1, keepdim=True))).sum(1).mean()
    assert torch.allclose(soft_contrastive(logits, targets), manual, atol=1e-12, rtol=0)
    # a masked candidate (-inf logit) with zero target weight: finite loss, as if the column were absent
    masked = logits.clone()
    masked[:, -1] = float("-inf")
    t = targets.clone()
    t[:, -1] = 0.0
    masked.requires_grad_()
    got = soft_contrastive(masked, t)
    assert torch.isfinite(got)
    got.backward()
    assert torch.isfinite(masked.grad).all() and (masked.grad[:, -1] == 0).all()
    assert torch.allclose(got, soft_contrastive(logits[:, :-1], t[:, :-1]), atol=1e-12, rtol=0)


def test_smoothed_targets_literal_and_normalised_values():
    n, alpha = 256, 0.2
    lit = smoothed_targets(n, alpha, literal=True, dtype=torch.float64)
    norm = smoothed_targets(n, alpha, literal=False, dtype=torch.float64)
    off = alpha / (n - 1)
    eye = torch.eye(n, dtype=torch.bool)
    assert torch.allclose(lit[eye], torch.full((n,), 1 - alpha + off, dtype=torch.float64))
    assert torch.allclose(norm[eye], torch.full((n,), 1 - alpha, dtype=torch.float64))
    assert torch.equal(lit[~eye], norm[~eye]) and torch.allclose(lit[~eye], torch.tensor(off, dtype=torch.float64))
    # the documented difference: alpha / (N - 1) = 7.8e-4 at the positive, nowhere else
    assert torch.allclose(lit - norm, off * torch.eye(n, dtype=torch.float64), atol=1e-15)
    assert math.isclose(off, 7.84e-4, rel_tol=1e-3)
    assert torch.allclose(lit.sum(1), torch.full((n,), 1 + off, dtype=torch.float64))
    assert torch.allclose(norm.sum(1), torch.ones(n, dtype=torch.float64))
    assert torch.equal(smoothed_targets(4, 0.0), torch.eye(4))
    assert torch.equal(smoothed_targets(1, 0.0), torch.ones(1, 1))


def test_soft_info_nce_is_the_mean_of_both_directions_with_smoothed_targets():
    img, txt = features(n=10, seed=3)
    scale, alpha = torch.tensor(1 / 0.07), 0.2
    for literal in (True, False):
        y = smoothed_targets(10, alpha, literal=literal)
        logits = scale * img @ txt.T
        # Eq. 5 with Eqs. 1-2 written out, the text->image logits computed from the text side
        p_a = F.log_softmax(logits, dim=1)
        p_b = F.log_softmax(scale * txt @ img.T, dim=1)
        expected = -(y * p_a + y * p_b).sum() / (2 * 10)
        got = soft_info_nce(img, txt, scale, alpha, literal=literal)
        assert torch.allclose(got, expected, atol=1e-5, rtol=0)
    # literal minus normalised: the extra alpha/(N-1) at the positive adds alpha/(N-1) * mean CE
    lit = soft_info_nce(img, txt, scale, alpha, literal=True)
    norm = soft_info_nce(img, txt, scale, alpha, literal=False)
    clip = soft_info_nce(img, txt, scale, 0.0)
    assert torch.allclose(lit - norm, alpha / 9 * clip, atol=1e-5, rtol=0)


def test_multi_positive_targets():
    labels = torch.tensor([2, 0, 2, 1, 2])
    t = multi_positive_targets(labels)
    assert torch.allclose(t.sum(1), torch.ones(5))
    assert torch.allclose(t[0], torch.tensor([1 / 3, 0, 1 / 3, 0, 1 / 3]))
    assert torch.allclose(t[1], torch.tensor([0.0, 1, 0, 0, 0]))
    assert torch.equal(multi_positive_targets(torch.tensor([4, 1, 7, 0])), torch.eye(4))
    # all-distinct labels: soft_contrastive is plain InfoNCE
    img, txt = features(n=8, seed=4)
    logits = 10.0 * img @ txt.T
    assert torch.allclose(
        soft_contrastive(logits, multi_positive_targets(torch.arange(8) * 3)),
        F.cross_entropy(logits, torch.arange(8)),
        atol=1e-6,
        rtol=0,
    )


def test_gradients_flow():
    img, txt = features(n=6, seed=5)
    img, txt = img.clone().requires_grad_(), txt.clone().requires_grad_()
    log_scale = torch.tensor(math.log(1 / 0.07), requires_grad=True)
    loss = soft_info_nce(img, txt, log_scale.exp(), alpha=0.2)
    loss.backward()
    for g in (img.grad, txt.grad, log_scale.grad):
        assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0
    logits = torch.randn(4, 5, requires_grad=True)
    soft_contrastive(logits, torch.full((4, 5), 0.2)).backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    # with targets that sum to 1 the gradient w.r.t. each row of logits is softmax - targets
    assert torch.allclose(logits.grad, (logits.softmax(1) - 0.2) / 4, atol=1e-6)


@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5, float("nan")])
def test_bad_alpha_raises(alpha):
    img, txt = features(n=4)
    with pytest.raises(ValueError, match="alpha"):
        soft_info_nce(img, txt, 10.0, alpha)
    with pytest.raises(ValueError, match="alpha"):
        smoothed_targets(4, alpha)


def test_bad_shapes_name_the_parameter():
    with pytest.raises(ValueError, match="logits"):
        soft_contrastive(torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match="targets"):
        soft_contrastive(torch.zeros(3, 4), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="text_features"):
        soft_info_nce(torch.zeros(4, 8), torch.zeros(5, 8), 10.0, 0.1)
    with pytest.raises(ValueError, match="n"):
        smoothed_targets(0, 0.1)
    with pytest.raises(ValueError, match="n must be at least 2"):
        smoothed_targets(1, 0.1)
    with pytest.raises(ValueError, match="labels"):
        multi_positive_targets(torch.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="labels"):
        multi_positive_targets(torch.zeros(2, 2, dtype=torch.long))
