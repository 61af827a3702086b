"""Training throughput of the trainer per model preset and precision. Prints ``name value`` lines.

    python benchmarks/bench_train.py [--pairs 4096] [--batch-size 256] [--presets vit-tiny rn-tiny]

Each configuration trains one warm-up pass (not timed: allocator and kernel selection), then one
timed pass over ``--pairs`` generated pairs; samples/s counts the whole step (data, augmentation,
forward, backward, AdamW).
"""

from __future__ import annotations

import argparse
import json

import torch

from vlp_lib.data.paired import from_world
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.world import generate
from vlp_lib.methods import CLIP
from vlp_lib.models import CPU_PRESETS, create_model
from vlp_lib.train import TrainConfig, train


def samples_per_s(preset: str, precision: str, data, tokenizer, batch_size: int) -> float:
    model = create_model(preset, tokenizer.vocab_size, tokenizer.context_length, seed=0)
    warm = TrainConfig(
        epochs=min(1.0, 2 * batch_size / len(data)),
        batch_size=batch_size,
        precision=precision,
        warmup_steps=1,
        progress=False,
    )
    train(model, CLIP(), data, warm)
    timed = TrainConfig(epochs=1, batch_size=batch_size, precision=precision, warmup_steps=1, progress=False)
    return train(model, CLIP(), data, timed).samples_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--presets", nargs="+", default=list(CPU_PRESETS))
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    tokenizer = world_tokenizer()
    data = from_world(generate(args.pairs, seed=0), tokenizer)
    out = {"torch_threads": torch.get_num_threads()}
    for preset in args.presets:
        for precision in ("fp32", "bf16"):
            value = samples_per_s(preset, precision, data, tokenizer, args.batch_size)
            out[f"train_samples_per_s_{preset}_{precision}"] = value
    for name, value in out.items():
        print(f"{name} {value:.1f}" if isinstance(value, float) else f"{name} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
