"""The notebooks at smoke scale, as the notebook tier runs them (``tests/test_notebooks.py``): what each runs with and
the runner that starts them all at once. ``conftest.smoke_runs`` starts them when the session's first test starts,
so that the kernels (one thread each) run beside the quick tier instead of after it: `make test` keeps both cores
busy for its whole time (measured in the set-up page's test table)."""

import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import forked_kernel
import nbformat

from vlp_lib.book import build as bookbuild
from vlp_lib.book import pages

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# Real image-text pairs (tests/data/openclipart: public-domain drawings with their authors' titles, an OpenCLIP CSV
# and an image-folder task): every chapter notebook runs on them too, through the CSV path and a folder task only
REAL = Path(__file__).resolve().parent / "data" / "openclipart"
REAL_PARAMETERS = ["-p", "train_data", str(REAL / "pairs.csv"), "-y", f'eval_tasks: ["folder:{REAL / "categories"}"]']
CLASS_DATA = ["-p", "class_data", f"folder:{REAL / 'categories' / 'train'}"]
# a chapter notebook's own real inputs beside the pairs (the rest are chosen by default on real data)
REAL_EXTRA: dict[str, list[str]] = {
    "iclip_ratio": CLASS_DATA,
    "iclip_unicl": CLASS_DATA,
    "headtohead": CLASS_DATA,
    # the mission's command on a user's pairs: an episode larger than the data is the whole data each episode
    "protoclip_ablation": ["-p", "episode_size", "1000"],
    # PyramidCLIP's ROI level from a regions file (each drawing's ink box: tests/data/make_openclipart_regions.py)
    "pyramidclip_benchmark": ["-p", "regions", str(REAL / "regions.json")],
    "pyramidclip_components": ["-p", "regions", str(REAL / "regions.json")],
    # DIME-FM's unpaired corpora from a user's files: an image folder and a text file of captions of other drawings
    "dimefm_benchmark": [
        *("-p", "unpaired_images", str(REAL / "categories" / "train")),
        *("-p", "unpaired_texts", str(REAL / "unpaired_captions.txt")),
    ],
}
# A notebook whose own default data is real (the drawings chapter: Open Clip Art, built by `make openclipart`, which
# CI does not build) runs at smoke scale on the committed drawings instead, with held-out pairs for its retrieval
SMOKE_PARAMETERS: dict[str, list[str]] = {
    "drawings": [
        *("-p", "train_data", str(REAL / "pairs.csv")),
        *("-y", f'eval_tasks: ["folder:{REAL / "categories"}", "pairs:{REAL / "pairs.csv"}"]'),
        *CLASS_DATA,
    ],
}
# `make test` runs a page of each paper but PyramidCLIP on the real pairs, each through its paper's real inputs: the
# baseline, the mission's command (the ProtoCLIP ablation on a user's pairs, the MiniLM teacher), iCLIP's UniCL page
# (class data from an image folder, WordNet's definitions), ICMLM's labels page (spaCy's tags) and DIME-FM's benchmark
# (a teacher trained on the pairs, unpaired corpora from an image folder and a text file); PyramidCLIP's summary level
# on real captions runs in the drawings page (its `summary` column) and its regions file in test_pyramidclip_real.
# About 120 kernel-seconds in all. The others, 10-30 s each at smoke scale, run in `make test-real` (marker
# `real_pairs`), to keep `make test` within its 8 minutes on the slower of the 2-core machines
IN_MAKE_TEST = ("clip_baseline", "protoclip_ablation", "iclip_unicl", "icmlm_labels", "dimefm_benchmark")
ON_REAL = "@real"  # the suffix of a real-data run's key in ``smoke_runs``
SECONDS_KEY = "vlp/notebook_seconds"  # pytest's cache: each notebook's seconds in the last session that ran it
# Each notebook's seconds at smoke scale in `make test` (the 2-core Intel Xeon, 2026-11-29; on the real pairs: `make
# test-real`): the order a fresh clone starts the chains in, whose pytest cache has no seconds yet. With 40 s for every
# notebook instead, the head to head (76 s) started last, and one core worked about a minute alone at the end. A
# session's own seconds (``SECONDS_KEY``) replace these.
MEASURED_SECONDS: dict[str, float] = {
    "headtohead": 122,
    "drawings": 120,
    "icmlm_heads": 99,
    "iclip_ratio@real": 88,
    "headtohead@real": 73,
    "dimefm_benchmark": 65,
    "dimefm_components": 54,
    "iclip_ratio": 49,
    "dimefm_benchmark@real": 45,
    "pyramidclip_benchmark": 43,
    "icmlm_labels": 42,
    "protoclip_components": 40,
    "protoclip_benchmark": 37,
    "pyramidclip_components": 29,
    "protoclip_ablation@real": 28,
    "protoclip_ablation": 28,
    "iclip_unicl@real": 27,
    "dimefm_coverage": 23,
    "iclip_unicl": 20,
    "clip_baseline@real": 17,
    "icmlm_labels@real": 17,
    "clip_baseline": 17,
    "world_tour": 8,
    "protoclip_clustering": 7,
    "protoclip_efficiency": 6,
    "scorecard": 5,
}


