"""What the catalog costs a demo replay (issue 47's target: at most 2 % of it).

    python bench/catalog_cost.py [--pairs 5] [--server URL] [--repeat 3] [--min-duration-ms MS]
    python bench/catalog_cost.py --smoke     # CI: one pair after a one-repeat 0.1 s replay

In a temporary project holding the shipped ort-digits spec and original: one demo-shaped replay
(`repro replay specs/ort-digits.json --mode performance --repeat 3`, as `make demo`'s speed part
runs it; its CPU and wall time are the reference), then `repro report --compare
results/ort-digits/` with and without `--track`, interleaved in `--pairs` pairs (order drawn
per pair), each in a fresh process. The catalog's cost is the tracked report's time minus the
untracked one's: the MLflow client's import, the store opened, the runs and the verdict
logged. The first tracked report creates the embedded SQLite store (MLflow's tables: a one-off
per project) and is shown apart. CPU time (user + system of the child) is the steadier clock
on a shared machine; wall time is printed beside it with the load average. `--server` logs to
a running MLflow server instead of the embedded store.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPRO = str(Path(sys.executable).parent / "repro")
#: --smoke: the same code on the smallest input (the reference replay once, 0.1 s tests, one
#: pair of reports); flags given beside it still win
SMOKE = {"pairs": 1, "repeat": 1, "min_duration_ms": 100}


def _timed(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of `repro ARGS` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([REPRO, *args], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1, 3):
        sys.exit(f"repro {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return cpu, wall, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--server", default=None, help="an MLflow server's URL")
    parser.add_argument("--repeat", type=int, default=3, help="the reference replay's repeats")
    parser.add_argument(
        "--min-duration-ms",
        type=int,
        default=None,
        help="the reference replay's tests (default: the spec's)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="CI: one pair after a one-repeat replay of 0.1 s tests"
    )
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
        if args.server is None:
            print(
                "smoke: an MLflow server left out (none given: --server URL); the embedded "
                "store only",
                flush=True,
            )
    track = ["--track", args.server] if args.server else ["--track"]
    os.environ.pop("REPRO_TRACKING_URI", None)
    with tempfile.TemporaryDirectory(prefix="repro-catalog-cost-") as tmp:
        project = Path(tmp)
        for folder in ("specs", "artifacts", "lockfiles", "nix"):
            shutil.copytree(ROOT / folder, project / folder, symlinks=True)
        shutil.copytree(
            ROOT / "results" / "ort-digits" / "original",
            project / "results" / "ort-digits" / "original",
        )
        shape = f"speed, {args.repeat} repeat{'s' * (args.repeat != 1)}" + (
            f", {args.min_duration_ms} ms tests" if args.min_duration_ms is not None else ""
        )
        print(f"a demo-shaped replay ({shape}) ...", flush=True)
        replay = ["replay", "specs/ort-digits.json", "--mode", "performance"]
        replay += ["--repeat", str(args.repeat)]
        if args.min_duration_ms is not None:
            replay += ["--min-duration-ms", str(args.min_duration_ms)]
        replay_cpu, replay_wall, _ = _timed(replay, project)
        report = ["report", "--compare", "results/ort-digits/"]
        first_cpu, first_wall, _ = _timed([*report, *track], project)
        rng = random.Random(47)
        cost_cpu, cost_wall, plain_cpu = [], [], []
        for _ in range(args.pairs):
            order = [False, True]
            rng.shuffle(order)
            got = {}
            for tracked in order:
                got[tracked] = _timed([*report, *track] if tracked else report, project)
            cost_cpu.append(got[True][0] - got[False][0])
            cost_wall.append(got[True][1] - got[False][1])
            plain_cpu.append(got[False][0])
    cpu, wall = statistics.median(cost_cpu), statistics.median(cost_wall)
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}; store: {args.server or 'embedded SQLite (.repro/catalog.db)'}")
    print(f"demo replay ({shape}): {replay_cpu:.1f} s CPU, {replay_wall:.1f} s wall")
    plain = statistics.median(plain_cpu)
    print(f"report without --track: {plain:.2f} s CPU (median)")
    print(
        f"the catalog step, first time (creates the store): +{first_cpu - plain:.2f} s CPU, "
        f"{first_wall:.2f} s wall in all"
    )
    print(
        f"the catalog step, median of {args.pairs} interleaved pairs: +{cpu:.2f} s CPU "
        f"({min(cost_cpu):.2f}-{max(cost_cpu):.2f}), +{wall:.2f} s wall"
    )
    print(
        f"share of the demo replay: {100 * cpu / replay_cpu:.1f} % of its CPU time, "
        f"{100 * wall / replay_wall:.1f} % of its wall time (target <= 2 %)"
    )


if __name__ == "__main__":
    main()
