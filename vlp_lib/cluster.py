"""K-Means with faiss (ProtoCLIP Sec. III-A; ICMLM's TP_Cluster), seeded by greedy k-means++ by default.

ProtoCLIP's episode (Sec. III-D) clusters the cached, detached 128-d projected features ``h^I`` and ``h^T`` of
m = 200,000 samples into K = 20,000 prototypes with faiss K-Means, 20 iterations (Sec. IV-A-3, IV-D); its soft
targets (Eq. 5) and PBT (Eq. 7) are ProtoCLIP's own (``vlp_lib.papers.protoclip.prototypes``).

The features that ProtoCLIP clusters are L2-normalised (the authors' projection heads end in ``F.normalize``); the
K-Means centroids are *not* re-normalised (faiss ``spherical=False``), so their norms are < 1.

``kmeans`` differs from the paper in one place, on purpose: faiss seeds Lloyd's iterations with K random
points, and at ProtoCLIP's 10 points per centroid that leaves many true modes sharing one centroid while
others are split (see ``kmeans``); the default here is greedy k-means++ seeding (``kmeanspp_init``).
``init="random"`` is faiss's own seeding, as the paper ran it.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Iterator
from typing import Any

import faiss
import numpy as np
import torch
from threadpoolctl import threadpool_limits

ArrayLike = Any  # numpy array or torch tensor

INITS = ("kmeans++", "random")

# faiss trains on at most this many points per centroid (its ``max_points_per_centroid`` default); seeding
# on more points than Lloyd's iterations will see buys nothing.
_MAX_POINTS_PER_CENTROID = 256

# Most seeds chosen per round of the batched k-means++ (``_kmeanspp_indices``). The seeds follow the same law
# whatever the round size; larger rounds mean fewer passes over x but more proposals drawn from a stale D^2
# that end up rejected.
_SEED_ROUND = 1024


# --------------------------------------------------------------------------------------------------------------
# input handling


def _as_numpy_2d(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 numpy array ``[N, d]`` (faiss's only input type)."""
    a = x.detach().to("cpu", torch.float32).numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D [N, d], got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return a


def check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def labels_tensor(labels: ArrayLike, n: int, k: int, name: str, against: str, device: torch.device) -> torch.Tensor:
    """``labels`` as an int64 tensor ``[n]`` with values in ``[0, k)``; ``ValueError`` naming ``name`` otherwise."""
    t = labels.detach() if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D [N], got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer cluster ids, got dtype {t.dtype}")
    if len(t) != n:
        raise ValueError(f"{name} has {len(t)} entries but {against} has {n} rows")
    if len(t) and (int(t.min()) < 0 or int(t.max()) >= k):
        raise ValueError(f"{name} must lie in [0, k={k}), got range [{int(t.min())}, {int(t.max())}]")
    return t.to(device=device, dtype=torch.long)


def _use_gpu(gpu: bool | int | None) -> bool | int:
    """faiss's ``gpu`` argument: ``None`` means every GPU faiss can see, if any."""
    if gpu is None:
        return faiss.get_num_gpus() > 0
    return gpu


# --------------------------------------------------------------------------------------------------------------
# K-Means (ProtoCLIP Sec. III-A; Sec. IV-A-3)


