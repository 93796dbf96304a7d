"""Harness overhead: a plain backend loop vs repro's LoadGen harness, interleaved in one run.

(a) Offline: samples/s of a plain loop over in-memory batches vs LoadGen's Offline result,
    same model, batch size and threads.  Target on resnet50: ratio >= 0.99.
(b) SingleStream: p50 of timed plain `session.run` calls on one sample vs LoadGen's p50.
    Target on resnet50: overhead <= 5 us.

Each measurement runs in a fresh process (LoadGen allows one test per process; the plain loops
get the same treatment), alternating plain and harness `--rounds` times, because these machines
are noisy: compare the figures measured next to each other, not across runs.

    python bench/harness_overhead.py                 # both models, 3 rounds
    python bench/harness_overhead.py --model digits --rounds 5 --duration-ms 3000
    python bench/harness_overhead.py --smoke         # CI: one short round of digits, seconds
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

from repro.artifacts.cache import ArtifactCache  # noqa: E402
from repro.artifacts.fetching import fetch_all  # noqa: E402
from repro.harness.request import WorkerRequest  # noqa: E402
from repro.replay.settings import scenario_settings  # noqa: E402
from repro.runs import layout  # noqa: E402
from repro.runs.loadgen_logs import read_logs  # noqa: E402
from repro.runs.plan import ReplayPlan, loadgen_overrides  # noqa: E402
from repro.spec.io import load_spec  # noqa: E402
from repro.stats.student_t import t_ppf  # noqa: E402

SPECS = {
    "resnet50": ROOT / "specs" / "ort-resnet50.json",
    "digits": ROOT / "specs" / "ort-digits.json",
}
#: --smoke: the same code on the smallest input (one round of the digits MLP, 0.2 s tests);
#: flags given beside it still win
SMOKE = {"model": "digits", "rounds": 1, "duration_ms": 200}


def replay_plan(duration_ms: int) -> ReplayPlan:
    """A replay's plan of tests `duration_ms` long (the other benchmarks share it)."""
    return ReplayPlan(loadgen=loadgen_overrides(min_duration_ms=duration_ms))


def plain_worker(request: Path, kind: str, duration_s: float) -> None:
    """Inside a fresh process: the backend alone, timed by a plain loop; prints JSON."""
    from repro.harness.dataset import open_npz_array
    from repro.harness.worker import load_backend, warm_up

    req = WorkerRequest.model_validate_json(request.read_text())
    backend = load_backend(req)
    data = np.ascontiguousarray(
        open_npz_array(Path(req.dataset_path), req.inputs_key)[: req.performance_sample_count]
    )
    warm_up(backend, data, req.batch_size, req.scenario)  # as the harness worker does
    predict = backend.predict
    n = len(data)
    if kind == "offline":
        bs = req.batch_size
        batches = [data[i : i + bs] for i in range(0, n - bs + 1, bs)] or [data]
        done, i = 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < duration_s:
            b = batches[i % len(batches)]
            predict(b)
            done += len(b)
            i += 1
        print(json.dumps({"samples_per_second": done / (time.perf_counter() - t0)}))
    else:
        perf = time.perf_counter_ns
        lat = []
        order = np.random.default_rng(0).integers(0, n, size=1_000_000)
        end = perf() + int(duration_s * 1e9)
        k = 0
        while True:
            j = int(order[k % len(order)])
            x = data[j : j + 1]
            t = perf()
            predict(x)
            t2 = perf()
            lat.append(t2 - t)
            k += 1
            if t2 > end:
                break
        print(json.dumps({"p50_ns": float(np.percentile(lat, 50)), "count": len(lat)}))


