"""iCLIP and UniCL (``vlp_lib.papers.iclip.loss``, ``vlp_lib.papers.iclip.method``), the class-only data
(``vlp_lib.papers.iclip.classes``) and the second retrieval set: losses against references, r = 0 is CLIP, the mixed
batches, bad input refused, two training steps through ``experiment.run``."""

import numpy as np
import open_clip
import pytest
import torch
import torch.nn.functional as F

from vlp_lib import experiment, suite
from vlp_lib.data import tasks, vocab
from vlp_lib.data.paired import PairedData
from vlp_lib.data.sampler import MixedSampler
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.losses.clip import clip_loss
from vlp_lib.methods import create_method
from vlp_lib.methods.base import Batch
from vlp_lib.models import create_model
from vlp_lib.papers.iclip import classes
from vlp_lib.papers.iclip.loss import class_text_contrast, unicl_loss
from vlp_lib.papers.iclip.method import CLASS_SOURCE, ICLIP, PAIR_SOURCE, UniCL

TOKENIZER = world_tokenizer(32)
TINY = dict(
    train_size=64,
    batch_size=16,
    episode_size=32,
    epochs=0.5,
    warmup_steps=1,
    task_train=40,
    task_test=20,
    retrieval_images=10,
    eval_tasks=["shapes10", "retrieval2"],
    context_length=32,
)
CLASS_DATA = {"n": 48, "seed": 5}


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _features(n, d=16, seed=0):
    return F.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


# ---------------------------------------------------------------- losses


def test_class_text_contrast_is_cross_entropy_of_the_cosine_classifier():
    images, texts = _features(10), _features(5, seed=1)
    labels = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    logits = torch.stack([torch.stack([20.0 * images[i].dot(texts[c]) for c in range(5)]) for i in range(10)])
    torch.testing.assert_close(class_text_contrast(images, texts, labels, 20.0), F.cross_entropy(logits, labels))
    with pytest.raises(ValueError, match="labels"):
        class_text_contrast(images, texts, labels + 1, 20.0)


def test_unicl_is_clip_loss_with_distinct_labels_and_multi_positive_otherwise():
    images, texts, scale = _features(8), _features(8, seed=1), torch.tensor(14.0)
    reference = open_clip.ClipLoss()(images, texts, scale)
    torch.testing.assert_close(unicl_loss(images, texts, torch.arange(8) + 30, scale), reference)
    labels = torch.tensor([0, 0, 1, 2, 2, 2, 7, 9])
    logits = scale * images @ texts.T
    total = 0.0
    for direction in (logits, logits.T):  # -1/|P_i| sum_{j in P_i} log softmax_j, both ways, averaged
        log_p = direction.log_softmax(1)
        total += sum(-log_p[i, labels == labels[i]].mean() for i in range(8)) / 8
    torch.testing.assert_close(unicl_loss(images, texts, labels, scale), total / 2)


# ---------------------------------------------------------------- class-only data


def test_class_texts_and_the_context_they_need():
    plain = classes.class_texts(definitions=False)
    assert plain[0] == "a photo of a square." and len(plain) == len(vocab.SHAPES)
    enriched = classes.class_texts(["wave", "letter f"])  # vocab.SHAPES order, whatever the given order
    assert enriched[0] == f"a photo of a letter f, {vocab.DEFINITIONS['letter f']}"
    assert classes.context_needed(enriched) == 25  # above the default context of 24
    assert classes.class_texts(["ring"], text_format="{name}: {definition}") == [f"ring: {vocab.DEFINITIONS['ring']}"]
    for bad in ("{prompt}", "{prompt} {colour} {definition}", "{}, {definition}", "{prompt"):
        with pytest.raises(ValueError, match="text_format"):
            classes.class_texts(text_format=bad)


