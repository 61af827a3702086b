"""Tests of vlp_lib.eval: real code on synthetic data whose right answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vlp_lib import eval as ev
from vlp_lib.data.transforms import to_model_input
from vlp_lib.eval import probes


def blobs(n_per_class: int, n_classes: int, dim: int, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs around random unit-ish centres; ``spread`` is the noise std relative to centre scale."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim))
    y = np.repeat(np.arange(n_classes), n_per_class)
    x = centres[y] + spread * rng.normal(size=(len(y), dim))
    perm = rng.permutation(len(y))
    return x[perm].astype(np.float32), y[perm]


# --------------------------------------------------------------------------------------------------------------
# fake model: image features are one-hot classes encoded in the pixels, text features come from token ids


class FakeVisual(torch.nn.Module):
    def __init__(self, image_size):
        super().__init__()
        self.image_size = image_size


class FakeCLIP(torch.nn.Module):
    """Image of class c has pixel value 10*c in channel 0; its feature is one-hot(c) (scaled by 3).

    The tokenizer maps "<template> <classname>" to the class id found in the classname and the template id,
    and text features are one-hot(class) plus a template-dependent perturbation, so that the ensemble
    average differs from any single template.
    """

    def __init__(self, n_classes: int, image_size=(8, 8)):
        super().__init__()
        self.n_classes = n_classes
        self.visual = FakeVisual(image_size)
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        self.seen_sizes: list[tuple[int, ...]] = []
        self.modes: list[bool] = []

    def encode_image(self, x: torch.Tensor) -> torch.Tensor:
        self.seen_sizes.append(tuple(x.shape))
        self.modes.append(self.training)
        # undo to_model_input's normalisation to get the pixel value back
        pixel = (x[:, 0, 0, 0] * 0.25 + 0.5) * 255.0
        cls = torch.round(pixel / 10.0).long()
        return 3.0 * F.one_hot(cls, self.n_classes).float()

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        cls, tmpl = tokens[:, 0], tokens[:, 1]
        feat = F.one_hot(cls, self.n_classes).float()
        # template t adds (t+1) * 0.5 on the "next" class and scales the whole vector by (t+1)
        feat = feat + 0.5 * (tmpl.float() + 1).view(-1, 1) * F.one_hot((cls + 1) % self.n_classes, self.n_classes)
        return feat * (tmpl.float() + 1).view(-1, 1)


def fake_tokenizer(texts: list[str]) -> torch.Tensor:
    # texts look like "t{template_id} c{class_id}"
    rows = []
    for t in texts:
        tmpl, cls = t.split()
        rows.append([int(cls[1:]), int(tmpl[1:])])
    return torch.tensor(rows, dtype=torch.long)


def class_images(labels: np.ndarray, size: int = 8) -> np.ndarray:
    imgs = np.zeros((len(labels), size, size, 3), dtype=np.uint8)
    imgs[..., 0] = (10 * labels).astype(np.uint8)[:, None, None]
    return imgs


# --------------------------------------------------------------------------------------------------------------
# encoding


def test_encode_images_batches_resizes_and_restores_mode():
    model = FakeCLIP(n_classes=4, image_size=(8, 8))
    model.train()
    labels = np.array([0, 1, 2, 3, 2, 1, 0])
    feats = ev.encode_images(model, class_images(labels, size=16), batch_size=3)
    assert feats.dtype == torch.float32 and feats.device.type == "cpu"
    assert torch.equal(feats, 3.0 * F.one_hot(torch.as_tensor(labels), 4).float())  # unnormalised
    assert [s[0] for s in model.seen_sizes] == [3, 3, 1]
    assert all(s[1:] == (3, 8, 8) for s in model.seen_sizes)  # resized from 16 to the tuple size 8
    assert model.modes == [False, False, False] and model.training  # eval inside, restored afterwards
    normed = ev.encode_images(model, class_images(labels), normalize=True)
    assert torch.allclose(normed.norm(dim=1), torch.ones(len(labels)))


def test_encode_images_with_a_real_open_clip_model():
    open_clip = pytest.importorskip("open_clip")
    torch.manual_seed(0)
    model = open_clip.model.CLIP(
        embed_dim=16,
        vision_cfg=dict(image_size=32, patch_size=8, width=32, layers=1, head_width=16),
        text_cfg=dict(context_length=8, vocab_size=50, width=32, heads=2, layers=1),
    )
    model.eval()
    images = np.random.default_rng(0).integers(0, 256, size=(5, 32, 32, 3), dtype=np.uint8)
    feats = ev.encode_images(model, images, batch_size=2)
    with torch.no_grad():
        direct = model.encode_image(to_model_input(images, image_size=32))
    assert feats.shape == (5, 16)
    assert torch.allclose(feats, direct, atol=1e-5)
    assert not model.training
    tokens = lambda texts: torch.randint(0, 50, (len(texts), 8), generator=torch.Generator().manual_seed(1))
    assert ev.encode_texts(model, tokens, ["a", "b", "c"], batch_size=2).shape == (3, 16)


def test_encode_texts_normalize_and_errors():
    model = FakeCLIP(n_classes=3)
    feats = ev.encode_texts(model, fake_tokenizer, ["t0 c0", "t1 c2"], normalize=True)
    assert torch.allclose(feats.norm(dim=1), torch.ones(2))
    with pytest.raises(ValueError, match="texts"):
        ev.encode_texts(model, fake_tokenizer, "t0 c0")


# --------------------------------------------------------------------------------------------------------------
# zero-shot


def test_zero_shot_classifier_is_the_normalised_mean_of_normalised_template_embeddings():
    model = FakeCLIP(n_classes=5)
    classnames = [f"c{i}" for i in range(5)]
    templates = ["t0 {}", "t1 {}", lambda c: f"t2 {c}"]  # str.format and open_clip-style callables
    weights = ev.zero_shot_classifier(model, fake_tokenizer, classnames, templates)
    assert weights.shape == (5, 5)
    for c in range(5):
        emb = model.encode_text(torch.tensor([[c, t] for t in range(3)])).detach()
        expected = F.normalize(F.normalize(emb, dim=1).mean(0), dim=0)
        # the plain (unnormalised) mean differs in direction: normalising each template first matters
        assert not torch.allclose(F.normalize(emb.mean(0), dim=0), expected, atol=1e-3)
        assert torch.allclose(weights[:, c], expected, atol=1e-6)
    assert torch.allclose(weights.norm(dim=0), torch.ones(5))


def test_zero_shot_accuracy_known_answer_and_top5_semantics():
    n_classes = 7
    model = FakeCLIP(n_classes=n_classes)
    classnames = [f"c{i}" for i in range(n_classes)]
    labels = np.arange(n_classes).repeat(3)
    images = class_images(labels)
    res = ev.zero_shot_accuracy(model, fake_tokenizer, images, labels, classnames, ["t0 {}", "t1 {}"])
    assert res == {"top1": 1.0, "top5": 1.0, "top1_macro": 1.0}

    # shifted labels: the true class is the image's class - 1, whose text embeddings lean towards the image's
    # class (second highest score), so top-1 is 0 and top-5 is 1
    shifted = (labels - 1) % n_classes
    res = ev.zero_shot_accuracy(model, fake_tokenizer, images, shifted, classnames, ["t0 {}"])
    assert res["top1"] == 0.0 and res["top5"] == 1.0
    # with 3 classes top5 means top-3: always right
    small = ev.zero_shot_accuracy(
        FakeCLIP(3),
        fake_tokenizer,
        class_images(np.array([0, 1, 2])),
        np.array([2, 0, 1]),
        ["c0", "c1", "c2"],
        ["t0 {}"],
    )
    assert small["top1"] == 0.0 and small["top5"] == 1.0
    with pytest.raises(ValueError, match="labels"):
        ev.zero_shot_accuracy(model, fake_tokenizer, images, labels[:-1], classnames, ["t0 {}"])


# --------------------------------------------------------------------------------------------------------------
# k-NN


def brute_force_dino_knn(xtr, ytr, xte, k, temperature):
    """Direct numpy transcription of DINO's weighted k-NN vote (eval_knn.py), one test row at a time."""
    xtr = xtr / np.linalg.norm(xtr, axis=1, keepdims=True)
    xte = xte / np.linalg.norm(xte, axis=1, keepdims=True)
    n_classes = ytr.max() + 1
    preds = []
    for q in xte:
        sims = xtr @ q
        nn = np.argsort(-sims, kind="stable")[:k]
        votes = np.zeros(n_classes)
        for j in nn:
            votes[ytr[j]] += np.exp(sims[j] / temperature)
        preds.append(int(np.argmax(votes)))
    return np.array(preds)


