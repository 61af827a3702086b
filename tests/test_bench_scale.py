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


def test_bare_step_figures(bench_scale, monkeypatch, capsys):
    """``--bare`` prints the bare CLIP step beside the trainer's and their ratio, and every run prints the host's
    milliseconds per step spent making batches; the bare step is refused for another method before anything runs."""
    argv = ["bench_scale.py", "--model", "vit-tiny", "--batch-size", "8", "--steps", "2", "--warmup-steps", "1"]
    monkeypatch.setattr("sys.argv", [*argv, "--bare"])
    bench_scale.main()
    figures = dict(line.split() for line in capsys.readouterr().out.splitlines())
    bare, trainer = float(figures["scale_bare_samples_per_s"]), float(figures["scale_samples_per_s"])
    # the figures are printed to 4 significant digits
    assert bare > 0 and float(figures["scale_trainer_overhead"]) == pytest.approx(bare / trainer, rel=2e-3)
    assert float(figures["scale_host_data_ms"]) >= 0
    monkeypatch.setattr("sys.argv", [*argv, "--bare", "--method", "protoclip"])
    with pytest.raises(SystemExit):
        bench_scale.main()
    assert "--bare times the bare CLIP step" in capsys.readouterr().err
