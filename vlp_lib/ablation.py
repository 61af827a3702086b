"""ProtoCLIP's hyper-parameter ablation (Section IV-D, Fig. 6 (a)-(d)) as a plan of runs.

``make_plan`` validates every parameter (``ValueError`` naming it, before any compute), derives the
runs of the requested sweeps around the base setting, and ``estimate_seconds`` says how long the runs
not yet in the results store will take. The base setting follows IV-D: episode = 0.2 of the data
(paper: 0.2M of 1M), no soft target (hardmax), 10 images per prototype, no external teacher, no
augmentation beyond the 0.9-1 crop; the training amount (episode size x episodes) is held fixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import experiment, runs
from .config import as_list, check_positive_int, scale_defaults
from .report import mean_std, paired_differences, verdict
from .suite import VALIDATION_TASKS
from .teachers import check_teacher

SWEEPS = {
    "episode_size": "Fig. 6 (a): episode size (ProtoCLIP without L_CLIP)",
    "target_temperature": "Fig. 6 (b): target temperature tau_y (0 = hardmax)",
    "images_per_prototype": "Fig. 6 (c): images per prototype (L_Proto + L_CLIP)",
    "external_teacher": "Fig. 6 (d): external teacher",
}

# Sizes per scale. Laptop: a 10,240-pair world and 2 epochs of training per run, 160 steps of 128 pairs
# with the laptop recipe (``vlp_lib.config.SCALES``); every swept episode size (0.1, 0.2, 0.5, 1.0 of the
# data) is a multiple of the batch and divides the training amount, so every run trains on exactly the same
# number of pairs. The learning-rate warm-up is ``WARMUP_FRACTION`` of a run's steps.
ABLATION_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(train_size=256, total_samples=256, batch_size=64, task_train=200, task_test=100,
                  retrieval_images=30, head_hidden=64, head_dim=32,
                  episode_fractions=(1.0,), temperatures=(0.0, 0.01), images_per_prototype_values=(5, 10),
                  teachers=("none", "minilm")),
    "laptop": dict(train_size=10_240, total_samples=20_480, batch_size=128, task_train=2_000, task_test=1_000,
                   retrieval_images=200, head_hidden=512, head_dim=64,
                   episode_fractions=(0.1, 0.2, 0.5, 1.0), temperatures=(0.0, 0.005, 0.01, 0.05),
                   images_per_prototype_values=(5, 10, 20, 50), teachers=("none", "clip", "minilm")),
    "paper": dict(train_size=1_000_000, total_samples=20_000_000, batch_size=512, task_train=50_000,
                  task_test=10_000, retrieval_images=5_000, head_hidden=2048, head_dim=128,
                  episode_fractions=(0.05, 0.1, 0.2, 0.5, 1.0), temperatures=(0.0, 0.001, 0.005, 0.01, 0.05, 0.1),
                  images_per_prototype_values=(5, 10, 20, 50, 100), teachers=("none", "clip", "minilm")),
}
EPISODE_FRACTION = 0.2  # IV-D: 0.2M pairs per episode out of 1M
WARMUP_FRACTION = 0.05

# Throughputs of rn-tiny on the 2-core CPU, for the time estimate only: training and extraction from the
# stored laptop runs; K-Means from benchmarks/bench_cluster.py (N = 200,000, K = 20,000, d = 64: 3.8 s per
# Lloyd iteration, i.e. 6.7e10 point x centroid x dimension products per second), with the k-means++ seeding
# counted as 5 more iterations; evaluation of the three validation tasks and retrieval per run.
RATES = {"train": 1_000.0, "extract": 3_000.0, "kmeans_products_per_s": 6.7e10, "kmeans_seeding_iters": 5,
         "eval_s": 7.0}


@dataclass
class Run:
    sweep: str  # "base" or a SWEEPS key
    value: Any
    config: dict[str, Any]


@dataclass
class Plan:
    scale: str
    base: dict[str, Any]
    runs: list[Run] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)

    def unique_configs(self) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for r in self.runs:
            seen.setdefault(runs.config_hash(r.config), r.config)
        return list(seen.values())


def _check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def make_plan(
    scale: str = "laptop",
    episode_size: int | None = None,
    k: int | None = None,
    images_per_prototype: int = 10,
    target_temperature: float = 0.0,
    external_teacher: str = "none",
    pbt: bool = True,
    total_samples: int | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    sweeps: Sequence[str] = tuple(SWEEPS),
    train_size: int | None = None,
) -> Plan:
    """Every run of the ablation, validated. An ``episode_size`` larger than the scale's world grows
    the world to fit (the generated world is unbounded); the training amount grows to at least one episode."""
    scale_defaults(scale)
    sizes = ABLATION_SCALES[scale]
    sweeps, seeds = as_list("sweeps", sweeps), as_list("seeds", seeds)
    for s in sweeps:
        if s not in SWEEPS:
            raise ValueError(f"sweeps: unknown sweep {s!r}; known: {list(SWEEPS)}")
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    images_per_prototype = check_positive_int("images_per_prototype", images_per_prototype)
    target_temperature = _check_number("target_temperature", target_temperature)
    check_teacher(external_teacher)
    n = check_positive_int("train_size", train_size if train_size is not None else sizes["train_size"])
    if episode_size is None:
        episode_size = max(sizes["batch_size"], int(round(EPISODE_FRACTION * n)))
    episode_size = check_positive_int("episode_size", episode_size)
    n = max(n, episode_size)  # the world grows to fit the episode
    total = check_positive_int("total_samples", total_samples if total_samples is not None else sizes["total_samples"])
    total = max(total, episode_size)
    if k is not None:
        k = check_positive_int("k", k)
        if k > episode_size:
            raise ValueError(f"k ({k}) is larger than the episode ({episode_size} pairs)")
    if episode_size // images_per_prototype < 1:
        raise ValueError(f"images_per_prototype ({images_per_prototype}) is larger than the episode ({episode_size})")
    batch = min(sizes["batch_size"], episode_size)

    def config(seed: int, episode: int, clip_weight: float = 1.0, **method: Any) -> dict[str, Any]:
        # the official recipe's InfoNCE-only first episode, except in the L_Proto-only episode-size sweep
        # (Fig. 6 (a)), where it would be half of the run at the largest episode and 1/20 at the smallest
        kwargs = {"head_hidden": sizes["head_hidden"], "head_dim": sizes["head_dim"], "k": k,
                  "images_per_prototype": images_per_prototype, "target_temperature": target_temperature,
                  "use_pbt": bool(pbt), "external_teacher": external_teacher, "clip_weight": clip_weight,
                  "warmup_episodes": 1 if clip_weight else 0}
        kwargs.update(method)
        if kwargs["k"] is None:
            del kwargs["k"]
        steps = round(total / episode) * (episode // batch)
        return experiment.make_config(
            scale, method="protoclip", seed=seed, train_size=n, episode_size=episode, epochs=total / n,
            batch_size=batch, warmup_steps=max(1, int(WARMUP_FRACTION * steps)),
            task_train=sizes["task_train"], task_test=sizes["task_test"],
            retrieval_images=sizes["retrieval_images"], eval_tasks=list(VALIDATION_TASKS), method_kwargs=kwargs)

    plan = Plan(scale=scale, base=dict(episode_size=episode_size, k=k, images_per_prototype=images_per_prototype,
                                       target_temperature=target_temperature, external_teacher=external_teacher,
                                       pbt=pbt, total_samples=total, train_size=n), seeds=seeds)
    for seed in seeds:
        plan.runs.append(Run("base", None, config(seed, episode_size)))
        if "episode_size" in sweeps:
            for f in sizes["episode_fractions"]:
                e = max(batch, int(round(f * n)))
                plan.runs.append(Run("episode_size", e, config(seed, e, clip_weight=0.0)))
        if "target_temperature" in sweeps:
            for t in sizes["temperatures"]:
                plan.runs.append(Run("target_temperature", t, config(seed, episode_size, target_temperature=t)))
        if "images_per_prototype" in sweeps:
            for ipp in sizes["images_per_prototype_values"]:
                if episode_size // ipp >= 1:
                    plan.runs.append(Run("images_per_prototype", ipp,
                                         config(seed, episode_size, images_per_prototype=ipp, k=None)))
        if "external_teacher" in sweeps:
            for teacher in sizes["teachers"]:
                plan.runs.append(Run("external_teacher", teacher, config(seed, episode_size, external_teacher=teacher)))
    return plan


def estimate_seconds(plan: Plan) -> dict[str, float]:
    """Rough wall time of the runs not yet stored (rates measured for rn-tiny on 2 cores), including the
    CLIP runs that serve as the "clip" teacher; ``world_seconds`` is the generation of the world if it
    is not cached yet (4,000 images/s with two processes)."""
    todo = [c for c in plan.unique_configs() if runs.load(experiment.RUN_KIND, c) is None]
    seconds = 0.0
    teacher_seeds = set()
    for c in todo:
        n, e = c["train_size"], c["episode_size"]
        episodes = max(1, round(c["epochs"] * n / e))
        kw = c["method_kwargs"]
        k = kw.get("k") or e // kw.get("images_per_prototype", 10)
        n_kmeans = 2 + (kw.get("external_teacher", "none") != "none")
        seconds += c["epochs"] * n / RATES["train"] + episodes * e / RATES["extract"]
        iters = kw.get("kmeans_iters", 20) + RATES["kmeans_seeding_iters"]
        seconds += episodes * n_kmeans * iters * e * k * kw.get("head_dim", 64) / RATES["kmeans_products_per_s"]
        seconds += RATES["eval_s"]
        if kw.get("external_teacher") == "clip" and c["seed"] not in teacher_seeds:
            teacher_seeds.add(c["seed"])
            seconds += c["epochs"] * n / RATES["train"] + RATES["eval_s"]
    return {"runs_total": len(plan.unique_configs()), "runs_to_do": len(todo), "seconds": seconds,
            "world_seconds": plan.base["train_size"] / 4_000.0}


def execute(plan: Plan, progress: bool = True) -> list[tuple[Run, dict]]:
    """Run (or load) every run of the plan; returns (run, record) pairs."""
    return [(r, experiment.run(r.config, progress=progress)) for r in plan.runs]


def sweep_table(results: list[tuple[Run, dict]], metric: str = "avg3/linear") -> pd.DataFrame:
    """Mean ± std over seeds of ``metric`` per (sweep, value); the base run joins every sweep whose
    value it shares, so bars of one sweep always share the same other settings."""
    rows = []
    by_key: dict[tuple[str, Any], list[float]] = {}
    for run, record in results:
        by_key.setdefault((run.sweep, run.value), []).append(record["metrics"][metric])
    for (sweep, value), values in by_key.items():
        m, s = mean_std(values)
        rows.append({"sweep": sweep, "value": value, "mean": m, "std": s, "seeds": len(values),
                     "values": np.round(values, 4).tolist()})
    return pd.DataFrame(rows)


def seed_table(results: list[tuple[Run, dict]], metric: str = "avg3/linear") -> dict[tuple[str, Any], dict[int, float]]:
    """``{(sweep, value): {seed: metric}}``: the per-seed values behind ``sweep_table``'s bars."""
    out: dict[tuple[str, Any], dict[int, float]] = {}
    for run, record in results:
        out.setdefault((run.sweep, run.value), {})[int(run.config["seed"])] = float(record["metrics"][metric])
    return out


