"""Data parallelism on this CPU: two gloo processes under torchrun train the same global batches as one process and
end with its metrics. Tolerance: 1e-4 on losses (the gathered logits are the same numbers; the gradient average
sums in another order, ~1e-7 relative per step), one test image on accuracies. ProtoCLIP across ranks: features
extracted per rank and gathered, K-Means on rank 0, prototypes and assignments broadcast, the heads' BatchNorm over
the global batch. PyramidCLIP: each softened InfoNCE term against the gathered batch, the local view drawn for the
whole batch."""

import json

import pytest

from vlp_lib import distributed, experiment

TINY = dict(
    model="vit-tiny",
    train_size=128,
    batch_size=32,
    epochs=2,
    task_train=60,
    task_test=40,
    retrieval_images=20,
    eval_tasks=["shapes10"],
)
# two episodes of 64 pairs, 8 prototypes each; extraction in chunks of 45 and 19 (shares of 22-23 and 9-10 rows)
PROTO = dict(TINY, episode_size=64, epochs=1, method_kwargs={"k": 8, "extract_batch_size": 45})

# PyramidCLIP's peer-level terms: the global view against the summary, the local view (Batch.view) against the caption
PYRAMID = dict(TINY, method_kwargs={"weights": {"gs": 0.5, "lt": 0.5}})


CASES = {"clip": ("clip", TINY), "protoclip": ("protoclip", PROTO), "pyramidclip": ("pyramidclip", PYRAMID)}


def ddp_cases(tmp_path_factory):
    """Every case, for ``conftest.ddp_runs`` (one torchrun launch for every module's cases)."""
    return {name: (experiment.make_config("smoke", method, **kw), None) for name, (method, kw) in CASES.items()}


@pytest.fixture(scope="module")
def runs(ddp_runs):
    """Every case in one process and in 2 gloo processes."""
    return ddp_runs[__name__]


@pytest.mark.parametrize("method", list(CASES))
def test_two_processes_match_one(runs, method, ddp_report):
    one, two, stored = runs[method].one, runs[method].two, runs[method].stored
    assert stored["metrics"] == two  # rank 0 wrote the record
    ddp_report(method, one, stored)
    assert [h["loss"] for h in stored["history"]] == pytest.approx([h["loss"] for h in one["history"]], abs=1e-4)
    assert two["final_loss"] == pytest.approx(one["metrics"]["final_loss"], abs=1e-4)
    step = 1 / TINY["task_test"]
    for key in ("shapes10/zeroshot_top1", "shapes10/linear"):
        assert two[key] == pytest.approx(one["metrics"][key], abs=step + 1e-9), key
    assert two["retrieval/mean_recall"] == pytest.approx(one["metrics"]["retrieval/mean_recall"], abs=0.02)
    terms = {"protoclip": ["loss_proto"], "pyramidclip": ["loss_gs", "loss_lt"]}.get(method, [])
    for term in terms:  # each term was trained on, and is the one process's
        assert (
            [h[term] for h in stored["history"] if term in h]
            == pytest.approx([h[term] for h in one["history"] if term in h], abs=1e-4)
            != []
        )


def test_one_process_is_world_size_one():
    w = distributed.world()
    assert (w.rank, w.world_size, w.is_main, w.parallel) == (0, 1, True, False)
    assert distributed.shard([1, 2, 3]) == [1, 2, 3] and distributed.mean({"loss": 2.5}) == {"loss": 2.5}


def test_launch_refuses_a_config_that_does_not_check(tmp_path):
    from vlp_lib import launch

    config = experiment.make_config("smoke", **TINY)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config.to_dict(), "batch_size": 0}))
    with pytest.raises(ValueError, match="batch_size"):
        launch.main([str(path)])


def test_gpu_input_path_helpers_on_this_cpu():
    import numpy as np
    import torch

    from vlp_lib.models import create_model
    from vlp_lib.train import has_convolutions, model_input

    assert has_convolutions(create_model("rn-tiny", 50, 8)) and not has_convolutions(create_model("vit-tiny", 50, 8))
    images = np.random.default_rng(0).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    x = model_input(images, 32, torch.device("cpu"))
    assert x.shape == (3, 3, 32, 32) and x.dtype == torch.float32
    assert distributed.bounds(7) == (0, 7) and distributed.gather_rows(x, 3) is x and distributed.broadcast(5) == 5
