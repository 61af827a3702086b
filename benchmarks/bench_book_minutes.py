"""Where the book's minutes go, by the kind of run: the release's records summed, nothing trained. Prints
``name value`` lines.

    python benchmarks/bench_book_minutes.py

Each record of the release is counted once, by its seconds (``bench_runs.total_seconds``), in one of four kinds:

``claim``      a run a claim reads at the book's length: its config is one of ``Chapter.claim_configs`` for the
               chapter's seeds (the config audit's configs)
``longer``     a training run of a claim's row at 2.5 to 6.5 times its samples (the two-lengths rule's runs): the same
               method, seed and data as a claim's run, differing from it only in the training amount
``untrained``  an evaluation of a network without training (the learning checks' references)
``other``      every other training run: figures, tables and curves that no claim reads

``minutes_<scope>_<kind>``  the minutes of that kind of run in that scope (the core: the baseline, the head to head
                            and the real drawings)
``minutes_<kind>``          over the book, and ``minutes_records`` over every record
``records_<kind>``          how many records of that kind
``untrained_repeated_min``  the untrained networks' minutes spent again on a network already evaluated: a record whose
                            config differs from another's only in fields that training alone reads (the same network
                            and evaluation, evaluated again for another length or recipe)

The records' seconds were measured on the machines that made them (the manifest names each chapter's).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from bench_runs import total_seconds

from vlp_lib import runs
from vlp_lib.book.audit import NOT_COMPARED, flat_fields
from vlp_lib.book.release import RECORDS, RELEASE_DIR, read_record
from vlp_lib.papers import chapters
from vlp_lib.run_config import RunConfig

# a longer run differs from its claim's run in these fields only: its amount, what the amount sets, and a student's
# teacher (DIME-FM's longer students distil the teacher trained as much longer)
AMOUNT_FIELDS = frozenset(
    {"epochs", "train_size", "warmup_steps", "episode_size", "method_kwargs.episodes", "method_kwargs.teacher"}
)
# the two-lengths rule's 3x and 4x, whole episodes rounding them; the head to head's equal-seconds rows at 4x CLIP's
# seconds follow a calibration of their own length, so against their claim's 1x run they train 4.3 to 6.3 times the
# samples (a variant a fifth faster per sample at 4x than at 1x trains a fifth more)
LONGER_FACTORS = (2.5, 6.5)
# fields no untrained network's evaluation reads (training's recipe and amount)
TRAINING_ONLY = frozenset(
    {"epochs", "train_size", "lr", "warmup_steps", "weight_decay", "betas", "eps", "grad_clip_norm", "augmentation"}
    | {"episode_size", "batch_size", "image_lock_fraction"}
)


def claim_configs() -> dict[str, dict[str, Any]]:
    """Every config a claim reads at the book's length, on its chapter's seeds, by config hash."""
    out = {}
    for chapter in chapters():
        for claim in chapter.claim_list():
            claim = chapter.resolved_claim(claim, "laptop")
            for seed in chapter.seeds("laptop"):
                for config in chapter.claim_configs(claim, "laptop", seed).values():
                    record = config.to_dict() if isinstance(config, RunConfig) else dict(config)
                    out[runs.config_hash(record)] = record
    return out


def amount(config: Mapping[str, Any]) -> float:
    return float(config["epochs"]) * float(config["train_size"])


def is_longer(config: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether ``config`` is a claim's run trained ``LONGER_FACTORS`` times as long, and otherwise the same."""
    fields = flat_fields(config)
    for claimed in claims.values():
        if any(claimed[k] != config[k] for k in ("method", "seed", "train_data")):
            continue
        other = flat_fields(claimed)
        differ = {k for k in set(fields) | set(other) if fields.get(k) != other.get(k)} - NOT_COMPARED
        low, high = LONGER_FACTORS
        if differ <= AMOUNT_FIELDS and low <= amount(config) / amount(claimed) <= high:
            return True
    return False


def main() -> None:
    claims = claim_configs()
    minutes: dict[tuple[str, str], float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    untrained_seen: dict[str, int] = defaultdict(int)
    repeated = 0.0
    for kind in ("train", "untrained"):
        for path in sorted((RELEASE_DIR / RECORDS / kind).glob("*.json.gz")):
            record = read_record(path)
            config, seconds = record["config"], total_seconds(record.get("timings", {}))
            if kind == "untrained":
                what = "untrained"
                network = json.dumps({k: v for k, v in config.items() if k not in TRAINING_ONLY}, sort_keys=True)
                untrained_seen[network] += 1
                repeated += seconds if untrained_seen[network] > 1 else 0.0
            elif record["config_hash"] in claims:
                what = "claim"
            else:
                what = "longer" if is_longer(config, claims) else "other"
            minutes[(record.get("scope") or "core", what)] += seconds / 60
            counts[what] += 1
    for (scope, what), value in sorted(minutes.items()):
        print(f"minutes_{scope}_{what} {value:.1f}")
    for what in ("claim", "longer", "untrained", "other"):
        print(f"minutes_{what} {sum(v for (_, w), v in minutes.items() if w == what):.1f}")
        print(f"records_{what} {counts[what]}")
    print(f"minutes_records {sum(minutes.values()):.1f}")
    print(f"untrained_repeated_min {repeated / 60:.1f}")


if __name__ == "__main__":
    main()
