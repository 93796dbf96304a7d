"""The steps of a replay, each a small function of what the steps before it found, and each
mode's list of them (`STEPS`): the engine's side of `repro replay`, with no command line and no
printing. A front end fills in a `ReplayRequest`, runs `replay(request, reporter)`, and shows or
writes what the final state holds (`repro.cli.replay_cmd` prints the runs the reporter is shown
and writes the rounds' and the claims' reports).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from repro.artifacts.cache import ArtifactCache
from repro.errors import RunError, UsageError
from repro.replay.request import Mode, ReplayReporter, ReplayRequest
from repro.workflow import Step, execute

if TYPE_CHECKING:
    from repro.claim_rounds import Outcome as ClaimOutcome
    from repro.dispatch.executors.base import Executor
    from repro.dispatch.plan import DispatchPlan
    from repro.replay.engine import Replayer, ReplayOptions
    from repro.reports.model import ClaimsCheck, Report
    from repro.rounds import Outcome
    from repro.runs.placement import Placement
    from repro.runs.record import RunRecord
    from repro.runs.store import LoadedRun
    from repro.spec.models import ExperimentSpec
    from repro.stats.sequential import Stopping

T = TypeVar("T")

#: rounds until decided: the cap on rounds (looks after rounds 8, 16 and 32:
#: `repro.stats.sequential`) and on their seconds
DEFAULT_MAX_ROUNDS: Final = 32
DEFAULT_MAX_TIME_S: Final = 600.0


@dataclass(frozen=True)
class ReplayState:
    """What a replay knows so far: the request, then what each step added to it."""

    request: ReplayRequest
    reporter: ReplayReporter
    #: the spec, or the spec inside the package the request names
    spec_path: Path | None = None
    #: the environment options a package's contents give (wheels, an image)
    package_options: dict[str, Any] = field(default_factory=dict)
    #: False for a package packed without its original: the replay has none (and reads no
    #: folder outside the package that its spec names)
    original_packed: bool = True
    spec: ExperimentSpec | None = None
    opts: ReplayOptions | None = None
    #: rounds: when they stop, and the run id the replay's and the baseline's ids derive from
    stopping: Stopping | None = None
    #: where the rounds' tests run: one at a time (pinned or not), or in duet
    placement: Placement | None = None
    base_id: str | None = None
    baseline: Replayer | None = None
    original: LoadedRun | None = None
    replayer: Replayer | None = None
    run: tuple[Path, RunRecord] | None = None
    outcome: Outcome | None = None
    #: claims: what each claim's rounds measured, their check, and the replay against the
    #: spec's original with the claims in it (None: nothing to compare it with)
    claims: list[ClaimOutcome] | None = None
    claims_check: ClaimsCheck | None = None
    claims_report: Report | None = None

    @property
    def cache(self) -> ArtifactCache:
        """The artifact cache (the request's, else the default)."""
        return ArtifactCache(self.request.cache_dir)

    def note(self, message: str) -> None:
        self.reporter.note(message)


def replay(request: ReplayRequest, reporter: ReplayReporter) -> ReplayState:
    """Run the request's mode, step by step; the final state holds what it made."""
    return execute(STEPS[request.mode], start(request, reporter))


def start(request: ReplayRequest, reporter: ReplayReporter) -> ReplayState:
    """The state before the first step: the request only."""
    return ReplayState(request=request, reporter=reporter, spec_path=request.spec_path)


def need(value: T | None, what: str) -> T:
    """A value an earlier step makes; its absence is a step list out of order (a bug)."""
    if value is None:
        raise AssertionError(f"a replay step needs {what}, which no step before it made")
    return value


def _open(
    state: ReplayState, spec: ExperimentSpec, spec_path: Path, env_name: str, opts: ReplayOptions
) -> Replayer:
    """The environment realized in a session, and the session's Replayer of `spec`."""
    from repro.replay.session import ReplaySession

    session = ReplaySession.open(
        env_name, spec, spec_path, state.cache, report=state.reporter.note,
        progress=state.reporter.progress, options=opts.env_options,
    )  # fmt: skip
    request = state.request
    docker_only = [
        flag
        for flag, value in (
            ("--rebuild", request.rebuild),
            ("--container-cpuset", request.container_cpuset),
            ("--container-memory", request.container_memory),
        )
        if value
    ]
    if docker_only and session.env.manager != "docker":
        state.note(
            f"{', '.join(docker_only)}: unused (docker's option), as --env {env_name} chose "
            f"{session.env.manager}"
        )
    return session.replayer(spec, opts)


# -- before anything is opened


def check_values(state: ReplayState) -> ReplayState:
    """The run id names one folder (the executors' flags were checked by the front end)."""
    from repro.runs.layout import component

    if state.request.run_id is not None:
        component(state.request.run_id, what="--run-id")
    return state


# -- the spec


def open_package(state: ReplayState) -> ReplayState:
    """A package: unpacked (checked) under the cache, its spec and what its contents give the
    environment; any other spec path as it is."""
    from repro.packaging.pack import is_package
    from repro.replay.packaged import original_beside, unpacked

    request, package = state.request, need(state.spec_path, "SPEC")
    if not is_package(package):
        if request.key_path is not None:
            raise UsageError(
                f"--key checks a package's signature; {package} is not a package",
                hint="verify a spec's attestation with `repro verify SPEC --key PUB`",
            )
        return state
    spec_path, options, packed = unpacked(
        package, request.env_name, state.cache, request.key_path, report=state.note
    )
    if packed:
        original_beside(spec_path, request.results_dir, report=state.note)
    return replace(state, spec_path=spec_path, package_options=options, original_packed=packed)


def load_spec(state: ReplayState) -> ReplayState:
    """The spec, valid, with the request's backend options applied."""
    from repro.spec.paths import spec_file
    from repro.validate import require_valid

    path = spec_file(need(state.spec_path, "SPEC"))
    spec = with_backend_options(require_valid(path), path, state.request.backend_options)
    if not state.original_packed:
        spec = spec.model_copy(update={"original": None})  # not in the package: none here
    return replace(state, spec=spec, spec_path=path)


def check_profiler(state: ReplayState) -> ReplayState:
    """A profiled pass: the spec's backend has a profiler."""
    from repro.profiling import check_profiler as check

    check(need(state.spec, "the spec"))
    return state


def plan_replay(state: ReplayState) -> ReplayState:
    """The replay's options from the request (docker's checked here)."""
    from repro.profiling import default_scenario
    from repro.replay.engine import ReplayOptions

    request, spec = state.request, need(state.spec, "the spec")
    opts = ReplayOptions(
        scenarios=request.scenarios,
        modes=request.modes,
        min_duration_ms=request.min_duration_ms,
        min_query_count=request.min_query_count,
        max_duration_ms=request.max_duration_ms,
        repeat=request.repeat,
        results_dir=request.results_dir,
        run_id=request.run_id,
        profile=(default_scenario(spec, request.scenarios), request.profile_samples)
        if request.profile
        else None,
        env_options=_docker_options(request, state.cache) | state.package_options,
    )
    return replace(state, opts=opts)


# -- on this machine


def realize_replay(state: ReplayState) -> ReplayState:
    """The environment realized (a session), and the replay's Replayer in it."""
    replayer = _open(
        state, need(state.spec, "the spec"), need(state.spec_path, "SPEC"),
        state.request.env_name, need(state.opts, "the options"),
    )  # fmt: skip
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


def raise_unless_complete(run_dir: Path, record: RunRecord) -> None:
    """A run that did not complete is a RunError naming the tests (or parts) that did not."""
    if record.status == "complete":
        return
    if record.parts and record.message:
        raise RunError(f"run {record.status}: {record.message}", hint=f"the parts are in {run_dir}")
    bad = [t for t in record.tests if t.status != "valid"]
    details = "; ".join(
        f"{t.scenario} {t.mode}: {t.status}"
        + (f" ({t.error or t.metrics.get('errors')})" if t.error or t.metrics.get("errors") else "")
        for t in bad
    )
    raise RunError(
        f"run {record.status}: {details}",
        hint=f"the tests' folders are in {run_dir}: LoadGen's mlperf_log_summary.txt says why "
        "a test was INVALID, the worker's log why one failed",
    )


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
    from repro.dispatch.run import dispatch

    request, opts = state.request, need(state.opts, "the options")
    spec, spec_path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    executor = executor_from_flags(need(request.on, "an executor"), request.executor_flags)

    def warm_up() -> None:
        from repro.environments.registry import realize

        env = realize(
            request.env_name, spec, spec_path, state.cache.root / "envs", report=state.note,
            options=opts.env_options,
        )  # fmt: skip
        state.note(f"environment: {env.manager} ({env.reason}); each part realizes it on its node")

    with _said_when_interrupted(state):
        run = dispatch(
            spec, spec_path, opts, env_name=request.env_name, cache=state.cache,
            executor=executor, warm_up=warm_up, report=state.note,
        )  # fmt: skip
    state.reporter.run(*run, "run")
    return replace(state, run=run)


def resume_parts(state: ReplayState) -> ReplayState:
    """The parts of a dispatched run that did not finish, on the run's own executor and options
    unless the request names others."""
    from repro.dispatch.executors.registry import resume_executor
    from repro.dispatch.run import resume

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
    from repro.dispatch.run import DispatchInterrupted

    try:
        yield
    except DispatchInterrupted as stop:
        state.reporter.run(stop.final, stop.record, "interrupted")
        if stop.record.message:
            state.note(stop.record.message)
        raise KeyboardInterrupt from None


# -- rounds (against a baseline, or until decided)


def plan_rounds(state: ReplayState) -> ReplayState:
    """When the rounds stop, where their tests run, and the replay's run id (`<id>-replay`
    beside a baseline)."""
    from repro.replay.engine import new_run_id
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
    opts = replace(opts, env_options=_container_cpus(request, opts.env_options, placed))
    base_id = opts.run_id or new_run_id()
    opts = replace(opts, run_id=f"{base_id}-replay" if request.against else base_id)
    return replace(state, stopping=stopping, base_id=base_id, opts=opts, placement=placed)


def _container_cpus(
    request: ReplayRequest, options: dict[str, Any], placed: Placement
) -> dict[str, Any]:
    """docker: the container's CPU set (`docker run --cpuset-cpus`) holds the CPUs the rounds
    pin their tests to; one given (--container-cpuset) must hold them."""
    cpus = sorted({c for s in placed.cpus for c in s})
    if not cpus or "docker" not in (request.env_name, request.baseline_env):
        return options
    given = options.get("cpuset")
    if given is not None:
        from repro.duet import parse_cpus

        outside = sorted(set(cpus) - set(parse_cpus(given, option="--container-cpuset")))
        if outside:
            raise UsageError(
                f"--container-cpuset {given}: the rounds pin tests to CPUs {cpus}, and "
                f"{outside} are outside it",
                hint="give --cpus within the container's CPU set, or widen --container-cpuset",
            )
        return options
    return options | {"cpuset": ",".join(map(str, cpus))}


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
    baseline = _open(
        state, spec, path, request.baseline_env or request.env_name,
        replace(opts, run_id=f"{need(state.base_id, 'a run id')}-baseline", env_options=options),
    )  # fmt: skip
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
    from repro.rounds import run_rounds

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
    from repro.rounds import what_would_decide as advice

    outcome, spec = need(state.outcome, "the rounds"), need(state.spec, "the spec")
    if state.request.against is None or outcome.report is None:
        return None
    threads = get_backend(spec.backend.name).threads(spec.backend.options) or 1
    fits = duet_fits(len(os.sched_getaffinity(0)), threads)
    return advice(outcome.report, outcome.run[1], duet_fits=fits)


# -- claims


def require_claims(state: ReplayState) -> ReplayState:
    """The spec states claims (checked, with their variants, by `load_spec`)."""
    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if not spec.claims:
        raise UsageError(
            f"{path}: $.claims: --claims checks the spec's claims, and it states none",
            hint="add one with `repro claim add`",
        )
    return state


def check_claims(state: ReplayState) -> ReplayState:
    """Each claim's variants interleaved on this machine until decided, each variant in a
    session of its own."""
    from repro.claim_rounds import CheckOptions
    from repro.claim_rounds import check_claims as check
    from repro.replay.session import ReplaySession

    request, spec, path = state.request, need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    opts = CheckOptions(
        results_dir=request.results_dir, max_rounds=request.max_rounds,
        max_time_s=request.max_time_s, seed=request.order_seed,
        check_id=f"{need(state.run, 'a run')[1].run_id}-claims", env_name=request.env_name,
    )  # fmt: skip
    factory = ReplaySession.replayers(
        request.env_name, path, state.cache, report=state.note, progress=state.reporter.progress
    )
    outcomes = check(spec, path, factory=factory, opts=opts, report=state.note)
    return replace(state, claims=outcomes)


def judge_claims(state: ReplayState) -> ReplayState:
    """The claims' check, and the replay against the spec's original with the claims in it
    (when the spec has an original and they have something to compare)."""
    from repro.claim_rounds import claims_check, results_of
    from repro.reports.model import claims_summary
    from repro.stats.verdicts import claims_verdict

    spec, outcomes = need(state.spec, "the spec"), need(state.claims, "the claims")
    check = claims_check(spec, outcomes)
    absolute = _absolute_report(state)
    if absolute is None:
        return replace(state, claims_check=check)
    results = results_of(spec, outcomes)
    report = absolute.model_copy(
        update={"claims": results, "claims_verdict": claims_verdict(c.verdict for c in results)}
    )
    state.note(f"claims: {claims_summary(results)}")
    return replace(state, claims_check=check, claims_report=report)


def _absolute_report(state: ReplayState) -> Report | None:
    """The replay against the spec's original, or None (no original, nothing comparable)."""
    from repro.compare import build_report
    from repro.errors import SpecError
    from repro.mlperf.sides import open_run
    from repro.runs.store import LoadedRun
    from repro.spec.paths import resolve_path

    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if spec.original is None:
        state.note("the spec has no original: the report is the claims alone")
        return None
    run_dir, record = need(state.run, "a run")
    try:
        original = open_run(resolve_path(spec.original.path, path.parent))
        return build_report(
            original,
            [LoadedRun(run_dir, "repro", record)],
            tolerances=original.record.tolerances or spec.tolerances,
        )
    except SpecError as exc:
        state.note(f"the replay is not compared with the original: {exc.message}")
        return None


# -- shared with `repro profile`


def with_backend_options(
    spec: ExperimentSpec, spec_path: Path, options: Mapping[str, Any]
) -> ExperimentSpec:
    """The spec with backend options over its own, when any (validated by the spec's types)."""
    from repro.spec.io import with_backend_options as apply

    if not options:
        return spec
    return apply(spec, dict(options), source=f"{spec_path} with --backend-option")


# -- helpers


def _docker_options(request: ReplayRequest, cache: ArtifactCache) -> dict[str, Any]:
    """The docker manager's options (the front end refuses them for another environment), each
    checked, and the folders a container mounts."""
    from repro.environments.docker.manager import check_limits

    cpuset, memory = request.container_cpuset, request.container_memory
    for flag, value in (("--container-cpuset", cpuset), ("--container-memory", memory)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag}: empty")
    check_limits(cpuset, memory, where="--container-*")
    options: dict[str, Any] = {
        "mounts": {"--results-dir": request.results_dir.absolute(), "--cache-dir": cache.root}
    }
    for k, v in (("rebuild", request.rebuild), ("cpuset", cpuset), ("memory", memory)):
        if v:
            options[k] = v
    return options


Steps = tuple[Step[ReplayState], ...]

#: the first steps of every mode that starts from a spec
_FROM_SPEC: Final[Steps] = (check_values, open_package, load_spec)
#: rounds on this machine, from the replay's realization to a comparison
_ROUNDS: Final[Steps] = (realize_replay, play_rounds, require_comparison)

#: each mode's steps, in order
STEPS: Final[Mapping[Mode, Steps]] = {
    "plain": (*_FROM_SPEC, plan_replay, realize_replay, replay_once, require_complete),
    "profile": (
        *_FROM_SPEC, check_profiler, plan_replay, realize_replay, replay_once, require_complete,
        require_profiled,
    ),
    "against": (*_FROM_SPEC, plan_replay, plan_rounds, realize_baseline, *_ROUNDS),
    "until-decided": (*_FROM_SPEC, plan_replay, plan_rounds, open_original, *_ROUNDS),
    "claims": (
        *_FROM_SPEC, require_claims, plan_replay, realize_replay, replay_once, check_claims,
        judge_claims,
    ),
    "on": (*_FROM_SPEC, plan_replay, require_performance, dispatch_parts, require_complete),
    "resume": (check_values, resume_parts, require_complete),
}  # fmt: skip
