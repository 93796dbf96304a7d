"""How much one paired round's log ratio varies: sequential rounds, pinned, and duet, under load.

    python bench/duet_noise.py [--loads 0,1,2,4] [--rounds 10] [--reps 1]
                               [--workloads digits,resnet16] [--out RECORD.json]
                               [--min-duration-ms 500]
    python bench/duet_noise.py --smoke     # CI: digits, 2 rounds of 0.1 s tests a placement,
                                           # beside 1 busy worker where stress-ng is installed
    python bench/duet_noise.py --merge RECORD.json ... [--material OUT.json]
                                                           # the table of earlier records;
                                                           # their rounds as the simulation's

For each load (0, 1, 2, 4 busy workers of Debian's `stress-ng --cpu N`, running through the
whole of that load's runs) and each workload (the digits MLP, µs a sample; a small ResNet,
~6 ms a sample at 1 thread), an A/A of the same spec against itself in each placement, in a
shuffled order per load:

- `sequential`: one test at a time, wherever the scheduler puts it (repro's rounds before);
- `pinned`: one test at a time, each pinned to CPU 1 (`--cpus 1`), LoadGen and the worker;
- `duet`: both sides' tests of a round at once, one CPU each (`--duet`).

It prints, per load, workload and metric (SingleStream's p90 and Offline's throughput, and
each one's CPU-time witness, samples per CPU second), the standard deviation of one round's log
ratio in each placement and sequential / duet. Every round goes into the record (`--out`):
material for `repro.stats.simulate` (docs/verdicts.md). Asserts nothing: the machine decides.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import (
    DIGITS,
    as_material,
    paired_rounds,
    replay,
    small_resnet,
    stress,
)

PLACEMENTS = {"sequential": [], "pinned": ["--cpus", "1"], "duet": ["--duet"]}
#: --smoke: the same code on the smallest input (the small ResNet is still written, not run);
#: flags given beside it still win
SMOKE = {"loads": "1", "rounds": 2, "workloads": "digits", "min_duration_ms": 100}


def run_one(
    spec: Path, placement: str, rounds: int, cache: Path, min_duration_ms: int = 500
) -> dict[str, Any] | None:
    """One A/A of `rounds` rounds in a placement: its rounds, or None when it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        args = [
            str(spec),
            "--against",
            "self",
            "--max-rounds",
            str(rounds),
            "--min-duration-ms",
            str(min_duration_ms),
            "--mode",
            "performance",
            "-s",
            "SingleStream",
            "-s",
            "Offline",
            *PLACEMENTS[placement],
        ]
        t0 = time.monotonic()
        rc = replay(args, work, cache)
        if rc not in (0, 1, 3):
            print(
                f"    {spec.stem} {placement}: exit {rc}:\n"
                + (work / "replay.log").read_text()[-1500:]
            )
            return None
        try:
            found = paired_rounds(work / "results")
        except ValueError as exc:
            print(f"    {spec.stem} {placement}: no pair of runs ({exc})")
            return None
        found["wall_s"] = round(time.monotonic() - t0, 1)
        return found


def sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else float("nan")


def robust_sd(values: list[float]) -> float:
    """1.4826 x the median absolute deviation: the sd of the bulk, blind to a few outliers
    (SingleStream's tail rounds here), which the signed-rank interval is blind to as well."""
    if len(values) < 2:
        return float("nan")
    m = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - m) for v in values)


def table(record: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| load | workload | metric | rounds a placement | sd: sequential / pinned / duet "
        "| robust sd: sequential / pinned / duet | sequential / duet (sd, robust) |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["load"], r["workload"]) for r in record})
    for load, workload in keys:
        runs = [r for r in record if r["load"] == load and r["workload"] == workload]
        metrics = sorted({m for r in runs for m in r["logs"]})
        for metric in metrics:
            by = {
                p: [x for r in runs if r["placement_name"] == p for x in r["logs"].get(metric, [])]
                for p in PLACEMENTS
            }
            s = {p: sd(v) for p, v in by.items()}
            r = {p: robust_sd(v) for p, v in by.items()}
            ratio = s["sequential"] / s["duet"] if s["duet"] > 0 else float("nan")
            robust = r["sequential"] / r["duet"] if r["duet"] > 0 else float("nan")
            n = min(len(v) for v in by.values())
            rows.append(
                f"| {load} | {workload} | {metric} | {n} | {s['sequential']:.3f} / "
                f"{s['pinned']:.3f} / {s['duet']:.3f} | {r['sequential']:.3f} / "
                f"{r['pinned']:.3f} / {r['duet']:.3f} | {ratio:.2f}x, {robust:.2f}x |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", default="0,1,2,4")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--workloads", default="digits,resnet16")
    parser.add_argument("--placements", default=",".join(PLACEMENTS))
    parser.add_argument("--out", type=Path, default=None, help="write every round here")
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="print the table of these records (no runs)",
    )
    parser.add_argument(
        "--material",
        type=Path,
        default=None,
        help="with --merge: write their A/A rounds here, as the simulation's",
    )
    parser.add_argument("--min-duration-ms", type=int, default=500, help="each test's minimum")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CI: digits, 2 rounds of 0.1 s tests a placement, at load 1",
    )
    args = parser.parse_args()
    if args.smoke:
        smoke = dict(SMOKE)
        if shutil.which("stress-ng") is None:
            # no load to run beside the tests: the placements are still run, quiet
            smoke["loads"] = "0"
            print("smoke: load 1 left out (stress-ng is not installed): load 0 only")
        parser.set_defaults(**smoke)
        args = parser.parse_args()
    if args.merge:
        runs = [r for p in args.merge for r in json.loads(p.read_text())]
        if args.material is not None:
            found = [
                as_material(r, f"{r['workload']}@{r['load']}/{r['placement_name']}") for r in runs
            ]
            kept = [m for m in found if m is not None]
            args.material.write_text(json.dumps(kept, separators=(",", ":")) + "\n")
            print(f"{len(kept)} A/A trials' rounds -> {args.material}", file=sys.stderr)
        print("\n".join(table(runs)))
        return
    rng = random.Random(args.seed)
    record: list[dict[str, Any]] = []
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        specs = {"digits": DIGITS, "resnet16": small_resnet(work)}
        chosen = {w: specs[w] for w in args.workloads.split(",")}
        cache = work / "cache"
        for load in (int(x) for x in args.loads.split(",")):
            plan = [
                (w, p) for _ in range(args.reps) for w in chosen for p in args.placements.split(",")
            ]
            rng.shuffle(plan)
            print(f"load {load}: {len(plan)} A/A runs of {args.rounds} rounds", flush=True)
            with stress(load):
                time.sleep(2 if load else 0)  # the workers are running before the first test
                for workload, placement in plan:
                    found = run_one(
                        chosen[workload], placement, args.rounds, cache, args.min_duration_ms
                    )
                    if found is None:
                        failed += 1
                        continue
                    found |= {"load": load, "workload": workload, "placement_name": placement}
                    record.append(found)
                    shown = ", ".join(
                        f"{k} sd {sd(v):.3f}" for k, v in found["logs"].items() if "cpu" not in k
                    )
                    print(f"  {workload} {placement} ({found['wall_s']} s): {shown}", flush=True)
                    if args.out is not None:
                        args.out.write_text(json.dumps(record, indent=1))
    print("\n".join(table(record)))
    if args.smoke and failed:
        # a long run goes on past a failed A/A; CI's short one is there to catch it
        sys.exit(f"smoke: {failed} A/A run(s) failed (above)")


if __name__ == "__main__":
    main()
