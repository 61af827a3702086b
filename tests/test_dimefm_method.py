"""The DIME-FM method (``vlp_lib.papers.dimefm.method``) on tiny worlds: a smoke-scale rn-small CLIP teacher trained for
two steps, rn-tiny students distilled from it for a few steps through the one trainer."""

from types import SimpleNamespace

import numpy as np
import open_clip
import pytest
import torch

from vlp_lib import eval as ev
from vlp_lib import experiment, models, runs
from vlp_lib.data import corpora, training, world
from vlp_lib.data.sampler import EpisodeSampler, MixedSampler
from vlp_lib.data.transforms import AUGMENTATIONS, augment
from vlp_lib.methods import available_methods, create_method
from vlp_lib.models import CompositeCLIP
from vlp_lib.papers.dimefm.method import DIMEFM, at_width
from vlp_lib.train import train

TINY = dict(
    train_size=64, batch_size=32, epochs=1, task_train=40, task_test=20, retrieval_images=10, eval_tasks=["shapes10"]
)
NLP = {"kind": "nlp", "n": 40, "seed": 3}


@pytest.fixture(autouse=True)
def shared_store(_isolated_dirs, monkeypatch, tmp_path_factory):
    """One results store and checkpoint folder for the whole file: the teacher is trained once, not per test."""
    base = tmp_path_factory.getbasetemp() / "dimefm_store"
    monkeypatch.setenv("VLP_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(base / "checkpoints"))


@pytest.fixture(scope="module")
def teacher_config():
    return experiment.make_config("smoke", model="rn-small", world_seed=7, **TINY)


def student_config(teacher, scale="smoke", **kwargs):
    overrides = {**TINY, **{k: kwargs.pop(k) for k in list(kwargs) if k in TINY or k in ("model", "augmentation")}}
    return experiment.make_config(scale, method="dimefm", method_kwargs={"teacher": teacher, **kwargs}, **overrides)


def prepare(config):
    """What ``experiment.run`` does before training: data, composite, method, the method's data and sampler."""
    data, tokenizer, model = experiment.build(config)
    trained = experiment.trained_runs()
    model = experiment.wrap_model(config, model, trained)
    method = create_method(config.method, **experiment.method_arguments(config, data, model, tokenizer, trained))
    merged, sampler = method.training_data(data)
    teacher, teacher_tokenizer = trained(config.method_args.teacher)
    return SimpleNamespace(
        images=data,
        data=merged,
        sampler=sampler,
        model=model,
        method=method,
        teacher=teacher,
        tokenizer=tokenizer,
        teacher_tokenizer=teacher_tokenizer,
    )


def record_batches(method, also_pseudo=False):
    """Make ``method`` record each batch (image and text indices, positions, tokens) and, optionally, the pseudo
    texts it gets for inter-batch L_p-vl."""
    seen, pseudo = [], []
    loss, pseudo_texts = method.loss, method.pseudo_texts

    def recording_loss(model, batch):
        seen.append(
            SimpleNamespace(
                images=batch.indices.copy(),
                texts=batch.text_indices.copy(),
                positions=batch.positions.copy(),
                tokens=batch.texts.clone(),
            )
        )
        return loss(model, batch)

    def recording_pseudo(batch):
        out = pseudo_texts(batch)
        pseudo.append(out.clone())
        return out

    method.loss = recording_loss
    if also_pseudo:
        method.pseudo_texts = recording_pseudo
    return seen, pseudo


def fit(run, config, checkpoint=None):
    return train(
        run.model,
        run.method,
        run.data,
        experiment.train_config(config, progress=False),
        checkpoint,
        sampler=run.sampler,
    )


# --- refused before any compute ------------------------------------------------------------------------------


@pytest.fixture
def no_compute(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("computed before validating")

    for module, name in (
        (world, "generate"),
        (training, "generate"),
        (experiment, "create_model"),
        (experiment, "run"),
        (experiment, "train"),
    ):
        monkeypatch.setattr(module, name, forbidden)


def test_dimefm_is_registered():
    assert "dimefm" in available_methods()


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"lambda1": 1.5}, "lambda1"),
        ({"lambda1": True}, "lambda1"),
        ({"lambda2": -0.1}, "lambda2"),
        ({"pvl": "across"}, "pvl"),
        ({"texts": {"kind": "poems", "n": 3}}, "texts"),
        ({"texts": {"kind": "nlp", "n": 0, "seed": 1}}, "texts"),
        ({"texts": NLP, "paired": True}, "paired"),
        ({"paired": "yes"}, "paired"),
        ({"teacher_policy": "maybe"}, "teacher_policy"),
        ({"teacher_policy": "reuse"}, "teacher_policy"),  # this teacher (seed 99) was never trained
        ({"temperature": 2}, "method_kwargs"),
        ({"model": "rn-small"}, "larger than the teacher"),  # an rn-small student of an rn-small teacher is fine ...
        ({"texts": {"kind": "constructed", "queries": 65, "pool": NLP}}, "texts"),
    ],
)
def test_bad_arguments_are_refused_before_any_compute(no_compute, teacher_config, kwargs, param):
    teacher = teacher_config.replace(seed=99)
    if param == "larger than the teacher":  # ... of an rn-tiny teacher it is not
        teacher = experiment.make_config("smoke", model="rn-tiny", world_seed=7, **TINY)
    with pytest.raises(ValueError, match=param):
        student_config(teacher, **kwargs)


