"""The laptop recipe search: which CLIP learns the generated world the most per CPU-second on this machine.

    python benchmarks/bench_recipe.py --seconds 60 [--candidates rn-tiny-v0 rn-tiny] [--plot results/figures/recipe.png]

Run it on an otherwise idle machine: the step count is fitted to a step time measured just before, so another
process on the cores during the run changes how many steps a candidate gets.

Each candidate (tower sizes, batch, learning rate, warm-up, precision) trains CLIP on the same generated
pairs for the same wall-clock budget: a few steps are timed first and the run's step count (and so its
warm-up + cosine schedule) is set to fill ``--seconds``; then the shapes10 (CIFAR-10 stand-in) linear probe
and zero-shot accuracy and the shapes_colours linear probe are measured. Prints ``name value`` lines:

- ``recipe_gain``: (linear - chance) of the laptop recipe over (linear - chance) of ``rn-tiny-v0`` (the
  book's first laptop recipe), both trained for the same seconds in this run. Goal >= 2.
- ``train_samples_per_s``: the laptop recipe's training throughput (whole step: data, augmentation,
  forward, backward, AdamW), and ``mfu``: its model FLOPs per second over the measured bf16/fp32 matmul
  peak of this CPU (``bench_overheads.matmul_peak``).
- one ``<candidate>_<figure>`` line per candidate and figure.

``--budgets 30 60 120`` trains the laptop recipe and the reference at several budgets for the figure of
accuracy against training seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from vlp_lib.config import SCALES
from vlp_lib.data import tasks as task_lib
from vlp_lib.data.paired import from_world
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.world import generate
from vlp_lib.eval import encode_images, linear_probe, zero_shot_accuracy
from vlp_lib.methods import CLIP
from vlp_lib.models import create_model, register_model_config
from vlp_lib.train import TrainConfig, train

LAPTOP = SCALES["laptop"]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_overheads, beside this script


def tower(vision: dict, text: dict, embed_dim: int = 128) -> dict:
    return {
        "embed_dim": embed_dim,
        "vision_cfg": {"image_size": 32, "head_width": 32, **vision},
        "text_cfg": {"context_length": 24, "vocab_size": 512, "heads": 2, **text},
    }


RN = lambda width, layers=(1, 1, 1, 1): {"layers": list(layers), "width": width, "patch_size": None}  # noqa: E731
VIT = lambda width, layers, patch=8: {"layers": layers, "width": width, "patch_size": patch}  # noqa: E731
TEXT_SMALL = {"width": 64, "layers": 1}

# Candidates: model (a preset name or a config dict), batch, lr, warm-up as a fraction of the steps.
CANDIDATES: dict[str, dict] = {
    "rn-tiny-v0": dict(model="rn-tiny-v0", batch_size=256, lr=1e-3, warmup=50),  # the first laptop recipe
    "laptop": dict(model=LAPTOP["model"], batch_size=LAPTOP["batch_size"], lr=LAPTOP["lr"], warmup=0.05),
    "rn16-t64": dict(model=tower(RN(16), TEXT_SMALL), batch_size=256, lr=2e-3, warmup=0.05),
    "rn32-t64": dict(model=tower(RN(32), TEXT_SMALL), batch_size=256, lr=2e-3, warmup=0.05),
    "rn32-t64-b128": dict(model=tower(RN(32), TEXT_SMALL), batch_size=128, lr=1e-3, warmup=0.05),
    "rn32-t64-lr5e-3": dict(model=tower(RN(32), TEXT_SMALL), batch_size=256, lr=5e-3, warmup=0.05),
    "vit8-w128-l3-t64": dict(model=tower(VIT(128, 3), TEXT_SMALL), batch_size=256, lr=2e-3, warmup=0.05),
    "rn24-t64": dict(model=tower(RN(24), TEXT_SMALL), batch_size=256, lr=2e-3, warmup=0.05),
    "rn16-t64-b128": dict(model=tower(RN(16), TEXT_SMALL), batch_size=128, lr=2e-3, warmup=0.05),
    "rn16-t64-b128-lr1e-3": dict(model=tower(RN(16), TEXT_SMALL), batch_size=128, lr=1e-3, warmup=0.05),
    "rn16-t64-b128-lr4e-3": dict(model=tower(RN(16), TEXT_SMALL), batch_size=128, lr=4e-3, warmup=0.05),
    "rn16-t64-b64-lr2e-3": dict(model=tower(RN(16), TEXT_SMALL), batch_size=64, lr=2e-3, warmup=0.05),
    "rn16-t64-b64": dict(model=tower(RN(16), TEXT_SMALL), batch_size=64, lr=1e-3, warmup=0.05),
    "rn24-t64-b128": dict(model=tower(RN(24), TEXT_SMALL), batch_size=128, lr=2e-3, warmup=0.05),
    "rn16x2-t64-b128": dict(model=tower(RN(16, (2, 2, 2, 2)), TEXT_SMALL), batch_size=128, lr=2e-3, warmup=0.05),
}


def laptop_mfu(tokenizer, samples_per_s: float) -> float:
    """Model FLOPs of the laptop recipe's training (forward + backward, ``torch.utils.flop_counter``) at the
    measured samples/s, over this CPU's measured fp32 matmul peak (``bench_overheads.matmul_peak_flops``)."""
    from bench_overheads import matmul_peak_flops, step_flops

    batch = LAPTOP["batch_size"]
    model = create_model(LAPTOP["model"], tokenizer.vocab_size, tokenizer.context_length, seed=0)
    images = torch.randn(batch, 3, 32, 32)
    texts = torch.randint(3, tokenizer.vocab_size - 1, (batch, tokenizer.context_length))
    return step_flops(model, images, texts) / batch * samples_per_s / matmul_peak_flops()


