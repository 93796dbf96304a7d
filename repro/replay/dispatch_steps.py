"""The steps of a dispatched replay (`--on EXECUTOR`, `--resume RUN`): the parts on an
executor, gathered into one run; an interrupted one says what was gathered."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

from repro.dispatch.executors.base import Executor
from repro.dispatch.executors.registry import executor_from_flags, resume_executor
from repro.dispatch.plan import DispatchPlan
from repro.errors import UsageError
from repro.replay.dispatched import DispatchInterrupted, dispatch, resume
from repro.replay.session import ReplaySession
from repro.replay.state import ReplayState, need

# -- dispatched


def require_performance(state: ReplayState) -> ReplayState:
    """Dispatched: the parts are performance rounds; accuracy alone is no part."""
    spec = need(state.spec, "the spec")
    if "performance" not in (state.plan.modes or spec.workload.modes):
        raise UsageError(
            "--on dispatches performance rounds as parts; accuracy alone runs once, without --on"
        )
    return state


def dispatch_parts(state: ReplayState) -> ReplayState:
    """The parts on the plan's executor, gathered into one run."""
    plan = state.plan
    spec, spec_path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    executor = executor_from_flags(need(plan.on, "an executor"), plan.executor_flags)

    def warm_up() -> None:
        session = ReplaySession.open(
            spec,
            spec_path,
            plan,
            report=state.note,
            progress=state.reporter.progress,
            cache=state.cache,
            given=state.package_options,
        )
        state.note(f"each part realizes {session.env.manager} on its node")

    with _said_when_interrupted(state):
        run = dispatch(
            spec,
            spec_path,
            plan,
            cache=state.cache,
            executor=executor,
            warm_up=warm_up,
            report=state.note,
            given=state.package_options,
        )
    state.reporter.run(*run, "run")
    return replace(state, run=run)


def resume_parts(state: ReplayState) -> ReplayState:
    """The parts of a dispatched run that did not finish, on the run's own executor and options
    unless the plan names others."""
    plan = state.plan

    def executor_for(dispatched: DispatchPlan) -> Executor:
        return resume_executor(dispatched, plan.on, plan.executor_flags)

    with _said_when_interrupted(state):
        run = resume(need(plan.resume_run, "a run to resume"), executor_for, state.note)
    state.reporter.run(*run, "run")
    return replace(state, run=run)


@contextlib.contextmanager
def _said_when_interrupted(state: ReplayState) -> Iterator[None]:
    """Ctrl-C of a dispatched run: what was gathered, and how to resume, before the interrupt
    goes on."""
    try:
        yield
    except DispatchInterrupted as stop:
        state.reporter.run(stop.final, stop.record, "interrupted")
        if stop.record.message:
            state.note(stop.record.message)
        raise KeyboardInterrupt from None
