import json
import multiprocessing as mp
import os

import pytest

from vlp_lib import runs


def test_config_hash_ignores_key_order():
    assert runs.config_hash({"a": 1, "b": [1, 2]}) == runs.config_hash({"b": [1, 2], "a": 1})
    assert runs.config_hash({"a": 1}) != runs.config_hash({"a": 2})


def test_cached_computes_once_and_records_everything(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"metrics": {"acc": 0.5}, "timings": {"train": 1.0}, "history": [1, 2]}

    config = {"seed": 3, "lr": 0.1}
    first = runs.cached("demo", config, compute, root=tmp_path)
    second = runs.cached("demo", config, compute, root=tmp_path)
    assert len(calls) == 1
    assert first == second
    for key in ("config", "config_hash", "metrics", "timings", "seed", "versions", "git_commit", "code_fingerprint"):
        assert key in first
    assert first["seed"] == 3 and first["history"] == [1, 2]
    assert "torch" in first["versions"]
    assert runs.records("demo", root=tmp_path) == [first]


def test_record_from_other_code_is_recomputed(tmp_path, monkeypatch):
    config = {"seed": 0}
    runs.cached("demo", config, lambda: {"metrics": {"v": 1}}, root=tmp_path)
    path = runs.record_path("demo", config, tmp_path)
    record = json.loads(path.read_text())
    record["code_fingerprint"] = "older-code"
    record["checksum"] = runs.checksum(record)  # written whole by that code
    path.write_text(json.dumps(record))
    assert runs.load("demo", config, tmp_path) is None
    assert runs.load("demo", config, tmp_path, accept_stale=True)["metrics"] == {"v": 1}
    fresh = runs.cached("demo", config, lambda: {"metrics": {"v": 2}}, root=tmp_path)
    assert fresh["metrics"] == {"v": 2}
    assert fresh["code_fingerprint"] == runs.code_fingerprint()


def test_no_partial_files_left(tmp_path):
    runs.save("demo", {"seed": 1}, {"m": 1.0}, root=tmp_path)
    names = os.listdir(tmp_path / "demo")
    assert [n for n in names if n.endswith(".json")] == [f"{runs.config_hash({'seed': 1})}.json"]
    assert not [n for n in names if n.endswith(".tmp")]


def _worker(root, counter):
    import time

    def compute():
        with open(counter, "a") as f:
            f.write("x")
        time.sleep(0.5)
        return {"metrics": {"done": 1}}

    runs.cached("demo", {"seed": 7}, compute, root=root)


def test_concurrent_processes_compute_once(tmp_path):
    counter = tmp_path / "counter"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(tmp_path, counter)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert counter.read_text() == "x"
    assert runs.load("demo", {"seed": 7}, tmp_path)["metrics"] == {"done": 1}


@pytest.mark.parametrize("damage", ["truncate", "edit"])
def test_corrupt_record_is_recomputed_never_loaded(tmp_path, damage):
    """A record cut short (a full disk) or changed behind the store's back (a bit flip, a hand edit) is reported
    and recomputed."""
    config = {"seed": 3}
    runs.cached("demo", config, lambda: {"metrics": {"v": 1.0}}, root=tmp_path)
    path = runs.record_path("demo", config, tmp_path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2] if damage == "truncate" else text.replace('"v": 1.0', '"v": 7.0'))
    with pytest.warns(UserWarning, match="recomputed"):
        assert runs.load("demo", config, tmp_path) is None
    with pytest.warns(UserWarning):
        again = runs.cached("demo", config, lambda: {"metrics": {"v": 2.0}}, root=tmp_path)
    assert again["metrics"] == {"v": 2.0} and runs.load("demo", config, tmp_path)["metrics"] == {"v": 2.0}
    assert runs.records("demo", root=tmp_path) == [again]


def _writer(root, name):
    for i in range(40):  # both processes write the same 40 configs and a few of their own, interleaved
        runs.save("demo", {"seed": i}, {"by": name, "i": i}, root=root)
        runs.cached("demo", {"seed": i, "own": name}, lambda: {"metrics": {"by": name}}, root=root)


def test_two_processes_writing_the_store_leave_every_record_intact(tmp_path):
    """Two notebooks writing at once: every record parses and matches its checksum; each last write wins whole."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(tmp_path, name)) for name in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    records = runs.records("demo", root=tmp_path)
    assert len(records) == 40 + 2 * 40
    assert all(r["checksum"] == runs.checksum(r) for r in records)
    assert {r["metrics"]["by"] for r in records if "own" in r["config"]} == {"a", "b"}
    assert not [n for n in os.listdir(tmp_path / "demo") if n.endswith(".tmp")]
