import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import forked_kernel
import numpy as np
import pytest
import smoke_notebooks
import torch

from vlp_lib import experiment
from vlp_lib.book import build as bookbuild
from vlp_lib.run_config import RunConfig

LAUNCH_EACH = Path(__file__).resolve().parent / "launch_each.py"


_KERNELS: dict = {}  # the notebook tier's kernels (``smoke_runs``' futures): while one runs, the tests take one thread
_SERVER: dict = {}  # the session's forked-kernel server (``forked_kernel``) once started: its process and variables
TESTS_DIR = Path(__file__).resolve().parent
# The disk `make test` needs under pytest's base folder: 5.3 GB measured for a whole session (4.0 GB of them the
# notebooks' checkpoints, 189 of them), less since each passed test's own folder goes (tmp_path_retention_policy);
# 5.8 GB at its peak on 2026-11-27 (1,252 tests, the folder's size every 8 s), so a session that starts with less
# stops here, with this message, instead of failing mid-run
SMOKE_DISK_BYTES = 6_000_000_000


def kernel_server() -> dict[str, str]:
    """The variables that send a papermill run to the session's forked-kernel server, started on first use with the
    kernels' environment (``SMOKE_ENV``: what their imports read)."""
    if not _SERVER:
        process, variables = forked_kernel.start_server({**os.environ, **bookbuild.SMOKE_ENV})
        _SERVER.update(process=process, variables=variables)
    return _SERVER["variables"]


def pytest_sessionstart(session):
    """The forked-kernel server starts while pytest collects (its imports, about 10 s of a core, beside a collection
    that uses one) when the session may run the notebook tier: no ``-m "not notebooks"``, and the notebooks' tests
    among the paths given (or no path: the test paths)."""
    config = session.config
    if "not notebooks" in (config.getoption("markexpr") or ""):
        return
    paths = [Path(a.split("::")[0]).resolve() for a in config.args]
    if any(p == TESTS_DIR or p.name == "test_notebooks.py" for p in paths):
        kernel_server()


def pytest_sessionfinish(session):
    if _SERVER:
        forked_kernel.stop_server(_SERVER.pop("process"))
        _SERVER.clear()


def torch_threads() -> int:
    """Torch threads per test: ``OMP_NUM_THREADS`` when it is set (a shared machine's one thread), one while the
    notebook tier's kernels share the cores (a second thread would wait on them, not add to them), else up to 2."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        return int(threads)
    busy = any(not future.done() for future in _KERNELS.values())
    return 1 if busy else max(1, min(2, os.cpu_count() or 1))


def pytest_collection_modifyitems(items):
    """The notebook tier's tests last (in their order): they only wait for kernels that started with the session, so
    the quick tier runs beside the kernels instead of stopping while the first notebook test waits."""
    items.sort(key=lambda item: item.get_closest_marker("notebooks") is not None)


@pytest.fixture(scope="session", autouse=True)
def smoke_runs(request, tmp_path_factory):
    """The notebooks the session's notebook tests need (``tests/smoke_notebooks.py``), started with the session's first
    test, so that they run beside the quick tier; a future per notebook stem (``stem@real`` on the real pairs). Each
    notebook's seconds are kept in pytest's cache for the next session's order."""
    tests = {"test_runs_at_smoke_scale": "", "test_runs_on_real_pairs": smoke_notebooks.ON_REAL}
    selected = {
        item.callspec.params["path"].stem + tests[item.originalname]
        for item in request.session.items
        if item.originalname in tests
    }
    if not selected:
        yield {}
        return
    cache = getattr(request.config, "cache", None)  # None under `-p no:cacheprovider`: the default order, nothing kept
    checkpoints = tmp_path_factory.mktemp("book_checkpoints")
    free = shutil.disk_usage(checkpoints).free
    if free < SMOKE_DISK_BYTES:  # a memory-mapped write past a full disk kills pytest with a bus error, mid-run
        pytest.exit(
            f"the notebook tier writes about {SMOKE_DISK_BYTES / 1e9:.0f} GB under {tmp_path_factory.getbasetemp()} "
            f"(the notebooks' checkpoints, worlds and caches), and {free / 1e9:.1f} GB are free there: free some, or "
            "give pytest --basetemp on a larger disk",
            returncode=1,
        )
    futures, pool = smoke_notebooks.start(
        selected,
        tmp_path_factory.mktemp("book_results"),
        checkpoints,
        tmp_path_factory.mktemp("executed"),
        cache.get(smoke_notebooks.SECONDS_KEY, {}) if cache else {},
        kernel_server(),
    )
    _KERNELS.update(futures)
    yield futures
    pool.shutdown(wait=True)
    _KERNELS.clear()
    if cache:
        seconds = cache.get(smoke_notebooks.SECONDS_KEY, {})
        for key, future in futures.items():
            if future.done() and future.exception() is None:
                seconds[key] = round(smoke_notebooks.seconds_of(future.result()), 1)
        cache.set(smoke_notebooks.SECONDS_KEY, seconds)


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Every test writes results/checkpoints to temp dirs; the world cache is shared per session
    (generation is deterministic, so sharing only saves time)."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("VLP_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("VLP_RESULTS_DIR", str(tmp_path_factory.mktemp("results")))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(tmp_path_factory.mktemp("checkpoints")))
    torch.set_num_threads(torch_threads())
    yield