def paper_claims(plan: Plan) -> list[dict[str, Any]]:
    """IV-D's claims about Fig. 6 as (sweep, setting claimed better, reference) in this plan's values.
    ``reference=None`` means "every other bar of the sweep" (the best of them is used)."""
    n = plan.base["train_size"]
    batch = min(ABLATION_SCALES[plan.scale]["batch_size"], plan.base["episode_size"])
    return [
        {"sweep": "episode_size", "claim": "episode of 0.2 of the data beats one episode per epoch",
         "better": max(batch, int(round(EPISODE_FRACTION * n))), "reference": n, "paper_gain_pp": 2.86},
        {"sweep": "target_temperature", "claim": "soft target tau_y = 0.01 beats hardmax",
         "better": 0.01, "reference": 0.0, "paper_gain_pp": 1.58},
        {"sweep": "images_per_prototype", "claim": "10 images per prototype is the best value",
         "better": 10, "reference": None, "paper_gain_pp": None},
        {"sweep": "external_teacher", "claim": "the language-model teacher (RoBERTa; ours MiniLM) helps",
         "better": "minilm", "reference": "none", "paper_gain_pp": None},
        {"sweep": "external_teacher", "claim": "the CLIP text-encoder teacher helps",
         "better": "clip", "reference": "none", "paper_gain_pp": None},
        {"sweep": "external_teacher", "claim": "the language-model teacher beats the CLIP teacher",
         "better": "minilm", "reference": "clip", "paper_gain_pp": None},
    ]


