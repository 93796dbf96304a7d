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
