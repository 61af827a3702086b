"""What the book's machinery costs on top of the model's own work. Prints ``name value`` lines.

    python benchmarks/bench_overheads.py [--pairs 4096] [--skip-protoclip]

trainer_overhead     seconds per sample (fastest of 5 alternating passes each) of ``vlp_lib.train`` training CLIP (data loading, the "none" crop,
                     schedule, gradient clipping, logging included) / seconds per sample of a bare open_clip
                     loop (forward, ``open_clip.ClipLoss``, backward, the trainer's fused AdamW) on the same model,
                     batch and precision with the batches prepared in advance (goal <= 1.05)
trainer_machinery    the same trainer over a hand-written loop that does the recipe's own work beside the bare step
                     (``bare_loop(recipe=True)``: the trainer's AdamW groups, no decay on gains and biases, one fused
                     kernel each; gradient clipping; uint8 rows to model input; the "none" crop; the logged scalars):
                     what the trainer itself costs (episodes, schedule, history, the DDP wrapper and distributed
                     hooks, identities in one process); trainer_overhead / trainer_machinery is what the recipe's own
                     work adds to the bare step (``recipe_step_ms_*`` against ``bare_step_ms_*``)
step_ms_input, step_ms_crop, step_ms_clip_grad
                     the recipe's pieces alone, ms per step: uint8 rows to model input, the "none" crop, gradient
                     clipping
bare_step_mfu        (the laptop recipe's model, ``vlp_lib.config.SCALES["laptop"]``) model FLOPs per second of that bare step (``torch.utils.flop_counter``) / this CPU's
                     measured fp32 matmul peak (a 2048 x 2048 GEMM on all threads)
matmul_peak_gflops   that peak
protoclip_overhead   wall time per training sample of ProtoCLIP (feature extraction + K-Means + PBT + training
                     steps) / CLIP's, both with the full recipe's ProtoCLIP augmentation, at the chapter's laptop
                     setting (10,240 pairs, 2 epochs, episodes of 2,048, K = 204, MiniLM teacher) (goal <= 1.25)
kmeans_share         K-Means share of ProtoCLIP's episode time in that run (goal <= 0.03)
extraction_share     feature extraction's share of it (the paper: 0.31)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import open_clip
import torch
from torch.utils.flop_counter import FlopCounterMode

from vlp_lib import experiment
from vlp_lib.config import SCALES
from vlp_lib.data.paired import PairedData, from_world
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.transforms import augment, to_model_input
from vlp_lib.data.world import generate
from vlp_lib.methods import CLIP, create_method
from vlp_lib.models import create_model
from vlp_lib.papers.protoclip.book import chapter as protoclip_chapter
from vlp_lib.train import TrainConfig, clip_gradients, param_groups, train


def synchronizer(device: torch.device) -> Callable[[], None]:
    """What waits for ``device``'s queued work before a clock is read: a GPU runs its kernels asynchronously."""
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def matmul_peak_flops(
    n: int = 2048, repeats: int = 10, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> float:
    """FLOP/s of ``repeats`` square ``n`` GEMMs after one warm-up (mean; on a GPU, synchronised)."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    sync = synchronizer(torch.device(device))
    a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync()
    return 2 * n**3 * repeats / (time.perf_counter() - t0)


def bare_loop(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], recipe: bool = False) -> float:
    """Seconds per step of forward + ClipLoss + backward + AdamW over prepared batches. ``recipe``: with the work the
    recipe adds to a step, as the trainer does it (``trainer_machinery``): its AdamW groups, gradient clipping,
    uint8 rows converted and cropped ("none") per step, the loss and temperature read as logged scalars; ``batches``
    then hold uint8 rows."""
    loss_fn = open_clip.ClipLoss()
    groups = param_groups(model, CLIP(), TrainConfig.weight_decay) if recipe else model.parameters()
    opt = torch.optim.AdamW(groups, lr=1e-4, weight_decay=0.1, fused=True)  # the trainer's optimizer
    params = [p for p in model.parameters() if p.requires_grad]
    generator = torch.Generator().manual_seed(0)
    model.train()

    def step(images: torch.Tensor, texts: torch.Tensor) -> None:
        if recipe:
            images = augment(to_model_input(images), "none", generator=generator)
        out = model(images, texts)
        loss = loss_fn(out["image_features"], out["text_features"], out["logit_scale"])  # already exp()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if recipe:
            clip_gradients(params, TrainConfig.grad_clip_norm)
        opt.step()
        if recipe:
            loss.item(), out["logit_scale"].item()

    # on a GPU the steps are launched asynchronously: wait for the device before reading the clock
    sync = synchronizer(next(model.parameters()).device)
    step(*batches[0])  # warm-up
    sync()
    t0 = time.perf_counter()
    for images, texts in batches:
        step(images, texts)
    sync()
    return (time.perf_counter() - t0) / len(batches)


def step_flops(model: torch.nn.Module, images: torch.Tensor, texts: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        out = model(images, texts)
        (out["image_features"].sum() + out["text_features"].sum()).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def piece_ms(fn: Callable[[], object], repeats: int = 20) -> float:
    """Milliseconds per call of ``fn`` (mean of ``repeats`` after one warm-up)."""
    fn()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return 1000 * (time.perf_counter() - t0) / repeats


def trainer_pieces(model: torch.nn.Module, data: PairedData, batch_size: int) -> dict[str, float]:
    """Where the trainer's time beyond the bare step goes, per step (ms): the uint8 rows to model input, the
    recipe's "none" crop (RandomResizedCrop 0.9-1, part of every run's recipe, not machinery), gradient
    clipping, and the rest of the loop's bookkeeping is what ``trainer_overhead`` has left."""
    rows = data.images[:batch_size]
    x = to_model_input(rows)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.randn_like(p)
    generator = torch.Generator().manual_seed(0)
    out = {
        "step_ms_input": piece_ms(lambda: to_model_input(rows)),
        "step_ms_crop": piece_ms(lambda: augment(x, "none", generator=generator)),
        "step_ms_clip_grad": piece_ms(lambda: clip_gradients(params, 1.0)),
    }
    model.zero_grad(set_to_none=True)
    return out


