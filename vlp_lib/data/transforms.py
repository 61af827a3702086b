"""Image tensors for the models: uint8 HWC arrays in, normalised NCHW float tensors out.

Augmentations are batched on tensors (one affine grid per batch), so that they cost a small
fraction of a training step on a 2-core CPU instead of dominating it as per-image PIL ops would.
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numpy as np
import torch
import torch.nn.functional as F

# The generated world has no natural-image statistics to match; centring on 0.5 is enough.
MEAN = (0.5, 0.5, 0.5)
STD = (0.25, 0.25, 0.25)


def _mean_std(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``MEAN`` and ``STD`` as ``[1, 3, 1, 1]`` tensors on ``x``'s device and dtype."""
    like: dict[str, Any] = {"device": x.device, "dtype": x.dtype}
    return torch.tensor(MEAN, **like).view(1, 3, 1, 1), torch.tensor(STD, **like).view(1, 3, 1, 1)


def _denormalize(x: torch.Tensor) -> torch.Tensor:
    """Normalised model input -> ``[0, 1]`` images (clamped)."""
    mean, std = _mean_std(x)
    return (x * std + mean).clamp(0, 1)


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
    mean, std = _mean_std(x)
    return x.sub_(mean).div_(std)  # in place: x is this function's own tensor (the same arithmetic as (x - m) / s)


