"""iCLIP's evaluation of a stored run beyond the suite's metrics: zero-shot with definition-enhanced prompts (spec
3.2: report both; whether iCLIP evaluates so is unverified), stored beside the run with iCLIP's fingerprint.

On the world the task is ``shapes10`` (the IN-1K stand-in) and the definitions the world's (``vocab.DEFINITIONS``);
on real data the task is the first image-folder task of the run's ``eval_tasks`` (the page's headline task) and
the definitions its class names' WordNet 3.0 glosses (``classes.named_class_texts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlp_lib import experiment, runs
from vlp_lib.data import folder_tasks, real, tasks
from vlp_lib.eval import zero_shot_accuracy
from vlp_lib.papers.iclip import classes

PAPER = runs.paper_of_module(__name__)
PROMPTS_KIND = "iclip_definition_prompts"
WORLD_TASK = "shapes10"


def prompt_task(config: Mapping[str, Any]) -> str | None:
    """The task ``prompt_zero_shot`` evaluates for run config ``config`` (its record form): ``shapes10`` on the
    world; on real data the first image-folder task of ``eval_tasks``, else ``shapes10`` when evaluated, else
    ``None`` (no task whose classes have definitions)."""
    if real.is_world(config["train_data"]):
        return WORLD_TASK
    folders = [t for t in config["eval_tasks"] if folder_tasks.is_folder_task(t)]
    if folders:
        return folders[0]
    return WORLD_TASK if WORLD_TASK in config["eval_tasks"] else None


def prompt_zero_shot(record: dict) -> dict[str, float]:
    """Zero-shot top-1 of a stored run on ``prompt_task``'s test split with the plain prompt ensemble of the task and
    with one definition-enhanced text per class ("a photo of a square, a flat shape ..."; a real class without a
    WordNet gloss keeps its prompt). Stored (``runs.cached``) under the run's config. ``ValueError`` naming
    ``eval_tasks`` when the run has no such task."""

    def compute() -> dict[str, dict[str, float]]:
        config = record["config"]
        name = prompt_task(config)
        if name is None:
            raise ValueError("eval_tasks: the definition prompts need an image-folder task or shapes10")
        model, tokenizer = experiment.load_trained(record)
        test = tasks.load_task(name, "test", n=config["task_test"], scale=config["scale"])
        if name == WORLD_TASK:
            enriched = classes.class_texts(test.classnames, definitions=True)
        else:  # the folders' names: a WordNet id or synset name is looked up as such
            enriched = classes.named_class_texts(folder_tasks.check_folder_task(name)[1], definitions=True)
        texts = dict(zip(test.classnames, enriched))
        plain = zero_shot_accuracy(model, tokenizer, test.images, test.labels, test.classnames, test.templates)
        enhanced = zero_shot_accuracy(
            model, tokenizer, test.images, test.labels, test.classnames, [lambda name: texts[name]]
        )
        return {"metrics": {"plain": plain["top1"], "definitions": enhanced["top1"]}}

    return runs.cached(PROMPTS_KIND, record["config"], compute, paper=PAPER)["metrics"]
