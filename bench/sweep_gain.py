"""The sweep's gain: the best Offline throughput a sweep finds against the spec's own settings.

    python bench/sweep_gain.py [--spec specs/ort-resnet50.json] [--repeat 3]
        [--min-duration-ms 2000] [--param backend.options.intra_op_threads=1,2] ...
    python bench/sweep_gain.py --smoke            # CI: ort-digits, batch 8 or 32, 0.1 s tests

Runs `repro sweep` (real LoadGen, native environment) over a grid that includes the spec's own
settings, then prints each point's Offline throughput with its 95 % interval (over the rounds),
the best point against the spec's own, and the time the sweep took. The gain is stated only
when the intervals separate; otherwise the benchmark says that no configuration is shown to be
better on this machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PARAMS = [
    "backend.options.intra_op_threads=1,2",
    "workload.batch_size=1,8,32",
    "backend.options.allow_spinning=false,true",
]
#: --smoke: the same code on the smallest input, a grid of two points (the spec's own batch and
#: another) unless --param is given; flags given beside it still win
SMOKE = {"spec": str(ROOT / "specs" / "ort-digits.json"), "repeat": 2, "min_duration_ms": 100}
SMOKE_PARAMS = ["workload.batch_size=8,32"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "specs" / "ort-resnet50.json"))
    ap.add_argument("--param", action="append", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-duration-ms", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--smoke", action="store_true", help="CI: ort-digits, batch 8 or 32, 0.1 s")
    args = ap.parse_args()
    if args.smoke:
        ap.set_defaults(**SMOKE)
        args = ap.parse_args()
    params = args.param or (SMOKE_PARAMS if args.smoke else DEFAULT_PARAMS)
    spec = json.loads(Path(args.spec).read_text())
    own = {}
    for p in params:
        path = p.split("=")[0]
        node = spec
        for key in path.split("."):
            node = node[key]
        own[path] = node
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "repro",
            "sweep",
            args.spec,
            "--objective",
            "max:Offline.throughput",
            "--repeat",
            str(args.repeat),
            "--min-duration-ms",
            str(args.min_duration_ms),
            "--seed",
            str(args.seed),
            "--id",
            "bench",
            "--results-dir",
            tmp,
            "--json",
        ]
        for p in params:
            cmd += ["--param", p]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
        took = time.monotonic() - t0
        if proc.returncode != 0:
            sys.exit(f"sweep failed ({proc.returncode}): {proc.stderr[-2000:]}")
        state = json.loads(proc.stdout)
    label = "max:Offline.throughput"
    rows = []
    for p in state["points"]:
        m = p["metrics"].get(label)
        if m:
            rows.append((p["values"], m, p.get("front")))
    print(
        f"sweep of {Path(args.spec).name}: {len(state['points'])} points, {args.repeat} rounds "
        f"each, min duration {args.min_duration_ms} ms, took {took:.0f} s"
    )
    print(f"{'point':<70} {'Offline samples/s (95 % interval)':>36}  front")
    for values, m, mark in sorted(rows, key=lambda r: -r[1]["mean"]):
        text = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in values.items())
        flag = "  <- the spec's own" if values == own else ""
        print(f"{text:<70} {m['mean']:10.1f} [{m['lo']:8.1f}, {m['hi']:8.1f}]  {mark}{flag}")
    mine = next((m for v, m, _ in rows if v == own), None)
    best_values, best, _ = max(rows, key=lambda r: r[1]["mean"])
    if mine is None:
        print("the spec's own settings are not a point of this grid")
        return
    ratio = best["mean"] / mine["mean"]
    separated = best["lo"] > mine["hi"]
    verdict = "intervals separate" if separated else "intervals overlap: not shown better"
    print(f"best / the spec's own = {ratio:.3f} ({verdict})")
    if separated:
        print(f"best point: {best_values}")


if __name__ == "__main__":
    main()
