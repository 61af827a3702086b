"""Paired image-text training data: what the trainer consumes, whatever the source.

The generated world, and later OpenCLIP CSV or WebDataset shards, all become a ``PairedData``:
uint8 images (memory-mapped where they come from a cache), captions and their token ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch


@dataclass
class PairedData:
    images: np.ndarray  # uint8 [N, H, W, 3]
    captions: list[str]
    tokens: torch.Tensor  # int64 [N, context_length]
    extra: dict[str, Any] = field(default_factory=dict)  # summaries, boxes, labels, teacher features ...

    def __post_init__(self) -> None:
        if not (len(self.images) == len(self.captions) == len(self.tokens)):
            raise ValueError(
                f"images, captions and tokens must have the same length, got "
                f"{len(self.images)}, {len(self.captions)}, {len(self.tokens)}"
            )

    def __len__(self) -> int:
        return len(self.captions)


def tokenize_all(tokenizer: Callable[[Sequence[str]], torch.Tensor], texts: Sequence[str], chunk: int = 8192) -> torch.Tensor:
    """Tokenise once up front (the word-level tokenizer is fast; the loop then only indexes)."""
    parts = [tokenizer(list(texts[i : i + chunk])) for i in range(0, len(texts), chunk)]
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.long)


def from_world(world: Any, tokenizer: Callable[[Sequence[str]], torch.Tensor]) -> PairedData:
    """A generated world (``vlp_lib.data.world.generate``) as training pairs."""
    return PairedData(
        images=world.images,
        captions=list(world.captions),
        tokens=tokenize_all(tokenizer, world.captions),
        extra={"summaries": world.summaries, "boxes": world.boxes, "labels": world.labels},
    )
