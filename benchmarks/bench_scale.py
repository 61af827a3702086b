"""Training throughput and MFU of the trainer on any device and process count. Prints ``name value`` lines.

    python benchmarks/bench_scale.py [--model vit-tiny] [--batch-size 256] [--precision fp32] [--steps 20]
    python benchmarks/bench_scale.py --model ViT-B-32 --image-size 224 --precision bf16 --batch-size 256   # a GPU
    torchrun --nproc_per_node 2 benchmarks/bench_scale.py ...                                             # DDP

The whole ``vlp_lib.train`` step is timed (uint8 batch to the device through pinned memory on a GPU, the "none"
crop, forward, loss, backward with DDP's gradient average, clipping, AdamW, logging) on random pixels and tokens
(throughput does not depend on content), after a warm-up pass of ``--warmup-steps`` (allocator, kernel selection).
Each name below is printed with the prefix ``scale_``.

    samples_per_s         global batch samples per second over the timed call of ``train`` (all processes together;
                          ProtoCLIP's episode work included)
    step_ms               milliseconds per step
    gflop_per_sample      FLOPs per sample of one ``train`` step of the method (``torch.utils.flop_counter``: matmuls
                          and convolutions of its forward and backward, and of ProtoCLIP's episode feature
                          extraction, one forward per sample per episode; elementwise work is not counted, as in the
                          usual MFU)
    peak_tflops           one device's peak in the run's precision: ``--peak-tflops`` if given, else measured here
                          (``bench_overheads.matmul_peak_flops``: 10 square GEMMs, 8192 on a GPU, 2048 on a CPU: an
                          attainable peak, below the data-sheet figure)
    mfu                   gflop_per_sample * samples_per_s / (processes * peak)
    host_data_ms          host milliseconds per step that the trainer spends making the batch (gathering uint8 rows,
                          pinning, launching the copy; ``TrainResult.timings["data_loading"]``): the step is
                          synchronous (the loss is read every step), so on a GPU this time is not overlapped
    bare_samples_per_s    ``--bare`` (CLIP, one process): the bare step of ``bench_overheads.bare_loop`` on the same
                          model, batch and precision, its batches on the device in advance: what the model sustains
    trainer_overhead      ``--bare``: bare_samples_per_s / samples_per_s (``bench_overheads``' figure on any device)
    mfu_datasheet         the same against the data sheet's dense bf16 peak of a known GPU (H100/H200 SXM 989,
                          A100 312 TFLOP/s), when the device is one

``--method`` takes every method of the book (``vlp_lib.methods.available_methods``), built through the registry
(``vlp_lib.methods.create_method``, and ``Method.wrap_model`` where the method trains another model than the CLIP:
TP_* and ICMLM an image-only tower). Each method's side data, which ``experiment.run`` computes once before training
from the real pairs (``Method.arguments``), is a random stand-in of the same shape here (``BUILDERS``): its content
does not change the step's cost, and the one-time work behind it is not timed (PyramidCLIP's detector and summariser,
DIME-FM's teacher run and its cached features, ICMLM's world-LM pretraining, TP_Postag's tags, iCLIP's class-image
rendering, ProtoCLIP's MiniLM features):

    clip, protoclip       nothing (ProtoCLIP without an external teacher: an episode every ``--episode-steps``
                          steps, its feature extraction, K-Means and PBT timed with the steps)
    pyramidclip           summary tokens, ROI features and masks (1-3 ROIs of the detector's 68-d features), the
                          local view drawn by the trainer: Eq. 6 with every term, alpha = 0.2
    iclip, unicl          class-only images (random pixels, random shape labels) mixed at r = 0.5 by the method's
                          own ``training_data`` (``MixedSampler``); iCLIP's 24 class texts random tokens
    dimefm                the teacher's image and text features (random unit vectors of the model's width); the
                          composite is the model's image tower with the text tower of a second, randomly initialised
                          model of the same preset (frozen; its features are read, not computed, in a step);
                          texts in their own order (``training_data``: unpaired loading)
    tp, icmlm             multi-hot targets of ``TAGS`` tags (``tp_targets``); ICMLM_tfm's frozen world-LM is an
                          untrained one of the default architecture, its maskable positions the tokens of ``TAGS``
                          word ids
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from bench_overheads import bare_loop, matmul_peak_flops
from torch.utils.flop_counter import FlopCounterMode

from vlp_lib import distributed
from vlp_lib.data import vocab
from vlp_lib.data.paired import PairedData
from vlp_lib.data.sampler import Sampler
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.methods import Method, available_methods, create_method, method_class
from vlp_lib.models import CompositeCLIP, available_models, create_model, image_embed_dim, model_image_size
from vlp_lib.train import TrainConfig, has_convolutions, model_input, resolve_device, train

DATASHEET_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}
TAGS = 50  # TP_Postag's K = 50 and ICMLM's maskable word ids
ROI_SLOTS = 3  # the world's scenes hold 1-3 objects

# a method's parts: the model it trains and a factory of fresh methods (its side data already in the data)
Parts = tuple[torch.nn.Module, Callable[[], Method]]


@dataclass
class Setup:
    """What a method's parts are built from: the CLIP, the random pairs, the tokenizer's vocabulary, a generator."""

    model: Any  # an open_clip CLIP
    data: PairedData
    vocab_size: int
    rng: np.random.Generator

    def tokens(self, n: int) -> torch.Tensor:
        """``n`` rows of random token ids at the pairs' context length."""
        return random_tokens(self.rng, n, self.vocab_size, self.data.tokens.shape[1])


