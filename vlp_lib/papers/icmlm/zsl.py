"""Attribute-based zero-shot classification (ICMLM Supp C, Eq. 1-4; the CUB / AWA2 protocol of Xian et al.) on the
``shapes_colours`` classes, per layer of an image-only model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.preprocessing import StandardScaler

from vlp_lib.data import tasks as task_lib
from vlp_lib.eval.common import ArrayLike, _check_dim, _check_len, _feats, _labels
from vlp_lib.eval.encode import encode_feature_maps

if TYPE_CHECKING:
    from vlp_lib.models import ImageOnly


def shapes_colours_factors() -> np.ndarray:
    """int64 ``[100, 2]``: the (shape, colour family) index of each class of the ``shapes_colours`` task, in its
    class order (``tasks.TASKS["shapes_colours"]["classnames"]``: shape-major, "red square", "yellow square", ...)."""
    from vlp_lib.data.tasks import TASKS

    knobs = TASKS["shapes_colours"]["knobs"]
    shapes, colours = knobs["shapes"], knobs["colours"]
    return np.array([(s, c) for s in range(len(shapes)) for c in range(len(colours))], np.int64)


def shapes_colours_attributes() -> np.ndarray:
    """The class-level attribute vectors A_c of the ``shapes_colours`` classes (the stand-in of CUB's 312 and AWA2's
    85 attributes; our stand-in): float32 ``[100, 30]`` = [one-hot shape (20) ; one-hot colour family (5) ; one-hot
    superclass (5)], rows in the task's class order. The attributes are exactly the world's generative factors, so
    this zero-shot task is easier than CUB / AWA2."""
    from vlp_lib.data import vocab
    from vlp_lib.data.tasks import TASKS

    shapes = TASKS["shapes_colours"]["knobs"]["shapes"]
    supers = [s for s in vocab.SUPERCLASSES if any(vocab.SHAPE_SUPERCLASS[x] == s for x in shapes)]
    factors = shapes_colours_factors()
    n_shapes, n_colours = len(shapes), int(factors[:, 1].max()) + 1
    out = np.zeros((len(factors), n_shapes + n_colours + len(supers)), np.float32)
    rows = np.arange(len(factors))
    out[rows, factors[:, 0]] = 1.0
    out[rows, n_shapes + factors[:, 1]] = 1.0
    out[
        rows, n_shapes + n_colours + np.array([supers.index(vocab.SHAPE_SUPERCLASS[shapes[s]]) for s in factors[:, 0]])
    ] = 1.0
    return out


def zsl_split(
    factors: ArrayLike, n_unseen: int, seed: int = 0, max_tries: int = 10_000
) -> tuple[np.ndarray, np.ndarray]:
    """A seen / unseen split of the classes (sorted class ids ``(seen, unseen)``) in which every value of every
    factor of an unseen class is held by some seen class: for ``shapes_colours_factors()``, every unseen class's
    shape and colour are seen elsewhere (our split, after AWA2's 40 seen / 10 unseen classes: 75 seen / 25 unseen), so its attributes can be learned.

    ``factors`` ``[C, F]`` int: each class's factor values. Uniformly random splits (``numpy`` generator of ``seed``)
    until one qualifies; ``ValueError`` naming ``n_unseen`` (outside [1, C - 1]) or, after ``max_tries``, saying that
    no split was found."""
    f = factors.detach().cpu().numpy() if isinstance(factors, torch.Tensor) else np.asarray(factors)
    if f.ndim != 2 or not np.issubdtype(f.dtype, np.integer):
        raise ValueError(f"factors must be an integer array [C, F], got {f.dtype} {f.shape}")
    n_classes = len(f)
    if isinstance(n_unseen, bool) or not isinstance(n_unseen, (int, np.integer)) or not 1 <= n_unseen < n_classes:
        raise ValueError(f"n_unseen must be an integer in [1, {n_classes - 1}], got {n_unseen!r}")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        order = rng.permutation(n_classes)
        seen, unseen = order[n_unseen:], order[:n_unseen]
        if all(np.isin(f[unseen, j], f[seen, j]).all() for j in range(f.shape[1])):
            return np.sort(seen), np.sort(unseen)
    raise ValueError(
        f"n_unseen: no split with {n_unseen} unseen classes whose factors are all seen was found in {max_tries} tries"
    )


def attribute_zsl(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
    attributes: ArrayLike,
    seen: ArrayLike,
    weight_decay: float = 1e-3,
    max_iter: int = 200,
) -> dict[str, float]:
    """Attribute-based zero-shot classification of ICMLM Supp C (Eq. 1-4), the bilinear compatibility of [15]:

        f(x, a) = aᵀ (Σ x + b)                                   (Eq. 1; Σ ∈ R^{n×m}, b ∈ R^n)
        ŷ = argmax_{c ∈ C} f(x, A_c)                              (Eq. 2)
        Σ*, b* = argmin - E_{(x, y)} log p(y | x, A)               (Eq. 3)
        p(y = c | x, A) = softmax_c f(x, A_c)                     (Eq. 4)

    Σ and b are trained by cross-entropy over the **seen** classes (``seen``: class ids; every ``train_labels`` must
    be one) on standardised features (scikit-learn's ``StandardScaler`` fitted on the training features), with an
    L2 penalty ``weight_decay`` · ||Σ||² (the supplement states none; without one a separable training set drives
    Σ to infinity), by full-batch L-BFGS (``torch.optim.LBFGS``, strong Wolfe line search, ``max_iter``) from Σ = 0,
    b = 0 (the objective is convex: the result does not depend on a seed).

    Test: argmax over **all** classes of ``attributes`` ``[C, n]`` (seen + unseen, Supp Tab. 3's "top-1 accuracies
    among all classes"). Returns ``top1`` (all test images), ``seen_top1`` / ``unseen_top1`` (test images of seen /
    unseen classes, still predicted among all classes; ``nan`` when there are none).
    """
    x_train, x_test = _feats(train_features, "train_features"), _feats(test_features, "test_features")
    y_train, y_test = _labels(train_labels, "train_labels"), _labels(test_labels, "test_labels")
    _check_len(len(x_train), len(y_train), "train_labels", "train_features")
    _check_len(len(x_test), len(y_test), "test_labels", "test_features")
    _check_dim(x_train, x_test, "train_features", "test_features")
    a = _feats(attributes, "attributes")
    n_classes = len(a)
    seen_ids = _labels(seen, "seen")
    if (
        len(seen_ids) == 0
        or len(np.unique(seen_ids)) != len(seen_ids)
        or seen_ids.min() < 0
        or seen_ids.max() >= n_classes
    ):
        raise ValueError(f"seen must be distinct class ids in [0, {n_classes}) (the rows of attributes)")
    if len(x_train) == 0 or len(x_test) == 0:
        raise ValueError("train_features and test_features must be non-empty")
    if not np.isin(y_train, seen_ids).all():
        raise ValueError("train_labels must all be seen classes (Supp C: unseen classes are for testing only)")
    if y_test.min() < 0 or y_test.max() >= n_classes:
        raise ValueError(f"test_labels must be class ids in [0, {n_classes})")
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")

    scaler = StandardScaler().fit(x_train.numpy())
    x_train = torch.from_numpy(scaler.transform(x_train.numpy())).double()
    x_test = torch.from_numpy(scaler.transform(x_test.numpy())).double()
    a = a.double()
    lookup = np.full(n_classes, -1, np.int64)
    lookup[seen_ids] = np.arange(len(seen_ids))
    target = torch.from_numpy(lookup[y_train])
    a_seen = a[torch.from_numpy(seen_ids)]
    sigma = torch.zeros(a.shape[1], x_train.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(a.shape[1], dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([sigma, bias], max_iter=int(max_iter), line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        scores = (x_train @ sigma.T + bias) @ a_seen.T  # Eq. 1 for every seen class
        loss = F.cross_entropy(scores, target) + weight_decay * sigma.pow(2).sum()  # Eq. 3-4
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        predicted = ((x_test @ sigma.T + bias) @ a.T).argmax(1).numpy()  # Eq. 2 over all classes
    correct = predicted == y_test
    is_seen = np.isin(y_test, seen_ids)
    return {
        "top1": float(correct.mean()),
        "seen_top1": float(correct[is_seen].mean()) if is_seen.any() else float("nan"),
        "unseen_top1": float(correct[~is_seen].mean()) if (~is_seen).any() else float("nan"),
    }


def attribute_zsl_layers(
    model: torch.nn.Module,
    scale: str,
    n_train: int,
    n_test: int,
    last: int = 3,
    splits: int = 5,
    n_unseen: int = 25,
    grid: int = 1,
    max_iter: int = 200,
) -> dict[int, dict[str, float]]:
    """Attribute zero-shot learning per layer (ICMLM Supp C, Tab. 3; ``attribute_zsl``) on the 100
    ``shapes_colours`` classes (the CUB / AWA2 stand-in, attributes ``eval.shapes_colours_attributes``): for each of
    the ``last`` deepest maps of an image-only model (``eval.encode_feature_maps``, ``grid`` x ``grid`` pooled, GAP by
    default: the C-11 / C-12 / C-13 analogue; Supp C pools to about 9K dimensions, which our maps do not have), the
    bilinear model is trained on the train-split images of the seen classes and tested on every test image among
    all 100 classes, over ``splits`` seen / unseen splits (``eval.zsl_split`` with split seeds 0 .. splits - 1,
    ``n_unseen`` unseen classes; ``max_iter`` L-BFGS iterations). Returns ``{map index (1-based, of model.depth()):
    {"top1", "seen_top1", "unseen_top1"} averaged over the splits}``."""
    train = task_lib.load_task("shapes_colours", "train", n=n_train, scale=scale)
    test = task_lib.load_task("shapes_colours", "test", n=n_test, scale=scale)
    f_train = encode_feature_maps(model, train.images, last, grid)
    f_test = encode_feature_maps(model, test.images, last, grid)
    attributes, factors = shapes_colours_attributes(), shapes_colours_factors()
    out: dict[int, dict[str, float]] = {}
    for k, (x_train, x_test) in enumerate(zip(f_train, f_test)):
        values = []
        for split in range(splits):
            seen, _ = zsl_split(factors, n_unseen, seed=split)
            rows = np.isin(train.labels, seen)
            values.append(
                attribute_zsl(
                    x_train[rows], train.labels[rows], x_test, test.labels, attributes, seen, max_iter=max_iter
                )
            )
        depth = cast("ImageOnly", model).depth()  # an image-only model (vlp_lib.models.ImageOnly)
        out[depth - last + k + 1] = {key: float(np.nanmean([v[key] for v in values])) for key in values[0]}
    return out