def test_knn_matches_brute_force_dino_vote():
    # overlapping blobs so the vote is not trivial; float64 data rounded to float32 once for both
    xtr, ytr = blobs(30, 5, 8, spread=1.5, seed=1)
    xte, _ = blobs(20, 5, 8, spread=1.5, seed=2)
    for k, temp in [(1, 0.07), (7, 0.07), (20, 0.5), (200, 0.07)]:
        expected = brute_force_dino_knn(xtr.astype(np.float64), ytr, xte.astype(np.float64), min(k, len(xtr)), temp)
        got = ev.knn_predict(torch.as_tensor(xtr), torch.as_tensor(ytr), xte, k=k, temperature=temp)
        np.testing.assert_array_equal(got, expected)


def test_knn_predict_keeps_arbitrary_label_values_and_chunks():
    xtr, ytr = blobs(20, 3, 4, spread=0.05, seed=0)
    xte, yte = blobs(10, 3, 4, spread=0.05, seed=0)
    codes = np.array([7, -2, 40])
    a = ev.knn_predict(xtr, codes[ytr], xte, k=5, chunk_size=4)
    b = ev.knn_predict(xtr, codes[ytr], xte, k=5, chunk_size=1000)
    np.testing.assert_array_equal(a, b)
    assert set(a) <= set(codes)


