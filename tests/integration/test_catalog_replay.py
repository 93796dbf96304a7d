"""`--track` on the real commands (LoadGen, onnxruntime) into MLflow's real SQLite store: a
capture's original lands in the catalog where it ends, an interleaved replay's two sides nest
under their comparison with a round per step, and the report's verdict tags the replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.catalog.store import Catalog
from repro.catalog.where import ENV, embedded
from repro.cli import cli

pytest.importorskip(
    "mlflow.tracking", reason="MLflow's client is not installed: pip install -e '.[mlflow]'"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_interleaved_replay_nests_its_sides_with_a_round_per_step(
    root: Path, project: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--against",
            "self",
            "--scenario",
            "Offline",
            "--mode",
            "performance",
            "--min-duration-ms",
            "300",
            "--max-rounds",
            "3",
            "--run-id",
            "aa",
            "--cache-dir",
            str(project / "cache"),
            "--track",
        ],
    )
    assert result.exit_code in (0, 1), result.output
    assert "catalog: 3 new, 0 updated, 0 unchanged, 1 verdict(s)" in result.output
    catalog = Catalog(embedded(project))
    runs = {
        r.tags.get("repro.run_id") or r.tags["repro.kind"]: r for r in catalog.runs("ort-digits")
    }
    assert set(runs) == {"pair", "aa-replay", "aa-baseline"}
    for side in ("aa-replay", "aa-baseline"):
        assert runs[side].tags["mlflow.parentRunId"] == runs["pair"].run_id
        steps = catalog.client.get_metric_history(runs[side].run_id, "Offline.samples_per_second")
        assert sorted(m.step for m in steps) == [1, 2, 3]
    assert runs["aa-replay"].tags["repro.verdict"] in ("reproduced", "inconclusive")
    assert "repro.verdict" not in runs["aa-baseline"].tags
    assert runs["pair"].params["stopping.max_rounds"] == "3"


def test_a_captures_original_is_logged_where_it_ends(root: Path, project: Path) -> None:
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
    del partial["artifacts"]["dataset"]["sha256"]
    # one Offline test, once: LoadGen's validity of a Server test is what load breaks
    partial["workload"]["scenarios"] = [
        s for s in partial["workload"]["scenarios"] if s["scenario"] == "Offline"
    ]
    del partial["original"]
    (project / "partial.json").write_text(json.dumps(partial))
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            "partial.json",
            "--mode",
            "performance",
            "--min-duration-ms",
            "300",
            "--no-claims",
            "--env-manager",
            "venv",
            "--cache-dir",
            str(project / "cache"),
            "--track",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Server" not in result.output
    assert "not logged" not in result.output
    (original,) = Catalog(embedded(project)).runs("ort-digits")
    assert original.tags["repro.run_id"] == "original"
    assert original.tags["repro.role"] == "original"
    assert original.metrics["Offline.samples_per_second.median"] > 0
