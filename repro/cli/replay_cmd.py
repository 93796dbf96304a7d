"""`repro replay SPEC`: run the experiment with LoadGen and write a run directory."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.dispatch_opts import check_slurm_options, dispatch_options, make_executor
from repro.cli.params import parse_key_value
from repro.cli.progress import TimedBar, note
from repro.cli.spec_cmds import cache_dir_option, env_option, json_option, results_dir_option
from repro.environments.registry import replay_choices
from repro.errors import RunError, UsageError
from repro.profiling import DEFAULT_SAMPLES, MAX_SAMPLES
from repro.spec.models import SCENARIOS, ExperimentSpec
from repro.spec.types import MAX_DURATION_MS, UINT64_MAX

if TYPE_CHECKING:
    from repro.runs.record import RunRecord


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
@click.option(
    "--min-duration-ms",
    type=click.IntRange(min=0, max=MAX_DURATION_MS),
    default=None,
    help="Override min_duration_ms of every scenario (quick runs).",
)
@click.option(
    "--min-query-count",
    type=click.IntRange(min=0, max=UINT64_MAX),
    default=None,
    help="Override min_query_count of every scenario.",
)
@click.option(
    "--max-duration-ms",
    type=click.IntRange(min=0, max=MAX_DURATION_MS),
    default=None,
    help="Override max_duration_ms of every scenario.",
)
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
@click.option(
    "--rebuild",
    is_flag=True,
    help="--env docker: build the image again from the spec when the pinned id is not here.",
)
@click.option(
    "--container-cpuset",
    default=None,
    help="--env docker: the CPUs the container may use (e.g. 0-1); default: the spec's.",
)
@click.option(
    "--container-memory",
    default=None,
    help="--env docker: the container's memory limit (e.g. 4g); default: the spec's.",
)
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
    "--max-rounds",
    type=click.IntRange(min=1, max=1000),
    default=None,
    help="Cap on rounds with --until-decided (default 8); the rounds with --against otherwise "
    "(default: --repeat).",
)
@click.option(
    "--max-time",
    "max_time_s",
    type=click.FloatRange(min=1, max=7 * 24 * 3600),
    default=600.0,
    show_default=True,
    help="Cap on the seconds of rounds with --until-decided.",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where --against/--until-decided write their report (default: reports/<name>/).",
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
@cache_dir_option
@json_option
def replay(
    spec_path: Path | None,
    scenarios: tuple[str, ...],
    modes: tuple[str, ...],
    min_duration_ms: int | None,
    min_query_count: int | None,
    max_duration_ms: int | None,
    backend_options: tuple[str, ...],
    repeat: int,
    env_name: str,
    rebuild: bool,
    container_cpuset: str | None,
    container_memory: str | None,
    results_dir: Path,
    run_id: str | None,
    against: str | None,
    baseline_env: str | None,
    baseline_options: tuple[str, ...],
    until_decided: bool,
    max_rounds: int | None,
    max_time_s: float,
    order_seed: int | None,
    report_dir: Path | None,
    profile: bool,
    profile_samples: int,
    on: str | None,
    partition: str | None,
    nodes: int | None,
    exclusive: bool | None,
    time_limit: str | None,
    resume_run: Path | None,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Replay an experiment: verify artifacts, realize the environment, run LoadGen.

    Writes results/<name>/<run-id>/ with LoadGen's logs per scenario and mode, and run.json.
    Exit 3 when LoadGen judges a run INVALID or a test fails (the run directory is kept).

    With --against, the replay and a baseline alternate in rounds on this machine (a random
    order from a recorded seed) and the report judges their per-round ratios; with
    --until-decided, rounds are added until the verdict is decided or a cap is reached.
    Both write a report to reports/<name>/ and exit like `repro report`.

    \b
    Example:
      repro replay specs/ort-digits.json --min-duration-ms 1000 --repeat 3
      repro replay specs/ort-digits.json --against self --until-decided --max-rounds 6
      repro replay specs/ort-resnet50.json --against self --baseline-backend-option \\
        intra_op_threads=1 --repeat 3
      repro replay specs/ort-digits.json --on slurm --repeat 4 --partition debug
      repro replay --resume results/ort-digits/20261130T101500Z-3fa2c1
    """
    from repro.profiling import default_scenario
    from repro.replay import ReplayOptions
    from repro.runs.layout import component
    from repro.validate import require_valid

    if run_id is not None:
        component(run_id, what="--run-id")
    check_slurm_options(
        on=on, partition=partition, nodes=nodes, time_limit=time_limit, exclusive=exclusive,
        resuming=resume_run is not None,
    )  # fmt: skip
    if (on is not None or resume_run is not None) and (against or until_decided or profile):
        raise UsageError(
            "--on and --resume dispatch a plain replay; --against, --until-decided and "
            "--profile run on this machine"
        )
    if resume_run is not None:
        if spec_path is not None:
            raise UsageError("--resume RUN takes no SPEC: the run's plan holds the spec it ran")
        changed = [
            flag
            for flag, value in (
                ("--min-duration-ms", min_duration_ms),
                ("--min-query-count", min_query_count),
                ("--max-duration-ms", max_duration_ms),
                ("--scenario", scenarios or None),
                ("--mode", modes or None),
                ("--repeat", repeat if repeat != 1 else None),
            )
            if value is not None
        ]
        if changed:
            raise UsageError(
                f"--resume continues the run with the settings it started with: "
                f"{', '.join(changed)} would make its parts two experiments",
                hint="drop them, or start a new replay with them",
            )
        _resume(
            resume_run, on=on, partition=partition, nodes=nodes, exclusive=exclusive,
            time_limit=time_limit, as_json=as_json,
        )  # fmt: skip
        return
    if spec_path is None:
        raise UsageError("missing SPEC", hint="repro replay SPEC (see `repro replay --help`)")
    package_options: dict[str, Any] = {}
    from repro.packaging.pack import is_package

    if is_package(spec_path):
        spec_path, package_options = _from_package(spec_path, env_name, ArtifactCache(cache_dir))
    if (baseline_env or baseline_options) and against is None:
        raise UsageError("--baseline-env and --baseline-backend-option need --against")
    spec = _with_options(require_valid(spec_path), spec_path, backend_options)
    if profile_samples != DEFAULT_SAMPLES and not profile:
        raise UsageError("--profile-samples needs --profile")
    if profile:
        from repro.profiling import check_profiler

        check_profiler(spec)
    if profile and (against is not None or until_decided):
        raise UsageError(
            "--profile runs after a plain replay; with --against or --until-decided, profile "
            "the runs afterwards: `repro profile SPEC --into RUN`"
        )
    env_options = _docker_options(
        env_name, rebuild, container_cpuset, container_memory, results_dir, cache_dir
    )
    opts = ReplayOptions(
        scenarios=tuple(scenarios),  # type: ignore[arg-type]
        modes=tuple(modes),  # type: ignore[arg-type]
        min_duration_ms=min_duration_ms,
        min_query_count=min_query_count,
        max_duration_ms=max_duration_ms,
        repeat=repeat,
        results_dir=results_dir,
        run_id=run_id,
        profile=(default_scenario(spec, scenarios), profile_samples) if profile else None,
        env_options=env_options | package_options,
    )
    cache = ArtifactCache(cache_dir)
    if on is not None:
        if "performance" not in (modes or spec.workload.modes):
            raise UsageError(
                "--on dispatches performance rounds as parts; accuracy alone runs once, "
                "without --on"
            )
        _dispatch(
            spec, spec_path, env_name, opts, cache, on=on, partition=partition, nodes=nodes,
            exclusive=exclusive, time_limit=time_limit, as_json=as_json,
        )  # fmt: skip
        return
    if against is None and not until_decided:
        run_dir, record = _replayer(spec, spec_path, env_name, opts, cache).run()
        _print_run(run_dir, record, as_json)
        _raise_unless_complete(run_dir, record)
        failed = [p for p in record.profiles if p.status != "complete"]
        if failed:
            raise RunError(
                f"the profiled pass failed: {failed[0].error}",
                hint=f"the tests are complete; the worker's log is in {run_dir / failed[0].dir}",
            )
        return
    _run_in_rounds(
        spec,
        spec_path,
        env_name,
        opts,
        cache,
        against=against,
        baseline_env=baseline_env or env_name,
        baseline_options=baseline_options,
        until_decided=until_decided,
        max_rounds=max_rounds,
        max_time_s=max_time_s,
        order_seed=order_seed,
        report_dir=report_dir,
        as_json=as_json,
    )