def claims_table(results: list[tuple[Run, dict]], plan: Plan, metric: str = "avg3/linear") -> pd.DataFrame:
    """Each claim of ``paper_claims`` tested on this book's runs: the per-seed (paired) difference between the
    claimed-better setting and its reference, mean ± std in percentage points, and ``report.verdict``.

    Pairing by seed matters here: a seed that trains well does so in every setting, so the std of the bars
    (``sweep_table``) is mostly that common luck, and the std of the per-seed differences is not."""
    by_seed = seed_table(results, metric)
    rows = []
    for c in paper_claims(plan):
        bars = {value: v for (sweep, value), v in by_seed.items() if sweep == c["sweep"]}
        if c["better"] not in bars:
            continue
        reference = c["reference"]
        if reference is None:  # "is the best": against the best of the other bars
            others = {value: v for value, v in bars.items() if value != c["better"]}
            if not others:
                continue
            reference = max(others, key=lambda value: np.mean(list(others[value].values())))
        if reference not in bars:
            continue
        diff = paired_differences(bars[c["better"]], bars[reference])
        m, sd = mean_std(diff)
        rows.append({"sweep": SWEEPS[c["sweep"]].split(":")[0], "claim": c["claim"], "setting": c["better"],
                     "reference": reference, "paper gain (pp)": c["paper_gain_pp"],
                     "book gain (pp)": f"{100 * m:+.2f} ± {100 * sd:.2f}", "gain": m, "gain_std": sd,
                     "seeds": len(diff), "verdict": verdict(diff)})
    return pd.DataFrame(rows, columns=["sweep", "claim", "setting", "reference", "paper gain (pp)", "book gain (pp)",
                                       "gain", "gain_std", "seeds", "verdict"])
