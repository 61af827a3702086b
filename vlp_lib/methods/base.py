"""The contract between the training loop and a method."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn

from ..data.paired import PairedData
from ..models import clamp_logit_scale_


@dataclass
class Episode:
    """One episode of ProtoCLIP's episodic training (III-D): ``indices`` are the data indices drawn for
    it. For a method without per-episode work an episode is simply an epoch (or a slice of one)."""

    number: int
    indices: np.ndarray
    data: PairedData
    batch_size: int
    load_images: Callable[[np.ndarray, bool], torch.Tensor]  # (indices, augment) -> model input
    autocast: Callable[[], object]  # context manager for the configured precision
    image_locked: bool = False  # the whole episode lies in the locked-image phase (``TrainConfig.image_lock_fraction``)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Batch:
    images: torch.Tensor  # normalised, augmented [B, 3, S, S]
    texts: torch.Tensor  # token ids [B, context_length]
    indices: np.ndarray  # data indices
    positions: np.ndarray  # positions inside the episode (index into per-episode targets)
    step: int  # global optimisation step
    total_steps: int
    image_locked: bool = False  # locked-image tuning: the image tower's learning rate is zero at this step


class Method(nn.Module):
    """Base class. Subclasses set ``name`` and implement ``loss``."""

    name = "base"

    @classmethod
    def check_kwargs(cls, kwargs: dict, episode_size: int) -> None:
        """``ValueError`` naming the parameter for invalid method arguments (called before any compute)."""
        if kwargs:
            raise ValueError(f"method_kwargs: {cls.name} takes no arguments, got {sorted(kwargs)}")

    def on_episode_start(self, model: nn.Module, episode: Episode) -> None:
        """Per-episode work before training on it (ProtoCLIP: features, K-Means, PBT). Record stage
        times in ``episode.timings`` (seconds); the trainer adds them to the run's timings."""

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError

    def after_step(self, model: nn.Module) -> None:
        """Keep learnable temperatures in range after each optimiser step."""
        clamp_logit_scale_(model.logit_scale)
