"""Patterns of whole published rounds, each made by tests/mlperf_gen.py: a genuine result is
read, never refused as edited, and its headline is the one the round's checker takes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro.errors import SpecError
from repro.mlperf.tree import read_mlperf_result
from tests.mlperf_gen import Result, write_result


def _read(tmp_path: Path, r: Result) -> dict[str, object]:
    record = read_mlperf_result(write_result(tmp_path, r).parent)
    return record.performance(r.scenario)[0].metrics


def test_a_v2_multistream_result_is_its_per_query_p99_not_the_per_sample_one(
    tmp_path: Path,
) -> None:
    r = Result(scenario="MultiStream", loadgen="2.1.0", value=45_433_218, sample_p99_ns=30_000_000)
    metrics = _read(tmp_path, r)
    assert metrics["latency_p99_ns"] == 45_433_218
    assert metrics["sample_latency_p99_ns"] == 30_000_000


def test_a_v6_multistream_log_states_the_figure_once(tmp_path: Path) -> None:
    metrics = _read(tmp_path, Result(scenario="MultiStream", loadgen="6.0.17", value=50_152))
    assert metrics["latency_p99_ns"] == 50_152
    assert "sample_latency_p99_ns" not in metrics


@pytest.mark.parametrize("value", [0.4951, 12.345, 2531.005])
def test_a_server_summary_rounded_to_two_decimals_agrees_with_its_detail_log(
    tmp_path: Path, value: float
) -> None:
    r = Result(scenario="Server", value=value, summary_decimals=2)
    assert _read(tmp_path, r)["samples_per_second"] == value  # the detail log's exact figure


def test_a_summary_that_differs_beyond_its_rounding_is_still_refused(tmp_path: Path) -> None:
    r = Result(scenario="Server", value=0.4951, summary_decimals=2)
    sdir = write_result(tmp_path, r)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace(": 0.50", ": 0.52"))
    with pytest.raises(SpecError, match="disagree on samples_per_second"):
        read_mlperf_result(sdir.parent)


@pytest.mark.parametrize(
    ("round_", "loadgen", "value", "shown"),
    [
        ("v4.1", "4.1.0", 0.4951, 0.4951),  # `0.50` in the summary: 1 % off, the detail log's
        ("v4.1", "4.1.0", 12.345, 12.345),  # `12.35`: 0.04 % off
        ("v2.1", "2.1.0", 0.4951, 0.4951 * 1.0004),  # v2.1 takes the scheduled rate
        ("v4.1", "4.1.0", 2531.005, 2531.005),  # `2531.01` printed: the checker's is 2531.005
    ],
)
def test_the_table_takes_a_coarsely_printed_server_rate_from_the_detail_log(
    tmp_path: Path, round_: str, loadgen: str, value: float, shown: float
) -> None:
    """The table reads each run's detail log, as the checker does (`get_performance_metric`
    reads mlperf_log_detail.txt): a rate the summary prints to two decimals is the detail
    log's figure."""
    r = Result(round=round_, loadgen=loadgen, scenario="Server", value=value, summary_decimals=2)
    assert _row(tmp_path, r)["value"] == pytest.approx(shown, rel=1e-12)


def test_a_result_whose_file_cannot_be_read_is_a_row_and_the_round_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the system will not let us read (EACCES, EIO) in one result of a round."""
    import errno
    import os

    from click.testing import CliRunner

    from repro.cli import cli

    tree = tmp_path / "inference_results_v6.0"
    write_result(tree, Result(round="v6.0", submitter="Good", loadgen="6.0.17"))
    odd = write_result(tree, Result(round="v6.0", division="open", submitter="Odd"))
    locked = odd / "performance" / "run_1" / "mlperf_log_summary.txt"
    opened = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    result = CliRunner().invoke(cli, ["results", str(tree), "--csv", str(tmp_path / "t.csv")])
    assert result.exit_code == 0, result.output
    assert f"{locked}: cannot be read: Permission denied" in result.stderr
    assert "1 could not be read" in result.stderr
    good = write_result(tmp_path / "b" / "inference_results_v6.0", Result(round="v6.0"))
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tree), str(good.parents[4]), "-o", str(tmp_path / "r")]
    )
    assert result.exit_code in (0, 1), result.output
    assert f"not read: {locked}: cannot be read: Permission denied" in result.stderr


def test_a_round_is_walked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`repro results` walked the round twice (once to see it held a result): 0.4 s of 5."""
    from click.testing import CliRunner

    from repro.cli import cli
    from repro.mlperf import tree as tree_module

    tree = tmp_path / "inference_results_v4.1"
    for system in ("a", "b", "c"):
        write_result(tree, Result(system=system))
    met: list[Path] = []
    summaries = tree_module._summaries

    def counted(path: Path) -> Iterator[Path]:
        for summary in summaries(path):
            met.append(summary)
            yield summary

    monkeypatch.setattr(tree_module, "_summaries", counted)
    result = CliRunner().invoke(cli, ["results", str(tree), "--csv", str(tmp_path / "t.csv")])
    assert result.exit_code == 0, result.output
    assert len(met) == 3 + 1  # the reading meets every summary; the check stops at the first
    assert len((tmp_path / "t.csv").read_text().splitlines()) == 4


