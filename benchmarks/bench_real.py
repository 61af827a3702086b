"""Training throughput on real image-text pairs against the generated world at the same model, image size and batch.
Prints ``name value`` lines.

    python benchmarks/bench_real.py [--csv tests/data/openclipart/pairs.csv] [--model rn-tiny] [--image-size 32]
                                    [--batch-size 128] [--steps 32] [--repeats 5] [--precision fp32] [--device auto]

Both arms go through the book's own path: ``experiment.make_config`` (the laptop scale with the model, image size,
batch and precision given here) and ``experiment.build_method``, so the real pairs are those of
``data.real.load_pairs`` (decoded once into the memory-mapped cache, captions read by the tokenizer the book gives
real text: open_clip's BPE, 49,408 tokens) and the world's are the generated pairs of ``train_size`` equal to the
CSV's pair count (memory-mapped from the world cache, the world's word tokenizer): the same number of pairs, so the
same episodes and steps. ``--tokenizer`` gives both arms one tokenizer instead, to tell the larger vocabulary's cost
(its embedding rows in AdamW) from the data's. Every cache and store of the library points at a temporary folder for
the run (``VLP_CACHE_DIR``, ``VLP_RESULTS_DIR``, ``VLP_CHECKPOINT_DIR``): the user's are never read or written.

The one-time work is outside the timing and reported apart: decoding the CSV's images into a cold cache, the
first time the book meets a source, and rendering the world. Each arm then trains one warm-up call of
``--warmup-steps`` (allocator, kernel selection), then ``--repeats`` timed calls of ``vlp_lib.train`` of ``--steps``
steps each, the arms alternating (real first, then world first), each timed as the whole call (the recipe's "none"
crop, forward, loss, backward, clipping, AdamW, logging); the median of the repeats is printed.

    real_pairs            pairs kept from the CSV (bad samples skipped, as the book does)
    real_decode_s         the first load of the CSV into an empty cache: check, decode, write the cache, tokenize
    real_build_s          ``experiment.build_method`` afterwards: the cache mapped, captions tokenized, model built
    world_build_s         the same for the world: rendering its pairs into an empty cache included
    real_vocab_size, world_vocab_size
                          the tokenizers' vocabularies (the text tower's embedding rows)
    real_samples_per_s    median samples per second of the timed calls on the real pairs
    world_samples_per_s   the same on the world
    real_over_world       real_samples_per_s / world_samples_per_s (1: real data costs nothing more per step)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlp_lib import experiment
from vlp_lib.data.paired import PairedData
from vlp_lib.data.training import make_tokenizer, training_pairs
from vlp_lib.methods import Method
from vlp_lib.models import available_models
from vlp_lib.paths import REPO_ROOT
from vlp_lib.run_config import RunConfig
from vlp_lib.train import train

DEFAULT_CSV = REPO_ROOT / "tests" / "data" / "openclipart" / "pairs.csv"
STORE_VARIABLES = ("VLP_CACHE_DIR", "VLP_RESULTS_DIR", "VLP_CHECKPOINT_DIR")


@dataclass
class Arm:
    """One side of the comparison: what ``experiment.build_method`` made of its config, and its vocabulary."""

    name: str
    config: RunConfig
    data: PairedData
    model: Any  # an open_clip CLIP
    method: Method
    vocab_size: int


@contextlib.contextmanager
def scratch_store() -> Iterator[Path]:
    """The library's cache, results and checkpoint folders inside a temporary folder for the block, then the
    environment as it was: a benchmark never touches the user's store, nor leaves its variables behind in a
    process that called it (a test)."""
    saved = {name: os.environ.get(name) for name in STORE_VARIABLES}
    with tempfile.TemporaryDirectory(prefix="vlp_bench_real_") as folder:
        try:
            for name in STORE_VARIABLES:
                os.environ[name] = str(Path(folder) / name.removeprefix("VLP_").lower())
            yield Path(folder)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def make_config(args: argparse.Namespace, train_data: str, train_size: int | None = None) -> RunConfig:
    """The laptop config at the benchmark's model, image size, batch, precision and device (``train_size`` for the
    world; a CSV's is its pair count)."""
    return experiment.make_config(
        "laptop",
        train_data=train_data,
        train_size=train_size,
        model=args.model,
        image_size=args.image_size,
        batch_size=args.batch_size,
        precision=args.precision,
        device=args.device,
        tokenizer=args.tokenizer,
    )


def build_arm(name: str, config: RunConfig) -> tuple[Arm, float]:
    """The arm of ``config`` (``experiment.build_method``), and the seconds that took."""
    t0 = time.perf_counter()
    data, tokenizer, model, method = experiment.build_method(config)
    seconds = time.perf_counter() - t0
    return Arm(name, config, data, model, method, int(tokenizer.vocab_size)), seconds


def samples_per_s(arm: Arm, steps: int) -> float:
    """Samples per second of one call of ``train`` for about ``steps`` steps (whole episodes of the arm's pairs:
    the steps that ran are counted), the whole call timed."""
    n, batch = len(arm.data), arm.config.train.batch_size
    config = dataclasses.replace(arm.config.train, epochs=steps * batch / n, progress=False)
    t0 = time.perf_counter()
    result = train(arm.model, arm.method, arm.data, config)
    return len(result.history) * batch / (time.perf_counter() - t0)


def measure(args: argparse.Namespace) -> dict[str, float | int | str]:
    """Every figure of the docstring, in a scratch store."""
    with scratch_store():
        real_config = make_config(args, str(args.csv))
        t0 = time.perf_counter()
        training_pairs(real_config, make_tokenizer(real_config))  # into the empty cache: the one-time decode
        decode_s = time.perf_counter() - t0
        real, real_build_s = build_arm("real", real_config)
        world, world_build_s = build_arm("world", make_config(args, "world", train_size=len(real.data)))
        arms = (real, world)
        for arm in arms:
            samples_per_s(arm, args.warmup_steps)
        figures: dict[str, list[float]] = {arm.name: [] for arm in arms}
        for repeat in range(args.repeats):
            for arm in arms if repeat % 2 == 0 else arms[::-1]:
                figures[arm.name].append(samples_per_s(arm, args.steps))
    real_sps, world_sps = statistics.median(figures["real"]), statistics.median(figures["world"])
    return {
        "real_config": f"{args.model}_{real.config.image_size}px_b{args.batch_size}_{args.precision}",
        "real_pairs": len(real.data),
        "real_decode_s": decode_s,
        "real_build_s": real_build_s,
        "world_build_s": world_build_s,
        "real_vocab_size": real.vocab_size,
        "world_vocab_size": world.vocab_size,
        "real_samples_per_s": real_sps,
        "world_samples_per_s": world_sps,
        "real_over_world": real_sps / world_sps,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="an OpenCLIP CSV (filepath / title columns)")
    parser.add_argument("--model", default="rn-tiny", choices=available_models())
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--steps", type=int, default=32, help="steps per timed call (whole episodes of the pairs)")
    parser.add_argument("--warmup-steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokenizer", default=None, choices=("world", "bpe"), help="default: the book's per data")
    parser.add_argument("--device", default="auto")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    for name, value in measure(parse_args(argv)).items():
        print(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}", flush=True)


if __name__ == "__main__":
    main()
