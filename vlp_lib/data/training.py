"""The training pairs of a run config: the generated world (with its concept-coverage mix) or real data, and the
tokenizer that reads their captions. ``vlp_lib.experiment`` builds a run from them; a method that needs more pairs
of the world (ICMLM's proxy task) asks here too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vlp_lib.config import check_positive_int
from vlp_lib.data import real
from vlp_lib.data import tasks as task_lib
from vlp_lib.data.paired import PairedData, concat, from_world
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.world import check_knobs, generate

TOKENIZERS = ("world", "bpe")


def check_tokenizer(name: Any, train_data: str) -> str:
    """``tokenizer``: "world" (the world's word tokenizer) or "bpe" (open_clip's BPE tokenizer, for real text);
    ``None``: "world" for the generated world, "bpe" for real data. ``ValueError`` naming ``tokenizer``."""
    if name is None:
        return "world" if real.is_world(train_data) else "bpe"
    if name not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {list(TOKENIZERS)} (or None: by train_data), got {name!r}")
    return name


def make_tokenizer(config: dict[str, Any]) -> Any:
    """The tokenizer of a run: the world's ``WordTokenizer`` or open_clip's ``SimpleTokenizer`` (49,408 BPE tokens,
    its vocabulary shipped inside the open_clip package), both at the run's ``context_length``. Configs written
    before the ``tokenizer`` key existed are world runs."""
    if config.get("tokenizer", "world") == "bpe":
        from open_clip.tokenizer import SimpleTokenizer

        return SimpleTokenizer(context_length=config["context_length"])
    return world_tokenizer(config["context_length"])


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


def world_data(config: dict[str, Any], tokenizer: Any) -> PairedData:
    """The generated training pairs of ``config``: world ``world_seed`` / ``world_knobs`` for ``train_size`` pairs,
    of which the last ones come from the ``world_mix`` parts, in order."""
    mix = config.get("world_mix") or []
    main = config["train_size"] - sum(p["n"] for p in mix)
    worlds = [generate(main, seed=config["world_seed"], image_size=config["image_size"], **config["world_knobs"])]
    worlds += [generate(p["n"], seed=p["seed"], image_size=config["image_size"], **p["knobs"]) for p in mix]
    if len(worlds) == 1:
        return from_world(worlds[0], tokenizer)
    data, _ = concat({f"part{i}": from_world(w, tokenizer) for i, w in enumerate(worlds)})
    del data.extra["source"]  # one training set, not sources that a sampler mixes
    return data


def training_pairs(config: dict[str, Any], tokenizer: Any) -> PairedData:
    """The training pairs of ``config``: ``train_data`` "world" (``world_data``) or real data
    (``data.real.load_pairs``: an OpenCLIP CSV or WebDataset shards, decoded once into a cache; bad samples skipped
    and counted)."""
    if real.is_world(config["train_data"]):
        return world_data(config, tokenizer)
    data, _ = real.load_pairs(config["train_data"], tokenizer, config["image_size"])
    return data
