"""The full evaluation suite of a trained model on the world's fixed tasks.

Per classification task (ProtoCLIP IV-C): zero-shot top-1/top-5 with prompt ensembles, linear probe
(L-BFGS logistic regression on unnormalised features), k-NN (k = 20, DINO weighting), clustering
ARI/AMI (Table XII); on the retrieval set (MS-COCO stand-in): recall@1/5/10 both ways and their
mean (Table VIII), and the modality gap; the same on a further retrieval set named in ``eval_tasks``
(``RETRIEVALS``: "retrieval2", iCLIP's Flickr30K stand-in, keys ``retrieval2/<metric>``) and on held-out real pairs
(``"pairs:<source>"``: ``data.pair_sets``, keys ``<source stem>/<metric>``). Beside each top-1 accuracy (zero-shot,
linear probe, k-NN) its class-balanced mean (``<metric>_macro``: the mean of the per-class accuracies), which real
data's imbalanced classes need (naming the largest class scores its share of top-1). Metric keys are
``<task>/<metric>``; task-group averages (``AVERAGE_GROUPS``: ``avg3``, ``avg7``, ``robust4``) are
``<group>/<metric>``.

An image-only model (no ``encode_text``: ``eval.has_text_tower``) gets the probes only (linear, k-NN,
clustering): the zero-shot and retrieval keys are absent from its metrics, and ``chance_levels`` with
``text_tower=False`` gives the matching keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vlp_lib.data import folder_tasks, pair_sets
from vlp_lib.data import tasks as task_lib
from vlp_lib.eval import (
    clustering_scores,
    encode_images,
    encode_texts,
    has_text_tower,
    knn_predict,
    linear_probe,
    macro_accuracy,
    modality_gap,
    multilabel_map,
    multilabel_svm_probe,
    per_class_accuracy,
    retrieval_recall,
    start_fit_pool,
    zero_shot_accuracy,
)

VALIDATION_TASKS = ("shapes10", "shapes_colours", "clutter10")
# Frozen-feature probes of objects and their layout, named in ``eval_tasks`` like tasks (PyramidCLIP Table 7's
# detection stand-in): "presence" -> ``presence/map`` (multi-label mAP over the 24 shapes of 1-3-object images),
# "relation" -> ``relation/linear`` (4-way linear probe of the primary object's relation to the secondary one).
# ICMLM's multi-label targets (Supp F.2, linear SVMs): "objects" -> ``objects/map`` (MS-COCO stand-in),
# "objects_shift" -> ``objects_shift/map`` (PASCAL VOC07 stand-in: 64 px, clutter).
PROBES = ("presence", "relation", "objects", "objects_shift")
# Retrieval sets evaluated when named in ``eval_tasks`` (the MS-COCO stand-in "retrieval" always is, with a text
# tower): "retrieval2" -> ``retrieval2/i2t_R@1`` ... (iCLIP Supp Tab. 2's Flickr30K stand-in).
RETRIEVALS = tuple(name for name in task_lib.RETRIEVAL_SETS if name != "retrieval")
# metrics averaged over VALIDATION_TASKS into ``avg3/<metric>`` (ImageNet top-1 / top-5 and linear-probe stand-ins)
AVG3_METRICS = ("zeroshot_top1", "zeroshot_top5", "linear", "knn")
# Task groups averaged into ``<group>/<metric>``: group -> (its tasks, the metrics averaged). ``avg3``: ProtoCLIP's
# CIFAR-10/100 + STL-10 average; ``avg7``: the seven original world tasks (DIME-FM's ELEVATER average);
# ``robust4``: the four distribution shifts of shapes10 (DIME-FM Supp Tab. 4's robustness average, zero-shot).
AVERAGE_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "avg3": (VALIDATION_TASKS, AVG3_METRICS),
    "avg7": (task_lib.SEVEN_TASKS, AVG3_METRICS),
    "robust4": (task_lib.ROBUST_TASKS, ("zeroshot_top1",)),
}


@dataclass(frozen=True)
class EvalConfig:
    """What a run evaluates (``evaluate_suite``): the ``tasks`` of ``eval_tasks`` (world tasks, ``PROBES``,
    ``RETRIEVALS``, ``folder:<path>``) at ``scale``'s task sets, ``task_train`` / ``task_test`` images per split,
    ``retrieval_images`` images of the retrieval set, the probes' ``seed``, and ``probes`` (``False``: zero-shot
    only). A run config nests one (``RunConfig.eval``); its record keeps the flat keys (``from_record``)."""

    tasks: tuple[str, ...]
    scale: str
    task_train: int
    task_test: int
    retrieval_images: int
    seed: int = 0
    probes: bool = True
    # the generated world's retrieval set (the MS-COCO stand-in), evaluated on every run with a text tower trained on
    # the world; not for a model trained on real pairs (generated captions are not what it learned to match, and no
    # page reads them: ``book.data.has_world_retrieval``). Derived from the run's ``train_data``, so no key of its own
    world_retrieval: bool = True

    @classmethod
    def from_record(cls, config: Mapping[str, Any]) -> EvalConfig:
        """The evaluation settings of a record's config (or any mapping with its keys: ``eval_tasks``, ``scale``,
        ``task_train``, ``task_test``, ``retrieval_images``, ``seed``, ``eval_probes``)."""
        return cls(
            tasks=tuple(config["eval_tasks"]),
            scale=config["scale"],
            task_train=int(config["task_train"]),
            task_test=int(config["task_test"]),
            retrieval_images=int(config["retrieval_images"]),
            seed=int(config.get("seed", 0)),
            probes=bool(config.get("eval_probes", True)),
            world_retrieval=str(config.get("train_data", "world")) == "world",
        )


def _text_tower(model: Any, tokenizer: Any, text_tower: bool | None) -> bool:
    """Whether to run the text-side metrics: ``text_tower`` if given (``True`` needs ``model.encode_text``
    and a tokenizer), else whether ``model`` has a text tower. ``ValueError`` before any compute."""
    if text_tower is None:
        text_tower = has_text_tower(model)
    elif text_tower and not has_text_tower(model):
        raise ValueError("text_tower=True but model has no encode_text")
    if text_tower and tokenizer is None:
        raise ValueError(
            "tokenizer is None but the model's text tower is evaluated (zero-shot, retrieval); "
            "pass text_tower=False for probes only"
        )
    return bool(text_tower)


# The linear probe's C grid by scale (``eval.linear_probe``; every other scale: its ``DEFAULT_CS``, 1e-3 .. 1e2). A
# smoke run tests the pipeline and its numbers mean nothing, but the whole grid made its probes three quarters of
# its time (2.75 of 3.8 s in a ProtoCLIP smoke run: 18 L-BFGS fits, the weakly regularised ones up to 1,000
# iterations on 160 images); two well-regularised values fit in a fraction of it and still exercise the choice.
PROBE_CS: dict[str, tuple[float, ...]] = {"smoke": (0.01, 1.0)}
# The same for the multi-label SVM probes (``eval.multilabel_svm_probe``, ICMLM's VOC / COCO stand-ins; every other
# scale: ``DEFAULT_SVM_CS``, 0.1, 1, 10): one value at smoke scale.
SVM_CS: dict[str, tuple[float, ...]] = {"smoke": (1.0,)}


def evaluate_task(
    model: torch.nn.Module,
    tokenizer: Any,
    name: str,
    scale: str,
    n_train: int,
    n_test: int,
    seed: int = 0,
    text_tower: bool | None = None,
    probes: bool = True,
) -> dict[str, float]:
    """Metrics of one classification task: ``zeroshot_top1``, ``zeroshot_top5`` (with a text tower only),
    ``linear``, ``knn``, ``ari``, ``ami`` (with ``probes`` only: ``False`` evaluates zero-shot alone and never
    loads the train split). ``text_tower=None`` detects it (``eval.has_text_tower``); ``False`` skips zero-shot for
    any model (then ``tokenizer`` may be ``None``). A task marked ``per_class`` (``tasks.TASKS``; ``shapes24``)
    adds ``zeroshot_top1/<class name>``: the zero-shot top-1 of each class's test images."""
    text_tower = _text_tower(model, tokenizer, text_tower)
    if not (text_tower or probes):
        raise ValueError(
            f"probes=False evaluates zero-shot only, which needs a text tower: nothing to evaluate on {name!r}"
        )
    test = task_lib.load_task(name, "test", n=n_test, scale=scale)
    out: dict[str, float] = {}
    f_test = encode_images(model, test.images)  # once, for zero-shot and the probes
    if text_tower:
        zs = zero_shot_accuracy(
            model, tokenizer, test.images, test.labels, test.classnames, test.templates, image_features=f_test
        )
        out.update(zeroshot_top1=zs["top1"], zeroshot_top5=zs["top5"], zeroshot_top1_macro=zs["top1_macro"])
        if task_lib.TASKS.get(name, {}).get("per_class"):
            per_class = zero_shot_per_class(model, tokenizer, test, image_features=f_test)
            out.update({f"zeroshot_top1/{c}": value for c, value in per_class.items()})
    if not probes:
        return out
    train = task_lib.load_task(name, "train", n=n_train, scale=scale)
    f_train = encode_images(model, train.images)
    probe = linear_probe(f_train, train.labels, f_test, test.labels, seed=seed, Cs=PROBE_CS.get(scale))
    clusters = clustering_scores(f_test, test.labels, seed=seed)
    knn = knn_predict(f_train, train.labels, f_test)
    out.update(
        linear=probe["accuracy"],
        linear_macro=probe["accuracy_macro"],
        knn=float(np.mean(knn == np.asarray(test.labels))),
        knn_macro=macro_accuracy(knn, test.labels),
        ari=clusters["ari"],
        ami=clusters["ami"],
    )
    return out


