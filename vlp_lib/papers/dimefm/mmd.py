"""Maximum mean discrepancy between feature sets (DIME-FM Supp F, Fig. 4; Gretton et al. 2012): how far apart the
image and text corpora lie in a teacher's feature space.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
import torch

from vlp_lib import experiment, runs
from vlp_lib.data import corpora
from vlp_lib.data.world import generate
from vlp_lib.eval.common import ArrayLike, _check_dim
from vlp_lib.eval.encode import encode_images, encode_texts
from vlp_lib.run_config import RunConfig

MMD_KERNELS = ("linear", "poly", "rbf")


def _mmd_sample(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a float64 numpy array ``[N, D]`` with N >= 2 finite rows; ``ValueError`` naming ``name`` otherwise."""
    a = x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"{name} must be 2-D [N, D] with D > 0, got shape {a.shape}")
    if a.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 samples (the unbiased estimate drops i = j), got {a.shape[0]}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} holds non-finite values")
    return a


def _mmd_samples(arrays: Sequence[ArrayLike], names: Sequence[str]) -> list[np.ndarray]:
    """``_mmd_sample`` of each array, all of the first one's width (``_check_dim``)."""
    samples = [_mmd_sample(a, n) for a, n in zip(arrays, names)]
    for s, n in zip(samples[1:], names[1:]):
        # _check_dim reads only ``.shape``: its Tensor annotation also fits these arrays
        _check_dim(cast(Any, samples[0]), cast(Any, s), names[0], n)
    return samples


def _mmd_options(kernel: str, degree: int, bandwidth: float | None) -> None:
    if kernel not in MMD_KERNELS:
        raise ValueError(f"kernel must be one of {MMD_KERNELS}, got {kernel!r}")
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 1:
        raise ValueError(f"degree must be a positive int, got {degree!r}")
    if bandwidth is not None:
        if kernel != "rbf":
            raise ValueError(f"bandwidth is the RBF kernel's sigma; kernel is {kernel!r}")
        number = isinstance(bandwidth, (int, float, np.integer, np.floating)) and not isinstance(bandwidth, bool)
        if not number or not np.isfinite(bandwidth) or bandwidth <= 0:
            raise ValueError(f"bandwidth must be a positive finite number, got {bandwidth!r}")


def _median_distance(samples: Sequence[np.ndarray]) -> float:
    """Median Euclidean distance over the distinct pairs of the pooled rows, zero distances excluded."""
    from scipy.spatial.distance import pdist  # scipy comes with scikit-learn

    distances = pdist(np.concatenate(samples), "euclidean")  # exact differences: duplicates give exactly 0
    distances = distances[distances > 0]
    if distances.size == 0:
        raise ValueError("the pooled sample has no two distinct points: the median heuristic is undefined")
    return float(np.median(distances))


def _gram(a: np.ndarray, b: np.ndarray, kernel: str, degree: int, sigma: float | None) -> np.ndarray:
    if kernel == "linear":
        return a @ b.T
    if kernel == "poly":
        return (a @ b.T / a.shape[1] + 1.0) ** degree
    from scipy.spatial.distance import cdist

    assert sigma is not None  # the rbf kernel always has a bandwidth (_sigma)
    return np.exp(-cdist(a, b, "sqeuclidean") / (2.0 * sigma**2))


def _within_mean(a: np.ndarray, kernel: str, degree: int, sigma: float | None) -> float:
    """``1 / (n (n - 1)) sum_{i != j} k(a_i, a_j)``: the within-set U-statistic term."""
    k = _gram(a, a, kernel, degree, sigma)
    n = len(a)
    return float((k.sum() - np.trace(k)) / (n * (n - 1)))


def _sigma(kernel: str, bandwidth: float | None, samples: Sequence[np.ndarray]) -> float | None:
    """The RBF bandwidth: ``bandwidth`` if given, else the median heuristic on the pooled ``samples``; ``None``
    for the other kernels."""
    if kernel != "rbf":
        return None
    return float(bandwidth) if bandwidth is not None else _median_distance(samples)


def _mmd2(
    a: np.ndarray, b: np.ndarray, within_a: float, within_b: float, kernel: str, degree: int, sigma: float | None
) -> float:
    """MMD^2_u from the two within-sample terms (``_within_mean``) and the cross term of ``a`` and ``b``."""
    return within_a + within_b - 2.0 * float(_gram(a, b, kernel, degree, sigma).mean())


