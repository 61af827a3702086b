"""Open Clip Art: real, human-made image-text pairs for the book, built from a Debian package in one command.

    python -m vlp_lib.data.openclipart                 # 64 px, into data/openclipart/64px (make openclipart)
    python -m vlp_lib.data.openclipart --size 32 64    # both sizes; --deb PATH on a machine without apt

The Open Clip Art Library 0.18 (Debian's ``openclipart-svg``, public-domain dedication): 8,121 SVG files (663 of
them links to a drawing filed in two places, and more exact copies of one file under other paths: each drawing kept
once), each with its author's title (8,059 have one), a description (1,708) and keywords, filed in 22 category
folders with sub-folders (``animals/dinosaurs``, ``food/desserts``, ``transportation/boating`` ...). Its captions are
as noisy as web captions: titles in Italian, author names as keywords, a "Virus" described as "A ladybug".

What ``build`` writes under ``data_dir()/openclipart/<size>px/``:

- ``images/``: every drawing rendered once at ``size`` px (cairosvg on white, RGB PNG: the longer side ``size``
  px, the aspect ratio kept, centred on a white square); a drawing that does not render, or has no title, is skipped
  and counted;
- ``pairs.csv``: the training pairs, an OpenCLIP CSV (tab-separated; ``filepath``, ``title`` = the caption, and
  ``summary`` = the title alone, PyramidCLIP's summary level); ``pairs_<variant>.csv`` for each caption variant
  (``CAPTIONS``: the title; the title and the description, the default; the keywords);
- ``test_pairs.csv``: the held-out pairs (same columns), for retrieval;
- ``category/{train,test}/<category>/`` and ``subcategory/{train,test}/<category>.<sub>/`` (a class folder keeps
  the drawings' folders below it: two sub-folders may hold drawings of one name): image-folder tasks
  (``folder:PATH``) of the categories, and of the sub-folders, with at least ``MIN_CLASS`` drawings (``unsorted``
  and ``special`` are not categories of content: ``NOT_CATEGORIES``); their train split is the training pairs'
  images, their test split the held-out ones;
- ``manifest.json``: the counts, the drawings skipped and why, and the digests.

**The split is fixed by content**: a drawing is held out when the first 8 hex digits of the SHA-256 of its
drawing (``drawing_digest``: the file without its metadata), read as a number, fall below ``TEST_SHARE`` of their
range, so every machine splits alike and a drawing never changes sides; a file whose drawing an earlier file (in path
order) already has is a copy of that drawing filed in another folder, and is kept once (a crawfish under ``animals/`` and ``food/`` would otherwise be a training pair and
a held-out one at once, with two category labels). **The same data set on every machine**: the package is pinned by version and SHA-256
(``PACKAGE``), and the result's digests are in the code: the text side (every caption, path and split: ``DIGESTS``)
must match, and so must each drawing's pixels (``RENDERS``). Pixels, not PNG bytes: the compression is not what a model reads.
**The pixels are a function of pinned inputs**: the drawing, cairosvg and cairo, and the fonts of the 293 drawings
with text, which cairo finds through fontconfig: by default the system's fonts, so that a fresh Debian 12 with 22
fonts drew other text than this book's machine with 38. The renderer reads a fontconfig file of its own
(``font_config``): the DejaVu fonts of the matplotlib wheel, checked by SHA-256 (``FONTS``), and nothing of the
system's. A drawing's digest is in the manifest and the book's in ``RENDERS``: a machine that renders other pixels
is told which drawings differ (``--accept-other-renders`` keeps its images, and the manifest says so).

Rendering is timed apart and cached: ``build`` renders each size once and then returns the folder.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from vlp_lib.data.debian import Package, unpack
from vlp_lib.files import file_sha256
from vlp_lib.paths import cache_dir, data_dir

COMMAND = "python -m vlp_lib.data.openclipart"
PACKAGE = Package(
    name="openclipart-svg",
    version="1:0.18+dfsg-19",
    sha256="989712d90d57dfa3230049f553bb43b76c30ee4d4b8c5f6e106e33f7db5cbdc5",
    command=COMMAND,
)
SVG_DIR = Path("usr/share/openclipart/svg")
CAPTIONS = ("title", "title_description", "keywords")
DEFAULT_CAPTION = "title_description"  # the author's own words about the drawing, as an alt-text would be
TEST_SHARE = 0.3
MIN_CLASS = 40  # drawings (both splits) for a category or sub-folder to be a class of a task
NOT_CATEGORIES = frozenset({"unsorted", "special"})
SIZES = (32, 64)
DEFAULT_SIZE = 64
FIELDS = ("filepath", "title", "summary")
DC = "http://purl.org/dc/elements/1.1/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
# The text digest of the result (``Built.digests``: every caption, path and split), as the book built it (2026-11-27:
# 8,121 files, 663 links, 444 copies of a drawing filed elsewhere, 60 without a title, 25 that do not render: 4,843
# training pairs and 2,086 held out, 14 categories and 22 sub-categories of at least 40 drawings); the images' are
# each drawing's (``RENDERS``). A size not listed is built unchecked.
DIGESTS: dict[int, dict[str, str]] = {
    32: {"text": "0669811b95cab03c0ae915900d3ac51fb7467f3da8fb820a26c7ea87c9b84629"},
    64: {"text": "0669811b95cab03c0ae915900d3ac51fb7467f3da8fb820a26c7ea87c9b84629"},
}


@dataclass(frozen=True)
class Drawing:
    """One drawing's metadata: its path inside the package, its category and sub-folder, split and captions."""

    path: str
    category: str
    subcategory: str | None
    split: str
    title: str
    description: str
    keywords: tuple[str, ...]

    def caption(self, variant: str = DEFAULT_CAPTION) -> str:
        """The drawing's caption in ``variant`` (``CAPTIONS``): the title; the title and the description (the title
        alone when the description is empty or repeats it); the keywords, comma-separated (the title where there
        are none)."""
        if variant == "title":
            return self.title
        if variant == "title_description":
            same = self.description.rstrip(". ").lower() == self.title.rstrip(". ").lower()
            return f"{self.title}. {self.description}" if self.description and not same else self.title
        if variant == "keywords":
            return ", ".join(self.keywords) or self.title
        raise ValueError(f"caption must be one of {list(CAPTIONS)}, got {variant!r}")

    @property
    def image(self) -> str:
        return "images/" + self.path.removesuffix(".svg") + ".png"


