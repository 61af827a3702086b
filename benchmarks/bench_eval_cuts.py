"""What evaluating less would buy and cost: a release's world run of a kind that has learned, trained again, then its
evaluation suite timed again with the linear probe's settings changed. Prints ``name value`` lines.

    python benchmarks/bench_eval_cuts.py [--kinds clip protoclip]

Evaluation is the largest phase after training (``bench_runs.py``), and the linear probe's C search the largest part
of it. The ways to evaluate less each change numbers, so they are measured here before any is chosen:

``<kind>_gain_pp``               the studied record's avg3 linear-probe gain over its untrained network in the release,
                                 in pp: the run studied is the median (by seconds) of the kind's world records that
                                 gained at least ``LEARNED`` over their untrained networks; where none did, the one
                                 that gained most (a cut's cost on a network that has not learned is a cost on random
                                 features, not on what training added)
``<kind>_training_s``            seconds of the run's training (its episode starts included), as the run made here took
``<kind>_<cut>_s``               seconds of the whole suite (every task the record evaluates) with the cut
``<kind>_<cut>_share``           evaluation's share of the run's seconds with the cut: the suite's seconds over them
                                 and the run's other phases (``bench_runs.total_seconds`` less its evaluation)
``<kind>_<cut>_<metric>``        the suite's ``avg3`` accuracies with the cut (linear probe, k-NN, zero-shot)
``<kind>_<cut>_linear_changed``  how many of the suite's linear-probe accuracies (each task's and their averages)
                                 differ from the book's setting

Cuts: ``book`` (the run's own images per task, C in 1e-3 .. 1e2: the release's), ``c_ends`` (C in 1e-2 .. 1e1),
``c_low`` (C in 1e-2 .. 1), ``half`` (half of the training and of the test images), ``half_c_ends`` (both),
``train_half`` (half of the training images, C in 1e-2 .. 1e1). The suite is evaluated once before the timings, so
that every cut finds the tasks' images built (a task's images are generated once per process).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from typing import Any

from bench_runs import release_records, total_seconds

from vlp_lib import experiment, suite
from vlp_lib.book import lineup
from vlp_lib.book.release import RECORDS, RELEASE_DIR, environment, read_record
from vlp_lib.eval import probes
from vlp_lib.run_config import RunConfig

WIDE = tuple(probes.DEFAULT_CS)
ENDS = (0.01, 0.1, 1.0, 10.0)
LOW = (0.01, 0.1, 1.0)
CUTS = {  # cut -> (C grid, share of the training images kept, share of the test images kept)
    "book": (WIDE, 1.0, 1.0),
    "c_ends": (ENDS, 1.0, 1.0),
    "c_low": (LOW, 1.0, 1.0),
    "half": (WIDE, 0.5, 0.5),
    "half_c_ends": (ENDS, 0.5, 0.5),
    "train_half": (ENDS, 0.5, 1.0),
}
METRICS = ("avg3/linear", "avg3/knn", "avg3/zeroshot_top1")
LEARNED = 0.05  # avg3 linear-probe gain over the untrained network that counts as learned


def gain(record: dict[str, Any]) -> float | None:
    """``record``'s avg3 linear-probe gain over its untrained network in the release (the record of the same config),
    or ``None`` where the release has no such network."""
    path = RELEASE_DIR / RECORDS / "untrained" / f"{record['config_hash']}.json.gz"
    if not path.exists() or "avg3/linear" not in record["metrics"]:
        return None
    untrained = read_record(path)["metrics"].get("avg3/linear")
    return None if untrained is None else record["metrics"]["avg3/linear"] - untrained


def studied_record(records: list[dict[str, Any]], kind: str) -> tuple[dict[str, Any], float]:
    """The run the cuts are measured on, and its gain (``<kind>_gain_pp`` in the module docstring)."""
    gains = [
        (g, r)
        for r in records
        if r["config"]["method"] == kind and r["config"].get("train_data") == "world" and (g := gain(r)) is not None
    ]
    if not gains:
        raise ValueError(f"the release has no world run of {kind} with its untrained network")
    learned = sorted((x for x in gains if x[0] >= LEARNED), key=lambda x: total_seconds(x[1]["timings"]))
    g, record = learned[len(learned) // 2] if learned else max(gains, key=lambda x: x[0])
    return record, g


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=["clip", "protoclip"], choices=["clip", "protoclip"])
    args = parser.parse_args()
    records = release_records()
    with tempfile.TemporaryDirectory(prefix="vlp-bench-cuts-") as scratch:
        dirs = {"VLP_RESULTS_DIR": "results", "VLP_CHECKPOINT_DIR": "checkpoints"}
        with environment(**{key: os.path.join(scratch, sub) for key, sub in dirs.items()}):
            for kind in args.kinds:
                record, learned = studied_record(records, kind)
                print(f"{kind}_gain_pp {100 * learned:.1f}")
                config = RunConfig.from_dict(record["config"])
                made = experiment.run(config, progress=False, verbose=False)
                rest = total_seconds(made["timings"]) - made["timings"]["evaluation"]
                print(f"{kind}_training_s {lineup.run_seconds(made):.2f}")
                model, tokenizer = experiment.load_trained(made)
                model.eval()
                suite.evaluate_suite(model, tokenizer, config.eval)  # every task's images built before the timings
                book: dict[str, float] = {}
                for cut, (grid, train_share, test_share) in CUTS.items():
                    probes.DEFAULT_CS = grid
                    settings = dataclasses.replace(
                        config.eval,
                        task_train=int(config.eval.task_train * train_share),
                        task_test=int(config.eval.task_test * test_share),
                    )
                    started = time.perf_counter()
                    metrics = suite.evaluate_suite(model, tokenizer, settings)
                    seconds = time.perf_counter() - started
                    print(f"{kind}_{cut}_s {seconds:.2f}")
                    print(f"{kind}_{cut}_share {seconds / (rest + seconds):.3f}")
                    for metric in METRICS:
                        if metric in metrics:
                            print(f"{kind}_{cut}_{metric.replace('/', '_')} {metrics[metric]:.4f}")
                    linear = {k: v for k, v in metrics.items() if k.endswith("/linear")}
                    book = book or linear
                    print(f"{kind}_{cut}_linear_changed {sum(linear[k] != book.get(k) for k in linear)}")
                probes.DEFAULT_CS = WIDE


if __name__ == "__main__":
    main()
