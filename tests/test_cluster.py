"""Prototype construction: K-Means (faiss + k-means++ seeding), soft targets (Eq. 5), PBT (Eq. 7)."""

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from vlp_lib.cluster import kmeans, kmeans_with_stats, kmeanspp_init
from vlp_lib.papers.protoclip.prototypes import pbt, soft_targets


def _mixture(n, modes, d, noise, seed):
    """L2-normalised Gaussian mixture with Dirichlet(1) mode weights: uneven densities, as real features have."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((modes, d))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    y = rng.choice(modes, size=n, p=rng.dirichlet(np.ones(modes)))
    x = centers[y] + noise * rng.standard_normal((n, d)) / np.sqrt(d)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), y


@pytest.fixture(scope="module")
def blobs():
    x, y = make_blobs(n_samples=3000, centers=8, n_features=16, cluster_std=1.0, center_box=(-20, 20), random_state=0)
    return x, y


# --------------------------------------------------------------------------------------------------------------
# kmeans


def test_blobs_recovered_with_sklearn_inertia(blobs):
    x, y = blobs
    centroids, labels = kmeans(x, 8, seed=0)
    assert centroids.shape == (8, 16) and centroids.dtype == np.float32
    assert labels.shape == (3000,) and labels.dtype == np.int64
    assert adjusted_rand_score(y, labels) > 0.99
    ours = ((x - centroids[labels]) ** 2).sum()
    sk = KMeans(8, n_init=1, random_state=0).fit(x).inertia_
    assert ours <= 1.10 * sk


def test_labels_are_nearest_centroid():
    x, _ = _mixture(2000, 50, 16, 0.3, seed=1)
    centroids, labels = kmeans(x, 100, seed=0)
    d2 = ((x[:, None, :] - centroids[None]) ** 2).sum(-1)
    chosen = d2[np.arange(len(x)), labels]
    np.testing.assert_allclose(chosen, d2.min(1), atol=1e-5)  # ties broken either way, distance is the minimum


def test_deterministic_for_a_seed_and_input_types(blobs):
    x = blobs[0]
    c1, l1 = kmeans(x, 8, seed=3)
    c2, l2 = kmeans(torch.from_numpy(x), 8, seed=3)  # float64 tensor in, same clustering out
    c3, l3 = kmeans(x.astype(np.float32), 8, seed=3)
    for c, lab in [(c2, l2), (c3, l3)]:
        np.testing.assert_array_equal(c1, c)
        np.testing.assert_array_equal(l1, lab)
    assert not np.array_equal(kmeanspp_init(x, 8, seed=3), kmeanspp_init(x, 8, seed=4))


def test_nredo_keeps_the_best_run():
    x, _ = _mixture(3000, 300, 32, 0.2, seed=2)
    singles = [kmeans_with_stats(x, 300, seed=s)[2]["inertia"] for s in range(3)]
    best = kmeans_with_stats(x, 300, nredo=3, seed=0)[2]["inertia"]
    assert best == pytest.approx(min(singles), rel=1e-6)


def test_kmeanspp_beats_random_seeding_at_ten_points_per_centroid():
    """ProtoCLIP clusters 10 points per centroid (N = 200,000, K = 20,000). faiss's random seeding leaves
    modes sharing a centroid; it then re-seeds the clusters that go empty by splitting big ones, so neither
    run ends with empty clusters (faiss 1.15) and the difference shows in the splits and the inertia.
    Measured (mixture seeds 1-3 x K-Means seeds 0-2): inertia random 290-360 vs ours 44-49; splits random
    18-23 vs ours 0; ARI to the mixture 0.70-0.77 vs 0.88-0.94; 0 empty clusters for both."""
    x, y = _mixture(5000, 500, 32, 0.1, seed=1)
    _, lab_r, rand = kmeans_with_stats(x, 500, init="random", seed=0)
    _, lab_k, ours = kmeans_with_stats(x, 500, seed=0)
    assert rand["inertia"] > 3 * ours["inertia"]
    assert rand["splits"] >= 10 and ours["splits"] <= rand["splits"] // 4
    assert ours["empty"] <= rand["empty"]
    assert adjusted_rand_score(y, lab_k) > adjusted_rand_score(y, lab_r) + 0.1


def test_kmeanspp_seeds_are_distinct_points_and_handle_duplicates():
    x, _ = _mixture(1000, 20, 8, 0.3, seed=4)
    seeds = kmeanspp_init(x, 200, seed=0)
    assert len(np.unique(seeds, axis=0)) == 200
    rows = {r.tobytes() for r in x}
    assert all(s.tobytes() in rows for s in seeds)  # seeds are data points
    dup = np.repeat(x[:5], 20, axis=0)  # 5 distinct points, k = 10: seeds must still be k rows of x
    c, labels = kmeans(dup, 10, seed=0)
    assert c.shape == (10, 8) and labels.max() < 10


@pytest.mark.parametrize("init", ["kmeans++", "random"])
def test_zero_iterations_return_the_seeds(init):
    """niter=0 is the "w/o K-Means" ablation (Table III): centroids are k distinct rows of x."""
    x, _ = _mixture(1000, 20, 8, 0.3, seed=5)
    centroids, labels = kmeans(x, 30, niter=0, init=init)
    rows = {r.tobytes() for r in x}
    assert all(c.tobytes() in rows for c in centroids) and len({c.tobytes() for c in centroids}) == 30
    d2 = ((x[:, None, :] - centroids[None]) ** 2).sum(-1)
    np.testing.assert_allclose(d2[np.arange(len(x)), labels], d2.min(1), atol=1e-5)
    if init == "kmeans++":
        np.testing.assert_array_equal(centroids, kmeanspp_init(x, 30, seed=0))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(k=0), "k"),
        (dict(k=-3), "k"),
        (dict(k=101), "k"),
        (dict(k=2.5), "k"),
        (dict(k=5, init="kmeans||"), "init"),
        (dict(k=5, niter=-1), "niter"),
        (dict(k=5, nredo=0), "nredo"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs, name):
    x = np.random.default_rng(0).standard_normal((100, 4))
    with pytest.raises(ValueError, match=name):
        kmeans(x, **kwargs)


def test_bad_x_raises():
    with pytest.raises(ValueError, match="x"):
        kmeans(np.zeros(100), 5)
    with pytest.raises(ValueError, match="x"):
        kmeans(np.zeros((2, 10, 4)), 5)
    with pytest.raises(ValueError, match="x"):
        kmeans(np.full((10, 4), np.nan), 2)


# --------------------------------------------------------------------------------------------------------------
# PBT (Eq. 7)


def _pbt_loop(feats, labels, k):
    out = np.zeros((k, feats.shape[1]))
    for j in range(k):
        members = feats[labels == j]
        if len(members):
            out[j] = members.mean(0)
    return out


def test_pbt_matches_per_cluster_means_numpy_and_torch():
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((500, 12))
    labels = rng.integers(0, 40, size=500)
    labels[labels == 7] = 8  # cluster 7 empty
    expected = _pbt_loop(feats, labels, 45)  # 40..44 empty too
    got = pbt(feats, labels, 45)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert not got[[7, 40, 44]].any()

    t = pbt(torch.from_numpy(feats).float(), torch.from_numpy(labels), 45)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_pbt_bad_labels_raise():
    feats = np.zeros((10, 3))
    with pytest.raises(ValueError, match="teacher_labels"):
        pbt(feats, np.arange(10), 5)  # ids beyond k
    with pytest.raises(ValueError, match="teacher_labels"):
        pbt(feats, np.zeros(9, dtype=int), 5)
    with pytest.raises(ValueError, match="k"):
        pbt(feats, np.zeros(10, dtype=int), 0)


# --------------------------------------------------------------------------------------------------------------
# soft targets (Eq. 5)


def test_soft_targets_match_direct_formula():
    rng = np.random.default_rng(1)
    c = rng.standard_normal((30, 8))
    labels = rng.integers(0, 30, size=50)
    tau = 0.5
    expected = np.zeros((50, 30))
    for i, j in enumerate(labels):
        s = np.array([c[j] @ c[m] for m in range(30)]) / tau  # S_k = C . c_k
        expected[i] = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    got = soft_targets(c, labels, tau)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-12)
    t = soft_targets(torch.from_numpy(c).float(), torch.from_numpy(labels), tau)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("tau", [0, 0.0, -1])
def test_hardmax_is_one_hot(tau):
    c = torch.randn(12, 4)
    labels = torch.tensor([0, 5, 11, 5])
    y = soft_targets(c, labels, tau)
    torch.testing.assert_close(y, torch.nn.functional.one_hot(labels, 12).float())


def test_small_temperature_approaches_one_hot():
    rng = np.random.default_rng(2)
    c = rng.standard_normal((20, 16))
    c /= np.linalg.norm(c, axis=1, keepdims=True)  # each prototype is its own nearest one
    labels = np.arange(20)
    errors = [np.abs(soft_targets(c, labels, tau) - np.eye(20)).max() for tau in (1.0, 0.1, 0.01, 0.001)]
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-6


@pytest.mark.parametrize("bad", ["abc", "0.01", None, [0.1], float("nan")])
def test_bad_temperature_raises(bad):
    with pytest.raises(ValueError, match="temperature"):
        soft_targets(np.eye(3), np.array([0, 1]), bad)