def _text(element: ET.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None and element.text else ""


def read_metadata(svg: Path) -> tuple[str, str, tuple[str, ...]]:
    """The drawing's own title, description and keywords (its ``cc:Work``: the Creative Commons namespace differs
    between files), whitespace collapsed; empty where absent or where the file does not parse."""
    try:
        work = next((e for e in ET.parse(svg).getroot().iter() if e.tag.endswith("}Work")), None)
    except ET.ParseError:
        return "", "", ()
    if work is None:
        return "", "", ()
    keywords = tuple(k for k in (_text(li) for li in work.iterfind(f"{{{DC}}}subject//{{{RDF}}}li")) if k)
    return _text(work.find(f"{{{DC}}}title")), _text(work.find(f"{{{DC}}}description")), keywords


def drawing_digest(svg: Path) -> str:
    """SHA-256 (hex) of the drawing itself: its XML canonicalised (C14N 2.0, text stripped) without its ``metadata``
    elements, so that two files of one drawing whose metadata differ (the copy filed under ``food/`` lists its
    keywords in another order than the one under ``animals/``) are one drawing; the file's bytes where it does not
    parse."""
    data = svg.read_bytes()
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return hashlib.sha256(data).hexdigest()
    for parent in list(root.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rpartition("}")[2] == "metadata":
                parent.remove(child)
    return hashlib.sha256(ET.canonicalize(ET.tostring(root, encoding="unicode"), strip_text=True).encode()).hexdigest()


def split_of(digest: str) -> str:
    """``"test"`` for a held-out drawing, else ``"train"``: by ``digest``, the SHA-256 (hex) of its file's bytes."""
    return "test" if int(digest[:8], 16) < TEST_SHARE * 16**8 else "train"


def drawings(svg_root: Path) -> tuple[list[Drawing], Counter[str]]:
    """Every drawing under ``svg_root`` with a title, sorted by path, and the count of those skipped, by reason."""
    out: list[Drawing] = []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for svg in sorted(svg_root.rglob("*.svg")):
        rel = svg.relative_to(svg_root).as_posix()
        parts = rel.split("/")
        if len(parts) < 2:
            skipped["not in a category folder"] += 1
            continue
        if svg.is_symlink():  # Debian links a file that is filed twice to its first copy: one drawing, kept once
            skipped["a link to another drawing"] += 1
            continue
        digest = drawing_digest(svg)
        if digest in seen:  # the same drawing filed again under another name: kept once
            skipped["a copy of another drawing"] += 1
            continue
        seen.add(digest)
        title, description, keywords = read_metadata(svg)
        if not title:
            skipped["no title"] += 1
            continue
        sub = parts[1] if len(parts) > 2 else None
        out.append(Drawing(rel, parts[0], sub, split_of(digest), title, description, keywords))
    return out, skipped


# The fonts a drawing's text is drawn with (``font_config``): the DejaVu families of matplotlib 3.11.2's wheel
# (``mpl-data/fonts/ttf``), each checked by SHA-256 before the renderer may use it
FONT_PACKAGE = "matplotlib==3.11.2"
FONTS = {
    "DejaVuSans.ttf": "3fdf69cabf06049ea70a00b5919340e2ce1e6d02b0cc3c4b44fb6801bd1e0d22",
    "DejaVuSans-Bold.ttf": "b184b89e3c1075f22f6b71575b6fc20d4972b3cfd3b23322ca6fd596dcaef167",
    "DejaVuSans-Oblique.ttf": "ccdf74b350f11fd3dd5774de50e5e6346a1a5da1f5b7d5fb83590665e97a5213",
    "DejaVuSans-BoldOblique.ttf": "6edf0283160186af451cbee71e7b845f2e4cabf264bb992ce668c83c25465e6f",
    "DejaVuSerif.ttf": "107244956e9962b9e96faccdc551825e0ae0898ae13737133e1b921a2fd35ffa",
    "DejaVuSerif-Bold.ttf": "c3753f2ed6bc673f15846dc45addbeb3b9c872f32fb18fd53a21f1bef1ed7676",
    "DejaVuSerif-Italic.ttf": "3e7994fbc54fa10ce3352a42d548fadd7d9cadb69cb1109bc9d960f6dac57f04",
    "DejaVuSerif-BoldItalic.ttf": "d93efec7a9d2e826768d1a2ee95b95870e15e29599a84f3484af1de1cec2e181",
    "DejaVuSansMono.ttf": "602ec86b8948cfcd956482fe64f94c36c867770149ef2f791d4613f443bcecb3",
    "DejaVuSansMono-Bold.ttf": "baada9a5172fe20886251aff0433fc38461912d5daf07287e7bee56620a8da96",
    "DejaVuSansMono-Oblique.ttf": "28052813f7a709fc89f52d192dc995ef4f0fdc5c3d7b73a49d6849b1916d0cd0",
    "DejaVuSansMono-BoldOblique.ttf": "a69081c15c76c827e0a27a5a7f5c74b6135c843499955495ffa8c20d3a98288b",
}
# Only the fonts above, every family request resolved among them (the generic families by name), and the rendering
# options fixed rather than read from the system's configuration
FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>{fonts}</dir>
  <cachedir>{cache}</cachedir>
  <match target="font">
    <edit name="antialias" mode="assign"><bool>true</bool></edit>
    <edit name="hinting" mode="assign"><bool>false</bool></edit>
    <edit name="hintstyle" mode="assign"><const>hintnone</const></edit>
    <edit name="rgba" mode="assign"><const>none</const></edit>
    <edit name="embeddedbitmap" mode="assign"><bool>false</bool></edit>
  </match>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Serif</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans Mono</family></prefer></alias>
</fontconfig>
"""


def font_config(cache: Path | None = None) -> Path:
    """The renderer's fontconfig file (``FONTCONFIG``), written once under ``cache`` (default ``cache_dir()``) with a
    copy of each of ``FONTS``; ``RuntimeError`` naming the package when a font is missing or not the book's."""
    import matplotlib

    source = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    folder = (cache or cache_dir()) / "openclipart_fonts"
    fonts = folder / "ttf"
    fonts.mkdir(parents=True, exist_ok=True)
    for name, sha in FONTS.items():
        target = fonts / name
        if target.exists() and file_sha256(target) == sha:
            continue
        if not (source / name).exists() or file_sha256(source / name) != sha:
            raise RuntimeError(
                f"the drawings' text is drawn with {name} of {FONT_PACKAGE}, and {source / name} is missing or "
                f"another file: `pip install {FONT_PACKAGE}`"
            )
        shutil.copyfile(source / name, target)
    path = folder / "fonts.conf"
    text = FONTCONFIG.format(fonts=fonts, cache=folder / "cache")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def pin_fonts() -> None:
    """Point this process's fontconfig (and its children's) at ``font_config``: called before cairo draws any text,
    which is when fontconfig reads its configuration."""
    os.environ["FONTCONFIG_FILE"] = str(font_config())


def _cairosvg() -> Any:
    """cairosvg (pinned in pyproject), imported where it is used: ``RuntimeError`` naming what to install when it or
    the system's cairo library it draws with is missing (cairocffi raises ``OSError`` then)."""
    try:
        import cairosvg
    except (ImportError, OSError) as err:
        raise RuntimeError(
            f"rendering the drawings needs cairosvg and the system's cairo library ({err}): `pip install "
            "cairosvg==2.8.2` (make venv does) and `apt-get install libcairo2`"
        ) from err
    return cairosvg


def render(svg: Path, size: int) -> bytes | None:
    """The drawing as a ``size`` px RGB PNG: its longer side ``size`` px, its aspect ratio kept, centred on white;
    ``None`` if it does not render."""
    from PIL import Image

    pin_fonts()
    cairosvg = _cairosvg()

    def draw(**side: int) -> Any:
        png = cairosvg.svg2png(url=str(svg), background_color="white", **side)
        return Image.open(io.BytesIO(png)).convert("RGB")

    try:
        image = draw(output_width=size)
        if image.height > size:
            image = draw(output_height=size)
    except Exception:  # noqa: BLE001 - any drawing cairosvg cannot draw is skipped and counted
        return None
    if image.width < 1 or image.height < 1 or image.width > size or image.height > size:
        return None
    canvas = Image.new("RGB", (size, size), "white")
    canvas.paste(image, ((size - image.width) // 2, (size - image.height) // 2))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _render_one(job: tuple[str, str, int]) -> tuple[str, bytes | None]:
    path, svg, size = job
    return path, render(Path(svg), size)


def pixel_digest(png: bytes) -> str:
    """A rendered drawing's digest: SHA-256 (hex, the first ``DIGEST_CHARS``) of its RGB pixels and size."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return hashlib.sha256(f"{image.width}x{image.height}".encode() + image.tobytes()).hexdigest()[:DIGEST_CHARS]


DIGEST_CHARS = 16
RENDERS = Path(__file__).with_name("openclipart_renders.json")  # the book's digest of each drawing, per size


def book_renders(size: int) -> dict[str, str]:
    """``{drawing path: pixel_digest}`` as the book rendered them at ``size`` (empty where it did not)."""
    if not RENDERS.exists():
        return {}
    return dict(json.loads(RENDERS.read_text()).get(str(size), {}))


def record_renders(result: Built) -> Path:
    """Write ``result``'s digest of each drawing into ``RENDERS`` as the book's, for its size (maintainers: after a
    change of renderer, with the chapter re-made on the new renders)."""
    book = json.loads(RENDERS.read_text()) if RENDERS.exists() else {}
    book[str(result.manifest["size"])] = dict(sorted(result.manifest["renders"].items()))
    RENDERS.write_text(json.dumps(book, indent=0, sort_keys=True) + "\n")
    return RENDERS


def render_differences(digests: dict[str, str], book: dict[str, str]) -> list[str]:
    """The drawings whose pixels differ from the book's (``book_renders``; rendered here and not there, or the
    reverse, included), in path order."""
    return sorted(p for p in set(book) | set(digests) if book.get(p) != digests.get(p))


def classes(chosen: Iterable[Drawing], key: str) -> dict[str, list[Drawing]]:
    """The classes of a task (``key`` "category" or "subcategory") with at least ``MIN_CLASS`` drawings."""
    groups: dict[str, list[Drawing]] = {}
    for d in chosen:
        if d.category in NOT_CATEGORIES or (key == "subcategory" and d.subcategory is None):
            continue
        name = d.category if key == "category" else f"{d.category}.{d.subcategory}"
        groups.setdefault(name, []).append(d)
    return {name: group for name, group in sorted(groups.items()) if len(group) >= MIN_CLASS}


def _write_csv(path: Path, rows: Sequence[Drawing], variant: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(FIELDS)
        writer.writerows((d.image, d.caption(variant), d.title) for d in rows)


def _digest(lines: Iterable[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class Built:
    """A built data set: its folder, counts and digests (``manifest.json``)."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def digests(self) -> dict[str, str]:
        return dict(self.manifest["digests"])


def folder_for(size: int, root: Path | None = None) -> Path:
    return (root or data_dir() / "openclipart") / f"{size}px"


def check_size(size: Any) -> int:
    if not isinstance(size, int) or isinstance(size, bool) or size < 8:
        raise ValueError(f"size must be an int of at least 8 px, got {size!r}")
    return size


def built(size: int = DEFAULT_SIZE, root: Path | None = None) -> Built:
    """The data set at ``size``, built before; ``ValueError`` naming the command that builds it."""
    folder = folder_for(check_size(size), root)
    if not (folder / "manifest.json").exists():
        raise ValueError(
            f"Open Clip Art at {size} px is not built in {folder}: build it with `{COMMAND} --size {size}` "
            "(or `make openclipart`)"
        )
    return Built(folder, json.loads((folder / "manifest.json").read_text()))


def build(
    size: int = DEFAULT_SIZE,
    deb: str | os.PathLike | None = None,
    svg_root: str | os.PathLike | None = None,
    root: Path | None = None,
    workers: int | None = None,
    accept_other_renders: bool = False,
    progress: bool = True,
) -> Built:
    """Build (or return, when built) the data set at ``size`` px (module docstring): from ``svg_root`` (an unpacked
    package's ``usr/share/openclipart/svg``), else ``deb``, else the package ``apt-get download`` fetches.
    ``workers`` processes render (default: every core). ``ValueError`` when the result's text digest is not the
    book's, or its images' digest is not and ``accept_other_renders`` is false."""
    size = check_size(size)
    folder = folder_for(size, root)
    if (folder / "manifest.json").exists():
        return built(size, root)
    pin_fonts()  # before the renderer and its processes exist: they read fontconfig's file when they first draw text
    _cairosvg()  # before the package is fetched: a machine without cairo learns it first
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(svg_root) if svg_root is not None else unpack(PACKAGE, Path(tmp), deb) / SVG_DIR
        if not source.is_dir():
            raise ValueError(f"svg_root: {source} is not a folder of Open Clip Art's drawings")
        found, skipped = drawings(source)
        total = len(found) + sum(skipped.values())
        staging = folder.with_name(f".{folder.name}.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        started = time.perf_counter()
        images: dict[str, bytes] = {}
        jobs = [(d.path, str(source / d.path), size) for d in found]
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            done = pool.map(_render_one, jobs, chunksize=16)
            for path, png in tqdm(done, total=len(jobs), desc=f"rendering at {size} px", disable=not progress):
                if png is None:
                    skipped["does not render"] += 1
                else:
                    images[path] = png
        seconds = time.perf_counter() - started
    chosen = [d for d in found if d.path in images]
    for d in chosen:
        target = staging / d.image
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(images[d.path])
    train = [d for d in chosen if d.split == "train"]
    test = [d for d in chosen if d.split == "test"]
    for variant in CAPTIONS:
        _write_csv(staging / f"pairs_{variant}.csv", train, variant)
    shutil.copy(staging / f"pairs_{DEFAULT_CAPTION}.csv", staging / "pairs.csv")
    _write_csv(staging / "test_pairs.csv", test, DEFAULT_CAPTION)
    tasks = {}
    for key in ("category", "subcategory"):
        groups = classes(chosen, key)
        for name, group in groups.items():
            depth = 1 if key == "category" else 2  # the class folder keeps the drawing's folders below it
            for d in group:
                target = staging / key / d.split / name / Path(*Path(d.image).parts[1 + depth :])
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(staging / d.image, target)
        tasks[key] = {name: dict(Counter(d.split for d in group)) for name, group in groups.items()}
    text = _digest(f"{d.path}\t{d.split}\t" + "\t".join(d.caption(v) for v in CAPTIONS) for d in chosen)
    pixels = {d.path: pixel_digest(images[d.path]) for d in chosen}
    rendered = _digest(f"{d.path}\t{pixels[d.path]}" for d in chosen)
    manifest = {
        "package": f"{PACKAGE.name} {PACKAGE.version}",
        "size": size,
        "drawings": total,
        "pairs": {"train": len(train), "test": len(test)},
        "skipped": dict(sorted(skipped.items())),
        "tasks": tasks,
        "caption": DEFAULT_CAPTION,
        "render_seconds": round(seconds, 1),
        "digests": {"text": text, "images": rendered},
        "renders": pixels,
    }
    expected = DIGESTS.get(size)
    if expected and expected["text"] != text:
        shutil.rmtree(staging, ignore_errors=True)
        raise ValueError(
            f"the drawings' captions and split differ from the book's (text digest {text}, expected "
            f"{expected['text']}): not {PACKAGE.name} {PACKAGE.version} as the book reads it"
        )
    book = book_renders(size)
    differ = render_differences(pixels, book) if book else []
    if differ:
        if not accept_other_renders:
            shutil.rmtree(staging, ignore_errors=True)
            raise ValueError(
                f"the rendered images differ from the book's: {len(differ)} of {len(pixels)} drawings "
                f"({', '.join(differ[:5])}{', ...' if len(differ) > 5 else ''}): another cairosvg or cairo draws "
                "other pixels; `--accept-other-renders` keeps them, and the runs made on them are other runs than "
                "the book's"
            )
        manifest["other_renders"] = True
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, folder)
    return Built(folder, manifest)


def summary(result: Built) -> str:
    m = result.manifest
    tasks = ", ".join(f"{key} {len(names)} classes" for key, names in m["tasks"].items())
    skipped = ", ".join(f"{n} {why}" for why, n in m["skipped"].items()) or "none"
    return (
        f"{result.folder}: {m['pairs']['train']:,} training pairs, {m['pairs']['test']:,} held out; {tasks}; "
        f"skipped: {skipped}; rendered in {m['render_seconds']} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, nargs="+", default=[DEFAULT_SIZE], help="image sizes in px")
    parser.add_argument("--deb", default=None, help=f"a downloaded {PACKAGE.name}_*.deb (no apt needed)")
    parser.add_argument("--svg-root", default=None, help="an unpacked package's usr/share/openclipart/svg")
    parser.add_argument("--workers", type=int, default=None, help="rendering processes (default: every core)")
    parser.add_argument("--accept-other-renders", action="store_true", help="keep images that differ from the book's")
    parser.add_argument(
        "--record-renders", action="store_true", help=f"maintainers: write the drawings' digests into {RENDERS.name}"
    )
    args = parser.parse_args(argv)
    try:
        for size in args.size:
            result = build(
                size,
                deb=args.deb,
                svg_root=args.svg_root,
                workers=args.workers,
                accept_other_renders=args.accept_other_renders,
            )
            print(summary(result))
            if args.record_renders:
                record_renders(result)
    except (ValueError, RuntimeError) as err:
        parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
