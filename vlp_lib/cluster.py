"""Prototype construction for ProtoCLIP: K-Means (Sec. III-A), soft targets (Eq. 5) and PBT (Eq. 7).

One episode (Sec. III-D) clusters the cached, detached 128-d projected features ``h^I`` and ``h^T`` of
m = 200,000 samples into K = 20,000 prototypes with faiss K-Means, 20 iterations (Sec. IV-A-3, IV-D);
the prototypes of one modality supervise the other through soft targets (Eq. 5) and, with Prototype Back
Translation, through within-modal centroids (Eq. 7). The loss that uses them is in
``vlp_lib.losses.proto``.

Normalisation, as in the paper and in the authors' code (megvii-research/protoclip):

- the features that are clustered are L2-normalised (the code's projection heads end in
  ``F.normalize``; the paper does not say so);
- the K-Means centroids are *not* re-normalised (faiss ``spherical=False``), so their norms are < 1;
- Eq. 5 takes dot products of these raw centroids (no normalisation in the text or the code);
- Eq. 7 is a plain mean of the student features (no normalisation in the text or the code).

``kmeans`` differs from the paper in one place, on purpose: faiss seeds Lloyd's iterations with K random
points, and at ProtoCLIP's 10 points per centroid that leaves many true modes sharing one centroid while
others are split (see ``kmeans``); the default here is k-means++ seeding. ``init="random"`` is faiss's
own seeding, as the paper ran it.
"""

from __future__ import annotations

import numbers
from typing import Any

import faiss
import numpy as np
import torch
import torch.nn.functional as F

ArrayLike = Any  # numpy array or torch tensor

INITS = ("kmeans++", "random")

# faiss trains on at most this many points per centroid (its ``max_points_per_centroid`` default); seeding
# on more points than Lloyd's iterations will see buys nothing.
_MAX_POINTS_PER_CENTROID = 256

# Largest number of k-means++ proposals drawn per round: one round costs one N x (accepted) distance
# computation, so larger rounds mean fewer passes over x but more proposals that turn out redundant.
_SEED_ROUND = 1024


# --------------------------------------------------------------------------------------------------------------
# input handling


