"""`make bench`: run every benchmark script, print their `name value` lines, and collect them in
bench_results.json (git-ignored)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["bench_world.py", "bench_train.py", "bench_augment.py"]


def main() -> None:
    results: dict[str, float | str] = {}
    for script in SCRIPTS:
        out = subprocess.run([sys.executable, str(HERE / script)], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                print(line, flush=True)
                try:
                    results[parts[0]] = float(parts[1])
                except ValueError:
                    results[parts[0]] = parts[1]
    (HERE.parent / "bench_results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
