"""ICMLM's objectives (Sariyildiz et al., ECCV 2020): tag prediction ℓ_tp and image-conditioned masked language
modelling ℓ_mlm, combined by main-paper Eq. 8 as ℓ = ℓ_mlm + λ ℓ_tp.

Reconstruction: the main paper (Eq. 7 for ℓ_mlm, Sec. 3.1 for ℓ_tp, Eq. 8) could not be read; the supplement names
the terms and λ (Supp B: "Eq. 8 ... a combination of ℓ_tp and ℓ_mlm", λ ∈ {0, 0.1, 1}, λ = 0 leaves ℓ_mlm alone)
but not their forms. The forms here are the standard ones, with the alternative readings as options:

- ℓ_tp is multi-label binary cross-entropy over the K tags (``kind="bce"``) or a softmax cross-entropy against
  the multi-hot target normalised to sum 1 (``kind="softmax"``, the weakly-supervised tag-prediction form);
  BCE is averaged over tags and images (``reduction="mean"``, PyTorch's default) or summed over tags and averaged
  over images (``reduction="sum"``), which changes its scale against ℓ_mlm by a factor K;
- ℓ_mlm is the cross-entropy of the hidden token at the masked position (one masked token per triplet,
  Supp F.1), over whatever vocabulary the caller's logits span.

Across processes (``vlp_lib.distributed``; the trainer's step passes ``global_batch=True``) a term that is a mean
over items whose number differs from rank to rank (the captions with a maskable token for ℓ_mlm, the tagged images
for the softmax ℓ_tp) is this rank's mean times ``distributed.share`` of its count, i.e. (the sum over its items) /
(the global count) x world size, so that the mean over ranks, DDP's gradient average and the logged term, is the
one-process mean over the global batch; the BCE ℓ_tp averages over every row, as many on each rank, and needs
nothing. In one process the factor is exactly 1: the loss is unchanged, bit for bit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vlp_lib import distributed
from vlp_lib.losses.soft import soft_contrastive

TP_KINDS = ("bce", "softmax")
REDUCTIONS = ("mean", "sum")


def check_tp_options(kind: str, reduction: str) -> None:
    """``ValueError`` naming ``tp_loss`` / ``tp_reduction`` for an unknown form of ℓ_tp."""
    if kind not in TP_KINDS:
        raise ValueError(f"tp_loss must be one of {TP_KINDS}, got {kind!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"tp_reduction must be one of {REDUCTIONS}, got {reduction!r}")


def tp_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    kind: str = "bce",
    reduction: str = "mean",
    global_batch: bool = False,
) -> torch.Tensor:
    """ℓ_tp of TP_* (main Sec. 3.1, Supp A) and of main Eq. 8: tag prediction from the pooled visual features.

    ``logits`` ``[B, K]`` (a linear classifier on GAP(X)), ``targets`` ``[B, K]`` multi-hot (an image's tags, its
    ground-truth classes for TP_Label or its captions' clusters for TP_Cluster).

    - ``kind="bce"``: ``-[y log σ(s) + (1 - y) log(1 - σ(s))]`` per tag, averaged over the B·K entries
      (``reduction="mean"``) or summed over the K tags and averaged over the B images (``"sum"``);
    - ``kind="softmax"``: ``-Σ_k (y_k / Σ_j y_j) log softmax(s)_k`` (``losses.soft.soft_contrastive``), averaged
      over the images with at least one tag (an image without tags has no target distribution; 0 if none has).

    ``global_batch``: across processes, this rank's share of the global batch's mean (the module docstring):
    every rank must call it (the count is reduced over ranks); evaluation on one rank leaves it False.
    """
    check_tp_options(kind, reduction)
    if logits.ndim != 2 or targets.shape != logits.shape:
        raise ValueError(
            f"logits and targets must be 2-D [B, K] of one shape, got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    targets = targets.to(logits.dtype)
    if kind == "bce":
        per_entry = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        # a mean over this rank's rows (and the K tags): every rank holds as many (distributed.check_batch), so
        # it is already this rank's share of the global mean, with global_batch or not
        return per_entry.mean() if reduction == "mean" else per_entry.sum(1).mean()
    counts = targets.sum(1)
    tagged = counts > 0
    factor = distributed.share(tagged.sum()) if global_batch else 1.0  # every rank reduces, with tags or not
    if not tagged.any():
        return logits.sum() * 0.0  # keeps the graph: a batch without tags adds nothing
    return soft_contrastive(logits[tagged], targets[tagged] / counts[tagged, None]) * factor


def mlm_loss(logits: torch.Tensor, targets: torch.Tensor, global_batch: bool = False) -> torch.Tensor:
    """ℓ_mlm (main Eq. 7): ``-log p(w_m | image, caption without w_m)``, the cross-entropy of the hidden token at
    the masked position, averaged over the triplets. ``logits`` ``[M, V]``, ``targets`` ``[M]`` class indices into
    the V candidates; a target of -100 (a caption without a maskable token) is ignored; 0 if all are.
    ``global_batch``: across processes, this rank's share of the mean over the global batch's masked tokens (the
    module docstring; every rank must call it)."""
    if logits.ndim != 2 or targets.ndim != 1 or len(targets) != len(logits):
        raise ValueError(f"logits must be [M, V] and targets [M], got {tuple(logits.shape)} and {tuple(targets.shape)}")
    present = targets != -100
    factor = distributed.share(present.sum()) if global_batch else 1.0  # every rank reduces, masked tokens or not
    if not present.any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits, targets, ignore_index=-100) * factor


def icmlm_loss(mlm: torch.Tensor, tp: torch.Tensor, lam: float) -> torch.Tensor:
    """Main Eq. 8 as the supplement describes it (Supp B: λ = 0 leaves "ℓ_mlm defined by Eq. 7" alone):
    ``ℓ = ℓ_mlm + λ ℓ_tp``, λ >= 0 (0.1 for ResNet-50, 1.0 for VGG16)."""
    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam!r}")
    return mlm + lam * tp if lam else mlm