def rbf_bandwidth(x: ArrayLike, y: ArrayLike, *more: ArrayLike) -> float:
    """The median heuristic: sigma = median of the pairwise Euclidean distances of the pooled sample.

    All rows of ``x``, ``y`` (and ``more``) are pooled, the distances of all distinct pairs taken, pairs at
    distance 0 (duplicate rows) left out, and their median returned (Gretton et al. 2012, Sec. 8). The pooled
    N rows cost N (N - 1) / 2 float64 distances (64 MB at N = 4,000). This is the ``sigma`` that ``mmd`` and
    ``mmd_matrix`` use for ``kernel="rbf"`` when no ``bandwidth`` is given: DIME-FM gives no kernel parameters,
    so the median heuristic is our choice.
    """
    names = ["x", "y"] + [f"more[{i}]" for i in range(len(more))]
    return _median_distance(_mmd_samples((x, y, *more), names))


def mmd(
    x: ArrayLike,
    y: ArrayLike,
    kernel: str = "linear",
    degree: int = 3,
    bandwidth: float | None = None,
) -> float:
    """Unbiased squared maximum mean discrepancy MMD^2_u between the samples ``x`` ``[n, D]`` and ``y`` ``[m, D]``.

    The U-statistic of Gretton et al. 2012 (Lemma 6, Eq. 3), in float64:

        MMD^2_u = 1/(n(n-1)) sum_{i != j} k(x_i, x_j) + 1/(m(m-1)) sum_{i != j} k(y_i, y_j)
                  - 2/(nm) sum_{i, j} k(x_i, y_j).

    It is unbiased, so for two samples of one distribution it scatters around 0 and may be slightly negative.
    Kernels (DIME-FM Supp F names linear, polynomial and RBF without parameters; the parameters here are our reading):

    - ``"linear"``: ``k(a, b) = a . b``; then MMD^2 is the squared distance of the two means;
    - ``"poly"``: ``k(a, b) = (a . b / D + 1) ** degree`` (scikit-learn's defaults: gamma = 1 / D, coef0 = 1,
      degree 3);
    - ``"rbf"``: ``k(a, b) = exp(-||a - b||^2 / (2 sigma^2))``, sigma = ``bandwidth`` if given, else the median
      heuristic on the pooled sample of ``x`` and ``y`` (``rbf_bandwidth``), so sigma depends on the pair.

    Features are used as given, not normalised: for DIME-FM's Fig. 4 pass the L2-normalised features of the
    teacher's joint space. Symmetric in ``x`` and ``y``.
    """
    _mmd_options(kernel, degree, bandwidth)
    a, b = _mmd_samples((x, y), ("x", "y"))
    sigma = _sigma(kernel, bandwidth, [a, b])
    return _mmd2(
        a, b, _within_mean(a, kernel, degree, sigma), _within_mean(b, kernel, degree, sigma), kernel, degree, sigma
    )


def mmd_matrix(
    sets: Mapping[str, ArrayLike],
    kernel: str = "linear",
    degree: int = 3,
    bandwidth: float | None = None,
) -> pd.DataFrame:
    """Pairwise ``mmd`` of named feature sets as a symmetric ``pandas.DataFrame`` with zeros on the diagonal.

    ``sets`` is any mapping name -> ``[N_k, D]`` features (rows and columns follow its order); DIME-FM Supp F,
    Fig. 4 compares the image, caption, NLP and constructed corpora. Every entry is the unbiased MMD^2_u of
    ``mmd`` (so off-diagonal entries may be slightly negative; clip at 0 before taking square roots for MDS),
    the diagonal is 0 by definition. For ``kernel="rbf"`` without ``bandwidth``, one sigma serves the whole
    matrix: the median heuristic on the pooled union of all sets (``rbf_bandwidth(*sets.values())``), so that
    all entries measure distances in one RKHS; ``mmd`` on a single pair would pick that pair's own sigma.
    """
    import pandas as pd  # only here: the rest of this module returns numbers and dicts

    if not isinstance(sets, Mapping):
        raise ValueError(f"sets must be a mapping name -> features, got {type(sets).__name__}")
    if len(sets) < 2:
        raise ValueError(f"sets must hold at least 2 feature sets, got {len(sets)}")
    _mmd_options(kernel, degree, bandwidth)
    names = [str(k) for k in sets]
    if len(set(names)) != len(names):
        raise ValueError(f"sets has names that collide as strings: {names}")
    samples = _mmd_samples(list(sets.values()), [f"sets[{n!r}]" for n in names])
    sigma = _sigma(kernel, bandwidth, samples)
    within = [_within_mean(s, kernel, degree, sigma) for s in samples]
    out = np.zeros((len(samples), len(samples)))
    for i in range(len(samples)):
        for j in range(i + 1, len(samples)):
            out[i, j] = out[j, i] = _mmd2(samples[i], samples[j], within[i], within[j], kernel, degree, sigma)
    return pd.DataFrame(out, index=names, columns=names)


