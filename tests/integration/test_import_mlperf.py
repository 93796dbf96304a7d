"""A published result imported as an experiment, replayed for real, and reported on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import published_result

_SETTINGS = """samples_per_query : 4000
target_qps : 1000000
min_duration (ms): 400
min_query_count : 1
qsl_rng_seed : 11
sample_index_rng_seed : 22
schedule_rng_seed : 33
"""


def _tree(tmp_path: Path) -> Path:
    """A published digits Offline result, its settings in the summary as LoadGen writes them."""
    sdir = published_result(tmp_path / "v9", benchmark="digits", sps=4100.0, accuracy=None)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text() + _SETTINGS)
    return tmp_path / "v9"


def test_import_replay_report(
    root: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "import-mlperf",
            str(tree),
            "--base",
            str(root / "specs" / "ort-digits.json"),
            "--scenario",
            "Offline",
        ],
    )
    assert result.exit_code == 0, result.output
    name = "mlperf-digits-closed-acme-box"
    spec = json.loads((tmp_path / "specs" / f"{name}.json").read_text())
    offline = spec["workload"]["scenarios"]
    assert [s["scenario"] for s in offline] == ["Offline"]
    assert offline[0]["settings"]["offline_expected_qps"] == 1000000
    assert offline[0]["settings"]["min_duration_ms"] == 400
    assert spec["workload"]["seeds"]["schedule_rng_seed"] == 33
    original = load_run(tmp_path / "results" / name / "original")
    assert original.environment["manager"] == "published"
    assert (tmp_path / "results" / name / "original" / "Offline" / "performance" / "run_1"
            / "mlperf_log_summary.txt").is_file()  # fmt: skip
    # the same import twice is refused, not overwritten
    again = runner.invoke(
        cli, ["import-mlperf", str(tree), "--base", str(root / "specs" / "ort-digits.json")]
    )
    assert again.exit_code == 2
    assert "imported before" in again.output

    replay = runner.invoke(
        cli,
        [
            "replay",
            f"specs/{name}.json",
            "--env",
            "native",
            "--mode",
            "performance",
            "--min-duration-ms",
            "300",
            "--run-id",
            "r1",
        ],
    )
    assert replay.exit_code in (0, 1), replay.output
    report = runner.invoke(cli, ["report", "--compare", f"results/{name}/", "--json"])
    assert report.exit_code in (0, 1), report.output
    data = json.loads(report.stdout)
    changed = {(s["scope"], s["key"]) for s in data["settings"]}
    assert ("Offline", "min_duration_ms") in changed  # 400 published, 300 replayed
    assert ("Offline", "offline_expected_qps") not in changed
    assert data["original"]["kind"] == "repro"


def test_a_long_name_is_cut_to_a_spec_name_and_stays_unique(tmp_path: Path) -> None:
    from repro.mlperf.importing import MAX_NAME, _name
    from repro.runs.record import RunRecord

    names = set()
    for system in ("a-very-long-system-name-" * 4 + "1", "a-very-long-system-name-" * 4 + "2"):
        record = RunRecord(
            run_id="x", spec_name="resnet50", spec_id="", spec_path="", status="complete",
            started_utc="", repro_version="",
            environment={"division": "closed", "submitter": "Acme", "system": system},
        )  # fmt: skip
        name = _name(record)
        assert len(name) <= MAX_NAME
        names.add(name)
    assert len(names) == 2


def test_json_lists_what_was_imported(root: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    result = CliRunner().invoke(
        cli,
        ["import-mlperf", str(tree), "--base", str(root / "specs" / "ort-digits.json"),
         "--specs-dir", str(tmp_path / "s"), "--results-dir", str(tmp_path / "r"), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [done] = json.loads(result.stdout)
    assert done["name"] == "mlperf-digits-closed-acme-box"
    assert Path(done["spec"]).is_file()
    assert done["scenarios"] == ["Offline"]
