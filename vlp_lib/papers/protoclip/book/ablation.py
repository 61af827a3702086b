"""ProtoCLIP's hyper-parameter ablation (Section IV-D, Fig. 6 (a)-(d)) as a plan of runs.

``make_plan`` validates every parameter (``ValueError`` naming it, before any compute), derives the
runs of the requested sweeps around the base setting, and ``estimate_seconds`` says how long the runs
not yet in the results store will take on this machine (``calibrate_rates`` measures it in a few seconds).
``CLAIMS`` states IV-D's claims about Fig. 6 once, as shared ``vlp_lib.book.claims.Claim`` data on the bars
``(sweep, value)``; ``claims_table`` judges them with the shared ``judge`` (``report.VERDICT_RULE``). The base setting follows IV-D: episode = 0.2 of the data
(paper: 0.2M of 1M), no soft target (hardmax), 10 images per prototype, no external teacher, no
augmentation beyond the 0.9-1 crop; the training amount (episode size x episodes) is held fixed.

On real pairs (``train_data``: an OpenCLIP CSV or WebDataset shards) the data set is what it holds: the episode is
0.2 of it, an ``episode_size`` larger than the data is the whole data set each episode (capped, with a note:
``Plan.notes``), and the training amount is the scale's passes over the data (``epochs_of``), at least two episodes
so that prototypes train after the InfoNCE-only first one. Every run is evaluated on ``eval_tasks`` (default: the
world's avg3 tasks), and the bars and claims read avg3's linear probe, on real data that of the headline task
(``vlp_lib.book.data.HEADLINE_RULE``; ``Plan.metric``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from vlp_lib import experiment, runs
from vlp_lib.book import data
from vlp_lib.book.claims import Claim, decisive_comparison, declare, judge
from vlp_lib.book.report import (
    SCORECARD_COLUMNS,
    PairedTest,
    book_fdr,
    format_test,
    interval_text,
    mean_std,
    p_q_text,
    verdict_text,
)
from vlp_lib.config import (
    as_list,
    check_bool,
    check_number,
    check_positive_int,
    scale_defaults,
)
from vlp_lib.data import folder_tasks, real
from vlp_lib.papers.protoclip.book import paper
from vlp_lib.papers.protoclip.calibration import calibrate_rates, run_seconds
from vlp_lib.papers.protoclip.method import ProtoCLIPArgs
from vlp_lib.papers.protoclip.teachers import check_teacher, clip_teacher_config
from vlp_lib.run_config import RunConfig
from vlp_lib.suite import PROBES, RETRIEVALS, VALIDATION_TASKS

SWEEPS = {
    "episode_size": "Fig. 6 (a): episode size (ProtoCLIP without L_CLIP)",
    "target_temperature": "Fig. 6 (b): target temperature tau_y (0 = hardmax)",
    "images_per_prototype": "Fig. 6 (c): images per prototype (L_Proto + L_CLIP)",
    "external_teacher": "Fig. 6 (d): external teacher",
}
# each sweep's run-config field (``vlp_lib.book.audit``): the episode size is the trainer's, the others ProtoCLIP's
SWEEP_FIELDS = {
    "episode_size": "episode_size",
    "target_temperature": "method_kwargs.target_temperature",
    "images_per_prototype": "method_kwargs.images_per_prototype",
    "external_teacher": "method_kwargs.external_teacher",
}
# each sweep's x axis: the hyper-parameter its bars vary, with its unit
SWEEP_AXES = {
    "episode_size": "episode size (pairs)",
    "target_temperature": "target temperature τ_y (0 = hardmax)",
    "images_per_prototype": "images per prototype",
    "external_teacher": "external teacher",
}

# Sizes per scale. Laptop: a 10,240-pair world and 2 epochs of training per run, 160 steps of 128 pairs
# with the laptop recipe (``vlp_lib.config.SCALES``); every swept episode size (0.1, 0.2, 1.0 of the
# data) is a multiple of the batch and divides the training amount, so every run trains on exactly the same
# number of pairs. The learning-rate warm-up is ``WARMUP_FRACTION`` of a run's steps. Three values per sweep (the
# claimed one, its reference, one more for the figure's shape; the paper's figure has 4-6): the laptop book's
# 60-minute budget buys three seeds of three values better than fewer seeds of more values.
ABLATION_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        train_size=128,
        total_samples=128,
        batch_size=32,
        task_train=100,
        task_test=50,
        retrieval_images=30,
        head_hidden=64,
        head_dim=32,
        episode_fractions=(1.0,),
        temperatures=(0.0, 0.01),
        images_per_prototype_values=(5, 10),
        teachers=("none", "minilm"),
    ),
    "laptop": dict(
        train_size=10_240,
        total_samples=20_480,
        batch_size=128,
        task_train=2_000,
        task_test=2_000,
        retrieval_images=200,
        head_hidden=512,
        head_dim=64,
        episode_fractions=(0.1, 0.2, 1.0),
        temperatures=(0.0, 0.01, 0.05),
        images_per_prototype_values=(5, 10, 50),
        teachers=("none", "clip", "minilm"),
    ),
    "paper": dict(
        train_size=1_000_000,
        total_samples=20_000_000,
        batch_size=512,
        task_train=50_000,
        task_test=10_000,
        retrieval_images=5_000,
        head_hidden=2048,
        head_dim=128,
        episode_fractions=(0.05, 0.1, 0.2, 0.5, 1.0),
        temperatures=(0.0, 0.001, 0.005, 0.01, 0.05, 0.1),
        images_per_prototype_values=(5, 10, 20, 50, 100),
        teachers=("none", "clip", "minilm"),
    ),
}
EPISODE_FRACTION = 0.2  # IV-D: 0.2M pairs per episode out of 1M
WARMUP_FRACTION = 0.05

# The time estimate's rates are measured on the machine at hand (``calibrate_rates``), once per process and
# setting; the largest K-Means the calibration runs (points), so that it stays within a second or two.


@dataclass
class Run:
    sweep: str  # "base" or a SWEEPS key
    value: Any
    config: RunConfig


@dataclass
class Plan:
    scale: str
    base: dict[str, Any]
    runs: list[Run] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the plan changed of the parameters, and why (printed)
    metric: str = "avg3/linear"  # what the bars and the claims read (``bar_metric``)

    @property
    def config(self) -> RunConfig:
        """The config of the base run of the first seed: the data and evaluation every run shares."""
        return self.runs[0].config

    @property
    def teachers(self) -> set[str]:
        """The external teachers the plan's runs use ("minilm", "clip"; Fig. 6 (d))."""
        return {str(cast(ProtoCLIPArgs, r.config.method_args).external_teacher) for r in self.runs} - {"none"}

    def unique_configs(self) -> list[RunConfig]:
        seen: dict[str, RunConfig] = {}
        for r in self.runs:
            seen.setdefault(runs.config_hash(r.config.to_dict()), r.config)
        return list(seen.values())


