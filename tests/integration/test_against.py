"""`repro replay --against`: the real harness, interleaved with a baseline, judged in pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run


def test_a_replay_against_itself_runs_paired_rounds_and_prints_the_report(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
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
            "--order-seed",
            "11",
            "--run-id",
            "aa",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
        ],
    )
    assert result.exit_code in (0, 1), result.output  # a verdict, whichever
    replay = load_run(tmp_path / "results" / "ort-digits" / "aa-replay")
    baseline = load_run(tmp_path / "results" / "ort-digits" / "aa-baseline")
    assert replay.interleave is not None
    assert baseline.interleave is not None
    assert replay.interleave.id == baseline.interleave.id
    assert replay.interleave.seed == 11
    assert len(replay.interleave.orders) == 3
    assert [t.repeat for t in replay.tests] == [1, 2, 3]
    assert all(t.probe_before and t.probe_after for t in replay.tests)
    report = json.loads((tmp_path / "reports" / "ort-digits" / "report.json").read_text())
    tp = report["scenarios"][0]["metrics"][1]
    assert tp["metric"] == "samples_per_second"
    assert tp["method"] == "paired-rounds"
    assert any(n.startswith("paired:") for n in report["notes"])
    assert json.loads(result.stdout) == report  # --json: stdout is the report, one document
