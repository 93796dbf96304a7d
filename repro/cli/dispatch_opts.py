"""The options that dispatch a replay or a sweep as parts, shared by `repro replay` and
`repro sweep`: `--on` (a choice of the executors' registry) and every executor's own flags.

A command takes each flag as a keyword (its `param`); none is given unless typed (None).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from repro.dispatch.executors.registry import (
    EXECUTORS,
    executor_flags,
    executor_names,
)
from repro.errors import UsageError

if TYPE_CHECKING:
    from repro.dispatch.executors.base import (
        ExecutorFlag,
        ExecutorPlugin,
    )

F = TypeVar("F", bound=Callable[..., Any])

#: the most a count flag takes (parts at once)
MAX_COUNT = 100_000


def dispatch_options(what: str) -> Callable[[F], F]:
    """--on, then each executor's flags, in registry order."""

    def decorate(f: F) -> F:
        options = [
            click.option(
                "--on",
                "on",
                type=click.Choice(executor_names()),
                default=None,
                help=f"Dispatch {what} as parts, one round each, gathered into one run: "
                + "; ".join(f"{name}: {p.where}" for name, p in EXECUTORS.items())
                + ".",
            ),
            *(_flag_option(plugin, flag) for plugin, flag in executor_flags()),
        ]
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def _flag_option(plugin: ExecutorPlugin, flag: ExecutorFlag) -> Callable[[F], F]:
    help_text = f"--on {plugin.name}: {flag.help}"
    if flag.kind == "switch":
        return click.option(flag.decl, flag.param, default=None, help=help_text)
    kind: Any = click.IntRange(min=1, max=MAX_COUNT) if flag.kind == "count" else str
    return click.option(flag.decl, flag.param, type=kind, default=None, help=help_text)


def check_dispatch_options(*, on: str | None, resuming: bool = False, **given: Any) -> None:
    """Each executor's flags only with --on that executor (or a resume, which keeps the run's
    executor), each in a form the executor takes: nothing from the command line reaches a
    batch script unchecked."""
    for plugin in EXECUTORS.values():
        mine = {f.param: given.get(f.param) for f in plugin.flags}
        if all(value is None for value in mine.values()):
            continue
        if on != plugin.name and not resuming:
            decls = [f.decl for f in plugin.flags]
            listing = ", ".join(decls[:-1]) + " and " + decls[-1] if len(decls) > 1 else decls[0]
            raise UsageError(f"{listing} need --on {plugin.name}")
        plugin.options_from(mine)
