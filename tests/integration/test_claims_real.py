"""`repro claim measure` and `repro claim check` with the real harness: onnxruntime and LoadGen
on the digits MLP, both variants interleaved, the evidence written into the spec."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from repro.spec.io import load_spec
from tests.helpers import portable_spec

ROUNDS = {"min_duration_ms": 200, "min_query_count": 128, "max_rounds": 12, "max_time_s": 120.0}
CLAIMS: list[dict[str, Any]] = [
    {
        "id": "batch-32-vs-1",
        "statement": "batch 32 gives more Offline throughput than batch 1",
        "metric": "Offline.throughput",
        "baseline": {"label": "batch 1", "overrides": {"workload.batch_size": 1}},
        "relation": ">=",
        "bound": 1.0,
        "rounds": ROUNDS,
    },
    {
        "id": "batch-accuracy",
        "statement": "batching loses no accuracy",
        "metric": "accuracy",
        "baseline": {"overrides": {"workload.batch_size": 1}},
        "quantity": "drop",
        "relation": "<=",
        "bound": 0.01,
    },
]


def _spec(root: Path, tmp_path: Path) -> Path:
    raw = portable_spec(root, "ort-digits")
    for sc in raw["workload"]["scenarios"]:
        if sc["scenario"] == "Offline":  # LoadGen's Offline query: expected qps x duration
            sc["settings"]["offline_expected_qps"] = 5000.0
    raw.pop("id", None)
    raw["claims"] = CLAIMS
    path = tmp_path / "ort-digits.json"
    path.write_text(json.dumps(raw))
    assert CliRunner().invoke(cli, ["validate", "--fix-id", str(path)]).exit_code == 0
    return path


def test_measure_then_check_with_the_real_backend(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _spec(root, tmp_path)
    before = load_spec(path)
    common = ["--env", "native", "--order-seed", "7", "--cache-dir", str(tmp_path / "cache")]
    measured = CliRunner().invoke(cli, ["claim", "measure", str(path), *common])
    assert measured.exit_code == 0, measured.output
    after = load_spec(path)
    assert after.id == before.id
    assert after.claims is not None
    perf, acc = after.claims
    assert perf.evidence is not None
    assert acc.evidence is not None
    # the first look of the sequential rule: 8 paired rounds (batch 32 is many times batch 1;
    # a round whose Offline query only one side had sized is left out, and delays it)
    assert perf.evidence.rounds == 8
    assert len(perf.evidence.baseline) == len(perf.evidence.candidate) == 8
    assert perf.evidence.verdict == "holds"
    assert min(perf.evidence.baseline + perf.evidence.candidate) > 0
    assert perf.evidence.ci is not None
    assert perf.evidence.machine.logical_cpus
    assert perf.evidence.probes["speed_gflops_min"] is not None
    assert acc.evidence.ci is None  # exact: one accuracy test of each
    assert acc.evidence.rounds == 1
    runs = {
        side: load_run(tmp_path / "results" / "ort-digits" / run_id)
        for side, run_id in perf.evidence.runs.items()
    }
    assert {r.interleave.side for r in runs.values() if r.interleave} == {"a", "b"}
    assert all(t.status in ("valid", "invalid") for r in runs.values() for t in r.tests)

    checked = CliRunner().invoke(
        cli, ["claim", "check", str(path), *common, "--json", "--track", "sqlite:///catalog.db"]
    )
    assert checked.exit_code in (0, 1), checked.output  # a verdict, whichever
    data = json.loads(checked.stdout)
    if importlib.util.find_spec("mlflow") is not None:  # the check in the catalog, if MLflow
        from repro.catalog.store import Catalog
        from repro.catalog.where import Tracking

        logged = Catalog(Tracking(uri="sqlite:///catalog.db", source="--track")).runs("ort-digits")
        (check,) = [r for r in logged if r.tags["repro.kind"] == "claims"]
        assert check.tags["repro.claim.batch-32-vs-1"] == data["claims"][0]["verdict"]
        assert "claim.batch-32-vs-1.value" in check.metrics
    assert [c["id"] for c in data["claims"]] == ["batch-32-vs-1", "batch-accuracy"]
    assert all(c["match"] in ("matches", "differs", "inconclusive") for c in data["claims"])
    assert (tmp_path / "reports" / "ort-digits" / "claims.md").read_text().startswith("# Claims")
