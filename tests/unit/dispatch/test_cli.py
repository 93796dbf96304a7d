"""`repro replay --on/--resume`: what is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--partition", "debug"], "need --on slurm"),
        (["--on", "slurm", "--against", "self"], "--on and --resume dispatch a plain replay"),
        (["--on", "local", "--profile"], "--on and --resume dispatch a plain replay"),
        (["--resume", "results/x/r1"], "takes no SPEC"),
    ],
)
def test_dispatch_options_in_the_wrong_company_are_usage_errors(
    args: list[str], message: str, root: Path
) -> None:
    result = CliRunner().invoke(cli, ["replay", str(root / "specs" / "ort-digits.json"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_resume_of_a_run_that_was_not_dispatched_is_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path / "synthetic" / "r1", throughput=[100.0])
    result = CliRunner().invoke(cli, ["replay", "--resume", str(run)])
    assert result.exit_code == 2, result.output
    assert "not a dispatched run" in result.stderr


def test_replay_without_spec_or_resume_says_so() -> None:
    result = CliRunner().invoke(cli, ["replay"])
    assert result.exit_code == 2
    assert "missing SPEC" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--on", "slurm", "--partition", "debug\necho pwned"], "not a partition name"),
        (["--on", "slurm", "--partition", ""], "not a partition name"),
        (["--on", "slurm", "--time", "-5"], "not a time limit"),
        (["--on", "slurm", "--time", "0"], "not a time limit"),
        (["--on", "local", "--shared"], "need --on slurm"),
        (["--on", "slurm", "-m", "accuracy"], "accuracy alone runs once"),
    ],
)
def test_what_reaches_the_batch_script_is_checked_first(
    args: list[str], message: str, root: Path
) -> None:
    result = CliRunner().invoke(cli, ["replay", str(root / "specs" / "ort-digits.json"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
