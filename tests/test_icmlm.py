"""ICMLM's computing core on tiny sizes: the POS lexicon and masked triplets (``papers.icmlm.lexicon``), ℓ_tp / ℓ_mlm
(``papers.icmlm.loss``), the frozen world-LM (``world_lm``), the TP_* and ICMLM methods through the one trainer and the
suite's image-only evaluation, and attribute zero-shot classification (``papers.icmlm.zsl``)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vlp_lib import eval as ev
from vlp_lib import experiment
from vlp_lib.data import vocab
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.methods import Batch, available_methods, create_method
from vlp_lib.models import ImageOnly, create_model
from vlp_lib.papers.icmlm import lexicon, world_lm, zsl
from vlp_lib.papers.icmlm.loss import icmlm_loss, mlm_loss, tp_loss
from vlp_lib.papers.icmlm.method import caption_clusters
from vlp_lib.train import load_checkpoint, train

CAPTIONS = [
    "a red star on a striped background",
    "photo of a crimson letter t",
    "a red star and a blue ring, free shipping",
    "a small red star isolated on plain background",
]
TINY_LM = dict(layers=1, width=32, heads=2, mlp_ratio=2, captions=256, epochs=6, batch_size=32, warmup_steps=2, lr=3e-3)
TINY = dict(
    model="vit-tiny",
    train_size=64,
    batch_size=32,
    epochs=1,
    task_train=40,
    task_test=20,
    retrieval_images=10,
    eval_tasks=["shapes10"],
    world_knobs={"junk_rate": 0.0, "mismatch_rate": 0.0},
)


@pytest.fixture(autouse=True)
def shared_store(_isolated_dirs, monkeypatch, tmp_path_factory):
    """One results store for the file: the tiny world-LM is pretrained once and loaded by later tests."""
    base = tmp_path_factory.getbasetemp() / "icmlm_store"
    monkeypatch.setenv("VLP_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(base / "checkpoints"))


def config(method, scale="smoke", **kwargs):
    overrides = {**TINY, **{k: kwargs.pop(k) for k in list(kwargs) if k in TINY}}
    if method == "icmlm":
        kwargs.setdefault("lm", TINY_LM)
    return experiment.make_config(scale, method=method, method_kwargs=kwargs, **overrides)


def prepare(cfg):
    """What ``experiment.run`` does before training: data, image-only model, method, the method's data."""
    data, tokenizer, model = experiment.build(cfg)
    trained = experiment.trained_runs()
    model = experiment.wrap_model(cfg, model, trained)
    method = create_method(cfg.method, **experiment.method_arguments(cfg, data, model, tokenizer, trained))
    data, sampler = method.training_data(data)
    return data, tokenizer, model, method


# --- lexicon and triplets ---------------------------------------------------------------------------------------


def test_lexicon_classes_are_disjoint_words_of_the_tokenizer():
    words = [w for p in lexicon.POS_CLASSES for w in lexicon.LEXICON[p]]
    assert len(words) == len(set(words)) == lexicon.lexicon_size()
    assert set(words) <= set(vocab.vocabulary())
    assert lexicon.pos_of("t") == "NN" and lexicon.pos_of("dot") == "ADJ"  # head words of "letter t", "polka dot"
    assert lexicon.pos_of("crimson") == "ADJ" and lexicon.pos_of("isolated") == "VB" and lexicon.pos_of("a") is None
    assert lexicon.SHAPE_HEADS[vocab.SHAPES.index("letter t")] == "t" and len(lexicon.SHAPE_HEADS) == 24


