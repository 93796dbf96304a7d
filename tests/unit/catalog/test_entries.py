"""What a run, a report and a sweep become in the catalog (pure: no MLflow needed)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.catalog.entries import (
    claims_entry,
    judgement,
    key_name,
    pair_entry,
    run_entry,
    sweep_entries,
)
from repro.runs.store import load_run
from tests.helpers import make_run


def test_a_run_gives_its_settings_backend_and_machine_as_params(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "synthetic" / "r1", throughput=[100, 110, 105], threads=2)
    entry = run_entry(folder, load_run(folder))
    assert entry.key == "r1@2026-11-29T00:00:00+00:00"
    assert entry.name == "r1"
    assert entry.experiment == "synthetic"
    assert entry.params["spec_id"] == "a" * 64
    assert entry.params["Offline.min_duration_ms"] == "1000"
    assert entry.params["backend.name"] == "onnxruntime"
    assert entry.params["backend.options.intra_op_threads"] == "2"
    assert entry.params["environment.manager"] == "native"
    assert entry.params["machine.cpu_model"]
    assert len(entry.params["machine.fingerprint_sha256"]) == 16
    assert entry.tags["repro.run_id"] == "r1"
    assert entry.tags["repro.role"] == "replay"


def test_each_repeat_is_a_step_of_its_metric_and_the_median_is_the_headline(
    tmp_path: Path,
) -> None:
    folder = make_run(tmp_path / "synthetic" / "original", throughput=[100, 110, 105])
    entry = run_entry(folder, load_run(folder))
    steps = sorted((s, v) for k, v, s in entry.metrics if k == "Offline.samples_per_second")
    assert steps == [(1, 100.0), (2, 110.0), (3, 105.0)]
    medians = {k: v for k, v, _ in entry.metrics if k.endswith(".median")}
    assert medians["Offline.samples_per_second.median"] == 105.0
    assert entry.tags["repro.role"] == "original"
    assert entry.tags["repro.headline_metric"].endswith(".median")
    assert ("Offline.accuracy.top1", 0.9, 1) in entry.metrics
    # settings and validity are not metrics
    assert not [k for k, _, _ in entry.metrics if "validity" in k or "duration" in k]


def test_nothing_but_the_allow_list_leaves_the_record(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "synthetic" / "r1", throughput=[100])
    raw = json.loads((folder / "run.json").read_text())
    secret = "ghp_" + "x" * 36
    raw["environment"].update(
        {"python": "/home/alice/.venv/bin/python", "reason": f"token {secret}", "TOKEN": secret}
    )
    raw["tests"][0]["backend"]["options"]["session_config"] = {"k": "v"}
    raw["tests"][0]["metrics"]["qsl_rng_seed"] = 123
    raw["tests"][0]["metrics"]["sut_name"] = "/home/alice/sut"
    (folder / "run.json").write_text(json.dumps(raw))
    entry = run_entry(folder, load_run(folder))
    text = json.dumps([entry.params, entry.metrics, entry.tags])
    assert secret not in text
    assert "/home/alice" not in text
    assert "qsl_rng_seed" not in text


def test_a_key_mlflow_refuses_is_made_one_it_accepts() -> None:
    assert key_name("Offline.latency_p99.9_ns") == "Offline.latency_p99.9_ns"
    assert key_name("backend.options.a=b;c") == "backend.options.a_b_c"


def test_the_two_sides_of_a_comparison_nest_under_one_parent(tmp_path: Path) -> None:
    sides = []
    for name, side in (("x-baseline", "b"), ("x-replay", "a")):
        folder = make_run(tmp_path / "synthetic" / name, throughput=[100, 101])
        raw = json.loads((folder / "run.json").read_text())
        raw["interleave"] = {"id": "p1", "side": side, "seed": 1, "rounds": 2}
        raw["stopping"] = {"rule": "signed-rank/looks-doubling", "rounds": 2}
        (folder / "run.json").write_text(json.dumps(raw))
        sides.append(load_run(folder))
    parent = pair_entry(sides)
    assert parent.key == "pair:p1"
    assert parent.params["stopping.rule"]
    child = run_entry(tmp_path / "synthetic" / "x-baseline", sides[0])
    assert child.parent == "pair:p1"
    assert child.tags["repro.role"] == "baseline"


def test_a_report_tags_the_runs_it_judged_with_its_verdict_and_interval(tmp_path: Path) -> None:
    report = {
        "schema": "repro.report/v2",
        "spec_name": "synthetic",
        "verdict": "not reproduced",
        "summary": "NOT REPRODUCED: Offline throughput -30 %",
        "original": {"run_id": "original", "kind": "repro", "path": "r/original"},
        "replays": [
            {"run_id": "r1", "kind": "repro", "path": "r/r1"},
            {"run_id": "mlperf:Acme/box/resnet50/Offline", "kind": "mlperf", "path": "v4.1"},
        ],
        "scenarios": [
            {
                "scenario": "Offline",
                "verdict": "not reproduced",
                "metrics": [
                    {"metric": "validity", "judged": True, "delta_rel": None, "unit": ""},
                    {
                        "metric": "samples_per_second",
                        "judged": True,
                        "delta_rel": -0.3,
                        "ci": [-0.32, -0.28],
                        "unit": "samples/s",
                    },
                ],
            }
        ],
    }
    (tmp_path / "report.json").write_text(json.dumps(report))
    found = judgement(tmp_path, report)
    assert found.judged == [("r1", "r/r1")]
    assert found.published == ["mlperf:Acme/box/resnet50/Offline"]
    assert found.original == "original"
    assert found.tags["repro.verdict"] == "not reproduced"
    assert found.tags["repro.verdict.Offline"] == "not reproduced"
    assert found.tags["repro.verdict_metric"] == "Offline.samples_per_second"
    assert found.metrics == {
        "verdict.delta_rel": -0.3,
        "verdict.ci_low": -0.32,
        "verdict.ci_high": -0.28,
    }
    assert [name for _, name in found.artifacts] == ["report"]


def test_a_sweeps_points_nest_under_it(tmp_path: Path) -> None:
    state = {
        "schema": "repro.sweep/v1",
        "id": "s1",
        "spec_name": "synthetic",
        "spec_id": "a" * 64,
        "params": [{"path": "backend.options.intra_op_threads", "values": [1, 2]}],
        "objectives": ["max:throughput"],
        "points": [
            {
                "index": 0,
                "values": {"backend.options.intra_op_threads": 1},
                "status": "complete",
                "runs": ["runs/synthetic/p0"],
                "metrics": {"throughput": {"mean": 90.0, "lo": 88.0, "hi": 92.0}},
            },
            {"index": 1, "values": {"backend.options.intra_op_threads": 2}, "status": "failed"},
        ],
    }
    parent, *points = sweep_entries(tmp_path, state)
    assert parent.key == "sweep:s1"
    assert parent.params["grid.backend.options.intra_op_threads"]
    assert [p.parent for p in points] == ["sweep:s1", "sweep:s1"]
    assert points[0].metrics == [("throughput", 90.0, 0)]
    assert points[0].params == {"backend.options.intra_op_threads": "1"}
    assert [p.status for p in points] == ["FINISHED", "FAILED"]


def test_a_claims_check_gives_each_claims_verdict_and_interval(tmp_path: Path) -> None:
    check = {
        "schema": "repro.claim_rounds/v1",
        "spec_name": "synthetic",
        "spec_id": "a" * 64,
        "generated_utc": "2026-12-06T05:00:00+00:00",
        "verdict": "holds",
        "summary": "HOLDS: 1 claim(s) hold",
        "claims": [
            {
                "id": "threads-2x",
                "bound": "candidate/baseline >= 1.7",
                "value": 1.9,
                "ci": [1.8, 2.0],
                "verdict": "holds",
                "match": "matches",
                "rounds": 8,
            }
        ],
    }
    (tmp_path / "claims.json").write_text(json.dumps(check))
    entry = claims_entry(tmp_path, check)
    assert entry.key == "claims:2026-12-06T05:00:00+00:00"
    assert entry.tags["repro.claim.threads-2x"] == "holds"
    assert entry.tags["repro.claim.threads-2x.match"] == "matches"
    assert entry.params["claim.threads-2x.bound"] == "candidate/baseline >= 1.7"
    assert ("claim.threads-2x.ci_low", 1.8, 0) in entry.metrics
    assert [name for _, name in entry.artifacts] == ["claims"]


def test_a_run_staged_then_renamed_is_noted_where_it_ends() -> None:
    from repro.outputs import Written

    written = Written()
    written.note("runs", Path("results/x/original.new"))
    written.note("runs", Path("results/x/r1"))
    written.moved(Path("results/x/original.new"), Path("results/x/original"))
    assert written.runs == [Path("results/x/original"), Path("results/x/r1")]
    written.clear()
    assert not written
