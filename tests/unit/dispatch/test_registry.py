"""Every executor in the registry is complete, the registry is the only list of executors, and
the CLI's `--on` and its flags come from it."""

from __future__ import annotations

import importlib
import json
import typing
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner

from repro.cli.dispatch_opts import check_dispatch_options, dispatch_options
from repro.dispatch.executors.base import (
    ExecutorFlag,
    ExecutorOptions,
    ExecutorPlugin,
    PartState,
    Phase,
)
from repro.dispatch.executors.registry import (
    EXECUTORS,
    executor_from_flags,
    executor_names,
    get_executor,
    resume_executor,
)
from repro.dispatch.plan import DispatchPlan, read_plan
from repro.errors import SpecError, UsageError

PHASES = set(typing.get_args(Phase))


@pytest.mark.parametrize("name", list(EXECUTORS), ids=lambda n: f"executor-{n}")
def test_each_executor_plugin_is_complete(name: str) -> None:
    plugin = EXECUTORS[name]
    assert isinstance(plugin, ExecutorPlugin)
    assert plugin.name == name
    assert plugin.where
    assert issubclass(plugin.options_model, ExecutorOptions)
    defaults = plugin.options_model()  # every option has a default
    module, _, cls = plugin.executor.partition(":")
    assert cls, f"{plugin.executor}: expected module:Class"
    made = getattr(importlib.import_module(module), cls)
    for method in ("submit", "poll", "cancel", "alive", "check"):
        assert callable(getattr(made, method, None)), f"{plugin.executor} has no {method}()"
    executor = plugin.make()
    assert executor.name == name
    assert executor.options == defaults
    assert executor.job is None
    assert executor.poll() == {}  # nothing submitted: nothing to say
    # it translates its own words (the base class translates none)
    assert type(plugin).state is not ExecutorPlugin.state
    state = plugin.state("ANYTHING", "n1", "j1")
    assert isinstance(state, PartState)
    assert state.phase in PHASES
    assert (state.state, state.node, state.job_id) == ("ANYTHING", "n1", "j1")
    for flag in plugin.flags:
        assert flag.decl.startswith("--")
        assert flag.field in plugin.options_model.model_fields, flag
        assert flag.help


def test_no_two_executors_take_the_same_flag() -> None:
    params = [f.param for p in EXECUTORS.values() for f in p.flags]
    decls = [f.decl for p in EXECUTORS.values() for f in p.flags]
    assert len(params) == len(set(params))
    assert len(decls) == len(set(decls))


@pytest.mark.parametrize("command", ["replay", "sweep"])
def test_the_cli_offers_the_registered_executors_and_their_flags(command: str) -> None:
    from repro.cli import cli

    cmd = cli.get_command(click.Context(cli), command)
    assert cmd is not None
    on = next(p for p in cmd.params if p.name == "on")
    assert list(on.type.choices) == executor_names()  # type: ignore[attr-defined]
    names = {p.name for p in cmd.params}
    assert {f.param for p in EXECUTORS.values() for f in p.flags} <= names


def test_unknown_executor_lists_the_choices() -> None:
    with pytest.raises(UsageError, match=r"unknown executor 'nope'; expected one of \['local'"):
        get_executor("nope")


def _plan(**fields: Any) -> dict[str, Any]:
    return {
        "run_id": "r1",
        "run_dir": "/r",
        "spec_path": "/s.json",
        "spec": {},
        "env": "native",
        "cache_dir": "/c",
        "parts": 2,
        "python": ["python3"],
        **fields,
    }