def _request(
    spec_path: Path,
    scenario: str,
    out_dir: Path,
    duration_ms: int,
    cache: ArtifactCache,
    expected_qps: float | None = None,
    server_qps: float | None = None,
) -> Path:
    spec = load_spec(spec_path)
    arts = fetch_all(spec, spec_path, cache=cache)
    opts = replay_plan(duration_ms)
    changes: dict[str, float] = {}
    if scenario != "Server":  # a Server run needs its queries for LoadGen's early stopping
        changes["min_query_count"] = 1
    if expected_qps is not None:
        # LoadGen's Offline query holds 1.1 x duration x expected QPS samples: at the measured
        # rate both sides then run about as long, so machine phases weigh on them alike.
        changes["offline_expected_qps"] = expected_qps
    if server_qps is not None:
        changes["server_target_qps"] = server_qps
    # the settings are a frozen model: the changes are checked again as a whole
    settings = scenario_settings(spec, scenario, opts).changed(changes)
    req = WorkerRequest.from_spec(
        spec,
        spec_id="bench",
        scenario=scenario,  # type: ignore[arg-type]
        mode="performance",
        settings=settings,
        artifacts={name: m.path for name, m in arts.items()},
        cache_root=cache.root,
        output_dir=out_dir,
        record_latencies=True,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / layout.REQUEST_FILE
    path.write_text(req.model_dump_json())
    return path


def _harness(req: Path) -> dict[str, float]:
    subprocess.run(
        [sys.executable, "-m", "repro.harness", str(req)],
        check=True,
        capture_output=True,
        cwd=req.parent,
    )
    m = read_logs(req.parent)
    out = {
        k: float(v)
        for k, v in m.items()
        if k in ("samples_per_second", "latency_p50_ns", "latency_p99_ns") and v is not None
    }
    out["valid"] = float(m.get("validity") == "VALID")
    inference = req.parent / "inference_ns.npy"
    if inference.is_file():
        # Same run, same queries: LoadGen's p50 minus the p50 of the time inside predict().
        out["in_run_overhead_ns"] = out["latency_p50_ns"] - float(np.median(np.load(inference)))
    return out


def _plain(req: Path, kind: str, duration_s: float) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--plain-worker", str(req), kind, str(duration_s)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def bench_model(
    name: str, rounds: int, duration_ms: int, workdir: Path, cache: ArtifactCache
) -> dict[str, Any]:
    spec = SPECS[name]
    offline_ratios, ss_overheads, in_run = [], [], []
    rows = []
    calib = _request(spec, "Offline", workdir / name / "calibrate", duration_ms, cache)
    rate = _plain(calib, "offline", min(duration_ms / 1000, 3.0))["samples_per_second"]
    for r in range(rounds):
        req_off = _request(
            spec, "Offline", workdir / name / f"off{r}", duration_ms, cache, expected_qps=rate
        )
        req_ss = _request(spec, "SingleStream", workdir / name / f"ss{r}", duration_ms, cache)
        # alternate which goes first, so drift does not favour one side
        if r % 2 == 0:
            plain_off = _plain(req_off, "offline", duration_ms / 1000)
            harness_off = _harness(req_off)
        else:
            harness_off = _harness(req_off)
            plain_off = _plain(req_off, "offline", duration_ms / 1000)
        plain_ss = _plain(req_ss, "single", duration_ms / 1000)
        harness_ss = _harness(req_ss)
        ratio = harness_off["samples_per_second"] / plain_off["samples_per_second"]
        overhead_us = (harness_ss["latency_p50_ns"] - plain_ss["p50_ns"]) / 1000
        offline_ratios.append(ratio)
        ss_overheads.append(overhead_us)
        in_run.append(harness_ss["in_run_overhead_ns"] / 1000)
        rows.append(
            (
                r + 1,
                plain_off["samples_per_second"],
                harness_off["samples_per_second"],
                ratio,
                plain_ss["p50_ns"] / 1000,
                harness_ss["latency_p50_ns"] / 1000,
                overhead_us,
            )
        )
        print(
            f"  {name} round {r + 1}: Offline plain {rows[-1][1]:.1f}/s harness "
            f"{rows[-1][2]:.1f}/s ratio {ratio:.4f} | SingleStream p50 plain "
            f"{rows[-1][4]:.2f} us harness {rows[-1][5]:.2f} us overhead {overhead_us:+.2f} us "
            f"(in-run: LoadGen p50 - predict p50 = {in_run[-1]:+.2f} us)",
            flush=True,
        )
    plain_p50 = [row[4] for row in rows]
    return {
        "model": name,
        "offline_ratio_interval": _geo_interval(offline_ratios),
        "singlestream_overhead_rel_median": statistics.median(
            o / p for o, p in zip(ss_overheads, plain_p50, strict=True)
        ),
        "plain_offline_rate": statistics.median(row[1] for row in rows),
        "offline_ratio_median": statistics.median(offline_ratios),
        "offline_ratio_best": max(offline_ratios),
        "singlestream_overhead_us_median": statistics.median(ss_overheads),
        "singlestream_in_run_overhead_us_median": statistics.median(in_run),
        "rounds": rows,
    }


