"""The CLIP objective: symmetric InfoNCE over a batch of paired image/text features.

ProtoCLIP Eq. 1 (the L_CLIP term of Eq. 6 / Eq. 8) and the loss every other paper builds on. It is
open_clip's ``ClipLoss``; this module only fixes how the book calls it.
"""

from __future__ import annotations

import open_clip
import torch

_CLIP_LOSS = open_clip.ClipLoss()


def clip_loss(image_features: torch.Tensor, text_features: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """ProtoCLIP Eq. 1: the mean of image->text and text->image cross-entropies of
    ``logit_scale * z_I @ z_T^T`` against the diagonal. Features must be L2-normalised;
    ``logit_scale`` is exp(learnable log-scale), i.e. 1 / temperature."""
    return _CLIP_LOSS(image_features, text_features, logit_scale)
