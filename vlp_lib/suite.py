"""The full evaluation suite of a trained model on the world's fixed tasks.

Per classification task (ProtoCLIP IV-C): zero-shot top-1/top-5 with prompt ensembles, linear probe
(L-BFGS logistic regression on unnormalised features), k-NN (k = 20, DINO weighting), clustering
ARI/AMI (Table XII); on the retrieval set (MS-COCO stand-in): recall@1/5/10 both ways and their
mean (Table VIII), and the modality gap. Metric keys are ``<task>/<metric>``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .data import tasks as task_lib
from .eval import (
    clustering_scores,
    encode_images,
    encode_texts,
    knn_accuracy,
    linear_probe,
    modality_gap,
    retrieval_recall,
    zero_shot_accuracy,
)

VALIDATION_TASKS = ("shapes10", "shapes_colours", "clutter10")


def evaluate_task(model: torch.nn.Module, tokenizer: Any, name: str, scale: str, n_train: int, n_test: int,
                  seed: int = 0) -> dict[str, float]:
    train = task_lib.load_task(name, "train", n=n_train, scale=scale)
    test = task_lib.load_task(name, "test", n=n_test, scale=scale)
    zs = zero_shot_accuracy(model, tokenizer, test.images, test.labels, test.classnames, test.templates)
    f_train = encode_images(model, train.images)
    f_test = encode_images(model, test.images)
    probe = linear_probe(f_train, train.labels, f_test, test.labels, seed=seed)
    clusters = clustering_scores(f_test, test.labels, seed=seed)
    return {
        "zeroshot_top1": zs["top1"],
        "zeroshot_top5": zs["top5"],
        "linear": probe["accuracy"],
        "knn": knn_accuracy(f_train, train.labels, f_test, test.labels),
        "ari": clusters["ari"],
        "ami": clusters["ami"],
    }


def evaluate_retrieval(model: torch.nn.Module, tokenizer: Any, scale: str, n_images: int) -> dict[str, float]:
    ret = task_lib.load_retrieval(n_images=n_images, scale=scale)
    img = encode_images(model, ret.images)
    txt = encode_texts(model, tokenizer, ret.captions)
    out = retrieval_recall(img, txt, ret.text_image_index)
    out["modality_gap"] = modality_gap(img, txt)
    return out


def evaluate_suite(model: torch.nn.Module, tokenizer: Any, config: dict[str, Any]) -> dict[str, float]:
    """Every metric for ``config['eval_tasks']`` plus retrieval; ``avg3/<metric>`` averages the three
    tasks standing in for CIFAR-10, CIFAR-100 and STL-10 (ProtoCLIP IV-D reports that average)."""
    metrics: dict[str, float] = {}
    for name in config["eval_tasks"]:
        for key, value in evaluate_task(model, tokenizer, name, config["scale"], config["task_train"],
                                        config["task_test"], seed=config["seed"]).items():
            metrics[f"{name}/{key}"] = float(value)
    for key, value in evaluate_retrieval(model, tokenizer, config["scale"], config["retrieval_images"]).items():
        metrics[f"retrieval/{key}"] = float(value)
    if all(t in config["eval_tasks"] for t in VALIDATION_TASKS):
        for key in ("zeroshot_top1", "linear", "knn"):
            metrics[f"avg3/{key}"] = float(np.mean([metrics[f"{t}/{key}"] for t in VALIDATION_TASKS]))
    return metrics


def zero_shot_predictions(model: torch.nn.Module, tokenizer: Any, task: Any) -> np.ndarray:
    """Predicted class of every image of ``task`` (a ``tasks.Task``), for confusion matrices."""
    from .eval import zero_shot_classifier

    weights = zero_shot_classifier(model, tokenizer, task.classnames, task.templates)
    feats = encode_images(model, task.images, normalize=True)
    return (feats @ weights).argmax(dim=1).numpy()


def chance_levels(config: dict[str, Any]) -> dict[str, float]:
    """What a random guesser scores on each metric of ``evaluate_suite`` (same keys): 1/C for top-1,
    linear and k-NN, min(5, C)/C for top-5, 0 for ARI/AMI (adjusted for chance by construction), and
    the exact expectation of a random ranking for retrieval."""
    from .eval import chance_level, retrieval_chance

    out: dict[str, float] = {}
    for name in config["eval_tasks"]:
        labels = task_lib.load_task(name, "test", n=config["task_test"], scale=config["scale"]).labels
        top1 = chance_level(labels, k=1)
        out.update({f"{name}/zeroshot_top1": top1, f"{name}/zeroshot_top5": chance_level(labels, k=5),
                    f"{name}/linear": top1, f"{name}/knn": top1, f"{name}/ari": 0.0, f"{name}/ami": 0.0})
    for key, value in retrieval_chance(config["retrieval_images"]).items():
        out[f"retrieval/{key}"] = value
    if all(t in config["eval_tasks"] for t in VALIDATION_TASKS):
        for key in ("zeroshot_top1", "linear", "knn"):
            out[f"avg3/{key}"] = float(np.mean([out[f"{t}/{key}"] for t in VALIDATION_TASKS]))
    return out
