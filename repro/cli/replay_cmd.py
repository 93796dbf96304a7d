"""`repro replay SPEC`: run the experiment with LoadGen and write a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.params import parse_key_value
from repro.cli.progress import TimedBar, note
from repro.cli.spec_cmds import cache_dir_option, json_option
from repro.environments.registry import replay_choices
from repro.errors import RunError
from repro.spec.models import SCENARIOS
from repro.spec.types import MAX_DURATION_MS, UINT64_MAX

if TYPE_CHECKING:
    from repro.runs.record import RunRecord


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
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
@click.option(
    "--env",
    "env_name",
    default="auto",
    show_default=True,
    type=click.Choice(replay_choices()),
    help="Where the worker runs: auto takes the captured manager if installed, else venv.",
)
@click.option(
    "--results-dir",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Parent of results/<name>/.",
)
@click.option("--run-id", default=None, help="Name of the run directory (default: time-based).")
@cache_dir_option
@json_option
def replay(
    spec_path: Path,
    scenarios: tuple[str, ...],
    modes: tuple[str, ...],
    min_duration_ms: int | None,
    min_query_count: int | None,
    max_duration_ms: int | None,
    backend_options: tuple[str, ...],
    repeat: int,
    env_name: str,
    results_dir: Path,
    run_id: str | None,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Replay an experiment: verify artifacts, realize the environment, run LoadGen.

    Writes results/<name>/<run-id>/ with LoadGen's logs per scenario and mode, and run.json.
    Exit 3 when LoadGen judges a run INVALID or a test fails (the run directory is kept).

    \b
    Example:
      repro replay specs/ort-digits.json --min-duration-ms 1000 --repeat 3
    """
    from repro.environments.registry import realize
    from repro.replay import Replayer, ReplayOptions
    from repro.runs.layout import component
    from repro.spec.io import with_backend_options
    from repro.validate import require_valid

    if run_id is not None:
        component(run_id, what="--run-id")
    spec = require_valid(spec_path)
    if backend_options:
        overrides = dict(parse_key_value(o, option="--backend-option") for o in backend_options)
        spec = with_backend_options(spec, overrides, source=f"{spec_path} with --backend-option")
    opts = ReplayOptions(
        scenarios=tuple(scenarios),  # type: ignore[arg-type]
        modes=tuple(modes),  # type: ignore[arg-type]
        min_duration_ms=min_duration_ms,
        min_query_count=min_query_count,
        max_duration_ms=max_duration_ms,
        repeat=repeat,
        results_dir=results_dir,
        run_id=run_id,
    )
    cache = ArtifactCache(cache_dir)
    env = realize(env_name, spec, spec_path, cache.root / "envs")
    note(f"environment: {env.manager} ({env.reason})")
    run_dir, record = Replayer(
        spec, spec_path, env, cache=cache, opts=opts, report=note, progress=TimedBar
    ).run()
    if as_json:
        click.echo(record.model_dump_json(indent=2, by_alias=True))
    else:
        print_run_summary(run_dir, record)
    if record.status != "complete":
        bad = [t for t in record.tests if t.status != "valid"]
        details = "; ".join(
            f"{t.scenario} {t.mode}: {t.status}"
            + (
                f" ({t.error or t.metrics.get('errors')})"
                if t.error or t.metrics.get("errors")
                else ""
            )
            for t in bad
        )
        raise RunError(
            f"run {record.status}: {details}",
            hint=f"LoadGen's logs are in {run_dir}; mlperf_log_summary.txt says why",
        )


def print_run_summary(run_dir: Path, record: RunRecord) -> None:
    click.echo(f"run {record.run_id}: {record.status} -> {run_dir}")
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