def _dispatch(
    spec: ExperimentSpec,
    spec_path: Path,
    env_name: str,
    opts: Any,
    cache: ArtifactCache,
    *,
    on: str,
    partition: str | None,
    nodes: int | None,
    exclusive: bool | None,
    time_limit: str | None,
    as_json: bool,
) -> None:
    """--on local|slurm: the parts, gathered into one run."""
    from repro.dispatch.run import dispatch
    from repro.environments.registry import realize

    executor, slurm = make_executor(
        on, partition=partition, nodes=nodes, exclusive=exclusive, time_limit=time_limit
    )

    def warm_up() -> None:
        env = realize(
            env_name, spec, spec_path, cache.root / "envs", report=note, options=opts.env_options
        )
        note(f"environment: {env.manager} ({env.reason}); each part realizes it on its node")

    with _said_when_interrupted(as_json):
        run_dir, record = dispatch(
            spec, spec_path, opts, env_name=env_name, cache=cache, executor=executor,
            warm_up=warm_up, report=note, slurm=slurm,
        )  # fmt: skip
    _print_run(run_dir, record, as_json)
    _raise_unless_complete(run_dir, record)


def _resume(
    run: Path,
    *,
    on: str | None,
    partition: str | None,
    nodes: int | None,
    exclusive: bool | None,
    time_limit: str | None,
    as_json: bool,
) -> None:
    """--resume RUN: the parts that did not finish, on the run's own executor and options unless
    given again."""
    from repro.dispatch.plan import DispatchPlan, SlurmOptions
    from repro.dispatch.run import resume

    def executor_for(plan: DispatchPlan) -> Any:
        saved = plan.slurm or SlurmOptions()
        executor, _ = make_executor(
            on or plan.executor,
            partition=partition or saved.partition,
            nodes=nodes or saved.concurrency,
            exclusive=saved.exclusive if exclusive is None else exclusive,
            time_limit=time_limit or saved.time,
        )
        return executor

    with _said_when_interrupted(as_json):
        run_dir, record = resume(run, executor_for, note)
    _print_run(run_dir, record, as_json)
    _raise_unless_complete(run_dir, record)