def smoke_run(
    path: Path, out: Path, env: dict[str, str], parameters: Sequence[str] = (), kernel: str = "python3"
) -> nbformat.NotebookNode:
    """``path`` executed at smoke scale into ``out`` by papermill in a process of its own on the kernel spec
    ``kernel``, with papermill's ``parameters`` (``-p name value``, ``-y yaml``) after ``scale``; the executed
    notebook."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(path),
            str(out),
            "-k",
            kernel,
            "-p",
            "scale",
            "smoke",
            "--cwd",
            str(path.parent),
            "--no-progress-bar",
            *parameters,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise AssertionError(f"{path.name} {' '.join(parameters)} failed at smoke scale:\n{done.stderr[-4000:]}")
    return nbformat.read(out, as_version=4)


def seconds_of(executed: nbformat.NotebookNode) -> float:
    """papermill's duration of an executed notebook."""
    return float(executed.metadata.get("papermill", {}).get("duration") or 0.0)


def start(
    selected: Iterable[str],
    results: Path,
    checkpoints: Path,
    out_dir: Path,
    last_seconds: dict[str, float],
    kernel_server: dict[str, str],
) -> tuple[dict[str, Future], ThreadPoolExecutor]:
    """The ``selected`` notebooks (stems, ``stem@real`` for a run on the real pairs) started at smoke scale, a future
    per key, as `make book` runs them: one results store and checkpoint folder for all (the clustering, efficiency and
    scorecard pages load the runs earlier ones stored), a chapter's notebooks in book order, one thread per kernel
    (``SMOKE_ENV``). Chapters are independent (``pages.CHAPTERS``), and a chapter on the real pairs is another chain,
    so they run side by side, one kernel per core; the scorecard starts once every other world notebook is done.
    The longest chains start first (``last_seconds``: each notebook's seconds last time, else ``MEASURED_SECONDS``; a
    notebook in neither counts 40 s, 80 on real pairs, where decoding and the real inputs make it about twice a world
    page), so that no
    long chain starts last on an otherwise idle core. Each kernel is forked from the server that ``kernel_server``
    (``forked_kernel.start_server``'s variables) names, which imported the notebooks' modules once: about 7 s of a
    core saved per notebook. The caller shuts the pool down."""
    selected = set(selected)
    env = {
        **os.environ,
        **bookbuild.SMOKE_ENV,
        "VLP_RESULTS_DIR": str(results),
        "VLP_CHECKPOINT_DIR": str(checkpoints),
    }
    env.update(kernel_server)
    futures: dict[str, Future] = {key: Future() for key in selected}

    def execute(key: str) -> nbformat.NotebookNode:
        stem, real = key.removesuffix(ON_REAL), key.endswith(ON_REAL)
        parameters = [*REAL_PARAMETERS, *REAL_EXTRA.get(stem, [])] if real else SMOKE_PARAMETERS.get(stem, [])
        return smoke_run(NOTEBOOK_DIR / f"{stem}.ipynb", out_dir / f"{key}.ipynb", env, parameters, forked_kernel.NAME)

    def run_chain(keys: list[str], after: list[Future]) -> None:
        wait(after)
        for key in keys:
            try:
                futures[key].set_result(execute(key))
            except BaseException as err:  # reported by that notebook's test; the chain goes on
                futures[key].set_exception(err)

    def estimate(key: str) -> float:
        real = key.endswith(ON_REAL) or key.removesuffix(ON_REAL) in SMOKE_PARAMETERS
        return last_seconds.get(key, MEASURED_SECONDS.get(key, 80.0 if real else 40.0))

    chains = [
        [nb + suffix for nb in notebooks if nb + suffix in selected]
        for name, notebooks in pages.CHAPTERS.items()
        if name != pages.SCORECARD
        for suffix in ("", ON_REAL)
    ]
    chained = {key for chain in chains for key in chain} | {pages.SCORECARD}
    chains = [chain for chain in chains if chain] + [[key] for key in sorted(selected - chained)]
    chains.sort(key=lambda chain: sum(map(estimate, chain)), reverse=True)
    pool = ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)))
    for chain in chains:
        pool.submit(run_chain, chain, [])
    if pages.SCORECARD in selected:  # submitted last: every chain has a worker before it waits for them
        world = [key for chain in chains for key in chain if not key.endswith(ON_REAL)]
        pool.submit(run_chain, [pages.SCORECARD], [futures[key] for key in world])
    return futures, pool
