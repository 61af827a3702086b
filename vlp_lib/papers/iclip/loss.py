"""iCLIP's classification-as-contrast term and UniCL's multi-positive contrast (the iCLIP chapter's baseline).

iCLIP (Wei et al., CVPR 2023). Only the supplement is in our sources and it has no equations, so L_cls below is
a reconstruction (spec 3.2; ``shared/papers/iclip_main_facts.md`` 1.2) from the iCAR preprint's abstract: a
cosine classifier whose weights are the shared text encoder's features of the class texts,

    L_cls = -1/B sum_i log( exp(s <v_i, t_{y_i}>) / sum_{c in K} exp(s <v_i, t_c>) ),

with v_i, t_c L2-normalised and s = 1 / tau. The method (``papers.iclip.method``) chooses K (all classes or the batch's),
s (CLIP's temperature or its own) and whether the batch's alt-texts join K as negatives; the paper's choices are
unknown. The image-text sub-batch keeps CLIP's loss (``losses.clip.clip_loss``): L = L_CLIP + alpha L_cls.

UniCL (Yang et al., CVPR 2022; its paper is not in our sources, the form is spec 3.2's): one batch of (image,
text, label) triples, positives = every pair with the same label, targets T_ij = 1[y_i = y_j] / |P_i| in both
directions (``losses.soft.multi_positive_targets``):

    L = 1/2 (L_i2t + L_t2i),   L_i2t = -1/B sum_i 1/|P_i| sum_{j in P_i} log softmax_j(s <v_i, t_j>).

The mean of the two directions (not their sum) keeps it on CLIP's scale: with all labels distinct it is CLIP's
loss (open_clip's ``ClipLoss``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

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


def class_text_contrast(
    image_features: torch.Tensor,
    class_text_features: torch.Tensor,
    labels: torch.Tensor,
    logit_scale: torch.Tensor | float,
) -> torch.Tensor:
    """iCLIP's L_cls (reconstructed, see the module docstring): the cross-entropy of the cosine classifier whose
    weights are the text encoder's class-text features.

    ``image_features`` [B, D] and ``class_text_features`` [C, D] L2-normalised by the caller, ``labels`` [B] the
    index of each image's class text in ``class_text_features`` (rows past the classes act as negatives only),
    ``logit_scale`` = 1 / tau, already exponentiated (as ``clip_loss`` takes it)."""
    _check_features("image_features", image_features)
    _check_features("class_text_features", class_text_features, width=image_features.shape[1])
    _check_labels(labels, len(image_features))
    if len(labels) and (labels.min() < 0 or labels.max() >= len(class_text_features)):
        raise ValueError(
            f"labels must index class_text_features (0 .. {len(class_text_features) - 1}), got "
            f"{int(labels.min())} .. {int(labels.max())}"
        )
    return F.cross_entropy(logit_scale * image_features @ class_text_features.T, labels)


def unicl_loss(
    image_features: torch.Tensor, text_features: torch.Tensor, labels: torch.Tensor, logit_scale: torch.Tensor | float
) -> torch.Tensor:
    """UniCL's bidirectional multi-positive contrast (spec 3.2; module docstring) over a batch of triples: image
    ``i`` and text ``j`` are positives when ``labels[i] == labels[j]`` (each image-text pair has a label of its own,
    a labelled image the label of its class). Features ``[B, D]`` L2-normalised by the caller, ``logit_scale`` =
    1 / tau. All labels distinct: CLIP's loss."""
    _check_features("image_features", image_features)
    _check_features("text_features", text_features, rows=len(image_features), width=image_features.shape[1])
    _check_labels(labels, len(image_features))
    logits = logit_scale * image_features @ text_features.T
    targets = multi_positive_targets(labels, dtype=logits.dtype)
    # 1[y_i = y_j] is symmetric, so the text->image direction uses the same targets
    return 0.5 * (soft_contrastive(logits, targets) + soft_contrastive(logits.T, targets))
