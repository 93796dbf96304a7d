"""The steps of paired rounds (`--against`, `--until-decided`): when they stop, where their
tests run, the baseline or the original, the rounds, and what would decide them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from repro.errors import RunError, UsageError
from repro.replay.request import ReplayRequest
from repro.replay.state import (
    ReplayState,
    need,
    open_replayer,
    raise_unless_complete,
    with_backend_options,
)

if TYPE_CHECKING:
    from repro.runs.placement import Placement
    from repro.spec.models import ExperimentSpec


#: rounds until decided: the cap on rounds (looks after rounds 8, 16 and 32:
#: `repro.stats.sequential`) and on their seconds
DEFAULT_MAX_ROUNDS: Final = 32
DEFAULT_MAX_TIME_S: Final = 600.0


# -- rounds (against a baseline, or until decided)


def plan_rounds(state: ReplayState) -> ReplayState:
    """When the rounds stop, where their tests run, and the replay's run id (`<id>-replay`
    beside a baseline)."""
    from repro.replay.options import new_run_id
    from repro.stats.sequential import Stopping

    request, opts = state.request, need(state.opts, "the options")
    fallback = DEFAULT_MAX_ROUNDS if request.until_decided else opts.repeat
    stopping = Stopping(
        max_rounds=request.max_rounds or fallback,
        max_time_s=DEFAULT_MAX_TIME_S if request.max_time_s is None else request.max_time_s,
        fixed=not request.until_decided,
    )
    spec = need(state.spec, "the spec")
    too_few = stopping.too_few(spec.tolerances.confidence)
    if too_few is not None and request.against is not None:
        state.note(f"{too_few}: the report will show the figures, undecided")
    placed = _placement(request, spec)
    state.note(f"rounds: {placed.describe()}")
    opts = replace(opts, env_options=_pinned_options(request, opts.env_options, placed))
    base_id = opts.run_id or new_run_id()
    opts = replace(opts, run_id=f"{base_id}-replay" if request.against else base_id)
    return replace(state, stopping=stopping, base_id=base_id, opts=opts, placement=placed)


def _pinned_options(
    request: ReplayRequest, options: Mapping[str, Any], placed: Placement
) -> dict[str, Any]:
    """The options of the managers the rounds name (not `auto`) for tests pinned where the
    rounds pin them (`EnvironmentManager.with_cpus`: docker's container holds those CPUs)."""
    from repro.environments.registry import FACES, MANAGERS

    cpus = sorted({c for s in placed.cpus for c in s})
    out = dict(options)
    if cpus:
        for name in dict.fromkeys((request.env_name, request.baseline_env or request.env_name)):
            if name in FACES:  # not `auto`
                out = MANAGERS[name].with_cpus(out, cpus)
    return out


def _placement(request: ReplayRequest, spec: ExperimentSpec) -> Placement:
    """Where the rounds' tests run (`repro.duet`): in duet, pinned, or as the system places
    them."""
    from repro.backends.registry import get_backend
    from repro.duet import placement

    threads = get_backend(spec.backend.name).threads(spec.backend.options)
    return placement(duet=request.duet, cpus=request.cpus, threads=threads)


def realize_baseline(state: ReplayState) -> ReplayState:
    """The baseline spec as written (the replay's backend options are not its own), with the
    baseline's options, realized in its environment (default: the replay's)."""
    from repro.validate import require_valid

    request, opts = state.request, need(state.opts, "the options")
    against = need(request.against, "a baseline")
    path = need(state.spec_path, "SPEC") if against == "self" else Path(against)
    spec = with_backend_options(require_valid(path), path, request.baseline_options)
    options = opts.env_options
    if against != "self":  # a package's wheels, image and mirror build the package's spec only
        options = {k: v for k, v in options.items() if k not in state.package_options}
    baseline = open_replayer(
        state,
        spec,
        path,
        request.baseline_env or request.env_name,
        replace(opts, run_id=f"{need(state.base_id, 'a run id')}-baseline", env_options=options),
    )
    return replace(state, baseline=baseline)


def open_original(state: ReplayState) -> ReplayState:
    """Until decided, without a baseline: the spec's original run, to judge the rounds
    against."""
    from repro.mlperf.sides import open_run
    from repro.spec.paths import resolve_path

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
    from repro.replay.rounds import run_rounds

    outcome = run_rounds(
        need(state.replayer, "a replayer"),
        stopping=need(state.stopping, "the stopping rule"),
        against=state.baseline,
        original=state.original,
        seed=state.request.order_seed,
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
    from repro.backends.registry import get_backend
    from repro.duet import duet_fits
    from repro.replay.rounds import what_would_decide as advice

    outcome, spec = need(state.outcome, "the rounds"), need(state.spec, "the spec")
    if state.request.against is None or outcome.report is None:
        return None
    threads = get_backend(spec.backend.name).threads(spec.backend.options) or 1
    fits = duet_fits(len(os.sched_getaffinity(0)), threads)
    return advice(outcome.report, outcome.run[1], duet_fits=fits)
