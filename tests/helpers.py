"""Synthetic run directories for testing the report without running LoadGen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner, Result

from repro.cli import cli
from repro.runs.record import RunRecord, TestRecord
from repro.spec.io import move_claim_paths
from repro.spec.models import Tolerances
from repro.stats.histogram import LatencyHistogram
from tests.fakes import SUMMARY

FINGERPRINT: dict[str, Any] = {
    "schema": "repro.machine.fingerprint/v1",
    "hardware": {
        "machine": "x86_64",
        "cpu": {"model": "Test CPU", "logical_cpus": 2, "physical_cores": 2, "flags": ["avx2"]},
    },
    "os": {"kernel": "6.1"},
    "python": {"version": "3.11.7"},
    "packages": {"onnxruntime": "1.32.0", "numpy": "2.4.6", "mlcommons-loadgen": "6.0.17"},
    "native": {},
    "variables": {},
}

#: what only a submitter knows of the system (`repro submission --system-json`), filled in
SUBMISSION_SYSTEM: dict[str, Any] = {
    "status": "available",
    "system_type": "edge",
    "system_type_detail": "virtual machine",
    "host_processor_frequency": "N/A",
    "host_memory_configuration": "N/A",
    "host_storage_capacity": "10 GB",
    "host_storage_type": "SSD",
    "host_processor_interconnect": "N/A",
    "host_networking": "N/A",
    "host_networking_topology": "N/A",
    "host_network_card_count": "1",
    "cooling": "air",
    "hw_notes": "",
    "measurements": {
        "input_data_types": "fp32",
        "weight_data_types": "fp32",
        "retraining": "no",
        "weight_transformations": "none",
    },
}


def make_run(
    path: Path,
    *,
    throughput: list[float],
    latency_scale: float = 1.0,
    threads: int = 2,
    accuracy: float = 0.9,
    spec_id: str = "a" * 64,
    seed: int = 0,
    status: str = "complete",
    fingerprint: dict[str, Any] | None = None,
    tolerances: dict[str, float] | None = None,
    spec_path: str = "",
    finished_utc: str = "2026-11-29T00:10:00+00:00",
    settings: dict[str, Any] | None = None,
    speeds: list[float] | None = None,
    others: float | None = None,
    large_speeds: list[float] | None = None,
    server: list[str] | None = None,
    gpu_speeds: list[float | None] | None = None,
    energy: list[float] | None = None,
    artifacts: dict[str, Any] | None = None,
) -> Path:
    """An Offline + SingleStream run with given per-repeat throughputs and latency scale;
    `speeds`, `large_speeds` and `others` are what the probes read (the small and the large
    compute kernel's speed, other processes' CPU share); `gpu_speeds`, a GPU run's GPU probe
    (TFLOP/s; None: its GPU was not probed); `energy`, the Offline tests' joules per sample
    (at 300 W); `server`, LoadGen's validity of a Server run in each of the first rounds (none
    without it); `artifacts`, the spec's artifacts as the record keeps them."""
    rng = np.random.Generator(np.random.PCG64(seed))
    spec = _spec_with(artifacts) if artifacts is not None else None
    if spec is not None:  # the record's spec id is its embedded spec's
        spec_id = spec["id"]
    tests = []
    for k, tp in enumerate(throughput, start=1):
        probe: dict[str, Any] | None = {"compute_gflops": speeds[k - 1]} if speeds else None
        if others is not None:
            probe = {**(probe or {}), "others_cpu_frac": others}
        if large_speeds is not None:
            probe = {**(probe or {}), "compute_large_gflops": large_speeds[k - 1]}
        if gpu_speeds is not None:
            tflops = gpu_speeds[k - 1]
            gpu = {"device": "cuda:0"} if tflops else {"device": "cuda:0", "unmeasured": "no"}
            probe = {**(probe or {}), "gpu": gpu}
            if tflops:
                probe["gpu_matmul_tflops"] = tflops
        joules = (
            {"energy_per_sample_j": energy[k - 1], "power_w": 300.0} if energy is not None else {}
        )
        rel = f"Offline/performance/run_{k}"
        (path / rel).mkdir(parents=True)
        tests.append(
            TestRecord(
                scenario="Offline",
                mode="performance",
                repeat=k,
                dir=rel,
                status="valid",
                metrics={"validity": "VALID", "samples_per_second": tp, **joules},
                settings=settings or {"min_duration_ms": 1000},
                probe_before=probe,
                probe_after=probe,
            )
        )
        rel = f"SingleStream/performance/run_{k}"
        (path / rel).mkdir(parents=True)
        lat = rng.lognormal(np.log(1e6 * latency_scale), 0.2, size=20_000)
        LatencyHistogram.from_latencies(lat).save(path / rel / "latency_hist.npz")
        tests.append(
            TestRecord(
                scenario="SingleStream",
                mode="performance",
                repeat=k,
                dir=rel,
                status="valid",
                metrics={
                    "validity": "VALID",
                    "samples_per_second": 1e9 / float(np.mean(lat)),
                    **{f"latency_p{q}_ns": float(np.percentile(lat, q)) for q in (50, 90, 99)},
                },
                latencies_file="latency_hist.npz",
                probe_before=probe,
                probe_after=probe,
            )
        )
        if server is not None and k <= len(server):
            tests.append(_server_test(path, k, server[k - 1], tp, latency_scale, rng, probe))
    rel = "Offline/accuracy"
    (path / rel).mkdir(parents=True)
    preds = np.stack([np.arange(100), np.arange(100) % 10])
    np.save(path / rel / "predictions.npy", preds)
    tests.append(
        TestRecord(
            scenario="Offline",
            mode="accuracy",
            dir=rel,
            status="valid",
            accuracy={"metric": "top1", "value": accuracy},
        )
    )
    record = RunRecord(
        run_id=path.name,
        spec_name=spec["name"] if spec is not None else "synthetic",  # the embedded spec's
        spec_id=spec_id,
        spec_path=spec_path,
        status=status,  # type: ignore[arg-type]
        started_utc="2026-11-29T00:00:00+00:00",
        finished_utc=finished_utc,
        repro_version="test",
        environment={"manager": "native"},
        fingerprint=fingerprint or FINGERPRINT,
        tolerances=Tolerances(**tolerances) if tolerances is not None else None,
        probes_version="repro.probes/v2" if speeds or large_speeds else None,
        spec=spec,
        tests=[
            t.model_copy(
                update={
                    "backend": {
                        "name": "onnxruntime",
                        "version": "1.32.0",
                        "options": {"intra_op_threads": threads},
                        "device": "CPU",
                    }
                }
            )
            for t in tests
        ],
    )
    (path / "run.json").write_text(json.dumps(record.model_dump(mode="json", by_alias=True)))
    return path


