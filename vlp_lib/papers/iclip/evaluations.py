"""iCLIP's evaluation of a stored run beyond the suite's metrics: zero-shot with definition-enhanced prompts (spec
3.2: report both; whether iCLIP evaluates so is unverified), stored beside the run with iCLIP's fingerprint.
"""

from __future__ import annotations

from vlp_lib import experiment, runs
from vlp_lib.data import tasks
from vlp_lib.eval import zero_shot_accuracy
from vlp_lib.papers.iclip import classes

PAPER = runs.paper_of_module(__name__)
PROMPTS_KIND = "iclip_definition_prompts"


def prompt_zero_shot(record: dict) -> dict[str, float]:
    """shapes10 zero-shot top-1 of a stored run with the plain prompt ensemble of the task and with one
    definition-enhanced text per class (``classes.class_texts``: "a photo of a square, a flat shape ..."), on the
    run's own test split. Stored (``runs.cached``) under the run's config."""

    def compute() -> dict[str, dict[str, float]]:
        config = record["config"]
        model, tokenizer = experiment.load_trained(record)
        test = tasks.load_task("shapes10", "test", n=config["task_test"], scale=config["scale"])
        texts = dict(zip(test.classnames, classes.class_texts(test.classnames, definitions=True)))
        plain = zero_shot_accuracy(model, tokenizer, test.images, test.labels, test.classnames, test.templates)
        enhanced = zero_shot_accuracy(
            model, tokenizer, test.images, test.labels, test.classnames, [lambda name: texts[name]]
        )
        return {"metrics": {"plain": plain["top1"], "definitions": enhanced["top1"]}}

    return runs.cached(PROMPTS_KIND, record["config"], compute, paper=PAPER)["metrics"]