def make_plan(
    scale: str = "laptop",
    episode_size: int | None = None,
    k: int | None = None,
    images_per_prototype: int = ProtoCLIPArgs.images_per_prototype,  # the method's defaults, written once
    target_temperature: float = ProtoCLIPArgs.target_temperature,
    external_teacher: str = ProtoCLIPArgs.external_teacher,
    pbt: bool = ProtoCLIPArgs.use_pbt,
    total_samples: int | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    sweeps: Sequence[str] = tuple(SWEEPS),
    train_size: int | None = None,
    train_data: str = "world",
    eval_tasks: Sequence[str] | None = None,
) -> Plan:
    """Every run of the ablation, validated. On the world, an ``episode_size`` larger than the scale's world grows
    the world to fit (the generated world is unbounded); the training amount grows to at least one episode. On real
    ``train_data`` the data keeps its size: a larger ``episode_size`` is capped at it, with a note (module
    docstring). ``eval_tasks``: the tasks every run is evaluated on (``None``: the avg3 tasks)."""
    scale_defaults(scale)
    sizes = ABLATION_SCALES[scale]
    sweeps, seeds = as_list("sweeps", sweeps), as_list("seeds", seeds)
    for s in sweeps:
        if s not in SWEEPS:
            raise ValueError(f"sweeps: unknown sweep {s!r}; known: {list(SWEEPS)}")
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    images_per_prototype = check_positive_int("images_per_prototype", images_per_prototype)
    target_temperature = check_number("target_temperature", target_temperature)
    check_teacher(external_teacher)
    pbt = check_bool("pbt", pbt)
    tasks = list(VALIDATION_TASKS) if eval_tasks is None else as_list("eval_tasks", eval_tasks)
    notes: list[str] = []
    world = check_train_data(train_data)
    if world:
        n = check_positive_int("train_size", train_size if train_size is not None else sizes["train_size"])
    else:
        if train_size is not None:
            raise ValueError(f"train_size ({train_size}) is the world's size; train_data {train_data!r} gives its own")
        n = real.count_pairs(train_data)  # ValueError naming train_data: no such source, no columns, no pairs
    if episode_size is None:
        episode_size = max(sizes["batch_size"], int(round(EPISODE_FRACTION * n)))
    episode_size = check_positive_int("episode_size", episode_size)
    if world:
        n = max(n, episode_size)  # the world grows to fit the episode
    elif episode_size > n:
        notes.append(
            f"episode_size {episode_size:,} is larger than the {n:,} pairs of train_data: an episode samples the data "
            f"without replacement (III-D), so every episode is the whole data set ({n:,} pairs)"
        )
        episode_size = n
    if total_samples is None:
        total = sizes["total_samples"] if world else max(round(epochs_of(scale) * n), 2 * episode_size)
    else:
        total = check_positive_int("total_samples", total_samples)
    total = check_positive_int("total_samples", max(total, episode_size))
    if k is not None:
        k = check_positive_int("k", k)
        if k > episode_size:
            raise ValueError(f"k ({k}) is larger than the episode ({episode_size} pairs)")
    if episode_size // images_per_prototype < 1:
        raise ValueError(f"images_per_prototype ({images_per_prototype}) is larger than the episode ({episode_size})")
    batch = min(sizes["batch_size"], episode_size)
    if round(total / episode_size) < 2:
        notes.append(
            f"total_samples {total:,} is {round(total / episode_size)} episode of {episode_size:,} pairs: the base "
            "setting's first episode is InfoNCE-only (the official warm-up), so its L_Proto never trains; "
            "raise total_samples to at least two episodes"
        )

    def config(seed: int, episode: int, clip_weight: float = 1.0, **method: Any) -> RunConfig:
        # the official recipe's InfoNCE-only first episode, except in the L_Proto-only episode-size sweep
        # (Fig. 6 (a)), where it would be half of the run at the largest episode and 1/20 at the smallest
        kwargs = {
            "head_hidden": sizes["head_hidden"],
            "head_dim": sizes["head_dim"],
            "k": k,
            "images_per_prototype": images_per_prototype,
            "target_temperature": target_temperature,
            "use_pbt": bool(pbt),
            "external_teacher": external_teacher,
            "clip_weight": clip_weight,
            "warmup_episodes": 1 if clip_weight else 0,
        }
        kwargs.update(method)
        if kwargs["k"] is None:
            del kwargs["k"]
        steps = round(total / episode) * (episode // batch)
        extra = {} if world else {"train_data": train_data}
        return experiment.make_config(
            scale,
            method="protoclip",
            seed=seed,
            train_size=n,
            episode_size=episode,
            epochs=total / n,
            batch_size=batch,
            warmup_steps=max(1, int(WARMUP_FRACTION * steps)),
            task_train=sizes["task_train"],
            task_test=sizes["task_test"],
            retrieval_images=sizes["retrieval_images"],
            eval_tasks=tasks,
            method_kwargs=kwargs,
            **extra,
        )

    plan = Plan(
        scale=scale,
        base=dict(
            episode_size=episode_size,
            k=k,
            images_per_prototype=images_per_prototype,
            target_temperature=target_temperature,
            external_teacher=external_teacher,
            pbt=pbt,
            total_samples=total,
            train_size=n,
        ),
        seeds=seeds,
        notes=notes,
    )
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
                    plan.runs.append(
                        Run("images_per_prototype", ipp, config(seed, episode_size, images_per_prototype=ipp, k=None))
                    )
        if "external_teacher" in sweeps:
            for teacher in sizes["teachers"]:
                plan.runs.append(Run("external_teacher", teacher, config(seed, episode_size, external_teacher=teacher)))
    plan.metric = bar_metric(plan.config)
    if plan.metric != "avg3/linear":
        notes.append(
            f"the bars and IV-D's claims read {plan.metric}, avg3's linear probe on the headline task (HEADLINE_RULE)"
            if data.metric_on_data("avg3/linear", plan.config)
            else f"the bars read {plan.metric}; IV-D's claims are not run: {not_run_reason(plan)}"
        )
    return plan


def not_run_reason(plan: Plan) -> str | None:
    """Why IV-D's claims (on avg3's linear probe) cannot be judged on the plan's data (``None``: they can)."""
    if data.metric_on_data("avg3/linear", plan.config) is not None:
        return None
    return data.why_not("avg3/linear", plan.config)


def check_train_data(train_data: Any) -> bool:
    """Whether ``train_data`` is the generated world; ``ValueError`` naming it when it is no string."""
    if not isinstance(train_data, str):
        raise ValueError(f"train_data must be 'world' or a path, got {train_data!r}")
    return real.is_world(train_data)


def epochs_of(scale: str) -> float:
    """The passes over the data of one ablation run at ``scale`` (its training amount over its world's size): what a
    run trains on real data, whose size is its own."""
    sizes = ABLATION_SCALES[scale]
    return sizes["total_samples"] / sizes["train_size"]


def bar_metric(config: RunConfig) -> str:
    """What the bars of a plan evaluated as ``config`` read: avg3's linear probe (Fig. 6), as the data gives it
    (``vlp_lib.book.data.metric_on_data``: the headline task's on real data), else the linear probe of the first
    classification task evaluated. ``ValueError`` naming ``eval_tasks`` when it names none (the bars need one)."""
    moved = data.metric_on_data("avg3/linear", config)
    if moved is not None:
        return moved
    tasks = [t for t in config.eval.tasks if t not in PROBES and t not in RETRIEVALS and t != data.WORLD_RETRIEVAL]
    if not tasks:
        raise ValueError(
            f"eval_tasks: the ablation's bars read a linear probe; {list(config.eval.tasks)} names no classification "
            "task (add folder:PATH or a world task)"
        )
    return f"{folder_tasks.metric_name(tasks[0])}/linear"


def chance_level(plan: Plan) -> float | None:
    """What a random guesser scores on the bars' metric (``plan.metric``) under the plan's evaluation
    (``suite.chance_levels``: 1 / classes of each task's test split; an average such as avg3's linear probe, the
    mean of its tasks' levels), ``None`` where it names none. Reads the tasks' test labels (cached after the runs'
    evaluation)."""
    from vlp_lib.suite import chance_levels

    level = chance_levels(plan.config.eval).get(plan.metric)
    return None if level is None else float(level)


def bar_ylabel(plan: Plan) -> str:
    """The bars' y axis: the metric they read, in percent."""
    if plan.metric == "avg3/linear":
        return "avg3 linear-probe accuracy (%)"
    task, _, metric = plan.metric.partition("/")
    return f"{task} {metric.replace('_', ' ')}-probe accuracy (%)" if metric == "linear" else f"{plan.metric} (%)"


def figure_alt(plan: Plan, sweep: str, table: pd.DataFrame, chance: float | None) -> str:
    """The alt text of ``sweep``'s bar chart (``table``: its rows of ``sweep_table``; ``chance``: ``chance_level``)."""

    def value(v: Any) -> str:
        return f"{int(v):,}" if isinstance(v, (int, float, np.number)) and float(v).is_integer() else str(v)

    seeds = sorted({int(n) for n in table["seeds"]})
    over = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]} to {seeds[-1]}"
    what = (
        "linear-probe accuracy averaged over shapes10, shapes_colours and clutter10"
        if plan.metric == "avg3/linear"
        else bar_ylabel(plan).removesuffix(" (%)")
    )
    return (
        f"Bar chart, {SWEEPS[sweep]}: ProtoCLIP's {what} (%) for each value of the {SWEEP_AXES[sweep]}: "
        f"{', '.join(value(v) for v in table['value'])}; mean ± std over {over} seed{'s' if seeds[-1] != 1 else ''}"
        + (f"; chance ({100 * chance:.1f}%) dashed." if chance is not None else ".")
    )


