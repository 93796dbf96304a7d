"""The report speaks only about what both sides ran, and says what it left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run


def _report(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(cli, ["report", "-o", str(tmp_path / "out"), *args])
    out = tmp_path / "out" / "report.json"
    data = json.loads(out.read_text()) if out.is_file() and result.exit_code in (0, 1) else None
    return result.exit_code, data, result.output


def _keep(run: Path, keep: set[tuple[str, str]], status: str | None = None) -> None:
    """Keep only the (scenario, mode) tests of a synthetic run."""
    path = run / "run.json"
    record = json.loads(path.read_text())
    record["tests"] = [t for t in record["tests"] if (t["scenario"], t["mode"]) in keep]
    if status:
        record["status"] = status
    path.write_text(json.dumps(record))


def test_latest_is_by_recorded_finish_time_and_same_spec(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    # "zzz" sorts last by name but finished first; "other" finished last but is another spec
    make_run(
        tmp_path / "r" / "zzz",
        throughput=[50, 51, 49],
        seed=2,
        finished_utc="2026-11-29T01:00:00+00:00",
    )
    make_run(
        tmp_path / "r" / "aaa",
        throughput=[100, 100, 100],
        seed=3,
        finished_utc="2026-11-29T02:00:00+00:00",
    )
    make_run(
        tmp_path / "r" / "other",
        throughput=[10, 10, 10],
        seed=4,
        spec_id="c" * 64,
        finished_utc="2026-11-29T03:00:00+00:00",
    )
    code, data, out = _report(tmp_path, "--compare", str(tmp_path / "r"))
    assert code == 0, out
    assert data is not None
    assert data["replays"][0]["run_id"] == "aaa"


def test_a_partial_replay_is_judged_on_what_it_ran_and_says_what_it_did_not(
    tmp_path: Path,
) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    _keep(tmp_path / "r" / "replay", {("Offline", "accuracy")})
    code, data, out = _report(
        tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")
    )
    assert code == 0, out
    assert data is not None
    assert "1 of 2 scenario(s) compared" in data["summary"]
    missing = {(n["scenario"], n["mode"], n["reason"]) for n in data["not_compared"]}
    assert missing == {
        ("SingleStream", "performance", "not replayed"),
        ("Offline", "performance", "not replayed"),
    }
    assert "not compared: Offline performance (not replayed)" in out
    assert [s["scenario"] for s in data["scenarios"]] == ["Offline"]


def test_a_failed_replay_with_nothing_to_compare_is_bad_input(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    path = tmp_path / "r" / "replay" / "run.json"
    record = json.loads(path.read_text())
    record["status"] = "failed"
    for t in record["tests"]:
        t["status"], t["metrics"], t["accuracy"] = "failed", {}, None
    path.write_text(json.dumps(record))
    code, _, out = _report(
        tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")
    )
    assert code == 2, out
    assert "did not finish" in out


def test_a_replay_without_the_originals_scenarios_is_nothing_to_compare(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    _keep(tmp_path / "r" / "original", {("SingleStream", "performance")})
    make_run(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    _keep(tmp_path / "r" / "replay", {("Offline", "performance")})
    code, _, out = _report(
        tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")
    )
    assert code == 2, out
    assert "nothing to compare" in out
    assert "SingleStream performance: not replayed" in out


def test_a_replay_given_as_the_original_is_not_swapped_silently(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[50, 51, 49], seed=2)
    code, _, out = _report(tmp_path, "--compare", str(tmp_path / "r" / "replay"))
    assert code == 2, out
    assert "this is a replay" in out


def test_every_differing_setting_is_listed(tmp_path: Path) -> None:
    make_run(
        tmp_path / "r" / "original",
        throughput=[100, 101, 99],
        seed=1,
        settings={"min_duration_ms": 10000, "offline_expected_qps": 100},
    )
    make_run(
        tmp_path / "r" / "replay",
        throughput=[100, 101],
        seed=2,
        settings={"min_duration_ms": 1000, "offline_expected_qps": 100},
    )
    _, data, out = _report(
        tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")
    )
    assert data is not None, out
    got = {(d["scope"], d["key"], d["original"], d["replay"]) for d in data["settings"]}
    assert got == {("Offline", "min_duration_ms", 10000, 1000), ("run", "repeat", 3, 2)}
    assert "setting differs: Offline min_duration_ms: 10000 -> 1000" in out


def test_a_replay_given_twice_is_refused(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "a", throughput=[100.0, 99.0], seed=2)
    run = str(tmp_path / "r" / "a")
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r" / "original"), run, run + "/"]
    )
    assert result.exit_code == 2, result.output
    assert "is given twice as a replay" in result.output


def test_a_damaged_run_does_not_hide_the_latest_good_one(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "20260101-good", throughput=[100.0, 99.0], seed=2)
    make_run(tmp_path / "r" / "20260102-bad", throughput=[100.0, 99.0], seed=3)
    (tmp_path / "r" / "20260102-bad" / "run.json").write_text("{damaged")
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r"), "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["replays"][0]["path"].endswith("20260101-good")


def test_a_run_a_hard_kill_left_unfinished_is_never_a_result(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "killed", throughput=[50.0, 51.0], seed=2)
    partial = tmp_path / "r" / ".killed.partial"
    (tmp_path / "r" / "killed").replace(partial)
    (partial / "run.json").unlink()  # killed before its record was written
    for test in ("SingleStream", "Offline"):
        run = partial / test / "performance" / "run_1"
        run.mkdir(parents=True, exist_ok=True)
        (run / "mlperf_log_summary.txt").write_text("Result is : VALID\nSamples per second: 1\n")
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r" / "original"), str(partial)]
    )
    assert result.exit_code == 2, result.output
    assert "a run that never finished" in result.output


def test_a_copied_run_folder_is_the_same_run(tmp_path: Path) -> None:
    import shutil

    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "a", throughput=[100.0, 99.0], seed=2)
    shutil.copytree(tmp_path / "r" / "a", tmp_path / "copy" / "a")
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(tmp_path / "r" / "original"),
            str(tmp_path / "r" / "a"),
            str(tmp_path / "copy" / "a"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "is given again (as" in result.output


def test_a_run_in_a_folder_not_of_its_id_is_refused(tmp_path: Path) -> None:
    """`spec_name` and `run_id` that disagree with the embedded spec and the folder were taken
    at their word (report, catalog sync: `../../outside` became an experiment)."""
    import shutil

    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "a", throughput=[100.0, 99.0], seed=2)
    shutil.copytree(tmp_path / "r" / "a", tmp_path / "renamed")
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "renamed")]
    )
    assert result.exit_code == 2, result.output
    assert "$.run_id is 'a', not its folder's name 'renamed'" in result.output


def test_a_side_of_an_interleaved_pair_is_never_the_latest_replay(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    make_run(tmp_path / "r" / "20260101-plain", throughput=[100.0, 99.0], seed=2)
    make_run(tmp_path / "r" / "20260102-aa-baseline", throughput=[100.0, 99.0], seed=3)
    record_path = tmp_path / "r" / "20260102-aa-baseline" / "run.json"
    record = json.loads(record_path.read_text())
    record["interleave"] = {"pair": "x", "side": "baseline", "seed": 1, "rounds": 2}
    record["finished_utc"] = "2099-01-01T00:00:00+00:00"
    record_path.write_text(json.dumps(record))
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r"), "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["replays"][0]["path"].endswith("20260101-plain")


def test_a_run_compared_with_its_own_copy_is_refused(tmp_path: Path) -> None:
    import shutil

    make_run(tmp_path / "r" / "original", throughput=[100.0, 101.0])
    shutil.copytree(tmp_path / "r" / "original", tmp_path / "copy" / "original")
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(tmp_path / "r" / "original"),
            str(tmp_path / "copy" / "original"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "are one run" in result.output


def test_a_results_folder_without_an_original_says_so_and_what_to_do(tmp_path: Path) -> None:
    """`repro report --compare results/torch-resnet50/` said the folder was "not ... a
    results/<name>/ folder"."""
    make_run(tmp_path / "r" / "a", throughput=[100.0])
    make_run(tmp_path / "r" / "b", throughput=[101.0])
    result = CliRunner().invoke(cli, ["report", "--compare", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "holds 2 run(s) (a, b) but no original (r/original/)" in result.output
    assert "repro capture --from SPEC" in result.output