def test_knn_accuracy_blobs_and_random_labels():
    xtr, ytr = blobs(100, 10, 32, spread=0.3, seed=0)
    xte, yte = blobs(30, 10, 32, spread=0.3, seed=0)
    assert ev.knn_accuracy(xtr, ytr, xte, yte) > 0.99
    rng = np.random.default_rng(0)
    xtr, xte = rng.normal(size=(2000, 16)), rng.normal(size=(2000, 16))
    acc = ev.knn_accuracy(xtr, rng.integers(0, 10, 2000), xte, rng.integers(0, 10, 2000))
    assert abs(acc - 0.1) < 0.03  # 3 standard errors of a 2,000-sample estimate of 0.1 is 0.02


def test_knn_errors_name_the_parameter():
    x, y = blobs(5, 2, 3, 0.1, 0)
    with pytest.raises(ValueError, match="train_labels"):
        ev.knn_accuracy(x, y[:-1], x, y)
    with pytest.raises(ValueError, match="test_labels"):
        ev.knn_accuracy(x, y, x, y[:-1])
    with pytest.raises(ValueError, match="test_feats"):
        ev.knn_accuracy(x, y, x[:, :2], y)


# --------------------------------------------------------------------------------------------------------------
# retrieval


def test_retrieval_identity_gives_perfect_recall_and_keys():
    feats = torch.eye(6) * 5.0  # unnormalised on purpose: the metric normalises
    res = ev.retrieval_recall(feats, feats, np.arange(6))
    assert list(res) == ["i2t_R@1", "i2t_R@5", "i2t_R@10", "t2i_R@1", "t2i_R@5", "t2i_R@10", "mean_recall"]
    assert all(v == 1.0 for v in res.values())
    assert list(ev.retrieval_recall(feats, feats, np.arange(6), ks=(2, 3))) == [
        "i2t_R@2",
        "i2t_R@3",
        "t2i_R@2",
        "t2i_R@3",
        "mean_recall",
    ]


def test_retrieval_known_half_recall():
    # 4 images (one-hot); caption j of image i. Captions of images 0 and 1 point at their image; captions of
    # images 2 and 3 are swapped (caption of 2 looks like image 3 and vice versa).
    img = torch.eye(4)
    txt = torch.eye(4)[[0, 1, 3, 2]] + 0.1 * torch.eye(4)[[1, 2, 0, 0]]
    res = ev.retrieval_recall(img, txt, np.arange(4), ks=(1, 2, 4))
    assert res["i2t_R@1"] == 0.5 and res["t2i_R@1"] == 0.5
    assert res["i2t_R@4"] == 1.0 and res["t2i_R@4"] == 1.0
    assert math.isclose(res["mean_recall"], np.mean([v for k, v in res.items() if k != "mean_recall"]))


