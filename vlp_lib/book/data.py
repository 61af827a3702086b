"""What a chapter's page trained and evaluated on: the generated world or the reader's own pairs, and which of the
chapter's metrics and claims that data can give.

Every chapter notebook takes ``train_data`` (``"world"``, an OpenCLIP CSV or WebDataset shards: ``data.real``) and
``eval_tasks`` (world tasks and ``folder:PATH`` image-folder tasks: ``data.folder_tasks``). The book's claims are
stated on the world's metrics; on real data they are read by one rule (``HEADLINE_RULE``):

- a claim on a world task group (``avg3``, ``avg7``, ``robust4``: the papers' benchmark averages) reads the same
  metric on the *headline task*, the first image-folder task of ``eval_tasks``, when the group's own tasks are not
  evaluated;
- a claim on a metric the run does not have (a world task the run did not evaluate, the world's retrieval set for a
  model trained on real pairs, a world-only probe) is "not run", with the reason on the page;
- on the world (``train_data="world"``) nothing changes: every claim reads its own metric.

Book side: this module plans and presents, it computes no stored number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from vlp_lib.book.claims import Claim
from vlp_lib.data import folder_tasks, pair_sets, real
from vlp_lib.data import tasks as task_lib
from vlp_lib.suite import AVERAGE_GROUPS, PROBES, RETRIEVALS

HEADLINE_RULE = (
    "On your own data, a claim stated on one of the world's benchmark averages (avg3, avg7, robust4) reads the same "
    "metric on the first image-folder task of eval_tasks (the headline task); a claim on a metric the run does not "
    "have (a world task it did not evaluate, the world's retrieval set for a model trained on real pairs) is not run, "
    "and says why."
)
WORLD_RETRIEVAL = "retrieval"  # the generated world's retrieval set: evaluated on every world run with a text tower
TASK_METRICS = ("zeroshot_top1", "zeroshot_top5", "linear", "knn", "ari", "ami")
# the metric prefixes the evaluation suite writes (a world task, average, probe or retrieval set): a world run that
# did not evaluate one has none of its metrics
SUITE_PREFIXES = frozenset({*task_lib.TASKS, *AVERAGE_GROUPS, *PROBES, *RETRIEVALS, WORLD_RETRIEVAL})


def is_world(config: Any) -> bool:
    """Whether run config ``config`` trains on the generated world."""
    return real.is_world(config.train_data)


def folder_task_names(config: Any) -> list[str]:
    """The image-folder tasks of ``config``'s evaluation (``folder:PATH``), in the order given."""
    return [t for t in config.eval.tasks if folder_tasks.is_folder_task(t)]


def headline_task(config: Any) -> str | None:
    """The metric prefix a world-average claim reads on real data: the first folder task's (``None``: none)."""
    names = folder_task_names(config)
    return folder_tasks.metric_name(names[0]) if names else None


def _groups(config: Any) -> list[str]:
    return [g for g, (group_tasks, _) in AVERAGE_GROUPS.items() if all(t in config.eval.tasks for t in group_tasks)]


def has_world_retrieval(config: Any) -> bool:
    """Whether the page reads the world's retrieval set for ``config``'s runs: on the world only (it is evaluated on
    every world run with a text tower; a model trained on real pairs is not evaluated on generated captions)."""
    return is_world(config)


def prefixes(config: Any) -> set[str]:
    """The metric prefixes (the part of a key before the first ``/``) whose metrics ``config``'s runs have and the
    page may read."""
    out = {folder_tasks.metric_name(t) for t in config.eval.tasks if t != WORLD_RETRIEVAL}
    out |= set(_groups(config))
    if has_world_retrieval(config):
        out.add(WORLD_RETRIEVAL)
    return out


def metric_on_data(metric: str, config: Any) -> str | None:
    """The key that stands for ``metric`` on ``config``'s data (``HEADLINE_RULE``); ``None``: the data cannot give it."""
    prefix, _, rest = metric.partition("/")
    have = prefixes(config)
    if prefix in have:
        return metric
    if prefix in AVERAGE_GROUPS and not is_world(config) and (task := headline_task(config)) is not None:
        if rest in AVERAGE_GROUPS[prefix][1]:
            return f"{task}/{rest}"
    return None


