"""Published MLPerf trees at any level, on either side of a report; the scenario from the log."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.mlperf.tree import find_results, read_mlperf_result
from tests.helpers import make_run, published_result


def _report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_every_level_of_a_tree_finds_its_results(tmp_path: Path) -> None:
    sdir = published_result(tmp_path, folder="offline")
    published_result(tmp_path, folder="server", scenario="Server")
    other = published_result(tmp_path, system="other", benchmark="retinanet")
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
    sdir = published_result(tmp_path)
    for place in (
        sdir / "TEST04",
        tmp_path / "closed" / "Acme" / "compliance" / "box" / "resnet50" / "offline" / "TEST01",
    ):
        (place / "performance" / "run_1").mkdir(parents=True)
        (place / "performance" / "run_1" / "mlperf_log_summary.txt").write_text("x")
        (place / "verify_performance.txt").write_text("reference score = 1\nTEST PASS\n")
    test01 = tmp_path / "closed" / "Acme" / "compliance" / "box" / "resnet50" / "offline"
    (test01 / "TEST01" / "verify_accuracy.txt").write_text("TEST PASS\n")
    make_run(tmp_path / "repro" / "ort" / "original", throughput=[10.0])
    assert find_results(tmp_path) == [sdir.parent]
    record = read_mlperf_result(sdir.parent)
    assert record.environment["compliance"]["Offline"] == {
        "TEST01": {"accuracy": "PASS", "performance": "PASS"},
        "TEST04": {"performance": "PASS"},
    }
    assert any("compliance, Offline: TEST01 accuracy:PASS" in n for n in record.notes)


def test_the_scenario_comes_from_the_log_and_copies_are_read_once(tmp_path: Path) -> None:
    """Edge submissions hold copies of the SingleStream run under offline/ and multistream/."""
    for folder in ("singlestream", "offline", "multistream"):
        published_result(tmp_path, folder=folder, scenario="SingleStream")
    bench = tmp_path / "closed" / "Acme" / "results" / "box" / "resnet50"
    record = read_mlperf_result(bench)
    assert {t.scenario for t in record.tests} == {"SingleStream"}
    perf = [t for t in record.tests if t.mode == "performance"]
    assert len(perf) == 1
    assert perf[0].dir.startswith("singlestream/")  # the folder named after it, not a copy
    assert any(
        "the folder says MultiStream, LoadGen's log says SingleStream" in n for n in record.notes
    )
    assert any(
        "byte-identical copy of the SingleStream run in singlestream/" in n for n in record.notes
    )


def test_an_unknown_scenario_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    sdir = published_result(tmp_path, folder="batchmode", scenario="Batch")
    with pytest.raises(Exception, match="batchmode: neither the folder name nor LoadGen"):
        read_mlperf_result(sdir.parent)


def test_a_published_result_on_either_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = published_result(tmp_path / "a", sps=100.0).parent
    b = published_result(tmp_path / "b", sps=101.0).parent
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(a), str(a))
    assert code == 2, out
    assert "is on both sides" in out
    code, out = _report("--compare", str(a), str(b))
    assert code == 0, out
    assert "reports/resnet50/closed-Acme-box-vs-closed-Acme-box/report." in out


def test_trees_pair_by_benchmark_and_system_and_list_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for root, sps in ((tmp_path / "v1", 100.0), (tmp_path / "v2", 150.0)):
        published_result(root, system="box", sps=sps)
        published_result(root, system="big", sps=sps * 2)
    published_result(tmp_path / "v2", system="new", benchmark="bert-99", accuracy=None)
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(tmp_path / "v1"), str(tmp_path / "v2"))
    assert code == 1, out  # +50 % throughput: not reproduced
    assert "closed-Acme-box-vs-closed-Acme-box" in out
    assert "closed-Acme-big-vs-closed-Acme-big" in out
    assert "not paired:" in out
    assert "bert-99" in out
    assert Path("reports/resnet50/closed-Acme-box-vs-closed-Acme-box/report.json").is_file()


def test_different_benchmarks_are_refused_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = published_result(tmp_path / "a").parent
    b = published_result(tmp_path / "b", benchmark="retinanet").parent
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(a), str(b))
    assert code == 2
    assert "different benchmarks" in out
    code, out = _report("--compare", str(a), str(b), "--allow-different-benchmarks")
    assert code == 0, out
    assert "FOR INFORMATION ONLY, different benchmarks (resnet50 vs retinanet)" in out
    assert "not comparable: different benchmarks" in out


@pytest.mark.parametrize("published_first", [True, False])
def test_a_published_result_and_a_repro_run_of_another_benchmark_are_refused(
    tmp_path: Path, published_first: bool
) -> None:
    published = published_result(tmp_path / "tree").parent  # resnet50, top1 76 %
    run = make_run(tmp_path / "r" / "original", throughput=[100.0], accuracy=0.98)  # "synthetic"
    sides = [str(published), str(run)] if published_first else [str(run), str(published)]
    out_dir = str(tmp_path / "out")
    code, out = _report("-o", out_dir, "--compare", *sides)
    assert code == 2, out
    assert "different benchmarks are not a reproduction" in out
    assert "'resnet50'" in out
    assert "'synthetic'" in out
    code, out = _report("-o", out_dir, "--compare", *sides, "--allow-different-benchmarks")
    assert code == 0, out
    assert "FOR INFORMATION ONLY, different benchmarks (resnet50 vs synthetic)" in out
    # for information only: 76 % against 98 % of two models is judged neither way
    code, shown = _report(
        "-o", out_dir, "--compare", *sides, "--allow-different-benchmarks", "--json"
    )
    report, _ = json.JSONDecoder().raw_decode(shown[shown.index("{") :])
    rows = [m for sc in report["scenarios"] for m in sc["metrics"]]
    assert rows
    assert {m["verdict"] for m in rows} == {"not comparable: different benchmarks"}
    assert report["verdict"] == "not comparable: different benchmarks"
    strict, _ = _report(
        "-o", out_dir, "--compare", *sides, "--allow-different-benchmarks", "--strict"
    )
    assert strict == 1


@pytest.mark.parametrize("published_first", [True, False])
def test_published_resnet50_is_not_compared_with_the_digits_original_in_either_direction(
    root: Path, shared_fixtures: Path, tmp_path: Path, published_first: bool
) -> None:
    """The issue's case: a real published ResNet-50 result against the shipped ort-digits
    original said 75.73 % vs 97.78 % "reproduced" (exit 0), the other way "not reproduced"."""
    published = (
        shared_fixtures
        / "mlperf"
        / "inference_results_v4.1"
        / "closed"
        / "Intel"
        / "results"
        / "1-node-2S-EMR-PyTorch"
        / "resnet50"
    )
    digits = root / "results" / "ort-digits" / "original"
    sides = [str(published), str(digits)] if published_first else [str(digits), str(published)]
    code, out = _report("-o", str(tmp_path / "out"), "--compare", *sides)
    assert code == 2, out
    assert "different benchmarks are not a reproduction" in out
    assert not (tmp_path / "out").exists()
    # a spec that stands in for the benchmark names it among its tags: compared as before
    resnet = root / "results" / "ort-resnet50" / "original"
    sides = [str(published), str(resnet)] if published_first else [str(resnet), str(published)]
    code, out = _report("-o", str(tmp_path / "out"), "--compare", *sides)
    assert code in (0, 1), out
    assert "FOR INFORMATION ONLY" not in out


def test_a_level_with_several_results_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published_result(tmp_path, system="box")
    published_result(tmp_path, system="big")
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(tmp_path / "closed"))
    assert code == 2
    assert "holds 2 published results" in out


@pytest.mark.parametrize(
    ("benchmark", "original", "replay", "label", "code"),
    [
        ("retinanet", "mAP=37.572%\nhash=1\n", "mAP=37.500%\nhash=2\n", "mAP", 0),
        (
            "bert-99",
            '{"exact_match": 83.6, "f1": 90.87}\n',
            '{"exact_match": 80.0, "f1": 85.0}\n',
            "f1",
            1,
        ),
        (
            "whisper",
            "Word Error Rate: 2.00%, accuracy=98.00%\n",
            "Word Error Rate: 2.10%, accuracy=97.90%\n",
            "WER, lower is better",
            1,
        ),
    ],
)
def test_each_accuracy_format_is_judged_by_its_name_and_direction(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    benchmark: str,
    original: str,
    replay: str,
    label: str,
    code: int,
) -> None:
    a = published_result(tmp_path / "a", benchmark=benchmark, accuracy=original).parent
    b = published_result(tmp_path / "b", benchmark=benchmark, accuracy=replay).parent
    monkeypatch.chdir(tmp_path)
    got, out = _report("--compare", str(a), str(b))
    assert got == code, out
    report = json.loads(next((tmp_path / "reports" / benchmark).glob("*/report.json")).read_text())
    accuracy = next(
        m for s in report["scenarios"] for m in s["metrics"] if m["metric"] == "accuracy"
    )
    assert accuracy["label"] == f"accuracy ({label})"


_DETAIL = (
    ':::MLLOG {"key": "result_validity", "value": "VALID", "time_ms": 1.0}\n'
    ':::MLLOG {"key": "result_samples_per_second", "value": 100.0, "time_ms": 1.0}\n'
)

_LLM_LINES = """Completed tokens per second: {tps}
99.00 percentile first token latency (ns)   : 674674289
99.00 percentile time to output token (ns)   : 191656553
"""


def _llm_result(root: Path, *, tps: float) -> Path:
    """llama2-70b: Server and Offline runs that count tokens, and interactive/ Server runs."""
    bench = root / "closed" / "Acme" / "results" / "box" / "llama2-70b-99"
    for folder, scenario in (
        ("server", "Server"),
        ("offline", "Offline"),
        ("interactive", "Server"),
    ):
        sdir = published_result(
            root,
            benchmark="llama2-70b-99",
            folder=folder,
            scenario=scenario,
            accuracy="{'rouge1': 44.4, 'rouge2': 22.0, 'rougeL': 28.6}\nhash=1\n",
        )
        summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
        summary.write_text(summary.read_text() + _LLM_LINES.format(tps=tps))
    return bench


def test_an_llm_result_is_judged_on_tokens_and_interactive_stands_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _llm_result(tmp_path / "a", tps=1000.0), _llm_result(tmp_path / "b", tps=1300.0)
    record = read_mlperf_result(a)
    server = record.performance("Server")
    assert len(server) == 1  # interactive/ is not read as a second Server
    assert server[0].metrics["tokens_per_second"] == 1000.0
    assert server[0].metrics["ttft_p99_ns"] == 674674289
    assert server[0].metrics["tpot_p99_ns"] == 191656553
    assert any(
        "interactive/: Server runs under interactive latency bounds" in n for n in record.notes
    )
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(a), str(b))
    assert code == 1, out  # +30 % tokens/s
    report = json.loads(next((tmp_path / "reports").glob("*/*/report.json")).read_text())
    judged = {
        (s["scenario"], m["metric"])
        for s in report["scenarios"]
        for m in s["metrics"]
        if m["judged"]
    }
    assert ("Server", "tokens_per_second") in judged
    assert ("Offline", "tokens_per_second") in judged
    assert ("Offline", "samples_per_second") not in judged
    labels = [m["label"] for s in report["scenarios"] for m in s["metrics"]]
    assert "tokens/s (MLPerf metric)" in labels
    assert "throughput" in labels  # samples/s shown, not labelled the MLPerf metric
    code, out = _report("--compare", str(a / "interactive"), str(b / "interactive"))
    assert code == 1, out
    folders = {p.parent.name for p in (tmp_path / "reports").glob("*/*/report.json")}
    assert len(folders) == 1  # the interactive report did not overwrite the main one's folder
    assert len(list((tmp_path / "reports").glob("*/*/report.json"))) == 2


def test_a_number_stored_as_text_in_a_system_description_is_no_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sides = []
    for root, count in ((tmp_path / "a", "8"), (tmp_path / "b", 8)):
        bench = published_result(root).parent
        desc = root / "closed" / "Acme" / "systems" / "box.json"
        desc.write_text(
            json.dumps({"host_processor_model_name": "Xeon", "accelerators_per_node": count})
        )
        sides.append(bench)
    assert read_mlperf_result(sides[0]).fingerprint["hardware"]["accelerators_per_node"] == 8
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(sides[0]), str(sides[1]), "--json")
    assert code == 0, out
    assert "accelerators_per_node" not in out


def test_pairing_does_not_depend_on_order_and_knows_divisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published_result(tmp_path / "v1", system="alpha")
    published_result(tmp_path / "v1", system="box")
    published_result(tmp_path / "v2", system="box")
    for division in ("closed", "open"):  # the same system in both divisions of both rounds
        published_result(tmp_path / "v1", system="twin", benchmark="bert-99", division=division)
        published_result(tmp_path / "v2", system="twin", benchmark="bert-99", division=division)
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(tmp_path / "v1"), str(tmp_path / "v2"))
    assert code == 0, out
    assert "closed-Acme-box-vs-closed-Acme-box" in out
    assert "closed-Acme-twin-vs-closed-Acme-twin" in out
    assert "open-Acme-twin-vs-open-Acme-twin" in out
    assert "not paired:" in out
    assert "alpha" in out.split("not paired:", 1)[1]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("accuracy", "top1 = 1.76078 is not a fraction"),
        ("nan", "samples_per_second is nan, not a positive number"),
        ("negative", "samples_per_second is -5.0, not a positive number"),
        ("truncated", "no 'Result is : VALID' or 'INVALID' line"),
        ("other-run", "holds a Server run that differs from the one in server/"),
        ("summary-only", "mlperf_log_summary.txt: no 'Result is : VALID'"),
        ("detail-nan", "mlperf_log_detail.txt: samples_per_second is nan"),
        ("missing-summary", "no LoadGen summary (run_k/mlperf_log_summary.txt) can be read"),
    ],
)
def test_a_damaged_published_tree_is_an_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str, message: str
) -> None:
    """Damaged input is never read as good data (no silent NaN, no 176 % accuracy)."""
    good = published_result(tmp_path / "good").parent
    sdir = published_result(tmp_path / "bad", sps=-5.0 if damage == "negative" else 100.0)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    if damage == "accuracy":
        (sdir / "accuracy" / "accuracy.txt").write_text("accuracy=176.078%, good=1, total=1\n")
    elif damage == "nan":
        summary.write_text(
            summary.read_text().replace("Samples per second: 100.0", "Samples per second: nan")
        )
    elif damage == "truncated":
        summary.write_text(summary.read_text()[:120])
    elif damage == "summary-only":  # a good detail log must not hide a damaged summary
        (summary.parent / "mlperf_log_detail.txt").write_text(_DETAIL)
        summary.write_text("")
    elif damage == "detail-nan":  # the damaged detail log is named, not the summary
        detail = _DETAIL.replace('"value": 100.0', '"value": NaN')
        (summary.parent / "mlperf_log_detail.txt").write_text(detail)
    elif damage == "missing-summary":
        published_result(tmp_path / "bad", folder="server", scenario="Server")
        summary.unlink()
    elif damage == "other-run":
        published_result(tmp_path / "bad", folder="server", scenario="Server", sps=7.0)
        summary.write_text(summary.read_text().replace("Scenario : Offline", "Scenario : Server"))
    monkeypatch.chdir(tmp_path)
    code, out = _report("--compare", str(good), str(sdir.parent))
    assert code == 2, out
    assert message in out
    assert str(tmp_path / "bad") in out
    if damage != "detail-nan":  # the table reads the summaries only (fast), the report both
        result = CliRunner().invoke(cli, ["results", str(sdir.parent)])
        assert result.exit_code == 0, result.output  # listed as unreadable, the table goes on
        assert "1 could not be read" in result.stderr
        assert message in result.stderr
        result = CliRunner().invoke(cli, ["results", str(sdir.parent), "--strict"])
        assert result.exit_code == 2, result.output


def test_an_output_that_cannot_be_written_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = published_result(tmp_path / "t").parent
    (tmp_path / "afile").write_text("x")
    runner = CliRunner()
    result = runner.invoke(cli, ["results", str(bench), "--csv", str(tmp_path / "afile" / "x.csv")])
    assert result.exit_code == 3, result.output
    assert "afile" in result.output
    assert "internal error" not in result.output
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # a pipe is never replaced by a regular file
    result = runner.invoke(cli, ["results", str(bench), "--csv", str(fifo)])
    assert result.exit_code == 2, result.output
    assert "is not a regular file" in result.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_damaged_system_description_is_said(tmp_path: Path) -> None:
    bench = published_result(tmp_path).parent
    (tmp_path / "closed" / "Acme" / "systems" / "box.json").write_text("[1, 2]")
    record = read_mlperf_result(bench)
    assert any("box.json: not a JSON object: the hardware is unknown" in n for n in record.notes)


def _old_server(tmp_path: Path) -> Path:
    """A LoadGen 4.0 Server summary: the scheduled rate is the headline (MLPerf's metric up to
    v4.0), the completed one an additional stat."""
    sdir = published_result(tmp_path, folder="server", scenario="Server")
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    text = summary.read_text()
    head = next(line for line in text.splitlines() if line.startswith("Samples per second"))
    summary.write_text(
        text.replace(head, "Scheduled samples per second : 22505.84").replace(
            "50.00 percentile", "Completed samples per second : 20001.0\n50.00 percentile"
        )
    )
    return sdir


def test_a_v40_server_result_is_judged_on_its_scheduled_rate(tmp_path: Path) -> None:
    sdir = _old_server(tmp_path / "a")
    record = read_mlperf_result(sdir)
    test = record.performance("Server")[0]
    assert test.metrics["mlperf_metric"] == "scheduled_samples_per_second"
    assert test.metrics["scheduled_samples_per_second"] == 22505.84
    assert test.metrics["samples_per_second"] == 20001.0  # completed: shown, not judged
    from repro.mlperf.published import rows_of

    (row,) = rows_of(sdir, record)
    assert (row["metric"], row["value"]) == ("scheduled_samples_per_second", 22505.84)
    # against a result whose completed rate differs by 12 % but whose scheduled rate does not
    other = _old_server(tmp_path / "b")
    summary = other / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace(": 20001.0", ": 22500.0"))
    code, out = _report("--compare", str(sdir), str(other), "-o", str(tmp_path / "r"))
    assert code == 0, out
    assert "scheduled samples/s (MLPerf metric)" in (tmp_path / "r" / "report.md").read_text()


def test_a_summary_and_a_detail_log_that_disagree_are_refused(tmp_path: Path) -> None:
    sdir = published_result(tmp_path)
    run = sdir / "performance" / "run_1"
    record = {"key": "result_samples_per_second", "value": 30000.5}
    (run / "mlperf_log_detail.txt").write_text(
        f':::MLLOG {{"key": "result_validity", "value": "VALID"}}\n:::MLLOG {json.dumps(record)}\n'
    )
    with pytest.raises(SpecError, match=r"disagree on samples_per_second: .*30000\.5"):
        read_mlperf_result(sdir)
    # a detail log that only repeats the summary (rounded) is read
    record["value"] = 100.00001
    (run / "mlperf_log_detail.txt").write_text(
        f':::MLLOG {{"key": "result_validity", "value": "VALID"}}\n:::MLLOG {json.dumps(record)}\n'
    )
    assert read_mlperf_result(sdir).performance("Offline")[0].metrics["samples_per_second"]


@pytest.mark.parametrize(
    "detail",
    [b"", b"\x8f\x00\xfe random bytes \x01\x02" * 100, b":::MLLOG {not json}\n"],
    ids=["empty", "random-bytes", "no-record"],
)
def test_a_detail_log_without_a_validity_record_is_refused(tmp_path: Path, detail: bytes) -> None:
    """The checker reads the run from its detail log: an empty or random-bytes one was ignored
    without a note (and imported)."""
    sdir = published_result(tmp_path)
    (sdir / "performance" / "run_1" / "mlperf_log_detail.txt").write_bytes(detail)
    with pytest.raises(SpecError, match=r"no result_validity record .*the detail log is empty"):
        read_mlperf_result(sdir)


def test_a_log_larger_than_any_loadgen_log_is_refused_unread(tmp_path: Path) -> None:
    """A 2 GB summary was read whole (a MemoryError, exit 4): what is read is capped."""
    from repro.runs.loadgen_logs import MAX_SUMMARY_BYTES

    sdir = published_result(tmp_path)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    with summary.open("ab") as fh:
        fh.truncate(MAX_SUMMARY_BYTES + 10)  # sparse: no disk, the size a reader would face
    with pytest.raises(SpecError, match=r"larger than any LoadGen mlperf_log_summary\.txt"):
        read_mlperf_result(sdir)


def test_v1_compliance_halves_are_read(tmp_path: Path) -> None:
    """LoadGen 1.x's TEST04 ran in two halves, TEST04-A and TEST04-B: a failing half fails."""
    sdir = published_result(tmp_path)
    for half, verdict in (("TEST04-A", "PASS"), ("TEST04-B", "FAIL")):
        place = sdir / half
        (place / "performance" / "run_1").mkdir(parents=True)
        (place / "performance" / "run_1" / "mlperf_log_summary.txt").write_text("x")
        (place / "verify_performance.txt").write_text(f"TEST {verdict}\n")
    assert find_results(tmp_path) == [sdir.parent]
    checks = read_mlperf_result(sdir.parent).environment["compliance"]["Offline"]
    assert checks == {"TEST04-A": {"performance": "PASS"}, "TEST04-B": {"performance": "FAIL"}}


