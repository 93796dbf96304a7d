"""The steps of a replay, each a small function of what the steps before it found, and each
mode's list of them (`STEPS`): the engine's side of `repro replay`, with no command line and no
printing. A front end validates its values into a `ReplayPlan`, runs `replay(plan, reporter)`,
and shows or writes what the final state holds (`repro.cli.replay_cmd` prints the runs the
reporter is shown and writes the rounds' and the claims' reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Final

from repro.errors import RunError, UsageError
from repro.packaging.pack import is_package
from repro.profiling import check_profiler as check_backend_profiler
from repro.replay.claim_steps import check_claims, judge_claims, require_claims
from repro.replay.dispatch_steps import dispatch_parts, require_performance, resume_parts
from repro.replay.packaged import original_beside, unpacked
from repro.replay.reporter import ReplayReporter
from repro.replay.round_steps import (
    open_original,
    plan_rounds,
    play_rounds,
    realize_baseline,
    require_comparison,
)
from repro.replay.state import (
    ReplayState,
    need,
    open_replayer,
    raise_unless_complete,
    start,
    with_backend_options,
)
from repro.runs.layout import component
from repro.runs.plan import Mode, ReplayPlan
from repro.spec.paths import spec_file
from repro.validate import require_valid
from repro.workflow import Step, execute


def replay(plan: ReplayPlan, reporter: ReplayReporter) -> ReplayState:
    """Run the plan's mode, step by step; the final state holds what it made."""
    return execute(STEPS[plan.mode], start(plan, reporter))


# -- before anything is opened


def check_values(state: ReplayState) -> ReplayState:
    """The run id names one folder, a baseline is `self` or a spec file (the executors' flags
    were checked by the front end): refused before any note or work."""
    plan = state.plan
    if plan.run_id is not None:
        component(plan.run_id, what="--run-id")
    against = plan.rounds.against
    if against is not None and against != "self" and not Path(against).is_file():
        why = "no such file" if not Path(against).exists() or not against else "not a file"
        raise UsageError(
            f"--against {against!r}: {why}",
            hint="give the baseline's spec (a JSON file), or `self` for an A/A of the spec",
        )
    if against is not None and against != "self" and is_package(Path(against)):
        # it was read as a spec ("not UTF-8")
        raise UsageError(
            f"--against {against}: a package, not a spec: the baseline is given as its spec",
            hint=f"unpack it (`repro unpack {against} -o DIR`) and give DIR's spec, or replay "
            "the package itself as SPEC",
        )
    return state


# -- the spec


def open_package(state: ReplayState) -> ReplayState:
    """A package: unpacked (checked) under the cache, its spec and what its contents give the
    environment; any other spec path as it is."""
    plan, package = state.plan, need(state.spec_path, "SPEC")
    if not is_package(package):
        if plan.key_path is not None:
            raise UsageError(
                f"--key checks a package's signature; {package} is not a package",
                hint="verify a spec's attestation with `repro verify SPEC --key PUB`",
            )
        return state
    spec_path, options, packed = unpacked(
        package, plan.env, state.cache, plan.key_path, report=state.note
    )
    if packed:
        original_beside(spec_path, plan.results_dir, report=state.note)
    return replace(state, spec_path=spec_path, package_options=options, original_packed=packed)


def load_spec(state: ReplayState) -> ReplayState:
    """The spec, valid, with the plan's backend options applied."""
    path = spec_file(need(state.spec_path, "SPEC"))
    spec = with_backend_options(require_valid(path), path, state.plan.backend_options)
    if not state.original_packed:
        spec = spec.model_copy(update={"original": None})  # not in the package: none here
    return replace(state, spec=spec, spec_path=path)


def check_profiler(state: ReplayState) -> ReplayState:
    """A profiled pass: the spec's backend has a profiler."""
    check_backend_profiler(need(state.spec, "the spec"))
    return state


# -- on this machine


def realize_replay(state: ReplayState) -> ReplayState:
    """The environment realized (a session), and the replay's Replayer in it."""
    replayer = open_replayer(
        state,
        need(state.spec, "the spec"),
        need(state.spec_path, "SPEC"),
        state.plan,
        given=state.package_options,
    )
    return replace(state, replayer=replayer)


def replay_once(state: ReplayState) -> ReplayState:
    """The tests (and a profiled pass when asked), one run, shown."""
    run = need(state.replayer, "a replayer").run()
    state.reporter.run(*run, "run")
    return replace(state, run=run)


def require_profiled(state: ReplayState) -> ReplayState:
    """A profiled pass: it completed."""
    run_dir, record = need(state.run, "a run")
    failed = [p for p in record.profiles if p.status != "complete"]
    if failed:
        raise RunError(
            f"the profiled pass failed: {failed[0].error}",
            hint=f"the tests are complete; the worker's log is in {run_dir / failed[0].dir}",
        )
    return state


def require_complete(state: ReplayState) -> ReplayState:
    """A run that did not complete is an error (exit 3); its folder stays."""
    raise_unless_complete(*need(state.run, "a run"))
    return state


Steps = tuple[Step[ReplayState], ...]

#: the first steps of every mode that starts from a spec
_FROM_SPEC: Final[Steps] = (check_values, open_package, load_spec)
#: rounds on this machine, from the replay's realization to a comparison
_ROUNDS: Final[Steps] = (realize_replay, play_rounds, require_comparison)

#: each mode's steps, in order
STEPS: Final[Mapping[Mode, Steps]] = {
    "plain": (*_FROM_SPEC, realize_replay, replay_once, require_complete),
    "profile": (
        *_FROM_SPEC,
        check_profiler,
        realize_replay,
        replay_once,
        require_complete,
        require_profiled,
    ),
    "against": (*_FROM_SPEC, plan_rounds, realize_baseline, *_ROUNDS),
    "until-decided": (*_FROM_SPEC, plan_rounds, open_original, *_ROUNDS),
    "claims": (
        *_FROM_SPEC,
        require_claims,
        realize_replay,
        replay_once,
        check_claims,
        judge_claims,
    ),
    "on": (*_FROM_SPEC, require_performance, dispatch_parts, require_complete),
    "resume": (check_values, resume_parts, require_complete),
}
