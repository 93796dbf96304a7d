"""The `repro` command group: one error handler turns ReproError into a message and exit code."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import click

from repro import __version__
from repro.errors import EXIT_FAILURE, EXIT_INTERNAL, Interrupted, ReproError
from repro.signals import interruptible


class ReproGroup(click.Group):
    """Reports ReproError as `error: ...` + `hint: ...` with its exit code; bugs exit 4. Its
    commands are loaded when one runs (`repro.cli.commands.COMMANDS`): `repro --help` lists
    them from that table, so it and `--version` import no command's module."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from repro.cli.commands import COMMANDS

        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from repro.cli.commands import COMMANDS

        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import importlib

            module, _, attr = COMMANDS[cmd_name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, from the table (no command is imported)."""
        from repro.cli.commands import COMMANDS, shorten

        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            text = (
                loaded.get_short_help_str(limit)
                if loaded is not None and name not in COMMANDS
                else shorten(COMMANDS[name][1], limit)
            )
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        # the errors below quote paths and names from outside repro: filtered as well
        from repro.outputs import TRACK_META, written

        written.clear()
        with _terminal_safe():
            code = EXIT_INTERNAL
            try:
                result = self._invoke(ctx)
                code = 0
                return result
            except click.exceptions.Exit as exc:
                code = exc.exit_code
                raise
            finally:
                # a command with --track: what it wrote into the catalog once it is on disk,
                # whatever its verdict (never after an interruption or a bug); the step never
                # raises, and Ctrl-C in it keeps the command's exit code
                if code in (0, 1, EXIT_FAILURE) and TRACK_META in ctx.meta:
                    with contextlib.suppress(KeyboardInterrupt):
                        from repro.catalog.sync import after_command

                        after_command(ctx.meta[TRACK_META], written)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            with interruptible():
                return super().invoke(ctx)
        except ReproError as exc:
            if exc.exit_code == EXIT_INTERNAL and ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.secho(f"error: {exc.message}", err=True, fg="red")
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except (KeyboardInterrupt, Interrupted):
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # the reader of our output went away (`repro ... | head`): not an error of ours
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except OSError as exc:
            # a file or folder repro was given or writes to cannot be used as it is
            where = exc.filename or "a file"
            click.secho(f"error: {where}: {exc.strerror or exc}", err=True, fg="red")
            click.echo(f"hint: {_os_hint(exc)}", err=True)
            ctx.exit(EXIT_FAILURE)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            else:
                click.secho(f"internal error: {type(exc).__name__}: {exc}", err=True, fg="red")
                click.echo(
                    "hint: this is a bug in repro; rerun with --debug for the traceback", err=True
                )
            ctx.exit(EXIT_INTERNAL)


#: what a published tree's text must not send to a terminal: control characters (an escape
#: sequence clears the screen or sets the title), a carriage return inside a line (it would
#: overwrite what came before; a progress bar's, at either end of a write, passes), and the
#: bidirectional overrides that reorder what is shown. Colours (SGR: ESC [ ... m) pass, but not
#: the one that conceals text: repro's own are made that way.
_UNSAFE = re.compile(
    r"\x1b\[[0-9;]*m|\r|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith("\x1b[") and _plain_colour(found[2:-1]):
        return found
    if found == "\r" and match.start() in (0, len(match.string) - 1):
        return found  # a progress line's own, at either end of what it writes
    return ascii(found)[1:-1]


def _plain_colour(params: str) -> bool:
    """An SGR sequence of the kinds click.style writes (reset, bold, dim, underline, the 16
    colours), none that conceals or blinks or sets a colour by number."""
    codes = [int(p) for p in params.split(";") if p] or [0]
    allowed = {0, 1, 2, 3, 4, 22, 23, 24, 39, 49, *range(30, 38), *range(90, 98)}
    return all(c in allowed for c in codes)


def _visible(text: str) -> str:
    return _UNSAFE.sub(_escape, text)


class _SafeStream:
    """A text stream that writes control characters as visible escapes (`\x1b`)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_visible(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _terminal_safe() -> Iterator[None]:
    """stdout and stderr of a command pass `_visible`: names from outside repro are shown,
    never obeyed."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeStream(out), _SafeStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _os_hint(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the file system is full: free space there, or write elsewhere (-o/--results-dir)"
    if exc.errno == errno.EROFS:
        return "the file system is read-only: write elsewhere (-o/--results-dir)"
    return (
        "check that the path exists, is of the right kind and that this user may read it "
        "(inputs) or write into its folder (outputs)"
    )


@click.group(cls=ReproGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repro")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Capture, replay and check ML inference benchmarks with MLPerf LoadGen.

    \b
    Exit codes: 0 success / reproduced, 1 not reproduced, 2 bad input or usage,
    3 environment, artifact or run failure, 4 internal error.

    \b
    Example:
      repro validate specs/*.json
      repro replay specs/ort-digits.json
      repro report --compare results/ort-digits/
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main() -> None:
    """Entry point of the `repro` script (click's own usage errors pass the filter too)."""
    with _terminal_safe():
        cli.main(prog_name="repro", standalone_mode=True)  # exits
