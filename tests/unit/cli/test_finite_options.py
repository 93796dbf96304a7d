"""Every float option takes finite numbers only: `--max-time nan` ran and wrote NaN (not JSON)
into run.json."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize(
    "args",
    [
        ["replay", "specs/ort-digits.json", "--max-time"],
        ["results", ".", "--enrich", "--utilization"],
        ["claim", "add", "x", "--bound"],
    ],
)
def test_a_float_option_refuses_what_is_not_a_finite_number(args: list[str], value: str) -> None:
    out = CliRunner().invoke(cli, [*args, value])
    assert out.exit_code == 2, out.output
    # a bounded option may say its range first: either way, never taken
    assert "is not a finite number" in out.output or "is not in the range" in out.output


def test_recommend_top_zero_is_refused(tmp_path: object) -> None:
    """`recommend --top 0` printed pandas' "Empty DataFrame"."""
    out = CliRunner().invoke(cli, ["recommend", "t.csv", "--predict", "--top", "0"])
    assert out.exit_code == 2, out.output
    assert "--top" in out.output


def test_a_package_given_as_the_baseline_says_how_to_use_it(tmp_path: Path) -> None:
    """`--against PACKAGE` was read as a spec ("not UTF-8")."""
    package = tmp_path / "base.repro.tar"
    package.write_bytes(b"\x00" * 1024)
    out = CliRunner().invoke(
        cli, ["replay", "specs/ort-digits.json", "--against", str(package), "--env", "native"]
    )
    assert out.exit_code == 2, out.output
    assert "a package, not a spec" in out.output
    assert "repro unpack" in out.output