@contextlib.contextmanager
def _said_when_interrupted(as_json: bool) -> Iterator[None]:
    """Ctrl-C of a dispatched run: what was gathered, and how to resume, before exit 130."""
    from repro.dispatch.run import DispatchInterrupted

    try:
        yield
    except DispatchInterrupted as stop:
        _print_run(stop.final, stop.record, as_json)
        if stop.record.message:
            note(stop.record.message)
        raise KeyboardInterrupt from None


def _from_package(
    package: Path, env_name: str, cache: ArtifactCache
) -> tuple[Path, dict[str, Any]]:
    """A package unpacked (checked) under the cache: its spec, and the environment options
    its contents give (wheels to build the venv from, an image to load)."""
    from repro.packaging.pack import check_inside, offline_gaps, open_package
    from repro.spec.io import load_spec

    root, manifest = open_package(package, cache)
    spec_path = root / manifest.spec
    check_inside(load_spec(spec_path), spec_path, root, package)
    note(f"package {package}: {len(manifest.members)} files checked, unpacked in {root}")
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
    if original is not None:
        folder = (spec_path.parent / original.path).resolve()
        note(f"the package's original: compare with `repro report --compare {folder} RUN`")
    return spec_path, options


def _with_options(
    spec: ExperimentSpec, spec_path: Path, options: tuple[str, ...]
) -> ExperimentSpec:
    from repro.spec.io import with_backend_options

    if not options:
        return spec
    overrides = dict(parse_key_value(o, option="--backend-option") for o in options)
    return with_backend_options(spec, overrides, source=f"{spec_path} with --backend-option")


def _docker_options(
    env_name: str,
    rebuild: bool,
    cpuset: str | None,
    memory: str | None,
    results_dir: Path,
    cache_dir: Path | None,
) -> dict[str, Any]:
    """The docker manager's options; given for another environment, they are an error."""
    from repro.environments.docker.manager import check_limits

    given = rebuild or cpuset is not None or memory is not None
    if given and env_name not in ("docker", "auto"):
        raise UsageError("--rebuild, --container-cpuset and --container-memory need --env docker")
    for flag, value in (("--container-cpuset", cpuset), ("--container-memory", memory)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag}: empty")
    check_limits(cpuset, memory, where="--container-*")
    cache_root = ArtifactCache(cache_dir).root
    options: dict[str, Any] = {
        "mounts": {"--results-dir": results_dir.absolute(), "--cache-dir": cache_root}
    }
    for k, v in (("rebuild", rebuild), ("cpuset", cpuset), ("memory", memory)):
        if v:
            options[k] = v
    return options


def _replayer(
    spec: ExperimentSpec, spec_path: Path, env_name: str, opts: Any, cache: ArtifactCache
) -> Any:
    from repro.environments.registry import realize
    from repro.replay import Replayer

    env = realize(
        env_name, spec, spec_path, cache.root / "envs", report=note, options=opts.env_options
    )
    note(f"environment: {env.manager} ({env.reason})")
    return Replayer(spec, spec_path, env, cache=cache, opts=opts, report=note, progress=TimedBar)