def random_resized_crop(
    x: torch.Tensor,
    scale: tuple[float, float] = (0.9, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    flip_p: float = 0.0,
    generator: torch.Generator | None = None,
    *,
    record: dict | None = None,
) -> torch.Tensor:
    """Batched RandomResizedCrop (+ horizontal flip) on ``[N, C, H, W]`` with one ``grid_sample``.

    Each image gets its own crop area fraction in ``scale`` and aspect ratio in ``ratio`` (log-uniform),
    as torchvision's ``RandomResizedCrop`` draws them, then the crop is resized back to ``H x W``.
    ``record`` (a dict), if given, receives the drawn parameters: ``theta`` (the ``[N, 2, 3]`` affine map from
    output to input coordinates in ``[-1, 1]``, as ``affine_grid`` takes it) and ``flip`` (``[N]`` bool).
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
    if record is not None:
        record.update(theta=theta.clone(), flip=flip < 0)
    grid = F.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def _draw(n: int, low: float, high: float, generator: torch.Generator | None) -> torch.Tensor:
    return torch.empty(n).uniform_(low, high, generator=generator)


def _chosen(n: int, p: float, generator: torch.Generator | None) -> torch.Tensor:
    """``[N]`` bool: which images of the batch a transform with probability ``p`` applies to."""
    return torch.rand(n, generator=generator) < p


# Rec. 601 luma, as torchvision's rgb_to_grayscale
_LUMA = torch.tensor([0.299, 0.587, 0.114])
# RGB -> YIQ; a hue shift is a rotation of the (I, Q) chroma plane
_YIQ = torch.tensor([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])


def _gray(x: torch.Tensor) -> torch.Tensor:
    return torch.einsum("nchw,c->nhw", x, _LUMA.to(x.device, x.dtype)).unsqueeze(1)


def color_jitter(
    x: torch.Tensor,
    brightness: float = 0.4,
    contrast: float = 0.4,
    saturation: float = 0.4,
    hue: float = 0.1,
    p: float = 0.8,
    generator: torch.Generator | None = None,
    *,
    record: dict | None = None,
) -> torch.Tensor:
    """Batched ``ColorJitter(brightness, contrast, saturation, hue)`` applied with probability ``p``
    per image, on ``[N, 3, H, W]`` in ``[0, 1]``.

    Factors are drawn per image as torchvision draws them (brightness, contrast and saturation in
    ``[1 - v, 1 + v]``, hue in ``[-hue, hue]`` of a turn). Two simplifications keep it one pass over the
    batch: the four operations run in a fixed order rather than a random one, and the hue shift is a
    rotation of the YIQ chroma plane rather than an HSV round trip. ``record`` (a dict), if given, receives
    the drawn parameters: ``jitter`` (``[N]`` bool, applied), ``brightness``, ``contrast``, ``saturation``
    (factors) and ``hue`` (turns), each ``[N]``.
    """
    n = x.shape[0]
    apply = _chosen(n, p, generator).to(x.device).view(n, 1, 1, 1)
    b = _draw(n, 1 - brightness, 1 + brightness, generator).to(x.device, x.dtype).view(n, 1, 1, 1)
    c = _draw(n, 1 - contrast, 1 + contrast, generator).to(x.device, x.dtype).view(n, 1, 1, 1)
    s = _draw(n, 1 - saturation, 1 + saturation, generator).to(x.device, x.dtype).view(n, 1, 1, 1)
    angle = _draw(n, -hue, hue, generator) * 2 * math.pi
    if record is not None:
        record.update(
            jitter=apply.view(n).cpu(),
            brightness=b.view(n).cpu(),
            contrast=c.view(n).cpu(),
            saturation=s.view(n).cpu(),
            hue=angle / (2 * math.pi),
        )
    y = (x * b).clamp(0, 1)
    mean_gray = _gray(y).mean(dim=(1, 2, 3), keepdim=True)
    y = ((y - mean_gray) * c + mean_gray).clamp(0, 1)
    gray = _gray(y)
    y = ((y - gray) * s + gray).clamp(0, 1)
    cos, sin = torch.cos(angle), torch.sin(angle)
    rotation = torch.zeros(n, 3, 3)
    rotation[:, 0, 0] = 1
    rotation[:, 1, 1], rotation[:, 1, 2] = cos, -sin
    rotation[:, 2, 1], rotation[:, 2, 2] = sin, cos
    hue_matrix = (torch.linalg.inv(_YIQ) @ rotation @ _YIQ).to(x.device, x.dtype)  # [N, 3, 3]
    y = torch.einsum("nij,njhw->nihw", hue_matrix, y).clamp(0, 1)
    return torch.where(apply, y, x)


def random_grayscale(
    x: torch.Tensor, p: float = 0.2, generator: torch.Generator | None = None, *, record: dict | None = None
) -> torch.Tensor:
    """``RandomGrayscale(p)`` on ``[N, 3, H, W]``: the luma copied to all three channels.
    ``record`` (a dict), if given, receives ``gray`` (``[N]`` bool, applied)."""
    apply = _chosen(x.shape[0], p, generator).to(x.device).view(-1, 1, 1, 1)
    if record is not None:
        record["gray"] = apply.view(-1).cpu()
    return torch.where(apply, _gray(x).expand_as(x), x)


def gaussian_blur(
    x: torch.Tensor,
    sigma: tuple[float, float] = (0.1, 2.0),
    p: float = 0.5,
    kernel_fraction: float = 0.1,
    generator: torch.Generator | None = None,
    *,
    record: dict | None = None,
) -> torch.Tensor:
    """SimCLR's Gaussian blur with probability ``p``: a per-image sigma in ``sigma`` and a kernel of
    ``kernel_fraction`` of the image side (odd, at least 3), applied as two grouped 1-D convolutions.
    ``record`` (a dict), if given, receives ``blur`` (``[N]`` bool, applied) and ``sigma`` (``[N]``)."""
    n, ch, h, w = x.shape
    apply = _chosen(n, p, generator).to(x.device).view(n, 1, 1, 1)
    size = max(3, int(kernel_fraction * max(h, w)) // 2 * 2 + 1)
    sig = _draw(n, sigma[0], sigma[1], generator)
    if record is not None:
        record.update(blur=apply.view(n).cpu(), sigma=sig.clone())
    offsets = torch.arange(size, dtype=torch.float32) - size // 2
    kernel = torch.exp(-0.5 * (offsets.view(1, -1) / sig.view(-1, 1)) ** 2)
    kernel = (kernel / kernel.sum(dim=1, keepdim=True)).repeat_interleave(ch, dim=0).to(x.device, x.dtype)
    y = x.reshape(1, n * ch, h, w)
    pad = size // 2
    y = F.conv2d(F.pad(y, (pad, pad, 0, 0), mode="reflect"), kernel.view(n * ch, 1, 1, size), groups=n * ch)
    y = F.conv2d(F.pad(y, (0, 0, pad, pad), mode="reflect"), kernel.view(n * ch, 1, size, 1), groups=n * ch)
    return torch.where(apply, y.view(n, ch, h, w), x)


# Training augmentations by name (ProtoCLIP Section IV-A-3 and Table XI). "none" is what ProtoCLIP calls
# "No Augmentation": resize and crop with a random scale between 90% and 100%. "simclr" is SimCLR's
# recipe (crop 8-100%, flip, colour jitter 0.4/0.4/0.4/0.1 with p = 0.8, grayscale p = 0.2, blur p = 0.5);
# "protoclip" is the paper's lighter version of it: crop 50-100% and colour jitter with p = 0.2.
# "off" feeds the images unchanged.
# PyramidCLIP's two image views (Section 3.2) are "none", its global view G (RandomResizedCrop with scale
# [0.9, 1]), and "local", its local view L (RandomResizedCrop with scale [0.5, 1]). The paper gives neither the
# aspect ratio range nor flips: L keeps torchvision's ratio (3/4, 4/3), no flip and no colour operation, so that
# G and L differ only in how much of the image they keep. Methods ask for L with ``Batch.view("local")``.
# "rrc" is DIME-FM's basic student augmentation (official build_transform: RandomResizedCrop scale (0.08, 1),
# ratio (3/4, 4/3), horizontal flip 0.5, no colour operation; Supp A.1 finds stronger augmentation harmful).
AUGMENTATIONS: dict[str, dict] = {
    "off": {},
    "none": {"scale": (0.9, 1.0)},
    "local": {"scale": (0.5, 1.0), "ratio": (3 / 4, 4 / 3)},
    "simclr": {"scale": (0.08, 1.0), "flip_p": 0.5, "jitter_p": 0.8, "gray_p": 0.2, "blur_p": 0.5},
    "protoclip": {"scale": (0.5, 1.0), "flip_p": 0.5, "jitter_p": 0.2, "gray_p": 0.2, "blur_p": 0.5},
    "rrc": {"scale": (0.08, 1.0), "ratio": (3 / 4, 4 / 3), "flip_p": 0.5},
}


@overload
def augment(
    x: torch.Tensor, name: str, generator: torch.Generator | None = None, *, return_params: Literal[False] = False
) -> torch.Tensor: ...
@overload
def augment(
    x: torch.Tensor, name: str, generator: torch.Generator | None = None, *, return_params: Literal[True]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...
@overload
def augment(
    x: torch.Tensor, name: str, generator: torch.Generator | None = None, *, return_params: bool
) -> torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]: ...
def augment(
    x: torch.Tensor, name: str, generator: torch.Generator | None = None, *, return_params: bool = False
) -> torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Apply the named augmentation (``AUGMENTATIONS``) to a normalised batch ``[N, 3, H, W]``.

    ``return_params=True`` also returns what was drawn for each image (CPU tensors, first dimension ``N``):
    ``theta`` (the crop and flip as the ``[N, 2, 3]`` affine map from output to input coordinates in
    ``[-1, 1]``; the identity for "off"), ``flip``, ``jitter``, ``gray`` and ``blur`` (bool: applied), and where
    the recipe has them the jitter factors and blur sigmas (see ``color_jitter`` and ``gaussian_blur``).
    Recording draws nothing extra: the images and the generator's state are the same either way.
    """
    if name not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {sorted(AUGMENTATIONS)}, got {name!r}")
    spec = AUGMENTATIONS[name]
    n = x.shape[0]
    params: dict[str, torch.Tensor] = {
        "theta": torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).repeat(n, 1, 1),
        **{key: torch.zeros(n, dtype=torch.bool) for key in ("flip", "jitter", "gray", "blur")},
    }
    done = (lambda y: (y, params)) if return_params else (lambda y: y)
    if not spec:
        return done(x)
    x = random_resized_crop(
        x,
        scale=spec["scale"],
        ratio=spec.get("ratio", (3 / 4, 4 / 3)),
        flip_p=spec.get("flip_p", 0.0),
        generator=generator,
        record=params,
    )
    if not any(spec.get(key, 0.0) for key in ("jitter_p", "gray_p", "blur_p")):
        return done(x)
    # colour operations are defined on [0, 1] images
    mean, std = _mean_std(x)
    x = _denormalize(x)
    x = color_jitter(x, p=spec["jitter_p"], generator=generator, record=params)
    x = random_grayscale(x, p=spec["gray_p"], generator=generator, record=params)
    x = gaussian_blur(x, p=spec["blur_p"], generator=generator, record=params)
    return done((x - mean) / std)


def from_model_input(x: torch.Tensor) -> np.ndarray:
    """The inverse of ``to_model_input`` (without resizing): normalised ``[N, 3, H, W]`` -> uint8 ``[N, H, W, 3]``,
    e.g. to look at augmented images."""
    return (_denormalize(x) * 255).round().byte().permute(0, 2, 3, 1).cpu().numpy()
