"""Harness vs plain loop in ONE process: plain loop, the LoadGen test, plain loop again.

    python bench/harness_bracketed.py [--model resnet50] [--rounds 6] [--duration-ms 4000]
    python bench/harness_bracketed.py --smoke    # CI: one 0.2 s round of digits, seconds

`bench/harness_overhead.py` runs each side in a fresh process; on these VMs two processes of
the same code differ by +-3 % (memory layout, the machine's phase), which drowns a 0.5 %
target. Here each round is one fresh process that loads the backend once (as the worker does)
and times, with the same session and the same samples: a plain loop for half the duration,
repro's LoadGen harness (`repro.harness.loadgen.run_test`, the code a replay runs), and the
plain loop again. The harness is compared with the mean of the two plain loops around it, so a
drift of the machine during the round cancels to first order.

SingleStream: LoadGen's p50 vs the plain loop's p50 of `predict` on one sample (target: within
0.5 % on resnet50). Offline: LoadGen's samples/s vs the plain loop's over whole batches (target:
>= 0.99). Printed per round, then the median and a 95 % interval over rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness_overhead import SPECS, _geo_interval, _request  # noqa: E402

from repro.artifacts.cache import ArtifactCache  # noqa: E402
from repro.harness.request import WorkerRequest  # noqa: E402

#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"model": "digits", "rounds": 1, "duration_ms": 200}


def _plain(predict: Any, data: np.ndarray, scenario: str, batch: int, seconds: float) -> float:
    """p50 in ns (SingleStream) or samples/s (Offline) of the bare backend."""
    if scenario == "SingleStream":
        perf, lat = time.perf_counter_ns, []
        order = np.random.default_rng(0).integers(0, len(data), size=100_000)
        end, k = perf() + int(seconds * 1e9), 0
        while True:
            j = int(order[k % len(order)])
            t = perf()
            predict(data[j : j + 1])
            t2 = perf()
            lat.append(t2 - t)
            k += 1
            if t2 > end:
                return float(np.percentile(lat, 50))
    batches = [data[i : i + batch] for i in range(0, len(data) - batch + 1, batch)] or [data]
    done, i, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        predict(batches[i % len(batches)])
        done += len(batches[i % len(batches)])
        i += 1
    return done / (time.perf_counter() - t0)


def worker(request: Path, seconds: float) -> None:
    """One round, in this (fresh) process; prints JSON."""
    from repro.harness.loadgen import run_test
    from repro.harness.worker import load_backend, load_dataset, warm_up
    from repro.runs.loadgen_logs import read_logs

    req = WorkerRequest.model_validate_json(request.read_text())
    backend = load_backend(req)
    source = load_dataset(req)
    probe = warm_up(backend, source, req.batch_size, req.scenario)
    data = np.ascontiguousarray(source[: req.performance_sample_count])
    before = _plain(backend.predict, data, req.scenario, req.batch_size, seconds / 2)
    run_test(
        predict=backend.predict,
        source=source,
        scenario=req.scenario,
        mode="performance",
        settings=req.settings,
        seeds=req.seeds.model_dump(),
        batch_size=req.batch_size,
        total_count=req.total_sample_count,
        perf_count=req.performance_sample_count,
        output_dir=request.parent,
        probe=probe,
    )
    after = _plain(backend.predict, data, req.scenario, req.batch_size, seconds / 2)
    logs = read_logs(request.parent)
    key = "latency_p50_ns" if req.scenario == "SingleStream" else "samples_per_second"
    print(json.dumps({"before": before, "after": after, "harness": float(logs[key])}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SPECS), default="resnet50")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration-ms", type=int, default=4000)
    parser.add_argument("--worker", nargs=2, metavar=("REQUEST", "SECONDS"))
    parser.add_argument("--smoke", action="store_true", help="CI: one 0.2 s round of digits")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker[0]), float(args.worker[1]))
        return
    cache = ArtifactCache()
    seconds = args.duration_ms / 1000
    out: dict[str, list[float]] = {"SingleStream": [], "Offline": []}
    with tempfile.TemporaryDirectory() as tmp:
        rate = None
        for r in range(args.rounds):
            for scenario in ("SingleStream", "Offline"):
                req = _request(
                    SPECS[args.model],
                    scenario,
                    Path(tmp) / f"{scenario}{r}",
                    args.duration_ms,
                    cache,
                    expected_qps=rate if scenario == "Offline" else None,
                )
                proc = subprocess.run(
                    [sys.executable, __file__, "--worker", str(req), str(seconds)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                plain = (got["before"] + got["after"]) / 2
                if scenario == "Offline":
                    rate = rate or plain
                    ratio = got["harness"] / plain
                    print(
                        f"  round {r + 1} Offline: plain {got['before']:.2f} / {got['after']:.2f}"
                        f" samples/s, harness {got['harness']:.2f}: ratio {ratio:.4f}",
                        flush=True,
                    )
                else:
                    ratio = got["harness"] / plain
                    print(
                        f"  round {r + 1} SingleStream: plain p50 {got['before'] / 1e3:.1f} / "
                        f"{got['after'] / 1e3:.1f} us, harness {got['harness'] / 1e3:.1f} us: "
                        f"{ratio - 1:+.2%}",
                        flush=True,
                    )
                out[scenario].append(ratio)
    for scenario, ratios in out.items():
        geo, lo, hi = _geo_interval(ratios)
        what = "p50 harness / plain" if scenario == "SingleStream" else "harness / plain"
        median = statistics.median(ratios)
        print(
            f"{args.model} {scenario}: {what} = {median:.4f} median, geometric mean "
            f"{geo:.4f} [95 % {lo:.4f}, {hi:.4f}] over {len(ratios)} rounds"
        )


if __name__ == "__main__":
    main()
