"""A run's config, typed: ``RunConfig``, a frozen dataclass nesting the training settings (``train.TrainConfig``), the
evaluation settings (``suite.EvalConfig``) and the method's typed arguments (``Method.Args``), with every default in
one place; ``make_config`` builds and checks it.

Notebooks and chapters call ``make_config(scale, method, seed, **overrides)``: scale defaults (``config.SCALES``),
then explicit ``overrides``, every one checked before any data or model exists (``ValueError`` naming the
parameter; an unknown key or a value of the wrong type included). ``to_dict`` gives the JSON record form, the same
flat keys as before this type existed (``epochs``, ``episode_size``, ``eval_tasks``, ``method_kwargs`` ...): it is
the run's key in the results store (``runs.config_hash``), and ``from_dict`` reads it back. ``replace`` changes
fields by those keys and checks the result again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlp_lib.config import check_bool, check_nonnegative_int, check_positive_int, resolve
from vlp_lib.data import folder_tasks, pair_sets, real
from vlp_lib.data import tasks as task_lib
from vlp_lib.data.world import check_knobs
from vlp_lib.methods import check_method_name, method_class
from vlp_lib.methods.args import MethodArgs
from vlp_lib.models import DEFAULT_PRECISION, check_model_name
from vlp_lib.suite import PROBES, RETRIEVALS, EvalConfig
from vlp_lib.train import TrainConfig

DEFAULT_EVAL_TASKS = ("shapes10", "shapes_colours", "clutter10", "background", "count")
TRAIN_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("progress", "seed"))
RUN_KEYS = (
    "scale",
    "method",
    "method_kwargs",
    "model",
    "image_size",
    "train_size",
    "train_data",
    "tokenizer",
    "world_seed",
    "world_knobs",
    "world_mix",
    "context_length",
    "eval_tasks",
    "eval_probes",
    "task_train",
    "task_test",
    "retrieval_images",
    "seed",
    "data_digest",
)


TOKENIZERS = ("world", "bpe")


def check_tokenizer(name: Any, train_data: str) -> str:
    """``tokenizer``: "world" (the world's word tokenizer) or "bpe" (open_clip's BPE tokenizer, for real text);
    ``None``: "world" for the generated world, "bpe" for real data. ``ValueError`` naming ``tokenizer``."""
    if name is None:
        return "world" if real.is_world(train_data) else "bpe"
    if name not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {list(TOKENIZERS)} (or None: by train_data), got {name!r}")
    return name


def check_world_mix(mix: Any, train_size: int) -> list[dict[str, Any]]:
    """A concept-coverage mix (DIME-FM D4/D5): a list of parts ``{"n": images, "seed": world seed, "knobs": world
    knobs}`` whose images replace the last ``n`` of the ``train_size`` training pairs (equal total samples at
    every mix; ``build``). ``ValueError`` naming ``world_mix`` before any compute."""
    if not isinstance(mix, (list, tuple)):
        raise ValueError(f"world_mix must be a list of {{'n', 'seed', 'knobs'}} parts, got {type(mix).__name__}")
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(mix):
        if not isinstance(part, dict) or set(part) - {"n", "seed", "knobs"} or not {"n", "seed"} <= set(part):
            raise ValueError(
                f"world_mix[{i}] must be a dict with keys 'n', 'seed' and optionally 'knobs', got {part!r}"
            )
        n = check_positive_int(f"world_mix[{i}]['n']", part["n"])
        seed = part["seed"]
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < task_lib.TASK_SEED_BASE:
            raise ValueError(
                f"world_mix[{i}]['seed'] must be an int in [0, {task_lib.TASK_SEED_BASE}) "
                f"(below the evaluation tasks' seeds), got {seed!r}"
            )
        knobs = dict(part.get("knobs") or {})
        parts.append({"n": n, "seed": int(seed), "knobs": check_knobs(**knobs) if knobs else {}})
    mixed = sum(p["n"] for p in parts)
    if parts and mixed >= train_size:
        raise ValueError(
            f"world_mix: its parts hold {mixed} images, train_size is {train_size}: the main world must "
            "keep at least one"
        )
    return parts


@dataclass(frozen=True)
class RunConfig:
    """One run: which data, which model, which method with which arguments, how to train and what to evaluate.

    Data: ``train_data`` ("world" or real data: ``data.real``), ``train_size`` pairs (real data: as counted),
    ``world_seed``, ``world_knobs`` (``data.world.check_knobs``), ``world_mix`` (``check_world_mix``),
    ``data_digest`` (the contents of every real file the run reads, ``data_digest``), ``tokenizer``
    ("world" | "bpe") at ``context_length``, images at ``image_size``. Model: ``model`` (``models``). Method:
    ``method`` and ``method_args`` (``method_class(method).Args``). ``seed`` fixes initialisation, data order and
    augmentation (``train.seed`` is the same). ``scale`` names the sizes it came from and the evaluation task sets."""

    scale: str
    method: str
    method_args: MethodArgs
    model: str
    image_size: int
    train_size: int
    seed: int
    train: TrainConfig
    eval: EvalConfig
    train_data: str = "world"
    tokenizer: str = "world"
    world_seed: int = 0
    world_knobs: Mapping[str, Any] = field(default_factory=dict)
    world_mix: tuple[Mapping[str, Any], ...] = ()
    context_length: int = 24
    data_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON record form: the run's keys, ``method_kwargs`` (arguments that differ from their defaults) and
        every training setting, flat."""
        train = {name: getattr(self.train, name) for name in TRAIN_FIELDS}
        train["betas"] = list(train["betas"])
        return {
            "scale": self.scale,
            "method": self.method,
            "method_kwargs": self.method_args.to_dict(),
            "model": self.model,
            "image_size": self.image_size,
            "train_size": self.train_size,
            "train_data": self.train_data,
            "tokenizer": self.tokenizer,
            "world_seed": self.world_seed,
            "world_knobs": dict(self.world_knobs),
            "world_mix": [dict(p) for p in self.world_mix],
            "context_length": self.context_length,
            "eval_tasks": list(self.eval.tasks),
            "eval_probes": self.eval.probes,
            "task_train": self.eval.task_train,
            "task_test": self.eval.task_test,
            "retrieval_images": self.eval.retrieval_images,
            "seed": self.seed,
            **train,
            # real data by its contents (``data_digest``); a run on the generated world alone has no key for it, as
            # before the digest existed
            **({"data_digest": self.data_digest} if self.data_digest else {}),
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> RunConfig:
        """A config from its record form (``to_dict``), checked again (``ValueError`` naming a bad key)."""
        if isinstance(record, RunConfig):
            return record
        if not isinstance(record, Mapping) or not {"scale", "method", "seed"} <= set(record):
            raise ValueError(f"a run config must be a dict with 'scale', 'method' and 'seed', got {record!r}")
        rest = {k: v for k, v in record.items() if k not in ("scale", "method", "seed")}
        return make_config(record["scale"], record["method"], record["seed"], **rest)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` given by record keys (``epochs=2``, ``method="clip", method_kwargs={}``), checked
        again."""
        return RunConfig.from_dict({**self.to_dict(), **changes})

    @property
    def episode_size(self) -> int:
        """Pairs per episode (an epoch when ``train.episode_size`` is None)."""
        return self.train.episode_length(self.train_size)


def data_digest(train_data: str, eval_tasks: Sequence[str], source: real.Source | None = None) -> str:
    """The digest of the contents of every real file a run reads: its training pairs (``real.content_digest``) and
    its image-folder and pair-set tasks; "" for a run on the generated world alone. It keys the run beside the
    paths, so that a run on other pixels or captions under the same path is another run, never a stored one. Always
    computed here: a ``data_digest`` given to ``make_config`` (a record's) is read again from the files. ``source``:
    ``train_data``'s checked source where the caller has it."""
    parts = []
    if not real.is_world(train_data):
        parts.append(("train_data", real.content_digest(train_data, source)))
    for name in eval_tasks:
        if folder_tasks.is_folder_task(name):
            parts.append((name, folder_tasks.content_digest(name)))
        elif pair_sets.is_pair_set(name):
            parts.append((name, real.content_digest(name[len(pair_sets.PREFIX) :])))
    if not parts:
        return ""
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def make_config(scale: str = "laptop", method: str = "clip", seed: int = 0, **overrides: Any) -> RunConfig:
    """The config of one run: scale defaults, then explicit ``overrides`` (record keys: every field of the record form,
    ``RunConfig.to_dict``; ``method_kwargs`` a dict or the method's ``Args``).

    Raises ``ValueError`` naming the parameter for anything invalid, before any data or model exists.
    """
    params = resolve(scale, **overrides)
    unknown = set(overrides) - set(RUN_KEYS) - set(TRAIN_FIELDS) - {"tsne_points"}
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}")
    method = check_method_name(method)
    seed = check_nonnegative_int("seed", seed)
    train_size = check_positive_int("train_size", params["train_size"])
    train_data = params.get("train_data", "world")
    if not isinstance(train_data, str):
        raise ValueError(f"train_data must be 'world' or a path, got {train_data!r}")
    world_mix = check_world_mix(params.get("world_mix") or [], train_size)
    source = None
    if not real.is_world(train_data):
        if world_mix:
            raise ValueError("world_mix mixes generated worlds: it needs train_data='world'")
        source = real.check_source(train_data)
        train_size = len(source.samples)  # the pairs it offers before decoding (``real.count_pairs``)
        train_data = real.config_path(train_data)
    knobs = dict(params.get("world_knobs") or {})
    eval_tasks = params.get("eval_tasks") or DEFAULT_EVAL_TASKS
    if isinstance(eval_tasks, str) or not isinstance(eval_tasks, (list, tuple)):
        raise ValueError(f"eval_tasks must be a list of task names, got {eval_tasks!r}")
    for name in eval_tasks:
        if folder_tasks.is_folder_task(name):
            folder_tasks.check_folder_task(name)
        elif pair_sets.is_pair_set(name):
            pair_sets.check_pair_set(name)
        elif name not in task_lib.TASKS and name not in PROBES and name not in RETRIEVALS:
            raise ValueError(
                f"eval_tasks: unknown task {name!r}; known: "
                f"{sorted(task_lib.TASKS) + list(PROBES) + list(RETRIEVALS)}, 'folder:<path>' "
                "(image folders: data.folder_tasks) or 'pairs:<source>' (held-out pairs: data.pair_sets)"
            )
    model = check_model_name(params["model"])
    params.setdefault("precision", DEFAULT_PRECISION[model])
    train_kwargs = {k: params[k] for k in TRAIN_FIELDS if k in params}
    if "betas" in train_kwargs:
        train_kwargs["betas"] = tuple(train_kwargs["betas"])
    train = TrainConfig(**train_kwargs, seed=int(seed))
    train.validate(train_size)
    cls = method_class(method)
    args = cls.Args.from_dict(params.get("method_kwargs"))
    cls.check_args(args, train.episode_length(train_size))
    config = RunConfig(
        scale=scale,
        method=method,
        method_args=args,
        model=model,
        image_size=check_positive_int("image_size", params["image_size"]),
        train_size=train_size,
        seed=int(seed),
        train=train,
        eval=EvalConfig(
            tasks=tuple(eval_tasks),
            scale=scale,
            task_train=check_positive_int("task_train", params["task_train"]),
            task_test=check_positive_int("task_test", params["task_test"]),
            retrieval_images=check_positive_int("retrieval_images", params["retrieval_images"]),
            seed=int(seed),
            probes=check_bool("eval_probes", params.get("eval_probes", True)),
            world_retrieval=real.is_world(train_data),
        ),
        train_data=train_data,
        tokenizer=check_tokenizer(params.get("tokenizer"), train_data),
        world_seed=check_nonnegative_int("world_seed", params.get("world_seed", 0)),
        world_knobs=check_knobs(**knobs) if knobs else {},
        world_mix=tuple(world_mix),
        context_length=check_positive_int("context_length", params.get("context_length", 24)),
        data_digest=data_digest(train_data, eval_tasks, source),
    )
    cls.check_config(config)
    return config
