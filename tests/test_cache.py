"""The cache of frozen components trained by the book (``cache.frozen_arrays`` / ``frozen_model``)."""

import multiprocessing as mp
import os

import numpy as np
import pytest
import torch
from torch import nn

from vlp_lib import cache, runs
from vlp_lib.paths import cache_dir


def test_frozen_arrays_computes_once_and_loads():
    calls = []

    def build():
        calls.append(1)
        return {
            "w": torch.arange(6.0).reshape(2, 3),
            "ids": np.array([3, 1], np.int64),
            "acc": 0.75,
            "sizes": (1, 2),
            "note": "x",
        }

    first = cache.frozen_arrays("demo", {"a": 1}, build, verbose=False)
    second = cache.frozen_arrays("demo", {"a": 1}, build, verbose=False)
    assert len(calls) == 1
    assert set(first) == set(second) == {"w", "ids", "acc", "sizes", "note"}
    for out in (first, second):  # the stored form, on the first call as on later ones
        assert isinstance(out["w"], np.ndarray) and out["w"].dtype == np.float32
        np.testing.assert_array_equal(out["w"], np.arange(6.0).reshape(2, 3))
        assert out["ids"].dtype == np.int64 and out["acc"] == 0.75 and out["sizes"] == [1, 2] and out["note"] == "x"
    path = cache.frozen_path("demo", {"a": 1})
    assert path.exists() and path.parent == cache_dir() / "frozen" / "demo"
    assert not [p for p in os.listdir(path.parent) if ".tmp" in p]
    cache.frozen_arrays("demo", {"a": 2}, build, verbose=False)  # another config: built again
    assert len(calls) == 2


def test_frozen_key_includes_the_code_fingerprint(monkeypatch):
    before = cache.frozen_path("demo", {"a": 1})
    monkeypatch.setattr(cache, "code_fingerprint", lambda paper=None: "other-code")
    after = cache.frozen_path("demo", {"a": 1})
    assert before != after and after.name.endswith("-other-code.npz")
    assert cache.frozen_path("demo", {"b": 1, "a": 1}) == cache.frozen_path("demo", {"a": 1, "b": 1})


def test_frozen_key_is_the_fingerprint_of_the_paper_that_builds_it():
    core, detector = cache.frozen_path("demo", {"a": 1}), cache.frozen_path("demo", {"a": 1}, paper="pyramidclip")
    assert core != detector and detector.name.endswith(f"-{runs.code_fingerprint('pyramidclip')}.npz")


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)


def test_frozen_model_trains_once_and_returns_it_frozen():
    trained = []

    def architecture():
        torch.manual_seed(0)
        return _Tiny()

    def train(module):
        trained.append(1)
        with torch.no_grad():
            module.lin.weight.fill_(2.0)
        module.bn.train()(torch.randn(8, 2))  # moves the BatchNorm buffers: they are stored too
        return {"accuracy": 0.9}

    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    m1, info1 = cache.frozen_model("tiny", {"v": 1}, architecture, train, verbose=False)
    assert torch.equal(torch.rand(1), expected)  # the caller's random state is untouched by architecture()
    m2, info2 = cache.frozen_model("tiny", {"v": 1}, architecture, train, verbose=False)
    assert trained == [1]
    assert info1 == info2 and info1["accuracy"] == 0.9 and "build_seconds" in info1
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)
    assert torch.all(m2.lin.weight == 2.0) and m2.bn.num_batches_tracked.item() == 1
    for m in (m1, m2):
        assert not m.training and not any(p.requires_grad for p in m.parameters())


@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(name=""), "name"),
        (dict(name="a/b"), "name"),
        (dict(config=[1]), "config"),
        (dict(config={"f": object()}), "config"),
        (dict(build=3), "build"),
    ],
)
def test_frozen_arrays_bad_arguments_raise_before_building(kwargs, param):
    called = []
    args = dict(name="demo", config={"a": 1}, build=lambda: called.append(1) or {})
    args.update(kwargs)
    with pytest.raises(ValueError, match=param):
        cache.frozen_arrays(args["name"], args["config"], args["build"], verbose=False)
    assert not called


def test_frozen_model_bad_callables_raise_before_training():
    with pytest.raises(ValueError, match="architecture"):
        cache.frozen_model("tiny", {}, None, lambda m: None)
    with pytest.raises(ValueError, match="train"):
        cache.frozen_model("tiny", {}, _Tiny, "no")


def test_build_returning_junk_is_refused_and_nothing_stored():
    with pytest.raises(ValueError, match="JSON-able"):
        cache.frozen_arrays("junk", {}, lambda: {"x": object()}, verbose=False)
    assert not cache.frozen_path("junk", {}).exists()


def _worker(counter):
    import time

    def build():
        with open(counter, "a") as f:
            f.write("x")
        time.sleep(0.3)
        return {"v": np.ones(3)}

    cache.frozen_arrays("race", {"seed": 7}, build, verbose=False)


def test_concurrent_processes_build_once(tmp_path):
    counter = tmp_path / "counter"
    ctx = mp.get_context("fork")  # inherits the test's VLP_CACHE_DIR; spawn would re-import torch 3 times
    procs = [ctx.Process(target=_worker, args=(counter,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert counter.read_text() == "x"
    np.testing.assert_array_equal(cache.frozen_arrays("race", {"seed": 7}, lambda: {}, verbose=False)["v"], 1)


def test_cached_npy_is_float32_and_computed_once(tmp_path):
    calls = []
    path = tmp_path / "x.npy"
    a = cache.cached_array(path, lambda: calls.append(1) or np.arange(4))
    b = cache.cached_array(path, lambda: calls.append(1) or np.arange(4))
    assert calls == [1] and a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(a, b)