def _spec_with(artifacts: dict[str, Any]) -> dict[str, Any]:
    """The shipped ort-digits spec, as a run records it, with these artifacts (and its id)."""
    from repro.spec.io import parse_spec, with_id

    spec = json.loads((Path(__file__).resolve().parents[1] / "specs/ort-digits.json").read_text())
    spec.pop("id")
    merged = {**spec, "artifacts": {**spec["artifacts"], **artifacts}}
    changed = with_id(parse_spec(merged, source="a test's run"))
    data: dict[str, Any] = changed.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def write_record(path: Path, doc: dict[str, Any]) -> None:
    """A run.json edited by a test as repro would have written it: its digest made anew."""
    from repro.runs.record import record_digest

    doc["record_sha256"] = record_digest(doc)
    path.write_text(json.dumps(doc))


def _server_test(
    path: Path,
    k: int,
    validity: str,
    throughput: float,
    latency_scale: float,
    rng: np.random.Generator,
    probe: dict[str, Any] | None,
) -> TestRecord:
    """A Server performance run of round `k`: LoadGen's validity, its completed rate and its
    latency percentiles (no histogram: the percentiles are compared run by run)."""
    rel = f"Server/performance/run_{k}"
    (path / rel).mkdir(parents=True)
    lat = rng.lognormal(np.log(2e6 * latency_scale), 0.2, size=20_000)
    return TestRecord(
        scenario="Server",
        mode="performance",
        repeat=k,
        dir=rel,
        status="valid" if validity == "VALID" else "invalid",
        metrics={
            "validity": validity,
            "samples_per_second": throughput,
            **{f"latency_p{q}_ns": float(np.percentile(lat, q)) for q in (50, 90, 99)},
        },
        probe_before=probe,
        probe_after=probe,
    )