def random_pairs(n: int, image_size: int, vocab_size: int, context_length: int, seed: int = 0) -> PairedData:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, image_size, image_size, 3), dtype=np.uint8)
    return PairedData(images, [""] * n, random_tokens(rng, n, vocab_size, context_length))


def random_tokens(rng: np.random.Generator, n: int, vocab_size: int, context_length: int) -> torch.Tensor:
    return torch.from_numpy(rng.integers(1, vocab_size, size=(n, context_length)))


def clip_parts(setup: Setup) -> Parts:
    return setup.model, lambda: create_method("clip")


def protoclip_parts(setup: Setup) -> Parts:
    embed_dim = int(setup.model.text_projection.shape[1])
    return setup.model, lambda: create_method("protoclip", embed_dim=embed_dim, images_per_prototype=10)


def pyramidclip_parts(setup: Setup) -> Parts:
    """Eq. 6 with every term: summary tokens, and 1-3 ROIs per image of the detector's features and boxes."""
    from vlp_lib.papers.pyramidclip.detector import ROI_DIM
    from vlp_lib.papers.pyramidclip.method import FULL_WEIGHTS

    n = len(setup.data)
    mask = setup.rng.random((n, ROI_SLOTS)) < 0.5
    mask[:, 0] = True  # every image holds at least one object
    rois = setup.rng.standard_normal((n, ROI_SLOTS, ROI_DIM)).astype(np.float32)
    setup.data.extra.update(
        summary_tokens=setup.tokens(n), rois=torch.from_numpy(rois), roi_mask=torch.from_numpy(mask)
    )
    visual = setup.model.visual
    return setup.model, lambda: create_method(
        "pyramidclip", visual=visual, weights=FULL_WEIGHTS, alpha=0.2, roi_dim=ROI_DIM
    )


def class_mixing_parts(name: str) -> Callable[[Setup], Parts]:
    """iCLIP or UniCL at r = 0.5, with as many class-only images as pairs (random pixels, random shape labels)."""

    def parts(setup: Setup) -> Parts:
        n, context_length = setup.data.tokens.shape
        source = random_pairs(n, setup.data.images.shape[1], setup.vocab_size, context_length, seed=1)
        source.extra["class_label"] = setup.rng.integers(0, len(vocab.SHAPES), n)
        kwargs: dict[str, Any] = {"ratio": 0.5, "class_source": source}
        if name == "iclip":  # one class text per shape
            kwargs["class_tokens"] = setup.tokens(len(vocab.SHAPES))
        return setup.model, lambda: create_method(name, **kwargs)

    return parts


