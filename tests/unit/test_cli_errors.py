"""The command group's error handler: every way a command ends maps to its exit code."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from repro.cli import ReproGroup
from repro.errors import Interrupted, SpecError


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        (Interrupted(), 130, "interrupted"),  # SIGTERM while the run was being set up
        (KeyboardInterrupt(), 130, "interrupted"),
        (SpecError("x.json: $.a: bad", hint="fix it"), 2, "error: x.json: $.a: bad"),
        (OSError(28, "No space left on device", "/tmp/full/run.json"), 3, "/tmp/full/run.json"),
        (ValueError("bug"), 4, "internal error: ValueError: bug"),
    ],
)
def test_each_ending_has_its_exit_code(raised: BaseException, code: int, said: str) -> None:
    @click.group(cls=ReproGroup)
    def group() -> None:
        pass

    @group.command()
    def boom() -> None:
        raise raised

    result = CliRunner().invoke(group, ["boom"])
    assert result.exit_code == code
    assert said in result.output
