"""`repro results`: published trees as one table, one row per result and scenario."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.mlperf.tree import round_of
from repro.reports.table import COLUMNS
from tests.helpers import published_result


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["results", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_two_rounds_become_one_table(tmp_path: Path) -> None:
    v1, v2 = tmp_path / "inference_results_v4.1", tmp_path / "inference_results_v5.0"
    published_result(v1, system="box-v1.15.1", folder="offline", sps=100.0)
    published_result(v1, system="box-v1.15.1", folder="singlestream", scenario="SingleStream")
    sdir = published_result(
        v2,
        submitter="Other",
        system="big",
        benchmark="retinanet",
        division="open",
        accuracy="mAP=37.5%\nhash=1\n",
    )
    (sdir / "TEST04").mkdir()
    (sdir / "TEST04" / "verify_performance.txt").write_text("reference score = 1\nTEST FAIL\n")
    out = tmp_path / "t.csv"
    code, output = _run(str(v1), str(v2), "--csv", str(out))
    assert code == 0, output
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(COLUMNS)
    assert len(rows) == 3
    by = {(r["round"], r["benchmark"], r["scenario"]): r for r in rows}
    offline = by[("v4.1", "resnet50", "Offline")]
    assert offline["division"] == "closed"
    assert offline["system"] == "box-v1.15.1"  # a version in a system's name is not the round
    assert float(offline["value"]) == 100.0
    assert offline["unit"] == "samples/s"
    assert offline["validity"] == "VALID"
    assert offline["accuracy_metric"] == "top1"
    assert by[("v4.1", "resnet50", "SingleStream")]["metric"] == "latency_p90_ns"
    retinanet = by[("v5.0", "retinanet", "Offline")]
    assert retinanet["division"] == "open"
    assert retinanet["accuracy_metric"] == "mAP"
    assert float(retinanet["accuracy_value"]) == pytest.approx(0.375)
    # the checker judges no compliance test of an open-division result: shown, not counted
    assert retinanet["compliance"] == ""
    assert retinanet["compliance_detail"] == (
        "TEST04 performance:FAIL (open division, which the checker does not judge: not counted)"
    )
    assert retinanet["power_w"] == ""  # not in the tree: empty, never guessed


def test_round_comes_from_the_trees_own_folder(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_inference_submissions_v5.0" / "closed" / "X" / "results" / "sys-v1.2"
    assert round_of(path / "resnet50") == "v5.0"
    assert round_of(tmp_path / "loose" / "closed" / "X" / "results" / "s" / "b") is None


@pytest.mark.parametrize("what", ["missing", "empty"])
def test_a_tree_without_results_is_an_error_naming_it(tmp_path: Path, what: str) -> None:
    tree = tmp_path / "tree"
    if what == "empty":
        (tree / "closed").mkdir(parents=True)
    code, output = _run(str(tree))
    assert code == 2
    assert str(tree) in output


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow installed")
def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path) -> None:
    published_result(tmp_path)
    code, output = _run(str(tmp_path), "--parquet", str(tmp_path / "t.parquet"))
    assert code == 2
    assert "pip install pyarrow" in output
    assert not (tmp_path / "t.parquet").exists()


def test_llm_rows_carry_tokens_per_second_and_interactive_has_its_own(tmp_path: Path) -> None:
    for folder in ("server", "interactive"):
        sdir = published_result(
            tmp_path, benchmark="llama2-70b-99", folder=folder, scenario="Server", accuracy=None
        )
        summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
        summary.write_text(summary.read_text() + "Completed tokens per second: 2500.5\n")
    out = tmp_path / "t.csv"
    code, output = _run(str(tmp_path), "--csv", str(out))
    assert code == 0, output
    with out.open() as fh:
        rows = {r["benchmark"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"llama2-70b-99", "llama2-70b-99-interactive"}
    for row in rows.values():
        assert row["scenario"] == "Server"
        assert row["metric"] == "tokens_per_second"
        assert row["unit"] == "tokens/s"
        assert float(row["value"]) == 2500.5


def test_single_stream_reports_loadgens_early_stopping_estimate(shared_fixtures: Path) -> None:
    from repro.mlperf.published import results_table

    table = results_table([shared_fixtures / "mlperf" / "inference_results_v4.0"])
    row = table[table["scenario"] == "SingleStream"].iloc[0]
    assert row["metric"] == "early_stopping_p90_ns"
    assert row["value"] == 7695806.0  # the summary's "Early stopping 90th percentile estimate"
    assert row["round"] == "v4.0"


def test_json_on_stdout_is_one_record_per_row(tmp_path: Path) -> None:
    import json

    published_result(tmp_path, folder="offline")
    result = CliRunner().invoke(cli, ["results", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["scenario"] for r in rows] == ["Offline"]
    assert rows[0]["value"] == 100.0


def test_a_table_given_to_results_points_to_recommend(tmp_path: Path) -> None:
    """`repro results FILE.csv` said "no such directory"."""
    from click.testing import CliRunner

    from repro.cli import cli

    table = tmp_path / "t.csv"
    table.write_text("value,unit\n1,samples/s\n")
    result = CliRunner().invoke(cli, ["results", str(table)])
    assert result.exit_code == 2
    assert f"{table}: a file, not a published tree" in result.stderr
    assert f"repro recommend {table}" in result.stderr
    result = CliRunner().invoke(cli, ["results", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such folder" in result.stderr


def test_a_tree_named_twice_is_read_once_and_the_count_says_so(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1"
    published_result(tree, system="box", folder="offline", sps=100.0)
    out = tmp_path / "t.csv"
    code, output = _run(str(tree), str(tree / "closed"), "--csv", str(out))
    assert code == 0, output
    assert f"{tree}: 1 result(s)\n" in output
    assert f"{tree / 'closed'}: 0 result(s) (1 more already read under an earlier path)" in output
    assert "not already read" not in output
    with out.open() as fh:
        assert len(list(csv.DictReader(fh))) == 1
