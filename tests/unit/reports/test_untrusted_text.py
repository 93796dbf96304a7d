"""A published tree's names are anyone's text: they never become markup, links, formulas or
terminal control sequences in what repro writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import published_result

HOSTILE = "x<img src=x onerror=alert(1)>[a](javascript:alert(2))|`\x1b]0;pwn\x07"


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    a = published_result(tmp_path / "a", submitter="=HYPERLINK(1)", system="box")
    (a.parents[3] / "systems" / "box.json").write_text(
        json.dumps({"host_processor_model_name": HOSTILE, "framework": "+cmd|' /C calc'!A0"})
    )
    b = tmp_path / "b"
    shutil.copytree(tmp_path / "a", b)
    summary = next(b.rglob("mlperf_log_summary.txt"))
    summary.write_text(summary.read_text().replace(": 100.0", ": 101.0"))
    return a, next(p.parent.parent.parent for p in b.rglob("mlperf_log_summary.txt"))


def test_report_markdown_renders_names_as_text(tmp_path: Path) -> None:
    a, b = _trees(tmp_path)
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(a), str(b), "-o", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "<img" not in md
    assert "](javascript:" not in md
    assert "\x1b" not in result.output  # nor raw control characters on the terminal


def test_csv_cells_never_start_a_formula(tmp_path: Path) -> None:
    a, _ = _trees(tmp_path)
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["results", str(a), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert ",'=HYPERLINK(1)," in text
    assert "'+cmd|' /C calc'!A0" in text
    assert ",=HYPERLINK" not in text


def test_the_terminal_is_shown_control_characters_never_sent_them() -> None:
    import click

    from repro.cli import ReproGroup

    @click.group(cls=ReproGroup)
    def group() -> None:
        pass

    @group.command()
    def show() -> None:
        click.echo(HOSTILE + "\u202eevil\rover\x1b[8mhidden")
        click.secho("error: in red", err=True, fg="red")

    result = CliRunner().invoke(group, ["show"], color=True)
    assert "\x1b]0;pwn" not in result.output
    assert "\\x1b]0;pwn\\x07" in result.output  # shown as escapes
    assert "\\u202eevil\\rover\\x1b[8mhidden" in result.output
    assert "\x1b[31m" in result.output  # repro's own colours pass


def test_a_quoted_cell_reads_back_as_it_was_written(tmp_path: Path) -> None:
    """recommend reads the table `results --csv` wrote: a formula-looking name comes back
    without its quote (and a price for it matches), a name that began with a quote keeps it."""
    from repro.reports.table import load_table

    a = published_result(tmp_path / "a", submitter="'quoted", system="=1+2", detail=True)
    (a.parents[3] / "systems" / "=1+2.json").write_text(
        json.dumps({"host_processor_model_name": "=CPU+1", "accelerator_model_name": "-acc"})
    )
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["results", str(a), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert ",'=1+2," in out.read_text()
    table = load_table(out)
    assert table["system"].tolist() == ["=1+2"]
    assert table["submitter"].tolist() == ["'quoted"]
    assert table["processor"].tolist() == ["=CPU+1"]
    prices = tmp_path / "prices.csv"
    prices.write_text("name,price\n=CPU+1,1000\n")
    result = CliRunner().invoke(
        cli, ["recommend", str(out), "--objective", "min:cost", "--prices", str(prices)]
    )
    assert result.exit_code == 0, result.output
    assert "match no processor" not in result.output + result.stderr
