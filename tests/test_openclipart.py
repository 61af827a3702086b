"""The Open Clip Art data set's builder (``vlp_lib.data.openclipart``) on a small package-shaped tree of drawings made
here: captions from the drawings' own metadata, links and copies kept once, the split fixed by the file's bytes,
image-folder tasks of
the classes large enough, the same bytes twice, and a result that is not the book's refused."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vlp_lib.data import openclipart

try:
    openclipart._cairosvg()
except RuntimeError as err:  # no cairosvg, or no system cairo library
    pytest.skip(str(err), allow_module_level=True)

SVG = """<svg xmlns="http://www.w3.org/2000/svg" xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmlns:cc="http://web.resource.org/cc/" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
 width="{w}" height="{h}" viewBox="0 0 {w} {h}"><metadata><rdf:RDF><cc:Work rdf:about="">
<dc:title>{title}</dc:title><dc:description>{description}</dc:description>
<dc:subject><rdf:Bag>{keywords}</rdf:Bag></dc:subject></cc:Work></rdf:RDF></metadata>
<title>{title}</title><rect x="2" y="2" width="{rw}" height="{rh}" fill="{colour}"/></svg>"""


def _drawing(path, title, description="", keywords=(), colour="red", w=40, h=20):
    path.parent.mkdir(parents=True, exist_ok=True)
    tags = "".join(f"<rdf:li>{k}</rdf:li>" for k in keywords)
    path.write_text(
        SVG.format(title=title, description=description, keywords=tags, colour=colour, w=w, h=h, rw=w - 4, rh=h - 4)
    )


@pytest.fixture(autouse=True)
def unpinned(monkeypatch):
    """These drawings are not the package's: its digests are not theirs (set where a test needs them)."""
    monkeypatch.setattr(openclipart, "DIGESTS", {})
    monkeypatch.setattr(openclipart, "book_renders", lambda size: {})


@pytest.fixture
def package(tmp_path):
    """Two categories of 45 drawings (animals with a sub-folder of 41, and food), 5 unsorted, one link, one copy of a
    drawing under another name, one drawing without a title and one that does not parse."""
    root = tmp_path / "svg"
    for i in range(45):
        folder = root / "animals" / ("birds" if i < 41 else "")
        _drawing(folder / f"bird_{i:02d}.svg", f"Bird {i}", f"A small  bird {i}" if i % 3 else "", ("bird", "animal"))
        _drawing(root / "food" / f"apple_{i:02d}.svg", f"Apple {i}", f"Apple {i}.", (), "green", w=20, h=40)
    for i in range(5):
        _drawing(root / "unsorted" / f"thing_{i}.svg", f"Thing {i}")
    os.symlink("../animals/birds/bird_00.svg", root / "food" / "bird_link.svg")
    copy = (root / "animals" / "birds" / "bird_01.svg").read_text().replace("<rdf:li>bird</rdf:li>", "")
    (root / "food" / "bird_copy.svg").write_text(copy)  # the same drawing, its metadata edited
    _drawing(root / "food" / "untitled.svg", "")
    (root / "food" / "broken.svg").write_text("<svg")
    return root


