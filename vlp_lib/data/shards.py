"""The generated world written as real data: WebDataset shards (``write_shards``) or an OpenCLIP CSV of image files
(``write_csv``), so that the real-data path (``vlp_lib.data.real``) is tested end to end on data whose content is
known. With lossless PNG, training on the shards computes what training on the world computes (same pixels, same
captions, same order); JPEG is what real web data looks like.

    python -m vlp_lib.data.shards data/world-shards --n 10240 --image-size 64           # shards, PNG
    python -m vlp_lib.data.shards data/world-csv --n 2048 --csv --image-format jpg      # CSV + JPEG files

then ``train_data="data/world-shards"`` (or ``".../{00000..00009}.tar"``, or ``"data/world-csv/pairs.csv"``) in any
notebook or ``experiment.make_config``.
"""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vlp_lib.config import check_positive_int
from vlp_lib.data import world as world_lib

IMAGE_FORMATS = {"png": "PNG", "jpg": "JPEG"}
JPEG_QUALITY = 95


def _check(n: int, image_format: str) -> None:
    check_positive_int("n", n)
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"image_format must be one of {list(IMAGE_FORMATS)}, got {image_format!r}")


def _encode(image: np.ndarray, image_format: str) -> bytes:
    buffer = io.BytesIO()
    options = {"quality": JPEG_QUALITY} if image_format == "jpg" else {}
    Image.fromarray(image).save(buffer, format=IMAGE_FORMATS[image_format], **options)
    return buffer.getvalue()


def _pairs(n: int, seed: int, image_size: int, knobs: dict[str, Any]) -> Iterator[tuple[np.ndarray, str]]:
    w = world_lib.generate(n, seed=seed, image_size=image_size, **knobs)
    yield from zip(w.images, w.captions)


def write_shards(
    out: str | os.PathLike,
    n: int,
    seed: int = 0,
    image_size: int = 64,
    shard_size: int = 1_000,
    image_format: str = "png",
    **knobs: Any,
) -> list[Path]:
    """``n`` pairs of world ``seed`` (``world.generate``, ``knobs``) as WebDataset shards ``out/00000.tar`` ... of
    ``shard_size`` samples, each ``<key>.<png|jpg>`` + ``<key>.txt`` (webdataset's ``ShardWriter``). Returns the
    shard paths."""
    import webdataset as wds

    _check(n, image_format)
    check_positive_int("shard_size", shard_size)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with wds.ShardWriter(str(out / "%05d.tar"), maxcount=shard_size, verbose=0) as sink:
        for i, (image, caption) in enumerate(_pairs(n, seed, image_size, knobs)):
            sink.write({"__key__": f"{i:08d}", image_format: _encode(image, image_format), "txt": caption})
    return sorted(out.glob("*.tar"))


def write_csv(
    out: str | os.PathLike, n: int, seed: int = 0, image_size: int = 64, image_format: str = "png", **knobs: Any
) -> Path:
    """``n`` pairs of world ``seed`` as image files ``out/images/<i>.<format>`` and an OpenCLIP CSV
    ``out/pairs.csv`` (tab-separated, columns ``filepath`` (relative to the CSV) and ``title``). Returns the CSV."""
    _check(n, image_format)
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    lines = ["filepath\ttitle"]
    for i, (image, caption) in enumerate(_pairs(n, seed, image_size, knobs)):
        name = f"images/{i:08d}.{image_format}"
        (out / name).write_bytes(_encode(image, image_format))
        lines.append(f"{name}\t{caption}")
    csv = out / "pairs.csv"
    csv.write_text("\n".join(lines) + "\n")
    return csv


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.data.shards", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="output folder")
    parser.add_argument("--n", type=int, required=True, help="number of pairs")
    parser.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    parser.add_argument("--image-size", type=int, default=64, help="pixels (default 64)")
    parser.add_argument("--shard-size", type=int, default=1_000, help="samples per shard (default 1,000)")
    parser.add_argument("--image-format", choices=list(IMAGE_FORMATS), default="png")
    parser.add_argument("--csv", action="store_true", help="an OpenCLIP CSV and image files instead of shards")
    args = parser.parse_args(argv)
    if args.csv:
        print(write_csv(args.out, args.n, args.seed, args.image_size, args.image_format))
    else:
        shards = write_shards(args.out, args.n, args.seed, args.image_size, args.shard_size, args.image_format)
        print(f"{len(shards)} shards in {args.out}: {shards[0].name} .. {shards[-1].name}")


if __name__ == "__main__":
    main()