def test_tag_vocabulary_and_targets_on_known_captions():
    # NN counts: star 3, background 2, ring / t / photo / shipping 1 (ties: lexicon order, shapes first)
    assert lexicon.tag_vocabulary(CAPTIONS, ("NN",), 3) == ["star", "background", "ring"]
    assert lexicon.tag_vocabulary(CAPTIONS, ("ADJ",), 2) == ["red", "crimson"]
    assert lexicon.tag_vocabulary(CAPTIONS, ("VB",), 5) == ["isolated"]  # fewer than k occur: all of them
    both = lexicon.tag_vocabulary(CAPTIONS, ("ADJ", "NN"), 2)
    assert both == ["star", "red"]  # 3 captions each; NN comes first in the lexicon
    targets = lexicon.tag_targets(CAPTIONS, ["star", "red", "t"])
    np.testing.assert_array_equal(targets, [[1, 1, 0], [0, 0, 1], [1, 1, 0], [1, 1, 0]])
    assert targets.dtype == np.float32


def test_masked_triplets_one_per_maskable_token():
    tokenizer = world_tokenizer()
    tokens = tokenizer(CAPTIONS)
    ids = lexicon.tag_ids(tokenizer, ["star", "red"])
    mask_id = tokenizer.vocab_size
    out = lexicon.masked_triplets(tokens, ids, mask_id)
    assert out["pair"].tolist() == [0, 0, 2, 2, 3, 3]  # caption 1 has neither word
    for pair, masked, pos, target in zip(out["pair"], out["tokens"], out["position"], out["target"]):
        changed = (masked != tokens[pair]).nonzero().flatten().tolist()
        assert changed == [int(pos)] and masked[pos] == mask_id and tokens[pair, pos] == target
        assert tokenizer.words[int(target)] in ("star", "red")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(pos=("NN", "XX")), "pos"),
        (dict(pos="NN"), "pos"),
        (dict(pos=()), "pos"),
        (dict(k=0), "k"),
        (dict(k=2.0), "k"),
    ],
)
def test_lexicon_refuses_bad_pos_and_k(kwargs, name):
    with pytest.raises(ValueError, match=name):
        lexicon.tag_vocabulary(CAPTIONS, **kwargs)


# --- losses ----------------------------------------------------------------------------------------------------


def test_tp_loss_matches_references():
    torch.manual_seed(0)
    logits = torch.randn(6, 5)
    targets = (torch.rand(6, 5) < 0.4).float()
    targets[2] = 0  # an image without tags
    by_hand = -(targets * F.logsigmoid(logits) + (1 - targets) * F.logsigmoid(-logits))
    assert torch.allclose(tp_loss(logits, targets), F.binary_cross_entropy_with_logits(logits, targets))
    assert torch.allclose(tp_loss(logits, targets, reduction="sum"), by_hand.sum(1).mean())
    tagged = targets.sum(1) > 0
    normalised = targets[tagged] / targets[tagged].sum(1, keepdim=True)
    reference = -(normalised * logits[tagged].log_softmax(1)).sum(1).mean()
    assert torch.allclose(tp_loss(logits, targets, kind="softmax"), reference)
    with pytest.raises(ValueError, match="tp_loss"):
        tp_loss(logits, targets, kind="hinge")
    with pytest.raises(ValueError, match="tp_reduction"):
        tp_loss(logits, targets, reduction="max")


def test_mlm_loss_and_eq8():
    torch.manual_seed(1)
    logits = torch.randn(4, 7, requires_grad=True)
    targets = torch.tensor([3, -100, 0, 6])
    assert torch.allclose(mlm_loss(logits, targets), F.cross_entropy(logits[[0, 2, 3]], targets[[0, 2, 3]]))
    none = mlm_loss(logits, torch.full((4,), -100))
    none.backward()  # a batch without maskable tokens keeps the graph and adds nothing
    assert none.item() == 0.0 and logits.grad.abs().sum() == 0
    mlm, tp = torch.tensor(2.0), torch.tensor(3.0)
    assert icmlm_loss(mlm, tp, 0.0).item() == 2.0 and icmlm_loss(mlm, tp, 0.1).item() == pytest.approx(2.3)
    with pytest.raises(ValueError, match="lambda"):
        icmlm_loss(mlm, tp, -0.1)