def _row(tmp_path: Path, r: Result) -> dict[str, object]:
    from repro.mlperf.published import result_rows

    write_result(tmp_path / f"inference_results_{r.round}", r)
    (row,) = result_rows([tmp_path / f"inference_results_{r.round}"])
    return row


def test_an_llm_edge_singlestream_result_is_its_latency_not_the_tpot_estimate(
    tmp_path: Path,
) -> None:
    r = Result(
        round="v5.1",
        loadgen="5.1.0",
        benchmark="llama3.1-8b-edge",
        scenario="SingleStream",
        llm=True,
        value=4_150_000_000,
        tpot_estimate_ns=21_700_000,
    )
    row = _row(tmp_path, r)
    assert (row["metric"], row["value"]) == ("latency_p90_ns", 4_150_000_000)
    assert "llama3.1-8b-edge: the checker takes the 90th percentile latency" in str(row["notes"])


def test_a_singlestream_result_of_the_99_9th_percentile_is_its_estimate_of_that(
    tmp_path: Path,
) -> None:
    r = Result(benchmark="3d-unet-99", scenario="SingleStream", percentile=99.9, value=2e9)
    row = _row(tmp_path, r)
    assert row["metric"] == "early_stopping_p99.9_ns"
    assert row["value"] == int(2e9 * 1.001)


def test_run_1_is_read_and_a_run_1_2_copy_beside_it_is_not(tmp_path: Path) -> None:
    r = Result(runs=("run_1", "run_1_2"), value=13570.3)
    sdir = write_result(tmp_path / "inference_results_v4.1", r)
    copy = sdir / "performance" / "run_1_2"
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):
        (copy / name).write_text((copy / name).read_text().replace("13570.3", "13663.8"))
    from repro.mlperf.published import result_rows

    (row,) = result_rows([tmp_path / "inference_results_v4.1"])
    assert row["value"] == 13570.3
    assert "run_1_2 not read" in str(row["notes"])


@pytest.mark.parametrize(
    ("round_", "headline", "metric", "rule"),
    [
        ("v4.1", "scheduled", "samples_per_second", "v4.1 rule: the completed rate"),
        ("v4.0", "scheduled", "scheduled_samples_per_second", None),
        ("v4.1", "completed", "samples_per_second", None),
    ],
)
def test_a_server_result_takes_the_rate_its_rounds_checker_takes(
    tmp_path: Path, round_: str, headline: str, metric: str, rule: str | None
) -> None:
    r = Result(round=round_, loadgen="4.0.2", scenario="Server", server_headline=headline)
    row = _row(tmp_path, r)
    assert row["metric"] == metric
    assert (rule in str(row["notes"])) if rule else "rule" not in str(row["notes"])
    record = read_mlperf_result(
        next((tmp_path / f"inference_results_{round_}").rglob("server")).parent
    )
    from repro.mlperf.tree import headline_metric

    assert headline_metric("Server", record.performance("Server"))[0] == metric


