"""The steps of a dispatched replay (`--on EXECUTOR`, `--resume RUN`): the parts on an
executor, gathered into one run; an interrupted one says what was gathered."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from repro.errors import UsageError
from repro.replay.state import ReplayState, need

if TYPE_CHECKING:
    from repro.dispatch.executors.base import Executor
    from repro.dispatch.plan import DispatchPlan


# -- dispatched


def require_performance(state: ReplayState) -> ReplayState:
    """Dispatched: the parts are performance rounds; accuracy alone is no part."""
    spec = need(state.spec, "the spec")
    if "performance" not in (state.request.modes or spec.workload.modes):
        raise UsageError(
            "--on dispatches performance rounds as parts; accuracy alone runs once, without --on"
        )
    return state


def dispatch_parts(state: ReplayState) -> ReplayState:
    """The parts on the request's executor, gathered into one run."""
    from repro.dispatch.executors.registry import executor_from_flags
    from repro.replay.dispatched import dispatch

    request, opts = state.request, need(state.opts, "the options")
    spec, spec_path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    executor = executor_from_flags(need(request.on, "an executor"), request.executor_flags)

    def warm_up() -> None:
        from repro.environments.registry import realize

        env = realize(
            request.env_name,
            spec,
            spec_path,
            state.cache.root / "envs",
            report=state.note,
            options=opts.env_options,
        )
        state.note(f"environment: {env.manager} ({env.reason}); each part realizes it on its node")

    with _said_when_interrupted(state):
        run = dispatch(
            spec,
            spec_path,
            opts,
            env_name=request.env_name,
            cache=state.cache,
            executor=executor,
            warm_up=warm_up,
            report=state.note,
        )
    state.reporter.run(*run, "run")
    return replace(state, run=run)


def resume_parts(state: ReplayState) -> ReplayState:
    """The parts of a dispatched run that did not finish, on the run's own executor and options
    unless the request names others."""
    from repro.dispatch.executors.registry import resume_executor
    from repro.replay.dispatched import resume

    request = state.request

    def executor_for(plan: DispatchPlan) -> Executor:
        return resume_executor(plan, request.on, request.executor_flags)

    with _said_when_interrupted(state):
        run = resume(need(request.resume_run, "a run to resume"), executor_for, state.note)
    state.reporter.run(*run, "run")
    return replace(state, run=run)


@contextlib.contextmanager
def _said_when_interrupted(state: ReplayState) -> Iterator[None]:
    """Ctrl-C of a dispatched run: what was gathered, and how to resume, before the interrupt
    goes on."""
    from repro.replay.dispatched import DispatchInterrupted

    try:
        yield
    except DispatchInterrupted as stop:
        state.reporter.run(stop.final, stop.record, "interrupted")
        if stop.record.message:
            state.note(stop.record.message)
        raise KeyboardInterrupt from None
