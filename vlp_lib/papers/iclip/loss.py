"""iCLIP's classification-as-contrast term and UniCL's multi-positive contrast (the iCLIP chapter's baseline).

iCLIP (Wei et al., CVPR 2023). Only the supplement was available to us and it has no equations, so L_cls below is
our reconstruction from the iCAR preprint's abstract: a
cosine classifier whose weights are the shared text encoder's features of the class texts,

    L_cls = -1/B sum_i log( exp(s <v_i, t_{y_i}>) / sum_{c in K} exp(s <v_i, t_c>) ),

with v_i, t_c L2-normalised and s = 1 / tau. The method (``papers.iclip.method``) chooses K (all classes or the batch's),
s (CLIP's temperature or its own) and whether the batch's alt-texts join K as negatives; the paper's choices are
unknown. The image-text sub-batch keeps CLIP's loss (``losses.clip.clip_loss``): L = L_CLIP + alpha L_cls.

UniCL (Yang et al., CVPR 2022; the form below is our reading of its bidirectional contrastive loss): one batch of (image,
text, label) triples, positives = every pair with the same label, targets T_ij = 1[y_i = y_j] / |P_i| in both
directions (``losses.soft.multi_positive_targets``):

    L = 1/2 (L_i2t + L_t2i),   L_i2t = -1/B sum_i 1/|P_i| sum_{j in P_i} log softmax_j(s <v_i, t_j>).

The mean of the two directions (not their sum) keeps it on CLIP's scale: with all labels distinct it is CLIP's
loss (open_clip's ``ClipLoss``).

Across processes (``vlp_lib.distributed``) every loss here is a mean over the global batch's rows, and each rank
returns its share: the terms of its own rows, scored against the gathered candidates, weighted so that the ranks'
average (DDP's gradient average, ``distributed.mean`` of the logged values) is the one-process loss. UniCL's rows
are the batch itself, an equal share per rank (``gather_with_grad``, as ``losses.soft.soft_info_nce``). iCLIP's two
sub-batches are not: the class images come first in a batch, so one rank may hold only class images and another
only pairs; ``local_clip_loss`` and ``class_text_contrast`` weight the mean over a rank's n rows by its share of
them, n W / N (``_cross_entropy_share``; a mean scaled by the world size W alone would not average to the global
mean). In one process both compute exactly what they did before (the same operations).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vlp_lib import distributed
from vlp_lib.losses.soft import multi_positive_targets, soft_contrastive


def _check_features(name: str, features: torch.Tensor, rows: int | None = None, width: int | None = None) -> None:
    if not isinstance(features, torch.Tensor) or features.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor [N, D], got {getattr(features, 'shape', type(features))}")
    if rows is not None and features.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows, got {features.shape[0]}")
    if width is not None and features.shape[1] != width:
        raise ValueError(f"{name} must have width {width} (that of image_features), got {features.shape[1]}")


def _check_labels(labels: torch.Tensor, n: int) -> None:
    if not isinstance(labels, torch.Tensor) or labels.ndim != 1 or labels.is_floating_point() or len(labels) != n:
        raise ValueError(
            f"labels must be a 1-D integer tensor with one label per image ({n}), got "
            f"{getattr(labels, 'dtype', type(labels))} {tuple(getattr(labels, 'shape', ()))}"
        )


def _cross_entropy_share(logits: torch.Tensor, labels: torch.Tensor, total: int) -> torch.Tensor:
    """This rank's share of a cross-entropy averaged over the ``total`` rows of the global batch, ``logits`` [n, C]
    holding this rank's n: the mean over its rows weighted by n W / total (its share of the rows times the world
    size W), so that the ranks' average is the global mean whatever each rank holds. n = 0: zero, still computed
    from ``logits`` (so that the backward of a gather they were scored against runs on every rank: a collective).
    One process (n = total): ``F.cross_entropy(logits, labels)`` itself."""
    n, ranks = len(logits), distributed.world().world_size
    if n == 0:
        return F.cross_entropy(logits, labels, reduction="sum")
    loss = F.cross_entropy(logits, labels)
    return loss if n * ranks == total else loss * (n * ranks / total)


def local_clip_loss(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    all_image_features: torch.Tensor,
    all_text_features: torch.Tensor,
    start: int,
    logit_scale: torch.Tensor | float,
) -> torch.Tensor:
    """L_CLIP (ProtoCLIP Eq. 1, open_clip's ``ClipLoss``) of image-text pairs that the ranks hold in shares of any
    size: this rank's pairs ``image_features`` / ``text_features`` [n, D], rows ``start .. start + n`` of the
    gathered ``all_*`` [N, D] (``distributed.gather_uneven``), scored against all N pairs in both directions
    (open_clip's ``local_loss``), each cross-entropy this rank's share of the mean over the N pairs
    (``_cross_entropy_share``). ``losses.clip.clip_loss`` cannot serve here: open_clip's gather needs equal shares
    and its per-rank mean assumes them. One process (``all_*`` the features themselves, ``start`` 0): open_clip's
    ``ClipLoss`` exactly (the same operations)."""
    _check_features("image_features", image_features)
    _check_features("text_features", text_features, rows=len(image_features), width=image_features.shape[1])
    _check_features("all_text_features", all_text_features, rows=len(all_image_features))
    labels = torch.arange(start, start + len(image_features), device=image_features.device)
    total = len(all_text_features)
    return (
        _cross_entropy_share(logit_scale * image_features @ all_text_features.T, labels, total)
        + _cross_entropy_share(logit_scale * text_features @ all_image_features.T, labels, total)
    ) / 2


def class_text_contrast(
    image_features: torch.Tensor,
    class_text_features: torch.Tensor,
    labels: torch.Tensor,
    logit_scale: torch.Tensor | float,
    total: int | None = None,
) -> torch.Tensor:
    """iCLIP's L_cls (reconstructed, see the module docstring): the cross-entropy of the cosine classifier whose
    weights are the text encoder's class-text features.

    ``image_features`` [B, D] and ``class_text_features`` [C, D] L2-normalised by the caller, ``labels`` [B] the
    index of each image's class text in ``class_text_features`` (rows past the classes act as negatives only),
    ``logit_scale`` = 1 / tau, already exponentiated (as ``clip_loss`` takes it). Across processes ``total`` is the
    global batch's count of class images, of which this rank holds B (none included): its share of the mean
    (``_cross_entropy_share``). ``None``: B, the mean over these rows."""
    _check_features("image_features", image_features)
    _check_features("class_text_features", class_text_features, width=image_features.shape[1])
    _check_labels(labels, len(image_features))
    if len(labels) and (labels.min() < 0 or labels.max() >= len(class_text_features)):
        raise ValueError(
            f"labels must index class_text_features (0 .. {len(class_text_features) - 1}), got "
            f"{int(labels.min())} .. {int(labels.max())}"
        )
    logits = logit_scale * image_features @ class_text_features.T
    return _cross_entropy_share(logits, labels, len(labels) if total is None else total)


def unicl_loss(
    image_features: torch.Tensor, text_features: torch.Tensor, labels: torch.Tensor, logit_scale: torch.Tensor | float
) -> torch.Tensor:
    """UniCL's bidirectional multi-positive contrast (module docstring) over a batch of triples: image
    ``i`` and text ``j`` are positives when ``labels[i] == labels[j]`` (each image-text pair has a label of its own,
    a labelled image the label of its class). Features ``[B, D]`` L2-normalised by the caller, ``logit_scale`` =
    1 / tau. All labels distinct: CLIP's loss.

    Across processes each rank holds an equal share of the batch (the trainer's ``distributed.shard``): its rows are
    scored against every rank's features and labels (gathered, the features with gradients) and their mean is its
    share, as ``losses.soft.soft_info_nce``."""
    _check_features("image_features", image_features)
    _check_features("text_features", text_features, rows=len(image_features), width=image_features.shape[1])
    _check_labels(labels, len(image_features))
    all_images = distributed.gather_with_grad(image_features)
    all_texts = distributed.gather_with_grad(text_features)
    all_labels = distributed.gather_rows(labels, len(all_images))
    logits = logit_scale * image_features @ all_texts.T
    # this rank's texts against every image (open_clip's local_loss); in one process the transpose of ``logits``, as
    # before the loss ran across processes (a second product would round the gradients differently)
    logits_t = logit_scale * text_features @ all_images.T if distributed.world().parallel else logits.T
    # 1[y_i = y_j] is symmetric, so the text->image direction uses the same targets: this rank's rows of them
    targets = multi_positive_targets(all_labels, dtype=logits.dtype)[slice(*distributed.bounds(len(all_labels)))]
    return 0.5 * (soft_contrastive(logits, targets) + soft_contrastive(logits_t, targets))
