"""The steps of `repro replay`, each a small function of what the steps before it found: the
command assembles them into one list per mode (see `replay_cmd.STEPS`)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.dispatch_opts import executor_from_flags, resume_executor
from repro.cli.params import parse_key_value
from repro.cli.progress import note
from repro.cli.realize import realized_replayer
from repro.cli.replay_options import ReplayArgs
from repro.cli.run_output import print_run, print_run_summary, raise_unless_complete
from repro.errors import ArtifactError, RunError, UsageError

if TYPE_CHECKING:
    from repro.claims import Outcome as ClaimOutcome
    from repro.dispatch.plan import DispatchPlan
    from repro.replay import Replayer, ReplayOptions
    from repro.rounds import Outcome
    from repro.runs.placement import Placement
    from repro.runs.record import RunRecord
    from repro.runs.store import LoadedRun
    from repro.spec.models import ExperimentSpec
    from repro.stats.sequential import Stopping

T = TypeVar("T")


@dataclass(frozen=True)
class ReplayState:
    """What a replay knows so far: the command line, then what each step added to it."""

    args: ReplayArgs
    #: SPEC, or the spec inside the package SPEC names
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
    #: --claims: what each claim's rounds measured
    claims: list[ClaimOutcome] | None = None

    @property
    def cache(self) -> ArtifactCache:
        """The artifact cache (--cache-dir, else the default)."""
        return ArtifactCache(self.args.cache_dir)


def start(args: ReplayArgs) -> ReplayState:
    """The state before the first step: the command line only."""
    return ReplayState(args=args, spec_path=args.spec_path)


def need(value: T | None, what: str) -> T:
    """A value an earlier step makes; its absence is a step list out of order (a bug)."""
    if value is None:
        raise AssertionError(f"a replay step needs {what}, which no step before it made")
    return value


# -- before anything is opened


def check_values(state: ReplayState) -> ReplayState:
    """--run-id names one folder (the executors' flags were checked with the command line)."""
    from repro.runs.layout import component

    if state.args.run_id is not None:
        component(state.args.run_id, what="--run-id")
    return state


# -- the spec


def open_package(state: ReplayState) -> ReplayState:
    """SPEC a package: unpacked (checked) under the cache, its spec and what its contents give
    the environment; any other SPEC as it is."""
    from repro.packaging.pack import is_package

    package = need(state.spec_path, "SPEC")
    if not is_package(package):
        if state.args.key_path is not None:
            raise UsageError(
                f"--key checks a package's signature; {package} is not a package",
                hint="verify a spec's attestation with `repro verify SPEC --key PUB`",
            )
        return state
    spec_path, options, packed = _from_package(
        package, state.args.env_name, state.cache, state.args.key_path
    )
    if packed:
        _original_beside(spec_path, state.args.results_dir)
    return replace(state, spec_path=spec_path, package_options=options, original_packed=packed)


def _original_beside(spec_path: Path, results_dir: Path) -> None:
    """The package's original, copied to results/<name>/original/ where the replay lands, so
    that `repro report --compare results/<name>/` finds both (as a fresh clone's does); an
    original already there is kept, and said when it is another one."""
    from repro.runs import layout
    from repro.runs.store import digest_files
    from repro.spec.io import load_spec

    spec = load_spec(spec_path)
    if spec.original is None:
        return
    source = (spec_path.parent / spec.original.path).resolve()
    target = layout.original_of(layout.spec_results(results_dir, spec.name))
    if target.exists():
        if digest_files(target) != digest_files(source):
            note(
                f"{target} holds another original than the package's: compare with the "
                f"package's as `repro report --compare {source} RUN`"
            )
        return
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix=".original.", dir=target.parent))  # this replay's own
    try:
        shutil.copytree(source, copy, dirs_exist_ok=True)
        try:
            copy.rename(target)
        except OSError:  # another replay of the package put it there first: the same bytes
            if not target.is_dir():
                raise
            return
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    note(f"the package's original: {target} (`repro report --compare {target.parent}/`)")


def load_spec(state: ReplayState) -> ReplayState:
    """The spec, valid, with --backend-option applied."""
    from repro.spec.paths import spec_file
    from repro.validate import require_valid

    path = spec_file(need(state.spec_path, "SPEC"))
    spec = with_backend_options(require_valid(path), path, state.args.backend_options)
    if not state.original_packed:
        spec = spec.model_copy(update={"original": None})  # not in the package: none here
    return replace(state, spec=spec, spec_path=path)


