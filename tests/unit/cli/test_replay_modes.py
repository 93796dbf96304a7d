"""`repro replay`'s modes: picked from the command line, each a list of named steps, and the one
table of which options go with which mode, refused before anything is opened or run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.cli.replay_cmd import ENDINGS, replay
from repro.cli.replay_options import (
    COMPANY,
    MODES,
    Mode,
    check_company,
    given_flags,
    plan_of,
)
from repro.cli.run_output import TerminalReporter
from repro.errors import UsageError
from repro.replay import steps as step
from repro.replay.steps import STEPS
from repro.runs.plan import ReplayPlan, RoundsPlan
from repro.workflow import execute, step_names
from tests.helpers import make_run

SPEC = "specs/ort-digits.json"


def _context(argv: list[str]) -> click.Context:
    return replay.make_context("replay", argv)


def _plan(argv: list[str]) -> ReplayPlan:
    return plan_of(_context(argv).params)[0]


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """No environment is realized, no package opened, no part dispatched."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a refused command line must stop before this")

    for target in (
        "repro.environments.registry.realize",
        "repro.packaging.pack.open_package",
        "repro.replay.dispatched.dispatch",
        "repro.replay.dispatched.resume",
    ):
        monkeypatch.setattr(target, refuse)


def test_every_parameter_of_the_command_reaches_the_plan_or_how_it_is_shown() -> None:
    """Each parameter is a field of the plan (the rounds' in its rounds, LoadGen's overrides in
    its loadgen), one of the executors' flags or the managers' options (any plug-in's, in one
    mapping each), or says how the result is shown (--json, --report-dir)."""
    from repro.dispatch.executors.registry import executor_flags
    from repro.environments.registry import FACES

    flags = {f.param for _, f in executor_flags()}
    managers = {o.param for face in FACES.values() for o in face.options}
    exposed = {p.name for p in replay.params if p.expose_value}  # --track: the catalog step's
    fields = set(ReplayPlan.model_fields) | set(RoundsPlan.model_fields)
    fields |= set(ReplayPlan.model_fields["loadgen"].annotation.model_fields)  # type: ignore[union-attr]
    renamed = {"env_name": "env", "cpus_text": "cpus", "baseline_options": "baseline_options"}
    shown = {"as_json", "report_dir"}
    assert {renamed.get(p, p) for p in exposed - flags - managers - shown} <= fields
    assert flags | managers <= {p.name for p in replay.params}


def test_every_flag_the_table_names_is_one_of_the_command() -> None:
    flags = {p.opts[0] for p in replay.params if isinstance(p, click.Option)} | {"SPEC"}
    for row in COMPANY:
        assert set(row.flags) <= flags, row
        assert row.modes <= MODES, row
        assert row.ignored_in <= MODES, row


def test_every_mode_has_its_steps_and_the_command_ends_the_reporting_ones() -> None:
    assert set(STEPS) == MODES
    assert set(ENDINGS) == {"against", "until-decided", "claims"}


@pytest.mark.parametrize(
    ("argv", "mode"),
    [
        ([SPEC], "plain"),
        ([SPEC, "--profile"], "profile"),
        ([SPEC, "--until-decided"], "until-decided"),
        ([SPEC, "--against", "self"], "against"),
        ([SPEC, "--against", "self", "--until-decided"], "against"),
        ([SPEC, "--claims"], "claims"),
        ([SPEC, "--claims", "--against", "self"], "claims"),
        ([SPEC, "--on", "local"], "on"),
        ([SPEC, "--on", "slurm"], "on"),
        (["--resume", "results/x/r1"], "resume"),
        (["--resume", "results/x/r1", "--on", "slurm"], "resume"),
    ],
)
def test_the_command_line_picks_the_mode(argv: list[str], mode: Mode) -> None:
    assert _plan(argv).mode == mode


def test_each_mode_is_a_list_of_named_steps() -> None:
    names = {mode: step_names(steps) for mode, steps in STEPS.items()}
    spec = ["check_values", "open_package", "load_spec"]
    rounds = ["realize_replay", "play_rounds", "require_comparison"]
    assert names == {
        "plain": [*spec, "realize_replay", "replay_once", "require_complete"],
        "profile": [
            *spec,
            "check_profiler",
            "realize_replay",
            "replay_once",
            "require_complete",
            "require_profiled",
        ],
        "against": [*spec, "plan_rounds", "realize_baseline", *rounds],
        "until-decided": [*spec, "plan_rounds", "open_original", *rounds],
        "claims": [
            *spec,
            "require_claims",
            "realize_replay",
            "replay_once",
            "check_claims",
            "judge_claims",
        ],
        "on": [*spec, "require_performance", "dispatch_parts", "require_complete"],
        "resume": ["check_values", "resume_parts", "require_complete"],
    }