# --- the world-LM ----------------------------------------------------------------------------------------------


def test_world_lm_pretrains_freezes_and_caches():
    lm, info = world_lm.world_lm(TINY_LM, verbose=False)
    assert info["loss_last"] < info["loss_first"] - 0.5  # it learns
    assert not any(p.requires_grad for p in lm.parameters()) and not lm.training
    again, info_again = world_lm.world_lm(TINY_LM, verbose=False)  # loaded, not retrained
    assert info_again == info
    assert all(torch.equal(a, b) for a, b in zip(lm.state_dict().values(), again.state_dict().values()))
    tokenizer = world_tokenizer()
    assert lm.mask_id == tokenizer.vocab_size and lm.token_embedding.num_embeddings == tokenizer.vocab_size + 1
    trip = lexicon.masked_triplets(tokenizer(CAPTIONS), lexicon.tag_ids(tokenizer, ["star"]), lm.mask_id)
    star = tokenizer.word_to_id["star"]
    accuracy = world_lm.masked_token_accuracy(lm, trip["tokens"], trip["position"], trip["target"])
    assert 0.0 <= accuracy <= 1.0
    only = world_lm.masked_token_accuracy(
        lm, trip["tokens"], trip["position"], trip["target"], candidates=torch.tensor([star])
    )
    assert only == 1.0  # one candidate, and it is every target


@pytest.mark.parametrize(
    "override, name",
    [
        (dict(mask_rate=0.0), "mask_rate"),
        (dict(mask_rate=1.0), "mask_rate"),
        (dict(heads=3), "heads"),
        (dict(layers=0), "layers"),
        (dict(size=3), "unknown"),
    ],
)
def test_world_lm_config_refused(override, name):
    with pytest.raises(ValueError, match=name):
        world_lm.check_config(override)


# --- the methods -----------------------------------------------------------------------------------------------


def test_image_only_model_is_read_as_a_spatial_map():
    model = ImageOnly(create_model("vit-tiny", 300, 24, image_size=32))
    assert not ev.has_text_tower(model) and model.map_shape() == (128, 8, 8)
    x = torch.randn(2, 3, 32, 32)
    maps = model.feature_maps(x, last=3)
    assert [m.shape for m in maps] == [(2, 128, 8, 8)] * 3
    assert torch.allclose(model.encode_image(x), maps[-1].mean(dim=(2, 3)), atol=1e-6)
    with pytest.raises(ValueError, match="last"):  # vit-tiny has 3 blocks
        model.feature_maps(x, last=4)


def test_tp_and_icmlm_train_and_evaluate_image_only():
    assert {"tp", "icmlm"} <= set(available_methods())
    for cfg in (
        config("tp", label_set="postag", pos=["NN", "ADJ"], k=20),
        config("icmlm", head="tfm", heads=2, layers=1),
    ):
        record = experiment.run(cfg, progress=False, verbose=False)
        metrics = record["metrics"]
        assert len(record["history"]) == 2 and np.isfinite(metrics["final_loss"])
        assert "shapes10/linear" in metrics and "shapes10/knn" in metrics
        assert not any("zeroshot" in k or k.startswith("retrieval/") for k in metrics)
        model, _ = experiment.load_trained(record)
        assert isinstance(model, ImageOnly) and not ev.has_text_tower(model)
    assert {"loss_mlm", "loss_tp"} <= set(record["history"][-1])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(label_set="label"),
        dict(head="att-fc", heads=3, layers=2, triplets="all", output="lm", vocabulary="labels", label_set="label"),
    ],
)
def test_tp_label_and_icmlm_variants_take_a_step(kwargs):
    method = "tp" if kwargs == dict(label_set="label") else "icmlm"
    cfg = config(method, **kwargs)
    data, _, model, m = prepare(cfg)
    assert data.extra["tp_targets"].shape[1] == 24  # the world's shapes, from every object of each image
    if method == "icmlm":
        assert len(data) == int(data.extra["mask_position"].shape[0]) > 64  # one row per (pair, shape word)
    result = train(model, m, data, experiment.train_config(cfg, progress=False))
    assert len(result.history) >= 2 and all(np.isfinite(h["loss"]) for h in result.history)