def _run_in_rounds(
    spec: ExperimentSpec,
    spec_path: Path,
    env_name: str,
    opts: Any,
    cache: ArtifactCache,
    *,
    against: str | None,
    baseline_env: str,
    baseline_options: tuple[str, ...],
    until_decided: bool,
    max_rounds: int | None,
    max_time_s: float,
    order_seed: int | None,
    report_dir: Path | None,
    as_json: bool,
) -> None:
    """--against and/or --until-decided: rounds, then the report."""
    import dataclasses

    from repro.cli.report_cmd import write_report
    from repro.replay import new_run_id
    from repro.rounds import Stopping, run_rounds
    from repro.validate import require_valid

    rounds = max_rounds or (8 if until_decided else opts.repeat)
    stopping = Stopping(
        until_decided=until_decided,
        min_rounds=min(2, rounds),
        max_rounds=rounds,
        max_time_s=max_time_s,
    )
    base_id = opts.run_id or new_run_id()
    original = None
    baseline = None
    if against is not None:
        base_path = spec_path if against == "self" else Path(against)
        # the baseline is the spec as written (the replay's --backend-option are not its own)
        base_spec = _with_options(require_valid(base_path), base_path, baseline_options)
        baseline = _replayer(
            base_spec,
            base_path,
            baseline_env,
            dataclasses.replace(opts, run_id=f"{base_id}-baseline"),
            cache,
        )
    else:
        original = _stored_original(spec, spec_path)
    replayer = _replayer(
        spec,
        spec_path,
        env_name,
        dataclasses.replace(opts, run_id=f"{base_id}-replay" if against else base_id),
        cache,
    )
    outcome = run_rounds(
        replayer,
        stopping=stopping,
        against=baseline,
        original=original,
        seed=order_seed,
        report=note,
    )
    _print_run(*outcome.run, as_json)
    if outcome.baseline is not None and not as_json:
        print_run_summary(*outcome.baseline)
    if outcome.report is None:
        _raise_unless_complete(*outcome.run)
        raise RunError("nothing to compare: no scenario finished on both sides")
    code = write_report(
        outcome.report, output=report_dir, formats=("md", "html", "json"), quiet=as_json
    )
    raise click.exceptions.Exit(code)


def _stored_original(spec: ExperimentSpec, spec_path: Path) -> Any:
    """The spec's original run, to judge rounds against (--until-decided without --against)."""
    from repro.runs.store import open_run
    from repro.spec.paths import resolve_path

    if spec.original is None:
        raise UsageError(
            f"{spec_path}: $.original: --until-decided without --against judges the replay "
            "against the spec's original, and it has none",
            hint="capture one (`repro capture`), or compare with --against self",
        )
    return open_run(resolve_path(spec.original.path, spec_path.parent))


def _print_run(run_dir: Path, record: RunRecord, as_json: bool) -> None:
    if as_json:
        click.echo(record.model_dump_json(indent=2, by_alias=True))
    else:
        print_run_summary(run_dir, record)


def _raise_unless_complete(run_dir: Path, record: RunRecord) -> None:
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


def print_run_summary(run_dir: Path, record: RunRecord) -> None:
    click.echo(f"run {record.run_id}: {record.status} -> {run_dir}")
    for part in record.parts:
        where = f" on {part.node}" if part.node else ""
        state = f" ({part.state})" if part.state else ""
        click.echo(f"  part {part.index}{where}: {part.status}{state}")
    for t in record.tests:
        m = t.metrics
        parts = [f"{t.scenario:<12} {t.mode:<11}", t.status.upper()]
        if t.mode == "performance":
            if m.get("samples_per_second") is not None:
                parts.append(f"{float(m['samples_per_second']):.1f} samples/s")
            for p in ("p50", "p90", "p99"):
                v = m.get(f"latency_{p}_ns")
                if v is not None:
                    parts.append(f"{p} {float(v) / 1e6:.3f} ms")
        elif t.accuracy and t.accuracy.get("value") is not None:
            parts.append(f"{t.accuracy['metric']} {100 * float(t.accuracy['value']):.2f}%")
        if t.error:
            parts.append(t.error.splitlines()[0][:120])
        click.echo("  " + "  ".join(parts))
    for prof in record.profiles:
        if prof.status == "complete":
            what = f"{prof.layers} layers, {prof.inferences} inferences" + (
                f", profiler overhead {prof.overhead_rel:+.1%}"
                if prof.overhead_rel is not None
                else ""
            )
        else:
            what = (prof.error or "").splitlines()[0][:120] if prof.error else ""
        click.echo(
            f"  {prof.scenario:<12} {'profile':<11}  {prof.status.upper()}  {what}  -> {prof.dir}"
        )
