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
from .config import check_positive_int, scale_defaults
from .report import mean_std
from .suite import VALIDATION_TASKS
from .teachers import check_teacher

SWEEPS = {
    "episode_size": "Fig. 6 (a): episode size (ProtoCLIP without L_CLIP)",
    "target_temperature": "Fig. 6 (b): target temperature tau_y (0 = hardmax)",
    "images_per_prototype": "Fig. 6 (c): images per prototype (L_Proto + L_CLIP)",
    "external_teacher": "Fig. 6 (d): external teacher",
}

# Sizes per scale. Laptop: a 10k-pair world, 2 epochs of training per run, three validation tasks.
ABLATION_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(train_size=256, total_samples=256, batch_size=64, task_train=200, task_test=100,
                  retrieval_images=30, head_hidden=64, head_dim=32,
                  episode_fractions=(1.0,), temperatures=(0.0, 0.01), images_per_prototype_values=(5, 10),
                  teachers=("none", "minilm")),
    "laptop": dict(train_size=10_000, total_samples=16_000, batch_size=256, task_train=2_000, task_test=1_000,
                   retrieval_images=200, head_hidden=512, head_dim=64,
                   episode_fractions=(0.1, 0.2, 0.5, 1.0), temperatures=(0.0, 0.005, 0.01, 0.05),
                   images_per_prototype_values=(5, 10, 20, 50), teachers=("none", "clip", "minilm")),
    "paper": dict(train_size=1_000_000, total_samples=20_000_000, batch_size=512, task_train=50_000,
                  task_test=10_000, retrieval_images=5_000, head_hidden=2048, head_dim=128,
                  episode_fractions=(0.05, 0.1, 0.2, 0.5, 1.0), temperatures=(0.0, 0.001, 0.005, 0.01, 0.05, 0.1),
                  images_per_prototype_values=(5, 10, 20, 50, 100), teachers=("none", "clip", "minilm")),
}
EPISODE_FRACTION = 0.2  # IV-D: 0.2M pairs per episode out of 1M

# Throughputs of rn-tiny on the 2-core CPU (benchmarks), for the time estimate only.
# K-Means: benchmarks/bench_cluster.py measured 317-481 s for N = 200,000, K = 20,000, d = 128, 20 iterations
# (seeding included), i.e. about 2.5e10 point x centroid x dimension products per second per iteration.
RATES = {"train": 800.0, "extract": 2_100.0, "kmeans_products_per_s": 2.5e10, "eval_s": 10.0}


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
    for s in sweeps:
        if s not in SWEEPS:
            raise ValueError(f"sweeps: unknown sweep {s!r}; known: {list(SWEEPS)}")
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    seeds = [int(s) for s in seeds]
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
        kwargs = {"head_hidden": sizes["head_hidden"], "head_dim": sizes["head_dim"], "k": k,
                  "images_per_prototype": images_per_prototype, "target_temperature": target_temperature,
                  "use_pbt": bool(pbt), "external_teacher": external_teacher, "clip_weight": clip_weight}
        kwargs.update(method)
        if kwargs["k"] is None:
            del kwargs["k"]
        return experiment.make_config(
            scale, method="protoclip", seed=seed, train_size=n, episode_size=episode, epochs=total / n,
            batch_size=batch, task_train=sizes["task_train"], task_test=sizes["task_test"],
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
    """Rough wall time of the runs not yet stored (rates measured for rn-tiny on 2 cores)."""
    todo = [c for c in plan.unique_configs() if runs.load(experiment.RUN_KIND, c) is None]
    seconds = 0.0
    for c in todo:
        n, e = c["train_size"], c["episode_size"]
        episodes = max(1, round(c["epochs"] * n / e))
        kw = c["method_kwargs"]
        k = kw.get("k") or e // kw.get("images_per_prototype", 10)
        n_kmeans = 2 + (kw.get("external_teacher", "none") != "none")
        seconds += c["epochs"] * n / RATES["train"] + episodes * e / RATES["extract"]
        seconds += episodes * n_kmeans * 20 * e * k * kw.get("head_dim", 64) / RATES["kmeans_products_per_s"]
        seconds += RATES["eval_s"]
    return {"runs_total": len(plan.unique_configs()), "runs_to_do": len(todo), "seconds": seconds}


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


# What IV-D says about each sweep: the best value and, where given, its gain over the reference bar.
PAPER_CLAIMS = {
    "episode_size": {"best": "0.2 of the data (0.2M of 1M)", "reference": "1.0 (one episode = one epoch)",
                     "gain_pp": 2.86},
    "target_temperature": {"best": 0.01, "reference": 0.0, "gain_pp": 1.58},
    "images_per_prototype": {"best": 10, "reference": None, "gain_pp": None},
    "external_teacher": {"best": "roberta (ours: minilm)", "reference": "none", "gain_pp": None},
}


def claims_table(table: pd.DataFrame, train_size: int) -> pd.DataFrame:
    """Per sweep: the paper's best setting and gain beside ours (gain = best mean - reference mean, in
    percentage points, with the reference's and best's stds combined in quadrature)."""
    rows = []
    for sweep, claim in PAPER_CLAIMS.items():
        t = table[table["sweep"] == sweep]
        if t.empty:
            continue
        best = t.loc[t["mean"].idxmax()]
        ref_value = {"episode_size": train_size, "target_temperature": 0.0, "external_teacher": "none"}.get(sweep)
        ref = t[t["value"] == ref_value]
        gain = gain_std = None
        if not ref.empty:
            gain = 100 * (best["mean"] - ref.iloc[0]["mean"])
            gain_std = 100 * math.hypot(best["std"], ref.iloc[0]["std"])
        best_value = best["value"] if sweep != "episode_size" else f"{best['value'] / train_size:.2g} of the data"
        rows.append({"sweep": SWEEPS[sweep].split(":")[0], "paper best": claim["best"], "book best": best_value,
                     "paper gain (pp)": claim["gain_pp"],
                     "book gain (pp)": None if gain is None else f"{gain:+.2f} ± {gain_std:.2f}",
                     "book reference": ref_value})
    return pd.DataFrame(rows).set_index("sweep")