def estimate_seconds(plan: Plan, rates: dict[str, float] | None = None) -> dict[str, float]:
    """Wall time of the runs not yet stored, on this machine: ``rates`` measured by ``calibrate_rates`` on the
    plan's first missing run (seconds; pass ``rates`` to skip it, as the tests do), summed by ``run_seconds`` over
    the missing runs and the missing CLIP runs that serve as the "clip" teacher (trained at the calibrated CLIP
    rate, ``rates["clip_train"]``, or ``rates["train"]``). Where some of the plan's runs are stored, the
    evaluation time is the median of theirs instead of a calibrated one. ``world_seconds``: rendering the world
    if it is not cached yet, at the calibrated ``world_images_per_s``. Nothing is measured when every run is
    stored."""
    records = {runs.config_hash(c.to_dict()): (c, experiment.stored(c)) for c in plan.unique_configs()}
    todo = [c for c, record in records.values() if record is None]
    evaluations = [
        r["timings"]["evaluation"]
        for _, r in records.values()
        if r is not None and "evaluation" in r.get("timings", {})
    ]
    teachers: dict[str, RunConfig] = {}
    for c in todo:
        if isinstance(c.method_args, ProtoCLIPArgs) and c.method_args.external_teacher == "clip":
            t = clip_teacher_config(c)
            if experiment.stored(t) is None:
                teachers.setdefault(runs.config_hash(t.to_dict()), t)
    out = {"runs_total": len(plan.unique_configs()), "runs_to_do": len(todo), "seconds": 0.0, "world_seconds": 0.0}
    if not todo:
        return out
    if rates is None:
        rates = calibrate_rates(todo[0], evaluation=not evaluations)
        if evaluations:
            rates["eval_s"] = float(np.median(evaluations))
        if teachers:
            rates["clip_train"] = calibrate_rates(next(iter(teachers.values())), evaluation=False)["train"]
    clip_rates = {**rates, "train": rates.get("clip_train", rates["train"])}
    out["seconds"] = sum(run_seconds(c, rates) for c in todo) + sum(
        run_seconds(t, clip_rates) for t in teachers.values()
    )
    if data.is_world(plan.config):  # real pairs are decoded once into a cache, in seconds at these sizes
        out["world_seconds"] = plan.base["train_size"] / rates["world_images_per_s"]
    return out


