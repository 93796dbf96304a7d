"""`repro replay`'s command line: its values, the engine's request they make, and which
options go with which mode, declared once in a table and checked by one function.

The modes are the engine's (`repro.runs.plan.Mode`): a plain replay, one followed by a
profiled pass, rounds until decided against the spec's original, rounds against a baseline
(with or without --until-decided), a replay and the spec's claims checked (`--claims`), parts
dispatched by an executor (`--on`: this machine, Slurm, ...), or a dispatched run resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import click
from pydantic import ValidationError

from repro.cli.params import parse_key_value
from repro.dispatch.executors.registry import executor_flags
from repro.environments.registry import FACES
from repro.errors import UsageError
from repro.runs.placement import parse_cpus
from repro.runs.plan import HERE, MODES, OVERRIDABLE, STARTED, Mode, ReplayPlan, RoundsPlan

__all__ = ["COMPANY", "HERE", "MODES", "STARTED", "Company", "Mode", "Shown", "plan_of"]


@dataclass(frozen=True)
class Shown:
    """How the command shows what the engine made: --json, and where a report goes."""

    as_json: bool
    report_dir: Path | None


def plan_of(values: dict[str, Any]) -> tuple[ReplayPlan, Shown]:
    """The command line as click parsed it, validated into the engine's plan once (the
    options' text parsed: backend options, CPU lists), and how the result is shown."""
    flags = {f.param: f for _, f in executor_flags()}
    managers = {o.param: o.name for face in FACES.values() for o in face.options}
    cpus = parse_cpus(values["cpus_text"]) if values["cpus_text"] is not None else None
    try:
        rounds = RoundsPlan(
            against=values["against"],
            baseline_env=values["baseline_env"],
            baseline_options=_options(values["baseline_options"], "--baseline-backend-option"),
            until_decided=values["until_decided"],
            max_rounds=values["max_rounds"],
            max_time_s=values["max_time_s"],
            duet=values["duet"],
            cpus=cpus,
            order_seed=values["order_seed"],
        )
        plan = ReplayPlan(
            spec_path=values["spec_path"],
            results_dir=values["results_dir"],
            run_id=values["run_id"],
            scenarios=values["scenarios"],
            modes=values["modes"],
            loadgen={k: values[k] for k in OVERRIDABLE},
            backend_options=_options(values["backend_options"], "--backend-option"),
            repeat=values["repeat"],
            env=values["env_name"],
            # a switch not given is False or None: left out, as an option is
            env_options={
                name: values[param]
                for param, name in managers.items()
                if values.get(param) not in (None, False)
            },
            cache_dir=values["cache_dir"],
            key_path=values["key_path"],
            profile=values["profile"],
            profile_samples=values["profile_samples"],
            rounds=rounds,
            claims=values["claims"],
            on=values["on"],
            executor_flags={k: v for k, v in values.items() if k in flags},
            resume_run=values["resume_run"],
        )
    except ValidationError as exc:  # click bounds every option: a value it let through
        raise UsageError(f"the options do not make a replay: {exc.errors()[0]['msg']}") from None
    return plan, Shown(as_json=values["as_json"], report_dir=values["report_dir"])


def _options(given: tuple[str, ...], option: str) -> dict[str, Any]:
    """`key=value` options, each value parsed as JSON where it is JSON."""
    return dict(parse_key_value(text, option=option) for text in given)


@dataclass(frozen=True)
class Company:
    """Options that go with some modes only; given in another, `message` is a usage error (its
    `{flags}` the options of the row that were given)."""

    flags: tuple[str, ...]
    modes: frozenset[Mode]
    message: str
    hint: str | None = None
    #: the modes that leave these options unused without a word (what `repro replay` did before
    #: the table; the run a resume continues holds its own settings)
    ignored_in: frozenset[Mode] = frozenset()
    #: the --env values they need as well (None: any)
    envs: frozenset[str] | None = None
    #: one of `flags` must be given in `modes`, rather than may be given only there
    needed: bool = False


