"""The training pairs of a run config: the generated world (with its concept-coverage mix) or real data, and the
tokenizer that reads their captions. ``vlp_lib.experiment`` builds a run from them; a method that needs more pairs
of the world (ICMLM's proxy task) asks here too.
"""

from __future__ import annotations

from typing import Any

from open_clip.tokenizer import SimpleTokenizer

from vlp_lib.data import real
from vlp_lib.data.paired import PairedData, concat, from_world
from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.data.world import generate
from vlp_lib.run_config import RunConfig


def make_tokenizer(config: RunConfig) -> Any:
    """The tokenizer of a run: the world's ``WordTokenizer`` or open_clip's ``SimpleTokenizer`` (49,408 BPE tokens,
    its vocabulary shipped inside the open_clip package), both at the run's ``context_length``."""
    if config.tokenizer == "bpe":
        return SimpleTokenizer(context_length=config.context_length)
    return world_tokenizer(config.context_length)


def world_data(config: RunConfig, tokenizer: Any) -> PairedData:
    """The generated training pairs of ``config``: world ``world_seed`` / ``world_knobs`` for ``train_size`` pairs,
    of which the last ones come from the ``world_mix`` parts, in order."""
    mix = config.world_mix
    main = config.train_size - sum(p["n"] for p in mix)
    worlds = [generate(main, seed=config.world_seed, image_size=config.image_size, **config.world_knobs)]
    worlds += [generate(p["n"], seed=p["seed"], image_size=config.image_size, **p["knobs"]) for p in mix]
    if len(worlds) == 1:
        return from_world(worlds[0], tokenizer)
    data, _ = concat({f"part{i}": from_world(w, tokenizer) for i, w in enumerate(worlds)})
    del data.extra["source"]  # one training set, not sources that a sampler mixes
    return data


def training_pairs(config: RunConfig, tokenizer: Any) -> PairedData:
    """The training pairs of ``config``: ``train_data`` "world" (``world_data``) or real data
    (``data.real.load_pairs``: an OpenCLIP CSV or WebDataset shards, decoded once into a cache; bad samples skipped
    and counted)."""
    if real.is_world(config.train_data):
        return world_data(config, tokenizer)
    data, _ = real.load_pairs(config.train_data, tokenizer, config.image_size)
    return data