def execute(plan: Plan, progress: bool = True) -> list[tuple[Run, dict]]:
    """Run (or load) every run of the plan; returns (run, record) pairs."""
    return [(r, experiment.run(r.config, progress=progress)) for r in plan.runs]


def untrained(plan: Plan, verbose: bool = False) -> dict[tuple[str, Any], list[dict]]:
    """The untrained network of every run whose bar is a reference of one of Fig. 6's claims (``paper_claims``: a
    "best_of" claim's every other bar of its sweep), for each seed: ``experiment.untrained``, the run's config
    evaluated before any step (stored, so computed once). ``claims.reference_learning`` finds them in the store by
    the run's config, so a claim whose reference has not beaten its untrained network is judged at the floor:
    ``{(sweep, value): [record per seed]}``."""
    bars = list(dict.fromkeys((r.sweep, r.value) for r in plan.runs))
    references = set()
    for claim in paper_claims(plan, plan.metric):
        if claim.kind == "best_of":
            sweep = cast(tuple[str, Any], claim.better)[0]
            claim = replace(claim, candidates=tuple(b for b in bars if b[0] == sweep and b != claim.better))
        references |= {reference for _, reference in claim.pairs()}
    out: dict[tuple[str, Any], dict[int, dict]] = {}
    for run in plan.runs:
        bar = (run.sweep, run.value)
        if bar in references:  # the base run joins every sweep whose value it shares: one record per seed
            out.setdefault(bar, {})[int(run.config.seed)] = experiment.untrained(run.config, verbose=verbose)
    return {bar: list(by_seed.values()) for bar, by_seed in out.items()}