def check_profiler(state: ReplayState) -> ReplayState:
    """--profile: the spec's backend has a profiler."""
    from repro.profiling import check_profiler as check

    check(need(state.spec, "the spec"))
    return state


def plan_replay(state: ReplayState) -> ReplayState:
    """The replay's options from the command line (docker's checked here)."""
    from repro.profiling import default_scenario
    from repro.replay import ReplayOptions

    args, spec = state.args, need(state.spec, "the spec")
    opts = ReplayOptions(
        scenarios=args.scenarios,
        modes=args.modes,
        min_duration_ms=args.min_duration_ms,
        min_query_count=args.min_query_count,
        max_duration_ms=args.max_duration_ms,
        repeat=args.repeat,
        results_dir=args.results_dir,
        run_id=args.run_id,
        profile=(default_scenario(spec, args.scenarios), args.profile_samples)
        if args.profile
        else None,
        env_options=_docker_options(args, state.cache) | state.package_options,
    )
    return replace(state, opts=opts)


# -- on this machine


def realize_replay(state: ReplayState) -> ReplayState:
    """The environment realized, and the replay's Replayer in it."""
    spec_path, opts = need(state.spec_path, "SPEC"), need(state.opts, "the options")
    replayer = realized_replayer(
        need(state.spec, "the spec"), spec_path, state.args.env_name, opts, state.cache
    )
    return replace(state, replayer=replayer)


def replay_once(state: ReplayState) -> ReplayState:
    """The tests (and a profiled pass with --profile), one run."""
    return replace(state, run=need(state.replayer, "a replayer").run())


def require_profiled(state: ReplayState) -> ReplayState:
    """--profile: the profiled pass completed."""
    run_dir, record = need(state.run, "a run")
    failed = [p for p in record.profiles if p.status != "complete"]
    if failed:
        raise RunError(
            f"the profiled pass failed: {failed[0].error}",
            hint=f"the tests are complete; the worker's log is in {run_dir / failed[0].dir}",
        )
    return state


# -- a run's ending


def show_run(state: ReplayState) -> ReplayState:
    """The run's summary (or JSON; with --claims, the claims' JSON alone follows)."""
    if state.args.claims and state.args.as_json:
        return state  # one JSON document on stdout: the claims'
    print_run(*need(state.run, "a run"), state.args.as_json)
    return state


def require_complete(state: ReplayState) -> ReplayState:
    """A run that did not complete is an error (exit 3); its folder stays."""
    raise_unless_complete(*need(state.run, "a run"))
    return state


# -- dispatched


def require_performance(state: ReplayState) -> ReplayState:
    """--on: the parts are performance rounds; accuracy alone is no part."""
    spec = need(state.spec, "the spec")
    if "performance" not in (state.args.modes or spec.workload.modes):
        raise UsageError(
            "--on dispatches performance rounds as parts; accuracy alone runs once, without --on"
        )
    return state


def dispatch_parts(state: ReplayState) -> ReplayState:
    """--on EXECUTOR: the parts, gathered into one run."""
    from repro.dispatch.run import dispatch

    args, opts = state.args, need(state.opts, "the options")
    spec, spec_path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    executor = executor_from_flags(need(args.on, "--on"), args.executor_flags)

    def warm_up() -> None:
        from repro.environments.registry import realize

        env = realize(
            args.env_name, spec, spec_path, state.cache.root / "envs", report=note,
            options=opts.env_options,
        )  # fmt: skip
        note(f"environment: {env.manager} ({env.reason}); each part realizes it on its node")

    with said_when_interrupted(args.as_json):
        run = dispatch(
            spec, spec_path, opts, env_name=args.env_name, cache=state.cache, executor=executor,
            warm_up=warm_up, report=note,
        )  # fmt: skip
    return replace(state, run=run)


def resume_parts(state: ReplayState) -> ReplayState:
    """--resume RUN: the parts that did not finish, on the run's own executor and options
    unless given again."""
    from repro.dispatch.run import resume

    args = state.args

    def executor_for(plan: DispatchPlan) -> Any:
        return resume_executor(plan, args.on, args.executor_flags)

    with said_when_interrupted(args.as_json):
        run = resume(need(args.resume_run, "--resume"), executor_for, note)
    return replace(state, run=run)


