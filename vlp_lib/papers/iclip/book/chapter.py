"""The runs behind the iCLIP chapter (Wei et al., CVPR 2023: the supplement) and its claims, as data (spec
section 3: I1-I5).

Setting (scaled down; "laptop"):

- **YFCC-14M** = the default web world: 10,240 pairs (mismatched, omitted and junk captions).
- **ImageNet-21K** = the class-only view (``vlp_lib.papers.iclip.classes``): 20,480 single-object images of the 24
  shapes, every colour and background, label = shape, class text = prompt + name + dictionary definition
  (``vocab.DEFINITIONS``). Its 10-class zero-shot subset ``shapes10`` stands in for IN-1K (IN-1K is a subset of
  IN-21K); "full IN-21K" doubles the class images.
- **Equal total samples** (Supp Tab. 1): every row sees E = 4 epochs of the pairs' count (40,960 samples), a share
  r of them class images (``MixedSampler``'s epochs count the pairs): at r = 0.9 the pairs get 4,096 samples.
  (At 2 epochs CLIP was at chance on shapes10, 11.9% against 10%, and every comparison measured only how soon a
  model starts to learn; 4 is what the chapter's budget allows, 6 gave CLIP 23%.)
  "Full" trains 1.5 E (spec 3.3: IN-21K twice as large, the samples of an epoch over both sets 1.5 times).
- Every run: ``rn-tiny`` at 32 px, ``context_length`` 32 (the longest class text takes 25 tokens), zero-shot and
  retrieval only (no probe reads a claim). **Retrieval** on two sets: the MS-COCO stand-in ("retrieval": 1-3
  objects) and the Flickr30K stand-in ("retrieval2": 1-2 objects, clutter 0.3, its own seed), five paraphrases
  per image.

Every row is trained with the same seeds on the same pairs; the seed fixes initialisation and data order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from vlp_lib import experiment
from vlp_lib.book import plan
from vlp_lib.book.claims import EVERY_RULE, Claim, judge_stored
from vlp_lib.book.claims import claims_table as _claims_table
from vlp_lib.book.plan import seeds_parameter
from vlp_lib.config import scale_defaults
from vlp_lib.papers.iclip import evaluations
from vlp_lib.papers.iclip.book import paper
from vlp_lib.run_config import RunConfig

CHAPTER_SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        train_size=128,
        class_images=256,
        unit_epochs=1,
        batch_size=32,
        task_test=40,
        retrieval_images=20,
        seeds=(0, 1),
        lr=1e-3,
        warmup_fraction=0.1,
    ),
    "laptop": dict(
        train_size=10_240,
        class_images=20_480,
        unit_epochs=4,
        batch_size=128,
        task_test=2_000,
        retrieval_images=500,
        seeds=(0, 1, 2),
        lr=2e-3,
        warmup_fraction=0.1,
    ),
    "paper": dict(
        train_size=2_500_000,
        class_images=5_000_000,
        unit_epochs=8,
        batch_size=4_096,
        task_test=10_000,
        retrieval_images=5_000,
        seeds=(0, 1, 2),
        lr=5e-4,
        warmup_fraction=0.1,
    ),
}
CONTEXT_LENGTH = 32  # spec 3.2: prompt + name + the longest definition ("letter f") take 25 tokens
CLASS_SEED = 2_001  # the class-only world's seed (below the tasks' seeds, apart from every training world)
FULL_FACTOR = {"class_images": 2, "epochs": 1.5}  # "full IN-21K" (spec 3.3)
RATIOS: tuple[float, ...] = tuple(r for r in paper.TABLE1 if r > 0)  # Supp Tab. 1: 0.1 ... 0.9
# shapes10 = IN-1K; shapes_colours, colour, background, count: coverage beyond the class data's shapes (I5's profile)
ZS_TASKS = ["shapes10", "shapes_colours", "colour", "background", "count"]
EVAL_TASKS = [*ZS_TASKS, "retrieval2"]
IN1K, COCO_IR, COCO_TR = "shapes10/zeroshot_top1", "retrieval/t2i_R@1", "retrieval/i2t_R@1"
FLICKR_IR, FLICKR_TR = "retrieval2/t2i_R@1", "retrieval2/i2t_R@1"
RETRIEVAL_METRICS = {"Flickr IR": FLICKR_IR, "Flickr TR": FLICKR_TR, "COCO IR": COCO_IR, "COCO TR": COCO_TR}


@dataclass(frozen=True)
class Row:
    """One trained setting: ``method`` "clip", "iclip" or "unicl"; ``ratio`` r (class rows per batch);
    ``definitions``: iCLIP's class texts with the dictionary definition; ``full``: "full IN-21K" (``FULL_FACTOR``).
    Rows that train the same thing are equal whatever their labels."""

    label: str = field(compare=False)
    method: str
    ratio: float = 0.0
    definitions: bool = True
    full: bool = False

    def method_kwargs(self, class_images: int) -> dict[str, Any]:
        if self.method == "clip":
            return {}
        n = class_images * (FULL_FACTOR["class_images"] if self.full else 1)
        kwargs: dict[str, Any] = {"ratio": self.ratio, "class_data": {"n": int(n), "seed": CLASS_SEED}}
        if self.method == "iclip":
            kwargs["definitions"] = self.definitions
        return kwargs


CLIP = Row("CLIP (100% pairs)", "clip")
SWEEP = {r: Row(f"iCLIP r = {r}", "iclip", r) for r in RATIOS}
ICLIP = SWEEP[paper.DEFAULT_RATIO]
NO_DEFINITIONS = Row("iCLIP r = 0.5, class names only", "iclip", paper.DEFAULT_RATIO, definitions=False)
UNICL = Row("UniCL r = 0.5", "unicl", paper.DEFAULT_RATIO)
ICLIP_FULL = Row("iCLIP, full class data", "iclip", paper.DEFAULT_RATIO, full=True)
UNICL_FULL = Row("UniCL, full class data", "unicl", paper.DEFAULT_RATIO, full=True)
RATIO_ROWS = [CLIP, *SWEEP.values()]
UNICL_ROWS = [ICLIP, UNICL, NO_DEFINITIONS, ICLIP_FULL, UNICL_FULL]
ROWS = list(dict.fromkeys([*RATIO_ROWS, *UNICL_ROWS]))


def config(row: Row, scale: str = "laptop", seed: int = 0) -> RunConfig:
    """The validated run config of ``row`` (``experiment.make_config``; ``ValueError`` before any compute)."""
    scale_defaults(scale)
    sizes = CHAPTER_SCALES[scale]
    epochs = sizes["unit_epochs"] * (FULL_FACTOR["epochs"] if row.full else 1)
    steps = int(epochs * (sizes["train_size"] // sizes["batch_size"]))
    return experiment.make_config(
        scale,
        method=row.method,
        seed=seed,
        train_size=sizes["train_size"],
        epochs=epochs,
        batch_size=sizes["batch_size"],
        lr=sizes["lr"],
        warmup_steps=max(1, int(sizes["warmup_fraction"] * steps)),
        augmentation="none",
        context_length=CONTEXT_LENGTH,
        task_test=sizes["task_test"],
        retrieval_images=sizes["retrieval_images"],
        eval_tasks=EVAL_TASKS,
        eval_probes=False,
        method_kwargs=row.method_kwargs(sizes["class_images"]),
    )


def resolve_seeds(scale: str, seeds: Any) -> list[int]:
    """A notebook's ``seeds`` parameter: ``None`` is the scale's default (``plan.seeds_parameter``)."""
    scale_defaults(scale)
    return seeds_parameter(scale, seeds, CHAPTER_SCALES[scale]["seeds"])


def check_ratios(ratios: Any) -> list[float]:
    """The ratio sweep's parameter: ``None`` = ``RATIOS``; else a non-empty list of distinct shares in (0, 1)
    (r = 0 is CLIP, always run; r = 1 would leave no image-text pair). ``ValueError`` naming ``ratios``."""
    if ratios is None:
        return list(RATIOS)
    if isinstance(ratios, (int, float)) and not isinstance(ratios, bool):
        ratios = [ratios]
    if not isinstance(ratios, (list, tuple)) or not ratios:
        raise ValueError(f"ratios must be a non-empty list of shares in (0, 1), got {ratios!r}")
    for r in ratios:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < 1:
            raise ValueError(f"ratios must be shares in (0, 1) (class images per batch; 0 is CLIP), got {r!r}")
    if len(set(ratios)) != len(ratios):
        raise ValueError(f"ratios must not repeat, got {ratios!r}")
    return sorted(float(r) for r in ratios)


def sweep_rows(ratios: Sequence[float]) -> list[Row]:
    """CLIP and iCLIP at every ratio (the grid's own rows where they exist)."""
    return [CLIP, *(SWEEP.get(r) or Row(f"iCLIP r = {r}", "iclip", r) for r in ratios)]


def run_rows(rows: Sequence[Row], scale: str, seeds: Sequence[int], progress: bool = True) -> dict[Row, list[dict]]:
    """Every row for every seed (stored runs are loaded, not retrained): ``{row: [record per seed]}``. Every
    config is built, and so validated, before any training."""
    return plan.run_rows(rows, config, scale, seeds, progress)


def stored(row: Row, scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict] | None:
    """The stored records of ``row`` for every seed, or ``None`` if any is missing (or stale)."""
    return plan.stored(row, config, scale, seeds or resolve_seeds(scale, None))


# --------------------------------------------------------------------------------------------------------------
# zero-shot with definition-enhanced prompts (spec 3.2: report both; whether iCLIP evaluates so is unverified)


def prompt_table(results: dict[Row, list[dict]], rows: Sequence[Row]) -> pd.DataFrame:
    """Per row: shapes10 zero-shot (%) with plain and with definition-enhanced prompts, mean ± std over seeds."""
    lines = []
    for row in rows:
        values = [evaluations.prompt_zero_shot(r) for r in results[row]]
        lines.append(
            {
                "row": row.label,
                **{
                    k: f"{100 * np.mean([v[k] for v in values]):.1f} ± "
                    f"{100 * np.std([v[k] for v in values], ddof=1) if len(values) > 1 else 0:.1f}"
                    for k in ("plain", "definitions")
                },
            }
        )
    return pd.DataFrame(lines).set_index("row")


# --------------------------------------------------------------------------------------------------------------
# the chapter's claims, as data (spec section 3.1: I1-I5), judged on stored runs (nothing is trained here)


def _gains(column: int) -> str:
    gains = [paper.table1_gain(r, column) for r in RATIOS]
    return f"+{min(gains):.1f} .. +{max(gains):.1f} pp (Supp Tab. 1, {paper.TABLE1_COLUMNS[column]}, 10-90% IN-21K)"


def _t2(method_a: str, method_b: str, scale_a: str, scale_b: str, column: str) -> tuple[str, float]:
    i = paper.TABLE2_COLUMNS.index(column)
    a, b = paper.TABLE2[method_a, scale_a][i], paper.TABLE2[method_b, scale_b][i]
    return f"{a - b:+.1f} pp (Supp Tab. 2, {column} R@1, {scale_a}: {a} vs {b})", round(a - b, 2) / 100


def _claims() -> list[Claim]:
    sweep = tuple(SWEEP.values())
    grid = tuple((r, row) for r, row in SWEEP.items())
    out = [
        Claim(
            "I1_zs",
            "Every classification share (10-90%) beats CLIP on IN-1K zero-shot at equal samples (Supp A's 'robust "
            "to the ratio: even the worst share beats CLIP' is the same test, counted once)",
            "Supp Tab. 1, Supp A",
            "every",
            IN1K,
            _gains(0),
            notebook="ratio",
            reference=CLIP,
            candidates=sweep,
        ),
        Claim(
            "I1_ir",
            "... and on COCO image retrieval (R@1)",
            "Supp Tab. 1",
            "every",
            COCO_IR,
            _gains(1),
            notebook="ratio",
            reference=CLIP,
            candidates=sweep,
        ),
        Claim(
            "I1_tr",
            "... and on COCO text retrieval (R@1)",
            "Supp Tab. 1",
            "every",
            COCO_TR,
            _gains(2),
            notebook="ratio",
            reference=CLIP,
            candidates=sweep,
        ),
        Claim(
            "I2_zs",
            "The sweet spot is 50:50 (IN-1K zero-shot): best at 0.5 or a neighbour, above 90%",
            "Supp A, Tab. 1",
            "sweep",
            IN1K,
            f"best at 50% ({paper.TABLE1[0.5][0]}); 50% - 90%: {paper.TABLE1[0.5][0] - paper.TABLE1[0.9][0]:+.1f} pp",
            notebook="ratio",
            grid=grid,
            paper_best=0.5,
            endpoint=0.9,
        ),
        Claim(
            "I2_zs_low",
            "... and above 10% (IN-1K zero-shot)",
            "Supp A, Tab. 1",
            "sweep",
            IN1K,
            f"50% - 10%: {paper.TABLE1[0.5][0] - paper.TABLE1[0.1][0]:+.1f} pp",
            notebook="ratio",
            grid=grid,
            paper_best=0.5,
            endpoint=0.1,
        ),
        Claim(
            "I2_ir",
            "The sweet spot is 50:50 on COCO image retrieval too",
            "Supp A, Tab. 1",
            "sweep",
            COCO_IR,
            f"best at 50% ({paper.TABLE1[0.5][1]}); 50% - 90%: {paper.TABLE1[0.5][1] - paper.TABLE1[0.9][1]:+.1f} pp",
            notebook="ratio",
            grid=grid,
            paper_best=0.5,
            endpoint=0.9,
        ),
        Claim(
            "I2_tr",
            "... but text retrieval peaks at 25% IN-21K (Tab. 1 itself)",
            "Supp Tab. 1",
            "sweep",
            COCO_TR,
            f"best at 25% ({paper.TABLE1[0.25][2]} > {paper.TABLE1[0.5][2]} at 50%); 25% - 90%: "
            f"{paper.TABLE1[0.25][2] - paper.TABLE1[0.9][2]:+.1f} pp",
            notebook="ratio",
            grid=grid,
            paper_best=0.25,
            endpoint=0.9,
        ),
    ]
    for scale, (better, reference) in {"half": (ICLIP, UNICL), "full": (ICLIP_FULL, UNICL_FULL)}.items():
        for column, metric in RETRIEVAL_METRICS.items():
            key = column.replace(" ", "_").lower()
            out.append(
                Claim(
                    f"I4_{key}" + ("_full" if scale == "full" else ""),
                    f"iCLIP beats UniCL on {column} R@1 ({scale} class data)",
                    "Supp Tab. 2",
                    "direction",
                    metric,
                    *_t2("iCLIP", "UniCL", scale, scale, column),
                    notebook="unicl",
                    better=better,
                    reference=reference,
                )
            )
    for name, metric in (("coco", "retrieval/mean_recall"), ("flickr", "retrieval2/mean_recall")):
        out.append(
            Claim(
                f"I4_definitions_{name}",
                f"The definitions are why (Supp B): iCLIP with definitions beats iCLIP with class names "
                f"only ({name.upper() if name == 'coco' else 'Flickr'} mean recall)",
                "Supp B",
                "direction",
                metric,
                "no numbers (Supp B credits the gap over UniCL to 'the dictionary enhancement class names')",
                notebook="unicl",
                better=ICLIP,
                reference=NO_DEFINITIONS,
            )
        )
    out.append(
        Claim(
            "I5",
            "About OpenCLIP on average over 12 zero-shot sets, with large per-set swings",
            "Supp Tab. 3",
            "not_run",
            "Kornblith-12 zero-shot",
            f"averages {paper.TABLE3_AVERAGE}",
            notebook="ratio",
            reason="12 real data sets and other training data; the ratio page shows "
            "the per-task zero-shot profile of iCLIP (r = 0.5) minus CLIP, without a verdict",
        )
    )
    return out


CLAIMS: list[Claim] = _claims()
CLAIM_NOTEBOOKS = tuple(dict.fromkeys(c.notebook for c in CLAIMS))
RULES: list[str] = [EVERY_RULE]


def claims_table(results: dict[Row, list[dict]], notebook: str | None = None) -> pd.DataFrame:
    """The claims shown by ``notebook`` (all with ``None``) judged on a notebook's ``{row: records}``."""
    return _claims_table(CLAIMS, results, "iCLIP", notebook)


def claims(scale: str = "laptop", seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Every claim judged on the results store at ``scale`` (the scale's default seeds, or ``seeds``; trains nothing)."""
    return judge_stored(CLAIMS, lambda row: stored(row, scale, seeds), "iCLIP")
