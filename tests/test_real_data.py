"""Real data through the world's pipeline: WebDataset shards and OpenCLIP CSVs of real image files (PNG, JPEG),
decoded in DataLoader workers, tokenized with open_clip's BPE; bad samples skipped and counted, broken sources
refused naming ``train_data``."""

import io
import tarfile

import numpy as np
import pytest
from PIL import Image

from vlp_lib import experiment
from vlp_lib.data import real, shards, world
from vlp_lib.data.tokenizer import world_tokenizer

TINY = dict(batch_size=32, epochs=1, task_train=60, task_test=40, retrieval_images=20, eval_tasks=["shapes10"])


def jpeg(rng, height=40, width=56) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(buffer, format="JPEG")
    return buffer.getvalue()


def write_csv(folder, n, bad_rows=(), caption=lambda i: f"a red circle number {i}", rng=None):
    """``n`` rows of real JPEG files (non-square, so the resize and crop run); ``bad_rows``: ``{i: kind}`` with kind
    "missing" (no file) or "text" (a .jpg that is not an image)."""
    rng = rng or np.random.default_rng(0)
    lines = ["filepath\ttitle"]
    for i in range(n):
        name = f"img{i}.jpg"
        kind = dict(bad_rows).get(i)
        if kind == "text":
            (folder / name).write_text("this is not an image")
        elif kind != "missing":
            (folder / name).write_bytes(jpeg(rng))
        lines.append(f"{name}\t{caption(i)}")
    csv = folder / "pairs.csv"
    csv.write_text("\n".join(lines) + "\n")
    return csv


def test_png_shards_of_the_world_train_exactly_as_the_world(tmp_path):
    """End to end: the world written as lossless shards, read back by the real-data path (workers, cache), holds the
    world's pixels and captions in order, and a run on the shards ends with the world run's metrics."""
    shards.write_shards(tmp_path, 128, seed=0, image_size=32, shard_size=50)
    assert sorted(p.name for p in tmp_path.glob("*.tar")) == ["00000.tar", "00001.tar", "00002.tar"]
    data, report = real.load_pairs(tmp_path / "{00000..00002}.tar", world_tokenizer(), 32, workers=2)
    w = world.generate(128, seed=0, image_size=32)
    assert np.array_equal(np.asarray(data.images), w.images) and data.captions == list(w.captions)
    assert report.kept == 128 and report.bad == {}
    common = dict(TINY, train_size=128, image_size=32)
    on_world = experiment.run(experiment.make_config("smoke", **common), progress=False)
    on_shards = experiment.run(
        experiment.make_config("smoke", train_data=str(tmp_path), tokenizer="world", **common), progress=False
    )
    assert on_shards["config"]["train_size"] == 128 and on_shards["metrics"]["train_pairs"] == 128
    for key in ("final_loss", "shapes10/zeroshot_top1", "shapes10/linear"):
        assert on_shards["metrics"][key] == pytest.approx(on_world["metrics"][key], abs=1e-6), key
    # the world's retrieval set is the world's runs' alone: a model trained on real pairs is not matched against it
    assert "retrieval/mean_recall" in on_world["metrics"] and "retrieval/mean_recall" not in on_shards["metrics"]


def test_csv_of_jpeg_files_trains_with_bpe(tmp_path):
    csv = write_csv(tmp_path, 40)
    data, report = real.load_pairs(csv, world_tokenizer(), 32, workers=2)
    assert data.images.shape == (40, 32, 32, 3) and data.images.dtype == np.uint8
    assert data.captions[2] == "a red circle number 2" and report.kept == 40
    again, _ = real.load_pairs(csv, world_tokenizer(), 32, workers=0)  # decoded once, then memory-mapped
    assert isinstance(again.images, np.memmap) and np.array_equal(again.images, data.images)
    config = experiment.make_config("smoke", train_data=str(csv), **dict(TINY, batch_size=8))
    assert config.tokenizer == "bpe" and config.train_size == 40
    record = experiment.run(config, progress=False)
    assert np.isfinite(record["metrics"]["final_loss"]) and "shapes10/zeroshot_top1" in record["metrics"]
    model, tokenizer = experiment.load_trained(record)
    assert tokenizer.vocab_size == 49408 == model.token_embedding.num_embeddings