def test_build_writes_pairs_tasks_and_counts(package, tmp_path):
    built = openclipart.build(32, svg_root=package, root=tmp_path / "out", workers=1, progress=False)
    m = built.manifest
    assert m["skipped"] == {"a link to another drawing": 1, "a copy of another drawing": 1, "no title": 2}
    assert m["drawings"] == 45 + 45 + 5 + 4 and m["pairs"]["train"] + m["pairs"]["test"] == 95
    with open(built.folder / "pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == m["pairs"]["train"] and set(rows[0]) == set(openclipart.FIELDS)
    by_title = {r["summary"]: r for r in rows}
    for r in rows:
        assert (built.folder / r["filepath"]).exists()
    # captions: the title and the description, the title alone when the description repeats it or is empty
    bird = next(r for t, r in by_title.items() if t.startswith("Bird") and t != "Bird 0" and int(t.split()[1]) % 3)
    assert bird["title"] == f"{bird['summary']}. A small bird {bird['summary'].split()[1]}"
    assert all(r["title"] == r["summary"] for t, r in by_title.items() if t.startswith("Apple"))
    with open(built.folder / "pairs_keywords.csv", newline="") as f:
        keywords = {r["summary"]: r["title"] for r in csv.DictReader(f, delimiter="\t")}
    assert {keywords[t] for t in keywords if t.startswith("Bird")} == {"bird, animal"}
    assert {keywords[t] for t in keywords if t.startswith("Apple")} == {t for t in keywords if t.startswith("Apple")}
    # the split by the file's hash; tasks of the classes of at least MIN_CLASS drawings, unsorted never a class
    for r in rows:
        svg = package / (r["filepath"].removeprefix("images/").removesuffix(".png") + ".svg")
        assert openclipart.split_of(openclipart.drawing_digest(svg)) == "train"
    assert set(m["tasks"]["category"]) == {"animals", "food"} and set(m["tasks"]["subcategory"]) == {"animals.birds"}
    for split in ("train", "test"):
        assert sorted(p.name for p in (built.folder / "category" / split).iterdir()) == ["animals", "food"]
    test_images = sum(len(list((built.folder / "category" / "test" / c).rglob("*.png"))) for c in ("animals", "food"))
    assert (built.folder / "category" / "train" / "animals" / "birds").is_dir()  # the sub-folder kept below
    assert test_images == m["tasks"]["category"]["animals"]["test"] + m["tasks"]["category"]["food"]["test"]
    # images: the size asked for, the drawing's aspect ratio kept on white
    from PIL import Image

    apple = Image.open(built.folder / by_title["Apple 1"]["filepath"]) if "Apple 1" in by_title else None
    if apple is not None:
        assert apple.size == (32, 32) and apple.getpixel((0, 16)) == (255, 255, 255)  # a tall drawing, centred
        assert apple.getpixel((16, 16))[1] > 100  # its green
    # built once: the second call returns it
    assert openclipart.build(32, svg_root=package, root=tmp_path / "out").manifest == m
    assert openclipart.built(32, root=tmp_path / "out").digests == m["digests"]


def test_the_same_drawings_give_the_same_bytes_and_another_result_is_refused(package, tmp_path, monkeypatch):
    a = openclipart.build(32, svg_root=package, root=tmp_path / "a", workers=1, progress=False)
    b = openclipart.build(32, svg_root=package, root=tmp_path / "b", workers=2, progress=False)
    assert a.digests == b.digests
    assert (a.folder / "pairs.csv").read_bytes() == (b.folder / "pairs.csv").read_bytes()
    # the book's digest of each drawing, one of them another: the refusal names that drawing
    other = sorted(a.manifest["renders"])[1]
    book = {**a.manifest["renders"], other: "0" * openclipart.DIGEST_CHARS}
    monkeypatch.setattr(openclipart, "book_renders", lambda size: book)
    with pytest.raises(
        ValueError, match=f"rendered images differ from the book's: 1 of {len(book)} drawings \\({other}"
    ):
        openclipart.build(32, svg_root=package, root=tmp_path / "c", workers=1, progress=False)
    kept = openclipart.build(32, svg_root=package, root=tmp_path / "c", accept_other_renders=True, progress=False)
    assert kept.manifest["other_renders"] is True
    monkeypatch.setattr(openclipart, "book_renders", lambda size: a.manifest["renders"])
    monkeypatch.setitem(openclipart.DIGESTS, 32, {"text": "0" * 64})
    with pytest.raises(ValueError, match="captions and split differ from the book's"):
        openclipart.build(32, svg_root=package, root=tmp_path / "d", workers=1, progress=False)
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())


def test_bad_requests_name_the_command_or_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="python -m vlp_lib.data.openclipart --size 64"):
        openclipart.built(64, root=tmp_path)
    with pytest.raises(ValueError, match="size must be an int"):
        openclipart.build(4, svg_root=tmp_path)
    with pytest.raises(ValueError, match="svg_root"):
        openclipart.build(32, svg_root=tmp_path / "missing", root=tmp_path / "out")
    with pytest.raises(ValueError, match="caption must be one of"):
        openclipart.Drawing("a/b.svg", "a", None, "train", "T", "", ()).caption("nope")
    with pytest.raises(SystemExit) as exit_:  # the command refuses the same way, before any rendering
        openclipart.main(["--size", "4", "--svg-root", str(tmp_path)])
    assert exit_.value.code == 2


TEXT_SVG = """<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">
<text x="4" y="28" font-family="{family}" font-size="24">Wag</text></svg>"""
RENDER = """
import sys
from pathlib import Path
from vlp_lib.data import openclipart
for svg in sys.argv[2:]:
    if sys.argv[1] == "pinned":
        png = openclipart.render(Path(svg), 64)
    else:  # cairosvg as it draws with the machine's fonts
        png = openclipart._cairosvg().svg2png(url=svg, background_color="white", output_width=64)
    print(openclipart.pixel_digest(png))
"""


def test_text_is_drawn_with_the_pinned_fonts_whatever_fonts_the_machine_has(tmp_path):
    """Two machines with other fonts, simulated by two fontconfig files (one with a single serif face): a drawing's
    text renders alike through ``render`` (the pinned DejaVu fonts), and differently through cairosvg alone."""
    import matplotlib

    stix = tmp_path / "stix"
    stix.mkdir()
    for name in ("STIXGeneral.ttf", "STIXGeneralBol.ttf"):
        (stix / name).write_bytes((Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name).read_bytes())
    other = tmp_path / "other.conf"
    other.write_text(
        f'<?xml version="1.0"?><fontconfig><dir>{stix}</dir><cachedir>{tmp_path / "c"}</cachedir></fontconfig>'
    )
    script = tmp_path / "render.py"
    script.write_text(RENDER)
    svgs = []
    for family in ("Bitstream Vera Sans", "Times New Roman", "serif"):
        svgs.append(tmp_path / f"{family}.svg")
        svgs[-1].write_text(TEXT_SVG.format(family=family))

    def digests(how: str, conf: Path | None) -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "FONTCONFIG_FILE"}
        env.update({"FONTCONFIG_FILE": str(conf)} if conf is not None else {})
        command = [sys.executable, str(script), how, *map(str, svgs)]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert digests("pinned", None) == digests("pinned", other)
    system, stix_only = digests("system", None), digests("system", other)
    assert all(a != b for a, b in zip(system, stix_only))  # the test can see a font change, in every family
