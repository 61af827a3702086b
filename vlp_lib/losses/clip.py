"""The CLIP objective: symmetric InfoNCE over a batch of paired image/text features.

ProtoCLIP Eq. 1 (the L_CLIP term of Eq. 6 / Eq. 8) and the loss every other paper builds on. It is
open_clip's ``ClipLoss``; this module only fixes how the book calls it. Across processes (``vlp_lib.distributed``)
it gathers every rank's features with gradients and scores this rank's rows against the whole global batch
(``gather_with_grad``, ``local_loss``): the ranks' mean is the one-process loss of the global batch.
"""

from __future__ import annotations

import functools

import open_clip
import torch

from vlp_lib import distributed

_CLIP_LOSS = open_clip.ClipLoss()


def clip_loss(image_features: torch.Tensor, text_features: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """ProtoCLIP Eq. 1: the mean of image->text and text->image cross-entropies of
    ``logit_scale * z_I @ z_T^T`` against the diagonal. Features must be L2-normalised;
    ``logit_scale`` is exp(learnable log-scale), i.e. 1 / temperature."""
    w = distributed.world()
    loss = _gathering_loss(w.rank, w.world_size) if w.parallel else _CLIP_LOSS
    return loss(image_features, text_features, logit_scale)


@functools.cache
def _gathering_loss(rank: int, world_size: int) -> open_clip.ClipLoss:
    return open_clip.ClipLoss(local_loss=True, gather_with_grad=True, rank=rank, world_size=world_size)
