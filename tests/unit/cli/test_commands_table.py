"""The lazy command table: each entry is its command (name, place, short help), and the
group's help and version load no command's module."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from repro.cli import cli
from repro.cli.commands import COMMANDS, SHORT_HELP, shorten


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_entry_is_its_command(name: str) -> None:
    where, short = COMMANDS[name]
    module, _, attr = where.partition(":")
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert short == shorten(command.help or "", SHORT_HELP), "run the table's short help again"
    assert cli.get_command(click.Context(cli), name) is command


def test_help_and_version_import_no_command() -> None:
    """`repro --help` cost 1.3 s of CPU: every command's module (and pydantic's models)."""
    out = _in_a_fresh_interpreter(
        "for args in (['--help'], ['--version']):\n"
        "    assert CliRunner().invoke(cli, args).exit_code == 0\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('repro.cli.') and "
        "m not in ('repro.cli.commands',))\n"
        "print(loaded)\n"
        "print('pydantic' in sys.modules)\n"
    )
    loaded, pydantic = out.splitlines()
    assert loaded == "[]"
    assert pydantic == "False"


def test_the_help_lists_every_command_shortened() -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "Pin an experiment and run it once" in out


def test_env_show_imports_no_report_builder() -> None:
    """`repro env show` reads the drift's part of `repro.compare` (envdiff) only: the report's
    builder, its statistics and numpy cost it 0.3 s of CPU (PEP 562 in `repro.compare`)."""
    out = _in_a_fresh_interpreter(
        "assert CliRunner().invoke(cli, ['env', 'show']).exit_code == 0\n"
        "print(sorted(m for m in ('repro.compare.build', 'repro.stats.significance', 'numpy') "
        "if m in sys.modules))\n"
    )
    assert out.strip() == "[]"


def _in_a_fresh_interpreter(probe: str) -> str:
    """What `probe` prints, run after importing the CLI in a new Python (its modules loaded
    by that alone)."""
    preamble = "import sys\nfrom click.testing import CliRunner\nfrom repro.cli import cli\n"
    done = subprocess.run(
        [sys.executable, "-c", preamble + probe], capture_output=True, text=True, check=True
    )
    return done.stdout
