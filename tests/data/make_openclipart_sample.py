"""Make the small real data set the tests train on: ``tests/data/openclipart/`` (committed; run once, by hand).

Open Clip Art Library 0.18 (Debian's ``openclipart-svg``, public-domain dedication): drawings with their authors'
titles and descriptions. This script takes a few hundred of them, renders each once at ``SIZE`` px on white with
cairosvg, and writes what a user of the book would bring:

- ``pairs.csv``: an OpenCLIP CSV (tab-separated: ``filepath``, ``title``, ``summary``): the caption is the author's
  title, then the description where there is one; ``summary`` is the title alone (PyramidCLIP's summary level);
- ``categories/{train,test}/<category>/*.png``: a folder task (ImageFolder layout) of other drawings of the same
  top-level categories, also iCLIP's class data;
- ``unpaired_captions.txt``: captions of drawings outside both, one a line (DIME-FM's unpaired text corpus).

Drawings are chosen by a hash of their path inside the package (the split fixed by content), so the same package
gives the same files. Needs the package unpacked (``apt-get download openclipart-svg && dpkg-deb -x
openclipart-svg_*.deb ROOT``) and ``pip install cairosvg``::

    python tests/data/make_openclipart_sample.py ROOT/usr/share/openclipart/svg
"""

from __future__ import annotations

import csv
import hashlib
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import cairosvg
from PIL import Image

SIZE = 32
CATEGORIES = ("animals", "food", "people", "transportation", "tools", "plants", "office", "geography")
TRAIN_PAIRS_PER_CATEGORY = 64
TASK_TRAIN, TASK_TEST = 24, 12  # drawings per category in the folder task's splits
UNPAIRED_TEXTS = 200
OUT = Path(__file__).resolve().parent / "openclipart"
DC = "http://purl.org/dc/elements/1.1/"


def metadata(svg: Path) -> tuple[str, str]:
    """The drawing's own title and description (its ``cc:Work``), whitespace collapsed; "" where absent."""
    try:  # the Creative Commons namespace differs between files (web.resource.org/cc/, creativecommons.org/ns#)
        work = next((e for e in ET.parse(svg).getroot().iter() if e.tag.endswith("}Work")), None)
    except ET.ParseError:
        return "", ""
    if work is None:
        return "", ""
    text = lambda tag: " ".join((work.findtext(f"{{{DC}}}{tag}", default="") or "").split())
    return text("title"), text("description")


def render(svg: Path) -> Image.Image | None:
    try:
        png = cairosvg.svg2png(url=str(svg), output_width=SIZE, output_height=SIZE, background_color="white")
    except Exception:  # a drawing cairosvg cannot render is skipped, as the book's data would skip it
        return None
    return Image.open(io.BytesIO(png)).convert("RGB")


def main(root: Path) -> None:
    files = sorted(root.rglob("*.svg"), key=lambda p: hashlib.sha1(p.relative_to(root).as_posix().encode()).hexdigest())
    need = {c: TRAIN_PAIRS_PER_CATEGORY + TASK_TRAIN + TASK_TEST for c in CATEGORIES}
    taken: dict[str, list[tuple[Path, Image.Image, str, str]]] = {c: [] for c in CATEGORIES}
    unpaired: list[str] = []
    skipped = 0
    for svg in files:
        category = svg.relative_to(root).parts[0]
        title, description = metadata(svg)
        if not title:
            continue
        same = description.rstrip(". ").lower() == title.rstrip(". ").lower()
        caption = f"{title}. {description}" if description and not same else title
        if category not in taken:
            if len(unpaired) < UNPAIRED_TEXTS:
                unpaired.append(caption)
            continue
        if len(taken[category]) >= need[category]:
            continue
        image = render(svg)
        if image is None:
            skipped += 1
            continue
        taken[category].append((svg, image, caption, title))
    OUT.mkdir(exist_ok=True)
    rows = []
    for category, drawings in taken.items():
        for i, (svg, image, caption, title) in enumerate(drawings):
            name = f"{category}_{svg.stem}.png"
            if i < TRAIN_PAIRS_PER_CATEGORY:
                (OUT / "images").mkdir(exist_ok=True)
                image.save(OUT / "images" / name, optimize=True)
                rows.append({"filepath": f"images/{name}", "title": caption, "summary": title})
            else:
                split = "train" if i < TRAIN_PAIRS_PER_CATEGORY + TASK_TRAIN else "test"
                folder = OUT / "categories" / split / category
                folder.mkdir(parents=True, exist_ok=True)
                image.save(folder / name, optimize=True)
    with open(OUT / "pairs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["filepath", "title", "summary"], delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    (OUT / "unpaired_captions.txt").write_text("\n".join(c.replace("\n", " ") for c in unpaired) + "\n")
    counts = {c: len(d) for c, d in taken.items()}
    print(
        f"{len(rows)} pairs, folder task of {len(CATEGORIES)} categories, {len(unpaired)} unpaired captions; "
        f"per category {counts}; {skipped} drawings did not render"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