def presence_map(
    model: torch.nn.Module, scale: str, n_train: int, n_test: int, seed: int = 0, name: str = "presence"
) -> float:
    """mAP (``eval.multilabel_map``) of a multi-label probe of task ``name`` (``tasks.MULTILABEL_TASKS``), fitted
    on its train split, scored on its test split, by the task's ``probe``: ``"logistic"``, one-vs-rest logistic
    regressions (C = 1, standardised unnormalised features; ``presence``), or ``"svm"``, one-vs-all linear SVMs
    with C chosen on validation (``eval.multilabel_svm_probe``; ``objects``, ``objects_shift``)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import StandardScaler

    train = task_lib.load_multilabel_task(name, "train", n=n_train, scale=scale)
    test = task_lib.load_multilabel_task(name, "test", n=n_test, scale=scale)
    f_train, f_test = encode_images(model, train.images), encode_images(model, test.images)
    if task_lib.MULTILABEL_TASKS[name]["probe"] == "svm":
        return multilabel_svm_probe(f_train, train.targets, f_test, test.targets, seed=seed, Cs=SVM_CS.get(scale))[
            "map"
        ]
    x_train, x_test = f_train.numpy(), f_test.numpy()
    scaler = StandardScaler().fit(x_train)
    probe = OneVsRestClassifier(LogisticRegression(C=1.0, max_iter=1000, random_state=seed))
    probe.fit(scaler.transform(x_train), train.targets)
    return multilabel_map(probe.decision_function(scaler.transform(x_test)), test.targets)


def relation_accuracy(model: torch.nn.Module, scale: str, n_train: int, n_test: int, seed: int = 0) -> float:
    """Linear-probe accuracy (``eval.linear_probe``) of the relation task (``tasks.load_relation_task``)."""
    train = task_lib.load_relation_task("train", n=n_train, scale=scale)
    test = task_lib.load_relation_task("test", n=n_test, scale=scale)
    return linear_probe(
        encode_images(model, train.images),
        train.labels,
        encode_images(model, test.images),
        test.labels,
        seed=seed,
        Cs=PROBE_CS.get(scale),
    )["accuracy"]


def evaluate_probe(
    model: torch.nn.Module, name: str, scale: str, n_train: int, n_test: int, seed: int = 0
) -> dict[str, float]:
    """The metrics of probe ``name`` (``PROBES``), keyed without the probe's prefix."""
    if name in task_lib.MULTILABEL_TASKS:
        return {"map": presence_map(model, scale, n_train, n_test, seed, name)}
    if name == "relation":
        return {"linear": relation_accuracy(model, scale, n_train, n_test, seed)}
    raise ValueError(f"probe must be one of {PROBES}, got {name!r}")


