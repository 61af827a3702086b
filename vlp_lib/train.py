"""The one training loop. Every paper's method plugs into it (``vlp_lib.methods``).

    for episode in episodes:                 # ProtoCLIP III-D; for CLIP an episode is an epoch
        method.on_episode_start(...)         # optional: features, K-Means, PBT (timed)
        for batch in episode:
            loss = method.loss(model, batch) # under autocast when precision is bf16; the method may ask
                                             # for side data (batch.side) and named views (batch.view)
            backward, clip gradients, AdamW step, warm-up + cosine learning rate
                                             # (the image tower's ends early with locked-image tuning;
                                             # across processes DDP averages gradients: ``distributed``)
            method.after_step(model)         # clamp learnable temperatures at 100
        checkpoint                           # atomic, with a digest; a restarted run resumes after the last
                                             # one saved (a corrupt checkpoint is discarded, never loaded):
                                             # after the first and the last episode, and between them at most
                                             # every CHECKPOINT_EVERY_S seconds

The seed fixes everything: the model's initialisation (``create_model``), each episode's data order
(``rng(seed, episode)``, by default ``episode_indices``; another ``vlp_lib.data.sampler`` can pair texts in an
independent order or mix sources) and augmentation (a torch generator seeded with ``(seed, episode)``), so a
resumed run continues exactly where the interrupted one would have gone. A method's extra image views
(``Batch.view``) come from generators of their own (``view_generator``), and its side data (``Batch.side``)
is gathered only when read: neither moves the streams above.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import math
import os
import time
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import (
    tqdm,  # the text bar: works in terminals, papermill and JupyterLab alike
)

from vlp_lib import distributed
from vlp_lib.config import check_number, check_positive_int
from vlp_lib.data.paired import PairedData
from vlp_lib.data.sampler import EpisodeSampler, Sampler, episode_indices  # noqa: F401 (episode_indices: re-exported)
from vlp_lib.data.transforms import AUGMENTATIONS, augment, to_model_input
from vlp_lib.methods.base import Batch, Episode, Method
from vlp_lib.models import model_image_size

PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class TrainConfig:
    epochs: float = 4.0  # training amount in passes over the data: n_episodes = epochs * N / episode_size
    batch_size: int = 256
    episode_size: int | None = None  # None: the whole data set (an episode is an epoch)
    lr: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 50
    grad_clip_norm: float = 1e5  # ProtoCLIP IV-A-2 clips at 1e5 "to prevent model collapse"
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    precision: str = "fp32"
    augmentation: str = "none"
    # ProtoCLIP IV-A-2 (locked-image tuning, LiT): the image tower's own warm-up + cosine schedule ends this
    # fraction of the steps before the end, and its learning rate is zero afterwards (as the official
    # protoclip_cosine_lr); the rest of the model keeps the full schedule. Methods see ``Batch.image_locked``.
    image_lock_fraction: float = 0.0
    seed: int = 0
    device: str = "auto"  # "auto": CUDA when available, else CPU
    progress: bool = True

    def validate(self, n_data: int) -> None:
        """``ValueError`` naming the parameter, before any compute."""
        check_number("epochs", self.epochs, low=0.0, low_open=True)
        check_positive_int("batch_size", self.batch_size)
        episode = n_data if self.episode_size is None else check_positive_int("episode_size", self.episode_size)
        if episode > n_data:
            raise ValueError(f"episode_size ({episode}) is larger than the data set ({n_data} pairs)")
        if self.batch_size > episode:
            raise ValueError(f"batch_size ({self.batch_size}) is larger than the episode/data ({episode} pairs)")
        check_number("lr", self.lr, low=0.0, low_open=True)
        check_number("weight_decay", self.weight_decay, low=0.0)
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be an integer >= 0, got {self.warmup_steps!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.augmentation not in AUGMENTATIONS:
            raise ValueError(f"augmentation must be one of {sorted(AUGMENTATIONS)}, got {self.augmentation!r}")
        if self.device != "auto":
            try:
                torch.device(self.device)
            except RuntimeError as err:
                raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}") from err
        if not 0.0 <= check_number("image_lock_fraction", self.image_lock_fraction) < 1.0:
            raise ValueError(f"image_lock_fraction must be in [0, 1), got {self.image_lock_fraction!r}")

    def episode_length(self, n_data: int) -> int:
        return n_data if self.episode_size is None else int(self.episode_size)

    def n_episodes(self, n_data: int) -> int:
        return max(1, round(self.epochs * n_data / self.episode_length(n_data)))

    def steps_per_episode(self, n_data: int) -> int:
        return self.episode_length(n_data) // self.batch_size  # the last partial batch is dropped


# A checkpoint after every episode cost real-data runs a sixth of their time (the BPE vocabulary's embeddings and
# their AdamW moments make 55 MB for rn-tiny, and the drawings chapter's runs have 38 episodes): after the first
# episode (so that an interrupted run loses at most one), then at most every 30 s, and after the last (the trained
# model the record points to). Resuming from any of them gives the same run.
CHECKPOINT_EVERY_S = 30.0


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class TrainResult:
    history: list[dict[str, float]]
    timings: dict[str, float]
    samples_per_s: float
    resumed_from_episode: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def param_groups(model: nn.Module, method: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: no weight decay on gains, biases and temperatures (1-d parameters and logit
    scales, as open_clip's training script); image-tower parameters tagged so that the locked-image
    phase can zero their learning rate."""
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    named = [(f"model.{n}", p) for n, p in model.named_parameters()]
    named += [(f"method.{n}", p) for n, p in method.named_parameters()]
    for name, p in named:
        if not p.requires_grad:
            continue
        no_decay = p.ndim < 2 or "logit_scale" in name or "bias" in name or ".ln" in name or ".bn" in name
        image = name.startswith("model.visual.") or ".image_head" in name
        groups.setdefault((image, no_decay), []).append(p)
    return [
        {"params": ps, "weight_decay": 0.0 if no_decay else weight_decay, "image_tower": image}
        for (image, no_decay), ps in sorted(groups.items())
    ]


def lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Linear warm-up, then cosine decay to zero."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def view_generator(seed: int, episode: int, step: int, name: str, draw: int = 0) -> torch.Generator:
    """The generator of view ``name`` (draw ``draw``) at ``step``: seeded from all five, apart from the episode's
    augmentation generator, so that asking for a view changes no other random number of the run."""
    entropy = np.random.SeedSequence([seed, episode, step, zlib.crc32(name.encode()), draw, 0x71E3])
    return torch.Generator().manual_seed(int(entropy.generate_state(1, np.uint64)[0]))


class Step(nn.Module):
    """The model and the method as one module whose forward is the method's loss on a batch: what
    ``DistributedDataParallel`` wraps across processes (``distributed.wrap``), since its hooks see only forwards
    called through the wrapper and the methods call the towers directly."""

    def __init__(self, model: nn.Module, method: Method) -> None:
        super().__init__()
        self.model = model
        self.method = method

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        return self.method.loss(self.model, batch)


def has_convolutions(model: nn.Module) -> bool:
    """Whether ``model`` has a convolution past a ViT's one patch embedding (the ``rn-*`` presets, RN50)."""
    return sum(isinstance(m, nn.Conv2d) for m in model.modules()) > 1


def prefetches(device: torch.device) -> bool:
    """Whether ``train`` makes the next batch on a second thread while a step runs: on a GPU, where the host's
    gather, pinning and copy otherwise wait for the device and the device for them (H200, bf16, 224 px: RN50 CLIP
    1,887 -> 2,194 samples/s, ViT-B-32 at batch 1,024 4,682 -> 5,800; README). Not on a CPU, where the batch's
    conversion and crop would run beside the step's own threads on the same cores (this 2-core machine: the
    trainer 1.6 times slower)."""
    return device.type == "cuda"


