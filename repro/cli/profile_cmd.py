"""`repro profile SPEC`: where the inference time goes, layer by layer, from the backend's own
profiler."""

from __future__ import annotations

import json
from pathlib import Path

import click

from repro.cli.options import cache_dir_option, env_option, json_option, results_dir_option
from repro.cli.params import parse_key_value
from repro.cli.progress import note, warn_if_stale
from repro.errors import RunError, UsageError
from repro.profiles.model import Profile
from repro.profiling import DEFAULT_SAMPLES, MAX_SAMPLES
from repro.spec.models import SCENARIOS, ScenarioName


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--scenario",
    "-s",
    type=click.Choice(SCENARIOS),
    default=None,
    help="The scenario whose queries are profiled (default: SingleStream if the spec has it).",
)
@click.option(
    "--samples",
    type=click.IntRange(min=1, max=MAX_SAMPLES),
    default=DEFAULT_SAMPLES,
    show_default=True,
    help="Samples the profiled pass infers.",
)
@click.option(
    "--into",
    "into",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Add the profile to this finished run of the spec (e.g. results/<name>/original) "
    "instead of making a new run; a profile of the same scenario there is replaced.",
)
@click.option(
    "--trace",
    "trace_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the Chrome/Perfetto trace (queries, predict() calls, layers) here.",
)
@click.option(
    "--top", type=click.IntRange(min=1), default=15, show_default=True, help="Layers shown."
)
@click.option(
    "--backend-option",
    "backend_options",
    multiple=True,
    help="key=value overriding a backend option for the profiled pass, as in `repro replay` "
    "(e.g. intra_op_threads=1); the run records the spec it ran.",
)
@env_option()
@results_dir_option
@click.option("--run-id", default=None, help="Name of the new run (default: time-based).")
@cache_dir_option
@json_option
def profile(
    spec_path: Path,
    scenario: ScenarioName | None,
    samples: int,
    into: Path | None,
    trace_out: Path | None,
    top: int,
    backend_options: tuple[str, ...],
    env_name: str,
    results_dir: Path,
    run_id: str | None,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Profile an experiment's layers with the backend's own profiler.

    A separate pass of SAMPLES samples through LoadGen, with onnxruntime's session profiler or
    TVM's Relax VM instrument on; the measured tests of a run are never profiled. Writes
    profile/<Scenario>/ (profile.json: one row per layer; timeline.json: a Chrome/Perfetto trace;
    the profiler's raw output) into a new run, or into RUN with --into. When both sides of a
    report have a profile, `repro report` shows where the time went and which layers changed.

    \b
    Example:
      repro profile specs/ort-resnet50.json --samples 32 --trace resnet50.trace.json
      repro profile specs/ort-digits.json --into results/ort-digits/original
    """
    from repro.cli.progress import TimedBar
    from repro.profiles.model import read_profile
    from repro.profiling import check_into, check_profiler, default_scenario, profile_settings
    from repro.replay.session import ReplaySession
    from repro.replay.state import with_backend_options
    from repro.runs import layout
    from repro.runs.plan import ReplayPlan
    from repro.spec.io import spec_id
    from repro.validate import require_valid

    if run_id is not None:
        if into is not None:
            raise UsageError("--run-id names a new run; --into adds to an existing one")
        layout.component(run_id, what="--run-id")
    if trace_out is not None:
        check_trace_path(trace_out)
    options = dict(parse_key_value(text, option="--backend-option") for text in backend_options)
    spec = with_backend_options(require_valid(spec_path), spec_path, options)
    check_profiler(spec)
    chosen = scenario or default_scenario(spec)
    profile_settings(spec, chosen, samples)  # a scenario the spec lacks fails here
    if into is not None:
        # a damaged, foreign or unfinished folder fails before the environment is built
        check_into(into, spec_id(spec))
    plan = ReplayPlan(
        env=env_name,
        cache_dir=cache_dir,
        backend_options=options,
        repeat=0,
        results_dir=results_dir,
        run_id=run_id,
        profile=True,
        profile_scenario=chosen,
        profile_samples=samples,
        probes=False,
    )
    session = ReplaySession.open(spec, spec_path, plan, report=note, progress=TimedBar)
    replayer = session.replayer(spec, plan)
    if into is not None:
        found = replayer.profile_into(into, chosen, samples)
        run_dir = into
        warn_if_stale(into)
    else:
        run_dir, record = replayer.run()
        if not record.profiles:
            raise RunError(f"the profiled pass did not run: {record.message}")
        found = record.profiles[-1]
    if found.status != "complete":
        raise RunError(
            f"the profiled pass failed: {found.error}",
            hint=f"the worker's log is in {run_dir / found.dir}",
        )
    folder = run_dir / found.dir
    prof = read_profile(folder / layout.PROFILE_FILE)
    if trace_out is not None:
        from repro.atomic import atomic_write_text

        atomic_write_text(trace_out, (folder / layout.TIMELINE_FILE).read_text())
    if as_json:
        doc = {"folder": str(folder), **prof.model_dump(mode="json", by_alias=True)}
        click.echo(json.dumps(doc, indent=2))
        return
    print_profile(prof, folder, top=top)
    if trace_out is not None:
        note(f"trace: {trace_out} (open in https://ui.perfetto.dev or chrome://tracing)")


def check_trace_path(path: Path) -> None:
    """--trace names a new file, or a trace it may replace, in a folder that exists: checked
    before the pass, so a bad path never costs a profile (nor overwrites another file)."""
    hint = "name a new .json file in an existing folder"
    if not str(path).strip():
        raise UsageError("--trace: empty path", hint=hint)
    if path.exists() or path.is_symlink():
        if not path.is_file() or path.is_symlink():
            raise UsageError(f"--trace {path}: exists and is not a regular file", hint=hint)
        with path.open("rb") as fh:
            head = fh.read(64)
        if b'"traceEvents"' not in head:
            raise UsageError(
                f"--trace {path}: exists and is not a trace repro wrote; not overwritten", hint=hint
            )
    if not path.parent.is_dir():
        raise UsageError(f"--trace {path}: the folder {path.parent} does not exist", hint=hint)


def print_profile(prof: Profile, folder: Path, *, top: int) -> None:
    """The profile's summary and top layers, for a person."""
    per_inf = prof.inference_ns / max(prof.inferences, 1)
    click.echo(
        f"{prof.scenario}: {prof.inferences} inferences ({prof.samples} samples in all), "
        f"{per_inf / 1e3:.1f} us each; {len(prof.rows)} layers ({prof.profiler})"
    )
    if prof.overhead is not None and prof.overhead.rel is not None:
        click.echo(
            f"profiler overhead: {prof.overhead.rel:+.1%} per inference "
            f"({prof.overhead.unprofiled_median_ns / 1e3:.1f} -> "
            f"{prof.overhead.profiled_median_ns / 1e3:.1f} us, median)"
        )
    if prof.inference_ns:
        click.echo(
            f"the layers add up to {prof.layers_ns / prof.inference_ns:.1%} of the profiled "
            "inferences' time"
            + (
                f" ({coverage:.1%} of an unprofiled inference)"
                if (coverage := prof.coverage()) is not None
                else ""
            )
        )
    for note_text in prof.notes:
        click.echo(f"note: {note_text}")
    click.echo(f"  {'share':>6}  {'median':>10}  {'calls':>6}  {'op':<18} layer")
    for r in prof.top(top):
        click.echo(
            f"  {r.share:6.1%}  {r.median_ns / 1e3:8.1f}us  {r.calls:6d}  {r.op_type[:18]:<18} "
            f"{r.name}"
        )
    outside = prof.outside_ns / prof.inference_ns if prof.inference_ns else 0.0
    click.echo(f"  {outside:6.1%}  outside the layers (framework, copies, the profiler)")
    click.echo(f"-> {folder}")
