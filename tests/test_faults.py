"""Runs that survive faults: a training process killed with SIGKILL mid-episode resumes from its last checkpoint
and ends with the uninterrupted run's metrics; a corrupt checkpoint is discarded and recomputed, never loaded."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from vlp_lib import experiment
from vlp_lib.train import load_checkpoint

# 16 episodes of one step: long enough to be killed in the middle, short enough for the quick tier
EPISODIC = dict(
    train_size=128,
    batch_size=32,
    episode_size=32,
    epochs=4,
    task_train=60,
    task_test=40,
    retrieval_images=20,
    eval_tasks=["shapes10"],
)
METRICS = ("final_loss", "shapes10/zeroshot_top1", "shapes10/linear", "retrieval/mean_recall")
CHILD = (
    "import json, sys; from vlp_lib import experiment; "
    "experiment.run(experiment.RunConfig.from_dict(json.loads(sys.argv[1])), progress=False)"
)


def use_store(monkeypatch, folder):
    monkeypatch.setenv("VLP_RESULTS_DIR", str(folder / "results"))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(folder / "checkpoints"))


def test_sigkill_mid_episode_resumes_to_the_same_metrics(tmp_path, monkeypatch):
    config = experiment.make_config("smoke", **EPISODIC)
    use_store(monkeypatch, tmp_path / "whole")
    whole = experiment.run(config, progress=False)

    use_store(monkeypatch, tmp_path / "killed")
    checkpoint = experiment.checkpoint_path(config)
    # the child computes with this process's thread count (one while the notebook tier's kernels run beside the tests):
    # the same operations in the same order
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()))
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(config.to_dict())], env=env)
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)  # the first checkpoint is written: the child is in its second episode
    assert child.wait(30) == -signal.SIGKILL
    state = load_checkpoint(checkpoint)
    assert state is not None and 0 <= state["episode"] < 15  # killed before the end, with a whole checkpoint
    assert not experiment.runs.record_path(experiment.RUN_KIND, config.to_dict()).exists()

    resumed = experiment.run(config, progress=False)
    for key in METRICS:  # stated tolerance: 1e-6 (the resumed run computes the same operations in the same order)
        assert resumed["metrics"][key] == pytest.approx(whole["metrics"][key], abs=1e-6), key
    assert [h["loss"] for h in resumed["history"]] == pytest.approx([h["loss"] for h in whole["history"]], abs=1e-6)


def test_corrupt_checkpoints_are_discarded_never_loaded(tmp_path, monkeypatch):
    """Mid-training (a checkpoint cut short) the run starts over; after training (a flipped byte in the final
    checkpoint) reading the model recomputes the run: both end with the same numbers."""
    config = experiment.make_config("smoke", **dict(EPISODIC, epochs=1))
    record = experiment.run(config, progress=False)
    path = experiment.checkpoint_path(config)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.warns(UserWarning, match="corrupt"):
        model, _ = experiment.load_trained(record)
    again = experiment.stored(config)
    assert again["metrics"]["final_loss"] == pytest.approx(record["metrics"]["final_loss"], abs=1e-6)
    reference = load_checkpoint(path)["model"]
    assert all(torch.equal(v, reference[k]) for k, v in model.state_dict().items())

    path.write_bytes(path.read_bytes()[:1000])  # cut short: the next training starts over instead of loading it
    experiment.runs.discard(experiment.RUN_KIND, config.to_dict())
    with pytest.warns(UserWarning, match="corrupt or cut short"):
        rerun = experiment.run(config, progress=False)
    assert rerun["metrics"]["final_loss"] == pytest.approx(record["metrics"]["final_loss"], abs=1e-6)


def test_a_record_from_another_machine_finds_its_checkpoint_here(monkeypatch):
    """A record names its checkpoint by the file's name (the run's key and fingerprint), found under this
    machine's checkpoint_dir(); a record that kept the absolute path of the machine that made it (a folder this
    clone does not have) loads the same file, without training the run again."""
    config = experiment.make_config("smoke", **dict(EPISODIC, epochs=1))
    record = experiment.run(config, progress=False)
    assert record["checkpoint"] == experiment.checkpoint_path(config).name
    elsewhere = dict(record, checkpoint=f"/home/someone/vlp-book/checkpoints/{record['checkpoint']}")
    monkeypatch.setattr(experiment, "run", lambda *a, **k: pytest.fail("the run was trained again"))
    model, _ = experiment.load_trained(elsewhere)
    reference = load_checkpoint(experiment.checkpoint_path(config))["model"]
    assert all(torch.equal(v, reference[k]) for k, v in model.state_dict().items())
