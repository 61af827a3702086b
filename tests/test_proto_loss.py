"""ProtoCLIP's prototypical loss (Eqs. 3-4, 8) against its direct formula."""

import math

import pytest
import torch
import torch.nn.functional as F

from vlp_lib.papers.protoclip.loss import proto_loss, proto_loss_pair
from vlp_lib.papers.protoclip.prototypes import pbt, soft_targets


def _batch(b=16, k=10, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    feats = F.normalize(torch.randn(b, d, generator=g, dtype=torch.float64), dim=1)
    centroids = F.normalize(torch.randn(k, d, generator=g, dtype=torch.float64), dim=1) * 0.9
    targets = torch.softmax(torch.randn(b, k, generator=g, dtype=torch.float64) * 3, dim=1)
    return feats, centroids, targets


def test_proto_loss_matches_direct_formula():
    feats, centroids, targets = _batch()
    scale = 1 / 0.07
    expected = 0.0
    for i in range(len(feats)):
        scores = [scale * float(feats[i] @ c) for c in centroids]  # Eq. 3: S_i = C . h_i, p_i = softmax(S_i / tau)
        log_z = math.log(sum(math.exp(s) for s in scores))
        expected -= sum(float(targets[i, k]) * (scores[k] - log_z) for k in range(len(centroids)))  # Eq. 4
    expected /= len(feats)
    assert proto_loss(feats, centroids, targets, scale).item() == pytest.approx(expected, rel=1e-10)


def test_one_hot_targets_equal_cross_entropy():
    feats, centroids, _ = _batch(b=32, k=7)
    labels = torch.randint(0, 7, (32,), generator=torch.Generator().manual_seed(1))
    scale = torch.tensor(14.0, dtype=torch.float64)
    logits = scale * feats @ centroids.T
    expected = F.cross_entropy(logits, labels)
    one_hot = soft_targets(centroids, labels, 0)
    torch.testing.assert_close(proto_loss(feats, centroids, one_hot, scale), expected)
    torch.testing.assert_close(proto_loss(feats, centroids, labels, scale), expected)  # integer ids: same loss


def test_gradients_reach_features_and_scale_not_prototypes_or_targets():
    feats, centroids, targets = _batch()
    feats.requires_grad_(True)
    centroids.requires_grad_(True)  # even a live tensor is treated as a constant prototype (Sec. III-A)
    targets.requires_grad_(True)
    log_scale = torch.tensor(math.log(1 / 0.07), dtype=torch.float64, requires_grad=True)
    proto_loss(feats, centroids, targets, log_scale.exp()).backward()
    assert feats.grad is not None and feats.grad.abs().sum() > 0
    assert log_scale.grad is not None and log_scale.grad != 0
    assert centroids.grad is None and targets.grad is None


def test_pair_is_mean_of_both_directions_with_pbt_prototypes():
    g = torch.Generator().manual_seed(3)
    n, k, d = 64, 6, 8
    img = F.normalize(torch.randn(n, d, generator=g), dim=1)
    txt = F.normalize(torch.randn(n, d, generator=g), dim=1)
    img_labels = torch.randint(0, k, (n,), generator=g)
    txt_labels = torch.randint(0, k, (n,), generator=g)
    img_protos, txt_protos = pbt(img, img_labels, k), pbt(txt, txt_labels, k)  # stand-ins for K-Means centroids
    # image -> text: image features against text prototypes translated into image space (Eq. 7)
    img_centroids, txt_centroids = pbt(img, txt_labels, k), pbt(txt, img_labels, k)
    y_t, y_i = soft_targets(txt_protos, txt_labels, 0.01), soft_targets(img_protos, img_labels, 0.01)
    pair = proto_loss_pair(img, txt, img_centroids, txt_centroids, y_t, y_i, 10.0)
    expected = (proto_loss(img, img_centroids, y_t, 10.0) + proto_loss(txt, txt_centroids, y_i, 10.0)) / 2
    torch.testing.assert_close(pair, expected)
    assert pair.ndim == 0 and torch.isfinite(pair)


def test_bad_shapes_raise():
    feats, centroids, targets = _batch()
    with pytest.raises(ValueError, match="student_centroids"):
        proto_loss(feats, centroids[:, :4], targets, 1.0)
    with pytest.raises(ValueError, match="targets"):
        proto_loss(feats, centroids, targets[:, :3], 1.0)
    with pytest.raises(ValueError, match="targets"):
        proto_loss(feats, centroids, torch.zeros(3, dtype=torch.long), 1.0)
