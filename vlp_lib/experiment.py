"""One run = generate the world, build the model, train with a method, evaluate, store the record.

Notebooks call ``make_config`` (``vlp_lib.run_config``: a typed ``RunConfig``, every parameter checked before
anything is computed) and ``run`` (which returns the stored record if this exact run already exists).
``load_trained`` rebuilds a finished run's model for figures (t-SNE, confusion matrices); ``untrained`` evaluates a
run's network as initialised (the learning check: what training added over the same weights before any step).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlp_lib import distributed, runs
from vlp_lib.data.paired import PairedData
from vlp_lib.data.training import make_tokenizer, training_pairs
from vlp_lib.methods import MethodContext, create_method, method_class, paper_of
from vlp_lib.methods.base import Method, Trained
from vlp_lib.models import create_model
from vlp_lib.paths import checkpoint_dir
from vlp_lib.run_config import DEFAULT_EVAL_TASKS, RunConfig, make_config
from vlp_lib.runs import RUN_KIND, UNTRAINED_KIND
from vlp_lib.suite import evaluate_suite
from vlp_lib.train import TrainConfig, load_checkpoint, train

__all__ = [
    "DEFAULT_EVAL_TASKS",
    "RUN_KIND",
    "RunConfig",
    "build",
    "build_method",
    "checkpoint_file",
    "load_trained",
    "load_trained_method",
    "make_config",
    "method_arguments",
    "paper",
    "run",
    "run_seeds",
    "stored",
    "train_config",
    "trained_runs",
    "trained_state",
    "stored_untrained",
    "untrained",
    "wrap_model",
]


def train_config(config: RunConfig, progress: bool = True) -> TrainConfig:
    """The run's training settings, with or without progress bars."""
    return dataclasses.replace(config.train, progress=progress)


def build(config: RunConfig) -> tuple[PairedData, Any, torch.nn.Module]:
    """Training pairs, tokenizer and a freshly initialised model for ``config``. ``train_data`` is
    "world" (the generated world) or real data (``data.real.load_pairs``: an OpenCLIP CSV or WebDataset shards,
    decoded once into a cache; bad samples skipped and counted)."""
    tokenizer = make_tokenizer(config)
    data = training_pairs(config, tokenizer)
    model = create_model(
        config.model, tokenizer.vocab_size, tokenizer.context_length, image_size=config.image_size, seed=config.seed
    )
    return data, tokenizer, model


def trained_runs() -> Trained:
    """``trained(config)``: the trained model and tokenizer of the run ``config`` (``load_trained(run(config))``:
    trained first if it is not stored), loaded once per ``trained_runs()`` (so ``Method.wrap_model`` and
    ``Method.arguments`` of one run share one teacher object)."""
    loaded: dict[str, tuple[torch.nn.Module, Any]] = {}

    def trained(config: RunConfig) -> tuple[torch.nn.Module, Any]:
        key = runs.config_hash(config.to_dict())
        if key not in loaded:
            loaded[key] = load_trained(run(config))
        return loaded[key]

    return trained


def wrap_model(config: RunConfig, model: torch.nn.Module, trained: Trained | None = None) -> torch.nn.Module:
    """The model a run of ``config`` trains and stores (``Method.wrap_model``): the built model itself for every
    method but DIME-FM, whose run trains a composite of the student's image tower and the teacher's text tower."""
    return method_class(config.method).wrap_model(model, config.method_args, trained or trained_runs())


def method_arguments(
    config: RunConfig,
    data: PairedData,
    model: torch.nn.Module,
    tokenizer: Any = None,
    trained: Trained | None = None,
) -> dict[str, Any]:
    """The method's constructor arguments: its typed ``method_args`` completed by the method itself
    (``Method.arguments``) from the data, the model and, when it asks, another run's trained model (``trained``:
    a teacher)."""
    tokenizer = tokenizer or make_tokenizer(config)
    context = MethodContext(config, data, model, tokenizer, trained or trained_runs())
    return method_class(config.method).arguments(config.method_args, context)