def test_retrieval_i2t_counts_any_of_the_images_captions():
    # 2 images, 3 captions each; for image 0 only its *third* caption is the nearest text overall
    img = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    txt = torch.tensor(
        [
            [0.2, 1.0],
            [0.3, 1.0],
            [1.0, 0.0],  # captions of image 0: only the last looks like image 0
            [0.0, 1.0],
            [0.1, 1.0],
            [0.2, 1.0],  # captions of image 1
        ]
    )
    owner = np.array([0, 0, 0, 1, 1, 1])
    res = ev.retrieval_recall(img, txt, owner, ks=(1,))
    assert res["i2t_R@1"] == 1.0  # each image's top text is one of its captions
    # text-to-image: captions 0 and 1 of image 0 are closer to image 1 -> 4 of 6 captions hit
    assert math.isclose(res["t2i_R@1"], 4 / 6)


def test_retrieval_ties_are_pessimistic_so_collapse_scores_zero():
    feats = torch.ones(5, 3)
    res = ev.retrieval_recall(feats, feats, np.arange(5), ks=(1, 5))
    assert res["i2t_R@1"] == 0.0 and res["t2i_R@1"] == 0.0
    assert res["i2t_R@5"] == 1.0 and res["t2i_R@5"] == 1.0  # only 5 candidates


def test_retrieval_chunking_does_not_change_results():
    rng = np.random.default_rng(0)
    img, txt = rng.normal(size=(50, 8)), rng.normal(size=(250, 8))
    owner = np.repeat(np.arange(50), 5)
    a = ev.retrieval_recall(img, txt, owner, chunk_size=7)
    b = ev.retrieval_recall(img, txt, owner)
    assert a == b


def test_retrieval_errors():
    with pytest.raises(ValueError, match="text_image_index"):
        ev.retrieval_recall(torch.eye(3), torch.eye(3), [0, 1])
    with pytest.raises(ValueError, match="text_image_index"):
        ev.retrieval_recall(torch.eye(3), torch.eye(3), [0, 1, 3])


# --------------------------------------------------------------------------------------------------------------
# linear probe


def test_linear_probe_separable_data():
    xtr, ytr = blobs(60, 10, 32, spread=0.3, seed=0)
    xte, yte = blobs(20, 10, 32, spread=0.3, seed=0)
    res = ev.linear_probe(xtr * 7.0 + 3.0, ytr, xte * 7.0 + 3.0, yte)  # unnormalised, offset features
    assert res["accuracy"] > 0.95
    assert res["C"] in ev.DEFAULT_CS and set(res["val_accuracies"]) == set(ev.DEFAULT_CS)


def test_linear_probe_C_choice_never_sees_the_test_set():
    xtr, ytr = blobs(40, 5, 16, spread=1.2, seed=0)
    xte, yte = blobs(20, 5, 16, spread=1.2, seed=1)
    rng = np.random.default_rng(9)
    a = ev.linear_probe(xtr, ytr, xte, yte, seed=3)
    garbage = ev.linear_probe(xtr, ytr, rng.normal(size=(7, 16)) * 1e3, rng.integers(0, 5, 7), seed=3)
    assert a["C"] == garbage["C"] and a["val_accuracies"] == garbage["val_accuracies"]
    assert 0.0 < a["accuracy"] <= 1.0


def test_linear_probe_picks_the_smallest_C_with_the_best_validation_accuracy():
    xtr, ytr = blobs(30, 4, 64, spread=2.0, seed=0)
    xte, yte = blobs(10, 4, 64, spread=2.0, seed=1)
    res = ev.linear_probe(xtr, ytr, xte, yte, Cs=[1e3, 1e-3, 1.0])
    best = max(res["val_accuracies"].values())
    assert res["val_accuracy"] == best == res["val_accuracies"][res["C"]]
    assert res["C"] == min(c for c, acc in res["val_accuracies"].items() if acc == best)
    assert ev.linear_probe(xtr, ytr, xte, yte, Cs=[0.5])["C"] == 0.5


def test_linear_probe_errors():
    x, y = blobs(10, 2, 4, 0.1, 0)
    with pytest.raises(ValueError, match="train_labels"):
        ev.linear_probe(x, y[:-1], x, y)
    with pytest.raises(ValueError, match="test_labels"):
        ev.linear_probe(x, y, x, y[:-1])
    with pytest.raises(ValueError, match="val_fraction"):
        ev.linear_probe(x, y, x, y, val_fraction=1.0)


# --------------------------------------------------------------------------------------------------------------
# clustering


def test_clustering_scores_blobs_and_random_labels():
    x, y = blobs(100, 8, 32, spread=0.2, seed=0)
    res = ev.clustering_scores(x, y)
    assert res["ari"] > 0.9 and res["ami"] > 0.9
    rng = np.random.default_rng(0)
    res = ev.clustering_scores(rng.normal(size=(800, 16)), rng.integers(0, 8, 800))
    assert abs(res["ari"]) < 0.05 and abs(res["ami"]) < 0.05


