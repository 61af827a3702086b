"""The trainer's step against open_clip's own training loop on the same model, batches and optimizer. Prints
``name value`` lines.

    python benchmarks/bench_openclip.py [--model rn-tiny] [--image-size 32] [--batch-size 128] [--steps 30]
                                        [--repeats 5] [--precision fp32] [--device auto]
    python benchmarks/bench_openclip.py --device cuda --precision bf16 --model ViT-B-32 --image-size 224   # a GPU

The peer is ``open_clip_train.train.train_one_epoch`` (open_clip_torch's training script, 3.3.0), called as its
``main`` calls it: the model from ``vlp_lib.models.create_model`` (an ``open_clip.model.CLIP`` of the preset's
config, the same initial weights for every loop), ``open_clip.ClipLoss``, AdamW built as ``main`` builds it (no
weight decay on gains, biases and the logit scale; PyTorch's default kernel, which is a loop over the tensors on a
CPU and ``foreach`` on a GPU), its ``cosine_lr`` schedule, no gradient scaler (fp32, or bf16 autocast as its
``amp_bf16``), gradient clipping at the trainer's norm (``--grad-clip-norm``), wandb and TensorBoard off, logging
every 100 steps (its default). Its batches come from an in-memory stand-in of its DataLoader (``Batches``): the
float images its data pipeline would hand over (the trainer's own conversion of the same uint8 rows, in pinned memory
on a GPU as its ``pin_memory=True``) and their tokens, made before the clock starts. The trainer
(``vlp_lib.train`` with CLIP) trains on those uint8 rows and tokens (random pixels and token ids: the cost does not
depend on content), converting the rows itself in each step, as it does in the book. The augmentation is ``"off"``
by default, so that both loops see the same images: open_clip's training transform runs in its DataLoader workers,
outside the loop; ``--augmentation none`` times the book's recipe crop inside the trainer's step.

On a GPU the process takes open_clip ``main``'s backend settings for both loops (TF32 matmuls, cuDNN benchmark), and
the clocks wait for the device. Each loop trains a warm-up call of ``--warmup-steps`` first (allocator, kernel
selection), then ``--repeats`` timed calls of ``--steps`` steps each, the loops' order rotating from one repeat to
the next; the medians are printed. A timed call is ``train_one_epoch`` (its optimizer and schedule built before the
clock, as ``main`` builds them once) or the whole call of ``vlp_lib.train`` (which builds its AdamW inside, well
under a millisecond).

    openclip_loop_samples_per_s    open_clip's loop as its script runs it
    openclip_fused_samples_per_s   the same loop with the trainer's AdamW kernel (``fused=True``): the loops' own
                                   difference, without the optimizer kernel's
    trainer_samples_per_s          ``vlp_lib.train``
    trainer_over_openclip          trainer / open_clip's loop (above 1: the trainer is faster)
    trainer_over_openclip_fused    trainer / open_clip's loop with the fused AdamW
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import open_clip
import torch
from bench_overheads import synchronizer
from bench_scale import random_pairs
from open_clip_train.data import DataInfo
from open_clip_train.scheduler import cosine_lr
from open_clip_train.train import train_one_epoch

from vlp_lib.data.paired import PairedData
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.transforms import AUGMENTATIONS, to_model_input
from vlp_lib.methods import CLIP
from vlp_lib.models import available_models, create_model
from vlp_lib.train import TrainConfig, resolve_device, train

OPENCLIP_PRECISION = {"fp32": "fp32", "bf16": "amp_bf16"}  # open_clip's --precision for the trainer's
LOG_EVERY_N_STEPS = 100  # open_clip's default --log-every-n-steps
ARMS = ("openclip_loop", "openclip_fused", "trainer")


@dataclass
class Batches:
    """What ``train_one_epoch`` reads of open_clip's DataLoader: iteration over ``(images, texts)`` batches and the
    ``num_batches`` / ``num_samples`` it logs and schedules with."""

    batches: list[tuple[torch.Tensor, torch.Tensor]]

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return iter(self.batches)

    @property
    def num_batches(self) -> int:
        return len(self.batches)

    @property
    def num_samples(self) -> int:
        return sum(len(images) for images, _ in self.batches)


def openclip_batches(data: PairedData, steps: int, batch_size: int, device: torch.device) -> Batches:
    """The first ``steps`` batches of ``data`` in order, as open_clip's DataLoader hands them over: float model
    input (``to_model_input``, what its transform makes) and tokens on the host, pinned when the loop copies them to
    a GPU."""
    out = []
    for rows in np.split(np.arange(steps * batch_size), steps):
        images, texts = to_model_input(data.images[rows]), data.tokens[rows]
        if device.type == "cuda":
            images, texts = images.pin_memory(), texts.pin_memory()
        out.append((images, texts))
    return Batches(out)


def openclip_args(args: argparse.Namespace, device: torch.device) -> argparse.Namespace:
    """The fields of open_clip's parsed arguments that ``train_one_epoch`` reads, for one process."""
    return argparse.Namespace(
        device=str(device),
        precision=OPENCLIP_PRECISION[args.precision],
        batch_size=args.batch_size,
        accum_freq=1,
        distill=False,
        skip_scheduler=False,
        grad_clip_norm=args.grad_clip_norm,
        horovod=False,
        log_every_n_steps=LOG_EVERY_N_STEPS,
        wandb=False,
        world_size=1,
        rank=0,
        local_rank=0,
    )