def metric_prefix(name: str) -> str:
    """The prefix of task ``name``'s metric keys: a folder task's folder name, a pair set's source stem, else the
    name itself."""
    return pair_sets.metric_name(name) if pair_sets.is_pair_set(name) else folder_tasks.metric_name(name)


def evaluate_pair_set(model: torch.nn.Module, tokenizer: Any, name: str, n_pairs: int) -> dict[str, float]:
    """Recall@1/5/10 both ways, their mean and the modality gap on the held-out pairs of pair set ``name``
    (``data.pair_sets``: its unique pairs, ``n_pairs`` at most), and ``pairs``, how many were ranked."""
    pairs = pair_sets.load_pair_set(name, n_pairs)
    img = encode_images(model, pairs.images)
    txt = encode_texts(model, tokenizer, pairs.captions)
    out = retrieval_recall(img, txt, np.arange(len(pairs.captions)))
    out["modality_gap"] = modality_gap(img, txt)
    out["pairs"] = float(len(pairs.captions))
    return out


def evaluate_retrieval(
    model: torch.nn.Module, tokenizer: Any, scale: str, n_images: int, name: str = "retrieval"
) -> dict[str, float]:
    """Recall@1/5/10 both ways, their mean and the modality gap on retrieval set ``name`` (``tasks.RETRIEVAL_SETS``)."""
    ret = task_lib.load_retrieval(n_images=n_images, scale=scale, name=name)
    img = encode_images(model, ret.images)
    txt = encode_texts(model, tokenizer, ret.captions)
    out = retrieval_recall(img, txt, ret.text_image_index)
    out["modality_gap"] = modality_gap(img, txt)
    return out