def sweep_table(results: list[tuple[Run, dict]], metric: str = "avg3/linear") -> pd.DataFrame:
    """Mean ± std over seeds of ``metric`` per (sweep, value); the base run joins every sweep whose
    value it shares, so bars of one sweep always share the same other settings."""
    rows = []
    by_key: dict[tuple[str, Any], list[float]] = {}
    for run, record in results:
        by_key.setdefault((run.sweep, run.value), []).append(record["metrics"][metric])
    for (sweep, value), values in by_key.items():
        m, s = mean_std(values)
        rows.append(
            {
                "sweep": sweep,
                "value": value,
                "mean": m,
                "std": s,
                "seeds": len(values),
                "values": np.round(values, 4).tolist(),
            }
        )
    return pd.DataFrame(rows)


def seed_table(results: list[tuple[Run, dict]], metric: str = "avg3/linear") -> dict[tuple[str, Any], dict[int, float]]:
    """``{(sweep, value): {seed: metric}}``: the per-seed values behind ``sweep_table``'s bars."""
    out: dict[tuple[str, Any], dict[int, float]] = {}
    for run, record in results:
        out.setdefault((run.sweep, run.value), {})[int(run.config.seed)] = float(record["metrics"][metric])
    return out


def _claim(
    claim_id: str, text: str, better: tuple[str, Any], reference: tuple[str, Any] | None, paper_effect: float | None
) -> Claim:
    """One of IV-D's claims about Fig. 6 as a shared ``Claim`` on the ablation's bars ``(sweep, value)``: kind
    "direction" (``better`` beats ``reference``) or, without a ``reference``, "best_of" (``better`` beats the best
    of the sweep's other bars, "is the best value"). Episode sizes are fractions of the world (0.2 of the data
    against one episode per epoch); ``paper_claims`` resolves them to pair counts. ``paper_effect``: the gain IV-D
    states, as a fraction (its percentage points / 100), or ``None`` where the paper shows it only in the figure."""
    return Claim(
        claim_id,
        text,
        SWEEPS[better[0]].split(":")[0],
        "direction" if reference is not None else "best_of",
        "avg3/linear",
        "shown in the figure, no number in the text"
        if paper_effect is None
        else f"+{100 * paper_effect:.2f} pp (average linear probe)",
        paper_effect,
        notebook="ablation",
        better=better,
        reference=reference,
    )


