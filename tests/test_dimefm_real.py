"""DIME-FM on the reader's inputs (``vlp_lib.papers.dimefm.inputs`` and the chapter's ``read_inputs``): the teacher
checkpoint and the unpaired corpora are checked before any compute, each bad one refused with a ``ValueError`` naming
its parameter; good ones become specs that key the runs; a checkpoint of the book's own teacher is that teacher."""

from pathlib import Path

import numpy as np
import pytest
import torch

from vlp_lib import experiment, models, runs
from vlp_lib.data import training
from vlp_lib.methods import create_method
from vlp_lib.papers.dimefm import inputs
from vlp_lib.papers.dimefm.book import chapter
from vlp_lib.papers.dimefm.method import DIMEFMArgs, teacher_of
from vlp_lib.train import CHECKPOINT_MAGIC, save_checkpoint

REAL = Path(__file__).resolve().parent / "data" / "openclipart"
PAIRS, FOLDER_TASK = REAL / "pairs.csv", f"folder:{REAL / 'categories'}"
IMAGES, TEXTS = REAL / "categories" / "train", REAL / "unpaired_captions.txt"
TINY = dict(
    train_size=64, batch_size=32, epochs=1, task_train=40, task_test=20, retrieval_images=10, eval_tasks=["shapes10"]
)


@pytest.fixture(scope="module")
def teacher():
    """The chapter's smoke teacher config (rn-small, the world's tokenizer): the architecture a checkpoint must fit."""
    return chapter.config(chapter.TEACHER, "smoke", chapter.TEACHER_SEED)


def teacher_state(config, seed=5):
    tokenizer = training.make_tokenizer(config)
    return models.create_model(config.model, tokenizer.vocab_size, tokenizer.context_length, config.image_size, seed)


# --- the teacher checkpoint ------------------------------------------------------------------------------------


def test_a_state_dict_in_every_accepted_format_fits_and_loads(tmp_path, teacher):
    model = teacher_state(teacher)
    state = model.state_dict()
    files = {
        "plain.pt": state,
        "open_clip.pt": {"epoch": 3, "state_dict": {f"module.{k}": v for k, v in state.items()}},
    }
    for name, obj in files.items():
        torch.save(obj, tmp_path / name)
    save_checkpoint({"model": state, "history": [{"loss": 1.0}], "config": {"betas": (0.9, 0.98)}}, tmp_path / "b.pt")
    for name in [*files, "b.pt"]:
        spec = inputs.checkpoint_spec(tmp_path / name, teacher)
        assert spec == {"path": str((tmp_path / name).resolve()), "sha256": inputs.file_sha256(tmp_path / name)}
        loaded, tokenizer = inputs.load_teacher(spec, teacher)
        assert not loaded.training and tokenizer.context_length == teacher.context_length
        for key, value in loaded.state_dict().items():
            assert torch.equal(value, state[key]), (name, key)