def group_average(
    metrics: dict[str, float],
    eval_tasks: Any,
    group: str,
    group_tasks: Sequence[str],
    metric_names: Sequence[str] = AVG3_METRICS,
) -> dict[str, float]:
    """``{f"{group}/{m}": mean of metrics[f"{t}/{m}"] over group_tasks}`` for each ``m`` of ``metric_names`` that
    every task of ``group_tasks`` has in ``metrics``; empty unless every task of ``group_tasks`` is in
    ``eval_tasks``. ``ValueError`` naming ``group`` / ``group_tasks`` when empty."""
    if not group or "/" in group:
        raise ValueError(f"group must be a non-empty name without '/', got {group!r}")
    if isinstance(group_tasks, str) or not len(group_tasks):
        raise ValueError(f"group_tasks must be a non-empty sequence of task names, got {group_tasks!r}")
    if not all(t in eval_tasks for t in group_tasks):
        return {}
    return {
        f"{group}/{m}": float(np.mean([metrics[f"{t}/{m}"] for t in group_tasks]))
        for m in metric_names
        if all(f"{t}/{m}" in metrics for t in group_tasks)
    }


def group_averages(metrics: dict[str, float], eval_tasks: Any) -> dict[str, float]:
    """Every average of ``AVERAGE_GROUPS`` whose tasks are all in ``eval_tasks`` (``group_average``): ``avg3/*``,
    ``avg7/*`` (zero-shot top-1 / top-5, linear, k-NN) and ``robust4/zeroshot_top1``."""
    out: dict[str, float] = {}
    for group, (group_tasks, metric_names) in AVERAGE_GROUPS.items():
        out.update(group_average(metrics, eval_tasks, group, group_tasks, metric_names))
    return out


def evaluate_suite(
    model: torch.nn.Module, tokenizer: Any, config: EvalConfig, text_tower: bool | None = None
) -> dict[str, float]:
    """Every metric for ``config.tasks`` plus retrieval; ``avg3/<metric>`` averages the three
    tasks standing in for CIFAR-10, CIFAR-100 and STL-10 (ProtoCLIP IV-D reports that average) for
    zero-shot top-1 and top-5 (the ImageNet top-1 / top-5 stand-ins), linear probe and k-NN; ``avg7/<metric>``
    the same over the seven original tasks (DIME-FM's ELEVATER stand-in) and ``robust4/zeroshot_top1`` the
    zero-shot top-1 of the four shapes10 shifts (``group_averages``), each when all its tasks are evaluated.

    An image-only model (``text_tower=False``, or ``None`` and no ``model.encode_text``) gets the probes only:
    no ``*/zeroshot_*`` and no ``retrieval/*`` (nor ``retrieval2/*``) keys; ``tokenizer`` may then be ``None``."""
    text_tower = _text_tower(model, tokenizer, text_tower)
    if config.probes:
        start_fit_pool()  # the probes' processes start while the first task's images are encoded
    metrics: dict[str, float] = {}
    for name in config.tasks:
        if name in RETRIEVALS:
            values = (
                evaluate_retrieval(model, tokenizer, config.scale, config.retrieval_images, name) if text_tower else {}
            )
        elif pair_sets.is_pair_set(name):
            values = evaluate_pair_set(model, tokenizer, name, config.retrieval_images) if text_tower else {}
        elif name in PROBES:
            if not config.probes:
                raise ValueError(f"eval_tasks: {name!r} is a probe, but eval_probes is False (zero-shot only)")
            values = evaluate_probe(model, name, config.scale, config.task_train, config.task_test, seed=config.seed)
        else:
            values = evaluate_task(
                model,
                tokenizer,
                name,
                config.scale,
                config.task_train,
                config.task_test,
                seed=config.seed,
                text_tower=text_tower,
                probes=config.probes,
            )
        for key, value in values.items():
            metrics[f"{metric_prefix(name)}/{key}"] = float(value)
    if text_tower and config.world_retrieval:
        for key, value in evaluate_retrieval(model, tokenizer, config.scale, config.retrieval_images).items():
            metrics[f"retrieval/{key}"] = float(value)
    metrics.update(group_averages(metrics, config.tasks))
    return metrics


