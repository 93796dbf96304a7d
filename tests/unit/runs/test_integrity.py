"""A run's files are checked against the digests it recorded: a missing or altered log is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.mlperf.sides import open_run
from repro.runs import layout
from repro.runs.store import check_files, digest_files
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


def _copy_original(root: Path, tmp_path: Path, *, sealed: bool) -> tuple[Path, dict[str, object]]:
    """ort-digits' shipped original, its run.json written as repro writes it now (with its
    digest) or as older repro wrote it (without)."""
    import shutil

    from repro.runs.store import load_run

    run = tmp_path / "original"
    shutil.copytree(root / "results" / "ort-digits" / "original", run)
    text = load_run(run).dump()
    record = json.loads(text)
    if not sealed:
        record.pop("record_sha256")
    (run / "run.json").write_text(json.dumps(record, indent=2))
    return run, record


def _report_of(run: Path, replay: Path, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["report", "-o", str(out), "--compare", str(run), str(replay)])
    return result.exit_code, result.output


@pytest.mark.parametrize("sealed", [True, False], ids=["with-digest", "older-record"])
@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda r: r.update(spec={"junk": 1}), "$.spec"),
        (
            lambda r: r["tests"][0]["settings"].update(min_duration_ms="x"),
            "settings.min_duration_ms",
        ),
        (lambda r: r["spec"]["workload"].update(batch_size=7), "$.spec"),
    ],
    ids=["spec-replaced", "setting-a-string", "spec-edited"],
)
def test_an_edited_run_record_is_damaged_input_naming_the_field(
    root: Path, tmp_path: Path, sealed: bool, edit: object, named: str
) -> None:
    run, record = _copy_original(root, tmp_path, sealed=sealed)
    replay, _ = _copy_original(root, tmp_path / "replay", sealed=True)
    edit(record)  # type: ignore[operator]
    (run / "run.json").write_text(json.dumps(record, indent=2))
    code, output = _report_of(run, replay, tmp_path / "out")
    assert code == 2, output
    assert ("$.record_sha256" in output) if sealed else (named in output), output
    assert not (tmp_path / "out" / "report.json").exists()


def test_a_record_repro_wrote_reads_back_and_any_edit_of_it_shows(
    root: Path, tmp_path: Path
) -> None:
    from repro.errors import SpecError
    from repro.runs.store import load_run

    run, record = _copy_original(root, tmp_path, sealed=True)
    assert load_run(run).record_sha256 == record["record_sha256"]
    record["tests"][0]["metrics"]["samples_per_second"] = 1.0
    (run / "run.json").write_text(json.dumps(record))
    with pytest.raises(SpecError, match=r"record_sha256.*edited"):
        load_run(run)