def test_bad_teachers_are_refused_before_any_compute(no_compute, teacher_config):
    with pytest.raises(ValueError, match="teacher is required"):
        experiment.make_config("smoke", method="dimefm", method_kwargs={}, **TINY)
    with pytest.raises(ValueError, match="teacher must be a CLIP"):
        student_config({**teacher_config.to_dict(), "method": "protoclip"})
    with pytest.raises(ValueError, match="teacher"):
        student_config({**teacher_config.to_dict(), "lr": -1.0})
    with pytest.raises(ValueError, match="teacher must be a run config"):
        student_config({"model": "rn-small"})
    # a teacher's record form is read back in full (not the partial knobs): its key is that of the config
    # experiment.make_config returns
    teacher = student_config({**teacher_config.to_dict(), "world_knobs": {"mismatch_rate": 0.02}}).method_args.teacher
    assert teacher == teacher_config.replace(world_knobs={"mismatch_rate": 0.02})
    assert teacher.world_knobs["mismatch_rate"] == 0.02 and set(teacher.world_knobs) == set(world.check_knobs())
    with pytest.raises(ValueError, match="context_length"):
        student_config(experiment.make_config("smoke", model="rn-small", context_length=16, **TINY))


def test_corpus_specs_are_checked_and_built():
    assert corpora.build_corpus({"kind": "nlp", "n": 5, "seed": 2}) == corpora.nlp_corpus(5, 2)
    knobs = {"shapes": ["circle", "square"]}
    caps = {"kind": "captions", "n": 4, "seed": 9, "world_knobs": knobs}
    assert corpora.build_corpus(caps) == corpora.caption_corpus(4, 9, **knobs)
    prompts = {"kind": "prompts", "classnames": ["circle", "star"]}
    assert corpora.build_corpus(prompts) == ["a photo of a circle.", "a photo of a star."]
    union = {"kind": "union", "parts": [prompts, caps]}
    assert corpora.build_corpus(union) == corpora.build_corpus(prompts) + corpora.build_corpus(caps)
    constructed = {"kind": "constructed", "queries": 2, "pool": union}
    assert corpora.check_corpus(constructed) is constructed
    with pytest.raises(ValueError, match="spec: a 'constructed' corpus .* needs the teacher's features"):
        corpora.build_corpus({"kind": "union", "parts": [prompts, constructed]})
    for bad, name in [
        ("nlp", "spec"),
        ({"kind": "books"}, "kind"),
        ({"kind": "nlp", "n": 3}, "seed"),
        ({"kind": "nlp", "n": 3, "seed": 1, "extra": 0}, "extra"),
        ({"kind": "captions", "n": 3, "seed": 1, "world_knobs": {"clutter": 5.0}}, "clutter"),
        ({"kind": "prompts", "classnames": []}, "classnames"),
        ({"kind": "union", "parts": []}, "parts"),
        ({"kind": "constructed", "queries": 0, "pool": prompts}, "queries"),
        ({"kind": "constructed", "queries": 1, "pool": constructed}, "pool"),
    ]:
        with pytest.raises(ValueError, match=name):
            corpora.check_corpus(bad)


