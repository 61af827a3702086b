"""``benchmarks/bench_scale.py`` takes every method of the book: each one's parts (the model it trains, the method and
the random stand-ins of its side data) train a step through ``vlp_lib.train``. Throughput is never asserted here."""

import math
from pathlib import Path

import numpy as np
import pytest

from vlp_lib.data.tokenizer import world_tokenizer
from vlp_lib.methods import available_methods
from vlp_lib.models import create_model
from vlp_lib.train import TrainConfig, train

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def bench_scale(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import each other by module name
    import bench_scale

    return bench_scale


def test_every_method_has_a_builder(bench_scale):
    assert set(bench_scale.BUILDERS) == set(available_methods())


@pytest.mark.parametrize("method", available_methods())
def test_bench_parts_train_a_step(bench_scale, method):
    tokenizer = world_tokenizer()
    model = create_model("rn-tiny", tokenizer.vocab_size, tokenizer.context_length, seed=0)
    data = bench_scale.random_pairs(16, 32, tokenizer.vocab_size, tokenizer.context_length)
    setup = bench_scale.Setup(model, data, tokenizer.vocab_size, np.random.default_rng(0))
    trained, make_method = bench_scale.BUILDERS[method](setup)
    fresh = make_method()
    assert fresh.name == method
    merged, sampler = fresh.training_data(data)
    n_epoch = len(merged) if sampler is None else sampler.size(len(merged))
    config = TrainConfig(epochs=8 / n_epoch, batch_size=8, episode_size=8, warmup_steps=1, progress=False)
    result = train(trained, fresh, merged, config, sampler=sampler)
    assert len(result.history) == 1 and math.isfinite(result.history[0]["loss"])
