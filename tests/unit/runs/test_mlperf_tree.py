"""Published MLPerf trees at any level, on either side of a report; the scenario from the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.mlperf import find_results, read_mlperf_result
from tests.fakes import SUMMARY
from tests.helpers import make_run


def _result(
    root: Path,
    *,
    submitter: str = "Acme",
    system: str = "box",
    benchmark: str = "resnet50",
    folder: str = "offline",
    scenario: str = "Offline",
    sps: float = 100.0,
    accuracy: str | None = "accuracy=76.000%, good=38000, total=50000\nhash=abc\n",
    division: str = "closed",
) -> Path:
    """One published scenario folder (and the system description), as submissions lay it out."""
    sub = root / division / submitter
    sdir = sub / "results" / system / benchmark / folder
    run = sdir / "performance" / "run_1"
    run.mkdir(parents=True, exist_ok=True)
    (run / "mlperf_log_summary.txt").write_text(
        SUMMARY.format(
            scenario=scenario,
            mode="PerformanceOnly",
            sps=sps,
            validity="VALID",
            p50=1_000_000,
            p90=2_000_000,
            p99=3_000_000,
        )
    )
    if accuracy is not None:
        (sdir / "accuracy").mkdir(exist_ok=True)
        (sdir / "accuracy" / "accuracy.txt").write_text(accuracy)
    (sub / "systems").mkdir(exist_ok=True)
    (sub / "systems" / f"{system}.json").write_text(
        json.dumps({"host_processor_model_name": "Xeon", "accelerator_model_name": "N/A"})
    )
    return sdir


def _report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_every_level_of_a_tree_finds_its_results(tmp_path: Path) -> None:
    sdir = _result(tmp_path, folder="offline")
    _result(tmp_path, folder="server", scenario="Server")
    other = _result(tmp_path, system="other", benchmark="retinanet")
    bench = sdir.parent
    assert find_results(tmp_path) == sorted([bench, other.parent])
    for level in (tmp_path / "closed", tmp_path / "closed" / "Acme", bench.parents[1]):
        assert find_results(level) == sorted([bench, other.parent]), level
    assert find_results(bench.parent) == [bench]
    assert find_results(bench) == [bench]
    assert find_results(sdir) == [sdir]
    assert find_results(sdir / "performance") == [sdir]
    assert find_results(sdir / "performance" / "run_1") == [sdir]


def test_compliance_runs_and_repro_runs_are_not_results(tmp_path: Path) -> None:
    sdir = _result(tmp_path)
    for place in (sdir / "TEST04", tmp_path / "closed" / "Acme" / "compliance" / "box"
                  / "resnet50" / "offline" / "TEST01"):  # fmt: skip
        (place / "performance" / "run_1").mkdir(parents=True)
        (place / "performance" / "run_1" / "mlperf_log_summary.txt").write_text("x")
        (place / "verify_performance.txt").write_text("reference score = 1\nTEST PASS\n")
    make_run(tmp_path / "repro" / "ort" / "original", throughput=[10.0])
    assert find_results(tmp_path) == [sdir.parent]
    record = read_mlperf_result(sdir.parent)
    assert record.environment["compliance"]["Offline"] == {
        "TEST01": {"performance": "PASS"},
        "TEST04": {"performance": "PASS"},
    }
    assert any("compliance, Offline: TEST01 performance PASS" in n for n in record.notes)


def test_the_scenario_comes_from_the_log_and_copies_are_read_once(tmp_path: Path) -> None:
    """Edge submissions hold copies of the SingleStream run under offline/ and multistream/."""
    for folder in ("singlestream", "offline", "multistream"):
        _result(tmp_path, folder=folder, scenario="SingleStream")
    bench = tmp_path / "closed" / "Acme" / "results" / "box" / "resnet50"
    record = read_mlperf_result(bench)
    assert {t.scenario for t in record.tests} == {"SingleStream"}
    assert len([t for t in record.tests if t.mode == "performance"]) == 1
    assert any("the folder says MultiStream, LoadGen's log says SingleStream" in n
               for n in record.notes)  # fmt: skip
    assert any("byte-identical copy of the SingleStream run" in n for n in record.notes)


def test_an_unknown_scenario_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    sdir = _result(tmp_path, folder="batchmode", scenario="Batch")
    with pytest.raises(Exception, match="batchmode: neither the folder name nor LoadGen"):
        read_mlperf_result(sdir.parent)


def test_a_published_result_on_either_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _result(tmp_path / "a", sps=100.0).parent
    b = _result(tmp_path / "b", sps=101.0).parent
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(a), str(a))
    assert code == 0, out
    code, out = _report("--compare", str(a), str(b))
    assert code == 0, out
    assert "reports/resnet50/Acme-box-vs-Acme-box/report." in out


def test_trees_pair_by_benchmark_and_system_and_list_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for root, sps in ((tmp_path / "v1", 100.0), (tmp_path / "v2", 150.0)):
        _result(root, system="box", sps=sps)
        _result(root, system="big", sps=sps * 2)
    _result(tmp_path / "v2", system="new", benchmark="bert-99", accuracy=None)
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(tmp_path / "v1"), str(tmp_path / "v2"))
    assert code == 1, out  # +50 % throughput: not reproduced
    assert "Acme-box-vs-Acme-box" in out
    assert "Acme-big-vs-Acme-big" in out
    assert "not paired:" in out
    assert "bert-99" in out
    assert Path("reports/resnet50/Acme-box-vs-Acme-box/report.json").is_file()


def test_different_benchmarks_are_refused_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _result(tmp_path / "a").parent
    b = _result(tmp_path / "b", benchmark="retinanet").parent
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(a), str(b))
    assert code == 2
    assert "different benchmarks" in out
    code, out = _report("--compare", str(a), str(b), "--allow-different-benchmarks")
    assert code in (0, 1), out


def test_a_level_with_several_results_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _result(tmp_path, system="box")
    _result(tmp_path, system="big")
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(tmp_path / "closed"))
    assert code == 2
    assert "holds 2 published results" in out