def build_method(config: RunConfig) -> tuple[PairedData, Any, torch.nn.Module, Method]:
    """Training pairs, tokenizer, the freshly initialised model the run trains (``wrap_model``) and its method,
    built from them (``method_arguments``): what a run of ``config`` starts from."""
    data, tokenizer, model = build(config)
    trained = trained_runs()
    model = wrap_model(config, model, trained)
    method = create_method(config.method, **method_arguments(config, data, model, tokenizer, trained))
    return data, tokenizer, model, method


def paper(config: RunConfig) -> str | None:
    """The paper whose code (with the core) computes the run ``config``: the one that defines its method
    (``methods.paper_of``; ``None`` for CLIP, a core method). Its records carry that paper's fingerprint."""
    return paper_of(config.method)


def stored(config: RunConfig) -> dict | None:
    """The stored, current record of the run ``config``, or ``None`` (never trains)."""
    return runs.load(RUN_KIND, config.to_dict(), paper=paper(config))


def checkpoint_path(config: RunConfig) -> Path:
    """Where a run of ``config`` made by today's code keeps its checkpoint: ``checkpoint_dir()`` /
    ``train-<run key>-<code fingerprint>.pt``."""
    fingerprint = runs.code_fingerprint(paper(config))
    return checkpoint_dir() / f"{RUN_KIND}-{runs.config_hash(config.to_dict())}-{fingerprint}.pt"


def checkpoint_file(record: dict) -> Path:
    """The checkpoint of a stored run on this machine: its file name (the run's key and fingerprint) under
    ``checkpoint_dir()``. A record names the file, not a folder: records made before kept the absolute path on the
    machine that made them, a folder a reader's clone does not have, so only that path's name is read."""
    return checkpoint_dir() / Path(record["checkpoint"]).name


def run(config: RunConfig, progress: bool = True, verbose: bool = True) -> dict:
    """Train and evaluate ``config`` (or load its stored record). Across processes (``torchrun``,
    ``vlp_lib.distributed``) every rank trains its share of each batch; rank 0 alone evaluates and writes the record,
    which every rank returns."""
    ranks = distributed.world()
    if not ranks.parallel:
        return runs.cached(
            RUN_KIND,
            config.to_dict(),
            lambda: _evaluate(config, *_train(config, progress)),
            verbose=verbose,
            paper=paper(config),
        )
    record = stored(config)
    if record is None:
        trained = _train(config, progress and ranks.is_main)
        if ranks.is_main:
            runs.save_result(RUN_KIND, config.to_dict(), _evaluate(config, *trained), paper=paper(config))
        distributed.barrier()
        record = stored(config)
    assert record is not None, "rank 0 stored the run"
    return record


def untrained(config: RunConfig, verbose: bool = True) -> dict:
    """The record of ``config``'s network as initialised (``build``: the same weights its run starts from),
    evaluated by the same suite before any training step (or loaded if stored): what a run's numbers must beat
    before training can be said to have taught the network anything. Real data's classes are imbalanced and a random
    network's features already separate drawings by their ink, so chance levels are not that bar. ``metrics`` only,
    in the run record's keys; stored under ``UNTRAINED_KIND`` with the run's config as its key."""

    def evaluate() -> dict[str, Any]:
        _, tokenizer, model = build(config)
        model = wrap_model(config, model)
        t0 = time.perf_counter()
        metrics = evaluate_suite(model.eval(), tokenizer, config.eval)
        return {"metrics": metrics, "timings": {"evaluation": time.perf_counter() - t0}}

    return runs.cached(UNTRAINED_KIND, config.to_dict(), evaluate, verbose=verbose, paper=paper(config))


def stored_untrained(config: RunConfig) -> dict | None:
    """The stored ``untrained`` record of ``config``, or ``None`` (never computes)."""
    return runs.load(UNTRAINED_KIND, config.to_dict(), paper=paper(config))


