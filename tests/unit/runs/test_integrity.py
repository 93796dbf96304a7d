"""A run's files are checked against the digests it recorded: a missing or altered log is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs import layout
from repro.runs.store import check_files, digest_files, open_run
from tests.helpers import make_run


def _sealed(path: Path, **kwargs: object) -> Path:
    run = make_run(path, **kwargs)  # type: ignore[arg-type]
    record = json.loads((run / "run.json").read_text())
    record["files_sha256"] = digest_files(run)
    (run / "run.json").write_text(json.dumps(record))
    return run


def test_altered_and_missing_files_are_reported(tmp_path: Path) -> None:
    orig = _sealed(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    _sealed(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    hist = orig / "SingleStream" / "performance" / "run_1" / "latency_hist.npz"
    pred = orig / "Offline" / "accuracy" / layout.PREDICTIONS_FILE
    hist.unlink()
    data = pred.read_bytes()
    pred.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    problems = check_files(open_run(orig))
    assert len(problems) == 2
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "-o",
            str(tmp_path / "out"),
            "--compare",
            str(orig),
            str(tmp_path / "r" / "replay"),
        ],
    )
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["summary"].startswith("WARNING: 2 file(s)")
    assert any("latency_hist.npz: missing" in p for p in data["integrity"])
    assert any("predictions.npy: altered since the run" in p for p in data["integrity"])
    assert "integrity:" in result.output


@pytest.mark.parametrize("name", ["ort-digits", "ort-resnet50", "tvm-resnet50"])
def test_the_committed_originals_match_their_digests(root: Path, name: str) -> None:
    run = open_run(root / "results" / name / "original")
    assert run.record.files_sha256
    assert any(k.endswith(layout.SUMMARY) for k in run.record.files_sha256)
    assert check_files(run) == []


def test_an_edited_metric_in_run_json_is_caught_by_the_logs(root: Path, tmp_path: Path) -> None:
    import shutil

    from repro.runs.store import check_metrics

    run = tmp_path / "original"
    shutil.copytree(root / "results" / "ort-digits" / "original", run)
    assert check_metrics(open_run(run)) == []
    record = json.loads((run / "run.json").read_text())
    offline = next(
        t for t in record["tests"] if t["scenario"] == "Offline" and t["mode"] == "performance"
    )
    offline["metrics"]["samples_per_second"] *= 1.2
    (run / "run.json").write_text(json.dumps(record))
    problems = check_metrics(open_run(run))
    assert len(problems) == 1
    assert "samples_per_second" in problems[0]
    assert "LoadGen's log says" in problems[0]


def test_a_duplicate_key_in_a_spec_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"schema": "repro.experiment/v1", "name": "a", "name": "b"}')
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2
    assert "the key 'name' appears twice" in result.output


def test_a_leftover_partial_run_is_a_clear_error(root: Path, tmp_path: Path) -> None:
    (tmp_path / "results" / "ort-digits" / ".killed.partial").mkdir(parents=True)
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--run-id",
            "killed",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "was killed before it could finish" in result.output
