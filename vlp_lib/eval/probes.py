"""Probes of frozen features: L-BFGS logistic regression (ProtoCLIP Sec. IV-C.2, Table VII: "representations before
normalization"), DINO's weighted k-NN with k = 20 (IV-C.3), per-class accuracy, and multi-label mean average
precision with one-vs-all linear SVMs (the PASCAL VOC / MS-COCO metric of ICMLM, PyramidCLIP's detection stand-in).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (
    average_precision_score,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from vlp_lib.eval.common import ArrayLike, _check_dim, _check_len, _feats, _labels

# C grid of the linear probe: log-spaced like CLIP's sweep (1e-6..1e6 there), narrowed to six values so that a
# 2,000 x 128 probe with 100 classes stays within seconds on 2 CPU cores. 1e3 was dropped: where it won in the probes
# profiled here it beat 1e2 by at most 1 pp of validation accuracy (the noise of a 400-image split), and it is, with
# 1e2, the slowest fit (at the 1,000-iteration limit).
DEFAULT_CS = tuple(float(c) for c in np.logspace(-3, 2, 6))


def _val_split(n: int, y: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.arange(n)
    _, counts = np.unique(y, return_counts=True)
    n_val = int(np.ceil(val_fraction * n))
    # stratify when every class can give a sample to each side; otherwise fall back to a plain random split
    stratify = y if counts.min() >= 2 and len(counts) <= n_val <= n - len(counts) else None
    return train_test_split(idx, test_size=val_fraction, random_state=seed, stratify=stratify)


def _fit_logreg(x: np.ndarray, y: np.ndarray, C: float, max_iter: int, seed: int) -> LogisticRegression:
    return LogisticRegression(C=C, solver="lbfgs", max_iter=max_iter, random_state=seed).fit(x, y)


def _flush_subnormals() -> None:
    """Flush subnormal floats to zero in the calling thread (the x86 MXCSR flags are per thread), for the probe's
    fits only. A weakly regularised fit drives most softmax probabilities of a 100-class probe below
    float64's normal range; x86 arithmetic on subnormals is microcoded and about 50x slower, which made the C = 100
    fit of a 2,000 x 128 probe take 10.7 s instead of 2.5 s on this machine, with the same iterations and
    coefficients (values below 2.2e-308 do not move a probability or a gradient). Never set in the caller's
    thread: training after an evaluation must compute exactly what it computes in a fresh process."""
    torch.set_flush_denormal(True)


@contextlib.contextmanager
def _probe_threads() -> Iterator[None]:
    """One BLAS thread per fit, and no ConvergenceWarning. The probe's matrix products are small
    (N x D x C): on the shared 2-core machine two OpenBLAS threads per fit spin waiting for a free core
    (one thread made the 5,000 x 128, 100-class probe 27 s -> 1.7 s). Weakly regularised fits (large C)
    may stop at max_iter = 1000, the paper's limit (IV-C-2); that is recorded as ``converged`` in the
    result instead of a warning in every notebook cell. Both settings are process-wide, so they are set
    once here, around all the fits, never inside a worker thread."""
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # small test tasks (smoke scale) have many classes per sample; it is classification all the same
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
        yield


def _fit_worker_init() -> None:
    """A fit process (``fit_pool``), for its whole life (it runs fits only): subnormals flushed, one BLAS and one
    OpenMP thread (two fit processes share two cores; and a forked child must not start the OpenMP teams of its
    parent's runtime, whose threads were not copied), and the probe's warnings silenced (``_probe_threads``)."""
    global _WORKER_LIMITS
    _flush_subnormals()
    _WORKER_LIMITS = threadpool_limits(limits=1)  # kept: the limits last as long as this object
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")


_WORKER_LIMITS: Any = None  # a fit process's thread limits (``_fit_worker_init``)
# The processes that run the probe's fits (``fit_pool``), made on first use and kept for the life of the process that
# made them (a notebook kernel evaluates dozens of runs): the pid that made them, and the pool.
_FIT_POOL: tuple[int, ProcessPoolExecutor] | None = None


def _process_pool() -> ProcessPoolExecutor | None:
    """The fit processes (``fit_pool``), or ``None`` where there is one core or the caller is a daemon process
    (which may not have children)."""
    global _FIT_POOL
    cores = os.cpu_count() or 1
    if cores < 2 or multiprocessing.current_process().daemon:
        return None
    if _FIT_POOL is None or _FIT_POOL[0] != os.getpid():  # a forked child cannot use its parent's pool
        # fork: instant, and it never runs the caller's __main__ again (spawn imports a script's main module in each
        # child, which re-runs a script without a main guard); the child computes with numpy and scikit-learn only
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        pool = ProcessPoolExecutor(max_workers=cores, mp_context=context, initializer=_fit_worker_init)
        _FIT_POOL = (os.getpid(), pool)
    return _FIT_POOL[1]


# A probe whose fit split holds fewer feature values than this fits in one thread: sending small fits to the
# processes and back costs more than the fits. A 200-image, 10-class probe (the smoke scale's) took 41 ms in the
# processes against 34 ms in a thread on an idle 2-core machine, and 97 against 50 ms beside two busy processes (the
# test suite's notebooks); a 2,000-image one (the book's) 56 against 65 ms: processes from there on
SMALL_FIT = 100_000


@contextlib.contextmanager
def fit_pool(values: int | None = None) -> Iterator[Executor]:
    """The executor that runs the linear probe's independent fits, one per core: a pool of processes, kept for the
    life of the caller's process. Threads shared the cores poorly: the L-BFGS loop holds the GIL between its matrix
    products, so the six fits of a 100-class probe took 6.2 s in two threads against 8.0 s in one, and 4.0 s in two
    processes, with the same fits and so the same numbers. With one core, in a daemon process, or for a probe of fewer
    than ``SMALL_FIT`` feature ``values`` (a test-scale probe: its fits take milliseconds, and handing them to a
    process and back takes longer): one thread (which flushes subnormals; the caller's thread never does), the same
    fits."""
    pool = None if values is not None and values < SMALL_FIT else _process_pool()
    if pool is not None:
        yield pool
        return
    with ThreadPoolExecutor(max_workers=1, initializer=_flush_subnormals) as thread:
        yield thread


def start_fit_pool() -> None:
    """Start the fit processes now (``fit_pool``), before an evaluation encodes its first images."""
    pool = _process_pool()
    if pool is not None:
        pool.submit(int)


def _val_fit(
    x_fit: np.ndarray, y_fit: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, C: float, max_iter: int, seed: int
) -> tuple[float, LogisticRegression]:
    """One ``C`` of the probe's search: its fit on the fit split and that fit's validation accuracy."""
    clf = _fit_logreg(x_fit, y_fit, C, max_iter, seed)
    return float((clf.predict(x_val) == y_val).mean()), clf


def _check_probe(
    xtr: np.ndarray,
    ytr: np.ndarray,
    xte: np.ndarray,
    yte: np.ndarray,
    what: str,
    val_fraction: float,
    Cs: Sequence[float] | None,
    default: Sequence[float],
) -> tuple[float, ...]:
    """A probe's inputs: ``train_<what>`` / ``test_<what>`` as long as their features, one feature dimension, a
    validation share in (0, 1) and a non-empty grid of positive costs (``default`` when ``Cs`` is ``None``)."""
    _check_len(len(xtr), len(ytr), f"train_{what}", "train_feats")
    _check_len(len(xte), len(yte), f"test_{what}", "test_feats")
    if xtr.shape[1] != xte.shape[1]:
        raise ValueError(f"test_feats has dimension {xte.shape[1]} but train_feats has {xtr.shape[1]}")
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    Cs = tuple(default) if Cs is None else tuple(float(c) for c in Cs)
    if not Cs or min(Cs) <= 0:
        raise ValueError(f"Cs must be a non-empty sequence of positive numbers, got {Cs}")
    return Cs


def linear_probe(
    train_feats: ArrayLike,
    train_labels: ArrayLike,
    test_feats: ArrayLike,
    test_labels: ArrayLike,
    *,
    seed: int = 0,
    Cs: Sequence[float] | None = None,
    val_fraction: float = 0.2,
    max_iter: int = 1000,
) -> dict[str, Any]:
    """Top-1 accuracy of a logistic-regression probe on frozen, unnormalised image features.

    ProtoCLIP Sec. IV-C.2 (following CLIP): scikit-learn's L-BFGS logistic regression with at most 1,000
    iterations, on the representations *before* normalisation. The inverse regularisation strength ``C``
    is chosen on a stratified validation split (``val_fraction``) carved from the training features over
    the log-spaced grid ``Cs`` (default ``DEFAULT_CS`` = 1e-3 .. 1e2), so the test set never informs the
    choice. Ties go to the smallest ``C`` (the most regularised probe). The probe scored on the test set is the
    chosen ``C``'s fit on the fit split (``1 - val_fraction`` of the training features), not a refit on all of
    them: a refit is one more fit at the chosen, usually weakly regularised and slowest ``C``, 4-5 s of a
    20 s probe with 100 classes on this machine, and every model compared is probed the same way.

    Every ``C`` of the grid is fitted, two fits at a time (one per core, in processes: ``fit_pool``). An earlier version stopped the walk
    after two values of ``C`` scored below the best; on the 100-class task (4 validation images per class) that
    stop was noisy: on one model it stopped at C = 0.01 (test accuracy 0.151) where the whole grid picks
    C = 100 (0.238), and such noise enters every paired difference the book reports. The whole grid is
    affordable since the fits flush subnormals to zero (``_flush_subnormals``).

    Deviation from a bare ``LogisticRegression``: features are standardised by a ``StandardScaler`` fitted
    on the training features of each fit (never the test set). This is an affine map, so the model class
    is unchanged, but it puts every dimension on one scale, which makes L-BFGS converge within 1,000
    iterations and makes one C grid meaningful across models whose feature norms differ.

    Returns ``accuracy`` (test top-1 fraction), ``accuracy_macro`` (its class-balanced mean, ``macro_accuracy``),
    ``C``, ``val_accuracy`` (at the chosen C), ``val_accuracies`` ({C: accuracy}), ``n_iter`` (L-BFGS iterations of the chosen fit) and ``converged``.
    """
    xtr = _feats(train_feats, "train_feats").numpy()
    ytr = _labels(train_labels, "train_labels")
    xte = _feats(test_feats, "test_feats").numpy()
    yte = _labels(test_labels, "test_labels")
    Cs = _check_probe(xtr, ytr, xte, yte, "labels", val_fraction, Cs, DEFAULT_CS)
    if len(np.unique(ytr)) < 2:
        raise ValueError("train_labels must hold at least two classes")

    # C selection: only the training features are touched
    fit_idx, val_idx = _val_split(len(xtr), ytr, val_fraction, seed)
    scaler = StandardScaler().fit(xtr[fit_idx])
    x_fit, x_val = scaler.transform(xtr[fit_idx]), scaler.transform(xtr[val_idx])

    # The fits are independent and single-threaded, so they share the cores (``fit_pool``); the slowest (largest
    # C) go first so that the short ones fill in beside them.
    order = sorted(set(Cs), reverse=True)
    with _probe_threads(), fit_pool(x_fit.size) as pool:
        futures = [pool.submit(_val_fit, x_fit, ytr[fit_idx], x_val, ytr[val_idx], C, max_iter, seed) for C in order]
        fits = dict(zip(order, (f.result() for f in futures)))
    val_accuracies = {C: accuracy for C, (accuracy, _) in fits.items()}
    best_C = max(val_accuracies, key=lambda c: (val_accuracies[c], -c))
    clf = fits[best_C][1]
    predictions = clf.predict(scaler.transform(xte))
    return {
        "accuracy": float((predictions == yte).mean()),
        "accuracy_macro": macro_accuracy(predictions, yte),
        "C": best_C,
        "val_accuracy": val_accuracies[best_C],
        "val_accuracies": val_accuracies,
        "n_iter": int(np.max(clf.n_iter_)),
        "converged": bool(np.max(clf.n_iter_) < max_iter),
    }


def knn_predict(
    train_feats: ArrayLike,
    train_labels: ArrayLike,
    test_feats: ArrayLike,
    k: int = 20,
    temperature: float = 0.07,
    chunk_size: int = 1024,
) -> np.ndarray:
    """Predicted class of each test row by DINO's weighted k-NN vote (the labels of ``train_labels``).

    Cosine similarity between L2-normalised features; each of the ``k`` nearest training samples votes for
    its class with weight ``exp(sim / temperature)``; the class with the largest summed vote wins (ties go
    to the smallest class id). Test rows are processed ``chunk_size`` at a time so that the similarity
    matrix never exceeds ``chunk_size x N_train``.
    """
    xtr = F.normalize(_feats(train_feats, "train_feats"), dim=-1)
    xte = F.normalize(_feats(test_feats, "test_feats"), dim=-1)
    ytr = _labels(train_labels, "train_labels")
    _check_len(len(xtr), len(ytr), "train_labels", "train_feats")
    _check_dim(xtr, xte, "train_feats", "test_feats")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if len(xtr) == 0:
        raise ValueError("train_feats is empty")
    # votes are summed per class index, so arbitrary label values are mapped to 0..C-1 and back
    classes, inverse = np.unique(ytr, return_inverse=True)
    ytr_idx = torch.as_tensor(inverse.reshape(-1))
    k = min(k, len(xtr))
    preds = []
    for start in range(0, len(xte), chunk_size):
        sim = xte[start : start + chunk_size] @ xtr.T
        top_sim, top_idx = sim.topk(k, dim=1)
        votes = torch.zeros(len(sim), len(classes))
        votes.scatter_add_(1, ytr_idx[top_idx], (top_sim / temperature).exp())
        preds.append(votes.argmax(dim=1))
    pred_idx = torch.cat(preds).numpy() if preds else np.zeros(0, dtype=np.int64)
    return classes[pred_idx]


def knn_accuracy(
    train_feats: ArrayLike,
    train_labels: ArrayLike,
    test_feats: ArrayLike,
    test_labels: ArrayLike,
    k: int = 20,
    temperature: float = 0.07,
) -> float:
    """Top-1 accuracy (fraction) of DINO's weighted k-NN classifier, k = 20 (ProtoCLIP Sec. IV-C.3).

    See ``knn_predict`` for the vote; the temperature 0.07 is DINO's.
    """
    yte = _labels(test_labels, "test_labels")
    _check_len(len(test_feats), len(yte), "test_labels", "test_feats")
    if len(yte) == 0:
        raise ValueError("test_feats is empty")
    pred = knn_predict(train_feats, train_labels, test_feats, k=k, temperature=temperature)
    return float((pred == yte).mean())


def per_class_accuracy(predictions: ArrayLike, labels: ArrayLike) -> dict[int, float]:
    """Accuracy (fraction) on the samples of each class: ``{c: mean(predictions[labels == c] == c)}``.

    One entry per class present in ``labels``, in increasing order of class id (a class without test samples
    has no accuracy, so it has no key); this is the recall of each class, and the mean of the values is the
    balanced accuracy. Use it for per-concept results (which shapes a model confuses) with any classifier's
    predictions: ``suite.zero_shot_per_class``, ``knn_predict``, a probe's ``predict``.
    """
    pred = _labels(predictions, "predictions")
    y = _labels(labels, "labels")
    _check_len(len(y), len(pred), "predictions", "labels")
    if y.size == 0:
        raise ValueError("labels is empty")
    return {int(c): float((pred[y == c] == c).mean()) for c in np.unique(y)}


def macro_accuracy(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Class-balanced accuracy: the mean over the classes present in ``labels`` of each class's accuracy
    (``per_class_accuracy``; scikit-learn's ``balanced_accuracy_score``). Where one class holds a large share of the
    test images, naming that class scores its share of top-1 accuracy but 1 / C of this."""
    return float(np.mean(list(per_class_accuracy(predictions, labels).values())))


def multilabel_map(scores: ArrayLike, targets: ArrayLike) -> float:
    """Mean average precision of multi-label ``scores`` ``[N, C]`` against binary ``targets`` ``[N, C]``.

    The macro mean over classes of scikit-learn's ``average_precision_score`` (AP = sum_n (R_n - R_{n-1}) P_n
    over the distinct score thresholds, no interpolation), i.e. exactly
    ``average_precision_score(targets, scores, average="macro")``, except that **classes with no positive
    in** ``targets`` **are skipped**: their AP is undefined (scikit-learn warns and counts them as 0, which would
    make the mean depend on how many empty classes a test split happens to hold). Scores may be logits,
    probabilities or similarities: AP depends only on their order within each class. The PASCAL VOC / MS-COCO
    multi-label metric of ICMLM and the book's multi-object presence task.
    """
    s = _feats(scores, "scores").double().numpy()
    t = targets.detach().cpu().numpy() if isinstance(targets, torch.Tensor) else np.asarray(targets)
    if t.shape != s.shape:
        raise ValueError(f"targets must have the shape of scores {s.shape}, got {t.shape}")
    if t.dtype == bool:
        t = t.astype(np.int64)
    if not np.isin(t, (0, 1)).all():
        raise ValueError("targets must be binary (0/1 or bool)")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    present = t.sum(axis=0) > 0
    if not present.any():
        raise ValueError("targets has no positive in any class: mean average precision is undefined")
    t = t.astype(np.int64)
    return float(average_precision_score(t[:, present], s[:, present], average="macro"))


DEFAULT_SVM_CS = (0.1, 1.0, 10.0)


def multilabel_svm_probe(
    train_feats: ArrayLike,
    train_targets: ArrayLike,
    test_feats: ArrayLike,
    test_targets: ArrayLike,
    *,
    Cs: Sequence[float] | None = None,
    val_fraction: float = 0.2,
    seed: int = 0,
) -> dict[str, Any]:
    """Multi-label mAP of one-vs-all linear SVMs on frozen features: ICMLM's VOC07 / COCO protocol (Supp F.2).

    Features are L2-normalised (as in Supp F.2); one scikit-learn ``LinearSVC`` per class, its cost ``C`` chosen
    on a random validation split (``val_fraction`` of the training features) over the grid ``Cs`` (default
    ``DEFAULT_SVM_CS`` = 0.1, 1, 10; the paper draws 40 values in [1e-5, 1e5] with Optuna; on this CPU C = 100
    alone cost as much as the other three together) by that class's validation AP, ties to the smallest ``C``.
    As in ``linear_probe``, the chosen ``C``'s fit on the fit split scores the test set (no refit); the classes
    are fitted two at a time (one per core). A class without a positive (or a negative) in the fit split scores
    a constant. Returns ``map`` (``multilabel_map`` of the test scores) and ``Cs`` (the chosen cost per class).
    """
    from sklearn.svm import LinearSVC

    xtr = F.normalize(_feats(train_feats, "train_feats"), dim=-1).numpy()
    xte = F.normalize(_feats(test_feats, "test_feats"), dim=-1).numpy()
    ytr, yte = np.asarray(train_targets), np.asarray(test_targets)
    if ytr.ndim != 2 or yte.ndim != 2 or ytr.shape[1] != yte.shape[1]:
        raise ValueError(
            f"train_targets and test_targets must be 2-D multi-hot [N, C] with one C, got {ytr.shape} and {yte.shape}"
        )
    Cs = _check_probe(xtr, ytr, xte, yte, "targets", val_fraction, Cs, DEFAULT_SVM_CS)
    order = np.random.default_rng(seed).permutation(len(xtr))
    n_val = max(1, int(round(val_fraction * len(xtr))))
    val, fit = order[:n_val], order[n_val:]

    def one_class(c: int) -> tuple[float, np.ndarray]:
        y_fit, y_val = ytr[fit, c], ytr[val, c]
        if len(np.unique(y_fit)) < 2:
            return float("nan"), np.zeros(len(xte))
        best = None
        for C in sorted(Cs):
            svm = LinearSVC(C=C, random_state=seed).fit(xtr[fit], y_fit)
            ap = average_precision_score(y_val, svm.decision_function(xtr[val])) if y_val.any() else 0.0
            if best is None or ap > best[0]:
                best = (ap, C, svm)
        assert best is not None  # Cs is not empty (_check_probe)
        return best[1], best[2].decision_function(xte)

    with _probe_threads(), ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        fitted = list(pool.map(one_class, range(ytr.shape[1])))
    scores = np.stack([s for _, s in fitted], axis=1)
    return {"map": multilabel_map(scores, yte), "Cs": [C for C, _ in fitted]}