def test_the_round_is_a_folder_that_names_one(tmp_path: Path) -> None:
    from repro.mlperf.tree import round_of

    for name, expected in (
        ("inference_results_v4.1", "v4.1"),
        ("mlperf_inference_submissions_v5.0", "v5.0"),
        ("v3.1", "v3.1"),
        ("venv3.11", None),
        ("python-v3.10", None),
    ):
        sdir = published_result(tmp_path / name / "x")
        assert round_of(sdir) == expected, name


def test_odd_system_description_fields_are_text(tmp_path: Path) -> None:
    sdir = published_result(tmp_path)
    (sdir.parents[3] / "systems" / "box.json").write_text(
        json.dumps(
            {
                "accelerator_model_name": ["NVIDIA H100 \u2713", None],
                "host_processor_model_name": 12345,
                "framework": {"name": "x"},
                "number_of_nodes": "4",
            }
        )
    )
    hardware = read_mlperf_result(sdir).fingerprint["hardware"]
    assert hardware["accelerators"] == "NVIDIA H100 \u2713"
    assert hardware["cpu"]["model"] == "12345"
    assert hardware["nodes"] == 4
    assert read_mlperf_result(sdir).environment["framework"] is None


def test_a_v1_multistream_result_is_its_samples_per_query(tmp_path: Path) -> None:
    """LoadGen 1.x's MultiStream headline is the streams a run sustained within its bound."""
    sdir = published_result(tmp_path, folder="multistream", scenario="MultiStream")
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    text = summary.read_text()
    head = next(line for line in text.splitlines() if line.startswith("Samples per second"))
    summary.write_text(text.replace(head, "Samples per query : 8"))
    from repro.mlperf.published import rows_of

    (row,) = rows_of(sdir, read_mlperf_result(sdir))
    assert (row["metric"], row["value"], row["unit"]) == ("samples_per_query", 8, "samples/query")


def test_compliance_is_found_whatever_the_scenario_folder_case(tmp_path: Path) -> None:
    sdir = published_result(tmp_path, folder="Offline")
    test = sdir.parents[3] / "compliance" / "box" / "resnet50" / "offline" / "TEST01"
    test.mkdir(parents=True)
    (test / "verify_performance.txt").write_text("TEST PASS\n")
    (test / "verify_accuracy.txt").write_text("TEST PASS\n")
    checks = read_mlperf_result(sdir.parent).environment["compliance"]["Offline"]
    assert checks == {"TEST01": {"accuracy": "PASS", "performance": "PASS"}}


def test_a_number_too_large_for_a_float_is_a_damaged_log(tmp_path: Path) -> None:
    sdir = published_result(tmp_path)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace(": 100.0", ": 1" + "0" * 400))
    with pytest.raises(SpecError, match="not a positive number"):
        read_mlperf_result(sdir)
