"""Input handling shared by the evaluation protocols: features and labels as numpy or torch, model device and dtype, eval mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

ArrayLike = Any  # numpy array, numpy memmap or torch tensor


def _feats(x: ArrayLike, name: str) -> torch.Tensor:
    """``x`` as a float32 CPU tensor ``[N, D]``; ``ValueError`` naming ``name`` otherwise."""
    t = x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-D [N, D], got shape {tuple(t.shape)}")
    return t.to(device="cpu", dtype=torch.float32)


def _labels(y: ArrayLike, name: str) -> np.ndarray:
    """``y`` as a 1-D int64 numpy array; ``ValueError`` naming ``name`` otherwise."""
    a = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D [N], got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError(f"{name} must hold integer class ids, got dtype {a.dtype}")
    return a.astype(np.int64)


def _check_len(n: int, other: int, name: str, against: str) -> None:
    if n != other:
        raise ValueError(f"{name} has {other} rows but {against} has {n}")


def _check_dim(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{name_b} has dimension {b.shape[1]} but {name_a} has {a.shape[1]}")


def _model_device(model: torch.nn.Module, device: str | torch.device | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    # a model without parameters (a test double) runs on the CPU
    param = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    return param.device if param is not None else torch.device("cpu")


def _model_dtype(model: torch.nn.Module) -> torch.dtype:
    # a half-precision model on a GPU gets half-precision pixels
    param = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    return param.dtype if param is not None and param.is_floating_point() else torch.float32


def _square_size(image_size: int | Sequence[int] | None) -> int | None:
    """open_clip stores ``visual.image_size`` as an int or an ``(H, W)`` tuple; the pipeline is square."""
    if image_size is None or isinstance(image_size, int):
        return image_size
    sizes = tuple(int(s) for s in image_size)
    if len(set(sizes)) != 1:
        raise ValueError(f"model.visual.image_size must be square, got {sizes}")
    return sizes[0]


class _eval_mode:
    """Put a model in eval mode for a block and give it back in the mode it was in."""

    def __init__(self, model: Any):
        self.model = model
        self.was_training = getattr(model, "training", False)

    def __enter__(self):
        if hasattr(self.model, "eval"):
            self.model.eval()

    def __exit__(self, *exc):
        if hasattr(self.model, "train"):
            self.model.train(self.was_training)


def has_text_tower(model: Any) -> bool:
    """Whether ``model`` encodes text (a callable ``encode_text``). An image-only model (a bare image tower,
    a self-supervised encoder) gets the probes of the suite (linear, k-NN, clustering) but no zero-shot
    classification and no retrieval."""
    return callable(getattr(model, "encode_text", None))