def _gain_lists(
    x_aug: np.ndarray, xsq: np.ndarray, d2: np.ndarray, props: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each proposal p = x[props[j]], the points it would bring closer: ``|x_i - p|^2 < d2[i]``.

    Returned grouped by proposal (CSR): ``rows[ptr[j]:ptr[j + 1]]`` are those points and ``dists[...]`` their
    squared distances to p. A point only ever moves to a seed closer than its current one, so these lists hold
    all a greedy step needs: the gain of a candidate and the update of d2 once it is chosen. ``x_aug = [x, 1]``
    and ``p_aug = [p, -|p|^2 / 2]`` fold the norm into the GEMM: the test is ``x.p - |p|^2 / 2 > (|x|^2 - d2) / 2``.
    numpy rather than torch: its comparison and ``flatnonzero`` are ~4x faster on the CPU, and they cost about
    a third of the GEMM here.
    """
    n = len(x_aug)
    p = x_aug[props]
    p[:, -1] = -0.5 * xsq[props]
    half_lim = ((xsq - d2) / 2).astype(np.float32)
    block = max(1, min(len(p), (1 << 24) // n))  # proposals per GEMM: a [block, N] float32 tile of <= 64 MB
    scores_buf = np.empty((block, n), dtype=np.float32)
    mask_buf = np.empty((block, n), dtype=bool)
    rows, cols, scores = [], [], []
    for s in range(0, len(p), block):
        pb = p[s : s + block]
        t = np.matmul(pb, x_aug.T, out=scores_buf[: len(pb)])
        flat = np.flatnonzero(np.greater(t, half_lim, out=mask_buf[: len(pb)]))  # row-major: grouped by proposal
        j, i = np.divmod(flat, n)
        rows.append(i)
        cols.append(j + s)
        scores.append(t.ravel()[flat])
    row, col = np.concatenate(rows), np.concatenate(cols)
    dists = np.maximum(xsq[row] - 2.0 * np.concatenate(scores), 0.0)  # |x - p|^2 = |x|^2 - 2 (x.p - |p|^2 / 2)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(col, minlength=len(props)))])
    return row, dists, ptr


def _kmeanspp_indices(x: np.ndarray, k: int, rng: np.random.Generator, n_local_trials: int = 3) -> np.ndarray:
    """Row indices of ``k`` greedy k-means++ seeds (Arthur & Vassilvitskii 2007; greedy variant as scikit-learn).

    k-means++ draws each new seed with probability D(x)^2 / sum D^2, D the distance to the nearest seed so far;
    the greedy variant draws ``n_local_trials`` such candidates and keeps the one that lowers sum D^2 the most
    (1 trial is plain k-means++). Done one seed at a time that is K = 20,000 passes over 200,000 x 128 floats in
    ProtoCLIP's setting. Here a round draws a batch of proposals i.i.d. from the D^2 of the round's start, finds
    with one GEMM which points each proposal would bring closer (``_gain_lists``), and then walks through the
    proposals in order: a proposal becomes a candidate with probability D_now^2 / D_start^2 (rejection
    sampling, so candidates follow exactly the current D^2 law), and every ``n_local_trials`` candidates the best
    is kept and D^2 updated from its list. The seeds thus follow the greedy k-means++ law exactly, at the cost
    of about 1.3 x ``n_local_trials`` Lloyd iterations' worth of matrix products (N x proposals x d).
    """
    n = len(x)
    x_aug = np.concatenate([x, np.ones((n, 1), dtype=np.float32)], axis=1)
    xsq = (x * x).sum(1, dtype=np.float64)
    chosen = np.empty(k, dtype=np.int64)
    chosen[0] = rng.integers(n)
    diff = x - x[chosen[0]]
    d2 = (diff * diff).sum(1, dtype=np.float64)
    d2[chosen[0]] = 0.0
    m = 1
    while m < k:
        cdf = np.cumsum(d2)
        total = cdf[-1]
        if total <= 0.0:
            # fewer distinct points than k: the rest are duplicates of seeds, any of them will do
            rest = np.setdiff1d(np.arange(n), chosen[:m])
            chosen[m:] = rng.choice(rest, size=k - m, replace=False)
            break
        steps = min(_SEED_ROUND, m, k - m)  # early rounds small: the first seeds change D^2 the most
        n_props = int(1.25 * steps * n_local_trials) + n_local_trials  # headroom for rejected proposals
        props = np.minimum(np.searchsorted(cdf, rng.random(n_props) * total, side="right"), n - 1)
        accept_u = rng.random(n_props)
        start_d2 = d2[props]
        rows, dists, ptr = _gain_lists(x_aug, xsq, d2, props)
        q = 0
        for _ in range(steps):
            candidates: list[int] = []
            while len(candidates) < n_local_trials and q < n_props:
                if accept_u[q] * start_d2[q] < d2[props[q]]:
                    candidates.append(q)
                q += 1
            if len(candidates) < n_local_trials:
                break  # proposals used up: the next round draws fresh ones from the updated D^2
            gains = [
                np.maximum(d2[rows[ptr[c] : ptr[c + 1]]] - dists[ptr[c] : ptr[c + 1]], 0.0).sum() for c in candidates
            ]  # drop of sum D^2 if c became a seed
            best = candidates[int(np.argmax(gains))]
            r = rows[ptr[best] : ptr[best + 1]]
            d2[r] = np.minimum(d2[r], dists[ptr[best] : ptr[best + 1]])
            d2[props[best]] = 0.0
            chosen[m] = props[best]
            m += 1
    return chosen


def kmeanspp_init(x: ArrayLike, k: int, seed: int = 0, n_local_trials: int = 3) -> np.ndarray:
    """Greedy k-means++ seeds ``[k, d]`` (float32, rows of ``x``) for ``x`` ``[N, d]``; ``kmeans``'s default seeding.

    ``n_local_trials`` candidates per seed, the best kept (see ``_kmeanspp_indices``); 1 is plain k-means++.
    scikit-learn uses 2 + ln(k) (11 at K = 20,000), whose cost here would be ~14 Lloyd iterations; 3 costs
    4-6 (85-150 s at N = 200,000, K = 20,000, d = 128 on 2 shared CPU cores) and gets most of the gain. Measured inertia after 20 Lloyd iterations on 10-points-per-centroid mixtures
    (d = 128, noise 0.3; N = 50,000, K = 5,000): random 5,907, plain k-means++ 4,760, 3 trials 4,107; on a
    tighter N = 5,000, K = 500, d = 32 mixture (scikit-learn's ``kmeans_plusplus`` seeds, same law): 1 trial
    68.6, 2: 50.1, 3: 45.8, 8: 42.7.

    When N exceeds 256 points per centroid the seeds come from a random subsample of 256 * k points, as many
    as faiss uses for Lloyd's iterations. Runs on the CPU (numpy); deterministic for a given ``seed`` on a given
    machine (BLAS rounding may differ between machines and thread counts).
    """
    x = _as_numpy_2d(x, "x")
    k = check_int(k, "k", 1)
    if k > len(x):
        raise ValueError(f"k must be <= the number of points N={len(x)}, got {k}")
    n_local_trials = check_int(n_local_trials, "n_local_trials", 1)
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    pool = x
    if len(x) > _MAX_POINTS_PER_CENTROID * k:
        pool = x[np.sort(rng.choice(len(x), size=_MAX_POINTS_PER_CENTROID * k, replace=False))]
    return np.ascontiguousarray(pool[_kmeanspp_indices(pool, k, rng, n_local_trials)])


# Below this many point x centroid x dimension products per Lloyd iteration, one faiss thread is as fast as two
# on the 2-core CPU and does not fight torch's OpenMP threads, which keep spinning for a while after each torch
# operation: an episode's K-Means of 2,048 points into 204 prototypes (d = 64) took 30-150 ms right after feature
# extraction with faiss's default threads and a steady 18 ms with one (5,000 points: 78 ms vs 103 ms; 10,000
# points: 295 vs 267 ms, where two threads start to pay).
_SINGLE_THREAD_PRODUCTS = 5e8


@contextlib.contextmanager
def _threads_for(products: float) -> Iterator[None]:
    """One faiss (OpenMP) and one BLAS thread (the seeding's numpy) for small problems, the defaults otherwise."""
    if products >= _SINGLE_THREAD_PRODUCTS:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        faiss.omp_set_num_threads(before)


def _faiss_kmeans(
    x: np.ndarray, k: int, niter: int, nredo: int, seed: int, gpu: bool | int, init_centroids: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float, list[dict]]:
    """One faiss K-Means run: (centroids, labels, inertia, faiss's per-iteration stats)."""
    km = faiss.Kmeans(
        x.shape[1],
        k,
        niter=niter,
        nredo=nredo,
        seed=seed,
        gpu=gpu,
        # faiss warns below 39 points per centroid; ProtoCLIP clusters 10 per centroid on purpose
        min_points_per_centroid=1,
    )
    km.train(x, init_centroids=init_centroids)
    # labels from the final centroids (km.index holds them after training), as the authors' code does
    d2, labels = km.index.search(x, 1)
    inertia = float(d2.sum(dtype=np.float64))
    assert km.centroids is not None and km.iteration_stats is not None  # both set by train
    return km.centroids.astype(np.float32), labels[:, 0].astype(np.int64), inertia, km.iteration_stats


def kmeans_with_stats(
    x: ArrayLike,
    k: int,
    niter: int = 20,
    nredo: int = 1,
    seed: int = 0,
    init: str = "kmeans++",
    gpu: bool | int | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """``kmeans`` plus diagnostics: ``(centroids, labels, stats)``.

    ``stats``: ``inertia`` (sum of squared distances to the assigned centroid), ``empty`` (centroids no point is
    assigned to), ``splits`` (clusters that went empty during Lloyd's iterations and that faiss re-seeded by
    splitting a large cluster; summed over iterations of the kept run), ``objective`` (faiss's objective per
    iteration of the kept run).
    """
    if not isinstance(init, str) or init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    x = _as_numpy_2d(x, "x")
    k = check_int(k, "k", 1)
    if k > len(x):
        raise ValueError(f"k must be <= the number of points N={len(x)}, got {k}")
    niter = check_int(niter, "niter", 0)  # 0: the seeds themselves ("w/o K-Means", Table III)
    nredo = check_int(nredo, "nredo", 1)
    seed = check_int(seed, "seed", 0)
    use_gpu = _use_gpu(gpu)

    with _threads_for(float(len(x)) * k * x.shape[1]):
        if init == "random":
            # the paper's setting: faiss picks k random points, and does the nredo restarts itself
            runs = [_faiss_kmeans(x, k, niter, nredo, seed, use_gpu, None)]
        else:
            # faiss's own restarts would reuse the given seeds, so each restart gets fresh k-means++ seeds here
            runs = [
                _faiss_kmeans(x, k, niter, 1, seed + r, use_gpu, kmeanspp_init(x, k, seed + r)) for r in range(nredo)
            ]
    centroids, labels, inertia, iteration_stats = min(runs, key=lambda run: run[2])
    if init == "random" and nredo > 1:
        # faiss returns the stats of every restart up to the kept one; the kept run's are the last niter
        iteration_stats = iteration_stats[-niter:]
    stats = {
        "inertia": inertia,
        "empty": int(k - len(np.unique(labels))),
        "splits": int(sum(s["nsplit"] for s in iteration_stats)),
        "objective": [float(s["obj"]) for s in iteration_stats],
    }
    return centroids, labels, stats


def kmeans(
    x: ArrayLike,
    k: int,
    niter: int = 20,
    nredo: int = 1,
    seed: int = 0,
    init: str = "kmeans++",
    gpu: bool | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """K-Means of ProtoCLIP Sec. III-A (the objective between Eqs. 1 and 3): ``(centroids [k, d], labels [N])``.

    ``centroids`` is float32, ``labels`` int64.

    faiss runs the ``niter`` Lloyd iterations (20 in the paper, Sec. IV-A-3; 0 returns the seeds, the
    "w/o K-Means" ablation of Table III), on the GPU when ``gpu`` is true or, with ``gpu=None``, when faiss
    sees one; ``labels`` is each point's nearest final centroid. ``nredo``
    restarts keep the run with the lowest inertia. Deterministic for a given ``seed``; ``x`` may be a numpy
    array or a torch tensor, any float dtype (faiss computes in float32).

    ``init="kmeans++"`` (default) starts from greedy k-means++ seeds (``kmeanspp_init``, 3 local trials).
    ``init="random"`` is faiss's default seeding with k random points, as the paper ran it. At ProtoCLIP's
    10 points per centroid random seeding puts several seeds into dense modes and none into sparse ones; Lloyd's
    iterations then leave centroids straddling several modes, and faiss re-seeds the clusters that go empty by
    splitting large ones (``split_clusters``). So neither seeding ends with empty clusters (faiss 1.15), but
    random seeding ends with a much higher inertia. Measured on an L2-normalised 128-d mixture with 10 points
    per mode (``benchmarks/bench_cluster.py``; the random run at full size is its ``--compare-n 200000``):
    at N = 200,000, K = 20,000, random / ours: inertia 23,313 /
    16,424, empty clusters 0 / 0, clusters re-seeded during Lloyd 1,209 / 7; at N = 50,000, K = 5,000: inertia
    ratio 1.45, ARI to the modes 0.78 / 0.85.
    """
    centroids, labels, _ = kmeans_with_stats(x, k, niter=niter, nredo=nredo, seed=seed, init=init, gpu=gpu)
    return centroids, labels
