"""The steps of paired rounds (`--against`, `--until-decided`): when they stop, where their
tests run, the baseline or the original, the rounds, and what would decide them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from repro.backends.registry import get_backend
from repro.duet import duet_fits, placement
from repro.environments.registry import FACES, MANAGERS
from repro.errors import RunError, UsageError
from repro.mlperf.sides import open_run
from repro.replay.round_judge import judged_rounds
from repro.replay.round_judge import what_would_decide as advice
from repro.replay.settings import new_run_id
from repro.replay.state import (
    ReplayState,
    need,
    open_replayer,
    raise_unless_complete,
    with_backend_options,
)
from repro.runs.placement import Placement
from repro.runs.plan import ReplayPlan
from repro.spec.models import ExperimentSpec
from repro.spec.paths import resolve_path
from repro.stats.sequential import Stopping
from repro.validate import require_valid

#: rounds until decided: the cap on rounds (looks after rounds 8, 16 and 32:
#: `repro.stats.sequential`) and on their seconds
DEFAULT_MAX_ROUNDS: Final = 32
DEFAULT_MAX_TIME_S: Final = 600.0


# -- rounds (against a baseline, or until decided)


def plan_rounds(state: ReplayState) -> ReplayState:
    """When the rounds stop, where their tests run, and the replay's run id (`<id>-replay`
    beside a baseline)."""
    plan = state.plan
    asked = plan.rounds
    fallback = DEFAULT_MAX_ROUNDS if asked.until_decided else plan.repeat
    stopping = Stopping(
        max_rounds=asked.max_rounds or fallback,
        max_time_s=DEFAULT_MAX_TIME_S if asked.max_time_s is None else asked.max_time_s,
        fixed=not asked.until_decided,
    )
    spec = need(state.spec, "the spec")
    too_few = stopping.too_few(spec.tolerances.confidence)
    if too_few is not None and asked.against is not None:
        state.note(f"{too_few}: the report will show the figures, undecided")
    placed = _placement(plan, spec)
    state.note(f"rounds: {placed.describe()}")
    base_id = plan.run_id or new_run_id()
    plan = plan.but(
        env_options=_pinned_options(plan, placed),
        run_id=f"{base_id}-replay" if asked.against else base_id,
    )
    return replace(state, stopping=stopping, base_id=base_id, plan=plan, placement=placed)


def _pinned_options(plan: ReplayPlan, placed: Placement) -> dict[str, Any]:
    """The options of the managers the rounds name (not `auto`) for tests pinned where the
    rounds pin them (`EnvironmentManager.with_cpus`: docker's container holds those CPUs)."""
    cpus = sorted({c for s in placed.cpus for c in s})
    out: Mapping[str, Any] = dict(plan.env_options)
    if cpus:
        for name in dict.fromkeys((plan.env, plan.rounds.baseline_env or plan.env)):
            if name in FACES:  # not `auto`
                out = MANAGERS[name].with_cpus(out, cpus)
    return dict(out)


def _placement(plan: ReplayPlan, spec: ExperimentSpec) -> Placement:
    """Where the rounds' tests run (`repro.duet`): in duet, pinned, or as the system places
    them."""
    threads = get_backend(spec.backend.name).threads(spec.backend.options)
    return placement(duet=plan.rounds.duet, cpus=plan.rounds.cpus, threads=threads)


def realize_baseline(state: ReplayState) -> ReplayState:
    """The baseline spec as written (the replay's backend options are not its own), with the
    baseline's options, realized in its environment (default: the replay's)."""
    plan = state.plan
    against = need(plan.rounds.against, "a baseline")
    path = need(state.spec_path, "SPEC") if against == "self" else Path(against)
    spec = with_backend_options(require_valid(path), path, plan.rounds.baseline_options)
    baseline_plan = plan.but(
        env=plan.rounds.baseline_env or plan.env,
        run_id=f"{need(state.base_id, 'a run id')}-baseline",
    )
    # a package's wheels, image and mirror build the package's own spec only
    given = state.package_options if against == "self" else None
    baseline = open_replayer(state, spec, path, baseline_plan, given=given)
    return replace(state, baseline=baseline)


def open_original(state: ReplayState) -> ReplayState:
    """Until decided, without a baseline: the spec's original run, to judge the rounds
    against."""
    spec, spec_path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if spec.original is None:
        raise UsageError(
            f"{spec_path}: $.original: --until-decided without --against judges the replay "
            "against the spec's original, and it has none",
            hint="capture one (`repro capture`), or compare with --against self",
        )
    return replace(state, original=open_run(resolve_path(spec.original.path, spec_path.parent)))


def play_rounds(state: ReplayState) -> ReplayState:
    """The rounds, interleaved with the baseline's or judged against the original; the runs
    shown."""
    outcome = judged_rounds(
        need(state.replayer, "a replayer"),
        stopping=need(state.stopping, "the stopping rule"),
        against=state.baseline,
        original=state.original,
        seed=state.plan.rounds.order_seed,
        report=state.note,
        placement=need(state.placement, "the placement"),
    )
    state.reporter.run(*outcome.run, "run")
    if outcome.baseline is not None:
        state.reporter.run(*outcome.baseline, "baseline")
    return replace(state, outcome=outcome)


def require_comparison(state: ReplayState) -> ReplayState:
    """The rounds gave a report: some scenario finished on both sides."""
    outcome = need(state.outcome, "the rounds")
    if outcome.report is None:
        raise_unless_complete(*outcome.run)
        raise RunError("nothing to compare: no scenario finished on both sides")
    return state


def what_would_decide(state: ReplayState) -> str | None:
    """Rounds against a baseline that ended undecided: what would decide them (a quieter
    machine, duet, more rounds); None when decided or judged against an original."""
    outcome, spec = need(state.outcome, "the rounds"), need(state.spec, "the spec")
    if state.plan.rounds.against is None or outcome.report is None:
        return None
    threads = get_backend(spec.backend.name).threads(spec.backend.options) or 1
    fits = duet_fits(len(os.sched_getaffinity(0)), threads)
    return advice(outcome.report, outcome.run[1], duet_fits=fits)
