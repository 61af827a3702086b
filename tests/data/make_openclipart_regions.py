"""Make ``tests/data/openclipart/regions.json``: one region per training drawing, the bounding box of its ink (the
pixels that are not white), labelled by the drawing's category. A stand-in for a detector's boxes (PyramidCLIP's ROI
level on the committed real pairs, ``-p regions``): a drawing on a white page is one object, and its ink is where it
is. Run once, by hand, after ``make_openclipart_sample.py``::

    python tests/data/make_openclipart_regions.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parent / "openclipart"
INK = 245  # a pixel darker than this in any channel is ink


def main() -> None:
    regions = {}
    with open(OUT / "pairs.csv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            pixels = np.asarray(Image.open(OUT / row["filepath"]).convert("RGB"))
            ys, xs = np.nonzero((pixels < INK).any(axis=2))
            if len(xs) == 0:
                continue
            category = Path(row["filepath"]).name.split("_", 1)[0]
            box = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
            regions[row["filepath"]] = {"boxes": [box], "labels": [category]}
    lines = [f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(regions.items())]
    (OUT / "regions.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"{len(regions)} regions")


if __name__ == "__main__":
    main()