def zero_shot_predictions(
    model: torch.nn.Module, tokenizer: Any, task: Any, image_features: torch.Tensor | None = None
) -> np.ndarray:
    """Predicted class of every image of ``task`` (a ``tasks.Task``), for confusion matrices. ``image_features``:
    the images' (unnormalised) features from ``encode_images``, when the caller has them."""
    from vlp_lib.eval import zero_shot_classifier

    weights = zero_shot_classifier(model, tokenizer, task.classnames, task.templates)
    if image_features is None:
        image_features = encode_images(model, task.images)
    feats = torch.nn.functional.normalize(image_features.float(), dim=-1)
    return (feats @ weights).argmax(dim=1).numpy()


def zero_shot_per_class(
    model: torch.nn.Module, tokenizer: Any, task: Any, image_features: torch.Tensor | None = None
) -> dict[str, float]:
    """Zero-shot top-1 accuracy on each class of ``task`` (a ``tasks.Task``), keyed by class name, for the
    classes that have test images (per-concept results; ``eval.per_class_accuracy``)."""
    accuracy = per_class_accuracy(zero_shot_predictions(model, tokenizer, task, image_features), task.labels)
    return {task.classnames[c]: value for c, value in accuracy.items()}


def chance_levels(config: EvalConfig, text_tower: bool = True) -> dict[str, float]:
    """What a random guesser scores on each metric of ``evaluate_suite`` (same keys): 1/C for top-1,
    linear and k-NN, min(5, C)/C for top-5, 0 for ARI/AMI (adjusted for chance by construction), and
    the exact expectation of a random ranking for retrieval. ``text_tower=False``: the keys of an image-only
    model (no zero-shot, no retrieval); ``config.probes`` False: no probe keys."""
    from vlp_lib.eval import chance_level, retrieval_chance

    out: dict[str, float] = {}
    for name in config.tasks:
        if name in RETRIEVALS:
            if text_tower:
                chance = retrieval_chance(config.retrieval_images)
                out.update({f"{name}/{key}": value for key, value in chance.items()})
            continue
        if pair_sets.is_pair_set(name):
            if text_tower:
                n = len(pair_sets.load_pair_set(name, config.retrieval_images).captions)
                prefix = pair_sets.metric_name(name)
                out.update({f"{prefix}/{key}": value for key, value in retrieval_chance(n, 1).items()})
            continue
        if name in task_lib.MULTILABEL_TASKS:  # a random scorer's AP of a class is its prevalence
            targets = task_lib.load_multilabel_task(name, "test", n=config.task_test, scale=config.scale).targets
            present = targets.sum(0) > 0
            out[f"{name}/map"] = float(targets.mean(0)[present].mean())
            continue
        if name == "relation":
            labels = task_lib.load_relation_task("test", n=config.task_test, scale=config.scale).labels
            out["relation/linear"] = chance_level(labels, k=1)
            continue
        test = task_lib.load_task(name, "test", n=config.task_test, scale=config.scale)
        top1 = chance_level(test.labels, k=1)
        name = folder_tasks.metric_name(name)
        macro = top1  # a random guesser is right on 1 / C of each class's images: its balanced accuracy too
        if text_tower:
            out.update({f"{name}/zeroshot_top1": top1, f"{name}/zeroshot_top5": chance_level(test.labels, k=5)})
            out[f"{name}/zeroshot_top1_macro"] = macro
            if task_lib.TASKS.get(name, {}).get(
                "per_class"
            ):  # a random guesser is right on 1 / C of each class's images
                out.update(
                    {
                        f"{name}/zeroshot_top1/{test.classnames[c]}": 1 / len(test.classnames)
                        for c in np.unique(test.labels)
                    }
                )
        if config.probes:
            out.update({f"{name}/linear": top1, f"{name}/knn": top1, f"{name}/ari": 0.0, f"{name}/ami": 0.0})
            out.update({f"{name}/linear_macro": macro, f"{name}/knn_macro": macro})
    if text_tower and config.world_retrieval:
        for key, value in retrieval_chance(config.retrieval_images).items():
            out[f"retrieval/{key}"] = value
    out.update(group_averages(out, config.tasks))
    return out