# --- D6: MMD among the corpora in the teacher's space (Supp F, Fig. 4) ------------------------------------------

PAPER = runs.paper_of_module(__name__)
MMD_KIND = "dimefm_mmd"
MMD_SETS = ("images", "captions", "NLP", "constructed")
SAMPLING_STREAM = 1  # the draws' random stream: rng([draw, SAMPLING_STREAM])


def _normalized(features: Any) -> np.ndarray:
    f = np.asarray(features, dtype=np.float64)
    return f / np.linalg.norm(f, axis=1, keepdims=True)


def corpus_mmd(spec: dict[str, Any]) -> dict[str, Any]:
    """The unbiased MMD^2 among ``MMD_SETS`` in a trained teacher's joint space (L2-normalised features, Supp F):
    ``spec`` names the teacher run (``teacher``: its config's record form, ``RunConfig.to_dict``; trained first if
    not stored), the image corpus (``image_corpus``: n, seed, world_knobs; its captions are the caption corpus), the
    NLP corpus (``nlp``: n, seed), the constructed corpus (``constructed``: a ``corpora.check_corpus`` spec, built
    from the teacher's features of the image corpus, as the DIME-FM method builds it), and the sampling (``samples``
    rows of every set per draw, ``draws``, ``kernels``). A draw takes rows without replacement, or iid with replacement from a
    set smaller than ``samples`` (the deduplicated constructed corpus can be; iid draws keep MMD^2_u unbiased)."""
    teacher = RunConfig.from_dict(spec["teacher"])
    model, tokenizer = experiment.load_trained(experiment.run(teacher))
    corpus = spec["image_corpus"]
    world = generate(corpus["n"], seed=corpus["seed"], image_size=teacher.image_size, **corpus["world_knobs"])
    image_features = encode_images(model, world.images)

    def encode(texts: Sequence[str]) -> torch.Tensor:
        return encode_texts(model, tokenizer, list(texts))

    texts = {
        "captions": list(world.captions),
        "NLP": corpora.nlp_corpus(spec["nlp"]["n"], spec["nlp"]["seed"]),
        "constructed": corpora.build_corpus(spec["constructed"], query_features=image_features, encode=encode),
    }
    features = {"images": _normalized(image_features), **{k: _normalized(encode(v)) for k, v in texts.items()}}
    n = spec["samples"]
    mmd2: dict[str, list[list[list[float]]]] = {k: [] for k in spec["kernels"]}
    for draw in range(spec["draws"]):
        rng = np.random.default_rng([draw, SAMPLING_STREAM])
        sample = {
            name: features[name][rng.choice(len(features[name]), n, replace=len(features[name]) < n)]
            for name in MMD_SETS
        }
        for kernel in spec["kernels"]:
            mmd2[kernel].append(mmd_matrix(sample, kernel=kernel).loc[list(MMD_SETS), list(MMD_SETS)].values.tolist())
    return {
        "metrics": {
            "sets": list(MMD_SETS),
            "samples": n,
            "mmd2": mmd2,
            "sizes": {name: len(f) for name, f in features.items()},
        },
        "examples": {name: v[:5] for name, v in texts.items()},
    }


def corpus_mmd_record(spec: dict[str, Any], compute: bool = True) -> dict | None:
    """The stored record of ``corpus_mmd(spec)``: computed and stored when missing (``compute``), else ``None``."""
    if not compute:
        return runs.load(MMD_KIND, spec, paper=PAPER)
    return runs.cached(MMD_KIND, spec, lambda: corpus_mmd(spec), paper=PAPER)