CLAIMS: list[Claim] = [
    _claim(
        "fig6a_episode",
        "episode of 0.2 of the data beats one episode per epoch",
        ("episode_size", EPISODE_FRACTION),
        ("episode_size", 1.0),
        paper.NUMBERS["fig6a_gain_best_over_epoch_pp"] / 100,
    ),
    _claim(
        "fig6b_soft_target",
        "soft target tau_y = 0.01 beats hardmax",
        ("target_temperature", 0.01),
        ("target_temperature", 0.0),
        paper.NUMBERS["fig6b_gain_soft_over_hardmax_pp"] / 100,
    ),
    _claim(
        "fig6c_images_per_prototype",
        "10 images per prototype is the best value",
        ("images_per_prototype", 10),
        None,
        None,
    ),
    _claim(
        "fig6d_minilm",
        "the language-model teacher (RoBERTa; ours MiniLM) helps",
        ("external_teacher", "minilm"),
        ("external_teacher", "none"),
        None,
    ),
    _claim(
        "fig6d_clip",
        "the CLIP text-encoder teacher helps",
        ("external_teacher", "clip"),
        ("external_teacher", "none"),
        None,
    ),
    _claim(
        "fig6d_minilm_vs_clip",
        "the language-model teacher beats the CLIP teacher",
        ("external_teacher", "minilm"),
        ("external_teacher", "clip"),
        None,
    ),
]

# the config field each of Fig. 6's claims varies (``vlp_lib.book.audit``): its sweep's
CLAIMS = declare(CLAIMS, {c.id: (SWEEP_FIELDS[cast(tuple, c.better)[0]],) for c in CLAIMS})


def paper_claims(plan: Plan, metric: str = "avg3/linear") -> list[Claim]:
    """``CLAIMS`` in this plan's bars, on ``metric``: episode sizes resolved to pair counts, and the "best_of"
    claim's ``candidates`` the other bars of its sweep in the plan."""
    n = plan.base["train_size"]
    batch = min(ABLATION_SCALES[plan.scale]["batch_size"], plan.base["episode_size"])
    bars = list(dict.fromkeys((r.sweep, r.value) for r in plan.runs))

    def bar(row: Any) -> Any:
        if row is None or row[0] != "episode_size":
            return row
        return (row[0], max(batch, int(round(row[1] * n))))

    out = []
    for c in CLAIMS:
        better = bar(c.better)
        candidates = tuple(b for b in bars if b[0] == better[0] and b != better) if c.kind == "best_of" else ()
        out.append(replace(c, metric=metric, better=better, reference=bar(c.reference), candidates=candidates))
    return out