def portable_spec(root: Path, name: str) -> dict[str, Any]:
    """A shipped spec whose relative paths (artifacts, lock files, flake) are made absolute,
    so that a test can write it anywhere; its id is dropped (it changes when edited)."""
    spec_dir = root / "specs"
    spec: dict[str, Any] = json.loads((spec_dir / f"{name}.json").read_text())
    spec.pop("id", None)
    for art in spec["artifacts"].values():
        if "path" in art:
            art["path"] = str((spec_dir / art["path"]).resolve())
    env = spec["environment"]
    for section in (env, env.get("spack") or {}):
        for key in ("python_lock", "flake_lock", "spack_yaml", "spack_lock"):
            if key in section:
                section[key]["path"] = str((spec_dir / section[key]["path"]).resolve())
    if str(env.get("flake", "")).startswith("path:"):
        env["flake"] = "path:" + str((spec_dir / env["flake"][5:]).resolve())
    if "original" in spec:
        spec["original"]["path"] = str((spec_dir / spec["original"]["path"]).resolve())
    move_claim_paths(spec, lambda path: str((spec_dir / path).resolve()))
    return spec


def assert_replayed(exit_code: int, record: dict[str, Any], output: str = "") -> None:
    """A replay ran every test to the end: exit 0, or exit 3 only because LoadGen judged a
    Server performance run INVALID (its latency bound is what load on a shared 2-core machine
    breaks); a failed or interrupted test is never accepted."""
    statuses = {(t["scenario"], t["mode"]): t["status"] for t in record["tests"]}
    assert all(v in ("valid", "invalid") for v in statuses.values()), (statuses, output)
    invalid = {k for k, v in statuses.items() if v == "invalid"}
    assert invalid <= {("Server", "performance")}, (invalid, output)
    assert exit_code == (3 if invalid else 0), output
    assert record["status"] == ("invalid" if invalid else "complete")


def published_result(
    root: Path,
    *,
    submitter: str = "Acme",
    system: str = "box",
    benchmark: str = "resnet50",
    folder: str = "offline",
    scenario: str = "Offline",
    sps: float = 100.0,
    accuracy: str | None = "accuracy=76.000%, good=38000, total=50000\nhash=abc\n",
    division: str = "closed",
    detail: bool = False,
) -> Path:
    """One published scenario folder (and the system description), as submissions lay it out;
    `detail`: with the detail log beside the summary (a checked result)."""
    sub = root / division / submitter
    sdir = sub / "results" / system / benchmark / folder
    run = sdir / "performance" / "run_1"
    run.mkdir(parents=True, exist_ok=True)
    (run / "mlperf_log_summary.txt").write_text(
        SUMMARY.format(
            scenario=scenario,
            mode="PerformanceOnly",
            sps=sps,
            validity="VALID",
            p50=1_000_000,
            p90=2_000_000,
            p99=3_000_000,
        )
    )
    # the detail log LoadGen writes beside it (validity and rate: what the checker holds the
    # summary to)
    if detail:  # the detail log LoadGen writes beside it (validity and rate: what the
        # checker holds the summary to)
        records = (("result_validity", "VALID"), ("result_samples_per_second", sps))
        (run / "mlperf_log_detail.txt").write_text(
            "".join(
                ":::MLLOG "
                + json.dumps(
                    {
                        "key": k,
                        "value": v,
                        "time_ms": 1.0,
                        "namespace": "mlperf::logging",
                        "event_type": "POINT_IN_TIME",
                        "metadata": {},
                    }
                )
                + "\n"
                for k, v in records
            )
        )
    if accuracy is not None:
        (sdir / "accuracy").mkdir(exist_ok=True)
        (sdir / "accuracy" / "accuracy.txt").write_text(accuracy)
    (sub / "systems").mkdir(exist_ok=True)
    (sub / "systems" / f"{system}.json").write_text(
        json.dumps({"host_processor_model_name": "Xeon", "accelerator_model_name": "N/A"})
    )
    return sdir


def replay_performance(
    spec: Path, tmp_path: Path, scenario: str, *args: str, run_id: str = "t1"
) -> Result:
    """`repro replay SPEC --env native` of one scenario's performance test, in process, with
    the results and the cache under `tmp_path` (and `args`, e.g. --min-duration-ms)."""
    return CliRunner().invoke(
        cli,
        [
            "replay",
            str(spec),
            "--env",
            "native",
            "--scenario",
            scenario,
            "--mode",
            "performance",
            *args,
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run-id",
            run_id,
        ],
    )


def replay_plan(**fields: Any) -> Any:
    """A replay's plan from flat fields, LoadGen's overrides among them (as tests give them)."""
    from repro.runs.plan import OVERRIDABLE, ReplayPlan

    loadgen = {k: fields.pop(k) for k in OVERRIDABLE if k in fields}
    return ReplayPlan(loadgen=loadgen, **fields)