@pytest.fixture(scope="session")
def release_card():
    """The scorecard of the release's own records (``findings.release_scorecard``), computed once for the tests that
    check the shipped book against it; skipped without a release."""
    from vlp_lib.book import findings, release

    if release.read_manifest() is None:
        pytest.skip("no release in this checkout")
    return findings.release_scorecard(accept_stale=True)


@pytest.fixture
def synthetic_pairs():
    """64 random 32 px image / token pairs: enough to exercise the loop, nothing to learn."""
    from vlp_lib.data.paired import PairedData

    rng = np.random.default_rng(0)
    n, ctx, vocab = 64, 8, 40
    images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    tokens = torch.zeros(n, ctx, dtype=torch.long)
    tokens[:, 0] = 2
    tokens[:, 1:5] = torch.from_numpy(rng.integers(3, vocab - 1, size=(n, 4)))
    tokens[:, 5] = vocab - 1
    return PairedData(images=images, captions=[f"caption {i}" for i in range(n)], tokens=tokens), vocab, ctx


@pytest.fixture
def ddp_report():
    """``report(label, one, two)``: with ``VLP_DDP_REPORT`` set to a file, the 1-vs-2-process tests append one JSON
    line per run to it (the README's "Several processes" table comes from it): the final losses, the largest
    difference over the loss history of every logged term, and each suite metric of both runs. ``one`` and ``two``
    are the two runs' records. Without the variable, nothing is written."""

    def report(label: str, one: dict, two: dict) -> None:
        path = os.environ.get("VLP_DDP_REPORT")
        if not path:
            return
        skip = {"step", "episode", "lr", "image_lr"}
        terms = sorted({k for h in one["history"] for k in h if k not in skip and isinstance(h[k], float)})
        by_step = {h["step"]: h for h in one["history"]}
        history = {
            term: max(abs(h[term] - by_step[h["step"]][term]) for h in two["history"] if term in h)
            for term in terms
            if any(term in h for h in two["history"])
        }
        metrics = {k: [one["metrics"][k], two["metrics"].get(k)] for k in sorted(one["metrics"])}
        line = {"run": label, "history": history, "metrics": metrics}
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")

    return report


@dataclass
class OneAndTwo:
    """``config`` trained in one process (``one``, its record) and in two (``two``: the metrics rank 0 printed;
    ``stored``: the record rank 0 wrote), each in stores of its own under ``folder`` (``one/``, ``two/``: ``results``
    and ``ckpt``)."""

    config: RunConfig
    one: dict
    two: dict
    stored: dict
    folder: Path


DDP_CASES = "ddp_cases"  # a test module's ``ddp_cases(tmp_path_factory) -> {name: (config, start store or None)}``


@pytest.fixture(scope="session")
def ddp_runs(request, tmp_path_factory) -> dict[str, dict[str, OneAndTwo]]:
    """The 1-vs-2-process cases of every module of the session that has them (its ``ddp_cases``), keyed by module
    name, then case: each config trained here in one process, then all of them, every module's, in two gloo processes
    by one ``torchrun --nproc_per_node 2 tests/launch_each.py`` (``vlp_lib.launch`` on each config in turn: torchrun's
    start and the ranks' imports, about 8 s each, are paid once for the session), ``OMP_NUM_THREADS=1``. Each run's
    stores start as a copy of its case's start store (a teacher's) where given; the world cache is the session's."""
    cache = tmp_path_factory.getbasetemp() / "cache"  # _isolated_dirs' shared cache
    modules = sorted(
        {m for item in request.session.items if hasattr(m := getattr(item, "module", None), DDP_CASES)}, key=str
    )
    cases = {
        (module.__name__, name): case
        for module in modules
        for name, case in getattr(module, DDP_CASES)(tmp_path_factory).items()
    }
    folders = {key: tmp_path_factory.mktemp("ddp_" + "_".join(key)) for key in cases}
    ones = {}
    for key, (config, start) in cases.items():
        one, two = folders[key] / "one", folders[key] / "two"
        for side in (one, two):
            side.mkdir()
            if start is not None:
                shutil.copytree(start, side / "results")
        (two / "config.json").write_text(json.dumps(config.to_dict()))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VLP_CACHE_DIR", str(cache))
            mp.setenv("VLP_RESULTS_DIR", str(one / "results"))
            mp.setenv("VLP_CHECKPOINT_DIR", str(one / "ckpt"))
            ones[key] = experiment.run(config, progress=False, verbose=False)
    plan = tmp_path_factory.mktemp("ddp_plan") / "plan.json"
    plan.write_text(json.dumps([str(f / "two") for f in folders.values()]))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    env = dict(os.environ, VLP_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    out = subprocess.run([*command, str(LAUNCH_EACH), str(plan)], env=env, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[:3000] + "\n...\n" + out.stderr[-2000:]  # the first rank's traceback
    result: dict[str, dict[str, OneAndTwo]] = {module.__name__: {} for module in modules}
    for (module, name), (config, _) in cases.items():
        two = folders[module, name] / "two"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VLP_RESULTS_DIR", str(two / "results"))
            stored = experiment.stored(config)
        assert stored is not None, f"{module} {name}: rank 0 wrote no record"
        metrics = json.loads((two / "metrics.json").read_text())
        result[module][name] = OneAndTwo(config, ones[module, name], metrics, stored, folders[module, name])
    return result