def dimefm_parts(setup: Setup) -> Parts:
    """The model's image tower with a frozen text tower (``CompositeCLIP``, DIME-FM's ``wrap_model``; a copy of the
    model stands in for the teacher) and the teacher's pre-extracted features of every image and caption."""
    dim = image_embed_dim(setup.model)
    for key in ("teacher_image", "teacher_text"):
        features = setup.rng.standard_normal((len(setup.data), dim)).astype(np.float32)
        setup.data.extra[key] = F.normalize(torch.from_numpy(features), dim=-1)
    return CompositeCLIP(setup.model, copy.deepcopy(setup.model)), lambda: create_method("dimefm", lambda1=0.3)


def image_only_parts(name: str) -> Callable[[Setup], Parts]:
    """TP_Postag (``TAGS`` tags) or ICMLM_tfm on the image tower alone (the method's ``wrap_model``)."""

    def parts(setup: Setup) -> Parts:
        cls = method_class(name)
        model = cls.wrap_model(setup.model, cls.Args(), lambda config: (setup.model, None))
        width = model.map_shape()[0]
        targets = (setup.rng.random((len(setup.data), TAGS)) < 0.1).astype(np.float32)
        setup.data.extra["tp_targets"] = torch.from_numpy(targets)
        if name == "tp":
            return model, lambda: create_method("tp", width=width, n_tags=TAGS)
        from vlp_lib.papers.icmlm import lexicon
        from vlp_lib.papers.icmlm.world_lm import DEFAULTS, WorldLM

        shape = {key: DEFAULTS[key] for key in ("width", "layers", "heads", "mlp_ratio")}
        lm = WorldLM(setup.vocab_size, setup.data.tokens.shape[1], **shape, dropout=0.0)
        lm.eval().requires_grad_(False)
        mask_ids = torch.arange(1, TAGS + 1)
        setup.data.extra["maskable"] = lexicon.maskable(setup.data.tokens, mask_ids)
        return model, lambda: create_method(
            "icmlm", width=width, n_tags=TAGS, lm=lm, mask_ids=mask_ids, head="tfm", seed=0
        )

    return parts


BUILDERS: dict[str, Callable[[Setup], Parts]] = {
    "clip": clip_parts,
    "protoclip": protoclip_parts,
    "pyramidclip": pyramidclip_parts,
    "iclip": class_mixing_parts("iclip"),
    "unicl": class_mixing_parts("unicl"),
    "dimefm": dimefm_parts,
    "tp": image_only_parts("tp"),
    "icmlm": image_only_parts("icmlm"),
}


