"""Speed and memory of comparing two runs of 1 M queries each (target: < 1 s, < 1 GiB).

    python bench/report_speed.py [--queries 1000000]
    python bench/report_speed.py --smoke          # CI: 10,000 queries, seconds

Builds two run directories whose SingleStream runs each hold N per-query latencies (kept as
repro keeps them: a 0.1 %-bin histogram, written by the worker from the raw latencies), plus
LoadGen-style metrics, then times `build_report` + the three renderers in a fresh process and
reads its peak RSS. The histogram build from the raw 1 M latencies is timed separately: it is
the worker's cost at the end of a run, not the report's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repro.runs.record import RunRecord, TestRecord  # noqa: E402
from repro.stats.histogram import LatencyHistogram  # noqa: E402

#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"queries": 10_000}

CHILD = """
import resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
t = time.perf_counter()
from repro.compare.build import build_report
from repro.compare.inputs import resolve_inputs
from repro.reports import html, markdown
from repro.spec.models import Tolerances
orig, reps = resolve_inputs(Path({a!r}), [Path({b!r})])
report = build_report(orig, reps, tolerances=Tolerances())
markdown.render(report); html.render(report); report.model_dump_json()
elapsed = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{{elapsed:.3f}} {{rss:.0f}} {{report.verdict}}")
"""


def make_run(path: Path, n: int, seed: int) -> float:
    rng = np.random.Generator(np.random.PCG64(seed))
    lat = rng.lognormal(np.log(2e6), 0.3, size=n)
    rel = "SingleStream/performance/run_1"
    (path / rel).mkdir(parents=True)
    t = time.perf_counter()
    LatencyHistogram.from_latencies(lat).save(path / rel / "latency_hist.npz")
    hist_s = time.perf_counter() - t
    metrics = {
        "validity": "VALID",
        "samples_per_second": 1e9 / float(lat.mean()),
        **{f"latency_p{q}_ns": float(np.percentile(lat, q)) for q in (50, 90, 99)},
    }
    test = TestRecord(
        scenario="SingleStream",
        mode="performance",
        dir=rel,
        status="valid",
        metrics=metrics,
        latencies_file="latency_hist.npz",
    )
    record = RunRecord(
        run_id=path.name,
        spec_name="bench",
        spec_id="0" * 64,
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="bench",
        tests=[test],
    )
    (path / "run.json").write_text(json.dumps(record.model_dump(mode="json", by_alias=True)))
    return hist_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--smoke", action="store_true", help="CI: 10,000 queries")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        hist_s = make_run(a, args.queries, 1)
        make_run(b, args.queries, 2)
        out = subprocess.run(
            [sys.executable, "-c", CHILD.format(root=str(ROOT), a=str(a), b=str(b))],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    print(f"histogram of {args.queries:,} raw latencies (worker side): {hist_s * 1000:.0f} ms")
    print(
        f"compare two runs of {args.queries:,} queries each + render md/html/json: "
        f"{float(out[0]):.3f} s, peak RSS {out[1]} MiB (targets < 1 s, < 1024 MiB); "
        f"verdict {out[2]}"
    )


if __name__ == "__main__":
    main()
