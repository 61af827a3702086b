"""Does a run's place in a seed's turn change its seconds? Times the head to head's equal-samples CLIP run (training
only, counted as a run's seconds: ``lineup.run_seconds``) in one process: first, right after itself, and right after
each of the variants given (their equal-samples runs), in turn, ``--rounds`` times. Nothing is stored. Prints
``name value`` lines.

    python benchmarks/bench_run_order.py [--rounds 2] [--variants tp_postag pyramidclip] [--seed 0]

``clip_first_s``          CLIP's seconds as the first training of the process
``clip_after_clip_s``     CLIP's seconds right after a CLIP run (the median over the rounds)
``clip_after_<variant>_s``  CLIP's seconds right after that variant's run (the median over the rounds)
``<variant>_s``           the variant's own seconds (the median over the rounds)
``after_<variant>_over_after_clip``  the ratio of the two medians: above 1, a run after that variant is slower

Why: the equal-seconds rule reads a variant's seconds over CLIP's beside them, and in the chapter CLIP runs first in
each seed's turn, after the last variant of the seed before. Its runs' seconds moved between sessions by more than the
rule's ±5% while the variants' at the same configs did not (the engineering notes).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vlp_lib.papers.headtohead.book import chapter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=["tp_postag", "pyramidclip"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", default="laptop")
    args = parser.parse_args()
    if args.rounds < 1 or chapter.CLIP in args.variants:
        raise SystemExit("--rounds must be at least 1 and --variants must not name CLIP")
    variants = [v for v in chapter.check_variants(args.variants) if v != chapter.CLIP]  # it adds CLIP
    configs = {
        v: chapter.config(chapter.resolve(chapter.Row(v), args.scale, None), args.scale, args.seed)
        for v in [chapter.CLIP, *variants]
    }
    started = time.perf_counter()
    seconds: dict[str, list[float]] = {"clip_first": [], "clip_after_clip": []}
    seconds["clip_first"].append(chapter._timed_training(configs[chapter.CLIP]))
    for _ in range(args.rounds):
        seconds["clip_after_clip"].append(chapter._timed_training(configs[chapter.CLIP]))
        for v in variants:
            seconds.setdefault(v, []).append(chapter._timed_training(configs[v]))
            seconds.setdefault(f"clip_after_{v}", []).append(chapter._timed_training(configs[chapter.CLIP]))
            # back to a CLIP run after a CLIP run before the next variant
            seconds["clip_after_clip"].append(chapter._timed_training(configs[chapter.CLIP]))
    medians = {name: float(np.median(values)) for name, values in seconds.items()}
    for name, value in medians.items():
        print(f"{name}_s {value:.2f}")
    for v in variants:
        print(f"after_{v}_over_after_clip {medians[f'clip_after_{v}'] / medians['clip_after_clip']:.3f}")
    print(f"bench_seconds {time.perf_counter() - started:.0f}")


if __name__ == "__main__":
    main()
