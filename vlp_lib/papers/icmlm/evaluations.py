"""ICMLM's evaluations of a stored run beyond the suite's metrics, each stored beside the run (keyed by its config
and the evaluation's sizes) with ICMLM's fingerprint: attribute zero-shot learning per layer (Supp C, Tab. 3;
``zsl.attribute_zsl_layers``) and the proxy task with validation l_tp on held-out captions
(``method.proxy_metrics``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from vlp_lib import experiment, runs
from vlp_lib.papers.icmlm.method import _ImageOnlyMethod, heldout_pairs, proxy_metrics
from vlp_lib.papers.icmlm.zsl import attribute_zsl_layers
from vlp_lib.run_config import RunConfig

PAPER = runs.paper_of_module(__name__)
ZSL_KIND, PROXY_KIND = "icmlm_zsl", "icmlm_proxy"


def _metrics(kind: str, key: dict[str, Any], compute: Callable[[], dict[str, Any]], train: bool) -> dict | None:
    """The stored metrics of the evaluation ``key``: computed and stored when missing (``train``), else ``None``."""
    if not train:
        record = runs.load(kind, key, paper=PAPER)
        return None if record is None else record["metrics"]
    return runs.cached(kind, key, compute, verbose=False, paper=PAPER)["metrics"]


def zsl_metrics(record: dict, layers: int, splits: int, iterations: int, compute: bool = True) -> dict | None:
    """Attribute ZSL on the ``layers`` deepest maps of a stored run over ``splits`` seen / unseen splits with
    ``iterations`` L-BFGS iterations (``zsl.attribute_zsl_layers``), as ``zsl/<map index>/<top1 | seen_top1 |
    unseen_top1>``; computed once and stored (``compute=False``: ``None`` when not stored), keyed by the run's config
    and the sizes."""

    def run() -> dict[str, Any]:
        c = record["config"]
        model, _ = experiment.load_trained(record)
        out = attribute_zsl_layers(
            model, c["scale"], c["task_train"], c["task_test"], layers, splits, max_iter=iterations
        )
        return {"metrics": {f"zsl/{m}/{k}": v for m, values in out.items() for k, v in values.items()}}

    key = {"run": record["config"], "layers": layers, "splits": splits, "iterations": iterations}
    return _metrics(ZSL_KIND, key, run, compute)


def proxy_record_metrics(record: dict, captions: int, compute: bool = True) -> dict | None:
    """The proxy task and validation l_tp of a stored run on ``captions`` held-out captions
    (``method.proxy_metrics``), as ``proxy/<name>``; computed once and stored (``compute=False``: ``None`` when not
    stored), keyed by the run's config and ``captions``."""

    def run() -> dict[str, Any]:
        model, method, tokenizer, _ = experiment.load_trained_method(record)
        heldout = heldout_pairs(RunConfig.from_dict(record["config"]), tokenizer, captions)
        image_only = cast(_ImageOnlyMethod, method)  # a TP or ICMLM run
        return {"metrics": {f"proxy/{k}": v for k, v in proxy_metrics(model, image_only, heldout).items()}}

    return _metrics(PROXY_KIND, {"run": record["config"], "captions": captions}, run, compute)