def test_a_comma_separated_csv_is_read(tmp_path):
    csv = write_csv(tmp_path, 3)
    csv.write_text(csv.read_text().replace("\t", ","))
    assert real.count_pairs(csv) == 3


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "is empty"),
        ("filepath\ttitle\n", "has no rows"),
        ("path\ttitle\nx.jpg\thello\n", "column 'filepath'"),
    ],
)
def test_broken_csv_refused(tmp_path, content, message):
    csv = tmp_path / "pairs.csv"
    csv.write_text(content)
    with pytest.raises(ValueError, match=f"train_data.*{message}"):
        experiment.make_config("smoke", train_data=str(csv))


def test_bad_samples_are_skipped_and_counted_in_a_large_set(tmp_path):
    """One missing file and one file that is not an image among 60 (3%): skipped, counted, warned; the rest train."""
    csv = write_csv(tmp_path, 60, bad_rows={5: "missing", 9: "text"})
    assert real.count_pairs(csv) == 59  # the missing file is known before decoding
    with pytest.warns(UserWarning, match="1 missing image file, 1 not a decodable image"):
        data, report = real.load_pairs(csv, world_tokenizer(), 32, workers=2)
    assert len(data) == 58 and report.bad == {"missing image file": 1, "not a decodable image": 1}
    assert report.examples["not a decodable image"] == ["row 11: img9.jpg"]
    assert "number 9" not in " ".join(data.captions) and data.captions[5] == "a red circle number 6"


@pytest.mark.parametrize("kind, message", [("missing", "1 missing image file"), ("text", "1 not a decodable image")])
def test_too_many_bad_samples_refused(tmp_path, kind, message):
    """One bad sample of four is 25%: a wrong path or format, refused naming train_data and the row."""
    csv = write_csv(tmp_path, 4, bad_rows={2: kind})
    with pytest.raises(
        ValueError, match=f"train_data .*: 1 of 4 samples are bad.* {message} \\(e.g. 'row 4: img2.jpg'\\)"
    ):
        real.load_pairs(csv, world_tokenizer(), 32, workers=0)


def test_caption_longer_than_the_context_is_truncated_and_counted(tmp_path):
    long = " ".join(["red circle"] * 40)
    csv = write_csv(tmp_path, 40, caption=lambda i: long if i == 0 else "a blue square")
    with pytest.warns(UserWarning, match="1 captions truncated"):
        data, report = real.load_pairs(csv, world_tokenizer(8), 32, workers=0)
    assert report.truncated == 1 and data.tokens.shape == (40, 8) and data.tokens[0, -1] == world_tokenizer(8).eot_id


