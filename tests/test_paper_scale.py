"""Issue 28, "the papers' sizes without a GPU" (the quick half): every run the paper-scale plan of each chapter would
train builds a valid config, and its record form reads back to the same config and key.

A GPU user's first run is ``scale="paper"``: RN50 / ViT-B-32 at 224 px and the papers' batch, episode and prototype
counts. Nothing is trained here (a few seconds in all); ``tests/test_paper_scale_steps.py`` (marker ``paper_scale``)
trains one step of every method at those models on this CPU. A plan is what the chapter's notebooks build with their
default parameters (``PLANS``): every row for every seed of the scale, the ablation's default plan, and the runs a run
trains first (a DIME-FM teacher, an ICMLM run's TP_Postag start, ProtoCLIP's CLIP teacher).
"""

import json
from collections.abc import Callable
from functools import cache

import pytest

from vlp_lib import experiment, runs
from vlp_lib.models import PAPER_PRESETS
from vlp_lib.papers import chapters
from vlp_lib.papers.dimefm.book import chapter as dimefm
from vlp_lib.papers.drawings.book import chapter as drawings
from vlp_lib.papers.headtohead.book import chapter as headtohead
from vlp_lib.papers.iclip.book import chapter as iclip
from vlp_lib.papers.icmlm.book import chapter as icmlm
from vlp_lib.papers.protoclip.book import ablation
from vlp_lib.papers.protoclip.book import chapter as protoclip
from vlp_lib.papers.protoclip.teachers import clip_teacher_config
from vlp_lib.papers.pyramidclip.book import chapter as pyramidclip
from vlp_lib.paths import REPO_ROOT
from vlp_lib.run_config import RunConfig

SCALE = "paper"


def baseline_plan() -> list[RunConfig]:
    """``clip_baseline.ipynb``: the core CLIP at the scale's sizes, for the notebook's seeds."""
    return [experiment.make_config(SCALE, "clip", seed) for seed in (0, 1, 2)]


def protoclip_plan() -> list[RunConfig]:
    """The five ProtoCLIP notebooks: Tables III, X, XI, IV and its control, Fig. 7's subsets, and the ablation's
    default plan (Fig. 6) with the CLIP runs behind its "clip" external teacher."""
    seeds = protoclip.resolve_seeds(SCALE, None)
    rows = [*protoclip.TABLE3, *protoclip.TABLE10, *protoclip.TABLE11, *protoclip.TABLE4, *protoclip.TABLE4_CONTROLS]
    configs = [protoclip.config(row, SCALE, seed) for row in dict.fromkeys(rows) for seed in seeds]
    configs += [
        protoclip.config(row, SCALE, s, train_size=n) for n, row in protoclip.data_size_rows(SCALE) for s in seeds
    ]
    sweeps = ablation.make_plan(SCALE).unique_configs()
    teachers = [clip_teacher_config(c) for c in sweeps if c.method_args.external_teacher == "clip"]
    return configs + sweeps + teachers


def pyramidclip_plan() -> list[RunConfig]:
    """``pyramidclip_benchmark`` and ``pyramidclip_components`` (with the extensions)."""
    rows = [*pyramidclip.BENCHMARK, *pyramidclip.TABLE6, pyramidclip.DETECTOR_CONTROL, *pyramidclip.EXTENSIONS]
    seeds = pyramidclip.resolve_seeds(SCALE, None)
    return [pyramidclip.config(row, SCALE, seed) for row in dict.fromkeys(rows) for seed in seeds]


@cache
def dimefm_plan() -> list[RunConfig]:
    """The three DIME-FM notebooks (benchmark, components, coverage): the teacher (once, its own seed), and every
    row, CLIP runs and RN50 students of the ViT-B-32 teacher (``at_width``: 512-d), for every seed."""
    rows = dict.fromkeys([*dimefm.BENCHMARK, *dimefm.COMPONENTS, *dimefm.COVERAGE_ROWS])
    seeds = dimefm.resolve_seeds(SCALE, None)
    configs = [dimefm.config(row, SCALE, seed) for row in rows if row != dimefm.TEACHER for seed in seeds]
    return [dimefm.config(dimefm.TEACHER, SCALE, dimefm.TEACHER_SEED), *configs]