@contextlib.contextmanager
def said_when_interrupted(as_json: bool) -> Iterator[None]:
    """Ctrl-C of a dispatched run: what was gathered, and how to resume, before exit 130."""
    from repro.dispatch.run import DispatchInterrupted

    try:
        yield
    except DispatchInterrupted as stop:
        print_run(stop.final, stop.record, as_json)
        if stop.record.message:
            note(stop.record.message)
        raise KeyboardInterrupt from None


# -- rounds (--against, --until-decided)


def plan_rounds(state: ReplayState) -> ReplayState:
    """When the rounds stop, and the replay's run id (`<id>-replay` beside a baseline)."""
    from repro.replay import new_run_id
    from repro.stats.sequential import Stopping

    args, opts = state.args, need(state.opts, "the options")
    rounds = args.max_rounds or (DEFAULT_MAX_ROUNDS if args.until_decided else opts.repeat)
    stopping = Stopping(
        max_rounds=rounds,
        max_time_s=600.0 if args.max_time_s is None else args.max_time_s,
        fixed=not args.until_decided,
    )
    spec = need(state.spec, "the spec")
    too_few = stopping.too_few(spec.tolerances.confidence)
    if too_few is not None and args.against is not None:
        note(f"{too_few}: the report will show the figures, undecided")
    placed = _placement(args, spec)
    note(f"rounds: {placed.describe()}")
    opts = replace(opts, env_options=_container_cpus(args, opts.env_options, placed))
    base_id = opts.run_id or new_run_id()
    opts = replace(opts, run_id=f"{base_id}-replay" if args.against else base_id)
    return replace(state, stopping=stopping, base_id=base_id, opts=opts, placement=placed)


def _container_cpus(args: ReplayArgs, options: dict[str, Any], placed: Placement) -> dict[str, Any]:
    """--env docker: the container's CPU set (`docker run --cpuset-cpus`) holds the CPUs the
    rounds pin their tests to; one given (--container-cpuset) must hold them."""
    cpus = sorted({c for s in placed.cpus for c in s})
    if not cpus or "docker" not in (args.env_name, args.baseline_env):
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


def _placement(args: ReplayArgs, spec: ExperimentSpec) -> Placement:
    """Where the rounds' tests run (`repro.duet`): --duet and --cpus as given."""
    from repro.backends.registry import get_backend
    from repro.duet import parse_cpus, placement

    cpus = parse_cpus(args.cpus_text) if args.cpus_text is not None else None
    threads = get_backend(spec.backend.name).threads(spec.backend.options)
    return placement(duet=args.duet, cpus=cpus, threads=threads)


#: --until-decided's round cap: looks after rounds 8, 16 and 32 (`repro.stats.sequential`)
DEFAULT_MAX_ROUNDS = 32


def realize_baseline(state: ReplayState) -> ReplayState:
    """--against: the baseline spec as written (the replay's --backend-option are not its own),
    with --baseline-backend-option, realized in --baseline-env (default --env)."""
    from repro.validate import require_valid

    args, opts = state.args, need(state.opts, "the options")
    against = need(args.against, "--against")
    path = need(state.spec_path, "SPEC") if against == "self" else Path(against)
    spec = with_backend_options(require_valid(path), path, args.baseline_options)
    baseline = realized_replayer(
        spec,
        path,
        args.baseline_env or args.env_name,
        replace(opts, run_id=f"{need(state.base_id, 'a run id')}-baseline"),
        state.cache,
    )
    return replace(state, baseline=baseline)


def open_original(state: ReplayState) -> ReplayState:
    """--until-decided alone: the spec's original run, to judge the rounds against."""
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
    """The rounds, interleaved with the baseline's or judged against the original."""
    from repro.rounds import run_rounds

    outcome = run_rounds(
        need(state.replayer, "a replayer"),
        stopping=need(state.stopping, "the stopping rule"),
        against=state.baseline,
        original=state.original,
        seed=state.args.order_seed,
        report=note,
        placement=need(state.placement, "the placement"),
    )
    return replace(state, outcome=outcome)


def show_rounds(state: ReplayState) -> ReplayState:
    """The replay's run (or JSON), and the baseline's summary."""
    outcome = need(state.outcome, "the rounds")
    print_run(*outcome.run, state.args.as_json)
    if outcome.baseline is not None and not state.args.as_json:
        print_run_summary(*outcome.baseline)
    return state


