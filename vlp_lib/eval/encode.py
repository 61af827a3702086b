"""Encoding images, feature maps and texts with a model, in batches, without gradients."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from vlp_lib.data.transforms import to_model_input
from vlp_lib.eval.common import (
    ArrayLike,
    _eval_mode,
    _model_device,
    _model_dtype,
    _square_size,
)


def encode_images(
    model: torch.nn.Module,
    images: ArrayLike,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    normalize: bool = False,
) -> torch.Tensor:
    """Image features ``[N, D]`` (float32, CPU) of uint8 images ``[N, H, W, 3]``.

    Images are converted batch by batch (``to_model_input`` at ``model.visual.image_size``), so a
    memmapped evaluation set is never loaded whole. The features are unnormalised unless
    ``normalize``: linear probing uses them before normalisation (ProtoCLIP Sec. IV-C.2).
    """
    with _eval_mode(model), torch.no_grad():
        clip: Any = model  # an open_clip-like model: torch's Module typing cannot say it has encode_image
        out = [clip.encode_image(x).float().cpu() for x in _model_batches(model, images, batch_size, device)]
    if not out:
        raise ValueError("images is empty")
    feats = torch.cat(out)
    return F.normalize(feats, dim=-1) if normalize else feats


def _model_batches(
    model: torch.nn.Module, images: ArrayLike, batch_size: int, device: str | torch.device | None = None
) -> Iterator[torch.Tensor]:
    """uint8 images ``[N, H, W, 3]`` as model input batches (``to_model_input`` at ``model.visual.image_size``, on
    the model's device and dtype), converted one batch at a time: slicing a memmap reads only that batch."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    dev, dtype = _model_device(model, device), _model_dtype(model)
    size = _square_size(getattr(getattr(model, "visual", None), "image_size", None))
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        x = to_model_input(batch if isinstance(batch, torch.Tensor) else np.asarray(batch), image_size=size)
        yield x.to(device=dev, dtype=dtype)


def encode_feature_maps(
    model: torch.nn.Module,
    images: ArrayLike,
    last: int = 3,
    grid: int = 2,
    batch_size: int = 256,
) -> list[torch.Tensor]:
    """Layer-wise features of an image-only model (``models.ImageOnly.feature_maps``): for each of the ``last``
    deepest maps, shallowest first, its ``grid`` x ``grid`` average pool flattened, ``[N, C·grid²]`` float32 on the
    CPU (ICMLM Supp C / F.2: the last three layers C-11 / C-12 / C-13, pooled and flattened; ``grid=1`` is GAP)."""
    if not callable(getattr(model, "feature_maps", None)):
        raise ValueError(f"model must expose feature_maps (models.ImageOnly), got {type(model).__name__}")
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise ValueError(f"grid must be a positive integer, got {grid!r}")
    with _eval_mode(model), torch.no_grad():
        out = [
            [F.adaptive_avg_pool2d(m.float(), grid).flatten(1).cpu() for m in cast(Any, model).feature_maps(x, last)]
            for x in _model_batches(model, images, batch_size)
        ]
    if not out:
        raise ValueError("images is empty")
    return [torch.cat(layer) for layer in zip(*out)]


def encode_texts(
    model: torch.nn.Module,
    tokenizer: Callable[[list[str]], torch.Tensor],
    texts: Sequence[str],
    batch_size: int = 512,
    device: str | torch.device | None = None,
    normalize: bool = False,
) -> torch.Tensor:
    """Text features ``[N, D]`` (float32, CPU): ``tokenizer(list_of_str) -> [B, ctx]``, then ``model.encode_text``."""
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a single string")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty")
    dev = _model_device(model, device)
    out = []
    with _eval_mode(model), torch.no_grad():
        for start in range(0, len(texts), batch_size):
            tokens = tokenizer(texts[start : start + batch_size])
            out.append(cast(Any, model).encode_text(tokens.to(dev)).float().cpu())
    feats = torch.cat(out)
    return F.normalize(feats, dim=-1) if normalize else feats