def _train(config: RunConfig, progress: bool) -> tuple[torch.nn.Module, Any, Any, int, float]:
    """Build and train the run: the trained model, tokenizer, ``TrainResult``, training pairs and setup seconds."""
    t0 = time.perf_counter()
    data, tokenizer, model, method = build_method(config)
    data, sampler = method.training_data(data)
    t_setup = time.perf_counter() - t0
    result = train(model, method, data, train_config(config, progress), checkpoint_path(config), sampler=sampler)
    return model, tokenizer, result, len(data), t_setup


def _evaluate(
    config: RunConfig, model: torch.nn.Module, tokenizer: Any, result: Any, n_pairs: int, t_setup: float
) -> dict[str, Any]:
    """The record's content: the evaluation suite's metrics, timings, the thinned loss history."""
    t0 = time.perf_counter()
    metrics = evaluate_suite(model, tokenizer, config.eval)
    t_eval = time.perf_counter() - t0
    metrics["train_samples_per_s"] = result.samples_per_s
    metrics["final_loss"] = float(np.mean([h["loss"] for h in result.history[-10:]]))
    metrics["train_pairs"] = n_pairs  # real data: after its bad samples were skipped
    timings = {"setup": t_setup, **result.timings, "evaluation": t_eval}
    return {
        "metrics": metrics,
        "timings": timings,
        "history": _thin(result.history),
        "checkpoint": checkpoint_path(config).name,  # found under checkpoint_dir() (checkpoint_file)
    }


def run_seeds(config: RunConfig, seeds: list[int], progress: bool = True) -> list[dict]:
    """The same run for each seed (the seed fixes init, data order and augmentation)."""
    return [run(config.replace(seed=int(s)), progress=progress) for s in seeds]


def load_trained(record: dict) -> tuple[torch.nn.Module, Any]:
    """The trained model (eval mode) and tokenizer of a stored run: the model it trained (``wrap_model``; for
    DIME-FM the composite, its teacher loaded through its own stored run)."""
    config = RunConfig.from_dict(record["config"])
    tokenizer = make_tokenizer(config)
    model = create_model(
        config.model, tokenizer.vocab_size, tokenizer.context_length, image_size=config.image_size, seed=config.seed
    )
    model = wrap_model(config, model)
    model.load_state_dict(trained_state(record)["model"])
    return model.eval(), tokenizer


def trained_state(record: dict) -> dict[str, Any]:
    """The final checkpoint of a stored run (``train.load_checkpoint``). A checkpoint that is missing or corrupt is
    never loaded: the record is discarded and the run recomputed (deterministic: the same numbers), then read."""
    state = load_checkpoint(checkpoint_file(record))
    if state is None:
        warnings.warn(
            f"run {record['config_hash']}: its checkpoint {checkpoint_file(record)} is missing or corrupt; "
            "recomputing the run",
            stacklevel=2,
        )
        runs.discard(RUN_KIND, record["config"])
        state = load_checkpoint(checkpoint_file(run(RunConfig.from_dict(record["config"]), verbose=False)))
        assert state is not None, f"run {record['config_hash']}: the recomputed checkpoint cannot be read"
    return state


def load_trained_method(record: dict) -> tuple[torch.nn.Module, Method, Any, PairedData]:
    """The trained model and the trained method (both in eval mode: a method's own heads, e.g. ICMLM's masked-word
    predictor, which the run discards after training), the tokenizer and the training pairs of a stored run. The
    method is rebuilt as the run built it (``build_method``), then given its trained state from the checkpoint."""
    data, tokenizer, model, method = build_method(RunConfig.from_dict(record["config"]))
    state = trained_state(record)
    model.load_state_dict(state["model"])
    method.load_state_dict(state["method"])
    return model.eval(), method.eval(), tokenizer, data


def _thin(history: list[dict], max_points: int = 500) -> list[dict]:
    """Keep at most ``max_points`` evenly spaced entries of the step history for the record."""
    if len(history) <= max_points:
        return history
    keep = np.unique(np.linspace(0, len(history) - 1, max_points).round().astype(int))
    return [history[i] for i in keep]
