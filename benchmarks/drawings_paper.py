"""The real-drawings chapter at the papers' sizes (``scale="paper"``: RN50 at 224 px, bf16) on one GPU, for as long
as a time limit allows: every variant on the first seed, then the next seed, CLIP's untrained network first.

    python benchmarks/drawings_paper.py --out drawings_paper.json [--variants clip protoclip_no_teacher ...]
                                        [--seeds 0 1] [--minutes 8] [--commit SHA]
    python benchmarks/drawings_paper.py --out smoke.json --scale smoke   # the same path in seconds, on a CPU

Each run is the chapter's own (``chapter.config(variant, "paper", seed)``, trained and evaluated by
``lineup.records`` / ``experiment.untrained``, stored in the results store as the notebook would store it), so a
GPU that holds the store can then execute ``notebooks/drawings.ipynb -p scale paper`` on the same runs. After every
run the summary is written again to ``--out`` (nothing is lost when the time runs out): the machine, the commit, and
per run its seed, the chapter's metrics (``chapter.metrics_on``), its training and evaluation seconds and the code
fingerprint of its scope. The book's page shows the summary (``chapter.paper_scale_table``).

A run does not start once ``--minutes`` have passed since the start; the variants run in the order given.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from vlp_lib import experiment
from vlp_lib.book import lineup
from vlp_lib.papers.drawings.book import chapter


def summary_of(variant: str, seed: int, record: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """What the page needs of one run's record."""
    metrics = record.get("metrics", {})
    timings = record.get("timings") or {}
    return {
        "variant": variant,
        "seed": seed,
        "metrics": {k: float(metrics[k]) for k in keys if k in metrics},
        "training_seconds": timings.get("training"),
        "evaluation_seconds": timings.get("evaluation"),
        "scope": record.get("scope"),
        "code_fingerprint": record.get("code_fingerprint"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the summary (JSON), written after every run")
    parser.add_argument("--variants", nargs="+", default=chapter.DEFAULT_VARIANTS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--minutes", type=float, default=8.0, help="no run starts after this many minutes")
    parser.add_argument("--scale", default="paper", help="the chapter's scale (smoke: a check of this script)")
    parser.add_argument("--commit", default=None, help="the commit the working tree is (the GPU has no .git)")
    args = parser.parse_args()

    start = time.perf_counter()
    variants = chapter.check_variants(args.variants)
    data = chapter.check_data()
    sizes = chapter.sizes_on(args.scale, data)
    keys = list(chapter.metrics_on(data))
    summary: dict[str, Any] = {
        "scale": args.scale,
        "commit": args.commit,
        "date": time.strftime("%Y-%m-%d"),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "cpu",
        "torch": torch.__version__,
        "sizes": {k: sizes[k] for k in ("model", "image_size", "train_size", "batch_size", "unit_epochs", "lr")},
        "runs": [],
        "not_run": [],
    }
    rows = [chapter.UNTRAINED, *variants]
    order = [(row, seed) for seed in args.seeds for row in rows]
    for row, seed in order:
        if time.perf_counter() - start > 60 * args.minutes:
            summary["not_run"].append({"variant": row, "seed": seed, "reason": f"the {args.minutes:g} minutes ran out"})
            continue
        t0 = time.perf_counter()
        try:
            config = chapter.config(row, args.scale, seed, data, sizes)
            if row == chapter.UNTRAINED:
                record = experiment.untrained(config, verbose=False)
            else:
                found = lineup.records([config], compute=True, progress=False)
                assert found is not None
                record = found[0]
        except Exception as err:  # one variant's failure (a missing input on this machine) costs its row only
            summary["not_run"].append({"variant": row, "seed": seed, "reason": f"{type(err).__name__}: {err}"})
            print(f"{row} seed {seed}: {type(err).__name__}: {err}", flush=True)
            continue
        line = summary_of(row, seed, record, keys)
        line["wall_seconds"] = round(time.perf_counter() - t0, 1)
        summary["runs"].append(line)
        shown = " ".join(f"{k.rsplit('/', 1)[-1]}={100 * v:.1f}" for k, v in line["metrics"].items() if "/" in k)
        print(f"{row} seed {seed}: {line['wall_seconds']} s {shown}", flush=True)
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    summary["minutes"] = round((time.perf_counter() - start) / 60, 2)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"done in {summary['minutes']} min: {len(summary['runs'])} runs, {len(summary['not_run'])} not run")


if __name__ == "__main__":
    main()