def openclip_optimizer(model: torch.nn.Module, config: TrainConfig, fused: bool) -> torch.optim.AdamW:
    """AdamW as open_clip_train's ``main`` builds it (its rule for gains and biases), at the trainer's settings;
    ``fused``: the trainer's kernel instead of PyTorch's default."""

    def exclude(name: str, p: torch.nn.Parameter) -> bool:
        return p.ndim < 2 or "bn" in name or "ln" in name or "bias" in name or "logit_scale" in name

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if exclude(n, p)], "weight_decay": 0.0},
        {"params": [p for n, p in named if not exclude(n, p)], "weight_decay": config.weight_decay},
    ]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas, eps=config.eps, fused=fused or None)


def openclip_seconds(
    model: torch.nn.Module, batches: Batches, config: TrainConfig, args: argparse.Namespace, fused: bool
) -> float:
    """Seconds of one ``train_one_epoch`` over ``batches`` (its optimizer and schedule built before the clock)."""
    device = torch.device(args.device)
    optimizer = openclip_optimizer(model, config, fused)
    scheduler = cosine_lr(optimizer, config.lr, config.warmup_steps, batches.num_batches)
    data = {"train": DataInfo(batches)}  # the stand-in in the DataLoader's place
    sync = synchronizer(device)
    sync()
    t0 = time.perf_counter()
    train_one_epoch(model, data, open_clip.ClipLoss(), 0, optimizer, None, scheduler, None, args)
    sync()
    return time.perf_counter() - t0


def trainer_seconds(model: torch.nn.Module, data: PairedData, config: TrainConfig, steps: int) -> float:
    """Seconds of the whole call of ``vlp_lib.train`` for one episode of ``steps`` steps."""
    n = steps * config.batch_size
    sync = synchronizer(resolve_device(config.device))
    sync()
    t0 = time.perf_counter()
    result = train(model, CLIP(), data, dataclasses.replace(config, epochs=n / len(data), episode_size=n))
    sync()
    if len(result.history) != steps:
        raise RuntimeError(f"the trainer ran {len(result.history)} steps, not {steps}")
    return time.perf_counter() - t0


def arms(args: argparse.Namespace) -> dict[str, Callable[[int], float]]:
    """``{arm: seconds(steps)}``: each loop on its own copy of one initial model, the batches made in advance."""
    device = resolve_device(args.device)
    if device.type == "cuda":  # open_clip_train's main sets these for the process
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    tokenizer = world_tokenizer()
    model = create_model(args.model, tokenizer.vocab_size, tokenizer.context_length, image_size=args.image_size)
    steps = max(args.steps, args.warmup_steps)
    data = random_pairs(steps * args.batch_size, args.image_size, tokenizer.vocab_size, tokenizer.context_length)
    config = TrainConfig(
        batch_size=args.batch_size,
        grad_clip_norm=args.grad_clip_norm,
        precision=args.precision,
        augmentation=args.augmentation,
        device=str(device),
        progress=False,
    )
    batches = openclip_batches(data, steps, args.batch_size, device)
    loop_args = openclip_args(args, device)
    models = {arm: copy.deepcopy(model).to(device) for arm in ARMS}

    def openclip(arm: str, fused: bool) -> Callable[[int], float]:
        return lambda n: openclip_seconds(models[arm], Batches(batches.batches[:n]), config, loop_args, fused)

    return {
        "openclip_loop": openclip("openclip_loop", fused=False),
        "openclip_fused": openclip("openclip_fused", fused=True),
        "trainer": lambda n: trainer_seconds(models["trainer"], data, config, n),
    }


def measure(args: argparse.Namespace) -> dict[str, float | str]:
    """Every figure of the docstring."""
    timed = arms(args)
    for seconds in timed.values():
        seconds(args.warmup_steps)
    rates: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for repeat in range(args.repeats):
        for arm in ARMS[repeat % len(ARMS) :] + ARMS[: repeat % len(ARMS)]:
            rates[arm].append(args.steps * args.batch_size / timed[arm](args.steps))
    median = {arm: statistics.median(values) for arm, values in rates.items()}
    return {
        "openclip_config": f"{args.model}_{args.image_size}px_b{args.batch_size}_{args.precision}_{args.augmentation}",
        "openclip_loop_samples_per_s": median["openclip_loop"],
        "openclip_fused_samples_per_s": median["openclip_fused"],
        "trainer_samples_per_s": median["trainer"],
        "trainer_over_openclip": median["trainer"] / median["openclip_loop"],
        "trainer_over_openclip_fused": median["trainer"] / median["openclip_fused"],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="rn-tiny", choices=available_models())
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--precision", default="fp32", choices=tuple(OPENCLIP_PRECISION))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--augmentation", default="off", choices=sorted(AUGMENTATIONS), help="the trainer's")
    parser.add_argument("--grad-clip-norm", type=float, default=TrainConfig.grad_clip_norm)
    parser.add_argument("--device", default="auto")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    for name, value in measure(parse_args(argv)).items():
        print(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}", flush=True)


if __name__ == "__main__":
    main()
