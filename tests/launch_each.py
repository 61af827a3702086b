"""``torchrun --nproc_per_node N tests/launch_each.py PLAN.json``: ``python -m vlp_lib.launch`` on each run of the plan
in turn, in one set of processes. A launch costs about 8 s of imports on a 2-core CPU (the launcher and every rank
import torch and open_clip): the 1-vs-2-process tests of every module pay it once per session (``conftest.ddp_runs``).

``PLAN.json`` lists folders; each holds ``config.json`` and gets the run's ``results/`` and ``ckpt/`` and, from rank
0, ``metrics.json``: the line ``vlp_lib.launch`` printed. The process group stays up from one run to the next (the
first ``launch.main`` joins it, the next find it joined: ``distributed.init_from_env``), and ends after the last:
a group destroyed and joined again rendezvouses through the same keys of torchrun's store, which still hold the
first group's addresses, and gloo's connection of the ranks can then wait for ever (twice in five re-joins here)."""

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import torch.distributed as dist

from vlp_lib import launch

destroy, dist.destroy_process_group = dist.destroy_process_group, lambda *args, **kwargs: None
for folder in map(Path, json.loads(Path(sys.argv[1]).read_text())):
    os.environ["VLP_RESULTS_DIR"] = str(folder / "results")
    os.environ["VLP_CHECKPOINT_DIR"] = str(folder / "ckpt")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        launch.main([str(folder / "config.json")])
    lines = printed.getvalue().strip().splitlines()
    if lines:  # rank 0: the metrics are its last line
        (folder / "metrics.json").write_text(lines[-1])
dist.barrier()
destroy()
