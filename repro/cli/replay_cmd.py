"""`repro replay SPEC`: run the experiment with LoadGen and write a run directory.

The command reads its mode from the options, checks them against the table of which options go
with which mode (`replay_options.COMPANY`), and hands the engine (`repro.replay.steps`) its
request with a reporter that prints; the rounds' and the claims' reports are written here, and
the command exits as `repro report` does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from repro.cli.dispatch_opts import check_dispatch_options, dispatch_options
from repro.cli.options import (
    cache_dir_option,
    env_option,
    json_option,
    loadgen_override,
    manager_options,
    results_dir_option,
    track_option,
)
from repro.cli.params import Finite
from repro.cli.progress import note
from repro.cli.replay_options import Mode, Shown, check_company, given_flags, plan_of
from repro.cli.run_output import TerminalReporter
from repro.environments.registry import replay_choices
from repro.profiling import DEFAULT_SAMPLES, MAX_SAMPLES
from repro.spec.models import SCENARIOS

if TYPE_CHECKING:
    from repro.replay.state import ReplayState


@click.command()
@click.argument("spec_path", metavar="SPEC", required=False, type=click.Path(path_type=Path))
@click.option(
    "--scenario",
    "-s",
    "scenarios",
    multiple=True,
    type=click.Choice(SCENARIOS),
    help="Run only this scenario (repeatable). Default: all in the spec.",
)
@click.option(
    "--mode",
    "-m",
    "modes",
    multiple=True,
    type=click.Choice(["performance", "accuracy"]),
    help="Run only this mode (repeatable). Default: the spec's modes.",
)
@loadgen_override("min_duration_ms", "Override min_duration_ms of every scenario (quick runs).")
@loadgen_override("min_query_count", "Override min_query_count of every scenario.")
@loadgen_override("max_duration_ms", "Override max_duration_ms of every scenario.")
@click.option(
    "--backend-option",
    "backend_options",
    multiple=True,
    help="key=value overriding a backend option, e.g. intra_op_threads=1; the run records it "
    "and the report shows it as drift.",
)
@click.option(
    "--repeat",
    "-n",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Independent performance runs per scenario, for the report's statistics.",
)
@env_option()
@manager_options()
@results_dir_option
@click.option("--run-id", default=None, help="Name of the run directory (default: time-based).")
@click.option(
    "--against",
    "against",
    default=None,
    help="Interleave with a baseline in paired rounds: another spec, or `self` (this spec, "
    "e.g. with --baseline-env or --baseline-backend-option). Writes both runs and a report.",
)
@click.option(
    "--baseline-env",
    default=None,
    type=click.Choice(replay_choices()),
    help="The baseline's environment (default: --env).",
)
@click.option(
    "--baseline-backend-option",
    "baseline_options",
    multiple=True,
    help="key=value for the baseline's backend (repeatable).",
)
@click.option(
    "--until-decided",
    is_flag=True,
    help="Add rounds until every headline metric is decided (within the caps), judged against "
    "the baseline or, without --against, the spec's stored original.",
)
@click.option(
    "--claims",
    "claims",
    is_flag=True,
    help="Check the spec's claims too: each claim's variants interleaved on this machine until "
    "decided; the report's Claims section comes first, and --json and the exit code follow the "
    "claims (0 hold, 1 one does not hold).",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(min=1, max=1000),
    default=None,
    help="Cap on rounds with --until-decided (default 32: looks after rounds 8, 16, 32); the "
    "rounds with --against otherwise (default: --repeat; a paired verdict needs at least 8); "
    "per claim with --claims (default: the claim's).",
)
@click.option(
    "--max-time",
    "max_time_s",
    type=Finite(min=1, max=7 * 24 * 3600),
    default=None,
    help="Cap on the seconds of rounds with --until-decided (default 600); per claim with "
    "--claims (default: the claim's).",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where --against/--until-decided write their report (default: reports/<name>/).",
)
@click.option(
    "--duet",
    is_flag=True,
    help="With --against: run the two sides of each round at the same time, each pinned to its "
    "own CPUs (the spec's threads a side; from --cpus, else every CPU), so that a neighbour's "
    "load falls on both alike (duet benchmarking).",
)
@click.option(
    "--cpus",
    "cpus_text",
    default=None,
    metavar="LIST",
    help="Pin every test of the rounds (LoadGen and the worker) to these CPUs, e.g. 1 or 0-3; "
    "with --duet, the CPUs the two sides' sets are drawn from.",
)
@click.option(
    "--order-seed",
    type=click.IntRange(min=0, max=2**32 - 1),
    default=None,
    help="Seed of the random A/B order of the rounds (default: drawn, and recorded).",
)
@click.option(
    "--profile",
    "profile",
    is_flag=True,
    help="After the tests, a profiled pass (not measured): per-layer times from the backend's "
    "own profiler in profile/<Scenario>/ (SingleStream if run, else the first scenario).",
)
@click.option(
    "--profile-samples",
    type=click.IntRange(min=1, max=MAX_SAMPLES),
    default=DEFAULT_SAMPLES,
    show_default=True,
    help="Samples of the profiled pass.",
)
@dispatch_options("the replay")
@click.option(
    "--resume",
    "resume_run",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run again the parts of a dispatched run (RUN) that did not finish, and gather it.",
)
@click.option(
    "--key",
    "key_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="When SPEC is a package: the signer's public key (repro-signing.pub); the replay runs "
    "only if the signature verifies and covers every file. Without it, this user's own key "
    "when it is the signer's; else the signature is not checked, and the replay says so.",
)
@cache_dir_option
@track_option
@json_option
@click.pass_context
def replay(ctx: click.Context, /, **values: Any) -> None:
    """Replay an experiment: verify artifacts, realize the environment, run LoadGen.

    Writes results/<name>/<run-id>/ with LoadGen's logs per scenario and mode, and run.json.
    Exit 3 when LoadGen judges a run INVALID or a test fails (the run directory is kept).

    With --against, the replay and a baseline alternate in rounds on this machine (a random
    order from a recorded seed) and the report judges their per-round ratios; with
    --until-decided, rounds are added until the verdict is decided or a cap is reached.
    Both write a report to reports/<name>/ and exit like `repro report`. With --json, stdout
    is one JSON document: the run record, or the report (--against, --until-decided), or the
    claims' check (--claims).

    \b
    Example:
      repro replay specs/ort-digits.json --min-duration-ms 1000 --repeat 3
      repro replay specs/ort-digits.json --against self --until-decided --max-rounds 16
      repro replay specs/ort-resnet50.json --claims --min-duration-ms 1000
      repro replay specs/ort-resnet50.json --against self --baseline-backend-option \\
        intra_op_threads=1 --repeat 3
      repro replay specs/ort-digits.json --on slurm --repeat 4 --partition debug
      repro replay --resume results/ort-digits/20261130T101500Z-3fa2c1
    """
    from repro.replay.steps import replay as run

    plan, shown = plan_of(values)
    mode = plan.mode
    check_dispatch_options(on=plan.on, resuming=mode == "resume", **plan.executor_flags)
    check_company(mode, given_flags(ctx), env_name=plan.env, baseline_env=plan.rounds.baseline_env)
    # with --json, a mode that ends in a report prints that one document (not each run)
    reporter = TerminalReporter(shown.as_json, show_runs=not (shown.as_json and mode in ENDINGS))
    state = run(plan, reporter)
    ending = ENDINGS.get(mode)
    if ending is not None:
        ending(state, shown)


def report_rounds(state: ReplayState, args: Shown) -> None:
    """The rounds' report written (with --json, printed: stdout is one JSON document); the
    command exits as `repro report` does."""
    from repro.cli.report_cmd import write_report
    from repro.replay.round_steps import what_would_decide
    from repro.replay.state import need

    report = need(need(state.outcome, "the rounds").report, "the rounds' report")
    code = write_report(
        report, output=args.report_dir, formats=("md", "html", "json"), quiet=args.as_json
    )
    if args.as_json:  # after the files: a document on stdout means the report was written
        click.echo(report.model_dump_json(indent=2, by_alias=True))
    advice = what_would_decide(state)
    if advice is not None and not args.as_json:
        note(f"next: {advice}")
    raise click.exceptions.Exit(code)


def report_claims(state: ReplayState, args: Shown) -> None:
    """The report: the claims first, then the replay against the spec's original (when it has
    one, and they have something to compare); the exit code and --json follow the claims."""
    from repro.cli.claim_cmds import write_claims
    from repro.cli.report_cmd import write_report
    from repro.replay.state import need
    from repro.reports.claims_page import render_text

    spec, check = need(state.spec, "the spec"), need(state.claims_check, "the claims' check")
    if args.as_json:
        click.echo(check.model_dump_json(indent=2, by_alias=True))
    if state.claims_report is None:
        write_claims(check, args.report_dir or Path("reports") / spec.name)
        if not args.as_json:
            click.echo(render_text(check), nl=False)
        raise click.exceptions.Exit(check.exit_code())
    code = write_report(
        state.claims_report,
        output=args.report_dir,
        formats=("md", "html", "json"),
        quiet=args.as_json,
    )
    raise click.exceptions.Exit(code)


#: what the command writes after the engine's steps, by mode (the others: the runs it printed)
ENDINGS: Final[Mapping[Mode, Callable[[ReplayState, Shown], None]]] = {
    "against": report_rounds,
    "until-decided": report_rounds,
    "claims": report_claims,
}
