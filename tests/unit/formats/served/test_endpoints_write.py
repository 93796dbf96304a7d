"""repro writes a served run's results in MLCommons endpoints' layout: read back by repro with
the definitions it states, and by the pinned v6.1 checker's endpoints parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro.formats.served.endpoints import read_result, write_run
from repro.formats.served.requests import REQUESTS_FILE, Requests
from repro.runs.record import RunRecord, TestRecord

ROOT = Path(__file__).resolve().parents[4]
CHECKER = ROOT.parent / "shared" / "tools" / "mlperf-submission-checker" / "tools" / "submission"


def _served_run(run: Path) -> RunRecord:
    rng = np.random.default_rng(1)
    tests = []
    for scenario in ("Offline", "Server"):
        rel = f"{scenario}/performance/run_1"
        (run / rel).mkdir(parents=True)
        n = 200
        ttft = rng.uniform(1e7, 5e7, n)
        Requests(
            start_ns=np.sort(rng.uniform(0, 2e10, n)),
            ttft_ns=ttft,
            latency_ns=ttft + 31 * 2e6,
            output_tokens=np.full(n, 32),
            counter="server",
            queued_ns=np.zeros(n),
        ).save(run / rel / REQUESTS_FILE)
        tests.append(
            TestRecord(
                scenario=scenario,
                mode="performance",
                dir=rel,
                status="valid",
                metrics={
                    "validity": "VALID",
                    "schedule_rng_seed": 7,
                    "sample_index_rng_seed": 9,
                    "target_qps": 10,
                    "sut_queries_completed": n,
                },
                settings={"min_duration_ms": 2000},
                backend={
                    "name": "served",
                    "api": "completions",
                    "request_errors": 0,
                    "server_url": "http://user:secret@127.0.0.1:8000/v1",
                },
            )
        )
    return RunRecord(
        run_id="20261207T000000Z-abcdef",
        spec_name="served-tinyllm",
        spec_id="a" * 64,
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="0",
        spec={
            "backend": {"options": {"max_connections": 16, "temperature": 0.0}},
            "workload": {"generation": {"max_new_tokens": 32}},
        },
        tests=tests,
    )


def test_a_served_run_writes_each_scenario_in_endpoints_layout(tmp_path: Path) -> None:
    record = _served_run(tmp_path)
    folders = write_run(tmp_path, record, "repro 0.1.0")
    assert [f.name for f in folders] == ["Offline", "Server"]
    server = tmp_path / "endpoints" / "Server"
    config = yaml.safe_load((server / "config.yaml").read_text())
    assert config["type"] == "online"
    assert config["settings"]["load_pattern"]["type"] == "poisson"
    assert config["endpoint_config"]["endpoints"] == ["http://127.0.0.1:8000"]  # no credentials
    summary = json.loads((server / "performance" / "result_summary.json").read_text())
    assert summary["complete"] is True
    assert summary["n_samples_completed"] == 200
    for rollup in ("ttft", "tpot", "latency", "output_sequence_lengths"):
        assert sum(summary[rollup]["histogram"]["counts"]) == 200
    assert summary["qps"] == pytest.approx(
        199 / (summary["legacy_loadgen_window_duration_ns"] / 1e9)
    )
    back = read_result(server)
    assert back.definitions["tpot"].formula == "decode/(n-1)"  # repro's, as it says
    assert back.definitions["tpot"].counter == "server"
    assert back.metrics["tpot_p50_ns"] == pytest.approx(2e6)


def test_nothing_is_written_for_a_run_that_is_not_served(tmp_path: Path) -> None:
    record = _served_run(tmp_path)
    for t in record.tests:
        t.backend = {"name": "onnxruntime"}
    assert write_run(tmp_path, record, "repro 0.1.0") == []
    assert not (tmp_path / "endpoints").exists()


@pytest.mark.skipif(not (CHECKER / "submission_checker").is_dir(), reason="no checker here")
def test_the_checkers_endpoints_parser_reads_what_repro_writes(tmp_path: Path) -> None:
    write_run(tmp_path, _served_run(tmp_path), "repro 0.1.0")
    code = (
        "import json, logging, sys; sys.path.insert(0, sys.argv[1]); logging.disable(50)\n"
        "from submission_checker.parsers.endpoints_parser import EndpointsParser\n"
        "out = {}\n"
        "for d in sys.argv[2:]:\n"
        "    p = EndpointsParser(d)\n"
        "    out[d] = {k: p[k] for k in ['effective_scenario', 'result_samples_per_second',\n"
        "        'result_completed_samples_per_sec', 'result_completed_tokens_per_second',\n"
        "        'result_first_token_90.00_percentile_latency_ns',\n"
        "        'result_first_token_99.00_percentile_latency_ns', 'num_errors',\n"
        "        'effective_schedule_rng_seed', 'generated_query_count']}\n"
        "print(json.dumps(out))"
    )
    dirs = [str(tmp_path / "endpoints" / s) for s in ("Offline", "Server")]
    done = subprocess.run(
        [sys.executable, "-c", code, str(CHECKER), *dirs],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    offline, server = (json.loads(done.stdout)[d] for d in dirs)
    assert offline["effective_scenario"] == "offline"
    assert server["effective_scenario"] == "online"
    assert offline["result_samples_per_second"] == pytest.approx(
        read_result(Path(dirs[0])).metrics["samples_per_second"]
    )
    assert server["result_completed_samples_per_sec"] == pytest.approx(
        read_result(Path(dirs[1])).metrics["samples_per_second"]
    )
    assert server["result_first_token_90.00_percentile_latency_ns"] > 0
    # 200 requests are too few for a 99th percentile's early-stopping estimate (LoadGen says
    # so too): none is written, and the checker finds none
    assert server["result_first_token_99.00_percentile_latency_ns"] is None
    assert server["num_errors"] == 0
    assert server["effective_schedule_rng_seed"] == 7
    assert server["generated_query_count"] == 200
