"""`repro results` on a whole round shaped like v2.1, the largest (target < 10 s, < 1 GiB).

    python bench/results_table.py [--results 1981] [--big-accuracy 124] [--runs 3]
                                  [--power 939] [--power-window-s 660] [--power-channels 3]
    python bench/results_table.py --smoke         # CI: 12 results, 2 of them power, seconds

Generates, with the synthetic results of `tests/mlperf_gen.py`,
`inference_results_v2.1/<division>/<submitter>/results/<system>/<benchmark>/<scenario>/`:
`--results` benchmark folders (v2.1: 1,981) with 2,536 scenario rows in all (a quarter of them
two scenarios), each with a LoadGen 2.1 summary and a ~40 KB detail log, an accuracy.txt, a
measurements/ folder, TEST01/TEST04 compliance for half; `--big-accuracy` of the accuracy files
are 1.5 MB of per-sample lines before the figure (as Krai's 124 are, 186 MB in all); `--power`
of the one-scenario results are power results (v2.1 has 939): a ranging and a testing run,
each an analyzer's `spl.txt` of one sample a second over `--power-window-s` (a power run lasts
at least 600 s) plus idle margins, each line with `--power-channels` channels' readings after
the total (Krai's v2.1 lines: 3 channels, ~400 bytes a line, 255 KB a run), the detail logs'
power window, and the PTDaemon logs. Then it times `repro results TREE --csv` in a fresh
process (imports included), `--runs` times, and prints the wall time, the CPU time (about the
wall time on an idle machine; on a shared one the rest is waiting for a core, and the load
average is printed) and the peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mlperf_gen import Power, Result, write_result  # noqa: E402

BENCHMARKS = ("resnet50", "retinanet", "bert-99", "3d-unet-99", "rnnt", "dlrm-99")
ACCURACY = {
    "resnet50": "accuracy=76.1%, good=38050, total=50000\n",
    "retinanet": "mAP=37.5%\n",
    "bert-99": '{"exact_match": 82.9, "f1": 90.4}\n',
    "3d-unet-99": "Accuracy: mean = 0.86, kidney = 0.93, tumor = 0.78\n",
    "rnnt": "Word Error Rate: 7.4%, accuracy=92.6%\n",
    "dlrm-99": "AUC=80.2%, accuracy=96.6%\n",
}
PASS = {"accuracy": "TEST PASS\n", "performance": "TEST PASS\n"}
#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"results": 12, "big_accuracy": 1, "runs": 1, "power": 2, "power_window_s": 10}


def generate(
    root: Path, results: int, big: int, power: int = 0, window_s: int = 660, channels: int = 3
) -> Path:
    tree = root / "inference_results_v2.1"
    powered_left = power
    for r in range(results):
        # one scenario: a power result is its own folder
        powered = powered_left > 0 and r % 4 != 0
        powered_left -= powered
        benchmark = BENCHMARKS[r % len(BENCHMARKS)]
        scenarios = ("Offline", "Server") if r % 4 == 0 else (("Offline", "SingleStream")[r % 2],)
        for scenario in scenarios:
            write_result(
                tree,
                Result(
                    round="v2.1",
                    loadgen="2.1.0",
                    division="closed" if r % 3 else "open",
                    submitter=f"sub{r % 40}",
                    system=f"system{r // 6}",
                    benchmark=benchmark,
                    scenario=scenario,
                    value=1000.0 + r if scenario != "SingleStream" else 2e6 + r,
                    accuracy=ACCURACY[benchmark] + "hash=0\n",
                    accuracy_padding_bytes=1_500_000 if r < big else 0,
                    compliance={"TEST01": PASS, "TEST04": PASS} if r % 2 else {},
                    detail_padding_bytes=40_000,
                    measurements=True,
                    power=Power(
                        watts=(300.0, 310.0),
                        window_s=window_s,
                        channels=channels,
                        query_count=600 if scenario == "SingleStream" else None,
                    )
                    if powered
                    else None,
                ),
            )
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=1981, help="benchmark folders")
    parser.add_argument("--big-accuracy", type=int, default=124, help="1.5 MB accuracy files")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of `repro results`")
    parser.add_argument("--power", type=int, default=939, help="power results among them")
    parser.add_argument(
        "--power-window-s", type=int, default=660, help="seconds of analyzer samples a power run"
    )
    parser.add_argument(
        "--power-channels", type=int, default=3, help="an analyzer's channels after the total"
    )
    parser.add_argument("--smoke", action="store_true", help="CI: 12 results, 2 of them power")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        tree = generate(
            Path(tmp),
            args.results,
            args.big_accuracy,
            args.power,
            args.power_window_s,
            args.power_channels,
        )
        samples = sum(len(f.read_bytes().splitlines()) for f in tree.rglob("spl.txt"))
        if samples:
            print(f"{samples:,} analyzer samples in {args.power} power results")
        size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file())
        print(
            f"generated {args.results} results ({size / 2**20:.0f} MB) in "
            f"{time.perf_counter() - t:.1f} s"
        )
        out = Path(tmp) / "round.csv"
        for k in range(args.runs):
            t = time.perf_counter()
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            before, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
            subprocess.run(
                [sys.executable, "-m", "repro", "results", str(tree), "--csv", str(out)],
                check=True,
                capture_output=True,
                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            )
            wall = time.perf_counter() - t
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime - cpu
            rows = len(out.read_text().splitlines()) - 1
            print(
                f"run {k + 1}: {rows} rows in {wall:.2f} s (target < 10 s; {cpu:.2f} s of CPU, "
                f"the rest waiting for a core: load {os.getloadavg()[0]:.1f}), peak RSS "
                f"{max(peak, before) / 2**10:.0f} MiB (target < 1024 MiB)"
            )


if __name__ == "__main__":
    main()