#: which options go with which mode, checked in this order: the first row broken is the error
COMPANY: Final[tuple[Company, ...]] = (
    Company(
        ("--against", "--until-decided", "--profile", "--claims"),
        HERE,
        "--on and --resume dispatch a plain replay; --against, --until-decided, --profile and "
        "--claims run on this machine",
    ),
    Company(
        ("--against", "--until-decided", "--profile"),
        HERE - {"claims"},
        "--claims replays the spec and checks its claims, each claim's variants interleaved "
        "until decided: without --against, --until-decided or --profile",
        hint="check a baseline with `repro replay SPEC --against BASELINE` on its own",
    ),
    Company(("SPEC",), STARTED, "--resume RUN takes no SPEC: the run's plan holds the spec it ran"),
    Company(
        (
            "--min-duration-ms",
            "--min-query-count",
            "--max-duration-ms",
            "--scenario",
            "--mode",
            "--repeat",
        ),
        STARTED,
        "--resume continues the run with the settings it started with: {flags} would make its "
        "parts two experiments",
        hint="drop them, or start a new replay with them",
    ),
    Company(
        ("SPEC",),
        STARTED,
        "missing SPEC",
        hint="repro replay SPEC (see `repro replay --help`)",
        needed=True,
    ),
    Company(
        ("--baseline-env", "--baseline-backend-option"),
        frozenset({"against"}),
        "--baseline-env and --baseline-backend-option need --against",
        ignored_in=frozenset({"resume"}),
    ),
    Company(
        ("--duet",),
        frozenset({"against"}),
        "--duet runs the two sides of paired rounds at once: it needs --against",
    ),
    Company(
        ("--cpus",),
        frozenset({"against", "until-decided"}),
        "--cpus pins the tests of rounds: it goes with --against or --until-decided",
    ),
    Company(
        ("--profile",),
        frozenset({"profile"}),
        "--profile runs after a plain replay; with --against or --until-decided, profile the "
        "runs afterwards: `repro profile SPEC --into RUN`",
    ),
    Company(
        ("--profile-samples",),
        frozenset({"profile"}),
        "--profile-samples needs --profile",
        ignored_in=frozenset({"resume"}),
    ),
    *(
        Company(
            tuple(o.flag for o in face.options),
            STARTED,
            f"{{flags}}: --env {face.name}'s own, and neither --env nor --baseline-env is "
            f"{face.name}",
            hint=f"give --env {face.name} (or --baseline-env {face.name} for the rounds' "
            "baseline), or leave the option out",
            ignored_in=frozenset({"resume"}),
            envs=frozenset({face.name, "auto"}),
        )
        for face in FACES.values()
        if face.options
    ),
)


def given_flags(ctx: click.Context) -> frozenset[str]:
    """The command's parameters given a value other than their default, by their first flag
    (SPEC for the argument): `--repeat 1` is not given, as `--repeat` left out is not."""
    given: set[str] = set()
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if value in (None, ()) or value == param.get_default(ctx):
            continue
        metavar = param.metavar if isinstance(param, click.Argument) else None
        given.add(metavar or param.opts[0])
    return frozenset(given)


def check_company(
    mode: Mode, given: frozenset[str], *, env_name: str, baseline_env: str | None = None
) -> None:
    """The first row of COMPANY that the options given break, as a usage error."""
    envs = {env_name, baseline_env or env_name}
    for row in COMPANY:
        found = [flag for flag in row.flags if flag in given]
        if _breaks(row, mode, found, envs):
            raise UsageError(row.message.format(flags=", ".join(found)), hint=row.hint)


def _breaks(row: Company, mode: Mode, found: list[str], envs: set[str]) -> bool:
    if row.needed:
        return mode in row.modes and not found
    if not found or mode in row.ignored_in:
        return False
    return mode not in row.modes or (row.envs is not None and not envs & row.envs)
