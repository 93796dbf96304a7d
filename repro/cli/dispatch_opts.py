"""The options that dispatch a replay or a sweep as parts (`--on local|slurm` and Slurm's own),
shared by `repro replay` and `repro sweep`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from repro.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

#: a partition list as sbatch takes it; a time limit in one of sbatch's forms
_PARTITION = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
_TIME = re.compile(
    r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE)$"
)


def dispatch_options(what: str) -> Callable[[F], F]:
    """--on, --partition, --nodes, --exclusive/--shared, --time."""

    def decorate(f: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--on",
                    "on",
                    type=click.Choice(["local", "slurm"]),
                    default=None,
                    help=f"Dispatch {what} as parts, one round each: on this machine one after "
                    "the other, or as a Slurm job array; gathered into one run.",
                ),
                click.option("--partition", default=None, help="--on slurm: the jobs' partition."),
                click.option(
                    "--nodes",
                    type=click.IntRange(min=1, max=100_000),
                    default=None,
                    help="--on slurm: parts running at once (each on a node of its own with "
                    "--exclusive).",
                ),
                click.option(
                    "--exclusive/--shared",
                    default=None,
                    help="--on slurm: a whole node to each part (the default: benchmarks must "
                    "not share a node), or not.",
                ),
                click.option(
                    "--time",
                    "time_limit",
                    default=None,
                    help="--on slurm: each part's time limit, as sbatch takes it (e.g. 30:00).",
                ),
            ]
        ):
            f = option(f)
        return f

    return decorate


#: Slurm's own options, and what is said when they come without --on slurm
SLURM_FLAGS = ("--partition", "--nodes", "--time", "--exclusive")
SLURM_ONLY = "--partition, --nodes, --time and --exclusive/--shared need --on slurm"


def check_slurm_options(
    *, on: str | None, partition: str | None, nodes: int | None, time_limit: str | None,
    exclusive: bool | None,
) -> None:  # fmt: skip
    """Slurm's options only with --on slurm, each in a form sbatch takes."""
    given = partition is not None or nodes is not None or time_limit is not None
    if (given or exclusive is not None) and on != "slurm":
        raise UsageError(SLURM_ONLY)
    check_slurm_values(partition=partition, time_limit=time_limit)


def check_slurm_values(*, partition: str | None, time_limit: str | None) -> None:
    """Slurm's options each in a form sbatch takes: nothing from the command line reaches the
    batch script unchecked."""
    if partition is not None and not _PARTITION.match(partition):
        raise UsageError(
            f"--partition {partition!r}: not a partition name",
            hint="letters, digits, '_', '.', '-'; several separated by ','",
        )
    if time_limit is not None and not _seconds(time_limit):
        raise UsageError(
            f"--time {time_limit!r}: not a time limit sbatch takes, or zero",
            hint="minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED",
        )


def _seconds(text: str) -> float:
    """A Slurm time limit in seconds (inf for UNLIMITED); 0 when it is not one."""
    if text in ("UNLIMITED", "INFINITE"):
        return float("inf")
    if not _TIME.match(text):
        return 0
    days, _, rest = text.rpartition("-")
    fields = [int(x) for x in rest.split(":")]
    if days:  # D-HH[:MM[:SS]]
        h, m, sec = [*fields, 0, 0][:3]
        return int(days) * 86400 + h * 3600 + m * 60 + sec
    if len(fields) == 1:  # minutes
        return fields[0] * 60
    if len(fields) == 2:  # MM:SS
        return fields[0] * 60 + fields[1]
    return fields[0] * 3600 + fields[1] * 60 + fields[2]


def make_executor(
    on: str, *, partition: str | None, nodes: int | None, exclusive: bool | None,
    time_limit: str | None,
) -> tuple[Any, Any]:  # fmt: skip
    """The executor for --on, and the Slurm options the plan records (None for local)."""
    from repro.dispatch.executors import LocalExecutor, SlurmExecutor
    from repro.dispatch.plan import SlurmOptions

    if on == "local":
        return LocalExecutor(), None
    options = SlurmOptions(
        partition=partition,
        exclusive=True if exclusive is None else exclusive,
        time=time_limit,
        concurrency=nodes,
    )
    return SlurmExecutor(options), options