def report_rounds(state: ReplayState) -> ReplayState:
    """The report written; the command exits as `repro report` does."""
    from repro.cli.report_cmd import write_report

    outcome = need(state.outcome, "the rounds")
    if outcome.report is None:
        raise_unless_complete(*outcome.run)
        raise RunError("nothing to compare: no scenario finished on both sides")
    code = write_report(
        outcome.report, output=state.args.report_dir, formats=("md", "html", "json"),
        quiet=state.args.as_json,
    )  # fmt: skip
    advice = _what_would_decide(state)
    if advice is not None and not state.args.as_json:
        note(f"next: {advice}")
    raise click.exceptions.Exit(code)


def _what_would_decide(state: ReplayState) -> str | None:
    import os

    from repro.backends.registry import get_backend
    from repro.duet import duet_fits
    from repro.rounds import what_would_decide

    outcome, spec = need(state.outcome, "the rounds"), need(state.spec, "the spec")
    assert outcome.report is not None
    if state.args.against is None:
        return None
    threads = get_backend(spec.backend.name).threads(spec.backend.options) or 1
    fits = duet_fits(len(os.sched_getaffinity(0)), threads)
    return what_would_decide(outcome.report, outcome.run[1], duet_fits=fits)


# -- claims (--claims)


def require_claims(state: ReplayState) -> ReplayState:
    """--claims: the spec states claims (checked, with their variants, by `load_spec`)."""
    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if not spec.claims:
        raise UsageError(
            f"{path}: $.claims: --claims checks the spec's claims, and it states none",
            hint="add one with `repro claim add`",
        )
    return state


def check_claims(state: ReplayState) -> ReplayState:
    """Each claim's variants interleaved on this machine until decided."""
    from repro.claims import CheckOptions
    from repro.cli.claim_cmds import replayer_factory, run_claims

    args, spec, path = state.args, need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    opts = CheckOptions(
        results_dir=args.results_dir, max_rounds=args.max_rounds, max_time_s=args.max_time_s,
        seed=args.order_seed, check_id=f"{need(state.run, 'a run')[1].run_id}-claims",
    )  # fmt: skip
    outcomes = run_claims(spec, path, replayer_factory(path, args.env_name, state.cache), opts)
    return replace(state, claims=outcomes)


def report_claims(state: ReplayState) -> ReplayState:
    """The report: the claims first, then the replay against the spec's original (when it has
    one, and they have something to compare); the exit code and --json follow the claims."""
    from repro.claims import claims_check, results_of
    from repro.cli.claim_cmds import write_claims
    from repro.cli.report_cmd import write_report
    from repro.reports.claims import render_text
    from repro.reports.model import claims_summary
    from repro.stats.verdicts import claims_verdict

    spec, outcomes = need(state.spec, "the spec"), need(state.claims, "the claims")
    check = claims_check(spec, outcomes)
    if state.args.as_json:
        click.echo(check.model_dump_json(indent=2, by_alias=True))
    absolute = _absolute_report(state)
    if absolute is None:
        write_claims(check, state.args.report_dir or Path("reports") / spec.name)
        if not state.args.as_json:
            click.echo(render_text(check), nl=False)
        raise click.exceptions.Exit(check.exit_code())
    results = results_of(spec, outcomes)
    report = absolute.model_copy(
        update={"claims": results, "claims_verdict": claims_verdict(c.verdict for c in results)}
    )
    note(f"claims: {claims_summary(results)}")
    code = write_report(
        report, output=state.args.report_dir, formats=("md", "html", "json"),
        quiet=state.args.as_json,
    )  # fmt: skip
    raise click.exceptions.Exit(code)


def _absolute_report(state: ReplayState) -> Any:
    """The replay against the spec's original, or None (no original, nothing comparable)."""
    from repro.compare import build_report
    from repro.errors import SpecError
    from repro.mlperf.sides import open_run
    from repro.runs.store import LoadedRun
    from repro.spec.paths import resolve_path

    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if spec.original is None:
        note("the spec has no original: the report is the claims alone")
        return None
    original = open_run(resolve_path(spec.original.path, path.parent))
    run_dir, record = need(state.run, "a run")
    try:
        return build_report(
            original,
            [LoadedRun(run_dir, "repro", record)],
            tolerances=original.record.tolerances or spec.tolerances,
        )
    except SpecError as exc:
        note(f"the replay is not compared with the original: {exc.message}")
        return None


# -- shared with `repro profile`


