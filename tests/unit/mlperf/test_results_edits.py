"""`repro results` reads a published run as the checker and `repro report` do: an edited or
damaged log is an `unreadable` row naming what is wrong, never tabulated (or ranked) as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.mlperf.published import result_rows
from tests.mlperf_gen import Result, write_result


def _rows(tree: Path) -> list[dict[str, Any]]:
    return result_rows([tree])


def _run(sdir: Path) -> Path:
    return sdir / "performance" / "run_1"


def test_a_summary_edited_away_from_its_detail_log_is_unreadable(tmp_path: Path) -> None:
    """Edited to 999,999 samples/s beside a detail log of 44,411: tabulated VALID, ranked
    first by `repro recommend`."""
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result(value=44411.0))
    summary = _run(sdir) / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("44411", "999999"))
    [row] = _rows(tree)
    assert row["validity"] == "unreadable"
    assert "disagree on samples_per_second" in row["notes"]
    assert "999999" in row["notes"]
    assert "44411" in row["notes"]
    assert row["value"] is None


def test_a_summary_invalid_beside_a_valid_detail_log_is_unreadable(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result())
    summary = _run(sdir) / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("Result is : VALID", "Result is : INVALID"))
    [row] = _rows(tree)
    assert row["validity"] == "unreadable"
    assert "disagree on validity" in row["notes"]


@pytest.mark.parametrize("detail", [b"", b"\x00\xff\xfe garbage" * 50])
def test_an_empty_or_random_detail_log_is_unreadable(tmp_path: Path, detail: bytes) -> None:
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result())
    (_run(sdir) / "mlperf_log_detail.txt").write_bytes(detail)
    [row] = _rows(tree)
    assert row["validity"] == "unreadable"
    assert "no result_validity record" in row["notes"]


def test_a_system_description_with_a_byte_order_mark_keeps_its_hardware(tmp_path: Path) -> None:
    """A UTF-8 BOM (an editor's) dropped every hardware column."""
    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result())
    [desc] = tree.glob("*/*/systems/box.json")
    desc.write_bytes(b"\xef\xbb\xbf" + desc.read_bytes())
    [row] = _rows(tree)
    assert row["validity"] == "VALID"
    assert row["processor"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert row["accelerator_count"] == 8
    assert "byte-order mark" in row["notes"]


@pytest.mark.parametrize("figure", ["accuracy=nan%", "accuracy=inf%", "accuracy=NaN%"])
def test_an_accuracy_printed_as_nan_is_unreadable_as_a_nan_value_is(
    tmp_path: Path, figure: str
) -> None:
    """`accuracy_value nan` was "missing" (the row kept) while a `value nan` was refused."""
    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result(accuracy=f"{figure}, good=0, total=50000\n"))
    [row] = _rows(tree)
    assert row["validity"] == "unreadable"
    assert "not a possible figure" in row["notes"]


def test_a_figure_with_its_hash_on_one_line_is_read(tmp_path: Path) -> None:
    """`mAP=35.293%hash=...` (Krai, v2.1) was read as no figure."""
    tree = tmp_path / "inference_results_v2.1"
    r = Result(
        round="v2.1", loadgen="2.1.0", benchmark="retinanet", accuracy="mAP=35.293%hash=9f0c\n"
    )
    write_result(tree, r)
    [row] = _rows(tree)
    assert row["accuracy_metric"] == "mAP"
    assert row["accuracy_value"] == pytest.approx(0.35293)


def test_recommend_never_ranks_an_edited_result(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result(system="honest", value=44411.0, system_json=None))
    edited = write_result(tree, Result(system="edited", value=44411.0, system_json=None))
    summary = _run(edited) / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("44411", "999999"))
    runner = CliRunner()
    table = tmp_path / "t.csv"
    assert runner.invoke(cli, ["results", str(tree), "--csv", str(table)]).exit_code == 0
    result = runner.invoke(
        cli,
        ["recommend", str(table), "--objective", "max:throughput", "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [row["system"] for row in data["front"]] == ["honest"]
    [excluded] = data["excluded"]
    assert "Acme/edited" in excluded
    assert "could not be read" in excluded


def test_a_results_shaped_copy_under_documentation_is_not_a_result(tmp_path: Path) -> None:
    """A v5.1 submitter's documentation/ held a copy shaped like results: 3 rows, division
    null. The checker reads `<division>/<submitter>/results/` only."""
    tree = tmp_path / "inference_results_v5.1"
    write_result(tree, Result(round="v5.1", loadgen="5.1.0"))
    copy = write_result(tree / "closed" / "Acme" / "documentation", Result(round="v5.1"))
    assert copy.exists()
    rows = _rows(tree)
    assert len(rows) == 1
    assert rows[0]["division"] == "closed"


def test_a_tree_reached_through_a_link_keeps_its_round(tmp_path: Path) -> None:
    """`v5.1 -> /somewhere/x`: every row had `round: null` (the link was resolved away)."""
    real = tmp_path / "disk3" / "x"
    write_result(real, Result(round="v5.1", loadgen="5.1.0"))
    link = tmp_path / "inference_results_v5.1"
    link.symlink_to(real)
    [row] = _rows(link)
    assert row["round"] == "v5.1"
    assert row["division"] == "closed"
    assert row["validity"] == "VALID"
