"""Every float option takes finite numbers only: `--max-time nan` ran and wrote NaN (not JSON)
into run.json."""

from __future__ import annotations

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
