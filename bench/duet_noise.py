"""How much one paired round's log ratio varies: sequential rounds, pinned, and duet, under load.

    python bench/duet_noise.py [--loads 0,1,2,4] [--rounds 10] [--reps 1]
                               [--workloads digits,resnet16] [--out RECORD.json]

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
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import DIGITS, paired_rounds, replay, small_resnet, stress  # noqa: E402

PLACEMENTS = {"sequential": [], "pinned": ["--cpus", "1"], "duet": ["--duet"]}


def run_one(spec: Path, placement: str, rounds: int, cache: Path) -> dict[str, Any] | None:
    """One A/A of `rounds` rounds in a placement: its rounds, or None when it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        args = [str(spec), "--against", "self", "--max-rounds", str(rounds),
                "--min-duration-ms", "500", "--mode", "performance",
                "-s", "SingleStream", "-s", "Offline", *PLACEMENTS[placement]]  # fmt: skip
        t0 = time.monotonic()
        rc = replay(args, work, cache)
        if rc not in (0, 1, 3):
            print(f"    {spec.stem} {placement}: exit {rc}:\n"
                  + (work / "replay.log").read_text()[-1500:])  # fmt: skip
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


def table(record: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| load | workload | metric | sequential sd | pinned sd | duet sd | sequential / duet |",
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
            ratio = s["sequential"] / s["duet"] if s["duet"] > 0 else float("nan")
            rows.append(
                f"| {load} | {workload} | {metric} | {s['sequential']:.3f} | {s['pinned']:.3f} "
                f"| {s['duet']:.3f} | {ratio:.2f}x |"
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
    args = parser.parse_args()
    rng = random.Random(args.seed)
    record: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        specs = {"digits": DIGITS, "resnet16": small_resnet(work)}
        chosen = {w: specs[w] for w in args.workloads.split(",")}
        cache = work / "cache"
        for load in (int(x) for x in args.loads.split(",")):
            plan = [(w, p) for _ in range(args.reps) for w in chosen
                    for p in args.placements.split(",")]  # fmt: skip
            rng.shuffle(plan)
            print(f"load {load}: {len(plan)} A/A runs of {args.rounds} rounds", flush=True)
            with stress(load):
                time.sleep(2 if load else 0)  # the workers are running before the first test
                for workload, placement in plan:
                    found = run_one(chosen[workload], placement, args.rounds, cache)
                    if found is None:
                        continue
                    found |= {"load": load, "workload": workload, "placement_name": placement}
                    record.append(found)
                    shown = ", ".join(f"{k} sd {sd(v):.3f}" for k, v in found["logs"].items()
                                      if "cpu" not in k)  # fmt: skip
                    print(f"  {workload} {placement} ({found['wall_s']} s): {shown}", flush=True)
                    if args.out is not None:
                        args.out.write_text(json.dumps(record, indent=1))
    print("\n".join(table(record)))


if __name__ == "__main__":
    main()