def bar_records(results: list[tuple[Run, dict]]) -> dict[tuple[str, Any], list[dict]]:
    """``{(sweep, value): [record per seed]}`` of the ablation's ``(run, record)`` pairs, the rows its claims read
    (each record carries its run's seed; a seed run twice counts once, its last record, as in ``seed_table``)."""
    by_seed: dict[tuple[str, Any], dict[int, dict]] = {}
    for run, record in results:
        seed = int(run.config.seed)
        by_seed.setdefault((run.sweep, run.value), {})[seed] = {
            **record,
            "config": {**record.get("config", {}), "seed": seed},
        }
    return {key: list(records.values()) for key, records in by_seed.items()}


def judged(
    results: list[tuple[Run, dict]], plan: Plan, metric: str | None = None, paper_name: str = "ProtoCLIP"
) -> list[tuple[Claim, dict[str, Any], PairedTest, Any, Any]]:
    """Each claim of ``paper_claims`` whose bars ran, judged by ``vlp_lib.book.claims.judge`` on ``bar_records``:
    (claim, scorecard line, its paired test, the claimed-better value, the reference value), on ``metric``
    (default ``plan.metric``). A "best_of" claim is judged against every other bar of its sweep that ran; none
    where the data gives no avg3 to read the claims on (``not_run_reason``)."""
    metric = metric or plan.metric
    rows = bar_records(results)
    out: list[tuple[Claim, dict[str, Any], PairedTest, Any, Any]] = []
    if not_run_reason(plan) is not None:  # the data gives no avg3, nor a headline task to read it on
        return out
    for c in paper_claims(plan, metric):
        if c.kind == "best_of":
            bar = cast(tuple[str, Any], c.better)
            c = replace(c, candidates=tuple(k for k in rows if k[0] == bar[0] and k != bar))
            if not c.candidates:
                continue
        line = judge(c, rows, paper_name)
        if line["verdict"] == "not run":
            continue
        test, better, reference = decisive_comparison(c, rows)  # the comparison the line's interval and p are of
        setting, reference_value = cast(tuple[str, Any], better)[1], cast(tuple[str, Any], reference)[1]
        out.append((c, line, test, setting, reference_value))
    return out


def unjudged(results: list[tuple[Run, dict]], plan: Plan, metric: str | None = None) -> pd.DataFrame:
    """The claims of ``CLAIMS`` that ``claims_table`` leaves out, each with the reason: the data cannot give their
    metric (``not_run_reason``), their sweep is not in the plan, or the plan's scale has no bar they compare."""
    metric = metric or plan.metric
    judged_ids = {c.id for c, *_ in judged(results, plan, metric)}
    swept = {r.sweep for r in plan.runs}
    bars = {(r.sweep, r.value) for r in plan.runs}
    data_reason = not_run_reason(plan)
    lines = []
    for c in paper_claims(plan, metric):
        if c.id in judged_ids:
            continue
        sweep = cast(tuple[str, Any], c.better)[0]
        if data_reason is not None:
            reason = data_reason
        elif sweep not in swept:
            reason = f"the sweep {sweep!r} is not in sweeps"
        else:
            missing = [cast(tuple[str, Any], b) for b in (c.better, c.reference) if b is not None and b not in bars]
            others = [b for b in bars if b[0] == sweep and b != c.better]
            reason = (
                f"scale {plan.scale!r} runs no bar {', '.join(str(b[1]) for b in missing)} of this sweep"
                if missing
                else "no other bar of this sweep to compare with"
                if not others
                else "its bars did not run"
            )
        lines.append({"id": c.id, "claim": c.text, "sweep": c.source, "not run because": reason})
    return pd.DataFrame(lines, columns=["id", "claim", "sweep", "not run because"])