def test_tp_cluster_targets_are_cached_minilm_kmeans_clusters():
    cfg = config("tp", label_set="cluster", k=4)
    data, _, model, method = prepare(cfg)
    targets = data.extra["tp_targets"]
    assert targets.shape == (64, 4) and (targets.sum(1) == 1).all()  # one caption per image: one cluster each
    assert len(targets.argmax(1).unique()) == 4
    again = caption_clusters(data.captions, 4, seed=cfg.seed)  # cached by captions, k and seed
    assert torch.equal(targets.argmax(1), torch.from_numpy(again))
    result = train(model, method, data, experiment.train_config(cfg, progress=False))
    assert len(result.history) == 2 and all(np.isfinite(h["loss"]) for h in result.history)


def test_icmlm_masks_label_set_tokens_and_trains_the_backbone_not_the_lm():
    cfg = config("icmlm", head="tfm", k=10, **{"lambda": 1.0})
    data, tokenizer, model, method = prepare(cfg)
    tags = method.tags
    assert len(tags) == 10 and all(lexicon.pos_of(t) for t in tags)
    idx = np.arange(8)
    images = torch.randn(8, 3, 32, 32)

    def batch(step):
        return Batch(images, data.tokens[idx], idx, idx, step, 2, data=data)

    positions = method.draw_positions(batch(0))
    assert torch.equal(positions, method.draw_positions(batch(0)))  # seeded by (seed, step)
    ids = lexicon.tag_ids(tokenizer, tags)
    for row, pos in enumerate(positions.tolist()):
        has = bool(torch.isin(data.tokens[row], ids).any())
        assert (pos >= 0) == has and (pos < 0 or int(data.tokens[row, pos]) in ids.tolist())
    loss, logs = method.loss(model, batch(0))
    loss.backward()
    assert loss.item() == pytest.approx(logs["loss_mlm"] + logs["loss_tp"], rel=1e-5)
    assert model.visual.conv1.weight.grad.abs().sum() > 0 and method.head.layers[0].attention.q.weight.grad is not None
    assert all(p.grad is None for p in method.lm.parameters())
    method.train()
    assert not method.lm.training


@pytest.mark.parametrize(
    "method, kwargs, name",
    [
        ("tp", dict(label_set="words"), "label_set"),
        ("tp", dict(k=0), "k"),
        ("tp", dict(label_set="label", k=5), "k"),
        ("tp", dict(pos=["NN", "PRP"]), "pos"),
        ("tp", dict(tp_loss="hinge"), "tp_loss"),
        ("tp", dict(heads=2), "method_kwargs"),
        ("icmlm", dict(label_set="cluster"), "label_set"),
        ("icmlm", dict(lm=dict(TINY_LM, mask_rate=1.0)), "mask_rate"),
        ("icmlm", dict(lm=dict(TINY_LM, mask_rate=0)), "mask_rate"),
        ("icmlm", dict(layers=0), "layers"),
        ("icmlm", dict(heads=0), "heads"),
        ("icmlm", dict(heads=3, head_dim="split"), "heads"),
        ("icmlm", {"lambda": -0.1}, "lambda"),
        ("icmlm", dict(head="mlp"), "head"),
        ("icmlm", dict(lm=dict(TINY_LM, context_length=16)), "context_length"),
        ("icmlm", dict(init={"method": "clip"}), "init"),
    ],
)
def test_bad_method_arguments_refused_before_compute(method, kwargs, name):
    with pytest.raises(ValueError, match=name):
        config(method, **kwargs)


# --- attribute zero-shot classification ------------------------------------------------------------------------


