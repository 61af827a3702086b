"""Tests of vlp_lib.eval's MMD: the unbiased MMD^2 U-statistic, its kernels, the median heuristic and the matrix."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pandas as pd
import pytest
import torch

from vlp_lib.papers.dimefm.mmd import mmd, mmd_matrix, rbf_bandwidth


def sample(n: int, d: int = 3, shift: float = 0.0, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    x[:, 0] += shift
    return x


def reference_bandwidth(*sets: np.ndarray) -> float:
    pooled = [row for s in sets for row in s.tolist()]
    distances = [math.dist(a, b) for a, b in itertools.combinations(pooled, 2)]
    return statistics.median([v for v in distances if v > 0])


def reference_kernel(kernel: str, d: int, degree: int = 3, sigma: float | None = None):
    if kernel == "linear":
        return lambda a, b: sum(u * v for u, v in zip(a, b))
    if kernel == "poly":
        return lambda a, b: (sum(u * v for u, v in zip(a, b)) / d + 1.0) ** degree
    return lambda a, b: math.exp(-(math.dist(a, b) ** 2) / (2 * sigma**2))


def reference_mmd(x: np.ndarray, y: np.ndarray, k) -> float:
    """Gretton et al. 2012, Eq. 3, as a double loop over Python floats."""
    x, y = x.tolist(), y.tolist()
    n, m = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    yy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(x[i], y[j]) for i in range(n) for j in range(m)) / (n * m)
    return xx + yy - 2 * xy


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_matches_the_double_loop_reference(kernel):
    x, y = sample(7, seed=1), sample(5, shift=0.8, seed=2)
    sigma = reference_bandwidth(x, y) if kernel == "rbf" else None
    expected = reference_mmd(x, y, reference_kernel(kernel, 3, sigma=sigma))
    got = mmd(x, y, kernel=kernel)
    assert isinstance(got, float)
    assert math.isclose(got, expected, rel_tol=1e-10, abs_tol=1e-12)
    # torch tensors (float32 is widened to float64) and nested lists give the same number
    assert math.isclose(mmd(torch.from_numpy(x), torch.from_numpy(y), kernel=kernel), expected, rel_tol=1e-10)
    assert math.isclose(mmd(x.tolist(), y.tolist(), kernel=kernel), expected, rel_tol=1e-10)
    assert math.isclose(
        mmd(torch.from_numpy(x).float(), torch.from_numpy(y).float(), kernel=kernel),
        expected,
        rel_tol=1e-5,
        abs_tol=1e-6,
    )


def test_kernel_parameters_match_the_reference():
    x, y = sample(7, seed=3), sample(5, shift=-0.5, seed=4)
    assert math.isclose(
        mmd(x, y, kernel="poly", degree=2), reference_mmd(x, y, reference_kernel("poly", 3, 2)), rel_tol=1e-10
    )
    assert math.isclose(
        mmd(x, y, kernel="rbf", bandwidth=0.7),
        reference_mmd(x, y, reference_kernel("rbf", 3, sigma=0.7)),
        rel_tol=1e-10,
    )
    # the poly kernel at degree 1 is the linear kernel / D plus a constant, and constants cancel in MMD^2
    assert math.isclose(mmd(x, y, kernel="poly", degree=1), mmd(x, y, kernel="linear") / 3, rel_tol=1e-10)
    # the linear MMD^2_u is the squared distance of the means minus each set's diagonal (i = j) terms
    n, m = len(x), len(y)
    sx, sy = x.sum(0), y.sum(0)
    closed = (
        (sx @ sx - (x * x).sum()) / (n * (n - 1)) + (sy @ sy - (y * y).sum()) / (m * (m - 1)) - 2 * sx @ sy / (n * m)
    )
    assert math.isclose(mmd(x, y), closed, rel_tol=1e-10)


def test_rbf_bandwidth_is_the_median_heuristic():
    x, y = sample(7, seed=5), sample(5, shift=1.0, seed=6)
    assert math.isclose(rbf_bandwidth(x, y), reference_bandwidth(x, y), rel_tol=1e-12)
    z = sample(4, seed=7)
    assert math.isclose(rbf_bandwidth(x, y, z), reference_bandwidth(x, y, z), rel_tol=1e-12)
    # duplicate rows (distance 0) are left out of the median
    dup = np.concatenate([x[:3], x[:3]])
    assert math.isclose(rbf_bandwidth(dup, y), reference_bandwidth(dup, y), rel_tol=1e-12)
    with_zeros = statistics.median(math.dist(a, b) for a, b in itertools.combinations(np.concatenate([dup, y]), 2))
    assert not math.isclose(rbf_bandwidth(dup, y), with_zeros, rel_tol=1e-6)
    # sigma scales with the data, so the RBF MMD^2 with the heuristic is scale-invariant
    assert math.isclose(rbf_bandwidth(3 * x, 3 * y), 3 * rbf_bandwidth(x, y), rel_tol=1e-12)
    assert math.isclose(mmd(3 * x, 3 * y, kernel="rbf"), mmd(x, y, kernel="rbf"), rel_tol=1e-9)
    assert math.isclose(mmd(x, y, kernel="rbf"), mmd(x, y, kernel="rbf", bandwidth=rbf_bandwidth(x, y)), rel_tol=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_symmetric(kernel):
    x, y = sample(9, d=4, seed=8), sample(6, d=4, shift=0.3, seed=9)
    assert math.isclose(mmd(x, y, kernel=kernel), mmd(y, x, kernel=kernel), rel_tol=1e-12, abs_tol=1e-15)


def test_unbiased_same_distribution_averages_zero():
    # tiny samples of one distribution: MMD^2_u averages 0 and is often negative, while the biased V-statistic
    # (here the squared distance of the means, E = tr(Sigma) (1/n + 1/m) = 1.2) stays positive
    rng = np.random.default_rng(10)
    u_stats, v_stats = [], []
    for _ in range(400):
        x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
        u_stats.append(mmd(x, y))
        v_stats.append(float(((x.mean(0) - y.mean(0)) ** 2).sum()))
    u_stats = np.array(u_stats)
    se = u_stats.std(ddof=1) / math.sqrt(len(u_stats))
    assert abs(u_stats.mean()) < 3 * se
    assert (u_stats < 0).mean() > 0.2
    assert math.isclose(np.mean(v_stats), 1.2, rel_tol=0.15)
    # (a fixed sigma: the median heuristic's sigma depends on the data, which the U-statistic argument does not cover)
    for kernel, kw in (("poly", {}), ("rbf", {"bandwidth": 1.0})):
        values = np.array(
            [mmd(rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), kernel=kernel, **kw) for _ in range(300)]
        )
        assert abs(values.mean()) < 3 * values.std(ddof=1) / math.sqrt(len(values))


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_same_distribution_near_zero_shift_clearly_positive_and_growing(kernel):
    base = sample(300, d=3, seed=11)
    same = mmd(base, sample(300, d=3, seed=12), kernel=kernel)
    shifted = [mmd(base, sample(300, d=3, shift=s, seed=12), kernel=kernel) for s in (0.5, 1.0, 2.0)]
    assert shifted[0] > 5 * abs(same)
    assert shifted[0] < shifted[1] < shifted[2]
    if kernel == "linear":
        # E[MMD^2_u] with the linear kernel is ||mu_x - mu_y||^2 = shift^2 exactly
        for s, value in zip((0.5, 1.0, 2.0), shifted):
            assert abs(value - s**2) < 0.1 + 0.1 * s
    if kernel == "rbf":
        # with a fixed sigma too (the heuristic's sigma grows with the shift)
        fixed = [mmd(base, sample(300, d=3, shift=s, seed=12), kernel="rbf", bandwidth=1.0) for s in (0.5, 1.0, 2.0)]
        assert fixed[0] < fixed[1] < fixed[2]


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_mmd_matrix(kernel):
    sets = {
        "images": sample(60, seed=13),
        "captions": sample(50, shift=2.0, seed=14),
        "nlp": sample(40, shift=3.0, seed=15),
        "constructed": sample(55, shift=2.2, seed=16),
    }
    table = mmd_matrix(sets, kernel=kernel)
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == list(sets) and list(table.columns) == list(sets)
    values = table.to_numpy()
    assert np.array_equal(values, values.T)
    assert np.array_equal(np.diag(values), np.zeros(4))
    # one sigma for the whole matrix: the median heuristic on the union of all sets
    bandwidth = rbf_bandwidth(*sets.values()) if kernel == "rbf" else None
    for a, b in itertools.combinations(sets, 2):
        assert math.isclose(
            table.loc[a, b], mmd(sets[a], sets[b], kernel=kernel, bandwidth=bandwidth), rel_tol=1e-10, abs_tol=1e-12
        )
    # the geometry of the sets: captions are closer to the constructed set than to the NLP set
    assert table.loc["captions", "constructed"] < table.loc["captions", "nlp"]
    assert table.loc["images", "constructed"] < table.loc["images", "nlp"]
    # an explicit bandwidth is passed through
    if kernel == "rbf":
        fixed = mmd_matrix(sets, kernel="rbf", bandwidth=0.5)
        assert math.isclose(
            fixed.loc["images", "nlp"], mmd(sets["images"], sets["nlp"], "rbf", bandwidth=0.5), rel_tol=1e-10
        )


def _bad_cases():
    x, y = sample(7), sample(5, seed=1)
    same = np.ones((4, 3))
    return [
        (lambda: mmd(x, y, kernel="gaussian"), "kernel"),
        (lambda: mmd(x[:1], y), "x"),
        (lambda: mmd(x, y[:1]), "y"),
        (lambda: mmd(x, sample(5, d=4)), "y"),
        (lambda: mmd(x[0], y), "x"),
        (lambda: mmd(x, y, kernel="poly", degree=0), "degree"),
        (lambda: mmd(x, y, kernel="poly", degree=2.5), "degree"),
        (lambda: mmd(x, y, kernel="rbf", bandwidth=-1.0), "bandwidth"),
        (lambda: mmd(x, y, kernel="linear", bandwidth=1.0), "bandwidth"),
        (lambda: mmd(np.full((3, 3), np.nan), y), "x"),
        (lambda: mmd(same, same, kernel="rbf"), "median"),
        (lambda: rbf_bandwidth(x, sample(5, d=2)), "y"),
        (lambda: rbf_bandwidth(x, y, sample(1)), "more"),
        (lambda: mmd_matrix({"a": x}), "sets"),
        (lambda: mmd_matrix([x, y]), "sets"),
        (lambda: mmd_matrix({"a": x, "b": sample(5, d=2)}), "sets"),
        (lambda: mmd_matrix({"a": x, "b": y}, kernel="cosine"), "kernel"),
    ]


@pytest.mark.parametrize("call, name", [pytest.param(c, n, id=f"{i}-{n}") for i, (c, n) in enumerate(_bad_cases())])
def test_bad_inputs_raise(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