def _as_numpy_2d(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 numpy array ``[N, d]`` (faiss's only input type)."""
    a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D [N, d], got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return a


def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _labels_tensor(labels: ArrayLike, n: int, k: int, name: str, against: str, device: torch.device) -> torch.Tensor:
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
# K-Means (ProtoCLIP Sec. III-A, Eq. 2; Sec. IV-A-3)


def _min_sqdist(x: np.ndarray, centers: np.ndarray, gpu: bool | int) -> np.ndarray:
    """Squared L2 distance from every row of ``x`` to its nearest row of ``centers`` (float64, >= 0).

    faiss's exact search computes this blockwise with BLAS (``|x|^2 + |c|^2 - 2 x.c``), so N x K never has to
    fit in memory; the clip removes the small negatives that formula leaves on exact matches.
    """
    index = faiss.IndexFlatL2(x.shape[1])
    if gpu:
        index = faiss.index_cpu_to_all_gpus(index, ngpu=None if gpu is True else gpu)
    index.add(np.ascontiguousarray(centers, dtype=np.float32))
    d2, _ = index.search(x, 1)
    return np.maximum(d2[:, 0].astype(np.float64), 0.0)


def _kmeanspp_indices(x: np.ndarray, k: int, rng: np.random.Generator, gpu: bool | int = False) -> np.ndarray:
    """Row indices of ``k`` k-means++ seeds (Arthur & Vassilvitskii 2007), drawn in batches.

    Plain k-means++ picks seed t+1 with probability D_t(x)^2 / sum D_t^2, D_t the distance to the nearest of
    the first t seeds, and must update D after every pick: K passes over x (K = 20,000 passes over 200,000 x 128
    floats in ProtoCLIP's setting). Here a round draws up to ``_SEED_ROUND`` proposals i.i.d. from the D^2 of
    the round's start and walks through them in order, accepting a proposal with probability
    D_now^2 / D_start^2, where D_now also counts the seeds accepted earlier in the round (a B x B distance
    matrix between proposals). That is rejection sampling from exactly the distribution sequential k-means++
    would use, so the seeds follow the k-means++ law; D is then updated once per round with faiss, which
    makes the whole seeding cost one N x K distance computation, i.e. one Lloyd iteration.
    """
    n = len(x)
    chosen = np.empty(k, dtype=np.int64)
    chosen[0] = rng.integers(n)
    m = 1
    d2 = _min_sqdist(x, x[chosen[:1]], gpu)
    d2[chosen[0]] = 0.0
    while m < k:
        cdf = np.cumsum(d2)
        total = cdf[-1]
        if total <= 0.0:
            # fewer distinct points than k: the rest are duplicates of seeds, any of them will do
            rest = np.setdiff1d(np.arange(n), chosen[:m], assume_unique=False)
            chosen[m:] = rng.choice(rest, size=k - m, replace=False)
            break
        b = min(_SEED_ROUND, m)  # early rounds small: the first seeds change D^2 the most
        proposals = np.minimum(np.searchsorted(cdf, rng.random(b) * total, side="right"), n - 1)
        accept_u = rng.random(b)
        xp = x[proposals].astype(np.float64)
        sq = (xp * xp).sum(1)
        pair_d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * xp @ xp.T, 0.0)
        np.fill_diagonal(pair_d2, 0.0)  # a repeated proposal of an accepted seed is always rejected
        start_d2 = d2[proposals]
        now_d2 = start_d2.copy()
        accepted = []
        for j in range(b):
            if accept_u[j] * start_d2[j] < now_d2[j]:
                accepted.append(j)
                now_d2 = np.minimum(now_d2, pair_d2[j])
                if m + len(accepted) == k:
                    break
        new = proposals[accepted]
        chosen[m : m + len(new)] = new
        m += len(new)
        d2 = np.minimum(d2, _min_sqdist(x, x[new], gpu))
        d2[new] = 0.0
    return chosen


def kmeanspp_init(x: ArrayLike, k: int, seed: int = 0, gpu: bool | int | None = None) -> np.ndarray:
    """k-means++ seeds ``[k, d]`` (float32) for ``x`` ``[N, d]``; the seeding ``kmeans`` uses by default.

    Seeds follow the k-means++ distribution exactly (see ``_kmeanspp_indices``) at the cost of one Lloyd
    iteration. When N exceeds 256 points per centroid the seeds are drawn from a random subsample of
    256 * k points, the same amount faiss subsamples for Lloyd's iterations.
    """
    x = _as_numpy_2d(x, "x")
    k = _check_int(k, "k", 1)
    if k > len(x):
        raise ValueError(f"k must be <= the number of points N={len(x)}, got {k}")
    rng = np.random.default_rng(_check_int(seed, "seed", 0))
    pool = x
    if len(x) > _MAX_POINTS_PER_CENTROID * k:
        pool = x[np.sort(rng.choice(len(x), size=_MAX_POINTS_PER_CENTROID * k, replace=False))]
    return np.ascontiguousarray(pool[_kmeanspp_indices(pool, k, rng, _use_gpu(gpu))])


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
    return km.centroids.astype(np.float32), labels[:, 0].astype(np.int64), float(d2.sum(dtype=np.float64)), km.iteration_stats


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
    k = _check_int(k, "k", 1)
    if k > len(x):
        raise ValueError(f"k must be <= the number of points N={len(x)}, got {k}")
    niter = _check_int(niter, "niter", 1)
    nredo = _check_int(nredo, "nredo", 1)
    seed = _check_int(seed, "seed", 0)
    use_gpu = _use_gpu(gpu)

    if init == "random":
        # the paper's setting: faiss picks k random points, and does the nredo restarts itself
        runs = [_faiss_kmeans(x, k, niter, nredo, seed, use_gpu, None)]
    else:
        # faiss's own restarts would reuse the given seeds, so each restart gets fresh k-means++ seeds here
        runs = [
            _faiss_kmeans(x, k, niter, 1, seed + r, use_gpu, kmeanspp_init(x, k, seed + r, use_gpu))
            for r in range(nredo)
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
    """K-Means of ProtoCLIP Sec. III-A (the objective after Eq. 3): ``(centroids [k, d] float32, labels [N] int64)``.

    faiss runs the ``niter`` Lloyd iterations (20 in the paper, Sec. IV-A-3), on the GPU when ``gpu`` is true
    or, with ``gpu=None``, when faiss sees one; ``labels`` is each point's nearest final centroid. ``nredo``
    restarts keep the run with the lowest inertia. Deterministic for a given ``seed``; ``x`` may be a numpy
    array or a torch tensor, any float dtype (faiss computes in float32).

    ``init="kmeans++"`` (default) starts from k-means++ seeds (``kmeanspp_init``). ``init="random"`` is faiss's
    default seeding with k random points, as the paper ran it. At ProtoCLIP's 10 points per centroid random
    seeding puts several seeds into dense modes and none into sparse ones; Lloyd's iterations then leave
    centroids straddling several modes and re-seed the clusters that went empty by splitting large ones (faiss's
    ``split_clusters``), so the final partition has no empty clusters but a clearly higher inertia
    (``benchmarks/bench_cluster.py`` measures both).
    """
    centroids, labels, _ = kmeans_with_stats(x, k, niter=niter, nredo=nredo, seed=seed, init=init, gpu=gpu)
    return centroids, labels


# --------------------------------------------------------------------------------------------------------------
# soft targets (ProtoCLIP Eq. 5)


def _temperature(temperature: Any) -> float:
    if isinstance(temperature, (torch.Tensor, np.ndarray)) and temperature.ndim == 0:
        temperature = temperature.item()  # a learnable or logged 0-d temperature
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or np.isnan(temperature):
        raise ValueError(f"temperature must be a real number, got {temperature!r}")
    return float(temperature)


def soft_targets(centroids: ArrayLike, labels: ArrayLike, temperature: float) -> ArrayLike:
    """ProtoCLIP Eq. 5: ``y_i = softmax(C c_{labels[i]} / tau_y)``, returned as ``[N, k]``.

    Row i is the target distribution for a sample whose teacher cluster is ``labels[i]``: the softmax over the
    dot products between its prototype and all ``k`` teacher prototypes ``centroids`` ``[k, d]``. Centroids
    are used as given, not re-normalised: Eq. 5 is a plain dot product and the authors' code feeds it faiss's
    raw centroids of L2-normalised features (norms slightly below 1). ``temperature <= 0`` gives the one-hot
    targets of earlier clustering methods (the "hardmax" bar of Fig. 6(b); the code's ``teacher_temperature=-1``);
    the paper's best is tau_y = 0.01 (Sec. IV-D-2).

    Torch in, torch out (same dtype and device); numpy in, numpy out. The result is N x k, so call it per
    batch (N = batch size), as training does, not for a whole episode.
    """
    tau = _temperature(temperature)
    is_torch = isinstance(centroids, torch.Tensor)
    c = centroids if is_torch else torch.from_numpy(np.asarray(centroids))
    if c.ndim != 2:
        raise ValueError(f"centroids must be 2-D [k, d], got shape {tuple(c.shape)}")
    if not c.is_floating_point():
        c = c.float()
    y = _labels_tensor(labels, len(labels), len(c), "labels", "labels", c.device)
    if tau <= 0:
        out = F.one_hot(y, len(c)).to(c.dtype)
    else:
        out = torch.softmax(c[y] @ c.T / tau, dim=1)
    return out if is_torch else out.numpy()


# --------------------------------------------------------------------------------------------------------------
# Prototype Back Translation (ProtoCLIP Eq. 7)


def pbt(student_feats: ArrayLike, teacher_labels: ArrayLike, k: int) -> ArrayLike:
    """ProtoCLIP Eq. 7, Prototype Back Translation: ``[k, d]`` within-modal centroids of the teacher's clusters.

    Row j is the mean of the ``student_feats`` ``[N, d]`` whose teacher cluster ``teacher_labels[i]`` is j,
    i.e. c^T_{PBT->I, j} = 1/|I_j| sum_{i in I_j} h^I_i with image features as the student and text clusters as
    the teacher; clusters no sample is assigned to give zero rows, as in the authors' code. The centroids are
    not normalised: Eq. 7 is a plain mean and so is the code (the features themselves are L2-normalised, so
    the norms are <= 1). They replace the teacher prototypes C^T in Eq. 3 (and C^external in Eq. 8).

    One ``index_add_`` and one ``bincount`` instead of the code's loop over clusters. Torch in, torch out (same
    dtype and device; sums accumulate in float32 for half-precision input); numpy in, numpy out.
    """
    k = _check_int(k, "k", 1)
    is_torch = isinstance(student_feats, torch.Tensor)
    h = student_feats if is_torch else torch.from_numpy(np.asarray(student_feats))
    if h.ndim != 2:
        raise ValueError(f"student_feats must be 2-D [N, d], got shape {tuple(h.shape)}")
    y = _labels_tensor(teacher_labels, len(h), k, "teacher_labels", "student_feats", h.device)
    acc_dtype = h.dtype if h.dtype == torch.float64 else torch.float32
    sums = torch.zeros(k, h.shape[1], dtype=acc_dtype, device=h.device).index_add_(0, y, h.to(acc_dtype))
    counts = torch.bincount(y, minlength=k).clamp_min_(1).to(acc_dtype)
    out = (sums / counts[:, None]).to(h.dtype if h.is_floating_point() else acc_dtype)
    return out if is_torch else out.numpy()
