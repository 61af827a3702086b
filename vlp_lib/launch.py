"""Run one config in several processes: ``torchrun --nproc_per_node N -m vlp_lib.launch CONFIG.json``.

``CONFIG.json`` holds a config of ``experiment.make_config`` (``json.dump(make_config(...).to_dict(), f)``); it is checked again
here, on every rank, before anything is computed. Rank 0 prints the record's metrics as one JSON line and writes the
record and checkpoints; a second call loads the stored record. One process (plain ``python -m``) works too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vlp_lib import distributed, experiment
from vlp_lib.run_config import RunConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="torchrun --nproc_per_node N -m vlp_lib.launch", description=__doc__)
    parser.add_argument("config", help="a JSON file holding an experiment.make_config config")
    args = parser.parse_args(argv)
    given = json.loads(Path(args.config).read_text())
    config = RunConfig.from_dict(given)
    if config.to_dict() != given:
        raise ValueError(f"{args.config}: not a config of experiment.make_config (it differs once checked)")
    ranks = distributed.init_from_env()
    record = experiment.run(config, progress=ranks.is_main)
    if ranks.is_main:
        print(json.dumps(record["metrics"], sort_keys=True))
    if ranks.parallel:
        import torch.distributed as dist

        dist.destroy_process_group()


if __name__ == "__main__":
    main()
