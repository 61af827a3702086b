"""Image tensors for the models: uint8 HWC arrays in, normalised NCHW float tensors out.

Augmentations are batched on tensors (one affine grid per batch), so that they cost a small
fraction of a training step on a 2-core CPU instead of dominating it as per-image PIL ops would.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

# The generated world has no natural-image statistics to match; centring on 0.5 is enough.
MEAN = (0.5, 0.5, 0.5)
STD = (0.25, 0.25, 0.25)


def to_model_input(images: np.ndarray | torch.Tensor, image_size: int | None = None) -> torch.Tensor:
    """uint8 ``[N, H, W, 3]`` -> float32 ``[N, 3, S, S]`` normalised with ``MEAN``/``STD``.

    ``image_size`` resizes (bilinear, antialiased) when the images are not already that size, so an
    evaluation task rendered at a larger size (the STL-10 stand-in) can be fed to a 32 px model.
    """
    # torch.tensor copies: memory-mapped arrays are read-only and torch wants writable memory
    x = images if isinstance(images, torch.Tensor) else torch.tensor(np.asarray(images))
    if x.dtype != torch.uint8 or x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(f"images must be uint8 [N, H, W, 3], got {tuple(x.shape)} {x.dtype}")
    x = x.permute(0, 3, 1, 2).float().div_(255.0)
    if image_size is not None and x.shape[-1] != image_size:
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - mean) / std


def random_resized_crop(
    x: torch.Tensor,
    scale: tuple[float, float] = (0.9, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    flip_p: float = 0.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Batched RandomResizedCrop (+ horizontal flip) on ``[N, C, H, W]`` with one ``grid_sample``.

    Each image gets its own crop area fraction in ``scale`` and aspect ratio in ``ratio`` (log-uniform),
    as torchvision's ``RandomResizedCrop`` draws them, then the crop is resized back to ``H x W``.
    """
    n = x.shape[0]
    # parameters are drawn on the CPU generator (reproducible on any device), then moved
    area = torch.empty(n).uniform_(scale[0], scale[1], generator=generator)
    log_r = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]), generator=generator)
    r = torch.exp(log_r)
    w = torch.sqrt(area * r).clamp(max=1.0)
    h = torch.sqrt(area / r).clamp(max=1.0)
    cx = (torch.rand(n, generator=generator) * 2 - 1) * (1 - w)
    cy = (torch.rand(n, generator=generator) * 2 - 1) * (1 - h)
    flip = torch.where(torch.rand(n, generator=generator) < flip_p, -1.0, 1.0)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = w * flip
    theta[:, 0, 2] = cx
    theta[:, 1, 1] = h
    theta[:, 1, 2] = cy
    grid = F.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


# Training augmentations by name. "none" is what ProtoCLIP (Table XI) calls "No Augmentation":
# resize and crop with a random scale between 90% and 100%. "off" feeds the images unchanged.
AUGMENTATIONS: dict[str, dict] = {
    "off": {},
    "none": {"scale": (0.9, 1.0)},
}


def augment(x: torch.Tensor, name: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """Apply the named augmentation (``AUGMENTATIONS``) to a normalised batch ``[N, 3, H, W]``."""
    if name not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {sorted(AUGMENTATIONS)}, got {name!r}")
    spec = AUGMENTATIONS[name]
    if not spec:
        return x
    return random_resized_crop(x, scale=spec["scale"], flip_p=spec.get("flip_p", 0.0), generator=generator)
