"""The contract between the training loop and a method."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
import torch
from torch import nn

from vlp_lib.data.paired import PairedData
from vlp_lib.data.sampler import Sampler
from vlp_lib.data.transforms import AUGMENTATIONS
from vlp_lib.methods.args import MethodArgs
from vlp_lib.models import clamp_logit_scale_


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
    # the data indices of the texts position by position: ``indices`` for paired data (the default), an
    # independent order with an unpaired sampler (``vlp_lib.data.sampler.EpisodeSampler(paired=False)``)
    text_indices: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.text_indices is None:
            self.text_indices = self.indices


def _to_device(value: Any, device: torch.device) -> Any:
    """Tensors (also inside a dict) moved to ``device``; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, dict):
        return {key: _to_device(v, device) for key, v in value.items()}
    return value


class SideData(Mapping[str, Any]):
    """``batch.extra``: the batch's rows of ``PairedData.extra``, gathered (by the image indices) only when a
    key is read, and kept for the rest of the step. ``batch.extra["summaries"]`` is ``batch.side("summaries")``."""

    def __init__(self, batch: Batch) -> None:
        self._batch = batch

    def __getitem__(self, name: str) -> Any:
        if self._batch.data is None or name not in self._batch.data.extra:
            raise KeyError(name)
        return self._batch.side(name)

    def __iter__(self) -> Iterator[str]:
        return iter(() if self._batch.data is None else self._batch.data.extra)

    def __len__(self) -> int:
        return 0 if self._batch.data is None else len(self._batch.data.extra)


