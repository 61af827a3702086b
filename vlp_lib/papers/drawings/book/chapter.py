"""The runs behind the real-drawings chapter and its claims, as data: on human-made image-text pairs, does
each paper's headline idea still beat CLIP, and which of the head to head's verdicts on the generated world carry
over?

**The data** (``vlp_lib.data.openclipart``, built once by ``make openclipart``): Open Clip Art's drawings rendered at
64 px, each with its author's title and description as the caption (``pairs.csv``; the title alone is its
``summary`` column, PyramidCLIP's summary level), the held-out drawings' categories and sub-categories as image-folder
tasks, and their unique pairs as a retrieval set (``pairs:``). Named inside the data folder (``data:``), so that a
run's key is the same on every machine. A reader's own pairs replace them by parameters (``train_data``,
``eval_tasks``, ``class_data``): on them the class data defaults to the first image-folder task of ``eval_tasks``
(``default_class_data``), and nothing reads the drawings unless a parameter names them.

**The line-up** (``vlp_lib.book.lineup``, the head to head's): every variant on ``rn-tiny`` at 32 px (TP_Postag and
ICMLM too), one batch, learning rate and schedule, at equal training samples; iCLIP and UniCL take the training
split's categories as class data (iCLIP with WordNet definitions of the category names). Left out: PyramidCLIP's ROI
terms (no boxes), DIME-FM (a comparison of teachers: ``LEFT_OUT``) and, for the budget, ICMLM (TP_Postag stands for
its paper, as in the head to head; ``variants=["icmlm"]`` runs it).

**The learning check comes first**: CLIP against the same network untrained (``experiment.untrained``: the weights
its run starts from), on every metric the claims read; a random network's features already sort drawings by their
ink, so chance is not the bar. **The claims**: CLIP learned (beats its own initialisation), and each idea beats CLIP
(category linear probe, the metric of the head to head's claims), paired by seed, ``report.VERDICT_RULE``; each
again with its runs trained ``LONGER`` times as long on the first ``longer_seeds`` seeds (``verdict_longer``).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from vlp_lib import experiment, runs
from vlp_lib.book import lengths, lineup, report
from vlp_lib.book.claims import Claim, declare, judge_stored, reference_learning, with_longer_claims
from vlp_lib.book.claims import claims_table as _claims_table
from vlp_lib.book.lineup import CLIP, VARIANTS, Data, run_of
from vlp_lib.book.plan import seeds_parameter
from vlp_lib.book.report import (
    fmt,
    mean_std,
    paired_interval,
    record_differences,
    scorecard_lines,
    seed_values,
)
from vlp_lib.config import as_list, scale_defaults
from vlp_lib.data import folder_tasks, pair_sets, real
from vlp_lib.methods import paper_of
from vlp_lib.models import DEFAULT_PRECISION
from vlp_lib.papers import chapters as registered_chapters
from vlp_lib.paths import resolve_data
from vlp_lib.run_config import RunConfig

PAPER = "Real drawings"
NOTEBOOK = "drawings"
BUILD_COMMAND = "make openclipart"
SIZE = 64  # the renders every variant decodes from (the line-up's tower takes them at 32 px)
ROOT = f"data:openclipart/{SIZE}px"
TRAIN_DATA = f"{ROOT}/pairs.csv"
CATEGORY = f"folder:{ROOT}/category"
SUBCATEGORY = f"folder:{ROOT}/subcategory"
HELD_OUT = f"pairs:{ROOT}/test_pairs.csv"
CLASS_DATA = CATEGORY  # iCLIP / UniCL: the training split of the category task (its held-out split is the test)
EVAL_TASKS = (CATEGORY, SUBCATEGORY, HELD_OUT)
DRAWINGS = Data(TRAIN_DATA, EVAL_TASKS, CLASS_DATA)
UNTRAINED = "clip_untrained"  # the learning check's row: CLIP's network as initialised, seed by seed

# Sizes (chosen on a pilot before any verdict: the page's "How the sizes were chosen"). ``train_size`` and
# ``episode_size`` give the episode's share of the pairs (0.2, ProtoCLIP's); on the drawings ``lineup.sizes_on``
# counts the pairs and makes an episode of the same share in whole batches.
CHAPTER_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        model="rn-tiny",
        image_size=32,
        train_size=640,
        episode_size=128,
        unit_epochs=1,
        batch_size=32,
        lr=1e-3,
        task_train=100,
        task_test=50,
        retrieval_images=30,
        class_images=256,
        detector_images=None,
        lm={},
        head_hidden=64,
        head_dim=32,
        seeds=(0,),  # smoke runs every line once: its numbers are not evidence
        longer_seeds=1,
    ),
    "laptop": dict(
        model="rn-tiny",
        image_size=32,
        train_size=5_120,
        episode_size=1_024,
        unit_epochs=4,  # the pilot: 8 epochs took ~9 minutes a seed (45 for five), over the chapter's 30
        batch_size=128,
        lr=2e-3,
        task_train=5_000,  # every drawing of a task's split (the category task: about 3,400 and 1,500)
        task_test=5_000,
        retrieval_images=1_000,
        class_images=10_240,
        detector_images=None,
        lm={},
        head_hidden=512,
        head_dim=64,
        seeds=(0, 1, 2, 3, 4),
        # the runs at LONGER times the samples: the first three seeds (planned before any of them ran, as the head to
        # head's): five would cost about 35 minutes more than three
        longer_seeds=3,
    ),
    "paper": dict(
        model="RN50",
        image_size=224,
        train_size=5_120,
        episode_size=1_024,
        unit_epochs=8,
        batch_size=256,
        lr=5e-4,
        task_train=50_000,
        task_test=50_000,
        retrieval_images=5_000,
        class_images=10_240,
        detector_images=None,
        lm={},
        head_hidden=2_048,
        head_dim=128,
        seeds=(0, 1, 2, 3, 4),
        longer_seeds=3,
    ),
}
DEFAULT_VARIANTS: list[str] = [
    "clip",
    "protoclip",
    "protoclip_no_teacher",
    "pyramidclip_no_roi",
    "iclip",
    "unicl",
    "tp_postag",
]
LEFT_OUT = {
    "pyramidclip": "its ROI terms need each drawing's object boxes from a detector: the drawings have none (its "
    "global and local levels run as 'PyramidCLIP w/o ROI terms')",
    "icmlm": "ICMLM_tfm starts from a TP_Postag run and costs about 2.2 times CLIP per sample: it would not fit the "
    'chapter\'s 30 minutes beside the others; TP_Postag stands for its paper, as in the head to head (variants=["icmlm"] '
    "runs it).",
    "dimefm": lineup.DIMEFM_LEFT_OUT + " No pretrained CLIP exists here to be its teacher.",
}


def resolve_seeds(scale: str, seeds: Any) -> list[int]:
    """A notebook's ``seeds`` parameter: ``None`` is the scale's default (``plan.seeds_parameter``)."""
    scale_defaults(scale)
    return seeds_parameter(scale, seeds, CHAPTER_SCALES[scale]["seeds"])


def longer_seeds(scale: str, seeds: Sequence[int]) -> list[int]:
    """The seeds of the runs at ``LONGER`` times the samples: the first ``longer_seeds`` of ``seeds``."""
    return list(seeds)[: CHAPTER_SCALES[scale]["longer_seeds"]]


# Two training lengths (the trend a reader needs before extrapolating): every claim (CLIP learns, and each idea
# against CLIP at equal samples) judged again with its two rows trained LONGER times as long, on the first
# ``longer_seeds`` seeds, the same recipe. A row at the longer length is the variant's name with LONGER_SUFFIX
# (``longer``): rows stay names, so that the page's results and the pinned configs are keyed alike.
LONGER = 4
LONGER_SUFFIX = f"@{LONGER}x"


def longer(row: str) -> str:
    """``row`` trained ``LONGER`` times as long (a claim's rows at the longer length, ``claims.with_longer``)."""
    if is_longer(row):
        raise ValueError(f"{row!r} is already at the longer length")
    return row + LONGER_SUFFIX


def is_longer(row: str) -> bool:
    """Whether ``row`` is a row at ``LONGER`` times the samples."""
    return str(row).endswith(LONGER_SUFFIX)


def base_row(row: str) -> str:
    """The variant (or ``UNTRAINED``) that ``row`` trains, at either length."""
    return str(row).removesuffix(LONGER_SUFFIX)


def row_seeds(row: str, scale: str, seeds: Sequence[int]) -> list[int]:
    """The seeds ``row`` runs on: ``seeds``, or their first ``longer_seeds`` for a row at the longer length."""
    return longer_seeds(scale, seeds) if is_longer(row) else list(seeds)


def check_variants(variants: Any) -> list[str]:
    """The notebook's ``variants`` parameter (``lineup.check_variants``): ``None`` = ``DEFAULT_VARIANTS``."""
    return lineup.check_variants(variants, DEFAULT_VARIANTS)


def check_built(data: Data) -> None:
    """``ValueError`` naming the command that builds the drawings when ``data`` reads them and they are not built
    here (before any compute). The error names the parameter that reads them (``train_data``, ``eval_tasks`` or
    ``class_data``, in that order), and where that parameter is not the pairs, how to name data of your own."""
    reads = [
        ("train_data", [data.train_data]),
        ("eval_tasks", list(data.eval_tasks or ())),
        ("class_data", [data.class_data]),
    ]
    named = next((name for name, paths in reads if any(ROOT in p for p in paths)), None)
    if named is None:
        return
    folder = Path(resolve_data(ROOT))
    if (folder / "pairs.csv").is_file():
        return
    build = (
        f"run `{BUILD_COMMAND}` (python -m vlp_lib.data.openclipart --size {SIZE}: Debian's openclipart-svg, rendered "
        "once, about 3 minutes)"
    )
    if named == "train_data":
        raise ValueError(f"train_data: the drawings are not built at {folder}: {build}")
    if named == "eval_tasks":
        raise ValueError(
            f"eval_tasks: the drawings' tasks are not built at {folder} (eval_tasks None is the drawings' category, "
            "subcategory and test pairs): on your own pairs name your own tasks, -y 'eval_tasks: [\"folder:PATH\"]' "
            f"(PATH/train/<class>/*, PATH/test/<class>/*), or {build}"
        )
    raise ValueError(
        f"class_data: {data.class_data!r} is the drawings' category folder, not built at {folder}: pass "
        f"-p class_data folder:PATH (PATH/<class>/* or PATH/train/<class>/*), or {build}"
    )


def default_class_data(train_data: str, tasks: Sequence[str], verbose: bool = True) -> str:
    """iCLIP's and UniCL's class-labelled images when the ``class_data`` parameter is not given: on the drawings
    (``TRAIN_DATA``) their category folder (``CLASS_DATA``); on pairs of your own the first image-folder task of
    ``tasks`` (its train split: ``classes.parse_class_data``; its test split stays the test), said in a printed
    note when ``verbose``. ``ValueError`` naming ``class_data`` when ``tasks`` has no image-folder task, before any
    compute: the drawings' folder is never read for pairs that are not the drawings."""
    if train_data == TRAIN_DATA:
        return CLASS_DATA
    folder = next((t for t in tasks if folder_tasks.is_folder_task(t)), None)
    if folder is None:
        raise ValueError(
            "class_data: on your own train_data, iCLIP and UniCL need class-labelled images and eval_tasks names no "
            "image-folder task to take them from: pass -p class_data folder:PATH (PATH/<class>/* or "
            "PATH/train/<class>/*), or name an image-folder task in eval_tasks, -y 'eval_tasks: [\"folder:PATH\"]' "
            "(its train split is then the class data; the claims read its linear probe)"
        )
    if verbose:
        print(
            f"note: class_data not given: iCLIP and UniCL take the train split of {folder!r}, the first image-folder "
            "task of eval_tasks, as their class-labelled images (the drawings' category folder is the default only on "
            "the drawings; -p class_data folder:PATH names another)"
        )
    return folder


def check_data(train_data: Any = TRAIN_DATA, eval_tasks: Any = None, class_data: Any = None) -> Data:
    """The notebook's data parameters as a ``Data`` (``eval_tasks`` ``None``: the drawings' three tasks; at least one
    folder task, the claims' metric; ``class_data`` ``None``: ``default_class_data``, the drawings' category folder on
    the drawings, else the first folder task of ``eval_tasks``). ``ValueError`` naming the parameter before any
    compute; data of your own never needs the drawings built unless a parameter names them."""
    # each parameter's own form first, so that a wrong one is named even where the drawings are not built here
    if not isinstance(train_data, str) or not train_data:
        raise ValueError(f"train_data must be a path (an OpenCLIP CSV or WebDataset shards), got {train_data!r}")
    tasks = EVAL_TASKS if eval_tasks is None else tuple(as_list("eval_tasks", eval_tasks))
    if not all(isinstance(t, str) for t in tasks):
        raise ValueError(f"eval_tasks must be a list of task names, got {eval_tasks!r}")
    if class_data is not None and not isinstance(class_data, str):
        raise ValueError(
            f"class_data must be 'folder:PATH' (class-labelled images) or None (the default), got {class_data!r}"
        )
    if train_data == "world":
        raise ValueError("train_data: this chapter is about real pairs; the head to head is the world's")
    check_built(Data(train_data, tasks, ""))  # the pairs and the tasks: named before the class data is chosen
    if class_data is None:
        class_data = default_class_data(train_data, tasks)
    check_built(Data(train_data, tasks, class_data))
    data = lineup.check_data(train_data, tasks, class_data)
    if not any(folder_tasks.is_folder_task(t) for t in data.eval_tasks or ()):
        raise ValueError(f"eval_tasks must name at least one image-folder task ('folder:PATH'), got {eval_tasks!r}")
    return data


def sizes_on(scale: str, data: Data = DRAWINGS) -> dict[str, Any]:
    """The chapter's sizes at ``scale`` on ``data`` (``lineup.sizes_on``)."""
    scale_defaults(scale)
    return lineup.sizes_on(CHAPTER_SCALES[scale], data)


def unit_episodes(scale: str, data: Data = DRAWINGS) -> int:
    """The equal-samples amount in episodes: ``unit_epochs`` of the pairs."""
    return lineup.unit_episodes(sizes_on(scale, data))


def config(
    variant: str,
    scale: str = "laptop",
    seed: int = 0,
    data: Data = DRAWINGS,
    sizes: Mapping[str, Any] | None = None,
) -> RunConfig:
    """The validated config of ``variant``'s run at equal samples on ``data`` (``lineup.config``), ``LONGER`` times
    them for a row at the longer length (``longer``); ``UNTRAINED`` is CLIP's (its network before any step).
    ``sizes``: ``sizes_on(scale, data)`` when the caller has it (it counts the pairs, reading the whole source)."""
    name = base_row(variant)
    name = CLIP if name == UNTRAINED else name
    factor = LONGER if is_longer(variant) else 1
    sizes = sizes if sizes is not None else sizes_on(scale, data)
    return lineup.config(run_of(name, factor * lineup.unit_episodes(sizes)), scale, seed, data, sizes, EVAL_TASKS)


def skipped(variants: Sequence[str], data: Data = DRAWINGS) -> dict[str, str]:
    """``{variant: why it cannot run}`` on ``data`` (``lineup.skipped``: the ROI terms; class data)."""
    return lineup.skipped(variants, data)


# --------------------------------------------------------------------------------------------------------------
# metrics: named by the data's tasks (the drawings': category, subcategory, test_pairs)


def metrics_on(data: Data = DRAWINGS) -> dict[str, str]:
    """``{metric key: label}`` the chapter reports on ``data``: on the first folder task (the claims' task) every
    probe and zero-shot accuracy with its class-balanced mean, on a second its linear probe and zero-shot top-1, on
    a pair set its retrieval recalls."""
    tasks = list(data.eval_tasks or ())
    folders = [folder_tasks.metric_name(t) for t in tasks if folder_tasks.is_folder_task(t)]
    sets = [pair_sets.metric_name(t) for t in tasks if pair_sets.is_pair_set(t)]
    out: dict[str, str] = {}
    head = folders[0]
    for key, label in (
        ("linear", "linear probe"),
        ("linear_macro", "linear probe, class-balanced"),
        ("knn", "k-NN"),
        ("knn_macro", "k-NN, class-balanced"),
        ("zeroshot_top1", "zero-shot top-1"),
        ("zeroshot_top1_macro", "zero-shot top-1, class-balanced"),
    ):
        out[f"{head}/{key}"] = f"{head}: {label}"
    for second in folders[1:2]:
        out[f"{second}/linear"] = f"{second}: linear probe"
        out[f"{second}/zeroshot_top1"] = f"{second}: zero-shot top-1"
    for name in sets[:1]:
        out[f"{name}/i2t_R@1"] = f"{name}: image-to-text R@1"
        out[f"{name}/t2i_R@1"] = f"{name}: text-to-image R@1"
        out[f"{name}/mean_recall"] = f"{name}: retrieval mean recall (R@1/5/10 both ways)"
    return out


def claim_metric(data: Data = DRAWINGS) -> str:
    """The claims' metric: the linear probe of the first folder task (the head to head's claims read the linear probe
    of its tasks too)."""
    return next(iter(metrics_on(data)))


def text_metric(key: str) -> bool:
    """Whether metric ``key`` needs a text tower (zero-shot, retrieval): TP_Postag and ICMLM have none."""
    return "zeroshot" in key or "R@" in key or "recall" in key


# --------------------------------------------------------------------------------------------------------------
# runs


def run_chapter(
    scale: str, seeds: Sequence[int], variants: Sequence[str], data: Data = DRAWINGS, progress: bool = True
) -> dict[str, list[dict]]:
    """Every variant at equal samples on every seed, then every variant at ``LONGER`` times the samples on the first
    ``longer_seeds``, and CLIP's network untrained at both (``UNTRAINED``, ``longer(UNTRAINED)``): ``{row: [record
    per seed]}``. Every config is built (so validated) before anything trains; stored runs are loaded; the
    ``skipped`` variants are left out."""
    left_out = skipped(variants, data)
    short = [v for v in variants if v not in left_out]
    sizes = sizes_on(scale, data)
    configs = {
        row: [config(row, scale, s, data, sizes) for s in row_seeds(row, scale, seeds)]
        for row in [*short, *(longer(v) for v in short)]
    }
    results: dict[str, list[dict]] = {}
    for row, cs in configs.items():
        found = lineup.records(cs, compute=True, progress=progress)
        assert found is not None
        results[row] = found
    for clip in (CLIP, longer(CLIP)):
        untrained = UNTRAINED if clip == CLIP else longer(UNTRAINED)
        results[untrained] = [experiment.untrained(c, verbose=False) for c in configs[clip]]
    return results


def stored(row: str, scale: str = "laptop", seeds: Sequence[int] | None = None, data: Data = DRAWINGS) -> Any:
    """The stored records of ``row`` for every seed (a row at the longer length: the first ``longer_seeds``), or
    ``None`` if any is missing (or stale). On the drawings when
    they are not built here (a reader who restored the release), the runs are found by their configs pinned in
    ``PINNED`` (``pinned_stored``): judging reads records, never pixels."""
    seeds = row_seeds(row, scale, seeds or resolve_seeds(scale, None))
    if data == DRAWINGS and not built(data):
        return pinned_stored(row, scale, seeds)
    sizes = sizes_on(scale, data)
    configs = [config(row, scale, s, data, sizes) for s in seeds]
    if base_row(row) == UNTRAINED:
        found = [experiment.stored_untrained(c) for c in configs]
        return None if any(r is None for r in found) else found
    return lineup.records(configs, compute=False, progress=False)


def built(data: Data = DRAWINGS) -> bool:
    """Whether the drawings ``data`` reads are built here (``check_built`` passes)."""
    try:
        check_built(data)
    except ValueError:
        return False
    return True


# The configs of the release's drawings runs, pinned when the chapter was made (``pin``): the key of each run's record
# in the results store. With them a reader who restored the release (``make restore``) judges the chapter's claims
# from its records without rendering the drawings, and gets the shipped scorecard.
PINNED = Path(__file__).with_name("pinned_configs.json")


def pinned_configs(scale: str = "laptop") -> dict[str, dict[str, dict[str, Any]]]:
    """``{row: {seed: config dict}}`` pinned at ``scale`` (empty where none were pinned)."""
    if not PINNED.exists():
        return {}
    return json.loads(PINNED.read_text()).get(scale, {})


def pin(scale: str = "laptop", seeds: Sequence[int] | None = None) -> Path:
    """Pin the configs of every row's runs at ``scale`` on the drawings (built here), at both lengths, into
    ``PINNED``."""
    check_built(DRAWINGS)
    seeds = list(seeds or resolve_seeds(scale, None))
    sizes = sizes_on(scale, DRAWINGS)
    rows: dict[str, dict[str, Any]] = {}
    for row in [*DEFAULT_VARIANTS, UNTRAINED]:
        for r in (row, longer(row)):
            rows[r] = {str(s): config(r, scale, s, DRAWINGS, sizes).to_dict() for s in row_seeds(r, scale, seeds)}
    pinned = json.loads(PINNED.read_text()) if PINNED.exists() else {}
    pinned[scale] = rows
    PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
    return PINNED


def pinned_stored(row: str, scale: str, seeds: Sequence[int]) -> list[dict] | None:
    """``stored`` by the pinned configs: the records of ``row`` for every seed of ``seeds`` (the row's own, as
    ``stored`` gives them: ``row_seeds``), ``None`` if any is missing, stale or not pinned."""
    configs = pinned_configs(scale).get(row, {})
    if any(str(s) not in configs for s in seeds):
        return None
    out = []
    for s in seeds:
        cfg = configs[str(s)]
        untrained = base_row(row) == UNTRAINED
        kind = experiment.UNTRAINED_KIND if untrained else experiment.RUN_KIND
        record = runs.load(kind, cfg, paper=paper_of(cfg["method"]))
        if record is None:
            return None
        out.append(record if untrained else lineup.variant_record(record))
    return out


# --------------------------------------------------------------------------------------------------------------
# claims


_PAPER_VALUE = (
    "{paper} claims gains over CLIP on web pairs in its own setting; the head to head tests it on the generated world"
)


def _claims(data: Data = DRAWINGS) -> list[Claim]:
    metric = claim_metric(data)
    task = metric.partition("/")[0]
    out = [
        Claim(
            "D_clip_learns",
            f"CLIP trained on the pairs beats the same network untrained ({task} linear probe): the premise of every "
            "claim below",
            "this book's real drawings (no paper)",
            "direction",
            metric,
            "every paper assumes its CLIP learns from its pairs",
            notebook=NOTEBOOK,
            better=CLIP,
            reference=UNTRAINED,
        )
    ]
    for v in DEFAULT_VARIANTS:
        if v == CLIP:
            continue
        variant = VARIANTS[v]
        out.append(
            Claim(
                f"D_{v}",
                f"{variant.label} beats CLIP at equal training samples on real drawings ({task} linear probe)",
                "this book's real drawings (no paper)",
                "direction",
                metric,
                _PAPER_VALUE.format(paper=variant.paper),
                notebook=NOTEBOOK,
                better=v,
                reference=CLIP,
            )
        )
    return out


# The config fields each claim's idea changes (``vlp_lib.book.audit`` checks that its runs differ in nothing else), and
# the other differences a variant's comparison carries, with the reason.
NO_TEXT_TOWER = ("context_length", "TP_Postag has no text tower: its captions are read for their word tags only")
KNOBS: dict[str, tuple[str, ...]] = {f"D_{v}": ("method",) for v in DEFAULT_VARIANTS if v != CLIP}
CLAIMS: list[Claim] = declare(_claims(), KNOBS, {"D_tp_postag": (NO_TEXT_TOWER,)})
# every claim is a headline one here (CLIP learns, and each idea against CLIP at equal samples): each is judged at the
# book's length and at LONGER times it (``verdict_longer``)
LONGER_IDS: tuple[str, ...] = tuple(c.id for c in CLAIMS)


def compared_claims() -> list[Claim]:
    """``CLAIMS`` and their claims on the longer rows (``claims.with_longer_claims``)."""
    return with_longer_claims(CLAIMS, longer, LONGER_IDS)


def claims_on(data: Data = DRAWINGS, variants: Sequence[str] | None = None) -> list[Claim]:
    """``CLAIMS`` on ``data`` (its first folder task's linear probe), a skipped variant's claim not run with the
    reason."""
    claims = _claims(data) if data != DRAWINGS else CLAIMS
    left_out = skipped(list(VARIANTS), data)
    out = []
    for claim in claims:
        v = claim.better if claim.reference == CLIP else None
        if v in left_out or (variants is not None and v is not None and v not in variants):
            reason = left_out.get(str(v), "not among the variants this page runs")
            claim = replace(claim, kind="not_run", reason=f"{VARIANTS[str(v)].label}: {reason}")
        out.append(claim)
    return out


def claims_table(results: Mapping[str, Sequence[dict]], claims: Sequence[Claim] | None = None) -> pd.DataFrame:
    """The claims (``CLAIMS`` or ``claims``) judged on the page's ``{row: records}``, each also at ``LONGER`` times
    the samples where its longer rows are in ``results`` (``verdict_longer``)."""
    return _claims_table(
        list(claims or CLAIMS),
        results,
        PAPER,
        NOTEBOOK,
        (NOTEBOOK,),
        longer=longer,
        longer_ids=LONGER_IDS,
        factor=LONGER,
    )


def longer_lines(results: Mapping[str, Sequence[dict]], claims: Sequence[Claim] | None = None) -> pd.DataFrame:
    """The claims (``CLAIMS`` or ``claims``: ``claims_on`` the page's data) judged on their rows at ``LONGER`` times
    the samples (the lines whose verdict and value ``verdict_longer`` states), indexed by claim id."""
    run = [c for c in claims or CLAIMS if c.kind != "not_run"]  # a claim not run has no line at either length
    return lengths.longer_lines(run, results, PAPER, longer, LONGER_IDS)


def claims(scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Every claim judged on the results store at ``scale`` (the default drawings; trains nothing). Where the
    drawings are not built here, the runs are found by their pinned configs (``pinned_stored``: a reader who restored
    the release judges them without the pixels); without pinned configs at ``scale`` they are not run, with the
    command that builds the drawings."""
    seeds = list(seeds or resolve_seeds(scale, None))
    if not built(DRAWINGS) and not pinned_configs(scale):
        reason = f"the drawings are not built here and no run configs are pinned at scale {scale!r}: `{BUILD_COMMAND}`"
        return judge_stored([replace(c, kind="not_run", reason=reason) for c in CLAIMS], lambda row: None, PAPER)
    return judge_stored(
        CLAIMS, lambda row: stored(row, scale, seeds), PAPER, longer=longer, longer_ids=LONGER_IDS, factor=LONGER
    )


# --------------------------------------------------------------------------------------------------------------
# tables and figures (presentation: nothing here is stored)


def inputs(data: Data = DRAWINGS) -> dict[str, str]:
    """``{extra input: its source}`` on ``data``, for the top of the page."""
    summary = "the CSV's summary column" if lineup.has_summary_column(data.train_data) else "the captions' noun phrases"
    where = " (the train split of that evaluation task)" if data.class_data in (data.eval_tasks or ()) else ""
    return {
        "class-labelled images (iCLIP, UniCL)": f"`{data.class_data}`{where}",
        "dictionary definitions (iCLIP)": "WordNet 3.0 glosses of the class names (Debian's wordnet-base)",
        "a pretrained text model (ProtoCLIP's external teacher)": "MiniLM (all-MiniLM-L6-v2, the packaged model)",
        "part-of-speech tags (TP_Postag)": "spaCy's en_core_web_sm tagger on the captions",
        "summaries (PyramidCLIP's summary level)": summary + (" (the drawing's title)" if data == DRAWINGS else ""),
    }


def learning_table(results: Mapping[str, Sequence[dict]], data: Data = DRAWINGS) -> pd.DataFrame:
    """CLIP against its own network untrained, per metric: both as mean ± std over seeds and the gain with its 95%
    interval (paired by seed); where ``results`` has the rows at ``LONGER`` times the samples, CLIP there and its
    gain over the same network untrained on those seeds."""
    clip, untrained = results[CLIP], results[UNTRAINED]
    long_clip, long_untrained = results.get(longer(CLIP)), results.get(longer(UNTRAINED))
    rows = []
    for key, label in metrics_on(data).items():
        if key not in clip[0]["metrics"] or key not in untrained[0]["metrics"]:
            continue
        row = {
            "metric": label,
            "untrained (%)": fmt(*mean_std(seed_values(untrained, key))),
            "CLIP (%)": fmt(*mean_std(seed_values(clip, key))),
            "gain": lineup.paired_gain(clip, untrained, key, " pp"),
        }
        if long_clip and long_untrained:
            row[f"CLIP at {LONGER}x (%)"] = fmt(*mean_std(seed_values(long_clip, key)))
            row[f"gain at {LONGER}x"] = lineup.paired_gain(long_clip, long_untrained, key, " pp")
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


def learning_sentence(results: Mapping[str, Sequence[dict]], data: Data = DRAWINGS) -> str:
    """CLIP's gain over its untrained network on the claims' metric at each length run (the book's, and ``LONGER``
    times the samples where ``results`` has those rows), and whether it learned by the scorecard's rule
    (``claims.reference_learning``, ``report.LEARNED_RULE``: the rule that puts a claim at the floor), in a few
    sentences, with what it leaves of the claims."""
    key = claim_metric(data)
    reference_claim = _claims(data)[1]  # an idea against CLIP: its reference is the CLIP of every claim below
    parts, unlearned = [], []
    for clip, untrained, claim, label in (
        (CLIP, UNTRAINED, reference_claim, "at the book's length"),
        (longer(CLIP), longer(UNTRAINED), reference_claim.mapped(longer), f"at {LONGER}x the samples"),
    ):
        if not results.get(clip) or not results.get(untrained):
            continue
        before, after = (100 * float(np.mean(seed_values(results[r], key))) for r in (untrained, clip))
        seeds = ", ".join(str(r["config"]["seed"]) for r in results[clip])
        text, learned = reference_learning(claim, results)
        parts.append(
            f"{label} (seeds {seeds}), from {before:.1f}% untrained to {after:.1f}%: "
            f"{lineup.paired_gain(results[clip], results[untrained], key, ' pp')}; learned by the scorecard's rule "
            f"(one-sided paired t, p < 0.05): {text or 'not checked'}"
        )
        if learned is False:
            unlearned.append(label)
    if not parts:
        return "CLIP's learning check has no runs to read"
    sentence = f"On the {metrics_on(data)[key]}, training took CLIP " + "; ".join(parts) + "."
    if unlearned:
        return sentence + (
            f" So every claim {' and '.join(unlearned)} is at the floor: it compares models whose reference has not "
            "learned what the metric reads."
        )
    return sentence + (
        " CLIP learned from the pairs, though its untrained network already sorts many drawings by their ink: the "
        "claims compare what each idea adds to a real, small gain."
    )


def gains_table(results: Mapping[str, Sequence[dict]], variants: Sequence[str], data: Data = DRAWINGS) -> pd.DataFrame:
    """One row per metric (as ``learning_table``), one column per variant: CLIP's mean ± std (percent) and every other
    variant's gain over CLIP in points with its 95% interval (paired by seed); "—" where the variant has no text tower
    for the metric. Metrics as rows keep the table as wide as the line-up, not the eleven metrics: it fits the page."""
    clip = results[CLIP]
    shown = [v for v in variants if v in results]
    rows = []
    for key, label in metrics_on(data).items():
        row: dict[str, Any] = {"metric": label}
        for v in shown:
            if key not in results[v][0]["metrics"]:
                row[VARIANTS[v].label] = "—"
            elif v == CLIP:
                row[VARIANTS[v].label] = fmt(*mean_std(seed_values(clip, key)))
            else:
                row[VARIANTS[v].label] = lineup.paired_gain(results[v], clip, key)
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


def world_claims(scale: str = "laptop") -> pd.DataFrame:
    """The head to head's claims judged at 5% FDR across the book (the scorecard's lines at ``scale``, indexed by id:
    the words its page states, with its ``verdict_longer``); empty where no head to head is registered."""
    card = scorecard_lines(scale)
    return card[card["paper"].isin([c.paper for c in registered_chapters() if c.name == "headtohead"])].set_index("id")


UNTESTED = {report.FLOOR: "at the floor", report.UNEQUAL_SECONDS: "not judged (unequal seconds)"}  # tests nothing


def carried_over(world: str, drawings: str, sizes: tuple[str, str] = ("", "")) -> str:
    """What carried over from the world's verdict ``world`` to the drawings' ``drawings`` (verdict words; ``sizes``:
    their mean differences as printed): the same word on both, with both sizes (a direction that carries over may
    shrink tenfold), another word, or why the two cannot be compared (a side not run, or untested: ``UNTESTED``)."""
    for side, word in (("the world's", world), ("the drawings'", drawings)):
        if not word or word == report.NOT_RUN:
            return f"not comparable: {side} not run"
        if word in UNTESTED:
            return f"not comparable: {side} {UNTESTED[word]}"
    if world == drawings:
        shown = f" (world {sizes[0]}, drawings {sizes[1]})" if all(sizes) else ""
        return f"same verdict: {world}{shown}"
    return f"differs: {world} on the world, {drawings} on the drawings"


def transfer_table(drawing_claims: pd.DataFrame, scale: str = "laptop") -> pd.DataFrame:
    """Each idea's verdict on the generated world (the head to head's equal-samples claim, from the scorecard through
    ``world_claims``) beside its verdict on the drawings (``drawing_claims``: the page's lines judged across the book,
    ``report.book_fdr``'s), at the book's length (the words at 5% FDR the two pages state) and at ``LONGER`` times the
    samples (each judged alone, ``verdict_longer``: both chapters train their equal-samples claims 4x), with what
    carried over at each length (``carried_over``)."""
    world = world_claims(scale)
    rows = []
    for claim_id, line in drawing_claims.iterrows():
        variant = str(claim_id).removeprefix("D_")
        if variant not in VARIANTS:
            continue
        key = f"H_{variant}_samples"
        on_world = world.loc[key] if key in world.index else pd.Series(dtype=object)
        sides = (on_world, line)
        # per length, each side's (verdict word, mean difference as printed): 1x the words at 5% FDR, 4x judged alone
        words = {
            "1x": [
                (str(side.get("verdict_fdr") or report.NOT_RUN), str(side.get("book_value") or "")) for side in sides
            ],
            f"{LONGER}x": [
                (verdict or report.NOT_RUN, value)
                for verdict, value, _ in (
                    lengths.longer_parts(str(side.get("verdict_longer") or ""), LONGER) for side in sides
                )
            ],
        }
        row = {"idea": VARIANTS[variant].label}
        for length, ((world_word, world_value), (word, value)) in words.items():
            row[f"world, {length}"] = f"{world_word} ({world_value})" if world_value else world_word
            row[f"drawings, {length}"] = f"{word} ({value})" if value else word
        row["what carried over"] = "; ".join(
            f"{length}: {carried_over(w[0], d[0], (w[1], d[1]))}" for length, (w, d) in words.items()
        )
        rows.append(row)
    return pd.DataFrame(rows).set_index("idea") if rows else pd.DataFrame()


def variant_label(claim_id: str) -> str:
    """The comparison claim ``claim_id`` makes, in a few words: "CLIP − untrained", or the variant's label (against
    CLIP)."""
    if claim_id == "D_clip_learns":
        return "CLIP − untrained"
    return VARIANTS[claim_id.removeprefix("D_")].label


def lengths_table(claims: pd.DataFrame) -> pd.DataFrame:
    """Per claim (``claims``: the page's lines at 5% FDR): its value and verdict at the book's length and its
    verdict, value and trend at ``LONGER`` times the samples (``lengths.lengths_table``)."""
    return lengths.lengths_table(claims, LONGER_IDS, LONGER, variant_label)


def trend_summary(claims: pd.DataFrame) -> str:
    """The claims at ``LONGER`` times the samples in one sentence (``lengths.trend_summary``)."""
    return lengths.trend_summary(claims, LONGER_IDS, LONGER, variant_label)


def lengths_figure(claims: pd.DataFrame, long_lines: pd.DataFrame, data: Data = DRAWINGS, path: Any = None) -> Any:
    """Each claim's difference (CLIP over its untrained network, each idea over CLIP) at the book's length and at
    ``LONGER`` times the samples (``lengths.lengths_figure``: the intervals the verdicts read)."""
    return lengths.lengths_figure(
        claims,
        long_lines,
        LONGER_IDS,
        LONGER,
        variant_label,
        f"difference at equal samples, {metrics_on(data)[claim_metric(data)]} (pp; mean per seed, 95% interval)",
        "Each claim at two training lengths",
        path,
    )


def headline_note(lines: pd.DataFrame) -> str:
    """One sentence for the chapter's opening page (``vlp_lib.book.findings.headline``), from its scorecard ``lines``
    (with ``id`` and ``verdict_longer``): the claims at ``LONGER`` times the samples (``trend_summary``), which the
    chapter's counts at 5% FDR leave out (judged alone); "" where none was run longer."""
    table = lines.set_index("id") if "id" in lines.columns else lines
    if "verdict_longer" not in table.columns or not (table["verdict_longer"].astype(str) != "").any():
        return ""
    seeds = ", ".join(map(str, longer_seeds("laptop", resolve_seeds("laptop", None))))
    return (
        f"Trained {LONGER}x as long (seeds {seeds}; each judged alone, outside the false-discovery-rate family): "
        f"{trend_summary(table)}."
    )


def example_pairs(data: Data = DRAWINGS, n: int = 12, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (image path, caption) pairs of ``data``'s CSV drawn with ``seed``: what the models train on."""
    path = Path(resolve_data(data.train_data))
    if path.suffix.lower() not in (".csv", ".tsv"):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        header = f.readline()
        f.seek(0)
        rows = list(csv.DictReader(f, delimiter="\t" if "\t" in header else ","))
    picks = np.random.default_rng(seed).choice(len(rows), min(n, len(rows)), replace=False)
    return [(str(path.parent / rows[i][real.CSV_IMAGE_KEY]), rows[i][real.CSV_CAPTION_KEY]) for i in sorted(picks)]


def examples_figure(pairs: Sequence[tuple[str, str]], columns: int = 6, path: Any = None) -> Any:
    """A grid of drawings with their captions (wrapped, cut at 90 characters)."""
    import textwrap

    import matplotlib.pyplot as plt
    from PIL import Image

    rows = max(1, -(-len(pairs) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(2.4 * columns, 2.9 * rows))
    for ax in np.atleast_1d(axes).ravel():
        ax.axis("off")
    for ax, (image, caption) in zip(np.atleast_1d(axes).ravel(), pairs):
        ax.imshow(Image.open(image).convert("RGB"))
        text = caption if len(caption) <= 90 else caption[:87] + "..."
        ax.set_title("\n".join(textwrap.wrap(text, 26)[:4]), fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def gains_figure(
    results: Mapping[str, Sequence[dict]], variants: Sequence[str], data: Data = DRAWINGS, path: Any = None
) -> Any:
    """Each variant's gain over CLIP (points, mean with its 95% interval, paired by seed) on the claims' metric and
    the retrieval mean recall, one panel each; CLIP's gain over its untrained network on top."""
    import matplotlib.pyplot as plt

    metrics = metrics_on(data)
    keys = [claim_metric(data)] + [k for k in metrics if k.endswith("/mean_recall")]
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 0.45 * len(variants) + 1.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        labels, means, errors = [], [], []
        pairs = [("CLIP − untrained", results[CLIP], results[UNTRAINED])]
        pairs += [(VARIANTS[v].label, results[v], results[CLIP]) for v in variants if v != CLIP and v in results]
        for label, rows, reference in pairs:
            if key not in rows[0]["metrics"]:
                continue
            d = record_differences(rows, reference, key)
            mean = float(np.mean(d))
            lo, hi = paired_interval(d) if len(d) > 1 else (mean, mean)
            labels.append(label)
            means.append(100 * mean)
            errors.append((100 * (mean - lo), 100 * (hi - mean)))
        y = np.arange(len(labels))[::-1]
        ax.errorbar(means, y, xerr=np.array(errors).T if errors else None, fmt="o", capsize=3)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(y, labels)
        ax.set_xlabel(f"gain (pp, mean and 95% interval, each comparison's own spread):\n{metrics[key]}")
        ax.set_ylabel("variant minus its reference")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def feature_models(
    results: Mapping[str, Sequence[dict]], scale: str, data: Data = DRAWINGS
) -> dict[str, torch.nn.Module]:
    """The first seed's models to map: CLIP untrained (built again: the weights its run starts from), CLIP and
    ProtoCLIP (when run), trained (``experiment.load_trained``)."""
    seed = int(results[CLIP][0]["config"]["seed"])
    _, _, untrained = experiment.build(config(CLIP, scale, seed, data))
    models = {"CLIP untrained": untrained.eval(), "CLIP": experiment.load_trained(results[CLIP][0])[0]}
    if "protoclip" in results:
        models["ProtoCLIP"] = experiment.load_trained(results["protoclip"][0])[0]
    return models


def feature_map_figure(
    models: Mapping[str, torch.nn.Module], data: Data = DRAWINGS, n: int = 1_000, seed: int = 0, path: Any = None
) -> Any:
    """A 2-D view (t-SNE) of the image features of the first folder task's held-out drawings (``n`` at most), one
    panel per model of ``models`` (``{label: model}``), coloured by class: how far each sorts the drawings by
    category."""
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    from vlp_lib.data import tasks as task_lib
    from vlp_lib.eval import encode_images

    task_name = next(t for t in data.eval_tasks or () if folder_tasks.is_folder_task(t))
    test = task_lib.load_task(task_name, "test", n=n, scale="laptop")
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 5), squeeze=False)
    for ax, (label, model) in zip(axes[0], models.items()):
        features = encode_images(model, test.images).numpy()
        perplexity = min(30.0, (len(features) - 1) / 3)
        xy = TSNE(2, init="pca", random_state=seed, perplexity=perplexity).fit_transform(features)
        colours = plt.get_cmap("tab20")  # one colour per category: the drawings have up to 22 classes, tab10 has 10
        for c, name in enumerate(test.classnames):
            mask = np.asarray(test.labels) == c
            ax.scatter(xy[mask, 0], xy[mask, 1], s=5, label=name, color=colours(c % 20))
        ax.set_title(label)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("t-SNE dimension 1 (no units)")
        ax.set_ylabel("t-SNE dimension 2 (no units)")
    axes[0][-1].legend(fontsize=9, markerscale=3, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


# --------------------------------------------------------------------------------------------------------------
# at the papers' sizes: runs on a lent GPU (benchmarks/drawings_paper.py), shipped as their summary

PAPER_SCALE_RUNS = Path(__file__).with_name("paper_scale.json")  # the summary benchmarks/drawings_paper.py wrote
PAPER_SCALE_METRICS = ("linear", "linear_macro", "knn", "zeroshot_top1", "mean_recall")  # the table's, to fit a page


def paper_scale_runs(path: Path = PAPER_SCALE_RUNS) -> dict[str, Any] | None:
    """The summary of the chapter's runs at ``scale="paper"`` on a GPU (``benchmarks/drawings_paper.py``), or
    ``None`` where none is shipped."""
    return json.loads(path.read_text()) if path.is_file() else None


def paper_scale_current(summary: Mapping[str, Any]) -> bool:
    """Whether every run of ``summary`` was made by the code its scope has today (``runs.current``: each run keeps
    its record's scope and fingerprint)."""
    return all(runs.current(r) for r in summary["runs"])


def paper_scale_table(summary: Mapping[str, Any], data: Data = DRAWINGS) -> pd.DataFrame:
    """One row per run of ``summary`` (seed by seed): CLIP untrained and CLIP in percent, every other variant as its
    difference from CLIP on the same seed in points, on ``PAPER_SCALE_METRICS`` of ``metrics_on``; "—" where a
    variant has no text tower for the metric."""
    metrics = {k: v for k, v in metrics_on(data).items() if k.rsplit("/", 1)[-1] in PAPER_SCALE_METRICS}
    clip = {r["seed"]: r["metrics"] for r in summary["runs"] if r["variant"] == CLIP}
    rows = []
    for run in summary["runs"]:
        v, values = run["variant"], run["metrics"]
        label = "CLIP untrained" if v == UNTRAINED else VARIANTS[v].label
        row: dict[str, Any] = {"run": label, "seed": run["seed"]}
        for key, name in metrics.items():
            if key not in values:
                row[name] = "—"
            elif v in (CLIP, UNTRAINED) or run["seed"] not in clip:
                row[name] = f"{100 * values[key]:.1f}"
            else:
                row[name] = f"{100 * (values[key] - clip[run['seed']][key]):+.1f} pp"
        row["training (s)"] = "—" if run["training_seconds"] is None else f"{run['training_seconds']:.0f}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("run")


def paper_scale_sentence(summary: Mapping[str, Any], data: Data = DRAWINGS) -> str:
    """Where and how the paper-scale runs were made, CLIP's gain over its untrained network on the claims' metric,
    what did not run and why, and whether today's code still makes them."""
    key = claim_metric(data)
    by_row = {(r["variant"], r["seed"]): r["metrics"] for r in summary["runs"]}
    seeds = sorted({r["seed"] for r in summary["runs"]})
    sizes = summary["sizes"]
    precision = DEFAULT_PRECISION[sizes["model"]]  # the chapter's configs take the model's precision
    text = (
        f"{sizes['model']} at {sizes['image_size']} px, batch {sizes['batch_size']}, {sizes['unit_epochs']} epochs of "
        f"the {sizes['train_size']:,} pairs, {precision}, on an {summary['device']} ({summary['date']}, PyTorch "
        f"{summary['torch']}, commit `{str(summary['commit'])[:10]}`), {summary['minutes']:g} minutes in all; "
        f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}: {summary.get('note', '')}."
    )
    gains = [
        by_row[(CLIP, s)][key] - by_row[(UNTRAINED, s)][key]
        for s in seeds
        if (CLIP, s) in by_row and (UNTRAINED, s) in by_row
    ]
    if gains:
        text += (
            f" On the {metrics_on(data)[key]}, CLIP gained {100 * float(np.mean(gains)):+.1f} points over its "
            "untrained network."
        )
    text += (
        " One seed gives no interval, so these rows judge no claim."
        if len(seeds) == 1
        else " These rows judge no claim (the verdicts are the laptop size's above)."
    )
    for line in summary.get("not_run", []):
        text += f" Not run: {VARIANTS[line['variant']].label}, {line['reason']}."
    if not paper_scale_current(summary):
        text += " The code these runs depend on has changed since: they are the old code's numbers."
    return text


def claim_configs(claim: Claim, scale: str = "laptop", seed: int = 0) -> dict[Any, RunConfig | dict[str, Any]]:
    """The run config of each row ``claim`` reads, for ``seed`` at ``scale`` on the drawings (``vlp_lib.book.audit``):
    built from the drawings where they are built here, else the pinned config (its record form: a config on data
    that is not here cannot be checked again)."""
    rows = [str(row) for row in claim.rows()]  # the chapter's rows are variant names
    if built(DRAWINGS):
        sizes = sizes_on(scale, DRAWINGS)
        return {row: config(row, scale, seed, DRAWINGS, sizes) for row in rows}
    pinned = pinned_configs(scale)
    return {row: pinned[row][str(seed)] for row in rows if str(seed) in pinned.get(row, {})}
