"""`make bench`: run every benchmark script, print their `name value` lines, and collect them in
bench_results.json (git-ignored)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (script, arguments): sized so that the whole of `make bench` takes about 30 minutes on 2 cores
SCRIPTS = [
    ("bench_recipe.py", ["--seconds", "60"]),  # recipe_gain, train_samples_per_s, mfu of the laptop recipe
    ("bench_overheads.py", []),  # trainer_overhead, protoclip_overhead, kmeans_share
    ("bench_cluster.py", ["--skip-full"]),  # pbt_speedup at N = 200,000, K = 20,000; seeding quality
    ("bench_augment.py", []),
    ("bench_train.py", ["--pairs", "1024", "--presets", "rn-tiny"]),
    ("bench_world.py", []),
    ("bench_scale.py", ["--steps", "10"]),  # samples_per_s and mfu of the whole trainer step (any device)
    ("bench_real.py", ["--steps", "32", "--repeats", "5"]),  # real_over_world: the committed CSV against the world
    ("bench_openclip.py", ["--steps", "30", "--repeats", "5"]),  # trainer_over_openclip: open_clip_train's loop
    # each run kind's phases and evaluation's share; the book's projected minutes (about 5 minutes: DIME-FM's
    # student trains its teacher first)
    ("bench_runs.py", []),
    # what evaluating less would save and change: a learned run of CLIP and of ProtoCLIP trained, their suites timed six
    # ways (about 8 minutes)
    ("bench_eval_cuts.py", []),
    ("bench_book_minutes.py", []),
    # CLIP's equal-samples run of the head to head timed first, after itself and after two variants (about 4 minutes)
    ("bench_run_order.py", []),  # the release's minutes by the kind of run (a claim's, longer, untrained, other)
]
HEADLINE = (
    "recipe_gain",
    "train_samples_per_s",
    "mfu",
    "trainer_overhead",
    "protoclip_overhead",
    "kmeans_share",
    "pbt_speedup",
    "real_over_world",
    "trainer_over_openclip",
    "eval_share_median",
    "book_minutes_projected",
    "minutes_claim",
    "minutes_longer",
)


def main() -> None:
    results: dict[str, float | str] = {}
    for script, arguments in SCRIPTS:
        out = subprocess.run(
            [sys.executable, str(HERE / script), *arguments], capture_output=True, text=True, check=True
        )
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                print(line, flush=True)
                try:
                    results[parts[0]] = float(parts[1])
                except ValueError:
                    results[parts[0]] = parts[1]
    (HERE.parent / "bench_results.json").write_text(json.dumps(results, indent=1))
    print(
        "--- headline figures (goals: recipe_gain >= 2; trainer_overhead <= 1.05, protoclip_overhead <= 1.25, "
        "kmeans_share <= 0.03, pbt_speedup >= 50, eval_share_median <= 0.15)"
    )
    for name in HEADLINE:
        print(f"{name} {results.get(name, 'missing')}")


if __name__ == "__main__":
    main()