def test_unreadable_and_truncated_shards(tmp_path):
    (tmp_path / "junk.tar").write_bytes(b"not a tar archive at all" * 100)
    with pytest.raises(ValueError, match="train_data: shard .*junk.tar.* not a readable tar"):
        real.check_source(tmp_path / "junk.tar")
    good = tmp_path / "good"
    shards.write_shards(good, 120, seed=1, image_size=32, shard_size=40, image_format="jpg")
    last = good / "00002.tar"
    blob = last.read_bytes()
    last.write_bytes(blob[: int(len(blob) * 0.95)])  # a shard cut short: its readable samples are kept
    source = real.check_source(good)
    assert 110 <= len(source.samples) < 120 and "cut off by a truncated shard" in source.bad
    with pytest.raises(ValueError, match="cut off by a truncated shard"):  # alone, it is mostly lost
        last.write_bytes(blob[: len(blob) // 2])
        real.check_source(last)
    with tarfile.open(tmp_path / "nocaption.tar", "w") as tar:  # a sample without its txt
        info = tarfile.TarInfo("00000001.jpg")
        data = jpeg(np.random.default_rng(0))
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="1 no caption in sample"):
        real.check_source(tmp_path / "nocaption.tar")


def test_a_cache_cut_short_is_decoded_again(tmp_path, monkeypatch):
    csv = write_csv(tmp_path, 6)
    data, _ = real.load_pairs(csv, world_tokenizer(), 32, workers=0)
    expected = np.array(data.images)  # a copy: the memory map sees the file cut below
    cached = real.cache_dir() / "real" / f"{real.check_source(csv).cache_key(32)}.npy"
    cached.write_bytes(cached.read_bytes()[:-500])  # a disk that filled up mid-write
    again, _ = real.load_pairs(csv, world_tokenizer(), 32, workers=0)
    assert np.array_equal(np.asarray(again.images), expected)


def write_folders(root, classes=("cat", "golden_retriever"), per_class=6, bad=0):
    rng = np.random.default_rng(1)
    for split in ("train", "test"):
        for c, name in enumerate(classes):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(per_class):
                (folder / f"{i}.jpg").write_bytes(jpeg(rng, 30 + 10 * c, 50))
    for i in range(bad):
        (root / "test" / classes[0] / f"bad{i}.jpg").write_text("not an image")
    return root


def test_image_folder_task_is_evaluated_like_a_world_task(tmp_path):
    root = write_folders(tmp_path / "pets")
    config = experiment.make_config(
        "smoke",
        train_size=64,
        eval_tasks=["shapes10", f"folder:{root}"],
        **{k: v for k, v in TINY.items() if k != "eval_tasks"},
    )
    record = experiment.run(config, progress=False)
    m = record["metrics"]
    for key in ("pets/zeroshot_top1", "pets/linear", "pets/knn", "shapes10/linear"):
        assert key in m and 0.0 <= m[key] <= 1.0
    from vlp_lib import suite
    from vlp_lib.data import tasks

    test = tasks.load_task(f"folder:{root}", "test", n=5)
    assert test.classnames == ["cat", "golden retriever"] and len(test) == 5 and test.images.shape[1:] == (224, 224, 3)
    assert suite.chance_levels(config.eval)["pets/zeroshot_top1"] == pytest.approx(0.5)


def test_image_folder_task_refused_or_cleaned(tmp_path):
    (tmp_path / "empty" / "train").mkdir(parents=True)
    for name in (f"folder:{tmp_path / 'nowhere'}", f"folder:{tmp_path / 'empty'}"):
        with pytest.raises(ValueError, match="eval_tasks"):
            experiment.make_config("smoke", eval_tasks=[name])
    root = write_folders(tmp_path / "noisy", per_class=30, bad=1)  # 1 of 61 test images is not an image
    from vlp_lib.data import tasks

    with pytest.warns(UserWarning, match="1 not a decodable image"):
        assert len(tasks.load_task(f"folder:{root}", "test", n=100)) == 60


def test_a_run_on_other_pixels_under_the_same_path_is_another_run(tmp_path):
    """Runs on real data are keyed by the data's contents (``RunConfig.data_digest``), not by its path: replace one
    image under the same CSV and the stored run is not the run asked for; restore the bytes and it is again."""
    csv = write_csv(tmp_path, 40)
    config = experiment.make_config("smoke", method="clip", train_data=str(csv), **TINY)
    assert config.data_digest and config.to_dict()["data_digest"] == config.data_digest
    experiment.runs.save(experiment.RUN_KIND, config.to_dict(), {"avg3/linear": 0.5}, paper=None)
    assert experiment.stored(config) is not None
    original = (tmp_path / "img3.jpg").read_bytes()
    (tmp_path / "img3.jpg").write_bytes(jpeg(np.random.default_rng(7)))
    other = experiment.make_config("smoke", method="clip", train_data=str(csv), **TINY)
    assert other.data_digest != config.data_digest and experiment.stored(other) is None
    # a record's config read back is checked against the files as they are now
    assert experiment.RunConfig.from_dict(config.to_dict()).data_digest == other.data_digest
    (tmp_path / "img3.jpg").write_bytes(original)
    assert experiment.make_config("smoke", method="clip", train_data=str(csv), **TINY).data_digest == config.data_digest
    # a run on the generated world alone keeps the key it had before digests existed
    assert "data_digest" not in experiment.make_config("smoke", method="clip", **TINY).to_dict()