def claims_table(results: list[tuple[Run, dict]], plan: Plan, metric: str | None = None) -> pd.DataFrame:
    """Each claim of ``paper_claims`` tested on this book's runs by ``vlp_lib.book.claims.judge``
    (``report.paired_test``): the per-seed (paired) difference between the claimed-better setting and its
    reference, mean ± std and its 95% t interval in percentage points on ``df`` degrees of freedom (pooled over the
    bars, ``report.POOLING_RULE``), the verdict (``report.VERDICT_RULE``, against the paper's gain where it states
    one) and its p, the minimum detectable effect at the seeds run and the seeds a new experiment would plan.

    Pairing by seed matters here: a seed that trains well does so in every setting, so the std of the bars
    (``sweep_table``) is mostly that common luck, and the std of the per-seed differences is not."""
    rows = []
    for c, line, test, better, reference in judged(results, plan, metric):
        rows.append(
            {
                "id": c.id,
                "sweep": c.source,
                "claim": c.text,
                "setting": better,
                "reference": reference,
                "paper gain (pp)": None if c.paper_effect is None else round(100 * c.paper_effect, 2),
                "book gain (pp)": f"{100 * test.mean:+.2f} ± {100 * test.std:.2f}",
                "95% interval": line["interval"],
                "df": line["df"],
                "verdict": line["verdict"],
                "p": round(float(line["p"]), 4),
                "detectable effect": line["mde"],
                "seeds planned": line["seeds_needed"],
                "gain": test.mean,
                "gain_std": test.std,
                "seeds": line["seeds"],
                "test": test,
            }
        )
    return pd.DataFrame(rows, columns=CLAIMS_TABLE_COLUMNS)


def scorecard_lines(
    results: list[tuple[Run, dict]], plan: Plan, paper_name: str, metric: str = "avg3/linear"
) -> dict[str, dict[str, Any]]:
    """``{claim id: scorecard line}`` of the claims ``claims_table`` judges (``judge``'s lines), the book value
    being the mean per-seed difference followed by the compared bars, "(setting vs reference)"."""
    judged_lines = {
        c.id: (line, format_test(test, c.percent)) for c, line, test, *_ in judged(results, plan, metric, paper_name)
    }
    out = {}
    for _, row in claims_table(results, plan, metric).iterrows():
        line, text = judged_lines[row["id"]]
        out[row["id"]] = {**line, "book_value": f"{text['book_value']} ({row['setting']} vs {row['reference']})"}
    return out


def page_table(results: list[tuple[Run, dict]], plan: Plan, paper_name: str = "ProtoCLIP") -> pd.DataFrame:
    """The page's table of the claims ``claims_table`` judges, indexed by claim id, with the scorecard's numbers
    (``scorecard_lines``: the mean per-seed difference of the bars each line compares, its interval on its degrees
    of freedom) and its verdict at 5% FDR across the book (``report.book_fdr`` at the plan's scale), the word judged
    alone beside it where the two differ; then p / q, the detectable effect and the seeds a new experiment would plan.
    The claim carries its panel ("(Fig. 6 (a))"), as ``report.claims_view``'s its source, so that the table has the
    view's eight columns (``chapter.split_view`` shows them as two tables)."""
    table = claims_table(results, plan).set_index("id")
    if not len(table):
        return table
    lines = pd.DataFrame.from_dict(scorecard_lines(results, plan, paper_name, plan.metric), orient="index")
    lines = book_fdr(lines.reindex(columns=SCORECARD_COLUMNS[1:]).rename_axis("id"), plan.scale)
    q = pd.to_numeric(lines["q"], errors="coerce")
    return pd.DataFrame(
        {
            "claim (source)": [f"{claim} ({sweep})" for claim, sweep in zip(table["claim"], table["sweep"])],
            "paper gain (pp)": table["paper gain (pp)"].astype(object).where(table["paper gain (pp)"].notna(), "—"),
            "book (mean Δ per seed)": lines["book_value"],
            "95% interval (df)": [interval_text(str(i), str(d)) for i, d in zip(lines["interval"], lines["df"])],
            "verdict at 5% FDR": [verdict_text(f, v) for f, v in zip(lines["verdict_fdr"], lines["verdict"])],
            "p / q": [p_q_text(a, b) for a, b in zip(pd.to_numeric(lines["p"]), q)],
            "detectable": table["detectable effect"],
            "seeds planned": table["seeds planned"],
        },
        index=table.index,
    )


CLAIMS_TABLE_COLUMNS = [
    "id",
    "sweep",
    "claim",
    "setting",
    "reference",
    "paper gain (pp)",
    "book gain (pp)",
    "95% interval",
    "df",
    "verdict",
    "p",
    "detectable effect",
    "seeds planned",
    "gain",
    "gain_std",
    "seeds",
    "test",
]
