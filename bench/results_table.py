"""`repro results` on a whole round: a generated tree of thousands of results (target < 10 s).

    python bench/results_table.py [--results 1000]

Generates `inference_results_v9.9/<division>/<submitter>/results/<system>/<benchmark>/<scenario>/`
with, per scenario, a LoadGen summary and a detail log of a published run's size (~40 KB),
an accuracy.txt, and TEST01/TEST04 compliance verdicts for half of them, plus a systems JSON
per system; then times `repro results TREE --csv` in a fresh process (imports included).
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
sys.path.insert(0, str(ROOT))

from tests.fakes import SUMMARY  # noqa: E402

BENCHMARKS = ("resnet50", "retinanet", "bert-99", "3d-unet-99", "llama2-70b-99", "rnnt")
SCENARIOS = ("offline", "server", "singlestream")


def _detail(scenario: str) -> str:
    lines = [
        ':::MLLOG {"key": "loadgen_version", "value": "6.0.17 @ d6147c7eb7", "time_ms": 0.0}',
        f':::MLLOG {{"key": "effective_scenario", "value": "{scenario}", "time_ms": 0.1}}',
    ]
    lines += [
        f':::MLLOG {{"key": "generic_message", "value": "line {i} {"x" * 80}", "time_ms": {i}}}'
        for i in range(330)
    ]
    return "\n".join(lines) + "\n"


def generate(root: Path, results: int) -> Path:
    tree = root / "inference_results_v9.9"
    details = {s: _detail(s.capitalize()) for s in SCENARIOS}
    for r in range(results):
        submitter, system = f"sub{r % 40}", f"system{r}"
        benchmark = BENCHMARKS[r % len(BENCHMARKS)]
        sub = tree / ("closed" if r % 3 else "open") / submitter
        (sub / "systems").mkdir(parents=True, exist_ok=True)
        (sub / "systems" / f"{system}.json").write_text(
            json.dumps(
                {
                    "host_processor_model_name": "Xeon",
                    "accelerator_model_name": "H100",
                    "accelerators_per_node": 8,
                    "framework": "TensorRT",
                }
            )
        )
        for scenario in SCENARIOS:
            sdir = sub / "results" / system / benchmark / scenario
            run = sdir / "performance" / "run_1"
            run.mkdir(parents=True)
            (run / "mlperf_log_summary.txt").write_text(
                SUMMARY.format(
                    scenario=scenario.capitalize().replace("stream", "Stream"),
                    mode="PerformanceOnly",
                    sps=1000.0 + r,
                    validity="VALID",
                    p50=1_000_000,
                    p90=2_000_000,
                    p99=3_000_000,
                )
            )
            (run / "mlperf_log_detail.txt").write_text(details[scenario])
            (sdir / "accuracy").mkdir()
            (sdir / "accuracy" / "accuracy.txt").write_text(
                "accuracy=76.1%, good=38050, total=50000\nhash=0\n"
            )
            if r % 2:
                for test in ("TEST01", "TEST04"):
                    (sdir / test).mkdir()
                    (sdir / test / "verify_performance.txt").write_text("TEST PASS\n")
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=1000, help="systems x benchmarks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        tree = generate(Path(tmp), args.results)
        print(f"generated {args.results * len(SCENARIOS)} scenario results in "
              f"{time.perf_counter() - t:.1f} s")  # fmt: skip
        out = Path(tmp) / "round.csv"
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "repro", "results", str(tree), "--csv", str(out)],
            check=True, capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        wall = time.perf_counter() - t
        rows = sum(1 for _ in out.open()) - 1
        print(f"repro results: {rows} rows in {wall:.2f} s (target < 10 s)")


if __name__ == "__main__":
    main()