def test_class_data_is_single_object_labelled_and_prompted():
    data = classes.class_data({"n": 30, "seed": 5, "shapes": ["star", "circle"]}, 32, TOKENIZER)
    labels = data.extra["class_label"]
    assert data.images.shape == (30, 32, 32, 3) and set(labels) == {
        vocab.SHAPES.index("circle"),
        vocab.SHAPES.index("star"),
    }
    for caption, y in zip(data.captions, labels):
        assert vocab.SHAPES[y] in caption and any(caption == t.format(vocab.SHAPES[y]) for t in classes.CLASS_TEMPLATES)
    assert len(set(data.captions)) > 4  # a template drawn per image
    again = classes.class_data({"n": 10, "seed": 5, "shapes": ["circle", "star"]}, 32, TOKENIZER)
    assert again.captions == data.captions[:10] and np.array_equal(again.images, data.images[:10])


# ---------------------------------------------------------------- the methods on one batch


def _pairs(n, offset=0, label=None):
    rng = np.random.default_rng(offset)
    tokens = torch.zeros(n, 32, dtype=torch.long)
    tokens[:, 0], tokens[:, 1:6], tokens[:, 6] = 2, torch.from_numpy(rng.integers(3, 60, (n, 5))), TOKENIZER.eot_id
    extra = {} if label is None else {"class_label": np.asarray(label, np.int64)}
    return PairedData(rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), [f"c{i}" for i in range(n)], tokens, extra)


def _batch(data, rows, source=None):
    images = torch.from_numpy(np.asarray(data.images[rows])).permute(0, 3, 1, 2).float() / 255
    return Batch(
        images=images,
        texts=data.tokens[rows],
        indices=np.asarray(rows),
        positions=np.arange(len(rows)),
        step=0,
        total_steps=1,
        source=source,
        data=data,
    )


@pytest.fixture(scope="module")
def model():
    return create_model("rn-tiny", TOKENIZER.vocab_size, 32, image_size=32, seed=0)


def test_ratio_zero_is_clip_on_the_same_batch(model):
    data = _pairs(8)
    batch = _batch(data, np.arange(8))
    clip, _ = create_method("clip").loss(model, batch)
    iclip = ICLIP(ratio=0.0)
    merged, sampler = iclip.training_data(data)
    assert merged is data and sampler is None  # the pairs in CLIP's order, no class data
    torch.testing.assert_close(iclip.loss(model, batch)[0], clip, rtol=0, atol=0)
    torch.testing.assert_close(UniCL(ratio=0.0).loss(model, batch)[0], clip, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("class_set,text_negatives", [("all", False), ("batch", False), ("all", True)])
def test_iclip_loss_is_clip_on_pairs_plus_class_text_contrast(model, class_set, text_negatives):
    shapes = ["square", "circle", "star", "cross"]
    ids = [vocab.SHAPES.index(s) for s in shapes]
    class_source = _pairs(6, offset=1, label=[ids[1], ids[3], ids[1], ids[0], ids[3], ids[1]])
    tokens = TOKENIZER(classes.class_texts(shapes))
    method = ICLIP(
        ratio=0.5,
        class_source=class_source,
        class_tokens=tokens,
        class_shapes=shapes,
        class_set=class_set,
        text_negatives=text_negatives,
        weights={"cls": 0.5},
    )
    merged, sampler = method.training_data(_pairs(10))
    rows = np.r_[0:4, 6:10]
    batch = _batch(merged, rows, source=np.array([CLASS_SOURCE] * 4 + [PAIR_SOURCE] * 4))
    loss, logs = method.loss(model, batch)

    images = F.normalize(model.encode_image(batch.images), dim=-1)
    texts = F.normalize(model.encode_text(batch.texts[4:]), dim=-1)
    class_feats = F.normalize(model.encode_text(tokens), dim=-1)
    scale = model.logit_scale.exp()
    labels = torch.tensor([1, 3, 1, 0])  # positions of the class rows' shapes in ``shapes``
    if class_set == "batch":  # classes 0, 1, 3 only
        class_feats, labels = class_feats[[0, 1, 3]], torch.tensor([1, 2, 1, 0])
    if text_negatives:
        class_feats = torch.cat([class_feats, texts])
    expected = clip_loss(images[4:], texts, scale) + 0.5 * class_text_contrast(images[:4], class_feats, labels, scale)
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=1e-5)
    assert set(logs) == {"loss_clip", "loss_cls", "logit_scale"}