def clip_gradients(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` (its total 2-norm, then every gradient times
    ``min(1, max_norm / (norm + 1e-6))``), without the multiplication by exactly 1 when nothing is clipped: the same
    gradients bit for bit, half a millisecond less per laptop step. The norm is read on the host, as the history
    reads it anyway."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
    if bool(max_norm / (norm + 1e-6) < 1.0):  # torch's own coefficient, in its dtype
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
    return norm


def model_input(images: np.ndarray, image_size: int, device: torch.device, channels_last: bool = False) -> torch.Tensor:
    """uint8 ``[N, H, W, 3]`` rows -> normalised model input on ``device``. On a GPU the uint8 batch is copied
    from pinned memory without blocking (a quarter of the float32 bytes) and converted there, and convolutional
    models get channels-last input (their weights are converted by ``train``)."""
    if device.type != "cuda":
        return to_model_input(images, image_size).to(device)
    raw = torch.from_numpy(np.ascontiguousarray(images)).pin_memory().to(device, non_blocking=True)
    x = to_model_input(raw, image_size)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


CHECKPOINT_MAGIC = b"VLPCKPT1"


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """``state`` written atomically (temporary file + ``os.replace``) as ``CHECKPOINT_MAGIC``, the SHA-256 of the
    ``torch.save`` bytes, then those bytes: ``load_checkpoint`` recognises a checkpoint that is cut short or
    altered, which ``torch.load`` alone does not always do (a flipped bit inside a tensor loads silently)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(CHECKPOINT_MAGIC + hashlib.sha256(payload).digest() + payload)
    os.replace(tmp, path)


def load_checkpoint(path: Path | str, map_location: Any = "cpu") -> dict[str, Any] | None:
    """The state saved by ``save_checkpoint`` at ``path``, or ``None`` when there is none; a file that is not a
    whole checkpoint (wrong header, digest mismatch, unreadable) is reported with a warning, deleted and ``None``
    returned: never loaded."""
    path = Path(path)
    if not path.exists():
        return None
    blob = path.read_bytes()
    head = len(CHECKPOINT_MAGIC)
    payload = blob[head + 32 :]
    if blob[:head] != CHECKPOINT_MAGIC or hashlib.sha256(payload).digest() != blob[head : head + 32]:
        warnings.warn(f"checkpoint {path} is corrupt or cut short ({len(blob)} bytes); discarded", stacklevel=2)
        path.unlink(missing_ok=True)
        return None
    return torch.load(io.BytesIO(payload), map_location=map_location, weights_only=False)


def train(
    model: nn.Module,
    method: Method,
    data: PairedData,
    config: TrainConfig,
    checkpoint_path: Path | None = None,
    sampler: Sampler | None = None,
) -> TrainResult:
    """Train ``model`` with ``method`` on ``data``. With ``checkpoint_path`` a checkpoint is written after
    every episode and an existing one is resumed from (same config assumed: the caller keys the path by
    the run's config hash, and a sampler other than the default must be part of it). ``sampler`` orders each
    episode (``vlp_lib.data.sampler``; default ``EpisodeSampler()``, the paired order of ``episode_indices``).
    ``epochs`` and ``episode_size`` count samples of the sampler's ``size``: its image pool when it has one (an
    epoch of DIME-FM is a pass over its image corpus, however large the text corpus joined to it)."""
    n = len(data)
    sampler = EpisodeSampler() if sampler is None else sampler
    n_epoch = sampler.size(n)  # epochs and episodes count over the sampler's images (all the data by default)
    config.validate(n_epoch)
    episode_length = config.episode_length(n_epoch)
    sampler.check(n, episode_length, config.batch_size)
    method.check_data(data)
    n_episodes = config.n_episodes(n_epoch)
    steps_per_episode = config.steps_per_episode(n_epoch)
    total_steps = n_episodes * steps_per_episode
    lock_step = int(round(total_steps * (1.0 - config.image_lock_fraction))) if config.image_lock_fraction else None
    image_size = model_image_size(model)
    device = resolve_device(config.device)
    model.to(device)
    method.to(device)
    channels_last = device.type == "cuda" and has_convolutions(model)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    ranks = distributed.world()
    if ranks.parallel:
        if not method.distributed:
            raise ValueError(
                f"method {method.name!r} does not run across processes yet (its loss reads batch-global "
                "quantities that are not gathered); run it in one process"
            )
        distributed.check_batch(config.batch_size)

    # fused: one kernel over every tensor. PyTorch's default on CPUs is a Python loop over the tensors (rn-tiny's
    # 84: 9.5 ms per step on this CPU, fused 2.5 ms, about 5% of a laptop step); on GPUs it is also the fastest
    optimizer = torch.optim.AdamW(
        param_groups(model, method, config.weight_decay), lr=config.lr, betas=config.betas, eps=config.eps, fused=True
    )
    trained_params = [p for g in optimizer.param_groups for p in g["params"]]
    history: list[dict[str, float]] = []
    timings: dict[str, float] = {}
    samples_seen: dict[str, int] = {}  # per source, over every episode trained (the sampler's accounting)
    start_episode = 0
    state = None if checkpoint_path is None else load_checkpoint(checkpoint_path, map_location=device)
    if state is not None:
        model.load_state_dict(state["model"])
        method.load_state_dict(state["method"])
        optimizer.load_state_dict(state["optimizer"])
        history, timings, start_episode = state["history"], state["timings"], state["episode"] + 1
        samples_seen = state.get("samples_seen", {})

    step_module = distributed.wrap(Step(model, method))
    if ranks.rank:  # every rank its own dropout masks (open_clip seeds each rank apart); rank 0 keeps one process's
        torch.manual_seed(int(np.random.SeedSequence([config.seed, ranks.rank, 0xD0]).generate_state(1)[0]))

    def autocast() -> contextlib.AbstractContextManager:
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.precision == "bf16")

    def load_view(idx: np.ndarray, ep: int, step: int, name: str, draw: int) -> torch.Tensor:
        """``Batch.view``: augmentation ``name`` of the global batch's raw images ``idx``, from a generator of its
        own, this rank's share of it (across processes every rank draws the whole batch's view, as one process)."""
        x = model_input(data.images[idx], image_size, device, channels_last)
        return distributed.shard(augment(x, name, generator=view_generator(config.seed, ep, step, name, draw)))

    bar = tqdm(
        total=total_steps,
        initial=start_episode * steps_per_episode,
        desc=f"{method.name} seed {config.seed}",
        disable=not config.progress,
        mininterval=2.0,  # few updates: executed notebooks keep every one in their output
    )
    t_train = 0.0  # this call's training time (timings accumulate across resumes)
    last_checkpoint = time.perf_counter()
    for ep in range(start_episode, n_episodes):
        plan = sampler.plan(config.seed, ep, n, episode_length, config.batch_size)
        indices = plan.images
        gen = torch.Generator().manual_seed(config.seed * 1_000_003 + ep)

        def load_images(idx: np.ndarray, augmented: bool) -> torch.Tensor:
            x = model_input(data.images[idx], image_size, device, channels_last)
            return augment(x, config.augmentation, generator=gen) if augmented else x

        episode = Episode(
            ep,
            indices,
            data,
            config.batch_size,
            load_images,
            autocast,
            image_locked=lock_step is not None and ep * steps_per_episode >= lock_step,
            text_indices=plan.texts,
        )
        t0 = time.perf_counter()
        method.on_episode_start(model, episode)
        _add(timings, "episode_start", time.perf_counter() - t0)
        for name, seconds in episode.timings.items():
            _add(timings, name, seconds)

        def host_batch(b: int) -> Batch:
            """Step ``b``'s batch: its rows gathered, converted and augmented from the episode's generator (in
            step order: one batch at a time), its tokens, indices and sources."""
            step = ep * steps_per_episode + b
            positions = np.arange(b * config.batch_size, (b + 1) * config.batch_size)
            # across processes each rank augments the whole global batch, so the episode's augmentation stream is
            # drawn as in one process, and keeps its own share (in one process: all of it)
            images = distributed.shard(load_images(indices[positions], True))
            view_fn = functools.partial(load_view, indices[positions], ep, step)
            positions = distributed.shard(positions)
            idx, text_idx = indices[positions], plan.texts[positions]
            return Batch(
                images,
                data.tokens[text_idx].to(device),
                idx,
                positions,
                step,
                total_steps,
                image_locked=lock_step is not None and step >= lock_step,
                text_indices=text_idx,
                source=plan.names(positions),
                data=data,
                view_fn=view_fn,
            )

        model.train()
        method.train()
        t0 = time.perf_counter()
        t_data = 0.0  # the time the loop waited for a batch (what the prefetch did not hide)
        # the next batch is made on a second thread while this step runs: on a GPU the host's gather, pinning and
        # copy (15 ms of ViT-B-32's 84 ms step at batch 256, README) overlap the device's work; the batches and
        # their random draws are those of one thread (one batch at a time, in order, from the same generator)
        prefetch = ThreadPoolExecutor(max_workers=1) if prefetches(device) else None
        pending = prefetch.submit(host_batch, 0) if prefetch else None
        for b in range(steps_per_episode):
            step = ep * steps_per_episode + b
            factor = lr_factor(step, total_steps, config.warmup_steps)
            image_factor = factor if lock_step is None else lr_factor(step, lock_step, config.warmup_steps)
            locked = lock_step is not None and step >= lock_step
            t1 = time.perf_counter()
            batch = pending.result() if pending else host_batch(b)
            if prefetch and b + 1 < steps_per_episode:
                pending = prefetch.submit(host_batch, b + 1)
            t_data += time.perf_counter() - t1
            for group in optimizer.param_groups:
                if group["image_tower"]:
                    group["lr"] = 0.0 if locked else config.lr * image_factor
                else:
                    group["lr"] = config.lr * factor
            with autocast():
                loss, logs = step_module(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # across processes DDP averages the gradients here
            grad_norm = clip_gradients(trained_params, config.grad_clip_norm)
            optimizer.step()
            method.after_step(model)
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"loss became {loss_value} at step {step} (episode {ep})")
            logs = distributed.mean({"loss": loss_value, **logs})  # the global batch's loss and terms
            history.append(
                {
                    "step": step,
                    "episode": ep,
                    "loss": logs.pop("loss"),
                    "lr": config.lr * factor,
                    "image_lr": 0.0 if locked else config.lr * image_factor,
                    "grad_norm": float(grad_norm),
                    **logs,
                }
            )
            bar.update(1)
            bar.set_postfix(loss=f"{history[-1]['loss']:.3f}", episode=f"{ep + 1}/{n_episodes}")
        if prefetch:
            prefetch.shutdown()
        t_train += time.perf_counter() - t0
        _add(timings, "training", time.perf_counter() - t0)
        _add(timings, "data_loading", t_data)
        for source, count in plan.seen(steps_per_episode * config.batch_size).items():
            samples_seen[source] = samples_seen.get(source, 0) + count
        due = ep in (start_episode, n_episodes - 1) or time.perf_counter() - last_checkpoint >= CHECKPOINT_EVERY_S
        if checkpoint_path is not None and ranks.is_main and due:  # one writer; every rank resumes from it
            t0 = time.perf_counter()
            save_checkpoint(
                {
                    "model": model.state_dict(),
                    "method": method.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "history": history,
                    "timings": timings,
                    "episode": ep,
                    "config": asdict(config),
                    "samples_seen": samples_seen,
                },
                Path(checkpoint_path),
            )
            _add(timings, "checkpoint", time.perf_counter() - t0)
            last_checkpoint = time.perf_counter()
    bar.close()
    model.eval()
    method.eval()
    samples = (n_episodes - start_episode) * steps_per_episode * config.batch_size
    return TrainResult(
        history=history,
        timings=timings,
        samples_per_s=samples / t_train if samples else 0.0,
        resumed_from_episode=start_episode,
        extra={"samples_seen": samples_seen},
    )


def _add(timings: dict[str, float], key: str, seconds: float) -> None:
    timings[key] = timings.get(key, 0.0) + seconds