def model_name(name: str, spec: dict) -> str:
    return spec["model"] if isinstance(spec["model"], str) else register_model_config(f"search-{name}", spec["model"])


def evaluate(model: torch.nn.Module, tokenizer, scale: str) -> dict[str, float]:
    out = {}
    for task in ("shapes10", "shapes_colours"):
        tr = task_lib.load_task(task, "train", scale=scale)
        te = task_lib.load_task(task, "test", scale=scale)
        f_tr, f_te = encode_images(model, tr.images), encode_images(model, te.images)
        out[f"{task}_linear"] = linear_probe(f_tr, tr.labels, f_te, te.labels, seed=0)["accuracy"]
        out[f"{task}_zeroshot"] = zero_shot_accuracy(
            model, tokenizer, te.images, te.labels, te.classnames, te.templates
        )["top1"]
        out[f"{task}_chance"] = 1.0 / len(te.classnames)
    return out


def train_for(name: str, spec: dict, data, tokenizer, seconds: float, seed: int = 0) -> dict[str, float]:
    """Train candidate ``name`` for about ``seconds`` (schedule fitted to the measured step time)."""
    preset = model_name(name, spec)
    batch = spec["batch_size"]
    probe_model = create_model(preset, tokenizer.vocab_size, tokenizer.context_length, seed=seed)
    probe = TrainConfig(epochs=6 * batch / len(data), batch_size=batch, lr=spec["lr"], warmup_steps=1, progress=False)
    train(probe_model, CLIP(), data, probe)  # 3 warm-up steps, then 3 timed ones
    step_s = batch / train(probe_model, CLIP(), data, probe).samples_per_s
    steps = max(10, int(seconds / step_s))
    warmup = spec["warmup"] if isinstance(spec["warmup"], int) else max(1, int(spec["warmup"] * steps))
    model = create_model(preset, tokenizer.vocab_size, tokenizer.context_length, seed=seed)
    config = TrainConfig(
        epochs=steps * batch / len(data),
        batch_size=batch,
        lr=spec["lr"],
        warmup_steps=warmup,
        seed=seed,
        progress=False,
    )
    t0 = time.perf_counter()
    result = train(model, CLIP(), data, config)
    out = {
        "train_seconds": time.perf_counter() - t0,
        "steps": steps,
        "samples_per_s": result.samples_per_s,
        "parameters_m": sum(p.numel() for p in model.parameters()) / 1e6,
    }
    out.update(evaluate(model, tokenizer, "laptop"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--pairs", type=int, default=LAPTOP["train_size"])
    parser.add_argument("--candidates", nargs="+", default=["rn-tiny-v0", "laptop"])
    parser.add_argument("--budgets", nargs="*", type=float, default=[])
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    tokenizer = world_tokenizer()
    data = from_world(generate(args.pairs, seed=0), tokenizer)
    results: dict[str, dict[str, float]] = {}
    for name in args.candidates:
        results[name] = r = train_for(name, CANDIDATES[name], data, tokenizer, args.seconds)
        for key, value in r.items():
            print(f"{name}_{key} {value:.4f}", flush=True)
    out: dict[str, float] = {}
    if {"rn-tiny-v0", "laptop"} <= set(results):
        above = {n: results[n]["shapes10_linear"] - results[n]["shapes10_chance"] for n in ("rn-tiny-v0", "laptop")}
        out["recipe_gain"] = above["laptop"] / max(above["rn-tiny-v0"], 1e-9)
        out["train_samples_per_s"] = results["laptop"]["samples_per_s"]
        out["mfu"] = laptop_mfu(tokenizer, results["laptop"]["samples_per_s"])
    curve: dict[str, list[tuple[float, float]]] = {}
    for budget in args.budgets:
        for name in ("rn-tiny-v0", "laptop"):
            r = train_for(name, CANDIDATES[name], data, tokenizer, budget)
            curve.setdefault(name, []).append((r["train_seconds"], r["shapes10_linear"]))
            print(f"{name}_at_{budget:.0f}s_shapes10_linear {r['shapes10_linear']:.4f}", flush=True)
            print(f"{name}_at_{budget:.0f}s_steps {r['steps']:.0f}", flush=True)
    for key, value in out.items():
        print(f"{key} {value:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"candidates": results, "curve": curve, **out}, indent=1))
    if args.plot and (curve or results):
        from vlp_lib.book import plots

        plots.recipe_curve(results, curve, path=Path(args.plot))


if __name__ == "__main__":
    main()
