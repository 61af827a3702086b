"""The runs behind the PyramidCLIP chapter (Tables 2-7 of Gao et al., arXiv v1) and its claims, as data.

Setting (scaled down): the laptop world has 10,240 pairs and the unit of training E is 2 epochs (160 steps of
128 pairs; 3 epochs did not fit the chapter's 20-minute budget with the detector control), with the learning-rate
warm-up 10% of a row's steps (§4.2) and cosine decay to the end. Every row is trained with the same seeds on the
same pairs in the same order; the two worlds are the default "web" world (mismatched, omitted and junk captions:
the YFCC15M-V1 stand-in) and a "clean" world (no mismatch or junk, fewer omissions: the CLIP-filtered LAION15M
stand-in). Stand-ins, named as such in the chapter: the extractive summariser for T5 (``vlp_lib.papers.pyramidclip.summaries``),
the world's crop CNN for VinVL (``vlp_lib.papers.pyramidclip.detector``), frozen-feature probes (multi-label presence mAP, relation
probe) for VOC detection fine-tuning.

Table 6 is cumulative: each row adds one term to the one before, with equal weights over the terms present (the
paper gives only the full weights of Eq. 6, all 0.25), without softening until its last row (alpha = 0.2).

On image-text pairs of your own (``train_data``: an OpenCLIP CSV or WebDataset shards, ``eval_tasks``: image-folder
tasks beside or instead of the world's, ``regions``: a detector's boxes) a page is a ``Page`` (``page``): the same
rows on those pairs, T_S from the CSV's summary column when it has one, else the captions' noun phrases
(``vlp_lib.papers.pyramidclip.real_data``), R from the regions file; a row that needs what the data lacks (the
clean world, the world's oracle summaries, boxes without a regions file) is skipped with the reason, and its claims
are not run (``vlp_lib.book.data``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from vlp_lib import experiment
from vlp_lib.book import data as book_data
from vlp_lib.book import plan, report
from vlp_lib.book.claims import Claim, declare, judge_stored, with_longer_claims
from vlp_lib.book.claims import claims_table as _claims_table
from vlp_lib.book.plan import seeds_parameter
from vlp_lib.config import as_list, scale_defaults
from vlp_lib.data import real
from vlp_lib.papers.pyramidclip import real_data
from vlp_lib.papers.pyramidclip.book import paper
from vlp_lib.papers.pyramidclip.method import check_weights, uses_rois, uses_summaries
from vlp_lib.run_config import RunConfig
from vlp_lib.suite import VALIDATION_TASKS

CHAPTER_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        train_size=128,
        unit_epochs=1,
        batch_size=32,
        task_train=100,
        task_test=50,
        retrieval_images=30,
        seeds=(0,),  # one seed at smoke (tests): iCLIP's two exercise the paired intervals in the notebooks
        lr=1e-3,
        warmup_fraction=0.1,
        detector_images=60,
    ),
    "laptop": dict(
        train_size=10_240,
        unit_epochs=2,
        batch_size=128,
        task_train=2_000,
        task_test=2_000,
        retrieval_images=500,
        seeds=(0, 1, 2),
        lr=2e-3,
        warmup_fraction=0.1,
        detector_images=None,
    ),
    "paper": dict(
        train_size=2_500_000,
        unit_epochs=8,
        batch_size=4_096,
        task_train=50_000,
        task_test=10_000,
        retrieval_images=5_000,
        seeds=(0, 1, 2),
        lr=5e-4,
        warmup_fraction=0.1,
        detector_images=None,
    ),
}
# the YFCC15M-V1 stand-in (the world's default knobs) and the LAION15M stand-in (cleaner captions)
WORLDS: dict[str, dict[str, Any]] = {"web": {}, "clean": dict(mismatch_rate=0.0, junk_rate=0.0, omit_rate=0.25)}
EVAL_TASKS = [*VALIDATION_TASKS, "presence", "relation"]
ALPHA = paper.NUMBERS["alpha"]
FULL: dict[str, Any] = {"weights": {"gs": 0.25, "lt": 0.25, "rs": 0.25, "rt": 0.25}, "alpha": ALPHA}


@dataclass(frozen=True)
class Row:
    """One trained setting: a method with its arguments, the world it trains on and its length in units of E.
    Rows that train the same thing are equal whatever their labels, so a dict keyed by rows holds each run once."""

    label: str = field(compare=False)
    method: str
    method_kwargs: tuple[tuple[str, Any], ...] = ()
    world: str = "web"
    units: float = 1.0

    @staticmethod
    def of(
        label: str, method: str, kwargs: dict[str, Any] | None = None, world: str = "web", units: float = 1.0
    ) -> Row:
        frozen = tuple(
            sorted((k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in (kwargs or {}).items())
        )
        return Row(label, method, frozen, world, units)

    def kwargs(self) -> dict[str, Any]:
        return {k: dict(v) if k == "weights" else v for k, v in self.method_kwargs}


def _pyramid(label: str, weights: dict[str, float], alpha: float = 0.0, **kwargs: Any) -> Row:
    return Row.of(label, "pyramidclip", {"weights": weights, "alpha": alpha, **kwargs.pop("method", {})}, **kwargs)


THIRD = 1 / 3
CLIP = Row.of("CLIP", "clip")
# a row whose ROI terms read the world detector trained on the evaluation's own shapes and colours says so in its
# label, on every table and figure (``uses_trained_detector``)
TRAINED_DETECTOR = "trained detector"
# Table 6 (RN50 path), cumulative
TABLE6 = [
    CLIP,
    _pyramid("L_LT", {"lt": 1.0}),
    _pyramid("+ L_GS", {"lt": 0.5, "gs": 0.5}),
    _pyramid(f"+ L_RT ({TRAINED_DETECTOR})", {"lt": THIRD, "gs": THIRD, "rt": THIRD}),
    _pyramid(f"+ L_RS ({TRAINED_DETECTOR})", FULL["weights"]),
    _pyramid(f"+ Soften (PyramidCLIP, {TRAINED_DETECTOR})", FULL["weights"], ALPHA),
]
PYRAMID = TABLE6[-1]
# Table 7's "w/o Relation": the peer-level terms only, softened
NO_RELATION = _pyramid("PyramidCLIP w/o relation", {"lt": 0.5, "gs": 0.5}, ALPHA)
# Table 4 against Table 2: the same two methods on the clean world
CLEAN = [
    Row.of("CLIP", "clip", world="clean"),
    _pyramid(f"PyramidCLIP ({TRAINED_DETECTOR})", FULL["weights"], ALPHA, world="clean"),
]
# Table 5's question at equal compute: CLIP given as many image-encoder passes as PyramidCLIP's two views
CLIP_2E = Row.of("CLIP at 2E", "clip", units=2.0)
BENCHMARK = [CLIP, PYRAMID, NO_RELATION, CLIP_2E, *CLEAN]
# The detector stand-in's control, trained by default: the full loss with an untrained copy of the crop CNN (same
# architecture and boxes, random weights), which separates what the ROI terms carry from what the detector's
# supervised shape and colour labels carry
DETECTOR_CONTROL = _pyramid("PyramidCLIP, untrained detector", FULL["weights"], ALPHA, method={"detector": "untrained"})
# Extensions (notebook parameter ``extensions``): the summariser's upper bound and the alpha sweep
ORACLE_SUMMARIES = _pyramid(
    f"PyramidCLIP, oracle summaries ({TRAINED_DETECTOR})", FULL["weights"], ALPHA, method={"summary": "oracle"}
)
CONTROLS = [ORACLE_SUMMARIES, DETECTOR_CONTROL]
ALPHA_SWEEP = [_pyramid(f"alpha = {a} ({TRAINED_DETECTOR})", FULL["weights"], a) for a in (0.1, 0.4)]
EXTENSIONS = [ORACLE_SUMMARIES, *ALPHA_SWEEP]


def uses_trained_detector(row: Any) -> bool:
    """Whether ``row``'s runs read the ROI features of the trained world detector: the ROI terms (L_RT, L_RS) with
    the detector that learned the evaluation's own shapes and colours, not its untrained control. Such a row's label
    says so (``TRAINED_DETECTOR``), and so does the text of every claim that compares it (``carries_detector``)."""
    if not isinstance(row, Row) or row.method != "pyramidclip":
        return False
    kwargs = row.kwargs()
    return uses_rois(check_weights(kwargs["weights"])) and kwargs.get("detector", "trained") == "trained"


@dataclass(frozen=True)
class Data:
    """What a page trains and evaluates on (its notebook's ``train_data``, ``eval_tasks`` and ``regions``), checked
    by ``check_data``: ``n_pairs`` the pairs a real source offers, ``summary`` the summariser of T_S on it
    ("column" with a summary column, else "noun_phrases"; ``None`` on the world: each row's own)."""

    train_data: str = "world"
    eval_tasks: tuple[str, ...] | None = None
    regions: str | None = None
    n_pairs: int = 0
    summary: str | None = None

    @property
    def is_world(self) -> bool:
        return real.is_world(self.train_data)


WORLD = Data()
NO_REGIONS = "no regions file: the ROI rows need boxes from a detector you ran; pass -p regions FILE"
NO_ORACLE = "the oracle summaries are the generated world's true scenes; captions of your own have none"
OTHER_WORLD = (
    "the {world} world is a second generated world (cleaner captions: the LAION15M stand-in); train_data of your own "
    "is one set of pairs"
)


def check_data(train_data: Any = "world", eval_tasks: Any = None, regions: Any = None) -> Data:
    """A page's data parameters, checked before any compute (``ValueError`` naming ``train_data``, ``eval_tasks``
    or ``regions``); the summariser of T_S chosen by the data (``Data``), the tagger checked when it is needed."""
    if not isinstance(train_data, str) or not train_data:
        raise ValueError(f"train_data must be 'world' or a path, got {train_data!r}")
    tasks = None if eval_tasks is None else tuple(as_list("eval_tasks", eval_tasks))
    if tasks is not None and (not tasks or not all(isinstance(t, str) for t in tasks)):
        raise ValueError(f"eval_tasks must be a non-empty list of task names, got {eval_tasks!r}")
    if regions is not None and not isinstance(regions, str):
        raise ValueError(f"regions must be the path of a JSON regions file, got {regions!r}")
    if real.is_world(train_data):
        if regions is not None:
            raise ValueError("regions: a regions file gives boxes for train_data of your own; the world has its boxes")
        return Data(eval_tasks=tasks)
    n_pairs = real.count_pairs(train_data)  # ValueError naming train_data
    path = real.config_path(train_data)
    summary = "column" if real_data.has_summary_column(path) else "noun_phrases"
    if summary == "noun_phrases":
        real_data.check_tagger()
    if regions is not None:
        regions = str(Path(regions).resolve()) if Path(regions).is_file() else regions
        real_data.check_regions(regions, path)
    return Data(path, tasks, regions, n_pairs, summary)


def skip_reason(row: Row, data: Data = WORLD) -> str | None:
    """Why ``row`` cannot run on ``data`` (``None``: it can): on data of your own, the clean world, the world's
    oracle summaries and, without a regions file, the ROI terms."""
    if data.is_world:
        return None
    if row.world != "web":
        return OTHER_WORLD.format(world=row.world)
    kwargs = row.kwargs()
    if row.method == "pyramidclip" and kwargs.get("summary") == "oracle":
        return NO_ORACLE
    if row.method == "pyramidclip" and uses_rois(check_weights(kwargs["weights"])) and data.regions is None:
        return NO_REGIONS
    return None


def config(row: Row, scale: str = "laptop", seed: int = 0, data: Data = WORLD) -> RunConfig:
    """The validated run config of ``row`` on ``data`` (``experiment.make_config``; ``ValueError`` before any
    compute, also for a row ``skip_reason`` refuses). On the world exactly the chapter's run; on data of your own
    the same recipe on its pairs, T_S by ``data.summary`` and R from ``data.regions`` where the row reads them."""
    scale_defaults(scale)
    why = skip_reason(row, data)
    if why is not None:
        raise ValueError(f"{row.label}: {why}")
    sizes = CHAPTER_SCALES[scale]
    kwargs = row.kwargs()
    if row.method == "pyramidclip" and sizes["detector_images"] is not None and "detector_images" not in kwargs:
        kwargs["detector_images"] = sizes["detector_images"]
    train_size = sizes["train_size"] if data.is_world else data.n_pairs
    overrides: dict[str, Any] = {} if data.is_world else {"train_data": data.train_data}
    if not data.is_world and row.method == "pyramidclip":
        weights = check_weights(kwargs["weights"])
        if uses_summaries(weights):
            kwargs.setdefault("summary", data.summary)
        if uses_rois(weights):
            kwargs["regions"] = data.regions
    epochs = row.units * sizes["unit_epochs"]
    steps = int(epochs * (train_size // sizes["batch_size"]))
    return experiment.make_config(
        scale,
        method=row.method,
        seed=seed,
        train_size=train_size,
        epochs=epochs,
        batch_size=sizes["batch_size"],
        augmentation="none",
        lr=sizes["lr"],
        warmup_steps=max(1, int(sizes["warmup_fraction"] * steps)),
        world_knobs=WORLDS[row.world],
        task_train=sizes["task_train"],
        task_test=sizes["task_test"],
        retrieval_images=sizes["retrieval_images"],
        eval_tasks=list(data.eval_tasks) if data.eval_tasks is not None else EVAL_TASKS,
        method_kwargs=kwargs,
        **overrides,
    )


def resolve_seeds(scale: str, seeds: Any) -> list[int]:
    """A notebook's ``seeds`` parameter: ``None`` is the scale's default (``plan.seeds_parameter``)."""
    scale_defaults(scale)
    return seeds_parameter(scale, seeds, CHAPTER_SCALES[scale]["seeds"])


def run_rows(rows: Sequence[Row], scale: str, seeds: Sequence[int], progress: bool = True) -> dict[Row, list[dict]]:
    """Every row for every seed (stored runs are loaded, not retrained): ``{row: [record per seed]}``."""
    return plan.run_rows(rows, config, scale, seeds, progress)


def stored(row: Row, scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict] | None:
    """The stored records of ``row`` for every seed, or ``None`` if any is missing (or stale)."""
    return plan.stored(row, config, scale, seeds or resolve_seeds(scale, None))


def training_seconds(records: Sequence[dict]) -> float:
    """Mean training time of a row's runs (seconds), for the equal-compute comparison."""
    return sum(r["timings"].get("training", 0.0) for r in records) / len(records)


# --------------------------------------------------------------------------------------------------------------
# the chapter's claims, as data (spec section 1.1; ids P1-P13), judged on runs (nothing is trained here)

CLAIM_NOTEBOOKS = ("benchmark", "components")
PAPER = "PyramidCLIP"


def _claim(
    claim_id: str,
    text: str,
    source: str,
    better: Row,
    reference: Row,
    metric: str,
    paper_value: str,
    paper_effect: float | None,
    notebook: str = "benchmark",
    minus: tuple[Row, Row] | None = None,
) -> Claim:
    """A "direction" claim (``vlp_lib.book.claims``): ``better`` beats ``reference`` on ``metric``
    (``report.VERDICT_RULE``). With ``minus`` (a second pair), the claim is about the difference of two gains,
    judged per seed: (better - reference) - (minus[0] - minus[1]). ``paper_effect``: the paper's difference in
    points / 100 (a fraction on our metric)."""
    return Claim(
        claim_id,
        text,
        source,
        "direction",
        metric,
        paper_value,
        paper_effect,
        notebook=notebook,
        better=better,
        reference=reference,
        minus=minus,
    )


def _pp(better: float, reference: float, where: str) -> tuple[str, float]:
    pp = round(better - reference, 2)
    return f"{pp:+.1f} pp ({where}: {better} vs {reference})", pp / 100


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _claims() -> list[Claim]:
    t6 = paper.TABLE6["ResNet50"]
    rn = "ResNet50"
    table3 = {m: _mean(paper.TABLE3[m, rn]) for m in ("CLIP", "PyramidCLIP")}
    t4 = {m: paper.TABLE4[m, rn] for m in ("CLIP", "PyramidCLIP")}
    web_gain, clean_gain = (
        paper.TABLE2["PyramidCLIP", rn] - paper.TABLE2["CLIP", rn],
        t4["PyramidCLIP"][4] - t4["CLIP"][4],
    )
    det = {k: v[0] for k, v in paper.TABLE7.items()}
    det_web = det["PyramidCLIP", "YFCC15M", 32] - det["CLIP", "YFCC15M", 32]
    det_clean = det["PyramidCLIP", "LAION15M", 32] - det["CLIP", "LAION15M", 32]
    zs = "avg3/zeroshot_top1"
    table6 = [
        (TABLE6[i], TABLE6[i - 1], name)
        for i, name in [(1, "L_LT"), (2, "+ L_GS"), (3, "+ L_RT"), (4, "+ L_RS"), (5, "+ Soften")]
    ]
    previous = ["L_CLIP", "L_LT", "+ L_GS", "+ L_RT", "+ L_RS"]
    headline = (
        f"+19.2 pp (Table 2, RN50, 32 ep: 44.7 vs 25.5); Table 6 (8 ep): "
        f"{_pp(t6['+ Soften'][0], t6['L_CLIP'][0], 'RN50')[0]}"
    )
    # P1's pyramid has no ROI terms: its paper effect is Table 6's nearest row without them (L_LT + L_GS), which is
    # not softened either, rather than the full method's +9.3 pp (ROI terms included)
    no_roi_text, no_roi_effect = _pp(t6["+ L_GS"][0], t6["L_CLIP"][0], "Table 6, RN50, 8 ep, L_LT + L_GS")
    retrieval = _pp(round(table3["PyramidCLIP"], 2), round(table3["CLIP"], 2), "RN50, mean of I2T/T2I R@1/R@5")
    table5 = "+1.0 pp (Table 5, ViT-B/32: PyramidCLIP 8 ep 56.5 vs CLIP 32 ep 55.5)"
    full_only = "; the full method's, ROI terms included: the paper has no {table} row without them"
    claims = [
        _claim(
            "P1",
            "PyramidCLIP's pyramid without the detector (its peer-level terms, softened) beats CLIP on zero-shot top-1 "
            "at equal epochs (two image views per pair to CLIP's one: not compute-matched, see P4_no_detector)",
            "Table 2 / Table 6",
            NO_RELATION,
            CLIP,
            zs,
            f"{no_roi_text}: the nearest row without ROI terms, not softened (the full method: "
            f"{t6['+ Soften'][0] - t6['L_CLIP'][0]:+.1f} pp in Table 6, +19.2 pp in Table 2)",
            no_roi_effect,
        ),
        _claim(
            "P1_detector",
            "PyramidCLIP with a detector trained on the evaluation's shapes beats CLIP on zero-shot top-1",
            "Table 2 / Table 6",
            PYRAMID,
            CLIP,
            zs,
            headline,
            _pp(t6["+ Soften"][0], t6["L_CLIP"][0], "")[1],
        ),
        _claim(
            "P2",
            f"PyramidCLIP ({TRAINED_DETECTOR}) beats CLIP on zero-shot retrieval",
            "Table 3",
            PYRAMID,
            CLIP,
            "retrieval/mean_recall",
            *retrieval,
        ),
        _claim(
            "P2_no_detector",
            "PyramidCLIP's pyramid without the detector (its peer-level terms, softened) beats CLIP on zero-shot "
            "retrieval",
            "Table 3",
            NO_RELATION,
            CLIP,
            "retrieval/mean_recall",
            retrieval[0] + full_only.format(table="Table 3"),
            retrieval[1],
        ),
        _claim(
            "P3",
            f"PyramidCLIP's gain ({TRAINED_DETECTOR}) shrinks on cleaner data (web gain minus clean gain, zero-shot "
            "top-1)",
            "Table 2 vs Table 4",
            PYRAMID,
            CLIP,
            zs,
            f"{web_gain - clean_gain:+.1f} pp (RN50: +{web_gain:.1f} on YFCC15M-V1, +{clean_gain:.1f} on LAION15M); "
            f"the YFCC15M gain is Table 2's, over the 32-ep CLIP ({paper.TABLE2['CLIP', rn]}) that this chapter "
            f"reads as weak (Table 6's 8-ep CLIP: {t6['L_CLIP'][0]})",
            round(web_gain - clean_gain, 2) / 100,
            minus=(CLEAN[1], CLEAN[0]),
        ),
        # the paper's CLIP lead on clean data (+0.3 pp) lies inside the practical margin: what it shows is a tie,
        # judged as one (``report.EQUIVALENCE_RULE``), not a direction no experiment at our precision could decide
        Claim(
            "P3_i2t",
            f"On clean data CLIP and PyramidCLIP ({TRAINED_DETECTOR}) tie on image-to-text R@1 (within "
            f"±{100 * report.NO_EFFECT_MARGIN:g} pp: the paper's CLIP lead lies inside that margin)",
            "Table 4",
            "equivalence",
            "retrieval/i2t_R@1",
            _pp(t4["CLIP"][0], t4["PyramidCLIP"][0], "RN50, LAION15M")[0]
            + f", CLIP ahead: inside the ±{100 * report.NO_EFFECT_MARGIN:g} pp margin, so a tie",
            _pp(t4["CLIP"][0], t4["PyramidCLIP"][0], "")[1],
            notebook="benchmark",
            better=CLEAN[0],
            reference=CLEAN[1],
            margin=report.NO_EFFECT_MARGIN,
        ),
        _claim(
            "P4",
            f"PyramidCLIP ({TRAINED_DETECTOR}) beats CLIP given as many image-encoder passes (CLIP at 2E)",
            "Table 5",
            PYRAMID,
            CLIP_2E,
            zs,
            table5,
            0.01,
        ),
        _claim(
            "P4_no_detector",
            "PyramidCLIP's pyramid without the detector (its peer-level terms, softened) beats CLIP given as many "
            "image-encoder passes (CLIP at 2E)",
            "Table 5",
            NO_RELATION,
            CLIP_2E,
            zs,
            table5 + full_only.format(table="Table 5"),
            0.01,
        ),
    ]
    for (better, reference, name), prev in zip(table6, previous):
        pid = {"L_LT": "P6", "+ L_GS": "P7", "+ L_RT": "P9", "+ L_RS": "P10", "+ Soften": "P11"}[name]
        text = "L_LT beats L_CLIP" if name == "L_LT" else f"{name} adds to the row before"
        if uses_trained_detector(better):
            text += f" ({TRAINED_DETECTOR})"
        claims.append(
            _claim(
                pid,
                text,
                "Table 6",
                better,
                reference,
                zs,
                *_pp(t6[name][0], t6[prev][0], "RN50 zero-shot top-1, 8 ep"),
                notebook="components",
            )
        )
    claims += [
        _claim(
            "P12",
            f"PyramidCLIP ({TRAINED_DETECTOR}) features carry more object information (presence mAP, detection "
            "stand-in)",
            "Table 7",
            PYRAMID,
            CLIP,
            "presence/map",
            f"+{det_web:.1f} AP (VOC07, YFCC15M, 32 ep)",
            round(det_web, 2) / 100,
        ),
        _claim(
            "P12_noisy",
            f"PyramidCLIP's detection gain ({TRAINED_DETECTOR}) is larger on noisier data (web gain minus clean "
            "gain, presence mAP)",
            "Table 7",
            PYRAMID,
            CLIP,
            "presence/map",
            f"{det_web - det_clean:+.1f} AP (+{det_web:.1f} YFCC vs +{det_clean:.1f} LAION)",
            round(det_web - det_clean, 2) / 100,
            minus=(CLEAN[1], CLEAN[0]),
        ),
        _claim(
            "P13",
            f"The relation terms ({TRAINED_DETECTOR}) add relation information (relation probe)",
            "Table 7",
            PYRAMID,
            NO_RELATION,
            "relation/linear",
            *_pp(det["PyramidCLIP", "YFCC15M", 8], det["PyramidCLIP w/o Relation", "YFCC15M", 8], "AP, 8 ep"),
        ),
    ]
    return claims


def carries_detector(claim: Claim) -> bool:
    """Whether a row ``claim`` compares reads the trained detector (``uses_trained_detector``)."""
    return any(uses_trained_detector(row) for row in claim.rows())


# The config fields each claim's idea changes (``vlp_lib.book.audit`` checks that its runs differ in nothing else).
WEIGHTS = ("method_kwargs.weights",)
KNOBS: dict[str, tuple[str, ...]] = {
    **{i: ("method",) for i in ("P1", "P1_detector", "P2", "P2_no_detector", "P3", "P3_i2t", "P6", "P12", "P12_noisy")},
    # as many image-encoder passes: CLIP trains twice as long (Table 2's note)
    **{i: ("method", "epochs") for i in ("P4", "P4_no_detector")},
    **{i: WEIGHTS for i in ("P7", "P9", "P10", "P13")},
    "P11": ("method_kwargs.alpha",),
}
CLAIMS: list[Claim] = declare(_claims(), KNOBS)
# The chapter's primary claim: the abstract's headline: PyramidCLIP beats CLIP on ImageNet zero-shot top-1 (+19.2% at
# 15M pairs with a ResNet-50), tested on the pyramid without the detector: the world's detector stand-in is trained on
# the evaluation's own shapes and colours, which VinVL (trained on other data than ImageNet's) is not, so its features
# are a claim of their own (P1_detector), and the paper's effect is that of Table 6's nearest row without ROI terms.
# Its verdict heads the chapter; the other claims are secondary, and the false discovery rate family stays the whole
# book.
PRIMARY = "P1"
# Two training lengths (the trend a reader needs before extrapolating): the primary claim's two runs again at LONGER
# times their training, the same seeds and recipe.
LONGER = 4
LONGER_IDS = ("P1",)


def longer(row: Row) -> Row:
    """``row`` trained ``LONGER`` times as long (a claim's rows at the longer length, ``claims.with_longer``)."""
    return replace(row, units=row.units * LONGER)


def compared_claims() -> list[Claim]:
    """``CLAIMS`` and the claims of ``LONGER_IDS`` on their longer rows: whose references get an untrained network."""
    return with_longer_claims(CLAIMS, longer, LONGER_IDS)


RULES: list[str] = [
    "Claims on a difference of gains (P3, P12_noisy) judge per seed (better - reference) minus "
    "(clean better - clean reference) by the same 95% t interval."
]


def claims_table(results: Mapping[Row, Sequence[dict]], notebook: str | None = None) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on a notebook's ``{row: records}``."""
    return _claims_table(
        CLAIMS, results, PAPER, notebook, CLAIM_NOTEBOOKS, longer=longer, longer_ids=LONGER_IDS, factor=LONGER
    )


def claims(scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Every claim judged on the results store at ``scale`` (the scale's default seeds, or ``seeds``), the claims of
    ``LONGER_IDS`` also at the longer length (``verdict_longer``)."""
    return judge_stored(
        CLAIMS, lambda row: stored(row, scale, seeds), PAPER, longer=longer, longer_ids=LONGER_IDS, factor=LONGER
    )


def headline_note(lines: pd.DataFrame) -> str:
    """One sentence for the chapter's opening page (``vlp_lib.book.findings.headline``), from its scorecard ``lines``
    (with ``id`` and ``verdict_fdr``): of the claims decided at 5% FDR without the trained detector, which hold and
    which do not, and which claims hold only with it (``carries_detector``); "" when none is decided. The detector
    learned the evaluation's own shapes and colours, so a reader needs to know which of the chapter's words rest on
    it."""
    decided = lines[lines["verdict_fdr"].isin(report.DECIDED)]
    if decided.empty:
        return ""
    with_detector = decided["id"].isin({c.id for c in CLAIMS if carries_detector(c)})
    holds = decided["verdict_fdr"].isin(report.HOLDS)
    held, failed = decided[~with_detector & holds], decided[~with_detector & ~holds]

    def listed(part: pd.DataFrame) -> str:
        return "; ".join(f"{i}: {word}" for i, word in zip(part["id"], part["verdict_fdr"]))

    n = len(held) + len(failed)
    if n == 0:
        text = f"No claim without the {TRAINED_DETECTOR} is decided"
    elif held.empty:
        text = f"Of the claims decided without the {TRAINED_DETECTOR}, none of {n} holds ({listed(failed)})"
    else:
        text = (
            f"Of the claims decided without the {TRAINED_DETECTOR}, {len(held)} of {n} "
            f"{'holds' if len(held) == 1 else 'hold'} ({listed(held)})"
            + (
                f" and {len(failed)} {'does' if len(failed) == 1 else 'do'} not ({listed(failed)})"
                if n > len(held)
                else ""
            )
        )
    others = decided[with_detector & holds]
    if not others.empty:
        text += (
            f"; every claim that holds with it ({', '.join(others['id'])}) reads a detector trained on the evaluation's "
            "own shapes and colours"
        )
    return text + "."


# --------------------------------------------------------------------------------------------------------------
# a page on its data: the world, or image-text pairs of your own


def page(scale: str, seeds: Any, train_data: Any = "world", eval_tasks: Any = None, regions: Any = None) -> Page:
    """A notebook's page on its data, every parameter checked before any compute (``ValueError`` naming it):
    ``resolve_seeds`` and ``check_data``."""
    return Page(scale, tuple(resolve_seeds(scale, seeds)), check_data(train_data, eval_tasks, regions))


@dataclass(frozen=True)
class Page:
    """The chapter's rows and claims on one page's data (``Data``) at ``scale`` with ``seeds``: which rows run,
    which are skipped and why, the metrics the runs have, and the claims as they read on the data
    (``vlp_lib.book.data.claims_on_data``; a claim on a skipped row is not run with the row's reason)."""

    scale: str
    seeds: tuple[int, ...]
    data: Data = WORLD

    def config(self, row: Row, seed: int | None = None) -> RunConfig:
        return config(row, self.scale, self.seeds[0] if seed is None else seed, self.data)

    def skipped(self, rows: Sequence[Row]) -> dict[Row, str]:
        """``{row: why it is skipped}`` for the rows of ``rows`` that cannot run on the data."""
        return {row: why for row in rows if (why := skip_reason(row, self.data)) is not None}

    def rows(self, rows: Sequence[Row]) -> list[Row]:
        """The rows of ``rows`` that run on the data, in order."""
        return [row for row in rows if skip_reason(row, self.data) is None]

    def check(self, rows: Sequence[Row]) -> None:
        """Every config of the rows that run, for every seed: ``ValueError`` before any compute."""
        for row in self.rows(rows):
            for seed in self.seeds:
                self.config(row, seed)

    def run_rows(self, rows: Sequence[Row], progress: bool = True) -> dict[Row, list[dict]]:
        """The rows that run on the data, every seed (stored runs are loaded): ``{row: [record per seed]}``."""
        return plan.run_rows(
            self.rows(rows),
            lambda row, scale, seed: config(row, scale, seed, self.data),
            self.scale,
            self.seeds,
            progress,
        )

    def stored(self, rows: Sequence[Row]) -> dict[Row, list[dict]]:
        """The stored records of the rows of ``rows`` that run on the data and have every seed stored (others left
        out; nothing is trained): another notebook's runs, for a claim's line judged on them."""
        out = {}
        for row in self.rows(rows):
            records = plan.stored(
                row, lambda row, scale, seed: config(row, scale, seed, self.data), self.scale, list(self.seeds)
            )
            if records is not None:
                out[row] = records
        return out

    def untrained(self, rows: Sequence[Row]) -> dict[Row, list[dict]]:
        """The untrained network (``experiment.untrained``: the run's config before any step) of each of the rows of
        ``rows`` that run on the data and that a claim compares with, at either length (``compared_claims``), every
        seed: what the learning check and the page's gain over the untrained network read."""
        return plan.untrained_references(
            compared_claims(),
            self.rows(rows),
            lambda row, scale, seed: config(row, scale, seed, self.data),
            self.scale,
            self.seeds,
        )

    def skipped_text(self, rows: Sequence[Row]) -> str:
        """One line per skipped row of ``rows`` with its reason ("" when every row runs), for the page."""
        return "\n".join(
            f"skipped: {row.label} ({row.world} world): {why}" if row.world != "web" else f"skipped: {row.label}: {why}"
            for row, why in self.skipped(rows).items()
        )

    @functools.cached_property
    def reference(self) -> RunConfig:
        """The CLIP row's config: what every row's evaluation measures (the tasks, the data)."""
        return self.config(CLIP)

    def metric(self, key: str) -> str | None:
        """The key that stands for the chapter's ``key`` on the data (``book.data.metric_on_data``: a world average
        moves to the headline folder task), ``None`` when the runs do not have it."""
        return book_data.metric_on_data(key, self.reference)

    def metrics(self, names: Mapping[str, str]) -> dict[str, str]:
        """``{key: column name}`` of the chapter's ``names`` that the runs have, each key as it reads on the data (a
        moved key's name says on which task)."""
        out = {}
        for key, name in names.items():
            moved = self.metric(key)
            if moved is not None:
                out[moved] = name if moved == key else f"{name} ({moved.partition('/')[0]})"
        return out

    def where(self, row: Row) -> dict[str, str]:
        """The table column that says what ``row`` trained on: its world, or the file of your pairs."""
        return {"world": row.world} if self.data.is_world else {"data": Path(self.data.train_data).name}

    def claims_table(self, results: Mapping[Row, Sequence[dict]], notebook: str | None = None) -> pd.DataFrame:
        """The claims of ``notebook`` as they read on the data, judged on ``results``: a claim on a metric the runs
        do not have, or on a row the data skips, is not run with the reason."""
        skipped = self.skipped(
            [row for row in dict.fromkeys(r for c in CLAIMS for r in c.rows()) if isinstance(row, Row)]
        )
        on_data = []
        for claim in book_data.claims_on_data(CLAIMS, self.reference):
            if claim.kind != "not_run":
                missing = [m for m in (claim.metric, *(m for _, _, m in claim.terms)) if self.metric(m) is None]
                # a reason no input can lift (the clean world, the oracle) before the missing regions file
                lacking = sorted(
                    (skipped[row] for row in claim.rows() if row in skipped), key=lambda w: w == NO_REGIONS
                )
                if missing:
                    claim = replace(claim, kind="not_run", reason=book_data.why_not(missing[0], self.reference))
                elif lacking:
                    claim = replace(claim, kind="not_run", reason=lacking[0])
            on_data.append(claim)
        return _claims_table(
            on_data, results, PAPER, notebook, CLAIM_NOTEBOOKS, longer=longer, longer_ids=LONGER_IDS, factor=LONGER
        )

    def training_pairs(self) -> int:
        """The pairs every row trains on."""
        return self.reference.train_size

    @functools.cached_property
    def _inputs(self) -> tuple[Any, real_data.Summaries | None, real_data.Regions | None]:
        """The training pairs of data of your own with their T_S and ROI boxes (as the runs make them)."""
        from vlp_lib.data.training import make_tokenizer, training_pairs

        if self.data.is_world:
            return None, None, None
        c = self.reference
        pairs = training_pairs(c, make_tokenizer(c))
        assert self.data.summary is not None  # check_data chose it
        found = real_data.summaries(self.data.summary, pairs, c.train_data, c.image_size)
        boxes = (
            None
            if self.data.regions is None
            else real_data.region_boxes(self.data.regions, c.train_data, pairs, c.image_size)
        )
        return pairs, found, boxes

    def sources(self) -> dict[str, str]:
        """``{input: where it comes from}`` of PyramidCLIP's two extra inputs, T_S and R, for ``book.data.describe``."""
        if self.data.is_world:
            return {
                "T_S (the summary level)": "the extractive summary of each caption (its object phrases, "
                "`vlp_lib.papers.pyramidclip.summaries`: the stand-in for T5)",
                "R (the ROI level)": "the world's object boxes (at most 3 per image) through the world detector's "
                "crop CNN (`vlp_lib.papers.pyramidclip.detector`: the stand-in for VinVL)",
            }
        pairs, found, boxes = self._inputs
        assert found is not None
        n = len(pairs)
        name = Path(self.data.train_data).name
        own = f"{found.n_own:,} of {n:,} captions have one (a caption without is its own summary)"
        summary = (
            f"the `{real_data.SUMMARY_COLUMN}` column of `{name}`, beside each caption: {own}"
            if found.summariser == "column"
            else f"each caption's noun phrases (spaCy's `en_core_web_sm` 3.8.0 tagger and parser, `doc.noun_chunks`, "
            f'joined by "{real_data.NOUN_PHRASE_JOIN}"; the CSV has no `{real_data.SUMMARY_COLUMN}` column): {own}'
        )
        if boxes is None:
            rois = NO_REGIONS
        else:
            rois = (
                f"the boxes of `{Path(self.data.regions or '').name}` (`{self.data.regions}`, in {boxes.units}): "
                f"{boxes.n_named:,} of {n:,} training images have a box on the image the model sees, at most "
                f"{real_data.ROI_SLOTS} each (§4.1; {boxes.n_whole:,} without one get one ROI, the whole image; "
                f"{boxes.n_dropped:,} boxes fell outside the centre crop, {boxes.n_cut:,} past the {real_data.ROI_SLOTS} "
                "most confident), each a feature of the world detector's crop CNN plus its box: a CNN trained on the "
                "generated world's object crops, never on these images, so the ROI terms carry the boxes and what a "
                "shape-and-colour CNN sees in them, not VinVL's object classes"
            )
        return {"T_S (the summary level)": summary, "R (the ROI level)": rois}

    def describe(self) -> str:
        """The page's data, its evaluation and where T_S and R come from (``book.data.describe``)."""
        return book_data.describe(self.reference, self.sources())

    def examples(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` training pairs of data of your own with the T_S the runs train on and, with a regions
        file, each image's ROI labels and boxes (training-image pixels)."""
        pairs, found, boxes = self._inputs
        if pairs is None or found is None:
            raise ValueError("examples: the world's are shown by the summariser itself (summaries.summarize_all)")
        table = {"caption": pairs.captions[:n], f"T_S ({found.summariser})": found.texts[:n]}
        if boxes is not None:
            table["ROIs (label: box)"] = [
                "; ".join(f"{label or '?'}: {[round(float(v), 1) for v in box]}" for label, box in zip(labels, b))
                for labels, b in zip(boxes.labels[:n], boxes.boxes[:n])
            ]
        return pd.DataFrame(table)

    @property
    def uses_detector(self) -> bool:
        """Whether any run reads the detector's ROI features (the world, or a regions file)."""
        return self.data.is_world or self.data.regions is not None


def claim_configs(claim: Claim, scale: str = "laptop", seed: int = 0) -> dict[Any, RunConfig]:
    """The run config of each row ``claim`` reads, for ``seed`` at ``scale`` on the world (``vlp_lib.book.audit``)."""
    return plan.row_configs(claim.rows(), config, scale, seed, Row)