def test_clustering_scores_are_deterministic_and_use_normalised_features():
    x, y = blobs(50, 4, 8, spread=0.3, seed=1)
    a = ev.clustering_scores(x, y, seed=0)
    assert a == ev.clustering_scores(torch.as_tensor(x), torch.as_tensor(y), seed=0)
    # scaling rows by arbitrary positive factors does not move L2-normalised features
    scale = np.random.default_rng(0).uniform(0.1, 10.0, size=(len(x), 1)).astype(np.float32)
    assert a == ev.clustering_scores(x * scale, y, seed=0)
    with pytest.raises(ValueError, match="labels"):
        ev.clustering_scores(x, y[:-1])


# --------------------------------------------------------------------------------------------------------------
# modality gap


def test_modality_gap_known_vectors():
    img = np.array([[2.0, 0.0], [0.0, 3.0]])  # normalised: e1, e2 -> mean (0.5, 0.5)
    txt = np.array([[-1.0, 0.0]])  # mean (-1, 0)
    assert math.isclose(ev.modality_gap(img, txt), math.hypot(1.5, 0.5), rel_tol=1e-9)
    assert ev.modality_gap(img, img * 5) == 0.0
    assert math.isclose(ev.modality_gap(torch.tensor([[1.0, 0.0]]), torch.tensor([[-1.0, 0.0]])), 2.0)


# --------------------------------------------------------------------------------------------------------------
# chance levels


def test_chance_level_exact():
    labels = np.array([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert ev.chance_level(labels) == 0.1
    assert ev.chance_level(labels, k=5) == 0.5
    assert ev.chance_level(labels[:6], k=10) == 1.0  # top-k with k >= C always hits
    assert ev.majority_rate(labels) == 0.25


def test_retrieval_chance_against_monte_carlo_and_exact_small_case():
    # exact: 2 images x 2 captions = 4 texts; P(i2t miss at k=1) = 2/4; at k=2: C(2,2)/C(4,2) = 1/6
    small = ev.retrieval_chance(2, captions_per_image=2, ks=(1, 2))
    assert math.isclose(small["i2t_R@1"], 0.5) and math.isclose(small["i2t_R@2"], 5 / 6)
    assert small["t2i_R@1"] == 0.5 and small["t2i_R@2"] == 1.0

    # Monte Carlo: the recall of random features, averaged over draws, matches the expectation
    n_images, cpi, ks = 20, 5, (1, 5, 10)
    exact = ev.retrieval_chance(n_images, cpi, ks)
    owner = np.repeat(np.arange(n_images), cpi)
    rng = np.random.default_rng(0)
    draws = [
        ev.retrieval_recall(rng.normal(size=(n_images, 64)), rng.normal(size=(n_images * cpi, 64)), owner, ks)
        for _ in range(60)
    ]
    for key, value in exact.items():
        mc = np.mean([d[key] for d in draws])
        # the standard error of the mean of 60 draws is below 0.007 for every key here
        assert abs(mc - value) < 0.03, (key, mc, value)
    assert exact["t2i_R@5"] == 5 / 20
    assert list(exact) == list(draws[0])


def test_linear_probe_fits_the_whole_grid_and_matches_a_plain_fit():
    """Every C of the grid is scored, and flushing subnormals in the fit threads leaves the chosen fit what a plain
    scikit-learn fit at that C on the same split gives; the caller's thread keeps its subnormals."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(20, 16))
    y = rng.integers(0, 20, 600)
    x = centres[y] + 0.8 * rng.normal(size=(600, 16))
    grid = np.logspace(-4, 3, 8)
    out = ev.linear_probe(x[:400], y[:400], x[400:], y[400:], Cs=grid)
    assert sorted(out["val_accuracies"]) == sorted(float(c) for c in grid)
    fit_idx, _ = probes._val_split(400, y[:400], 0.2, 0)
    scaler = StandardScaler().fit(x[fit_idx])
    plain = LogisticRegression(C=out["C"], max_iter=1000, random_state=0).fit(scaler.transform(x[fit_idx]), y[fit_idx])
    assert out["accuracy"] == float((plain.predict(scaler.transform(x[400:])) == y[400:]).mean())
    assert np.float64(5e-324) * 2.0 != 0.0  # no flush-to-zero leaked into this thread
