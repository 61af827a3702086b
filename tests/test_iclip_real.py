"""iCLIP on real class data: class-labelled image folders read as class data (`class_data="folder:PATH"`, the plain
and the folder-task layout), refused before compute when missing or empty, and WordNet 3.0 glosses for their names
(Debian's wordnet-base, read with nltk), each synset chosen by a stated rule."""

from pathlib import Path

import numpy as np
import pytest
from open_clip.tokenizer import SimpleTokenizer

from vlp_lib.papers.iclip import classes, wordnet

REAL = Path(__file__).resolve().parent / "data" / "openclipart" / "categories"
needs_wordnet = pytest.mark.skipif(not wordnet.installed(), reason=f"WordNet not installed: {wordnet.FETCH_COMMAND}")


def test_a_folder_task_layout_reads_as_its_train_split():
    plain = classes.check_class_data(f"folder:{REAL / 'train'}")
    task = classes.check_class_data(f"folder:{REAL}")
    assert plain["folder"] == task["folder"] == str(REAL / "train")


@pytest.mark.parametrize("spec", ["folder:/nonexistent/classes", "folder:", "cats"])
def test_missing_or_malformed_class_data_is_refused(spec):
    with pytest.raises(ValueError, match="class_data"):
        classes.check_class_data(spec)


def test_a_folder_with_one_class_is_refused(tmp_path):
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "a.png").write_bytes((REAL / "train" / "food").iterdir().__next__().read_bytes())
    with pytest.raises(ValueError, match="class_data"):
        classes.check_class_data(f"folder:{tmp_path}")


@needs_wordnet
def test_wordnet_glosses_by_the_stated_rules():
    dog = wordnet.sense("n02084071")  # an ImageNet class folder: its WordNet noun offset, exactly
    assert (dog.synset, dog.name, dog.rule) == ("dog.n.01", "dog", "WordNet id")
    assert "domesticated" in dog.gloss
    plants = wordnet.sense("plants")  # any other name: its most frequent noun sense, through morphy
    assert plants.synset == "plant.n.01" and plants.rule == "first noun sense" and plants.name == "plants"
    exact = wordnet.sense("plant.n.02")
    assert exact.synset == "plant.n.02" and exact.name == "plant" and "organism" in exact.gloss
    none = wordnet.sense("qwzx_blorp")
    assert none.synset is None and none.gloss is None and none.name == "qwzx blorp"


def test_missing_wordnet_names_the_install_command(monkeypatch):
    monkeypatch.setattr(wordnet, "installed", lambda: False)
    error = wordnet.not_installed("class_data")
    assert isinstance(error, ValueError) and wordnet.FETCH_COMMAND in str(error)


# ---------------------------------------------------------------- the class-data reader

PAIRS = REAL.parent / "pairs.csv"


def _folder_counts(root: Path) -> dict[str, int]:
    return {d.name: len(list(d.iterdir())) for d in sorted(root.iterdir()) if d.is_dir()}


def test_folder_class_data_is_decoded_labelled_and_prompted():
    spec = classes.check_class_data(f"folder:{REAL}")
    counts = _folder_counts(REAL / "train")
    data = classes.class_data(spec, 32, SimpleTokenizer(context_length=32), templates=None)
    labels = data.extra["class_label"]
    assert data.images.shape == (sum(counts.values()), 32, 32, 3) and data.images.dtype.name == "uint8"
    assert classes.folder_classes(spec["folder"]) == list(counts)  # label i = the i-th class folder, sorted
    assert labels.dtype.name == "int64" and [int((labels == i).sum()) for i in range(len(counts))] == list(
        counts.values()
    )
    # decoded drawings (a few outline maps are blank at 32 px in the data itself, not from decoding)
    assert (data.images.reshape(len(data), -1).std(1) > 0).mean() > 0.95
    names = classes.class_names(spec)
    for caption, y in zip(data.captions, labels):  # UniCL's random prompt among CLIP's ImageNet templates
        assert any(caption == t.format(names[y]) for t in classes.REAL_TEMPLATES)
    assert len(set(data.captions)) > len(counts)  # a template drawn per image
    again = classes.class_data(spec, 32, SimpleTokenizer(context_length=32))
    assert again.captions == data.captions and (again.images == data.images).all()


