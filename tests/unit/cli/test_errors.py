"""The command group's error handler: every way a command ends maps to its exit code."""

from __future__ import annotations

import os
import signal
import time

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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminating_signal_stops_any_command_as_ctrl_c_does(sig: signal.Signals) -> None:
    cleaned: list[bool] = []

    @click.group(cls=ReproGroup)
    def group() -> None:
        pass

    @group.command()
    def slow() -> None:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)
        finally:
            cleaned.append(True)  # its cleanup ran

    before = signal.getsignal(sig)
    result = CliRunner().invoke(group, ["slow"])
    assert result.exit_code == 130
    assert cleaned == [True]
    assert signal.getsignal(sig) == before  # the handler is put back


def test_ctrl_c_while_the_command_line_is_imported_exits_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins

    from repro import _entry

    real = builtins.__import__

    def interrupted(name: str, *args: object, **kwargs: object) -> object:
        if name == "repro.cli":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as stopped:
        _entry.main()
    assert stopped.value.code == 130