def test_unicl_labels_share_within_a_class_and_not_among_pairs(model):
    class_source = _pairs(4, offset=1, label=[3, 5, 3, 3])
    method = UniCL(ratio=0.5, class_source=class_source)
    merged, _ = method.training_data(_pairs(6))
    batch = _batch(merged, np.array([0, 1, 2, 4, 5, 6]), source=np.array([CLASS_SOURCE] * 3 + [PAIR_SOURCE] * 3))
    labels = method.labels(batch)
    assert labels.tolist() == [3, 5, 3, 24 + 4, 24 + 5, 24 + 6]
    out = model(batch.images, batch.texts)
    torch.testing.assert_close(
        method.loss(model, batch)[0],
        unicl_loss(out["image_features"], out["text_features"], labels, out["logit_scale"]),
    )


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.9, 1.0])
def test_mixed_batches_hold_round_r_b_class_rows_at_equal_total_samples(ratio):
    method = UniCL(ratio=ratio, class_source=_pairs(40, offset=1, label=np.arange(40) % 24))
    merged, sampler = method.training_data(_pairs(64))
    assert isinstance(sampler, MixedSampler) and sampler.size(len(merged)) == 64  # an epoch = the pairs' count
    plan = sampler.plan(seed=0, episode=0, n_data=len(merged), episode_length=64, batch_size=16)
    rows = round(ratio * 16)
    for b in range(4):
        source = plan.names(np.arange(16 * b, 16 * b + 16))
        assert list(source) == [CLASS_SOURCE] * rows + [PAIR_SOURCE] * (16 - rows)
        assert (merged.extra["class_label"][plan.images[16 * b : 16 * b + rows]] >= 0).all()
    assert plan.seen() == {CLASS_SOURCE: 4 * rows, PAIR_SOURCE: 64 - 4 * rows}


# ---------------------------------------------------------------- bad input, before any compute


@pytest.mark.parametrize(
    "kwargs,overrides,name",
    [
        ({"ratio": -0.1, "class_data": CLASS_DATA}, {}, "ratio"),
        ({"ratio": 1.5, "class_data": CLASS_DATA}, {}, "ratio"),
        ({"ratio": "half", "class_data": CLASS_DATA}, {}, "ratio"),
        ({"ratio": 0.01, "class_data": CLASS_DATA}, {}, "ratio"),  # round(0.01 * 16) = 0 class rows
        ({"ratio": 0.5}, {}, "class_data"),
        ({"class_data": {"n": 0}}, {}, "class_data n"),
        ({"class_data": {"n": 10, "size": 3}}, {}, "class_data"),
        ({"class_data": {"n": 10, "shapes": ["blob"]}}, {}, "shapes"),
        ({"class_data": {"n": 10, "seed": 10**9}}, {}, "seed"),
        ({"class_data": {"n": 10, "seed": 3}}, {"world_seed": 3}, "world_seed"),
        ({"class_data": CLASS_DATA, "class_set": "some"}, {}, "class_set"),
        ({"class_data": CLASS_DATA, "temperature": "cold"}, {}, "temperature"),
        ({"class_data": CLASS_DATA, "text_format": "{prompt} {synonym}"}, {}, "text_format"),
        ({"class_data": CLASS_DATA, "text_format": "{prompt}"}, {}, "text_format"),
        ({"class_data": CLASS_DATA, "definitions": "yes"}, {}, "definitions"),
        ({"class_data": CLASS_DATA, "template": "a photo"}, {}, "template"),
        ({"class_data": CLASS_DATA, "weights": {"cls": -1}}, {}, "weights"),
        ({"class_data": CLASS_DATA, "text_negatives": 1}, {}, "text_negatives"),
        ({"class_data": CLASS_DATA, "lambda": 1}, {}, "method_kwargs"),
        ({"class_data": CLASS_DATA}, {"context_length": 24}, "context_length"),  # definitions take 25 tokens
    ],
)
def test_iclip_refuses_bad_input_naming_the_parameter(kwargs, overrides, name):
    with pytest.raises(ValueError, match=name):
        experiment.make_config("smoke", method="iclip", method_kwargs=kwargs, **{**TINY, **overrides})


