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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from vlp_lib import experiment
from vlp_lib.book import plan
from vlp_lib.book.claims import Claim, judge_stored
from vlp_lib.book.claims import claims_table as _claims_table
from vlp_lib.book.plan import seeds_parameter
from vlp_lib.config import scale_defaults
from vlp_lib.papers.pyramidclip.book import paper
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
        seeds=(0, 1),
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
# Table 6 (RN50 path), cumulative
TABLE6 = [
    CLIP,
    _pyramid("L_LT", {"lt": 1.0}),
    _pyramid("+ L_GS", {"lt": 0.5, "gs": 0.5}),
    _pyramid("+ L_RT", {"lt": THIRD, "gs": THIRD, "rt": THIRD}),
    _pyramid("+ L_RS", FULL["weights"]),
    _pyramid("+ Soften (PyramidCLIP)", FULL["weights"], ALPHA),
]
PYRAMID = TABLE6[-1]
# Table 7's "w/o Relation": the peer-level terms only, softened
NO_RELATION = _pyramid("PyramidCLIP w/o relation", {"lt": 0.5, "gs": 0.5}, ALPHA)
# Table 4 against Table 2: the same two methods on the clean world
CLEAN = [Row.of("CLIP", "clip", world="clean"), _pyramid("PyramidCLIP", FULL["weights"], ALPHA, world="clean")]
# Table 5's question at equal compute: CLIP given as many image-encoder passes as PyramidCLIP's two views
CLIP_2E = Row.of("CLIP at 2E", "clip", units=2.0)
BENCHMARK = [CLIP, PYRAMID, NO_RELATION, CLIP_2E, *CLEAN]
# The detector stand-in's control, trained by default: the full loss with an untrained copy of the crop CNN (same
# architecture and boxes, random weights), which separates what the ROI terms carry from what the detector's
# supervised shape and colour labels carry
DETECTOR_CONTROL = _pyramid("PyramidCLIP, untrained detector", FULL["weights"], ALPHA, method={"detector": "untrained"})
# Extensions (notebook parameter ``extensions``): the summariser's upper bound and the alpha sweep
ORACLE_SUMMARIES = _pyramid("PyramidCLIP, oracle summaries", FULL["weights"], ALPHA, method={"summary": "oracle"})
CONTROLS = [ORACLE_SUMMARIES, DETECTOR_CONTROL]
ALPHA_SWEEP = [_pyramid(f"alpha = {a}", FULL["weights"], a) for a in (0.1, 0.4)]
EXTENSIONS = [ORACLE_SUMMARIES, *ALPHA_SWEEP]


def config(row: Row, scale: str = "laptop", seed: int = 0) -> RunConfig:
    """The validated run config of ``row`` (``experiment.make_config``; ``ValueError`` before any compute)."""
    scale_defaults(scale)
    sizes = CHAPTER_SCALES[scale]
    kwargs = row.kwargs()
    if row.method == "pyramidclip" and sizes["detector_images"] is not None and "detector_images" not in kwargs:
        kwargs["detector_images"] = sizes["detector_images"]
    epochs = row.units * sizes["unit_epochs"]
    steps = int(epochs * (sizes["train_size"] // sizes["batch_size"]))
    return experiment.make_config(
        scale,
        method=row.method,
        seed=seed,
        train_size=sizes["train_size"],
        epochs=epochs,
        batch_size=sizes["batch_size"],
        augmentation="none",
        lr=sizes["lr"],
        warmup_steps=max(1, int(sizes["warmup_fraction"] * steps)),
        world_knobs=WORLDS[row.world],
        task_train=sizes["task_train"],
        task_test=sizes["task_test"],
        retrieval_images=sizes["retrieval_images"],
        eval_tasks=EVAL_TASKS,
        method_kwargs=kwargs,
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
    claims = [
        _claim(
            "P1",
            "PyramidCLIP beats CLIP on zero-shot top-1",
            "Table 2 / Table 6",
            PYRAMID,
            CLIP,
            zs,
            f"+19.2 pp (Table 2, RN50, 32 ep: 44.7 vs 25.5); Table 6 (8 ep): "
            f"{_pp(t6['+ Soften'][0], t6['L_CLIP'][0], 'RN50')[0]}",
            _pp(t6["+ Soften"][0], t6["L_CLIP"][0], "")[1],
        ),
        _claim(
            "P2",
            "PyramidCLIP beats CLIP on zero-shot retrieval",
            "Table 3",
            PYRAMID,
            CLIP,
            "retrieval/mean_recall",
            *_pp(round(table3["PyramidCLIP"], 2), round(table3["CLIP"], 2), "RN50, mean of I2T/T2I R@1/R@5"),
        ),
        _claim(
            "P3",
            "The gain shrinks on cleaner data (web gain minus clean gain, zero-shot top-1)",
            "Table 2 vs Table 4",
            PYRAMID,
            CLIP,
            zs,
            f"{web_gain - clean_gain:+.1f} pp (RN50: +{web_gain:.1f} on YFCC15M-V1, +{clean_gain:.1f} on LAION15M)",
            round(web_gain - clean_gain, 2) / 100,
            minus=(CLEAN[1], CLEAN[0]),
        ),
        _claim(
            "P3_i2t",
            "On clean data CLIP keeps the better image-to-text R@1",
            "Table 4",
            CLEAN[0],
            CLEAN[1],
            "retrieval/i2t_R@1",
            *_pp(t4["CLIP"][0], t4["PyramidCLIP"][0], "RN50, LAION15M"),
        ),
        _claim(
            "P4",
            "PyramidCLIP beats CLIP given as many image-encoder passes (CLIP at 2E)",
            "Table 5",
            PYRAMID,
            CLIP_2E,
            zs,
            "+1.0 pp (ViT-B/32: PyramidCLIP 8 ep 56.5 vs CLIP 32 ep 55.5)",
            0.01,
        ),
    ]
    for (better, reference, name), prev in zip(table6, previous):
        pid = {"L_LT": "P6", "+ L_GS": "P7", "+ L_RT": "P9", "+ L_RS": "P10", "+ Soften": "P11"}[name]
        text = "L_LT beats L_CLIP" if name == "L_LT" else f"{name} adds to the row before"
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
            "PyramidCLIP features carry more object information (presence mAP, detection stand-in)",
            "Table 7",
            PYRAMID,
            CLIP,
            "presence/map",
            f"+{det_web:.1f} AP (VOC07, YFCC15M, 32 ep)",
            round(det_web, 2) / 100,
        ),
        _claim(
            "P12_noisy",
            "The detection gain is larger on noisier data (web gain minus clean gain, presence mAP)",
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
            "The relation terms add relation information (relation probe)",
            "Table 7",
            PYRAMID,
            NO_RELATION,
            "relation/linear",
            *_pp(det["PyramidCLIP", "YFCC15M", 8], det["PyramidCLIP w/o Relation", "YFCC15M", 8], "AP, 8 ep"),
        ),
    ]
    return claims


CLAIMS: list[Claim] = _claims()
RULES: list[str] = [
    "Claims on a difference of gains (P3, P12_noisy) judge per seed (better - reference) minus "
    "(clean better - clean reference) by the same 95% t interval."
]


def claims_table(results: Mapping[Row, Sequence[dict]], notebook: str | None = None) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on a notebook's ``{row: records}``."""
    return _claims_table(CLAIMS, results, PAPER, notebook, CLAIM_NOTEBOOKS)


def claims(scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Every claim judged on the results store at ``scale`` (the scale's default seeds, or ``seeds``)."""
    return judge_stored(CLAIMS, lambda row: stored(row, scale, seeds), PAPER)