def trainer_figures(pairs: int, batch_size: int, repeats: int = 5) -> dict[str, float]:
    tokenizer = world_tokenizer()
    data = from_world(generate(pairs, seed=0), tokenizer)
    config = TrainConfig(epochs=1, batch_size=batch_size, warmup_steps=1, progress=False)
    batches = [
        (to_model_input(data.images[a : a + batch_size]), data.tokens[a : a + batch_size])
        for a in range(0, pairs - batch_size + 1, batch_size)
    ]
    raw = [
        (data.images[a : a + batch_size], data.tokens[a : a + batch_size])
        for a in range(0, len(batches) * batch_size, batch_size)
    ]
    preset = SCALES["laptop"]["model"]
    ours_model, bare_model, recipe_model = (
        create_model(preset, tokenizer.vocab_size, tokenizer.context_length, seed=0) for _ in range(3)
    )
    train(ours_model, CLIP(), data, TrainConfig(epochs=2 * batch_size / pairs, batch_size=batch_size, progress=False))
    # alternate the three and keep each one's fastest pass: single passes on the shared 2-core machine vary by
    # up to 1.5x from one minute to the next, which would swamp a 5% difference
    ours, bare_step, recipe_step = float("inf"), float("inf"), float("inf")
    for _ in range(repeats):
        ours = min(ours, 1.0 / train(ours_model, CLIP(), data, config).samples_per_s)
        bare_step = min(bare_step, bare_loop(bare_model, batches))
        recipe_step = min(recipe_step, bare_loop(recipe_model, raw, recipe=True))
    model = bare_model
    flops = step_flops(model, *batches[0])
    peak = matmul_peak_flops()
    return {
        "trainer_overhead": ours / (bare_step / batch_size),
        "trainer_machinery": ours / (recipe_step / batch_size),
        **trainer_pieces(bare_model, data, batch_size),
        f"bare_step_ms_{preset}": 1000 * bare_step,
        f"recipe_step_ms_{preset}": 1000 * recipe_step,
        f"step_gflop_{preset}": flops / 1e9,
        "matmul_peak_gflops": peak / 1e9,
        "bare_step_mfu": flops / bare_step / peak,
    }


def protoclip_figures() -> dict[str, float]:
    proto_row = protoclip_chapter.find_row(protoclip_chapter.TABLE4, "ProtoCLIP", 1.0)
    clip_row = protoclip_chapter.Row.of("CLIP", "clip", augmentation=proto_row.augmentation, units=1.0)
    seconds = {}
    timings = {}
    for row in (clip_row, proto_row):
        config = protoclip_chapter.config(row, "laptop", seed=0)
        data, _, model = experiment.build(config)
        method = create_method(config.method, **experiment.method_arguments(config, data, model))
        result = train(model, method, data, experiment.train_config(config, progress=False))
        t = result.timings
        seconds[row.method] = (t["training"] + t.get("episode_start", 0.0)) / (config.train.epochs * len(data))
        timings[row.method] = t
    t = timings["protoclip"]
    episode = sum(t[s] for s in ("feature_extraction", "kmeans", "pbt", "training"))
    return {
        "protoclip_overhead": seconds["protoclip"] / seconds["clip"],
        "kmeans_share": t["kmeans"] / episode,
        "extraction_share": t["feature_extraction"] / episode,
        "pbt_share": t["pbt"] / episode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=SCALES["laptop"]["batch_size"])
    parser.add_argument("--skip-protoclip", action="store_true", help="only the trainer figures (about a minute)")
    args = parser.parse_args()
    out = trainer_figures(args.pairs, args.batch_size)
    if not args.skip_protoclip:
        out.update(protoclip_figures())
    for name, value in out.items():
        print(f"{name} {value:.4g}")


if __name__ == "__main__":
    main()