def test_the_command_line_makes_the_engines_plan_parsed() -> None:
    """The plan holds values, not a command line's text: backend options parsed, CPUs as
    numbers, and nothing of how the result is shown."""
    plan = _plan(
        [
            SPEC,
            "--against",
            "self",
            "--backend-option",
            "intra_op_threads=1",
            "--baseline-backend-option",
            'graph_optimization_level="all"',
            "--cpus",
            "0",
        ]
    )
    assert plan.backend_options == {"intra_op_threads": 1}
    assert plan.rounds.baseline_options == {"graph_optimization_level": "all"}
    assert plan.rounds.cpus == (0,)
    assert plan.mode == "against"
    assert not {"as_json", "report_dir"} & set(ReplayPlan.model_fields)


def test_the_engine_steps_neither_print_nor_read_a_command_line() -> None:
    """The engine's steps speak through the reporter only: no click, no print."""
    import ast

    folder = Path(step.__file__).parent
    names = (
        "steps",
        "state",
        "round_steps",
        "claim_steps",
        "dispatch_steps",
        "reporter",
        "packaged",
    )
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text())
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        bad = [m for m in imported if m.split(".")[0] == "click" or m.startswith("repro.cli")]
        assert bad == [], name
        calls = {getattr(n.func, "id", "") for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "print" not in calls, name


def test_a_step_before_its_inputs_is_a_bug_that_says_what_was_missing() -> None:
    with pytest.raises(AssertionError, match="needs a replayer"):
        execute([step.replay_once], step.start(_plan([SPEC]), TerminalReporter()))


def test_given_means_another_value_than_the_default() -> None:
    assert given_flags(_context([SPEC, "--repeat", "1", "--profile-samples", "64"])) == {"SPEC"}
    assert given_flags(_context(["-n", "2", "-s", "Offline", "--shared"])) == {
        "--repeat",
        "--scenario",
        "--exclusive",
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([SPEC, "--on", "local", "--until-decided"], "--on and --resume dispatch a plain replay"),
        (["--resume", "r1", "--profile"], "--on and --resume dispatch a plain replay"),
        (
            ["--resume", "r1", "--repeat", "3", "-s", "Offline"],
            "--resume continues the run with the settings it started with: --scenario, "
            "--repeat would make its parts two experiments",
        ),
        ([SPEC, "--baseline-env", "venv"], "--baseline-env and --baseline-backend-option need"),
        ([SPEC, "--until-decided", "--baseline-backend-option", "a=1"], "need --against"),
        ([SPEC, "--against", "self", "--profile"], "--profile runs after a plain replay"),
        ([SPEC, "--until-decided", "--profile", "--profile-samples", "5"], "runs after a plain"),
        ([SPEC, "--on", "local", "--profile-samples", "5"], "--profile-samples needs --profile"),
        ([SPEC, "--on", "local", "--env", "venv", "--rebuild"], "--rebuild: --env docker's own"),
        (["--on", "local"], "missing SPEC"),
        ([SPEC, "--on", "local", "--time", "30"], "need --on slurm"),
        ([SPEC, "--on", "local", "--claims"], "--claims run on this machine"),
        ([SPEC, "--claims", "--against", "self"], "--claims replays the spec and checks"),
        ([SPEC, "--claims", "--until-decided"], "without --against, --until-decided"),
        ([SPEC, "--against", ""], "--against '': no such file"),
        ([SPEC, "--against", "nope.json"], "--against 'nope.json': no such file"),
    ],
)
def test_options_in_the_wrong_mode_are_refused_before_anything_runs(
    argv: list[str], message: str, root: Path, nothing_runs: None
) -> None:
    argv = [str(root / a) if a == SPEC else a for a in argv]
    result = CliRunner().invoke(cli, ["replay", *argv])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_a_package_is_not_opened_for_a_command_line_that_cannot_run(
    tmp_path: Path, nothing_runs: None
) -> None:
    package = tmp_path / "exp.repro.tar"
    result = CliRunner().invoke(cli, ["replay", str(package), "--profile-samples", "5"])
    assert result.exit_code == 2, result.output
    assert "--profile-samples needs --profile" in result.stderr


def test_a_default_value_given_again_goes_with_resume(tmp_path: Path) -> None:
    run = make_run(tmp_path / "synthetic" / "r1", throughput=[100.0])
    result = CliRunner().invoke(cli, ["replay", "--resume", str(run), "--repeat", "1"])
    assert result.exit_code == 2, result.output
    assert "not a dispatched run" in result.stderr  # refused by the run, not by the table


def test_resume_leaves_what_its_run_holds_unused_as_before() -> None:
    check_company(
        "resume",
        frozenset({"--profile-samples", "--baseline-env", "--rebuild", "--on", "--partition"}),
        env_name="venv",
    )


def test_a_managers_option_goes_with_the_baselines_environment_too() -> None:
    given = frozenset({"SPEC", "--container-cpuset"})
    check_company("against", given, env_name="native", baseline_env="docker")
    with pytest.raises(UsageError, match=r"--container-cpuset: --env docker's own, and neither"):
        check_company("against", given, env_name="native", baseline_env="venv")
