"""What the machine probes cost a replay (target: at most 3 % of its time).

    python bench/probe_cost.py [--spec specs/ort-digits.json] [--min-duration-ms 5000]
    python bench/probe_cost.py --smoke            # CI: ort-digits, 50 ms tests, seconds

Replays the spec natively once (all its scenarios and modes, the spec's own settings unless
--min-duration-ms shortens them) and prints, from its run.json, the time spent in probes (the
first one and one after every test) against the replay's whole duration.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"min_duration_ms": 50}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", default=str(ROOT / "specs" / "ort-digits.json"))
    parser.add_argument("--min-duration-ms", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="CI: ort-digits, 50 ms tests")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "repro",
            "replay",
            args.spec,
            "--env",
            "native",
            "--results-dir",
            tmp,
            "--run-id",
            "cost",
            "--repeat",
            str(args.repeat),
            "--json",
        ]
        if args.min_duration_ms is not None:
            cmd += ["--min-duration-ms", str(args.min_duration_ms)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
        if proc.returncode not in (0, 3):
            sys.exit(proc.stderr[-2000:])
        record = json.loads(proc.stdout)
    probes = [t["probe_after"] for t in record["tests"] if t.get("probe_after")]
    first = record["tests"][0].get("probe_before") or {}
    cost = sum(p["cost_s"] for p in probes) + first.get("cost_s", 0.0)
    duration = record["duration_s"]
    print(f"spec {Path(args.spec).name}: {len(record['tests'])} tests, {len(probes) + 1} probes")
    print(f"probes {cost:.2f} s of a {duration:.1f} s replay = {100 * cost / duration:.2f} %")
    per = sorted(p["cost_s"] for p in probes)
    print(f"per probe: median {per[len(per) // 2] * 1e3:.0f} ms, max {per[-1] * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
