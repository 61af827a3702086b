"""Benchmark of the generated world: rendering speed (1 and 2 processes), cached load, caption lengths.

Prints ``name value`` lines:
    world_images_per_s_1proc   32 px images/s, one process, in memory (no cache)
    world_images_per_s         32 px images/s through ``generate`` with the default workers (2 processes
                               for large n) into a fresh cache, including the cache write
    world_images_per_s_64px_1proc  64 px images/s (the STL-10 stand-in's size), one process
    world_cached_load_s        seconds to return the same world again from the cache (memory-mapped)
    caption_words_p50/p99/max  caption length in words (default knobs)
    caption_fit_context        fraction of captions that fit the tokenizer's default context
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="images for the cached, multi-process run")
    parser.add_argument("--serial-n", type=int, default=5_000, help="images for the one-process run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        os.environ["VLP_CACHE_DIR"] = cache  # fresh cache: nothing is reused from earlier runs
        from vlp_lib.data import vocab, world
        from vlp_lib.data.tokenizer import DEFAULT_CONTEXT_LENGTH

        world.generate(64, 12345, cache=False)  # warm up imports and texture tiles
        t = time.perf_counter()
        serial = world.generate(args.serial_n, 1, cache=False, workers=1, progress=False)
        print(f"world_images_per_s_1proc {args.serial_n / (time.perf_counter() - t):.1f}", flush=True)

        t = time.perf_counter()
        world.generate(args.serial_n // 4, 1, image_size=64, cache=False, workers=1, progress=False)
        print(f"world_images_per_s_64px_1proc {args.serial_n // 4 / (time.perf_counter() - t):.1f}", flush=True)

        t = time.perf_counter()
        big = world.generate(args.n, 2, progress=False)
        print(f"world_images_per_s {args.n / (time.perf_counter() - t):.1f}", flush=True)

        t = time.perf_counter()
        again = world.generate(args.n, 2)
        print(f"world_cached_load_s {time.perf_counter() - t:.3f}", flush=True)
        assert isinstance(again.images, np.memmap) and again.captions == big.captions

        lengths = np.array([len(vocab.words(c)) for c in big.captions + serial.captions])
        print(f"caption_words_p50 {np.percentile(lengths, 50):.0f}")
        print(f"caption_words_p99 {np.percentile(lengths, 99):.0f}")
        print(f"caption_words_max {lengths.max()}")
        print(f"caption_fit_context {(lengths + 2 <= DEFAULT_CONTEXT_LENGTH).mean():.4f}")


if __name__ == "__main__":
    main()