def with_backend_options(
    spec: ExperimentSpec, spec_path: Path, options: tuple[str, ...]
) -> ExperimentSpec:
    """The spec with `key=value` backend options (--backend-option) applied, when any."""
    from repro.spec.io import with_backend_options as apply

    if not options:
        return spec
    overrides = dict(parse_key_value(o, option="--backend-option") for o in options)
    return apply(spec, overrides, source=f"{spec_path} with --backend-option")


# -- helpers


def _from_package(
    package: Path, env_name: str, cache: ArtifactCache, key_path: Path | None
) -> tuple[Path, dict[str, Any], bool]:
    """A package unpacked (checked) under the cache: its spec, the environment options its
    contents give (wheels to build the venv from, an image to load), and whether its original
    is in it."""
    from repro.packaging.pack import check_inside, offline_gaps, open_package
    from repro.spec.io import load_spec

    root, manifest = open_package(package, cache)
    spec_path = root / manifest.spec
    packed = check_inside(load_spec(spec_path), spec_path, root, package)
    note(f"package {package}: {len(manifest.members)} files checked, unpacked in {root}")
    _check_signature(package, root, manifest, key_path)
    certain, maybe = offline_gaps(load_spec(spec_path), root, manifest, env_name, cache)
    if certain:
        raise RunError(
            f"{package}: the package lacks what this replay needs: " + "; ".join(certain),
            hint="pack it again with --with-artifacts, or replay where the network is reachable",
        )
    for gap in maybe:
        note(f"not in the package: {gap}")
    options: dict[str, Any] = {}
    if manifest.of_role("wheel"):
        options["wheels"] = str(root / "wheels")
    if manifest.of_role("image"):
        options["image_archive"] = str(root / "image" / "image.tar")
    original = load_spec(spec_path).original
    if original is not None and not packed:
        note("the package holds no original (packed without it): nothing to compare with here")
    if manifest.of_role("spack-source"):
        options["spack_mirror"] = str(root / "spack-mirror")
    return spec_path, options, packed


def _check_signature(package: Path, root: Path, manifest: Any, key_path: Path | None) -> None:
    """A signed package's signature, checked with --key (or this user's own public key when
    the package names it as its signer): a replay runs only what the signer signed; without a
    key it says plainly that the signature was not checked."""
    from repro.attest.keys import PUBLIC, default_key_dir, load_public
    from repro.attest.package import package_signature, signer_keyids

    signers = signer_keyids(root)
    own = default_key_dir() / PUBLIC
    key = None
    if key_path is not None:
        key = load_public(key_path)
    elif signers and own.is_file():
        mine = load_public(own)
        key = mine if mine.keyid in signers else None
    state, problems = package_signature(root, manifest, key)
    named = ", ".join(k[:16] for k in signers) or "none named"
    used = key.keyid[:16] if key is not None else ""
    if state == "unsigned" and key_path is not None:
        raise ArtifactError(
            f"{package}: not signed, and --key asks for its signature to be checked",
            hint="get the signed package from its source, or replay without --key",
        )
    if state == "unsigned":
        note(
            f"package {package}: not signed: its files match its own manifest, and nothing says "
            "who made it (`repro pack --key` signs one)"
        )
    elif state == "unchecked":
        note(
            f"package {package}: signed by key {named}, not checked here: give --key PUB "
            "(the signer's repro-signing.pub), or run `repro verify PACKAGE --key PUB`"
        )
    elif state == "verified":
        note(f"package {package}: signature verified (key {used}), every file covered")
    else:
        raise ArtifactError(
            f"{package}: the signature does not hold with key {used} (signed by "
            f"{named}): " + "; ".join(problems[:3]),
            hint="get the package again from its source, or give the signer's key with --key",
        )


def _docker_options(args: ReplayArgs, cache: ArtifactCache) -> dict[str, Any]:
    """The docker manager's options (the table refuses them for another environment), each
    checked, and the folders a container mounts."""
    from repro.environments.docker.manager import check_limits

    cpuset, memory = args.container_cpuset, args.container_memory
    for flag, value in (("--container-cpuset", cpuset), ("--container-memory", memory)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag}: empty")
    check_limits(cpuset, memory, where="--container-*")
    options: dict[str, Any] = {
        "mounts": {"--results-dir": args.results_dir.absolute(), "--cache-dir": cache.root}
    }
    for k, v in (("rebuild", args.rebuild), ("cpuset", cpuset), ("memory", memory)):
        if v:
            options[k] = v
    return options