def test_two_dlrm_results_printing_auc_on_two_scales_compare_on_one(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from repro.cli import cli

    a = write_result(
        tmp_path / "a", Result(benchmark="dlrm-v2-99", submitter="ASUSTeK", accuracy="AUC=80.17%\n")
    )
    b = write_result(
        tmp_path / "b", Result(benchmark="dlrm-v2-99", submitter="Cisco", accuracy="AUC=80.2379\n")
    )
    out = tmp_path / "r"
    result = CliRunner().invoke(cli, ["report", "--compare", str(a), str(b), "-o", str(out)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads((out / "report.json").read_text())
    rows = [m for s in report["scenarios"] for m in s["metrics"] if m["metric"] == "accuracy"]
    assert [(m["original"], m["replay"]) for m in rows] == [([0.8017], [0.802379])]
    assert "8023" not in (out / "report.md").read_text()


def test_a_round_with_one_unreadable_result_is_read_and_lists_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli
    from repro.reports.table import load_table

    tree = tmp_path / "inference_results_v6.0"
    write_result(tree, Result(round="v6.0", submitter="Good", loadgen="6.0.17"))
    bad = write_result(tree, Result(round="v6.0", division="open", submitter="Odd"))
    (bad / "performance" / "run_1" / "mlperf_log_summary.txt").write_text("Result is : \n")
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["results", str(tree), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 could not be read" in result.stderr
    assert "mlperf_log_summary.txt" in result.stderr
    table = load_table(out)
    assert sorted(table["validity"]) == ["VALID", "unreadable"]
    odd = table[table["validity"] == "unreadable"].iloc[0]
    assert (odd["submitter"], odd["division"], odd["benchmark"]) == ("Odd", "open", "resnet50")
    assert "truncated or damaged" in odd["notes"]
    strict = tmp_path / "strict.csv"
    result = CliRunner().invoke(cli, ["results", str(tree), "--csv", str(strict), "--strict"])
    assert result.exit_code == 2, result.output
    assert not strict.exists()


def test_an_llm_server_result_imports_with_its_token_latency_bounds(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from click.testing import CliRunner

    from repro.cli import cli

    tree = tmp_path / "inference_results_v5.0"
    write_result(
        tree,
        Result(
            round="v5.0",
            loadgen="5.0.25",
            benchmark="llama2-70b-99",
            scenario="Server",
            llm=True,
            value=25_000.0,
            accuracy=None,
        ),
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "import-mlperf",
            str(tree),
            "--base",
            str(root / "specs" / "ort-digits.json"),
            "--scenario",
            "Server",
        ],
    )
    assert result.exit_code == 0, result.output
    (spec_path,) = (tmp_path / "specs").glob("*.json")
    settings = json.loads(spec_path.read_text())["workload"]["scenarios"][0]["settings"]
    assert settings["use_token_latencies"] is True
    assert (settings["ttft_latency"], settings["tpot_latency"]) == (2_000_000_000, 200_000_000)
    # the run had no sample-latency bound (its logs say 0); the base's (ort-digits') is not kept
    assert "server_target_latency_ns" not in settings


def test_token_latency_settings_leave_earlier_spec_ids_alone_and_need_both_bounds(
    root: Path,
) -> None:
    import json

    from pydantic import ValidationError

    from repro.spec.io import load_spec, spec_id
    from repro.spec.models import ExperimentSpec

    spec = load_spec(root / "specs" / "ort-digits.json")  # its committed id still holds
    doc = json.loads((root / "specs" / "ort-digits.json").read_text())
    server = next(s for s in doc["workload"]["scenarios"] if s["scenario"] == "Server")
    server["settings"].update(use_token_latencies=True, ttft_latency=2_000_000_000)
    with pytest.raises(ValidationError, match=r"give settings\.tpot_latency"):
        ExperimentSpec.model_validate(doc)
    server["settings"]["tpot_latency"] = 200_000_000
    assert spec_id(ExperimentSpec.model_validate(doc)) != spec_id(spec)


def test_a_division_with_one_unreadable_result_is_still_compared(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    for tree in ("a", "b"):
        for system in ("box", "odd"):
            write_result(tmp_path / tree, Result(system=system, value=1000.0))
    odd = tmp_path / "a" / "closed" / "Acme" / "results" / "odd" / "resnet50" / "offline"
    summary = odd / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("Result is : VALID", "Result is :"))
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(tmp_path / "a" / "closed"),
            str(tmp_path / "b" / "closed"),
            "-o",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    assert "not read: " in result.stderr
    assert "mlperf_log_summary.txt" in result.stderr
    assert list((tmp_path / "r").rglob("report.json"))


#: the summary line each metric of the table is printed on (LoadGen's wording, 4.0 to 6.0)
_LINES = {
    "samples_per_second": r"^(?:Completed )?[Ss]amples per second\s*:\s*(\S+)",
    "scheduled_samples_per_second": r"^Scheduled samples per second\s*:\s*(\S+)",
    "tokens_per_second": r"^(?:Completed )?[Tt]okens per second\s*:\s*(\S+)",
    "early_stopping_p90_ns": r"Early stopping 90(?:\.0)?th percentile estimate\s*:\s*(\S+)",
    "early_stopping_p99_ns": r"Early stopping 99(?:\.0)?th percentile estimate\s*:\s*(\S+)",
    "latency_p90_ns": r"^90(?:\.0)?th percentile latency \(ns\)\s*:\s*(\S+)",
    "latency_p99_ns": r"^99(?:\.0)?th percentile latency \(ns\)\s*:\s*(\S+)",
}


def test_every_value_of_the_real_rounds_is_the_figure_its_summary_prints(
    shared_fixtures: Path,
) -> None:
    """Each row of the table of the published fixtures, checked against its own file."""
    import re

    from repro.mlperf.published import result_rows

    rounds = sorted(p for p in (shared_fixtures / "mlperf").iterdir() if p.is_dir())
    rows = result_rows(rounds)
    assert len(rows) >= 6
    for row in rows:
        assert row["validity"] in ("VALID", "INVALID"), row
        folder = next(
            d
            for d in Path(row["path"]).iterdir()
            if d.is_dir()
            and (d / "performance" / "run_1").is_dir()
            and row["scenario"].lower() in re.sub(r"[^a-z]", "", d.name.lower())
        )
        text = (folder / "performance" / "run_1" / "mlperf_log_summary.txt").read_text()
        found = re.search(_LINES[row["metric"]], text, re.MULTILINE)
        assert found is not None, (row["metric"], folder)
        assert row["value"] == pytest.approx(float(found.group(1)), rel=1e-12), folder
        validity = re.search(r"^Result is\s*:\s*(\S+)", text, re.MULTILINE)
        assert validity is not None
        assert row["validity"] == validity.group(1)


def test_every_other_figure_of_the_real_rounds_is_the_one_its_file_states(
    shared_fixtures: Path,
) -> None:
    """The rest of each row of the published fixtures against its own file: the accuracy
    against accuracy.txt, the counts against systems/<system>.json, LoadGen's version against
    the detail log, the compliance verdict against the verify_*.txt files."""
    import json
    import re

    from repro.mlperf.published import result_rows

    rounds = sorted(p for p in (shared_fixtures / "mlperf").iterdir() if p.is_dir())
    rows = result_rows(rounds)
    assert len(rows) >= 6
    for row in rows:
        bench = Path(str(row["path"]))
        folder = next(
            d
            for d in bench.iterdir()
            if d.is_dir() and str(row["scenario"]).lower() == d.name.lower()
        )
        printed = re.search(
            r"accuracy=([\d.]+)%", (folder / "accuracy" / "accuracy.txt").read_text()
        )
        assert printed is not None, folder
        assert row["accuracy_metric"] == "top1"
        assert row["accuracy_value"] == pytest.approx(float(printed.group(1)) / 100, rel=1e-12)
        submitter = bench.parents[2]
        desc = json.loads((submitter / "systems" / f"{row['system']}.json").read_text())
        for column, field in (
            ("processor_count", "host_processors_per_node"),
            ("accelerator_count", "accelerators_per_node"),
            ("node_count", "number_of_nodes"),
        ):
            stated = str(desc.get(field, "")).strip()
            expected = int(stated) if stated.isdigit() and int(stated) > 0 else None
            assert row[column] == expected, (folder, column, stated)
        detail = folder / "performance" / "run_1" / "mlperf_log_detail.txt"
        version = (
            re.search(r'"key": "loadgen_version", "value": "([^"]*)"', detail.read_text())
            if detail.is_file()
            else None
        )
        assert row["loadgen_version"] == (version.group(1) if version else None), folder
        tests_of = submitter / "compliance" / str(row["system"]) / bench.name
        verify = sorted(
            v
            for d in (tests_of.iterdir() if tests_of.is_dir() else ())
            if d.name.lower() == folder.name.lower()
            for v in d.glob("TEST*/verify_*.txt")
        )
        if row["division"] == "open" or not verify:
            assert row["compliance"] is None, folder  # not judged: open, or no tests
        else:
            verdicts = ["TEST PASS" in v.read_text() for v in verify]
            # a file the checker requires and the folder lacks fails ("Missing accuracy file
            # in compliance dir"): these fixtures are subsets, and some lack one
            required = {
                "TEST01": ("verify_accuracy.txt", "verify_performance.txt"),
                "TEST04": ("verify_performance.txt",),
            }
            verdicts += [
                (t / name).is_file()
                for t in {v.parent for v in verify}
                for name in required.get(t.name.upper(), ())
            ]
            assert row["compliance"] == ("PASS" if all(verdicts) else "FAIL"), folder