def train_config(args: argparse.Namespace, steps: int, n_epoch: int, device: torch.device) -> TrainConfig:
    """``steps`` steps of the global batch (ProtoCLIP: episodes of ``--episode-steps`` steps; the others one
    episode) over an epoch of ``n_epoch`` samples."""
    episode = args.batch_size * (args.episode_steps if args.method == "protoclip" else steps)
    return TrainConfig(
        epochs=steps * args.batch_size / n_epoch,
        batch_size=args.batch_size,
        episode_size=min(episode, n_epoch),
        precision=args.precision,
        warmup_steps=1,
        device=str(device),
        progress=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit-tiny", choices=available_models())
    parser.add_argument("--image-size", type=int, default=None, help="default: the model config's")
    parser.add_argument("--batch-size", type=int, default=256, help="the global batch (all processes)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--method", default="clip", choices=available_methods())
    parser.add_argument("--episode-steps", type=int, default=10, help="protoclip: steps per episode")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--bare", action="store_true", help="clip in one process: also time the bare step")
    args = parser.parse_args()
    if args.method not in BUILDERS:
        parser.error(f"method {args.method!r} has no random stand-in for its side data yet (BUILDERS)")
    ranks = distributed.init_from_env()  # joins the group only: nothing is computed before the checks
    if args.bare and (args.method != "clip" or ranks.parallel):
        parser.error("--bare times the bare CLIP step in one process: --method clip, without torchrun")
    device = resolve_device(args.device)
    if device.type == "cuda" and ranks.parallel:
        device = torch.device("cuda", torch.cuda.current_device())
    tokenizer = world_tokenizer()
    model = create_model(args.model, tokenizer.vocab_size, tokenizer.context_length, image_size=args.image_size, seed=0)
    size = model_image_size(model)
    data = random_pairs(
        args.batch_size * max(args.steps, args.warmup_steps), size, tokenizer.vocab_size, tokenizer.context_length
    )
    trained, method = BUILDERS[args.method](Setup(model, data, tokenizer.vocab_size, np.random.default_rng(0)))

    def prepared() -> tuple[Method, PairedData, Sampler | None, int]:
        """A fresh method, the data it trains on and its sampler (``Method.training_data``), and an epoch's size."""
        fresh = method()
        merged, sampler = fresh.training_data(data)
        return fresh, merged, sampler, len(merged) if sampler is None else sampler.size(len(merged))

    def run(steps: int) -> tuple[float, float]:
        """Samples per second of ``train`` over ``steps`` steps, and its host milliseconds per step spent making
        batches (``TrainResult.timings["data_loading"]``)."""
        fresh, merged, sampler, n_epoch = prepared()
        config = train_config(args, steps, n_epoch, device)
        t0 = time.perf_counter()  # the whole call: ProtoCLIP's episodes (extraction, K-Means, PBT) count too
        result = train(trained, fresh, merged, config, sampler=sampler)
        seconds = time.perf_counter() - t0
        return len(result.history) * args.batch_size / seconds, 1000 * result.timings["data_loading"] / steps

    def bare_samples_per_s() -> float:
        """The bare CLIP step (``bench_overheads.bare_loop``: forward, ``open_clip.ClipLoss``, backward, fused
        AdamW) on the trained model, its batches converted and placed on the device in advance, in the run's
        precision: what the model alone sustains."""
        channels_last = device.type == "cuda" and has_convolutions(trained)
        batches = [
            (model_input(data.images[rows], size, device, channels_last), data.tokens[rows].to(device))
            for rows in np.split(np.arange(args.steps * args.batch_size), args.steps)
        ]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            return args.batch_size / bare_loop(trained, batches)

    def step_flops() -> float:
        """FLOPs per sample of one step (an episode of one batch: ProtoCLIP extracts each sample once per episode,
        as in the timed run), on this process's share of the batch."""
        fresh, merged, sampler, n_epoch = prepared()
        config = dataclasses.replace(train_config(args, 1, n_epoch, device), episode_size=args.batch_size)
        with FlopCounterMode(display=False) as counter:
            train(trained, fresh, merged, config, sampler=sampler)
        return counter.get_total_flops() / max(1, args.batch_size // ranks.world_size)

    run(args.warmup_steps)
    samples_per_s, host_data_ms = run(args.steps)
    flops = step_flops()
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    peak = (
        1e12 * args.peak_tflops
        if args.peak_tflops
        else matmul_peak_flops(8192 if device.type == "cuda" else 2048, device=device, dtype=dtype)
    )
    out = {
        "processes": ranks.world_size,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "samples_per_s": samples_per_s,
        "step_ms": 1000 * args.batch_size / samples_per_s,
        "host_data_ms": host_data_ms,
        "gflop_per_sample": flops / 1e9,
        "peak_tflops": peak / 1e12,
        "mfu": flops * samples_per_s / (ranks.world_size * peak),
    }
    if args.bare:
        bare = bare_samples_per_s()
        out.update(bare_samples_per_s=bare, trainer_overhead=bare / samples_per_s)
    if device.type == "cuda" and args.precision == "bf16":
        sheet = next((v for k, v in DATASHEET_BF16_TFLOPS.items() if k in out["device"]), None)
        if sheet:
            out["mfu_datasheet"] = flops * samples_per_s / (ranks.world_size * sheet * 1e12)
    if ranks.is_main:
        tag = f"{args.model}_{size}px_b{args.batch_size}_{args.precision}_{args.method}_x{ranks.world_size}"
        print(f"scale_config {tag}")
        for name, value in out.items():
            # prefixed: `make bench` collects every script's names in one file (bench_recipe has its own mfu)
            print(
                f"scale_{name} {value:.4g}"
                if isinstance(value, float)
                else f"scale_{name} {str(value).replace(' ', '_')}"
            )
    if ranks.parallel:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