def test_class_folders_without_images_are_left_out_and_named(tmp_path):
    for name in ("cat", "dog"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.png").write_bytes(next((REAL / "train" / "animals").iterdir()).read_bytes())
    (tmp_path / "empty").mkdir()
    spec = classes.check_class_data(f"folder:{tmp_path}")
    assert classes.folder_classes(spec["folder"]) == ["cat", "dog"]
    with pytest.warns(UserWarning, match="empty"):
        data = classes.folder_class_data(spec, 16, SimpleTokenizer(context_length=16), workers=0)
    assert list(data.extra["class_label"]) == [0, 1]


def test_empty_or_flat_folders_are_refused_naming_class_data(tmp_path):
    with pytest.raises(ValueError, match="class_data"):
        classes.check_class_data(f"folder:{tmp_path}")  # no class folder at all
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match="class_data"):
        classes.check_class_data(f"folder:{tmp_path}")  # class folders without images
    with pytest.raises(ValueError, match="class_data: unknown key"):
        classes.check_class_data({"folder": str(REAL / "train"), "n": 10})


# ---------------------------------------------------------------- iCLIP's texts from the glosses


@needs_wordnet
def test_class_texts_carry_the_glosses_and_a_name_without_one_keeps_its_prompt():
    texts = classes.named_class_texts(["plant.n.02", "qwzx_blorp"])
    assert texts[0] == f"a photo of a plant, {wordnet.sense('plant.n.02').gloss}"
    assert texts[1] == "a photo of a qwzx blorp."  # no noun synset: the bare prompt
    assert classes.named_class_texts(["plant.n.02"], definitions=False) == ["a photo of a plant."]
    spec = classes.check_class_data(f"folder:{REAL}")
    folder_texts = classes.folder_class_texts(spec)
    senses = wordnet.senses(classes.folder_classes(spec["folder"]))
    assert len(folder_texts) == 8 and all(s.gloss is not None and s.gloss in t for s, t in zip(senses, folder_texts))


def test_missing_wordnet_at_run_time_names_the_install_command(monkeypatch):
    from vlp_lib import experiment

    monkeypatch.setattr(wordnet, "installed", lambda: False)
    wordnet.reader.cache_clear()
    wordnet.sense.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"class_data.*vlp_lib\.papers\.iclip\.wordnet fetch"):
            experiment.make_config(
                "smoke", method="iclip", train_data=str(PAIRS), method_kwargs={"class_data": f"folder:{REAL}"}
            )
        # the class names alone need no dictionary
        experiment.make_config(
            "smoke",
            method="iclip",
            train_data=str(PAIRS),
            method_kwargs={"class_data": f"folder:{REAL}", "definitions": False},
        )
    finally:
        wordnet.reader.cache_clear()
        wordnet.sense.cache_clear()


# ---------------------------------------------------------------- the methods on real class data


def test_real_class_data_needs_the_bpe_tokenizer():
    from vlp_lib import experiment

    with pytest.raises(ValueError, match="class_data.*bpe"):
        experiment.make_config("smoke", method="unicl", method_kwargs={"class_data": f"folder:{REAL}"})


def _small_csv(tmp_path: Path, n: int = 64) -> Path:
    lines = PAIRS.read_text().splitlines()
    rows = [line.split("\t") for line in lines[1 : n + 1]]
    csv = tmp_path / "pairs.csv"
    csv.write_text("filepath\ttitle\n" + "".join(f"{PAIRS.parent / f}\t{t}\n" for f, t, *_ in rows))
    return csv


