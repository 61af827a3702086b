"""The runs behind the ProtoCLIP chapter's tables (III, IV, X, XI, XII) and figures (7, 8, 9), as data.

Every notebook of the chapter asks this module for its configs, so two notebooks that show the same
run (the full ProtoCLIP of Table III is the 1-epoch row of Table IV; Table XII and Fig. 8 reuse Table
IV's models) share one record in the results store.

Setting (IV-E, scaled down): the laptop world has 10,240 pairs; the unit of training is E = 2 epochs,
as the paper's unit is 32 epochs. Table IV compares ProtoCLIP at E/2 and E with CLIP at E and 2E; the
component tables (III, X, XI) train for E/2 (the paper: 8 epochs against 32). The full ProtoCLIP is
the paper's final recipe: episode = 0.2 of the data, 10 images per prototype, soft targets at
tau_y = 0.01, PBT, the external teacher (MiniLM standing in for RoBERTa) and ProtoCLIP augmentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from . import ablation, experiment, runs
from .config import as_list, scale_defaults
from .report import direction, fmt, mean_std, record_differences, seed_values, verdict
from .suite import VALIDATION_TASKS

# Sizes per scale. Laptop: 20,480 pairs, E = 2 epochs = 320 steps of 128 pairs with the laptop recipe
# (``vlp_lib.config.SCALES``; every episode of 4,096 a multiple of the batch), the warm-up 5% of a row's steps,
# the three validation tasks plus background and count for Table XII, 500 retrieval images, three seeds. Smoke (tests):
# the three validation tasks and two seeds, which is enough to run every line but too few to judge a claim.
CHAPTER_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(train_size=256, unit_epochs=2, batch_size=64, episode_size=64, task_train=200, task_test=100,
                  retrieval_images=30, head_hidden=64, head_dim=32, data_sizes=(64, 128),
                  eval_tasks=VALIDATION_TASKS, seeds=(0, 1), lr=1e-3, warmup_fraction=0.1, infonce_warmup_episodes=1),
    "laptop": dict(train_size=20_480, unit_epochs=2, batch_size=128, episode_size=4_096, task_train=2_000,
                   task_test=1_000, retrieval_images=500, head_hidden=512, head_dim=64,
                   data_sizes=(2_560, 5_120, 10_240), eval_tasks=None, seeds=(0, 1, 2), lr=2e-3,
                   warmup_fraction=0.05, infonce_warmup_episodes=1),
    "paper": dict(train_size=2_500_000, unit_epochs=32, batch_size=512, episode_size=200_000, task_train=50_000,
                  task_test=10_000, retrieval_images=5_000, head_hidden=2_048, head_dim=128,
                  data_sizes=(250_000, 500_000, 1_000_000), eval_tasks=None, seeds=(0, 1, 2), lr=5e-4,
                  warmup_fraction=0.02, infonce_warmup_episodes=1),
}

# The final recipe (IV-E): Table I plus the best settings of Fig. 6.
FULL_PROTOCLIP: dict[str, Any] = {"images_per_prototype": 10, "target_temperature": 0.01, "use_pbt": True,
                                  "external_teacher": "minilm"}
FULL_AUGMENTATION = "protoclip"
NO_TEACHER = {**FULL_PROTOCLIP, "external_teacher": "none"}


@dataclass(frozen=True)
class Row:
    """One row of a table: a method, its arguments, the augmentation and the training amount in units of E.
    Rows that train the same thing are equal whatever their labels (Table X's last row is Table III's first
    ProtoCLIP row), so a dict keyed by rows holds each run once."""

    label: str = field(compare=False)
    method: str
    method_kwargs: tuple[tuple[str, Any], ...] = ()
    augmentation: str = FULL_AUGMENTATION
    units: float = 0.5
    image_lock_fraction: float = 0.0  # the last part of training with the image tower locked (LiT, IV-A-2)

    @staticmethod
    def of(label: str, method: str, kwargs: dict[str, Any] | None = None, augmentation: str = FULL_AUGMENTATION,
           units: float = 0.5, image_lock_fraction: float = 0.0) -> "Row":
        return Row(label, method, tuple(sorted((kwargs or {}).items())), augmentation, units, image_lock_fraction)


# Table III: each "-" row removes one component from "w/o RoBERTa" (IV-E-2).
TABLE3 = [
    Row.of("CLIP", "clip", augmentation="none"),
    Row.of("ProtoCLIP", "protoclip", FULL_PROTOCLIP),
    Row.of("ProtoCLIP w/o RoBERTa", "protoclip", NO_TEACHER),
    Row.of("- w/o PBT", "protoclip", {**NO_TEACHER, "use_pbt": False}),
    Row.of("- w/o soft target", "protoclip", {**NO_TEACHER, "target_temperature": 0.0}),
    Row.of("- w/o K-Means", "protoclip", {**NO_TEACHER, "kmeans_iters": 0}),
    Row.of("- w/o augmentation", "protoclip", NO_TEACHER, augmentation="none"),
]
# Table X: loss terms (Eq. 8), everything else as the full recipe.
TABLE10 = [
    Row.of("L_CLIP", "clip"),
    Row.of("L_Proto", "protoclip", {**NO_TEACHER, "clip_weight": 0.0}),
    Row.of("L_Proto + L_CLIP", "protoclip", NO_TEACHER),
    Row.of("L_Proto + L_CLIP + L_Proto^external", "protoclip", FULL_PROTOCLIP),
]
# Table XI: augmentations, on the "w/o RoBERTa" recipe of Table III (whose rows it shares).
TABLE11 = [
    Row.of("No augmentation", "protoclip", NO_TEACHER, augmentation="none"),
    Row.of("SimCLR augmentation", "protoclip", NO_TEACHER, augmentation="simclr"),
    Row.of("ProtoCLIP augmentation", "protoclip", NO_TEACHER),
]
# Table IV: ProtoCLIP at E/2 and E against CLIP at E and 2E (paper: 16 and 32 against 32 and 64 epochs). At E,
# ProtoCLIP follows IV-A-2: the image tower's learning rate anneals to zero at E/2 (16 of 32 epochs), then
# locked-image tuning with L_CLIP alone; at E/2 it is annealed to the end like every other row.
TABLE4 = [
    Row.of("ProtoCLIP", "protoclip", FULL_PROTOCLIP, units=0.5),
    Row.of("CLIP", "clip", augmentation="none", units=1.0),
    Row.of("ProtoCLIP", "protoclip", FULL_PROTOCLIP, units=1.0, image_lock_fraction=0.5),
    Row.of("CLIP", "clip", augmentation="none", units=2.0),
]
# The control the paper does not run: CLIP at E with ProtoCLIP's augmentation, which separates the method's
# effect on Table IV from its augmentation's (the world's captions name colours, sides and sizes).
TABLE4_CONTROLS = [Row.of("CLIP + ProtoCLIP augmentation", "clip", augmentation=FULL_AUGMENTATION, units=1.0)]


def config(row: Row, scale: str = "laptop", seed: int = 0, train_size: int | None = None) -> dict[str, Any]:
    """The validated run config of ``row`` (``experiment.make_config``; ``ValueError`` before any compute)."""
    scale_defaults(scale)
    sizes = CHAPTER_SCALES[scale]
    n = train_size or sizes["train_size"]
    kwargs = dict(row.method_kwargs)
    if row.method == "protoclip":
        kwargs.update(head_hidden=sizes["head_hidden"], head_dim=sizes["head_dim"],
                      warmup_episodes=sizes["infonce_warmup_episodes"])
    # every method draws the same episodes (III-D: m pairs without replacement per episode), so CLIP and
    # ProtoCLIP of one seed see the same pairs in the same order
    episode = episode_size(sizes, n)
    return experiment.make_config(
        scale, method=row.method, seed=seed, train_size=n, epochs=row.units * sizes["unit_epochs"],
        batch_size=min(sizes["batch_size"], episode), episode_size=episode, augmentation=row.augmentation,
        image_lock_fraction=row.image_lock_fraction, lr=sizes["lr"], warmup_steps=warmup_steps(row, sizes, n),
        task_train=sizes["task_train"], task_test=sizes["task_test"], retrieval_images=sizes["retrieval_images"],
        eval_tasks=eval_tasks(row, sizes), method_kwargs=kwargs)


def eval_tasks(row: Row, sizes: dict[str, Any]) -> list[str] | None:
    """The component rows (E/2) are judged on avg3 and retrieval only; the rows trained for E or more also
    give Table XII's and Fig. 8's clustering of background and count (``None``: the suite's full list)."""
    if sizes["eval_tasks"]:
        return list(sizes["eval_tasks"])
    return None if row.units >= 1 else list(VALIDATION_TASKS)


def episode_size(sizes: dict[str, Any], train_size: int) -> int:
    """The scale's episode, as the same fraction of a smaller world (Fig. 7's subsets), in whole batches."""
    batch = sizes["batch_size"]
    scaled = sizes["episode_size"] * train_size // sizes["train_size"] // batch * batch
    return min(train_size, max(batch, scaled))


def warmup_steps(row: Row, sizes: dict[str, Any], train_size: int) -> int:
    """The learning-rate warm-up: ``warmup_fraction`` of the row's steps (at least one step)."""
    episode = episode_size(sizes, train_size)
    steps = round(row.units * sizes["unit_epochs"] * train_size / episode) * (episode // min(sizes["batch_size"], episode))
    return max(1, int(sizes["warmup_fraction"] * steps))


def resolve_seeds(scale: str, seeds: Any) -> list[int]:
    """A notebook's ``seeds`` parameter: ``None`` is the scale's default; otherwise a non-empty list of ints."""
    scale_defaults(scale)
    if seeds is None:
        return list(CHAPTER_SCALES[scale]["seeds"])
    seeds = as_list("seeds", seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must not repeat, got {seeds!r}")
    return seeds


def data_size_rows(scale: str = "laptop") -> list[tuple[int, Row]]:
    """Fig. 7: CLIP trained for E on growing subsets of the world (the full world is Table IV's CLIP at E)."""
    sizes = CHAPTER_SCALES[scale]
    clip = Row.of("CLIP", "clip", augmentation="none", units=1.0)
    return [(n, clip) for n in (*sizes["data_sizes"], sizes["train_size"])]


def run_rows(rows: list[Row], scale: str, seeds: list[int], progress: bool = True) -> dict[Row, list[dict]]:
    """Every row for every seed (stored runs are loaded, not retrained): ``{row: [record per seed]}``."""
    configs = {row: [config(row, scale, s) for s in seeds] for row in rows}  # validate all before computing
    return {row: [experiment.run(c, progress=progress) for c in cs] for row, cs in configs.items()}


def relative_epochs(records: list[dict], clip_records: list[dict]) -> float:
    """Training time in units of one CLIP epoch (the paper's "Rel." of Table IV): the run's time spent on
    episodes (feature extraction, K-Means, PBT and training steps) over the time of one CLIP epoch."""
    def seconds(r: dict) -> float:
        t = r["timings"]
        return t.get("training", 0.0) + t.get("episode_start", 0.0)  # data loading is inside "training"

    clip_epoch = sum(seconds(r) / r["config"]["epochs"] for r in clip_records) / len(clip_records)
    return sum(seconds(r) for r in records) / len(records) / clip_epoch


# --------------------------------------------------------------------------------------------------------------
# the chapter's headline claims, judged on stored runs (nothing is trained here)

TIMING_RULE = "Timing claims: reproduced when the book's value is within a factor of 2 of the paper's."
MATCH_RULE = ("'Matches in less time': reproduced when it takes less time and its per-seed difference is >= 0 on "
              "average and not significantly negative (mean + 2 se >= 0); not reproduced when it takes more time "
              "or is significantly worse; inconclusive otherwise.")


def find_row(table: list[Row], label: str, units: float | None = None) -> Row:
    """The row of ``table`` with this label (and training amount, where a table has a label twice)."""
    return next(r for r in table if r.label == label and (units is None or r.units == units))


def stored(row: Row, scale: str = "laptop", seeds: tuple[int, ...] | None = None) -> list[dict] | None:
    """The stored records of ``row`` for every seed, or ``None`` if any is missing (or stale)."""
    records = [runs.load(experiment.RUN_KIND, config(row, scale, s)) for s in seeds or resolve_seeds(scale, None)]
    return None if any(r is None for r in records) else records


def episode_shares(records: list[dict]) -> dict[str, float]:
    """Share of episode time per stage (Fig. 9), summed over ``records``."""
    stages = ("feature_extraction", "kmeans", "pbt", "training")
    totals = {s: sum(r["timings"].get(s, 0.0) for r in records) for s in stages}
    whole = sum(totals.values())
    return {s: v / whole for s, v in totals.items()}


def claims(scale: str = "laptop") -> list[dict[str, Any]]:
    """One dict per headline claim: paper, claim, paper_value, book_value, verdict (``report.VERDICT_RULE``,
    ``MATCH_RULE``, ``TIMING_RULE``); verdict "not run" when its runs are not in the results store."""
    out: list[dict[str, Any]] = []

    def add(claim: str, paper_value: str, book_value: str | None, v: str | None) -> None:
        out.append({"paper": "ProtoCLIP", "claim": claim, "paper_value": paper_value,
                    "book_value": book_value if book_value is not None else "",
                    "verdict": v if v is not None else "not run"})

    def compare(claim: str, paper_value: str, better: Row, reference: Row, metric: str, scale_: float = 100) -> None:
        a, b = stored(better, scale), stored(reference, scale)
        if a is None or b is None:
            return add(claim, paper_value, None, None)
        d = record_differences(a, b, metric)
        m, s = mean_std(d)
        value = (f"{100 * m:+.2f} ± {100 * s:.2f} pp" if scale_ == 100 else f"{m:+.3f} ± {s:.3f}")
        add(claim, paper_value, f"{value} ({metric}, {len(d)} seeds)", verdict(d))

    proto_e, clip_e = find_row(TABLE4, "ProtoCLIP", 1.0), find_row(TABLE4, "CLIP", 1.0)
    proto_half = find_row(TABLE4, "ProtoCLIP", 0.5)
    compare("ProtoCLIP beats CLIP on linear probe at equal epochs (Table IV)", "+5.81 pp (ImageNet, 32 epochs)",
            proto_e, clip_e, "avg3/linear")
    compare("ProtoCLIP beats CLIP on zero-shot top-1 at equal epochs (Table IV)", "+2.01 pp (ImageNet, 32 epochs)",
            proto_e, clip_e, "avg3/zeroshot_top1")

    a, b = stored(proto_half, scale), stored(clip_e, scale)
    claim = "ProtoCLIP at half the epochs matches CLIP in less time (Table IV, zero-shot top-1)"
    if a is None or b is None:
        add(claim, "+0.93 pp at 21.5 vs 32.0 relative epochs", None, None)
    else:
        d = record_differences(a, b, "avg3/zeroshot_top1")
        m, s = mean_std(d)
        rel, rel_clip = relative_epochs(a, b), relative_epochs(b, b)
        faster = rel < rel_clip
        se = s / len(d) ** 0.5
        v = ("not reproduced" if not faster or m + 2 * se < 0 else "reproduced" if m >= 0 else "inconclusive")
        add(claim, "+0.93 pp at 21.5 vs 32.0 relative epochs",
            f"{100 * m:+.2f} ± {100 * s:.2f} pp at {rel:.2f} vs {rel_clip:.2f} relative epochs", v)

    t3 = {r.label: r for r in TABLE3}
    base = t3["ProtoCLIP w/o RoBERTa"]
    compare("The external teacher helps (Table III)", "+1.79 pp (ImageNet linear)", t3["ProtoCLIP"], base,
            "avg3/linear")
    compare("PBT helps (Table III)", "+1.83 pp (ImageNet linear)", base, t3["- w/o PBT"], "avg3/linear")
    compare("Soft targets help (Table III)", "+0.54 pp (ImageNet linear)", base, t3["- w/o soft target"],
            "avg3/linear")
    compare("K-Means iterations help (Table III)", "+0.49 pp (ImageNet linear)", base, t3["- w/o K-Means"],
            "avg3/linear")
    t11 = {r.label: r for r in TABLE11}
    compare("ProtoCLIP augmentation beats SimCLR's (Table XI)", "+2.95 pp (ImageNet linear)",
            t11["ProtoCLIP augmentation"], t11["SimCLR augmentation"], "avg3/linear")
    compare("No augmentation gives the best retrieval (Table XI)", "+2.80 pp mean recall over ProtoCLIP aug.",
            t11["No augmentation"], t11["ProtoCLIP augmentation"], "retrieval/mean_recall")
    compare("ProtoCLIP groups classes better: ARI on the STL-10 stand-in (Table XII)", "+0.059 (0.673 -> 0.732)",
            proto_e, clip_e, "clutter10/ari", scale_=1)

    # Fig. 6 (a)-(d), from the ablation's stored runs
    plan = ablation.make_plan(scale if scale in ablation.ABLATION_SCALES else "laptop")
    records = [(r, runs.load(experiment.RUN_KIND, r.config)) for r in plan.runs]
    paper_gain = {c["claim"]: c["paper_gain_pp"] for c in ablation.paper_claims(plan)}
    if all(rec is not None for _, rec in records):
        table = ablation.claims_table(records, plan)
        for _, row in table.iterrows():
            gain = paper_gain.get(row["claim"])
            add(f"{row['claim']} (Fig. 6 {row['sweep'].split('(')[-1]}",
                "shown in the figure, no number in the text" if gain is None else f"+{gain} pp",
                f"{row['book gain (pp)']} pp (avg3/linear, {row['seeds']} seeds)", row["verdict"])
    else:
        for c in ablation.paper_claims(plan):
            add(f"{c['claim']} (Fig. 6)", "", None, None)

    a = stored(proto_e, scale)
    b = stored(clip_e, scale)
    if a is None or b is None:
        add("K-Means takes about 2.3% of episode time (Fig. 9)", "2.3%", None, None)
        add("ProtoCLIP costs +34.8% time per epoch over CLIP (Fig. 9)", "+34.8%", None, None)
    else:
        share = episode_shares(a)["kmeans"]
        add("K-Means takes about 2.3% of episode time (Fig. 9)", "2.3%", f"{100 * share:.1f}%",
            "reproduced" if 0.5 <= share / 0.023 <= 2 else "not reproduced")
        overhead = relative_epochs(a, b) / proto_e.units / CHAPTER_SCALES[scale]["unit_epochs"] - 1
        add("ProtoCLIP costs +34.8% time per epoch over CLIP (Fig. 9)", "+34.8%", f"{100 * overhead:+.1f}%",
            "reproduced" if 0.5 <= overhead / 0.348 <= 2 else "not reproduced")
    return out


# --------------------------------------------------------------------------------------------------------------
# tables of the notebooks


def row_table(results: dict[Row, list[dict]], rows: list[Row], metrics: dict[str, str],
              reference: Row | None = None, delta_metric: str | None = None) -> pd.DataFrame:
    """One line per row: "mean ± std" (percent) of each metric over seeds, and, with a ``reference``, the
    per-seed (paired) difference of ``delta_metric`` from it in pp with its ``report.verdict``."""
    lines = []
    for row in rows:
        records = results[row]
        line: dict[str, Any] = {"row": row.label}
        for key, name in metrics.items():
            line[name] = fmt(*mean_std(seed_values(records, key)))
        if reference is not None and delta_metric is not None:
            if row == reference:
                line["Δ (pp, per seed)"], line["vs reference"] = "reference", ""
            else:
                d = record_differences(records, results[reference], delta_metric)
                m, s = mean_std(d)
                line["Δ (pp, per seed)"] = f"{100 * m:+.2f} ± {100 * s:.2f}"
                line["vs reference"] = direction(d)
        line["seeds"] = len(records)
        lines.append(line)
    return pd.DataFrame(lines).set_index("row")
