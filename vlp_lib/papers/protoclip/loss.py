"""The prototypical loss of ProtoCLIP: L_Proto (Eqs. 3-4), with PBT prototypes (Eq. 7) and an external teacher (Eq. 8).

One direction (``proto_loss``) classifies student features with a prototype classifier (Eq. 3) and takes the
cross-entropy against the teacher's targets (Eq. 4, one of its two sums):

    p_i = softmax(logit_scale * h_i @ C_student^T),    loss = -1/B sum_i sum_k y_{i,k} log p_{i,k}

where ``logit_scale`` = 1 / tau_Proto is the exp of a learnable log-temperature (initialised at
log(1 / 0.07) and clamped at log(100) like CLIP's, Sec. IV-A-2). The pieces come from ``vlp_lib.cluster``:

- ``C_student``: the teacher modality's prototypes C^T (Eq. 3) or, with Prototype Back Translation, their
  within-modal centroids C^T_{PBT->I} = ``pbt(h^I, text_labels, K)`` (Eq. 7);
- ``y``: ``soft_targets(C^T, text_labels[batch], tau_y)`` (Eq. 5), one-hot with ``tau_y <= 0``.

Eq. 4 is the mean of the image->text and text->image directions (``proto_loss_pair``); Eq. 8 is the same pair
with an external teacher's prototypes (translated by PBT into both spaces) and its targets; Eq. 9 sums
L_Proto + L_CLIP + L_Proto^external. Eq. 4 writes sums over the M samples; training averages over the batch,
as the authors' code does (``nn.CrossEntropyLoss``), so the loss scale does not depend on the batch size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vlp_lib.losses.soft import soft_contrastive


def proto_loss(
    student_feats: torch.Tensor,
    student_centroids: torch.Tensor,
    targets: torch.Tensor,
    logit_scale: torch.Tensor | float,
) -> torch.Tensor:
    """ProtoCLIP Eqs. 3-4 for one direction: batch mean of ``-sum_k targets * log_softmax(logits)``.

    ``logits = logit_scale * student_feats @ student_centroids^T`` (Eq. 3); ``student_feats`` ``[B, d]`` are the
    (L2-normalised) projected features h, ``student_centroids`` ``[K, d]`` the prototype classifier (C^T, or
    C^T_{PBT->I} with PBT), ``targets`` ``[B, K]`` the teacher's target distributions y (Eq. 5; rows sum to 1)
    or ``[B]`` integer cluster ids for one-hot targets (the paper's "hardmax").

    Prototypes and targets are constants of the episode: K-Means, PBT and Eq. 5 run on cached, detached
    features (Sec. III-A: "this process is operated on detached representations"), so both are detached here
    and gradients reach only ``student_feats`` and ``logit_scale``. Zero prototypes (PBT's empty clusters) stay in
    the softmax with logit 0, as in the authors' code.
    """
    if student_feats.ndim != 2 or student_centroids.ndim != 2:
        raise ValueError(
            f"student_feats and student_centroids must be 2-D, got shapes {tuple(student_feats.shape)} "
            f"and {tuple(student_centroids.shape)}"
        )
    if student_feats.shape[1] != student_centroids.shape[1]:
        raise ValueError(
            f"student_centroids has dimension {student_centroids.shape[1]} "
            f"but student_feats has {student_feats.shape[1]}"
        )
    logits = logit_scale * student_feats @ student_centroids.detach().to(student_feats.dtype).T
    targets = targets.detach()
    if targets.ndim == 1:
        if targets.is_floating_point():
            raise ValueError(f"1-D targets must be integer cluster ids, got dtype {targets.dtype}")
        if len(targets) != len(logits):
            raise ValueError(f"targets has {len(targets)} rows but student_feats has {len(logits)}")
        return F.cross_entropy(logits, targets.long())
    if targets.shape != logits.shape:
        raise ValueError(f"targets must be [B, K] = {tuple(logits.shape)}, got {tuple(targets.shape)}")
    # -sum_k y log p, averaged over the batch: the book's one soft-target cross-entropy
    return soft_contrastive(logits, targets)


def proto_loss_pair(
    image_feats: torch.Tensor,
    text_feats: torch.Tensor,
    image_centroids: torch.Tensor,
    text_centroids: torch.Tensor,
    image_targets: torch.Tensor,
    text_targets: torch.Tensor,
    logit_scale: torch.Tensor | float,
) -> torch.Tensor:
    """ProtoCLIP Eq. 4 (and Eq. 8): ``(image->text + text->image) / 2``, each direction a ``proto_loss``.

    Image -> text: image features ``h^I`` are classified by ``image_centroids`` (the text prototypes C^T, or
    C^T_{PBT->I} = ``pbt(h^I, text_labels, K)`` with PBT) against ``image_targets`` y^T (from C^T and the text
    cluster ids, Eq. 5). Text -> image mirrors it with ``text_centroids`` (C^I or C^I_{PBT->T}) and
    ``text_targets`` y^I. Both directions share the learnable ``logit_scale`` = 1 / tau_Proto.

    For Eq. 8 pass the external teacher's PBT centroids in both spaces (C^ext_{PBT->I}, C^ext_{PBT->T}) and its
    targets for both (the authors' code uses one-hot external targets); Eq. 9 then adds L_CLIP and the two
    pairs.
    """
    return 0.5 * (
        proto_loss(image_feats, image_centroids, image_targets, logit_scale)
        + proto_loss(text_feats, text_centroids, text_targets, logit_scale)
    )
