"""What is read as a published result: a summary with no detail log to hold it to is read, but
marked unchecked and never ranked; a results-shaped copy outside `<submitter>/results/` is no
result (the checker never reads it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.mlperf.published import result_rows
from tests.mlperf_gen import Result, write_result


def test_a_summary_whose_detail_log_is_gone_is_unchecked_and_never_ranked(
    tmp_path: Path,
) -> None:
    """`sed` on the summary and `rm` of the detail log: the edited rate was tabulated VALID and
    ranked first by recommend."""
    tree = tmp_path / "inference_results_v4.1"
    honest = write_result(tree, Result(system="honest", value=44411.1))
    edited = write_result(tree, Result(system="edited", value=44411.1))
    summary = edited / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("44411.1", "999999"))
    (edited / "performance" / "run_1" / "mlperf_log_detail.txt").unlink()
    rows = {r["system"]: r for r in result_rows([tree])}
    assert rows["honest"]["checked"] is True
    assert rows["edited"]["checked"] is False
    assert "mlperf_log_detail.txt is missing: the summary alone" in rows["edited"]["notes"]
    out = CliRunner().invoke(
        cli,
        [
            "recommend",
            str(tree),
            "--objective",
            "max:throughput",
            "-o",
            str(tmp_path / "rec"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    text = out.output
    assert "read from its summary alone" in text
    assert '"system": "edited"' not in text.split('"excluded"')[0]  # not in the front
    assert honest.exists()


def test_a_detail_log_that_is_a_fifo_or_a_device_is_no_detail_log(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result())
    detail = sdir / "performance" / "run_1" / "mlperf_log_detail.txt"
    detail.unlink()
    os.mkfifo(detail)
    [row] = result_rows([tree])
    assert row["checked"] is False
    assert "mlperf_log_detail.txt is not a regular file" in row["notes"]


def test_a_results_shaped_copy_outside_results_is_no_result(tmp_path: Path) -> None:
    """v1.0: 10 rows came from closed/DellEMC/measurements/...; v1.1: a stray
    bert-99.9/Server/Server/."""
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result())
    submitter = tree / "closed" / "Acme"
    shutil.copytree(sdir.parent, submitter / "measurements" / "box" / sdir.parent.name)
    shutil.copytree(sdir, sdir / sdir.name)  # a scenario folder inside itself
    rows = result_rows([tree])
    assert [r["path"] for r in rows] == [str(sdir.parent)]


def test_a_garbled_detail_line_is_said_and_unchecked(tmp_path: Path) -> None:
    """One garbled line in a detail log gave VALID 25200.5 with no note."""
    tree = tmp_path / "inference_results_v4.1"
    sdir = write_result(tree, Result(value=25200.5))
    detail = sdir / "performance" / "run_1" / "mlperf_log_detail.txt"
    lines = detail.read_text().splitlines()
    lines.insert(3, ':::MLLOG {"key": "result_validity", "value": "VAL')
    detail.write_text("\n".join(lines) + "\n")
    [row] = result_rows([tree])
    assert row["checked"] is False
    assert "line(s) 4 are not LoadGen records" in row["notes"]


def test_an_accuracy_file_without_its_hash_is_unchecked(tmp_path: Path) -> None:
    """The checker fails the accuracy check of an accuracy.txt with no hash= line."""
    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result(accuracy="accuracy=76.456%, good=38228, total=50000\n"))
    [row] = result_rows([tree])
    assert row["accuracy_value"] == pytest.approx(0.76456)  # read, as a fraction
    assert row["checked"] is False
    assert "has no hash= line" in row["notes"]