@needs_wordnet
@pytest.mark.parametrize("method", ["iclip", "unicl"])
def test_two_steps_on_real_pairs_and_real_class_data(tmp_path, method):
    from vlp_lib import experiment
    from vlp_lib.methods import create_method

    config = experiment.make_config(
        "smoke",
        method=method,
        train_data=str(_small_csv(tmp_path)),
        batch_size=16,
        epochs=0.5,
        warmup_steps=1,
        task_test=16,
        eval_tasks=[f"folder:{REAL}"],
        eval_probes=False,
        context_length=32,
        method_kwargs={"class_data": f"folder:{REAL}"},
    )
    assert config.method_args.class_data == {"folder": str(REAL / "train"), "seed": classes.DEFAULT_CLASS_SEED}
    data, tokenizer, model = experiment.build(config)
    args = experiment.method_arguments(config, data, model, tokenizer)
    method_ = create_method(method, **args)
    assert method_.n_labels == 8 and len(args["class_source"]) == sum(_folder_counts(REAL / "train").values())
    if method == "iclip":  # one class text per folder class, its label the row of its text
        assert args["class_tokens"].shape == (8, 32) and args["label_names"] == classes.class_names(
            config.method_args.class_data
        )
        assert method_.class_position.tolist() == list(range(8))
    record = experiment.run(config, progress=False, verbose=False)
    history = record["history"]
    assert len(history) >= 2 and all(np.isfinite(h["loss"]) for h in history)
    assert ("loss_cls" in history[0] and "loss_clip" in history[0]) if method == "iclip" else "loss_unicl" in history[0]
    assert 0.0 <= record["metrics"]["categories/zeroshot_top1"] <= 1.0


def test_unicl_pairs_never_share_a_label_with_a_class():
    from vlp_lib.papers.iclip.method import UniCL

    spec = classes.check_class_data(f"folder:{REAL}")
    source = classes.folder_class_data(spec, 16, SimpleTokenizer(context_length=16), workers=0)
    unicl = UniCL(ratio=0.5, class_source=source)
    assert unicl.n_labels == 8  # pairs are labelled from max(24, 8) on: the world's offset, never a class's


# ---------------------------------------------------------------- the chapter's pages on real data


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"train_data": 7}, "train_data"),
        ({"train_data": "missing.csv"}, "train_data"),
        ({"train_data": str(PAIRS), "eval_tasks": {"not": "a list"}}, "eval_tasks"),
        ({"train_data": str(PAIRS), "eval_tasks": [f"folder:{REAL / 'train'}"]}, "eval_tasks"),  # no test split
        ({"train_data": str(PAIRS), "class_data": 7}, "class_data"),
        ({"train_data": str(PAIRS)}, "class_data"),  # real pairs and no real class data to default to
        ({"train_data": str(PAIRS), "class_data": "folder:/nonexistent"}, "class_data"),
        ({"train_data": "world", "class_data": f"folder:{REAL}"}, "class_data"),
    ],
)
def test_page_data_is_refused_naming_the_parameter(kwargs, name):
    from vlp_lib.papers.iclip.book import chapter

    with pytest.raises(ValueError, match=name):
        chapter.check_data(**kwargs)


@needs_wordnet
def test_real_pages_read_the_headline_task_and_say_what_is_not_run():
    from vlp_lib.papers.iclip.book import chapter

    source = chapter.check_data(str(PAIRS), [f"folder:{REAL}"])  # class_data "world": the folder task's train split
    assert source.class_data == f"folder:{REAL / 'train'}" and source.class_from == "eval task"
    assert chapter.check_data("world") == chapter.WORLD
    skipped = chapter.skipped_rows(chapter.ROWS, source)
    assert set(skipped) == {chapter.ICLIP_FULL, chapter.UNICL_FULL}
    configs = {row: chapter.config(row, "smoke", 0, source) for row in chapter.ROWS if row not in skipped}
    assert {c.train_size for c in configs.values()} == {512} and {c.context_length for c in configs.values()} == {32}
    cfg = chapter.page_config(source, "smoke")
    claims = {c.id: c for c in chapter.claims_on_data(cfg, skipped)}
    assert claims["I1_zs"].kind == "every" and claims["I1_zs"].metric == "categories/zeroshot_top1"
    assert claims["I2_zs"].metric == "categories/zeroshot_top1"
    assert claims["I1_ir"].kind == "not_run" and "generated world" in claims["I1_ir"].reason
    assert claims["I4_coco_ir_full"].kind == "not_run" and "full" in claims["I4_coco_ir_full"].reason
    assert chapter.comparison_metrics(cfg) == {"categories ZS": "categories/zeroshot_top1"}
    table = chapter.class_text_table(source)
    assert table is not None and list(table["synset"])[5] == "plant.n.01"  # plants: its most frequent sense, shown
    assert (
        "190 class-labelled images in 8 classes"
        in chapter.inputs(source, "smoke")["Class data (the ImageNet-21K stand-in)"]
    )