def test_shapes_colours_attributes_and_split():
    a = zsl.shapes_colours_attributes()
    factors = zsl.shapes_colours_factors()
    assert a.shape == (100, 30) and (a.sum(1) == 3).all() and len(np.unique(a, axis=0)) == 100
    assert factors[7].tolist() == [1, 2]  # class 7 = "green rectangle": shape 1, colour family 2
    seen, unseen = zsl.zsl_split(factors, 25, seed=3)
    assert len(seen) == 75 and len(unseen) == 25 and not set(seen) & set(unseen)
    for j in range(2):
        assert set(factors[unseen, j]) <= set(factors[seen, j])
    assert np.array_equal(zsl.zsl_split(factors, 25, seed=3)[1], unseen)
    with pytest.raises(ValueError, match="n_unseen"):
        zsl.zsl_split(factors, 0)


def test_attribute_zsl_beats_chance_on_separable_data():
    rng = np.random.default_rng(0)
    factors = np.array([(s, c) for s in range(5) for c in range(4)])
    attributes = np.concatenate([np.eye(5)[factors[:, 0]], np.eye(4)[factors[:, 1]]], axis=1)
    projection = rng.normal(size=(9, 16))
    seen, unseen = zsl.zsl_split(factors, 5, seed=1)

    def sample(classes, n):
        labels = rng.choice(classes, n)
        return attributes[labels] @ projection + 0.3 * rng.normal(size=(n, 16)), labels

    x_train, y_train = sample(seen, 300)
    x_test, y_test = sample(np.arange(20), 400)
    out = zsl.attribute_zsl(x_train, y_train, x_test, y_test, attributes, seen)
    assert out["top1"] > 0.5 and out["unseen_top1"] > 0.3  # chance: 1 / 20
    assert out["seen_top1"] >= out["unseen_top1"]
    with pytest.raises(ValueError, match="train_labels"):
        zsl.attribute_zsl(x_train, np.full(300, unseen[0]), x_test, y_test, attributes, seen)
    with pytest.raises(ValueError, match="seen"):
        zsl.attribute_zsl(x_train, y_train, x_test, y_test, attributes, [0, 99])
    with pytest.raises(ValueError, match="test_features"):
        zsl.attribute_zsl(x_train, y_train, x_test[:, :3], y_test, attributes, seen)


# --- ICMLM's targets: linear-SVM multi-label probes, layer-wise features, the proxy task -----------------------


def test_multilabel_svm_probe_recovers_separable_tags_and_is_at_chance_on_noise():
    rng = np.random.default_rng(0)
    targets = (rng.random((600, 6)) < 0.3).astype(np.int64)
    features = targets @ rng.normal(size=(6, 20)) + 0.2 * rng.normal(size=(600, 20))
    out = ev.multilabel_svm_probe(features[:400], targets[:400], features[400:], targets[400:])
    assert out["map"] > 0.95 and len(out["Cs"]) == 6 and set(out["Cs"]) <= set(ev.DEFAULT_SVM_CS)
    noise = rng.normal(size=(600, 20))
    chance = ev.multilabel_svm_probe(noise[:400], targets[:400], noise[400:], targets[400:])["map"]
    assert abs(chance - targets[400:].mean()) < 0.1  # a random scorer's AP is the prevalence
    with pytest.raises(ValueError, match="train_targets"):
        ev.multilabel_svm_probe(features[:400], targets[:400, 0], features[400:], targets[400:])
    with pytest.raises(ValueError, match="Cs"):
        ev.multilabel_svm_probe(features[:400], targets[:400], features[400:], targets[400:], Cs=[0.0])


