"""Paired image-text training data: what the trainer consumes, whatever the source.

The generated world, and later OpenCLIP CSV or WebDataset shards, all become a ``PairedData``:
uint8 images (memory-mapped where they come from a cache), captions and their token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


def take(values: Any, indices: np.ndarray) -> Any:
    """``values`` at ``indices`` (first dimension), keeping the container type: a numpy array (memory-mapped
    ones included) gives an in-memory numpy array, a torch tensor a tensor on its own device, a list or tuple
    a list, and a mapping (``World.labels``: one array per key) a dict of each value taken."""
    if isinstance(values, Mapping):
        return {key: take(value, indices) for key, value in values.items()}
    if isinstance(values, torch.Tensor):
        return values[torch.as_tensor(indices, dtype=torch.long, device=values.device)]
    if isinstance(values, np.ndarray):
        return np.asarray(values[indices])
    if isinstance(values, (list, tuple)):
        return [values[i] for i in np.asarray(indices).tolist()]
    raise ValueError(
        f"per-sample side data must be a numpy array, torch tensor, list, tuple or mapping of them, "
        f"got {type(values).__name__}"
    )


def n_samples(values: Any) -> int | None:
    """How many samples ``values`` holds along its first dimension (the same for every value of a mapping),
    or ``None`` when it is not per-sample data that ``take`` can gather."""
    if isinstance(values, Mapping):
        sizes = {n_samples(v) for v in values.values()}
        return sizes.pop() if len(sizes) == 1 else None
    if isinstance(values, (np.ndarray, torch.Tensor)):
        return int(values.shape[0]) if values.ndim else None
    if isinstance(values, (list, tuple)):
        return len(values)
    return None


@dataclass
class PairedData:
    images: np.ndarray  # uint8 [N, H, W, 3]
    captions: list[str]
    tokens: torch.Tensor  # int64 [N, context_length]
    # per-sample side data, one entry per pair, gathered into batches on request (``gather``, ``Batch.side``):
    # summaries, boxes, labels, teacher features ...
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (len(self.images) == len(self.captions) == len(self.tokens)):
            raise ValueError(
                f"images, captions and tokens must have the same length, got "
                f"{len(self.images)}, {len(self.captions)}, {len(self.tokens)}"
            )

    def __len__(self) -> int:
        return len(self.captions)

    def check_extra(self, name: str) -> None:
        """``ValueError`` naming ``name`` unless ``extra[name]`` is per-sample data of this data set's length."""
        if name not in self.extra:
            raise ValueError(f"data.extra has no {name!r} (it has {sorted(self.extra)})")
        size = n_samples(self.extra[name])
        if size != len(self):
            raise ValueError(
                f"data.extra[{name!r}] must hold one entry per pair ({len(self)}), got "
                f"{'a ' + type(self.extra[name]).__name__ if size is None else size}"
            )

    def gather(self, name: str, indices: np.ndarray) -> Any:
        """``extra[name]`` of the pairs ``indices`` (see ``take``); ``ValueError`` naming ``name`` if it is absent."""
        if name not in self.extra:
            raise ValueError(f"data.extra has no {name!r} (it has {sorted(self.extra)})")
        return take(self.extra[name], indices)


def tokenize_all(
    tokenizer: Callable[[Sequence[str]], torch.Tensor], texts: Sequence[str], chunk: int = 8192
) -> torch.Tensor:
    """Tokenise once up front (the word-level tokenizer is fast; the loop then only indexes)."""
    parts = [tokenizer(list(texts[i : i + chunk])) for i in range(0, len(texts), chunk)]
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.long)


def from_world(world: Any, tokenizer: Callable[[Sequence[str]], torch.Tensor]) -> PairedData:
    """A generated world (``vlp_lib.data.world.generate``) as training pairs."""
    return PairedData(
        images=world.images,
        captions=list(world.captions),
        tokens=tokenize_all(tokenizer, world.captions),
        # objects: every object's (shape, colour, size) ids, e.g. the ground-truth classes of ICMLM's TP_Label
        extra={"summaries": world.summaries, "boxes": world.boxes, "objects": world.objects, "labels": world.labels},
    )


def _concat_values(name: str, parts: list[Any]) -> Any:
    first = parts[0]
    if isinstance(first, Mapping) and all(isinstance(p, Mapping) for p in parts):
        common = [k for k in first if all(k in p for p in parts)]
        return {k: _concat_values(f"{name}[{k!r}]", [p[k] for p in parts]) for k in common}
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts)
    if all(isinstance(p, torch.Tensor) for p in parts):
        return torch.cat(parts)
    if all(isinstance(p, (list, tuple)) for p in parts):
        return [v for p in parts for v in p]
    raise ValueError(f"extra {name!r} has types {[type(p).__name__ for p in parts]} across sources: cannot concatenate")


def concat(sources: Mapping[str, PairedData]) -> tuple[PairedData, dict[str, np.ndarray]]:
    """Several data sets as one, for a mixed-source sampler (``vlp_lib.data.sampler.MixedSampler``): iCLIP's
    class-only data beside paired data, DIME-FM's concept-coverage mixes.

    Returns the merged data and each source's data indices in it (``{name: indices}``, the sampler's ``pools``).
    Extras present in every source are concatenated (mappings key by key); the others are dropped. The merged
    data gains ``extra["source"]``: each pair's source name (a numpy string array), so that a method can tell
    its rows apart with ``batch.side("source") == name`` (``Batch.source`` tells the same from the sampler). The
    merged images are held in memory, memory-mapped sources included.
    """
    if not sources:
        raise ValueError("sources must name at least one PairedData")
    parts = list(sources.values())
    shapes = {p.images.shape[1:] for p in parts}
    if len(shapes) != 1:
        raise ValueError(f"sources must have images of one size, got {sorted(shapes)}")
    contexts = {p.tokens.shape[1] for p in parts}
    if len(contexts) != 1:
        raise ValueError(f"sources must be tokenised to one context length, got {sorted(contexts)}")
    if "source" in {k for p in parts for k in p.extra}:
        raise ValueError("sources must not have an extra named 'source' (concat adds it)")
    starts = np.cumsum([0] + [len(p) for p in parts])
    pools = {name: np.arange(starts[i], starts[i + 1]) for i, name in enumerate(sources)}
    common = [k for k in parts[0].extra if all(k in p.extra for p in parts)]
    extra = {k: _concat_values(k, [p.extra[k] for p in parts]) for k in common}
    extra["source"] = np.concatenate([np.full(len(p), name) for name, p in sources.items()])
    merged = PairedData(
        images=np.concatenate([np.asarray(p.images) for p in parts]),
        captions=[c for p in parts for c in p.captions],
        tokens=torch.cat([p.tokens for p in parts]),
        extra=extra,
    )
    return merged, pools