def why_not(metric: str, config: Any) -> str:
    """Why ``config``'s runs have no ``metric`` (for a claim shown "not run")."""
    prefix = metric.partition("/")[0]
    if prefix == WORLD_RETRIEVAL or prefix in RETRIEVALS:
        return f"{metric} is measured on the generated world's captions; the data gives no held-out pairs for it"
    if prefix in AVERAGE_GROUPS:
        return f"{metric} averages world tasks the run does not evaluate, and eval_tasks has no image-folder task"
    if prefix in PROBES:
        return f"{metric} needs the world's object boxes (a probe of the generated scenes)"
    if prefix in task_lib.TASKS:
        return f"{metric} is a world task the run does not evaluate"
    return f"the run has no {metric}"


def claims_on_data(claims: Sequence[Claim], config: Any) -> list[Claim]:
    """``claims`` as they read on ``config``'s data (``HEADLINE_RULE``): the metrics of world averages moved to the
    headline task, a claim whose metric the data cannot give turned into "not run" with the reason. On the world,
    every claim reads its own metric, and one on a world evaluation the run left out of ``eval_tasks`` is "not run"
    (metrics of the chapter's own records, not of the evaluation suite, are left to the chapter)."""
    out = []
    for claim in claims:
        if claim.kind in ("not_run", "every_draw", "timing"):
            out.append(claim)
            continue
        metrics = [claim.metric, *(m for _, _, m in claim.terms)]
        moved = {m: metric_on_data(m, config) for m in metrics}
        if is_world(config):
            moved = {m: m if m.partition("/")[0] not in SUITE_PREFIXES else to for m, to in moved.items()}
        missing = [m for m, to in moved.items() if to is None]
        if missing:
            out.append(replace(claim, kind="not_run", reason=why_not(missing[0], config)))
            continue
        out.append(
            replace(
                claim,
                metric=moved[claim.metric] or claim.metric,
                terms=tuple((s, row, moved[m] or m) for s, row, m in claim.terms),
            )
        )
    return out


def metric_keys(config: Any, metrics: Sequence[str] = TASK_METRICS) -> list[str]:
    """The keys of a page's every-metric table for ``config``: each evaluated task's ``metrics``, the task groups
    evaluated, and the world's retrieval where it measures the run (``has_world_retrieval``)."""
    keys = [
        f"{folder_tasks.metric_name(t)}/{m}"
        for t in config.eval.tasks
        if t not in PROBES and t not in RETRIEVALS and t != WORLD_RETRIEVAL
        for m in metrics
    ]
    keys += [f"{g}/{m}" for g in _groups(config) for m in AVERAGE_GROUPS[g][1]]
    if has_world_retrieval(config):
        keys += [f"{WORLD_RETRIEVAL}/{d}_R@{k}" for d in ("i2t", "t2i") for k in (1, 5, 10)]
        keys.append(f"{WORLD_RETRIEVAL}/mean_recall")
    return keys


def figure_task(config: Any, world_task: str) -> str:
    """The task a page's figure shows: ``world_task`` on the world (or when evaluated), else the headline task."""
    if is_world(config) or world_task in config.eval.tasks:
        return world_task
    names = folder_task_names(config)
    return names[0] if names else config.eval.tasks[0]


def describe(config: Any, inputs: dict[str, str] | None = None, world_data: str | None = None) -> str:
    """Markdown naming what ``config``'s runs train and are evaluated on, and where each paper-specific input comes
    from (``inputs``: ``{input: its source}``), for the top of a page. ``world_data``: what the page's runs train on
    in the world, where its rows train on different worlds (default: ``config``'s pairs)."""
    if is_world(config) and world_data is not None:
        data = world_data
    elif is_world(config):
        data = f"the generated world ({config.train_size:,} pairs)"
    else:
        data = f"{config.train_size:,} image-text pairs from `{Path(config.train_data).name}` (`{config.train_data}`)"
    tasks = ", ".join(
        f"`{folder_tasks.metric_name(t)}` (image folders at `{t[len(folder_tasks.PREFIX) :]}`)"
        if folder_tasks.is_folder_task(t)
        else f"`{pair_sets.metric_name(t)}` (held-out pairs `{t[len(pair_sets.PREFIX) :]}`, retrieval)"
        if pair_sets.is_pair_set(t)
        else f"`{t}`"
        for t in config.eval.tasks
    )
    head = [f"**Data.** Trained on {data}; evaluated on {tasks}."] + ([] if is_world(config) else [HEADLINE_RULE])
    items = [f"- {name}: {source}" for name, source in (inputs or {}).items()]
    return "\n\n".join(head + (["\n".join(items)] if items else []))