def test_what_is_accepted():
    experiment.make_config("smoke", method="iclip", method_kwargs={"ratio": 0.0}, **{**TINY, "context_length": 24})
    experiment.make_config(
        "smoke",
        method="iclip",
        method_kwargs={"class_data": CLASS_DATA, "definitions": False},
        **{**TINY, "context_length": 24},
    )  # names only fit the default context
    experiment.make_config("smoke", method="unicl", method_kwargs={"ratio": 1.0, "class_data": CLASS_DATA}, **TINY)
    with pytest.raises(ValueError, match="class_set"):
        experiment.make_config(
            "smoke", method="unicl", method_kwargs={"class_data": CLASS_DATA, "class_set": "all"}, **TINY
        )


def test_typed_arguments_hold_the_defaults_and_the_record_form():
    config = experiment.make_config("smoke", method="iclip", method_kwargs={"class_data": CLASS_DATA}, **TINY)
    args = config.method_args
    assert isinstance(args, ICLIP.Args) and (args.ratio, args.class_set, args.temperature) == (0.5, "all", "shared")
    assert args.weights == {"clip": 1.0, "cls": 1.0} and args.definitions and not args.text_negatives
    assert config.to_dict()["method_kwargs"] == {"class_data": CLASS_DATA}  # only what differs from the defaults
    halved = config.replace(method_kwargs={"class_data": CLASS_DATA, "weights": {"cls": 0.5}})
    assert halved.method_args.weights == {"clip": 1.0, "cls": 0.5}
    assert config.replace(method_kwargs={"class_data": CLASS_DATA, "weights": {"clip": 1}}) == config
    unicl = experiment.make_config("smoke", method="unicl", method_kwargs={"class_data": CLASS_DATA}, **TINY)
    assert type(unicl.method_args) is UniCL.Args and unicl.method_args.kwargs() == {
        "ratio": 0.5,
        "class_data": CLASS_DATA,
    }
    assert ICLIP.Args.from_dict({"ratio": 0}).class_data is None  # r = 0 (plain CLIP) needs no class data


# ---------------------------------------------------------------- the second retrieval set and two steps


def test_second_retrieval_set_has_its_own_seed_and_scenes():
    ret = tasks.load_retrieval(n_images=12, name="retrieval2")
    assert len(ret) == 12 and len(ret.captions) == 60 and len(set(ret.captions[:5])) == 5
    seeds = [s for spec in tasks.TASKS.values() for s in spec["seeds"].values()] + [tasks.RETRIEVAL_SEED]
    seeds += list(tasks.RELATION_SEEDS.values())
    seeds += [s for spec in tasks.MULTILABEL_TASKS.values() for s in spec["seeds"].values()]
    assert tasks.RETRIEVAL2_SEED not in seeds and tasks.RETRIEVAL2_SEED >= tasks.TASK_SEED_BASE
    first = tasks.load_retrieval(n_images=12)
    assert not np.array_equal(first.images, ret.images)
    with pytest.raises(ValueError, match="name"):
        tasks.load_retrieval(n_images=2, name="flickr")
    chance = suite.chance_levels(
        suite.EvalConfig(tasks=("retrieval2",), scale="smoke", task_train=40, task_test=20, retrieval_images=10)
    )
    assert chance["retrieval2/i2t_R@1"] == chance["retrieval/i2t_R@1"]


@pytest.mark.parametrize("method", ["iclip", "unicl"])
def test_two_training_steps_through_experiment_run(method):
    extra = {"temperature": "separate", "class_set": "batch"} if method == "iclip" else {}
    config = experiment.make_config("smoke", method=method, method_kwargs={"class_data": CLASS_DATA, **extra}, **TINY)
    record = experiment.run(config, progress=False, verbose=False)
    history = record["history"]
    assert len(history) == 2 and all(np.isfinite(h["loss"]) for h in history)
    assert (
        ("loss_cls" in history[0] and "cls_logit_scale" in history[0])
        if method == "iclip"
        else "loss_unicl" in history[0]
    )
    for key in ("retrieval/i2t_R@1", "retrieval2/i2t_R@1", "retrieval2/t2i_R@5", "shapes10/zeroshot_top1"):
        assert key in record["metrics"]