def iclip_plan() -> list[RunConfig]:
    """``iclip_ratio`` (CLIP and iCLIP at every ratio of the default grid) and ``iclip_unicl`` (with the full class
    data)."""
    rows = [*iclip.sweep_rows(iclip.check_ratios(None)), *iclip.UNICL_ROWS, iclip.NO_DEFINITIONS]
    seeds = iclip.resolve_seeds(SCALE, None)
    return [iclip.config(row, SCALE, seed) for row in dict.fromkeys(rows) for seed in seeds]


def icmlm_plan() -> list[RunConfig]:
    """``icmlm_labels`` and ``icmlm_heads`` with their default label sizes and lambdas, and each ICMLM run's
    TP_Postag start."""
    rows = [
        *icmlm.ROWS,
        *icmlm.size_rows(icmlm.check_label_sizes(None, SCALE)),
        *icmlm.lambda_rows(icmlm.check_lambdas(None, SCALE)),
    ]
    configs = [
        icmlm.config(row, SCALE, seed) for row in dict.fromkeys(rows) for seed in icmlm.resolve_seeds(SCALE, None)
    ]
    return configs + [c.method_args.init for c in configs if c.method == "icmlm"]


def headtohead_plan() -> list[RunConfig]:
    """What ``headtohead.check_plan`` builds before any compute (every variant at 1 and 3 times the equal-samples
    episodes, every seed), with ICMLM's TP_Postag starts; the equal-seconds amounts are known only after a
    calibration."""
    unit = headtohead.unit_episodes(SCALE)
    configs = [
        headtohead.config(headtohead.run_of(variant, episodes), SCALE, seed)
        for variant in headtohead.VARIANTS
        for episodes in (unit, 3 * unit)
        for seed in headtohead.resolve_seeds(SCALE, None)
    ]
    return configs + [c.method_args.init for c in configs if c.method == "icmlm"]


def drawings_plan() -> list[RunConfig]:
    """``drawings.ipynb`` on the committed drawings (the chapter's own, built by ``make openclipart``, are not built
    in CI): every default variant at equal samples, every seed, with the class data and the held-out pairs."""
    real = REPO_ROOT / "tests" / "data" / "openclipart"
    data = drawings.check_data(
        str(real / "pairs.csv"),
        [f"folder:{real / 'categories'}", f"pairs:{real / 'pairs.csv'}"],
        f"folder:{real / 'categories' / 'train'}",
    )
    return [
        drawings.config(v, SCALE, seed, data)
        for v in drawings.DEFAULT_VARIANTS
        for seed in drawings.resolve_seeds(SCALE, None)
    ]


PLANS: dict[str, Callable[[], list[RunConfig]]] = {
    "baseline": baseline_plan,
    "protoclip": protoclip_plan,
    "pyramidclip": pyramidclip_plan,
    "dimefm": dimefm_plan,
    "iclip": iclip_plan,
    "icmlm": icmlm_plan,
    "headtohead": headtohead_plan,
    "drawings": drawings_plan,
}


def test_every_registered_chapter_has_a_plan():
    assert set(PLANS) == {"baseline", *(c.name for c in chapters())}


@pytest.mark.parametrize("chapter", sorted(PLANS))
def test_paper_scale_plan_builds_valid_configs(chapter):
    configs = PLANS[chapter]()
    assert configs, f"{chapter}: no run planned"
    keys = set()
    for config in configs:
        record = json.loads(json.dumps(config.to_dict()))  # what the results store writes and reads
        assert RunConfig.from_dict(record) == config
        assert runs.config_hash(record) == runs.config_hash(config.to_dict())
        assert config.scale == SCALE
        model = (config.model, config.image_size)
        assert config.model in PAPER_PRESETS and config.image_size == 224, f"{chapter}: {config.method} at {model}"
        keys.add(runs.config_hash(record))
    assert len(keys) > 1  # distinct runs, not one config repeated


def test_dimefm_students_at_paper_scale():
    """Every DIME-FM student row builds at paper scale: an RN50 student of the ViT-B-32 teacher (the chapter's
    ``MODELS["paper"]``), fitted to the teacher's 512-d width (``papers.dimefm.method.at_width``)."""
    students = [c for c in dimefm_plan() if c.method == "dimefm"]
    assert students
    for config in students:
        assert (config.model, config.method_args.teacher.model) == ("RN50", "ViT-B-32")