def test_bad_checkpoints_are_refused_naming_teacher_checkpoint(tmp_path, teacher):
    with pytest.raises(ValueError, match="teacher_checkpoint: no such file"):
        inputs.checkpoint_spec(tmp_path / "missing.pt", teacher)
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="teacher_checkpoint: .* does not load as a torch checkpoint"):
        inputs.checkpoint_spec(tmp_path / "text.pt", teacher)
    torch.save({"lr": 0.1, "name": "x"}, tmp_path / "no_state.pt")
    with pytest.raises(ValueError, match="teacher_checkpoint: .* holds no state dict"):
        inputs.checkpoint_spec(tmp_path / "no_state.pt", teacher)
    # another architecture (the student's rn-tiny) does not fit the rn-small teacher: named, with the tensors
    student = teacher.replace(model="rn-tiny")
    torch.save(teacher_state(student).state_dict(), tmp_path / "rn_tiny.pt")
    with pytest.raises(ValueError, match=r"teacher_checkpoint: .* does not match .*'rn-small'.* of another shape"):
        inputs.checkpoint_spec(tmp_path / "rn_tiny.pt", teacher)
    # the same model with a tensor missing
    state = teacher_state(teacher).state_dict()
    state.pop("logit_scale")
    torch.save(state, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match="1 tensors missing.*logit_scale"):
        inputs.checkpoint_spec(tmp_path / "partial.pt", teacher)
    # a book checkpoint cut short is refused, and left on disk (the trainer's own resume would delete it)
    save_checkpoint({"model": teacher_state(teacher).state_dict()}, tmp_path / "cut.pt")
    blob = (tmp_path / "cut.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(ValueError, match="corrupt or cut short"):
        inputs.checkpoint_spec(tmp_path / "cut.pt", teacher)
    assert (tmp_path / "cut.pt").read_bytes().startswith(CHECKPOINT_MAGIC)


def test_a_checkpoint_changed_after_its_spec_is_refused(tmp_path, teacher):
    torch.save(teacher_state(teacher).state_dict(), tmp_path / "t.pt")
    spec = inputs.checkpoint_spec(tmp_path / "t.pt", teacher)
    torch.save(teacher_state(teacher, seed=6).state_dict(), tmp_path / "t.pt")
    with pytest.raises(ValueError, match="teacher_checkpoint: .* changed since"):
        inputs.load_teacher(spec, teacher)


# --- the unpaired corpora --------------------------------------------------------------------------------------


def test_an_image_folder_is_listed_recursively_and_decoded_once(tmp_path):
    spec = inputs.image_folder_spec(IMAGES)
    n = len([p for p in IMAGES.rglob("*") if p.is_file()])
    assert spec["images"] == n == 190 and spec["folder"] == str(IMAGES.resolve())
    images = inputs.folder_images(spec, 32)
    assert images.shape == (n, 32, 32, 3) and images.dtype == np.uint8 and images.std() > 0
    assert np.array_equal(inputs.folder_images(spec, 32), images)  # read back from the cache


def test_bad_image_folders_are_refused_naming_unpaired_images(tmp_path):
    with pytest.raises(ValueError, match="unpaired_images: no such folder"):
        inputs.image_folder_spec(tmp_path / "nowhere")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "sub" / "notes.txt").write_text("no image here")
    with pytest.raises(ValueError, match="unpaired_images: .* holds no image file"):
        inputs.image_folder_spec(tmp_path / "empty")
    broken = tmp_path / "broken"
    broken.mkdir()
    for i, source in enumerate(sorted(IMAGES.rglob("*.png"))[:10]):
        (broken / f"{i}.png").write_bytes(source.read_bytes())
    for i in range(3):  # 3 of 13 undecodable: past data.real.MAX_BAD_FRACTION
        (broken / f"bad{i}.png").write_bytes(b"not a png")
    spec = inputs.image_folder_spec(broken)
    with pytest.raises(ValueError, match="unpaired_images .* 3 of 13 samples are bad"):
        inputs.folder_images(spec, 32)
    (broken / "bad0.png").unlink()  # the listing changed since the spec: refused, not read silently
    with pytest.raises(ValueError, match="unpaired_images: .* changed since"):
        inputs.folder_images(spec, 32)


def test_a_text_file_is_one_sentence_a_line_and_bad_ones_are_refused(tmp_path):
    spec = inputs.text_file_spec(TEXTS)
    sentences = inputs.read_text_file(spec)
    assert spec["sentences"] == len(sentences) == 200 and spec["kind"] == inputs.TEXT_FILE
    with pytest.raises(ValueError, match="unpaired_texts: no such file"):
        inputs.text_file_spec(tmp_path / "none.txt")
    (tmp_path / "blank.txt").write_text("\n   \n\n")
    with pytest.raises(ValueError, match="unpaired_texts: .* holds no sentence"):
        inputs.text_file_spec(tmp_path / "blank.txt")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ValueError, match="unpaired_texts: .* is not UTF-8"):
        inputs.text_file_spec(tmp_path / "latin1.txt")
    (tmp_path / "t.txt").write_text("a red square\n\na blue circle\n")
    spec = inputs.text_file_spec(tmp_path / "t.txt")
    assert inputs.read_text_file(spec) == ["a red square", "a blue circle"]
    (tmp_path / "t.txt").write_text("a red square\n")
    with pytest.raises(ValueError, match="unpaired_texts: .* changed since"):
        inputs.read_text_file(spec)


# --- the chapter's parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(train_data=str(REAL / "missing.csv")), "train_data"),
        (dict(eval_tasks=[f"folder:{REAL / 'images'}"]), "eval_tasks"),  # no train/ and test/ splits
        (dict(eval_tasks=[]), "eval_tasks"),
        (dict(unpaired_images=str(REAL / "categories" / "nowhere")), "unpaired_images"),
        (dict(unpaired_texts=str(REAL / "pairs.tsv")), "unpaired_texts"),
        (dict(teacher_checkpoint=str(TEXTS)), "teacher_checkpoint"),
    ],
)
def test_read_inputs_refuses_each_bad_parameter_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        chapter.read_inputs("smoke", **kwargs)


def test_an_image_folder_smaller_than_a_batch_is_refused(tmp_path):
    for i, source in enumerate(sorted(IMAGES.rglob("*.png"))[:5]):
        (tmp_path / f"{i}.png").write_bytes(source.read_bytes())
    with pytest.raises(ValueError, match="unpaired_images: .* holds 5 images, fewer than a batch"):
        chapter.read_inputs("smoke", unpaired_images=str(tmp_path))