def test_a_plan_names_a_registered_executor_with_options_it_takes(tmp_path: Path) -> None:
    plan = DispatchPlan.model_validate(_plan(executor="slurm", executor_options={"time": "5"}))
    assert plan.options() == get_executor("slurm").options_from({"time_limit": "5"})
    path = tmp_path / "plan.json"
    for bad, where in (
        (_plan(executor="nope"), r"\$\.executor: unknown executor 'nope'; expected one of"),
        (_plan(executor="slurm", executor_options={"time": "0"}), r"\$.*time"),
        (_plan(executor="local", executor_options={"partition": "x"}), r"\$.*partition"),
        (_plan(parts=0), r"\$\.parts: Input should be greater than or equal to 1"),
    ):
        path.write_text(json.dumps(bad))
        with pytest.raises(SpecError, match=rf"(?s)invalid dispatch plan.*{where}"):
            read_plan(path)
    path.write_text("{")
    with pytest.raises(SpecError, match="not a repro dispatch plan"):
        read_plan(path)


def test_a_plan_of_before_the_registry_is_read_as_ever(tmp_path: Path) -> None:
    """Plans written before `executor_options` held Slurm's options under "slurm" (null for a
    local run)."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan(executor="slurm", slurm={"partition": "debug"})))
    assert read_plan(path).executor_options["partition"] == "debug"
    path.write_text(json.dumps(_plan(executor="local", slurm=None)))
    assert read_plan(path).options() == get_executor("local").options_model()
    # resumed with --on local, a Slurm run's plan kept Slurm's options beside it
    path.write_text(json.dumps(_plan(executor="local", slurm={"partition": "debug"})))
    assert read_plan(path).executor_options == {}


class _FlagOptions(ExecutorOptions):
    colour: str = "blue"
    count: int | None = None


class _FlagPlugin(ExecutorPlugin):
    """An executor with flags of its own, registered as a plug-in would be."""

    name: ClassVar[str] = "flagged"
    where = "nowhere"
    options_model = _FlagOptions
    executor = "repro.dispatch.executors.local:LocalExecutor"
    flags = (
        ExecutorFlag("--colour", "colour", "colour", "a colour.", hint="blue or red"),
        ExecutorFlag("--count", "count", "count", "how many.", kind="count"),
    )


@pytest.fixture
def flagged(monkeypatch: pytest.MonkeyPatch) -> _FlagPlugin:
    plugin = _FlagPlugin()
    monkeypatch.setitem(EXECUTORS, plugin.name, plugin)
    return plugin


def test_a_new_executors_flags_reach_a_command_and_its_options(flagged: _FlagPlugin) -> None:
    seen: dict[str, Any] = {}

    @click.command()
    @dispatch_options("a thing")
    def command(on: str | None, **flags: Any) -> None:
        check_dispatch_options(on=on, **flags)
        seen.update(on=on, options=flagged.options_from(flags))

    result = CliRunner().invoke(command, ["--on", "flagged", "--colour", "red", "--count", "3"])
    assert result.exit_code == 0, result.output
    assert seen == {"on": "flagged", "options": _FlagOptions(colour="red", count=3)}
    result = CliRunner().invoke(command, ["--colour", "red"])
    assert isinstance(result.exception, UsageError)
    assert result.exception.message == "--colour and --count need --on flagged"
    assert "flagged: nowhere" in CliRunner().invoke(command, ["--help"]).output


def test_a_flag_value_the_options_refuse_names_the_flag() -> None:
    with pytest.raises(UsageError, match=r"--time '0': not a time limit") as exc:
        check_dispatch_options(on="slurm", time_limit="0")
    assert "UNLIMITED" in (exc.value.hint or "")
    with pytest.raises(UsageError, match=r"--partition 'a b': not a partition name"):
        check_dispatch_options(on=None, resuming=True, partition="a b")


def test_a_resumed_run_keeps_its_executor_and_options_unless_given_again() -> None:
    plan = DispatchPlan.model_validate(
        _plan(executor="slurm", executor_options={"partition": "debug", "time": "10:00"})
    )
    again = resume_executor(plan, None, {"time_limit": "20:00"})
    assert again.name == "slurm"
    assert again.options == get_executor("slurm").options_from(
        {"partition": "debug", "time_limit": "20:00"}
    )
    assert resume_executor(plan, "local", {"time_limit": "20:00"}).name == "local"
    assert executor_from_flags("local", {"partition": "x"}).name == "local"  # not its flag
