"""Does CLIP learn on Open Clip Art's drawings? CLIP trained on the drawings' pairs against the same network untrained,
on the category and sub-category folder tasks. Prints ``name value`` lines.

    python benchmarks/pilot_drawings.py --data data/openclipart/64px [--model rn-tiny] [--image-size 32]
                                        [--epochs 8] [--batch-size 128] [--lr 2e-3] [--seeds 100]
                                        [--captions pairs.csv] [--context-length 77] [--precision fp32]
    python benchmarks/pilot_drawings.py --data ... --model ViT-B-32 --image-size 224 --precision bf16 --device cuda

``--data`` is a folder written by ``python -m vlp_lib.data.openclipart`` (``pairs.csv`` and its caption variants,
``category/`` and ``subcategory/``). Each seed builds the run as the book does (``experiment.make_config`` at the
laptop scale with the arguments given, ``experiment.build_method``: the CSV through ``data.real.load_pairs`` and
open_clip's BPE tokenizer), evaluates the freshly initialised network, trains it (``vlp_lib.train``) and evaluates it
again: the same initial weights in both arms. A pilot: its seeds (100 and up by default) are not a verdict's, so that
choosing the chapter's sizes on it spends none of the verdicts' seeds. Every cache and store points at a temporary
folder (``VLP_CACHE_DIR``, ``VLP_RESULTS_DIR``, ``VLP_CHECKPOINT_DIR``) unless they are set.

    <arm>/<task>/<metric>   arm ``untrained`` or ``trained``; metric ``linear``, ``knn``, ``zeroshot_top1``, each
                            with its class-balanced ``_macro``, and ``majority`` (the largest class's share of the
                            test split: what naming one class scores on top-1)
    gain/<task>/<metric>    trained minus untrained
    train_s, samples_per_s  training wall-clock and throughput
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def evaluate(model: torch.nn.Module, tokenizer, tasks: list[str], config) -> dict[str, float]:
    """Probes and zero-shot of ``tasks`` (``suite.evaluate_task``, class-balanced accuracies included), and the
    largest class's share of the test split."""
    from vlp_lib import suite
    from vlp_lib.data import tasks as task_lib

    model.eval()
    out: dict[str, float] = {}
    for name in tasks:
        short = name.rstrip("/").rsplit("/", 1)[-1]
        values = suite.evaluate_task(
            model, tokenizer, name, config.scale, config.eval.task_train, config.eval.task_test, seed=config.seed
        )
        labels = np.asarray(task_lib.load_task(name, "test", n=config.eval.task_test, scale=config.scale).labels)
        values["majority"] = float(np.bincount(labels).max() / len(labels))
        for key in ("linear", "linear_macro", "knn", "knn_macro", "zeroshot_top1", "zeroshot_top1_macro", "majority"):
            out[f"{short}/{key}"] = float(values[key])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a folder of python -m vlp_lib.data.openclipart")
    parser.add_argument("--captions", default="pairs.csv", help="the CSV of pairs inside --data (a caption variant)")
    parser.add_argument("--model", default="rn-tiny")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup-fraction", type=float, default=0.05)
    parser.add_argument("--context-length", type=int, default=77)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seeds", type=int, nargs="+", default=[100])
    args = parser.parse_args()

    data = Path(args.data).resolve()
    for variable in ("VLP_CACHE_DIR", "VLP_RESULTS_DIR", "VLP_CHECKPOINT_DIR"):
        os.environ.setdefault(variable, tempfile.mkdtemp(prefix=variable.lower()))
    from vlp_lib import experiment
    from vlp_lib.data import real
    from vlp_lib.train import resolve_device, train

    tasks = [f"folder:{data / 'category'}", f"folder:{data / 'subcategory'}"]
    pairs = real.count_pairs(str(data / args.captions))
    steps = args.epochs * (pairs // args.batch_size)
    print(f"pairs {pairs}")
    print(f"steps {steps}")
    for seed in args.seeds:
        config = experiment.make_config(
            "laptop",
            "clip",
            seed,
            train_data=str(data / args.captions),
            tokenizer="bpe",
            context_length=args.context_length,
            model=args.model,
            image_size=args.image_size,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=args.lr,
            warmup_steps=max(1, int(args.warmup_fraction * steps)),
            precision=args.precision,
            device=args.device,
            eval_tasks=tasks,
        )
        t0 = time.perf_counter()
        pairs_data, tokenizer, model, method = experiment.build_method(config)
        print(f"seed{seed}/build_s {time.perf_counter() - t0:.1f}")
        untrained = evaluate(copy.deepcopy(model).to(resolve_device(args.device)), tokenizer, tasks, config)
        t0 = time.perf_counter()
        result = train(model, method, pairs_data, experiment.train_config(config, progress=False))
        print(f"seed{seed}/train_s {time.perf_counter() - t0:.1f}")
        print(f"seed{seed}/samples_per_s {result.samples_per_s:.0f}")
        trained = evaluate(model, tokenizer, tasks, config)
        for key in untrained:
            print(f"seed{seed}/untrained/{key} {untrained[key]:.4f}")
            print(f"seed{seed}/trained/{key} {trained[key]:.4f}")
            if not key.endswith("majority"):
                print(f"seed{seed}/gain/{key} {trained[key] - untrained[key]:+.4f}")


if __name__ == "__main__":
    main()
