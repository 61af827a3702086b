"""Soft-target contrastive losses: one cross-entropy against a target distribution, and its target builders.

Every soft-target contrastive loss of the book is the same quantity,

    loss = -1/B sum_i sum_j targets_ij * log_softmax(logits)_ij,

with different targets:

- ``smoothed_targets``: PyramidCLIP's label smoothing of the in-batch identity (Eqs. 3-4), read literally or
  normalised; ``soft_info_nce`` is PyramidCLIP's softened InfoNCE (Eqs. 1-5) built on it;
- ``multi_positive_targets``: rows uniform over the samples that share a label (UniCL / iCLIP style);
- a teacher's distributions (DIME-FM) or ProtoCLIP's prototype targets (``losses/proto.py``, Eq. 5), which
  callers pass in directly.

With identity targets ``soft_contrastive`` is ``F.cross_entropy`` against ``arange(B)``, and ``soft_info_nce``
at ``alpha = 0`` is open_clip's ``ClipLoss`` (ProtoCLIP Eq. 1).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from vlp_lib import distributed


def soft_contrastive(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Batch mean of the row-wise soft cross-entropy ``-sum_j targets_ij * log_softmax(logits)_ij``.

    ``logits`` ``[B, C]`` (B queries against C candidates), ``targets`` ``[B, C]`` non-negative weights, usually
    rows summing to 1 (PyramidCLIP's literal smoothing sums to ``1 + alpha / (N - 1)``; nothing renormalises
    them here). A zero target contributes exactly zero, also where the logit is ``-inf`` (a masked candidate).
    Targets are used as given: detach them when they are constants of the step (teacher outputs, prototypes).
    ``log_softmax`` keeps large logit scales (up to 100) stable.
    """
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D [B, C], got shape {tuple(logits.shape)}")
    if targets.shape != logits.shape:
        raise ValueError(f"targets must have the shape of logits {tuple(logits.shape)}, got {tuple(targets.shape)}")
    weighted = targets.to(logits.dtype) * F.log_softmax(logits, dim=1)
    # 0 * -inf would be nan: a candidate with zero target weight adds nothing, whatever its logit
    weighted = torch.where(targets != 0, weighted, torch.zeros((), dtype=weighted.dtype, device=weighted.device))
    return -weighted.sum(1).mean()


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must lie in [0, 1), got {alpha}")
    return alpha


def smoothed_targets(
    n: int,
    alpha: float,
    literal: bool = True,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """PyramidCLIP Eqs. 3-4: the in-batch identity targets y smoothed by ``alpha``, an ``[n, n]`` tensor.

    ``literal=True`` reads ỹ = (1 - alpha) * y + alpha / (N - 1) as written: the positive (diagonal) gets
    ``1 - alpha + alpha / (N - 1)``, each negative ``alpha / (N - 1)``, and a row sums to ``1 + alpha / (N - 1)``.
    ``literal=False`` is the normalised variant: the positive gets ``1 - alpha``, each negative
    ``alpha / (N - 1)``, and a row sums to 1. The two differ by ``alpha / (N - 1)`` at the positive only
    (7.8e-4 at alpha = 0.2, N = 256). The paper uses alpha = 0.2. ``alpha = 0`` gives the identity for both.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    n = int(n)
    alpha = _check_alpha(alpha)
    if n == 1 and alpha > 0:
        raise ValueError("n must be at least 2 when alpha > 0 (alpha / (N - 1) spreads alpha over the negatives)")
    off = alpha / (n - 1) if alpha > 0 else 0.0
    positive = (1.0 - alpha) + off if literal else 1.0 - alpha
    targets = torch.full((n, n), off, device=device, dtype=dtype)
    targets.fill_diagonal_(positive)
    return targets


def multi_positive_targets(labels: torch.Tensor, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Targets ``[N, N]`` uniform over the samples sharing a label (UniCL / iCLIP style).

    ``targets_ij = [labels_i == labels_j] / #{k : labels_k == labels_i}``: every row sums to 1 and includes the
    sample itself, so all-distinct labels give the identity (plain InfoNCE). The matrix is symmetric in its
    support, so the same targets serve the image->text and text->image directions of a batch whose images
    and texts carry the same labels. On the device of ``labels``.
    """
    if not isinstance(labels, torch.Tensor):
        raise ValueError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D [N], got shape {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.is_complex():
        raise ValueError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    same = (labels.view(-1, 1) == labels.view(1, -1)).to(dtype)
    return same / same.sum(1, keepdim=True)


def soft_info_nce(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    logit_scale: torch.Tensor | float,
    alpha: float,
    literal: bool = True,
) -> torch.Tensor:
    """PyramidCLIP's softened InfoNCE, Eqs. 1-5: the mean of the image->text and text->image soft cross-entropies.

    ``p^A = softmax_j(logit_scale * v_i . l_j)`` (Eq. 1) and ``p^B = softmax_j(logit_scale * l_i . v_j)`` (Eq. 2),
    with ``logit_scale`` = 1 / tau the already-exponentiated scale (as open_clip's ``ClipLoss`` takes it) and
    features L2-normalised by the caller. Both directions use ``smoothed_targets(N, alpha, literal)``
    (Eqs. 3-4), and the loss is ``-1/(2N) sum_ij (ỹ^A_ij log p^A_ij + ỹ^B_ij log p^B_ij)`` (Eq. 5). ``alpha = 0``
    is ``ClipLoss``. Across processes (``vlp_lib.distributed``) N is the global batch. Every term of
    PyramidCLIP's Eq. 6 (L_GS, L_LT, L_RS, L_RT) is this function on a different pair of feature sets.
    """
    alpha = _check_alpha(alpha)
    if image_features.ndim != 2 or text_features.ndim != 2:
        raise ValueError(
            f"image_features and text_features must be 2-D [N, D], got shapes {tuple(image_features.shape)} "
            f"and {tuple(text_features.shape)}"
        )
    if image_features.shape != text_features.shape:
        raise ValueError(
            f"text_features must have the shape of image_features {tuple(image_features.shape)}, "
            f"got {tuple(text_features.shape)}"
        )
    # across processes this rank's rows are scored against every rank's (gathered with gradients, as open_clip's
    # ClipLoss with local_loss): the ranks' mean is the global batch's loss; in one process all rows are this rank's
    all_images = distributed.gather_with_grad(image_features)
    all_texts = distributed.gather_with_grad(text_features)
    rows = slice(*distributed.bounds(len(all_images)))
    targets = smoothed_targets(
        len(all_images), alpha, literal, device=image_features.device, dtype=image_features.dtype
    )[rows]
    # the smoothed targets are symmetric, so the text->image direction uses the same rows
    return 0.5 * (
        soft_contrastive(logit_scale * image_features @ all_texts.T, targets)
        + soft_contrastive(logit_scale * text_features @ all_images.T, targets)
    )
