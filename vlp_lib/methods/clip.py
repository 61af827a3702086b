"""CLIP (Radford et al., 2021): the baseline every chapter compares against."""

from __future__ import annotations

import torch
from torch import nn

from vlp_lib.losses.clip import clip_loss
from vlp_lib.methods.base import Batch, Method


class CLIP(Method):
    """L = L_CLIP (ProtoCLIP Eq. 1). No per-episode work: an episode is an epoch."""

    name = "clip"
    distributed = True  # losses.clip gathers the features of every rank

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        out = model(batch.images, batch.texts)
        loss = clip_loss(out["image_features"], out["text_features"], out["logit_scale"])
        return loss, {"loss_clip": loss.item(), "logit_scale": out["logit_scale"].item()}
