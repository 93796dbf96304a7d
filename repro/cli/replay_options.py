"""`repro replay`'s command line: its values, the engine's request they make, and which
options go with which mode, declared once in a table and checked by one function.

The modes are the engine's (`repro.replay.request.Mode`): a plain replay, one followed by a
profiled pass, rounds until decided against the spec's original, rounds against a baseline
(with or without --until-decided), a replay and the spec's claims checked (`--claims`), parts
dispatched by an executor (`--on`: this machine, Slurm, ...), or a dispatched run resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import click

from repro.cli.params import parse_key_value
from repro.dispatch.executors.registry import executor_flags
from repro.environments.registry import FACES
from repro.errors import UsageError
from repro.replay.request import HERE, MODES, STARTED, Mode, ReplayRequest
from repro.spec.models import ModeName, ScenarioName

__all__ = ["COMPANY", "HERE", "MODES", "STARTED", "Company", "Mode", "ReplayArgs"]


@dataclass(frozen=True)
class ReplayArgs:
    """The command line as click parsed it: one field per parameter, named as click names it."""

    spec_path: Path | None
    scenarios: tuple[ScenarioName, ...]
    modes: tuple[ModeName, ...]
    min_duration_ms: int | None
    min_query_count: int | None
    max_duration_ms: int | None
    backend_options: tuple[str, ...]
    repeat: int
    env_name: str
    results_dir: Path
    run_id: str | None
    against: str | None
    baseline_env: str | None
    baseline_options: tuple[str, ...]
    until_decided: bool
    claims: bool
    max_rounds: int | None
    max_time_s: float | None
    duet: bool
    cpus_text: str | None
    order_seed: int | None
    report_dir: Path | None
    profile: bool
    profile_samples: int
    on: str | None
    resume_run: Path | None
    cache_dir: Path | None
    key_path: Path | None
    as_json: bool
    #: each executor's own flags (`repro.dispatch.executors.registry`), by parameter name
    executor_flags: dict[str, Any] = field(default_factory=dict)
    #: each environment manager's own options (`EnvironmentFace.options`) given, by name
    env_options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, values: dict[str, Any]) -> ReplayArgs:
        """The arguments from click's parameters: the executors' flags (whichever plug-ins
        add) into `executor_flags`, the rest one field each."""
        flags = {f.param for _, f in executor_flags()}
        managers = {o.param: o.name for face in FACES.values() for o in face.options}
        return cls(
            **{k: v for k, v in values.items() if k not in flags and k not in managers},
            executor_flags={k: v for k, v in values.items() if k in flags},
            env_options={  # a switch not given is False or None: left out, as an option is
                name: values[param]
                for param, name in managers.items()
                if values.get(param) not in (None, False)
            },
        )

    def request(self) -> ReplayRequest:
        """The engine's request: the options' text parsed (backend options, CPU lists), and
        nothing of how the result is shown (--json, --report-dir)."""
        from repro.runs.placement import parse_cpus

        return ReplayRequest(
            spec_path=self.spec_path,
            results_dir=self.results_dir,
            scenarios=self.scenarios,
            modes=self.modes,
            min_duration_ms=self.min_duration_ms,
            min_query_count=self.min_query_count,
            max_duration_ms=self.max_duration_ms,
            backend_options=_options(self.backend_options, "--backend-option"),
            repeat=self.repeat,
            env_name=self.env_name,
            run_id=self.run_id,
            cache_dir=self.cache_dir,
            key_path=self.key_path,
            env_options=self.env_options,
            against=self.against,
            baseline_env=self.baseline_env,
            baseline_options=_options(self.baseline_options, "--baseline-backend-option"),
            until_decided=self.until_decided,
            max_rounds=self.max_rounds,
            max_time_s=self.max_time_s,
            duet=self.duet,
            cpus=parse_cpus(self.cpus_text) if self.cpus_text is not None else None,
            order_seed=self.order_seed,
            claims=self.claims,
            profile=self.profile,
            profile_samples=self.profile_samples,
            on=self.on,
            executor_flags=self.executor_flags,
            resume_run=self.resume_run,
        )


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


def mode_of(args: ReplayArgs) -> Mode:
    """The mode the command line asks for (the request's); options of other modes are the
    table's business."""
    return ReplayRequest(
        spec_path=args.spec_path,
        results_dir=args.results_dir,
        against=args.against,
        until_decided=args.until_decided,
        claims=args.claims,
        profile=args.profile,
        on=args.on,
        resume_run=args.resume_run,
    ).mode


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
