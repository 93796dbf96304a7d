"""How long `repro env show` takes to read the fingerprint (target: under 0.5 s).

    python bench/fingerprint_speed.py [--repeat 10]
    python bench/fingerprint_speed.py --smoke     # CI: one in-process run, seconds

Prints the in-process time of collect() (median and max over repeats) and the wall time of the
whole `repro env show --json` command, interpreter start-up included.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repro.machine.fingerprint import collect

#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"repeat": 1}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="CI: one in-process run")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    inproc = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        collect()
        inproc.append(time.perf_counter() - t)
    wall = []
    for _ in range(max(3, args.repeat // 3)):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "repro", "env", "show", "--json"],
            check=True,
            capture_output=True,
        )
        wall.append(time.perf_counter() - t)
    print(
        f"collect() in process: median {statistics.median(inproc) * 1000:.1f} ms, "
        f"max {max(inproc) * 1000:.1f} ms ({args.repeat} runs)"
    )
    print(
        f"`repro env show --json` wall time: median {statistics.median(wall) * 1000:.0f} ms, "
        f"max {max(wall) * 1000:.0f} ms (target < 500 ms)"
    )


if __name__ == "__main__":
    main()