def test_sampler_size_is_its_image_pool_and_rrc_is_crop_and_flip_only():
    assert EpisodeSampler().size(100) == 100
    assert EpisodeSampler(paired=False, images=np.arange(10, 40), texts=np.arange(40)).size(100) == 30
    assert MixedSampler({"a": np.arange(5), "b": np.arange(5, 9)}, 0.5).size(9) == 9
    assert AUGMENTATIONS["rrc"] == {"scale": (0.08, 1.0), "ratio": (3 / 4, 4 / 3), "flip_p": 0.5}
    x = torch.randn(256, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    _, params = augment(x, "rrc", torch.Generator().manual_seed(1), return_params=True)
    area = params["theta"][:, 0, 0].abs() * params["theta"][:, 1, 1]
    assert area.min() < 0.2 and area.max() <= 1.0 + 1e-6 and 0.3 < params["flip"].float().mean() < 0.7
    assert not (params["jitter"].any() or params["gray"].any() or params["blur"].any())


# --- data: teacher features, corpora, samplers -----------------------------------------------------------------


def test_unpaired_pools_never_mix_and_epochs_count_over_the_image_pool(teacher_config):
    config = student_config(teacher_config, texts={"kind": "nlp", "n": 150, "seed": 3}, epochs=2)
    run = prepare(config)
    n_images, n_texts = 64, 150
    assert len(run.data) == n_images + n_texts
    assert run.data.captions[n_images:] == corpora.nlp_corpus(n_texts, 3)
    seen, _ = record_batches(run.method)
    result = fit(run, config)
    assert len(result.history) == 2 * n_images // 32  # 2 epochs of the 64 images, not of the 214 rows
    for episode in (seen[:2], seen[2:]):
        images = np.concatenate([b.images for b in episode])
        assert sorted(images.tolist()) == list(range(n_images))  # one pass over the image pool per epoch
        texts = np.concatenate([b.texts for b in episode])
        assert (texts >= n_images).all() and len(set(texts.tolist())) == len(texts)  # text rows only, no repeats
        for b in episode:
            assert torch.equal(b.tokens, run.data.tokens[b.texts])
    # the images are those of the plain (paired, own-caption) run with the same seed
    assert np.array_equal(seen[0].images, EpisodeSampler().plan(0, 0, n_images, n_images, 32).images[:32])
    # each side's features sit on its own rows; the other side's are zeros, never read
    feats = run.data.extra
    image_rows, text_rows = feats["teacher_image"].abs().sum(1), feats["teacher_text"].abs().sum(1)
    assert (image_rows[:n_images] > 0).all() and (image_rows[n_images:] == 0).all()
    assert (text_rows[n_images:] > 0).all() and (text_rows[:n_images] == 0).all()
    assert {"loss_vl", "loss_pvl", "loss_udist"} <= set(result.history[-1])


def test_teacher_features_are_its_unaugmented_images_and_its_texts(teacher_config, monkeypatch):
    config = student_config(teacher_config)  # own captions, unpaired
    run = prepare(config)
    torch.testing.assert_close(run.images.extra["teacher_image"], ev.encode_images(run.teacher, run.images.images))
    torch.testing.assert_close(
        run.images.extra["teacher_text"], ev.encode_texts(run.teacher, run.teacher_tokenizer, run.images.captions)
    )
    assert run.data is run.images and run.sampler.paired is False
    # computed once per (teacher, corpus, code): a second run of the same corpora loads them
    monkeypatch.setattr(ev, "encode_images", lambda *a, **k: pytest.fail("teacher features recomputed"))
    monkeypatch.setattr(ev, "encode_texts", lambda *a, **k: pytest.fail("teacher features recomputed"))
    again = prepare(config.replace(seed=1))
    assert torch.equal(again.images.extra["teacher_image"], run.images.extra["teacher_image"])


def test_teacher_features_follow_the_corpus_of_a_world_mix(teacher_config):
    """Regression: the feature cache was keyed without ``world_mix``, so every coverage mix of one main world read
    the first mix's teacher features (targets of other images)."""
    mix = [{"n": 16, "seed": 11, "knobs": {"colours": ["teal"], "min_objects": 1, "max_objects": 1}}]
    plain = prepare(student_config(teacher_config))
    mixed = prepare(
        experiment.make_config(
            "smoke", method="dimefm", method_kwargs={"teacher": teacher_config}, world_mix=mix, **TINY
        )
    )
    torch.testing.assert_close(
        mixed.images.extra["teacher_image"], ev.encode_images(mixed.teacher, mixed.images.images)
    )
    torch.testing.assert_close(
        mixed.images.extra["teacher_text"],
        ev.encode_texts(mixed.teacher, mixed.teacher_tokenizer, mixed.images.captions),
    )
    assert not torch.equal(mixed.images.extra["teacher_image"][-16:], plain.images.extra["teacher_image"][-16:])


def test_paired_batches_hold_each_image_with_its_own_caption(teacher_config):
    config = student_config(teacher_config, paired=True)
    run = prepare(config)
    seen, _ = record_batches(run.method)
    fit(run, config)
    for b in seen:
        assert np.array_equal(b.images, b.texts)
        assert torch.equal(b.tokens, run.data.tokens[b.images])
    unpaired = prepare(student_config(teacher_config, paired=False))
    seen_unpaired, _ = record_batches(unpaired.method)
    fit(unpaired, config)
    assert all(np.array_equal(a.images, b.images) for a, b in zip(seen, seen_unpaired))  # same images, same steps
    assert not all(np.array_equal(b.images, b.texts) for b in seen_unpaired)


def test_constructed_corpus_is_the_teacher_nearest_sentences(teacher_config):
    pool = {"kind": "union", "parts": [{"kind": "nlp", "n": 30, "seed": 3}, {"kind": "captions", "n": 30, "seed": 11}]}
    config = student_config(teacher_config, texts={"kind": "constructed", "queries": 20, "pool": pool})
    run = prepare(config)
    sentences = corpora.build_corpus(pool)
    queries = run.images.extra["teacher_image"][:20]  # the teacher's features of the unaugmented images
    expected = corpora.nearest_sentences(
        queries, ev.encode_texts(run.teacher, run.teacher_tokenizer, sentences), sentences
    )
    texts = run.method.text_data
    assert texts.captions == expected and 1 <= len(expected) <= 20
    torch.testing.assert_close(
        texts.extra["teacher_text"], ev.encode_texts(run.teacher, run.teacher_tokenizer, expected)
    )


# --- training: what changes, inter-batch pseudo texts, the stored composite ------------------------------------


def test_only_the_student_image_tower_trains(teacher_config):
    config = student_config(teacher_config, texts=NLP, lambda2=0.5, augmentation="rrc")
    run = prepare(config)
    assert isinstance(run.model, CompositeCLIP)
    teacher_before = {k: v.clone() for k, v in run.teacher.state_dict().items()}
    visual_before = {k: v.clone() for k, v in run.model.visual.state_dict().items()}
    result = fit(run, config)
    assert all(h["loss_udist"] > 0 for h in result.history)
    # the teacher (text tower in the composite, image tower outside it) is untouched
    assert all(torch.equal(v, run.teacher.state_dict()[k]) for k, v in teacher_before.items())
    assert all(not p.requires_grad for p in run.model.text.parameters())
    changed = [k for k, v in visual_before.items() if not torch.equal(v, run.model.visual.state_dict()[k])]
    assert changed and any("weight" in k for k in changed)
    assert run.model.logit_scale.exp().item() == pytest.approx(100.0)
    assert list(run.method.parameters()) == []


@pytest.fixture
def narrow_student(monkeypatch):
    """rn-tiny with a 64-d joint embedding (the rn-small teacher's is 128): a student of another width, as the
    paper-scale RN50 (1,024-d) of a ViT-B-32 teacher (512-d)."""
    name = "rn-tiny-embed64"
    monkeypatch.setitem(
        open_clip.factory._MODEL_CONFIGS, name, {**open_clip.get_model_config("rn-tiny"), "embed_dim": 64}
    )
    monkeypatch.setattr(models, "_REGISTERED", models._REGISTERED | {name})
    monkeypatch.setitem(models.DEFAULT_PRECISION, name, "fp32")
    return name


def test_a_student_of_another_width_embeds_into_the_teachers(teacher_config, narrow_student):
    config = student_config(teacher_config, model=narrow_student, texts=NLP)
    assert models.create_model(narrow_student, 100, 16).visual.output_dim == 64
    run = prepare(config)
    assert run.model.visual.output_dim == run.model.embed_dim == 128
    assert run.model.visual.attnpool.c_proj.weight.shape == (128, run.model.visual.attnpool.c_proj.in_features)
    # the new projection follows the seed: the same seed draws the same student, another seed another
    again, other = prepare(config), prepare(config.replace(seed=config.seed + 1))
    for key, value in run.model.visual.state_dict().items():
        assert torch.equal(value, again.model.visual.state_dict()[key]), key
    assert not torch.equal(run.model.visual.attnpool.c_proj.weight, other.model.visual.attnpool.c_proj.weight)
    # open_clip's initialisation of the layer: normal, std = in_features ** -0.5
    std = run.model.visual.attnpool.c_proj.weight.std().item()
    assert std == pytest.approx(run.model.visual.attnpool.c_proj.in_features**-0.5, rel=0.05)
    # it trains, is stored and loads back into the same composite
    record = experiment.run(config, progress=False)
    assert np.isfinite(record["metrics"]["shapes10/zeroshot_top1"])
    model, _ = experiment.load_trained(record)
    assert model.visual.output_dim == 128
    images = world.generate(4, seed=5, image_size=32).images
    assert ev.encode_images(model, images).shape == (4, 128)


def test_at_width_leaves_an_equal_width_alone_and_fits_vits():
    tower = models.create_model("rn-tiny", 100, 16).visual
    state, rng = {k: v.clone() for k, v in tower.state_dict().items()}, torch.get_rng_state()
    assert at_width(tower, tower.output_dim) is tower
    assert torch.equal(torch.get_rng_state(), rng)  # nothing drawn: laptop runs are the runs they were
    assert all(torch.equal(v, tower.state_dict()[k]) for k, v in state.items())
    vit = models.create_model("vit-tiny", 100, 16).visual
    at_width(vit, 48)
    assert vit.proj.shape == (vit.proj.shape[0], 48) and vit(torch.zeros(2, 3, 32, 32)).shape == (2, 48)
    with pytest.raises(ValueError, match="model: cannot fit a Linear image tower"):
        at_width(_linear(), 8)


def _linear():
    layer = torch.nn.Linear(3, 4)
    layer.output_dim = 4
    return layer


def test_inter_batch_pseudo_texts_are_the_previous_batch_teacher_features(teacher_config):
    config = student_config(teacher_config, texts=NLP, pvl="inter", train_size=96)
    run = prepare(config)
    seen, pseudo = record_batches(run.method, also_pseudo=True)
    fit(run, config)
    assert len(seen) == len(pseudo) == 3
    for b in range(3):
        previous = seen[(b - 1) % 3]  # the first batch takes the episode's last
        assert torch.equal(pseudo[b], run.data.extra["teacher_image"][previous.images])
    intra = prepare(student_config(teacher_config, texts=NLP, train_size=96))
    _, none = record_batches(intra.method, also_pseudo=True)
    fit(intra, config)
    assert none == []  # intra-batch: the batch's own teacher features, no pseudo texts asked for


def test_run_stores_the_composite_and_load_trained_rebuilds_it(teacher_config, monkeypatch):
    config = student_config(teacher_config, texts=NLP)
    evaluated, evaluate_suite = [], experiment.evaluate_suite
    monkeypatch.setattr(
        experiment, "evaluate_suite", lambda model, *a: evaluated.append(model) or evaluate_suite(model, *a)
    )
    record = experiment.run(config, progress=False)
    assert len(evaluated) == 1 and isinstance(evaluated[0], CompositeCLIP)  # the suite ran on the composite
    assert runs.load(experiment.RUN_KIND, teacher_config.to_dict()) is not None  # the teacher is a stored run like any
    m = record["metrics"]
    for key in ("shapes10/zeroshot_top1", "shapes10/linear", "retrieval/mean_recall", "train_samples_per_s"):
        assert key in m and np.isfinite(m[key])
    assert {"loss_vl", "loss_pvl", "loss_udist"} <= set(record["history"][-1])

    model, tokenizer = experiment.load_trained(record)
    assert isinstance(model, CompositeCLIP) and not model.training
    teacher, teacher_tokenizer = experiment.load_trained(runs.load(experiment.RUN_KIND, teacher_config.to_dict()))
    # the same features as the trained composite ...
    images = world.generate(8, seed=123, image_size=32).images
    assert torch.equal(ev.encode_images(model, images), ev.encode_images(evaluated[0], images))
    # ... and zero-shot through the teacher's text tower
    captions = ["a red circle", "two blue squares"]
    torch.testing.assert_close(
        ev.encode_texts(model, tokenizer, captions), ev.encode_texts(teacher, teacher_tokenizer, captions)
    )
    names, templates = ["circle", "square"], ["a photo of a {}."]
    torch.testing.assert_close(
        ev.zero_shot_classifier(model, tokenizer, names, templates),
        ev.zero_shot_classifier(teacher, teacher_tokenizer, names, templates),
    )

    # teacher_policy "reuse" now finds the teacher; the stored student is loaded, not retrained
    student_config(teacher_config, texts=NLP, teacher_policy="reuse")
    monkeypatch.setattr(experiment, "train", lambda *a, **k: pytest.fail("retrained a stored run"))
    assert experiment.run(config, progress=False) == record


def test_default_hooks_leave_other_methods_unchanged(synthetic_pairs):
    from vlp_lib.methods import CLIP, MethodArgs

    data, _, _ = synthetic_pairs
    model = torch.nn.Linear(2, 2)
    assert CLIP.wrap_model(model, MethodArgs(), lambda cfg: pytest.fail("loaded a run")) is model
    same, sampler = CLIP().training_data(data)
    assert same is data and sampler is None
    assert CLIP.check_config(experiment.make_config("smoke", **TINY)) is None
    assert isinstance(DIMEFM(), DIMEFM)
