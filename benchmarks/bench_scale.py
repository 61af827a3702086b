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
    gflop_per_sample      model FLOPs of forward + backward per sample (``torch.utils.flop_counter``: matmuls and
                          convolutions; elementwise work is not counted, as in the usual MFU)
    peak_tflops           one device's peak in the run's precision: ``--peak-tflops`` if given, else measured here
                          (``bench_overheads.matmul_peak_flops``: 10 square GEMMs, 8192 on a GPU, 2048 on a CPU: an
                          attainable peak, below the data-sheet figure)
    mfu                   gflop_per_sample * samples_per_s / (processes * peak)
    mfu_datasheet         the same against the data sheet's dense bf16 peak of a known GPU (H100/H200 SXM 989,
                          A100 312 TFLOP/s), when the device is one

``--method protoclip`` adds an episode every ``--episode-steps`` steps (features, K-Means, PBT): the time of the
whole episode counts, not only the steps.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from bench_overheads import matmul_peak_flops, step_flops

from vlp_lib import distributed
from vlp_lib.data.paired import PairedData
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.methods import CLIP
from vlp_lib.models import available_models, create_model, model_image_size
from vlp_lib.papers.protoclip.method import ProtoCLIP
from vlp_lib.train import TrainConfig, model_input, resolve_device, train

DATASHEET_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}


def random_pairs(n: int, image_size: int, vocab_size: int, context_length: int, seed: int = 0) -> PairedData:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, image_size, image_size, 3), dtype=np.uint8)
    tokens = torch.from_numpy(rng.integers(1, vocab_size, size=(n, context_length)))
    return PairedData(images, [""] * n, tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit-tiny", choices=available_models())
    parser.add_argument("--image-size", type=int, default=None, help="default: the model config's")
    parser.add_argument("--batch-size", type=int, default=256, help="the global batch (all processes)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--method", default="clip", choices=("clip", "protoclip"))
    parser.add_argument("--episode-steps", type=int, default=10, help="protoclip: steps per episode")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--peak-tflops", type=float, default=None)
    args = parser.parse_args()
    ranks = distributed.init_from_env()
    device = resolve_device(args.device)
    if device.type == "cuda" and ranks.parallel:
        device = torch.device("cuda", torch.cuda.current_device())
    tokenizer = world_tokenizer()
    model = create_model(args.model, tokenizer.vocab_size, tokenizer.context_length, image_size=args.image_size, seed=0)
    size = model_image_size(model)
    data = random_pairs(
        args.batch_size * max(args.steps, args.warmup_steps), size, tokenizer.vocab_size, tokenizer.context_length
    )

    def method() -> torch.nn.Module:
        if args.method == "clip":
            return CLIP()
        return ProtoCLIP(embed_dim=int(model.text_projection.shape[1]), images_per_prototype=10)

    def run(steps: int) -> float:
        episode = args.batch_size * (args.episode_steps if args.method == "protoclip" else steps)
        config = TrainConfig(
            epochs=steps * args.batch_size / len(data),
            batch_size=args.batch_size,
            episode_size=min(episode, len(data)),
            precision=args.precision,
            warmup_steps=1,
            device=str(device),
            progress=False,
        )
        t0 = time.perf_counter()  # the whole call: ProtoCLIP's episodes (extraction, K-Means, PBT) count too
        result = train(model, method(), data, config)
        steps_run = len(result.history)
        return steps_run * args.batch_size / (time.perf_counter() - t0)

    run(args.warmup_steps)
    samples_per_s = run(args.steps)
    batch = max(1, args.batch_size // ranks.world_size)  # one rank's share: the FLOPs do not depend on precision
    flops = step_flops(model, model_input(data.images[:batch], size, device), data.tokens[:batch].to(device)) / batch
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
        "gflop_per_sample": flops / 1e9,
        "peak_tflops": peak / 1e12,
        "mfu": flops * samples_per_s / (ranks.world_size * peak),
    }
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
