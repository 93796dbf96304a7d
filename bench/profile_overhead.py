"""The layer profiler's cost: profiled against unprofiled inference, per backend and model.

    python bench/profile_overhead.py [--spec SPEC ...] [--rounds 3] [--samples 32]
    python bench/profile_overhead.py --smoke      # CI: ort-digits, one round of 4, seconds

Each round is a real `repro profile SPEC --env native` in a fresh process (one profiled pass
through LoadGen, SingleStream). Inside that pass the worker times the pass's inferences
alternately with and without the profiler on the same samples (two sessions of one model, one
process), so a phase of the machine lands on both; the overhead is profiled median / unprofiled
median - 1 per inference. "Coverage" is how much of an unprofiled inference the layer table
accounts for (the layers' time per inference / the unprofiled median). Printed: median and range
over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the specs measured unless --spec is given (--smoke: the first alone)
SPECS = ("ort-digits", "ort-resnet50", "tvm-resnet50")
#: --smoke: the same code on the smallest input (ort-digits alone unless --spec is given);
#: flags given beside it still win
SMOKE = {"rounds": 1, "samples": 4}


def one_pass(spec: Path, samples: int, work: Path, cache: Path) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "repro",
            "profile",
            str(spec),
            "--env",
            "native",
            "--samples",
            str(samples),
            "--results-dir",
            str(work),
            "--cache-dir",
            str(cache),
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    prof = json.loads(out.stdout)  # the profile, with the folder it was written to
    over = prof["overhead"]
    layers_per_inference = prof["layers_ns"] / prof["inferences"]
    return {
        "overhead": over["rel"],
        "unprofiled_us": over["unprofiled_median_ns"] / 1e3,
        "profiled_us": over["profiled_median_ns"] / 1e3,
        "coverage": layers_per_inference / over["unprofiled_median_ns"],
        "layers": len(prof["rows"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--smoke", action="store_true", help="CI: ort-digits, one round of 4")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    every = [ROOT / "specs" / f"{name}.json" for name in SPECS]
    specs = args.spec or (every[:1] if args.smoke else every)
    print(
        "| spec | layers | unprofiled per inference | profiled | overhead (median, range) "
        "| layers / unprofiled inference |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        for spec in specs:
            one_pass(spec, 4, Path(tmp), cache)  # artifacts, compiled modules: not timed
            runs = [one_pass(spec, args.samples, Path(tmp), cache) for _ in range(args.rounds)]

            def med(key: str, runs: list[dict[str, float]] = runs) -> float:
                return statistics.median(r[key] for r in runs)

            over = [r["overhead"] for r in runs]
            print(
                f"| {spec.stem} | {runs[0]['layers']:.0f} | {med('unprofiled_us'):.1f} us "
                f"| {med('profiled_us'):.1f} us | {med('overhead'):+.1%} "
                f"({min(over):+.1%} .. {max(over):+.1%}) | {med('coverage'):.1%} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