@dataclass(eq=False)
class Batch:
    images: torch.Tensor  # normalised, augmented [B, 3, S, S]
    texts: torch.Tensor  # token ids [B, context_length]
    indices: np.ndarray  # data indices (of the images)
    positions: np.ndarray  # positions inside the episode (index into per-episode targets)
    step: int  # global optimisation step
    total_steps: int
    image_locked: bool = False  # locked-image tuning: the image tower's learning rate is zero at this step
    # data indices of the texts: ``indices`` for paired data; their own order with an unpaired sampler
    text_indices: np.ndarray | None = None
    # each row's source (numpy string array, ``[B]``): "data" by default, the pool names of a ``MixedSampler``
    source: np.ndarray | None = None
    data: PairedData | None = field(default=None, repr=False)  # where ``side`` gathers from
    # (name, draw) -> model input: the trainer's builder of named views of this batch's raw images
    view_fn: Callable[[str, int], torch.Tensor] | None = field(default=None, repr=False)
    _cache: dict[tuple, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.text_indices is None:
            self.text_indices = self.indices

    @property
    def extra(self) -> SideData:
        """The batch's side data as a read-only mapping (gathered lazily by the image indices)."""
        return SideData(self)

    def side(self, name: str, of: str = "image") -> Any:
        """This batch's rows of ``data.extra[name]``, gathered on first use (``vlp_lib.data.paired.take``): a numpy
        array stays a numpy array and a list a list, a torch tensor comes on the batch's device (that of
        ``images``), a mapping as a dict of each. ``of="text"`` gathers by the texts' indices instead of the
        images' (they differ only with an unpaired sampler): e.g. a teacher's text features in DIME-FM. A method
        declares what it reads in ``Method.required_extras``, checked before training."""
        if of not in ("image", "text"):
            raise ValueError(f"of must be 'image' or 'text', got {of!r}")
        if self.data is None:
            raise ValueError(f"side({name!r}): this batch carries no data to gather side data from")
        key = ("side", name, of)
        if key not in self._cache:
            indices = self.indices if of == "image" else self.text_indices
            assert indices is not None  # __post_init__ sets text_indices
            rows = self.data.gather(name, indices)
            self._cache[key] = _to_device(rows, self.images.device)
        return self._cache[key]

    def view(self, name: str, draw: int = 0) -> torch.Tensor:
        """The augmentation ``name`` (``vlp_lib.data.transforms.AUGMENTATIONS``) of this batch's raw uint8
        images, as model input on the batch's device: e.g. ``view("local")``, PyramidCLIP's local view (§3.2),
        beside ``images``, the configured augmentation (its global view with ``"none"``).

        Views are drawn from their own generator, seeded with (seed, episode, step, name, draw) by the trainer:
        requesting one leaves the data order and ``images`` untouched, and the same request gives the same view.
        ``draw`` numbers independent draws of the same recipe. A view is built once per batch and kept."""
        if name not in AUGMENTATIONS:
            raise ValueError(f"view must be one of {sorted(AUGMENTATIONS)}, got {name!r}")
        if self.view_fn is None:
            raise ValueError(f"view({name!r}): this batch carries no image loader to build views with")
        key = ("view", name, int(draw))
        if key not in self._cache:
            self._cache[key] = self.view_fn(name, int(draw))
        return self._cache[key]


# what a method asks for a trained run with: a run config -> (trained model in eval mode, its tokenizer)
Trained = Callable[[Any], tuple[nn.Module, Any]]  # a RunConfig -> the trained model (eval mode) and its tokenizer


@dataclass
class MethodContext:
    """What a method may build its arguments from (``Method.arguments``): the run's config (a
    ``vlp_lib.run_config.RunConfig``), its training pairs (``data.extra`` may be extended with side data), the freshly
    initialised model (already ``wrap_model``-ed), the tokenizer and ``trained(config)``: the trained model (eval
    mode) and tokenizer of another run, trained first if it is not stored (``experiment.trained_runs``), e.g. a
    frozen teacher. The runner supplies ``trained``, so a method never imports the runner."""

    config: Any  # RunConfig (which imports the method registry, so it is not named here)
    data: PairedData
    model: nn.Module
    tokenizer: Any
    trained: Trained


class Method(nn.Module):
    """Base class. Subclasses set ``name`` and implement ``loss``.

    ``required_extras`` names the ``PairedData.extra`` entries the method reads with ``Batch.side`` (e.g.
    ``("summaries",)``) and ``views`` the augmentations it asks ``Batch.view`` for (e.g. ``("local",)``): the
    trainer checks both before any compute (``check_data``). An instance may set its own in ``__init__``."""

    name = "base"
    # the arguments a run config may set, typed, with their defaults (``vlp_lib.methods.args``)
    Args: ClassVar[type[MethodArgs]] = MethodArgs
    # whether the loss is right across processes (``vlp_lib.distributed``): every batch-global quantity gathered
    distributed = False
    required_extras: tuple[str, ...] = ()
    views: tuple[str, ...] = ()

    @classmethod
    def check_args(cls, args: MethodArgs, episode_size: int) -> None:
        """``ValueError`` naming the argument for what ``args`` (``cls.Args``, already typed) cannot be at this
        ``episode_size`` (called before any compute). Default: nothing beyond the types of ``Args``."""

    @classmethod
    def check_config(cls, config: Any) -> None:
        """``ValueError`` naming the parameter for what the method cannot run with given the whole run config (a
        ``RunConfig``; ``make_config`` calls it last, before any compute): e.g. a student larger than its teacher.
        Default: nothing to check beyond ``check_args``."""

    @classmethod
    def wrap_model(cls, model: nn.Module, args: MethodArgs, trained: Trained) -> nn.Module:
        """The model the run trains, evaluates and checkpoints, from the freshly built one (``experiment.run``)
        or the one a stored checkpoint is loaded into (``experiment.load_trained``): the same call in both, so
        a checkpoint always fits. ``trained(config)`` gives another run's trained model (a teacher). Default:
        ``model`` itself. DIME-FM: the student's image tower + the frozen teacher's text tower."""
        return model

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """The constructor's keyword arguments of a run from its typed ``args`` and what exists only once data and
        model do (``context``): a method that needs a teacher's features, the image tower or side data prepared from
        the training pairs builds them here. The default passes every argument of ``args`` unchanged."""
        return args.kwargs()

    def check_data(self, data: PairedData) -> None:
        """``ValueError`` naming what is missing when ``data`` lacks side data the method reads, or the method asks
        for an unknown view (the trainer calls it before any compute)."""
        for name in self.required_extras:
            try:
                data.check_extra(name)
            except ValueError as err:
                raise ValueError(f"required_extras: method {self.name!r} reads {name!r}: {err}") from None
        for name in self.views:
            if name not in AUGMENTATIONS:
                raise ValueError(
                    f"views: method {self.name!r} asks for view {name!r}, not one of {sorted(AUGMENTATIONS)}"
                )

    def training_data(self, data: PairedData) -> tuple[PairedData, Sampler | None]:
        """The data the trainer iterates and the sampler that orders it (``None``: the trainer's default,
        ``EpisodeSampler()``). Called once, after the method is built. Default: ``(data, None)``. DIME-FM joins
        its text corpus to the image corpus and returns an unpaired sampler over the two pools."""
        return data, None

    def on_episode_start(self, model: nn.Module, episode: Episode) -> None:
        """Per-episode work before training on it (ProtoCLIP: features, K-Means, PBT). Record stage
        times in ``episode.timings`` (seconds); the trainer adds them to the run's timings."""

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError

    def after_step(self, model: nn.Module) -> None:
        """Keep learnable temperatures in range after each optimiser step."""
        clamp_logit_scale_(cast(torch.Tensor, model.logit_scale))