def test_svm_presence_probes_in_the_suite_and_their_chance_levels():
    from vlp_lib import suite
    from vlp_lib.data import tasks

    assert tasks.MULTILABEL_TASKS["objects_shift"]["image_size"] == 64
    assert {tasks.MULTILABEL_TASKS[n]["probe"] for n in ("objects", "objects_shift")} == {"svm"}
    model = ImageOnly(create_model("rn-tiny", 64, 24, image_size=64, seed=0))
    cfg = suite.EvalConfig(
        tasks=("objects", "objects_shift"), scale="smoke", task_train=80, task_test=40, retrieval_images=10, seed=0
    )
    metrics = suite.evaluate_suite(model, None, cfg)
    chance = suite.chance_levels(cfg, text_tower=False)
    assert set(metrics) == set(chance) == {"objects/map", "objects_shift/map"}
    assert all(0 < v <= 1 for v in [*metrics.values(), *chance.values()])


def test_feature_maps_pooled_per_layer_and_attribute_zsl_per_layer():

    model = ImageOnly(create_model("rn-tiny", 64, 24, image_size=64, seed=0))
    images = np.random.default_rng(0).integers(0, 255, (5, 32, 32, 3), dtype=np.uint8)
    maps = ev.encode_feature_maps(model, images, last=3, grid=1)
    assert [tuple(m.shape) for m in maps] == [(5, 128), (5, 256), (5, 512)]  # layer2, layer3, layer4 GAP
    assert [m.shape[1] for m in ev.encode_feature_maps(model, images, last=2, grid=2)] == [1024, 2048]
    assert torch.allclose(maps[-1], ev.encode_images(model, images), atol=1e-5)  # GAP(X) is encode_image
    with pytest.raises(ValueError, match="feature_maps"):
        ev.encode_feature_maps(create_model("rn-tiny", 64, 24, seed=0), images)
    with pytest.raises(ValueError, match="grid"):
        ev.encode_feature_maps(model, images, grid=0)
    with pytest.raises(ValueError, match="last"):  # a layer count the model lacks
        ev.encode_feature_maps(model, images, last=6)
    out = zsl.attribute_zsl_layers(model, "smoke", 120, 60, last=3, splits=2, max_iter=10)
    assert sorted(out) == [3, 4, 5] and all(0 <= v["top1"] <= 1 for v in out.values())
    assert set(out[5]) == {"top1", "seen_top1", "unseen_top1"}


def test_proxy_task_of_a_stored_icmlm_run_and_the_lm_alone():
    from vlp_lib.papers.icmlm.method import ICMLM, heldout_pairs, proxy_metrics

    cfg = config("icmlm", head="att-fc", heads=2, **{"lambda": 0.5})
    record = experiment.run(cfg, progress=False, verbose=False)
    model, method, tokenizer, data = experiment.load_trained_method(record)
    assert isinstance(method, ICMLM) and not method.training and len(data) == cfg.train_size
    state = load_checkpoint(experiment.checkpoint_file(record))["method"]
    assert torch.equal(method.decoder.weight, state["decoder.weight"])  # the trained head, not a new one
    heldout = heldout_pairs(cfg, tokenizer, 30)
    assert len(heldout) == 30 and not np.array_equal(heldout.images[:5], data.images[:5])  # a world of its own
    out = proxy_metrics(model, method, heldout)
    assert set(out) == {"tp_loss", "mtp_top1", "lm_top1", "triplets"} and out["triplets"] >= 30
    assert 0 <= out["mtp_top1"] <= 1 and out["tp_loss"] > 0
    triplets = lexicon.masked_triplets(heldout.tokens, method.mask_ids, method.lm.mask_id)
    assert out["lm_top1"] == world_lm.masked_token_accuracy(
        method.lm, triplets["tokens"], triplets["position"], triplets["target"]
    )
    assert proxy_metrics(model, method, heldout) == out  # deterministic: eval mode, no sampling
    tp_record = experiment.run(config("tp", label_set="postag", k=10), progress=False, verbose=False)
    tp_model, tp_method, _, _ = experiment.load_trained_method(tp_record)
    assert set(proxy_metrics(tp_model, tp_method, heldout)) == {"tp_loss"}
    with pytest.raises(ValueError, match="n must"):
        heldout_pairs(cfg, tokenizer, 0)