def test_the_world_is_unchanged_and_real_inputs_reach_every_student():
    for row in (chapter.STUDENT, chapter.C_BIG, chapter.COVERAGE_NONE, chapter.SWEEP["independent"][1]):
        world = chapter.config(row, "smoke", 1)
        assert runs.config_hash(chapter.config(row, "smoke", 1, chapter.WORLD).to_dict()) == runs.config_hash(
            world.to_dict()
        )
        assert "teacher_checkpoint" not in world.to_dict()["method_kwargs"]
    assert chapter.claims_on(chapter.WORLD) == chapter.CLAIMS
    read = chapter.read_inputs(
        "smoke", str(PAIRS), [FOLDER_TASK], unpaired_images=str(IMAGES), unpaired_texts=str(TEXTS)
    )
    assert read.pairs == 512 and read.unpaired_images["images"] == 190 and read.unpaired_texts["sentences"] == 200
    rows, skipped = chapter.runnable(chapter.BENCHMARK, read)
    assert set(skipped) == {chapter.C_SMALL, chapter.PAIRED, chapter.CONSTRUCTED}
    student = chapter.config(chapter.STUDENT, "smoke", 0, read)
    args = student.method_args
    assert student.train_data == str(PAIRS) and student.eval.tasks == (FOLDER_TASK,)
    assert args.images == read.unpaired_images and args.texts == read.unpaired_texts
    assert args.teacher.train_data == str(PAIRS) and args.teacher.model == "rn-small"
    with pytest.raises(ValueError, match="not run on this data"):
        chapter.config(chapter.PAIRED, "smoke", 0, read)
    claims = {c.id: c for c in chapter.claims_on(read)}
    assert claims["D1"].metric == "categories/zeroshot_top1" and claims["D1"].kind == "equivalence"
    assert claims["D2"].kind == claims["D1_small"].kind == claims["D4"].kind == "not_run"
    assert "paired loading" in claims["D2"].reason and "coverage corpus" in claims["D4"].reason
    assert claims["D1_in1k"].kind == "not_run" and "shapes_colours" in claims["D1_in1k"].reason
    assert claims["D7_covered"].metric == "categories/zeroshot_top1"
    assert all(c.reason for c in claims.values() if c.kind == "not_run")


def test_method_args_read_a_path_into_its_spec_and_refuse_pairing_a_folder(teacher):
    args = DIMEFMArgs(teacher=teacher, images=str(IMAGES), texts={"kind": "file", "path": str(TEXTS)})
    assert args.images == inputs.image_folder_spec(IMAGES) and args.texts == inputs.text_file_spec(TEXTS)
    assert DIMEFMArgs.from_dict(args.to_dict()) == args  # the record form reads back
    with pytest.raises(ValueError, match="paired"):
        DIMEFMArgs(teacher=teacher, images=str(IMAGES), paired=True)
    with pytest.raises(ValueError, match="images: no such folder"):
        DIMEFMArgs(teacher=teacher, images=str(REAL / "nowhere"))


# --- a tiny teacher: its own checkpoint is that teacher, and the folder and the file become the pools ----------


def test_the_teachers_own_checkpoint_is_the_teacher_and_the_corpora_are_the_pools():
    teacher = experiment.make_config("smoke", model="rn-small", world_seed=7, **TINY)
    record = experiment.run(teacher, progress=False, verbose=False)
    kwargs = {"teacher": teacher, "images": str(IMAGES), "texts": {"kind": "file", "path": str(TEXTS)}}
    plain = experiment.make_config("smoke", method="dimefm", method_kwargs=kwargs, **TINY)
    read = experiment.make_config(
        "smoke",
        method="dimefm",
        method_kwargs={**kwargs, "teacher_checkpoint": str(experiment.checkpoint_file(record))},
        **TINY,
    )
    assert runs.config_hash(plain.to_dict()) != runs.config_hash(read.to_dict())
    trained = experiment.trained_runs()
    (run_teacher, _), (file_teacher, _) = trained(teacher), teacher_of(read.method_args, trained)
    assert teacher_of(read.method_args, trained)[0] is file_teacher  # read once per run
    for key, value in run_teacher.state_dict().items():
        assert torch.equal(value, file_teacher.state_dict()[key]), key
    built = {}
    for name, config in (("plain", plain), ("read", read)):
        data, tokenizer, model = experiment.build(config)
        trained = experiment.trained_runs()
        model = experiment.wrap_model(config, model, trained)
        method = create_method(config.method, **experiment.method_arguments(config, data, model, tokenizer, trained))
        merged, sampler = method.training_data(data)
        built[name] = merged, sampler
    merged, sampler = built["read"]
    assert sampler.size(len(merged)) == 190 and len(merged) == 190 + 200  # an epoch is a pass over the folder
    assert list(merged.captions[190:]) == inputs.read_text_file(inputs.text_file_spec(TEXTS))
    for side in ("teacher_image", "teacher_text"):  # the same teacher, the same features
        assert torch.equal(built["plain"][0].extra[side], merged.extra[side]), side