def _geo_interval(ratios: list[float]) -> tuple[float, float, float]:
    """The geometric mean of per-round ratios and its 95 % t interval (rounds are the unit)."""
    logs = np.log(np.asarray(ratios))
    mean = float(logs.mean())
    if len(logs) < 2:
        return (float(np.exp(mean)),) * 3
    half = t_ppf(0.975, len(logs) - 1) * float(logs.std(ddof=1)) / len(logs) ** 0.5
    return float(np.exp(mean)), float(np.exp(mean - half)), float(np.exp(mean + half))


def server_search(
    name: str, plain_rate: float, duration_ms: int, workdir: Path, cache: ArtifactCache
) -> list[tuple[float, float, bool, float]]:
    """The highest Server QPS the harness sustains VALID, as a fraction of the plain Offline
    rate: LoadGen judges each target (p99 within the spec's latency bound, the rate held)."""
    spec = SPECS[name]
    tried = []
    for fraction in (0.97, 0.93, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5):
        req = _request(
            spec,
            "Server",
            workdir / name / f"server{fraction}",
            duration_ms,
            cache,
            server_qps=fraction * plain_rate,
        )
        got = _harness(req)
        tried.append(
            (
                fraction,
                got["samples_per_second"],
                bool(got["valid"]),
                got.get("latency_p99_ns", 0.0),
            )
        )
        print(
            f"  {name} Server at {fraction:.2f} x plain Offline ({fraction * plain_rate:.1f}"
            f" QPS): {'VALID' if got['valid'] else 'INVALID'}, p99 "
            f"{got.get('latency_p99_ns', 0) / 1e6:.1f} ms",
            flush=True,
        )
        if got["valid"]:
            break
    return tried


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", choices=["resnet50", "digits", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration-ms", type=int, default=5000)
    parser.add_argument("--plain-worker", nargs=3, metavar=("REQUEST", "KIND", "SECONDS"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--server", action="store_true", help="also find the highest VALID Server QPS"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="CI: one 0.2 s round of digits, in seconds"
    )
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
        if not args.server:
            # up to nine Server tests until one is VALID: a minute, more than a smoke run's
            print("smoke: the Server search left out (--server adds it)", flush=True)
    if args.plain_worker:
        plain_worker(Path(args.plain_worker[0]), args.plain_worker[1], float(args.plain_worker[2]))
        return
    cache = ArtifactCache()
    names = ["resnet50", "digits"] if args.model == "both" else [args.model]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"{name}: {args.rounds} interleaved rounds of {args.duration_ms} ms", flush=True)
            res = bench_model(name, args.rounds, args.duration_ms, Path(tmp), cache)
            if args.server:
                res["server"] = server_search(
                    name, float(res["plain_offline_rate"]), 2 * args.duration_ms, Path(tmp), cache
                )
            results.append(res)
    print("\nsummary (median over rounds)")
    for res in results:
        geo, lo, hi = res["offline_ratio_interval"]
        print(
            f"  {res['model']:<9} Offline harness/plain = {res['offline_ratio_median']:.4f} "
            f"median, geometric mean {geo:.4f} [95 % {lo:.4f}, {hi:.4f}]   SingleStream p50 "
            f"overhead = {res['singlestream_overhead_us_median']:+.2f} us "
            f"({res['singlestream_overhead_rel_median']:+.2%}; in-run, same queries: "
            f"{res['singlestream_in_run_overhead_us_median']:+.2f} us)"
        )
        for fraction, qps, valid, _ in res.get("server", []):
            if valid:
                print(
                    f"  {res['model']:<9} Server: VALID at {fraction:.2f} x the plain Offline "
                    f"rate ({qps:.1f} samples/s)"
                )
                break
        else:
            if res.get("server"):
                print(f"  {res['model']:<9} Server: no VALID rate down to 0.5 x")
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
