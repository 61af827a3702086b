"""Where a typical laptop run's seconds go, for each of the book's four run kinds, and what that makes of the whole
book. Prints ``name value`` lines.

    python benchmarks/bench_runs.py [--kinds clip protoclip pyramidclip dimefm]

Each kind's run is the release's median record of that method on the generated world (by total seconds): its config
is trained and evaluated again here, in a scratch store and checkpoint folder (the world cache is kept: generating it
is not a run's cost), so the same config is timed by today's code and by the release's.

``<kind>_<phase>_s``     seconds of each phase of the run made here (the record's ``timings``: setup, episode start,
                         training, checkpoints, evaluation; and the phases inside them: the waits for a batch,
                         data loading, inside training, and ProtoCLIP's feature extraction, K-Means and PBT inside
                         its episode start)
``<kind>_eval_share``    evaluation's share of the run's seconds (goal: at most 0.15)
``<kind>_eval_<part>_s`` evaluation's parts: the linear probe (its C search), image and text encoding, k-NN,
                         clustering, retrieval's ranking
``<kind>_release_s``, ``<kind>_remade_s``  the release's record of that config and the run made here, whole
``book_minutes_release``    the release's chapters' minutes, summed (its manifest)
``<kind>_training_pace``    the training phase's seconds here over the release's: this machine's pace against the
                            release's machine (the same steps by the same training code; shared 2-core machines of
                            one kind differ by up to 1.8 times, and one machine by 20% from hour to hour)
``book_minutes_projected``  that sum with each record's phases but training scaled by today's seconds over the
                            release's for its kind, divided by the kind's pace (``clip``'s for the methods that are
                            none of the four; a phase no bench run has is unscaled): the book's minutes at the
                            release's pace if everything but the runs' phases stayed as it was. A cache built the
                            first time (a teacher's features, the detector) counts in a run's setup

DIME-FM's student needs its teacher: the teacher's run is trained first, untimed (a chapter trains it once for all
its students).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vlp_lib import experiment, suite
from vlp_lib.book.release import RECORDS, RELEASE_DIR, environment, read_manifest
from vlp_lib.run_config import RunConfig

KINDS = ("clip", "protoclip", "pyramidclip", "dimefm")
# phases a record's timings also give on their own that lie inside another (``train.train``): ProtoCLIP's feature
# extraction, K-Means and PBT inside its episode start, the waits for a batch inside training; not added to a total
NESTED_PHASES = frozenset({"feature_extraction", "kmeans", "pbt", "data_loading"})
# evaluation's parts: the functions of ``vlp_lib.suite`` that do them (their seconds summed over the suite)
EVAL_PARTS = {
    "linear_probe": ("linear_probe",),
    "encode": ("encode_images", "encode_texts"),
    "knn": ("knn_predict",),
    "clustering": ("clustering_scores",),
    "zero_shot": ("zero_shot_accuracy",),
    "retrieval": ("retrieval_recall",),
}


def total_seconds(timings: dict[str, float]) -> float:
    """A run's seconds: its phases, each once (``NESTED_PHASES`` lie inside others)."""
    return sum(seconds for phase, seconds in timings.items() if phase not in NESTED_PHASES)


def release_records(release: Path = RELEASE_DIR) -> list[dict[str, Any]]:
    """Every training record of the release."""
    return [json.loads(gzip.decompress(p.read_bytes())) for p in sorted((release / RECORDS / "train").glob("*.gz"))]


def median_record(records: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """The release's median record (by total seconds) of ``method`` trained on the generated world."""
    found = [r for r in records if r["config"]["method"] == method and r["config"].get("train_data") == "world"]
    if not found:
        raise ValueError(f"the release has no world run of {method}")
    found.sort(key=lambda r: total_seconds(r["timings"]))
    return found[len(found) // 2]


@contextmanager
def timed_parts(seconds: dict[str, float]):
    """Inside the block, the seconds of each of ``EVAL_PARTS``'s functions of ``vlp_lib.suite`` add into
    ``seconds``."""
    saved = {}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - t0

        return timed

    for part, functions in EVAL_PARTS.items():
        for fn in functions:
            saved[fn] = getattr(suite, fn)
            setattr(suite, fn, wrap(part, saved[fn]))
    try:
        yield
    finally:
        for fn, original in saved.items():
            setattr(suite, fn, original)


def run_kind(record: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """The run of ``record``'s config made here: its phases' seconds and evaluation's parts."""
    config = RunConfig.from_dict(record["config"])
    teacher = record["config"]["method_kwargs"].get("teacher")
    if teacher is not None:  # DIME-FM's student: its teacher first, untimed
        experiment.run(RunConfig.from_dict(teacher), progress=False, verbose=False)
    parts: dict[str, float] = defaultdict(float)
    with timed_parts(parts):
        made = experiment.run(config, progress=False, verbose=False)
    return dict(made["timings"]), dict(parts)


def projected_minutes(
    records: list[dict[str, Any]], ratios: dict[str, dict[str, float]], release_minutes: float
) -> float:
    """``release_minutes`` less, for each record, each phase's seconds times (1 - today's / the release's seconds of
    that phase for the record's kind; ``clip``'s for the other methods; 1 where no bench run has the phase)."""
    saved = 0.0
    for r in records:
        kind_ratios = ratios.get(r["config"]["method"], ratios.get("clip", {}))
        saved += sum(
            s * (1 - kind_ratios.get(phase, 1.0)) for phase, s in r["timings"].items() if phase not in NESTED_PHASES
        )
    return release_minutes - saved / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    args = parser.parse_args()
    manifest = read_manifest()
    if manifest is None:
        raise SystemExit("no release (release/manifest.json): the bench times the release's median runs")
    records = release_records()
    ratios: dict[str, dict[str, float]] = {}
    shares = []
    with tempfile.TemporaryDirectory(prefix="vlp-bench-runs-") as scratch:
        dirs = {"VLP_RESULTS_DIR": "results", "VLP_CHECKPOINT_DIR": "checkpoints"}
        with environment(**{key: os.path.join(scratch, sub) for key, sub in dirs.items()}):
            for kind in args.kinds:
                record = median_record(records, kind)
                timings, parts = run_kind(record)
                total = total_seconds(timings)
                for phase, seconds in sorted(timings.items()):
                    print(f"{kind}_{phase}_s {seconds:.2f}")
                for part, seconds in parts.items():
                    print(f"{kind}_eval_{part}_s {seconds:.2f}")
                share = timings.get("evaluation", 0.0) / total
                shares.append(share)
                print(f"{kind}_eval_share {share:.3f}")
                print(f"{kind}_release_s {total_seconds(record['timings']):.1f}")
                print(f"{kind}_remade_s {total:.1f}")
                # this machine's pace against the release's, read from the training phase (the same steps by the
                # same code): the other phases' ratios are divided by it, so the projection is at the release's pace
                pace = timings["training"] / record["timings"]["training"]
                print(f"{kind}_training_pace {pace:.3f}")
                ratios[kind] = {
                    phase: timings[phase] / seconds / pace
                    for phase, seconds in record["timings"].items()
                    if phase in timings and seconds > 0 and phase != "training"
                }
    release_minutes = sum(m for entry in manifest["chapters"].values() for m in entry["minutes"].values())
    print(f"eval_share_median {statistics.median(shares):.3f}")
    print(f"book_minutes_release {release_minutes:.1f}")
    print(f"book_minutes_projected {projected_minutes(records, ratios, release_minutes):.1f}")


if __name__ == "__main__":
    main()
