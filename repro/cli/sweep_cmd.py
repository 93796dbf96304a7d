"""`repro sweep`: replay a grid of settings and keep the uncertainty-aware Pareto front."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from repro.cli.dispatch_opts import check_dispatch_options, dispatch_options
from repro.cli.options import (
    cache_dir_option,
    json_option,
    loadgen_override,
    results_dir_option,
    track_option,
)
from repro.cli.progress import TimedBar, note
from repro.environments.registry import replay_choices
from repro.errors import UsageError


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--param",
    "params",
    multiple=True,
    help="path=v1,v2 of the spec to vary, e.g. backend.options.intra_op_threads=1,2 (repeat: "
    "the grid is the product).",
)
@click.option(
    "--objective",
    "objectives",
    multiple=True,
    help="max|min:<scenario>.<metric>, metric one of throughput, latency_p50/p90/p99 (and "
    "max:Server.qps: the highest valid Server QPS, searched), or max|min:accuracy|peak_rss|"
    "load_time|model_size (default: max:Offline.throughput and min:SingleStream.latency_p90).",
)
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    help="<measure><op><number>[*original], e.g. accuracy>=0.99*original or peak_rss<=2e9: "
    "a point that breaks it is excluded from the front (measures: accuracy, peak_rss, "
    "load_time, model_size).",
)
@click.option(
    "--qps-runs",
    type=click.IntRange(2, 30),
    default=6,
    show_default=True,
    help="LoadGen runs the Server QPS search (max:Server.qps) may take per point.",
)
@click.option(
    "--budget",
    default=None,
    help="Points to run (fewer than the grid: Optuna's NSGA-II, or TPE for one objective, "
    "proposes them; needs repro[optimize]) or a time (90s, 20m, 2h) after which the sweep "
    "stops, resumable.",
)
@click.option(
    "--until-decided",
    is_flag=True,
    help="Add rounds to a point until each objective's 95 % interval is within the spec's "
    "tolerance (at least --repeat, at most --max-rounds).",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(2, 100),
    default=8,
    show_default=True,
    help="Cap on a point's rounds with --until-decided.",
)
@click.option(
    "--repeat",
    type=click.IntRange(2, 20),
    default=2,
    show_default=True,
    help="Rounds per point (the intervals come from them).",
)
@loadgen_override("min_duration_ms", "LoadGen's minimum duration per run.", default=500)
@click.option(
    "--env",
    "env_name",
    default="native",
    show_default=True,
    type=click.Choice(replay_choices()),
    help="Where the workers run.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    default=None,
    help="Seed of the shuffled order (default: drawn, and recorded).",
)
@click.option("--id", "sweep_id", default=None, help="The sweep's id (default: drawn).")
@click.option("--resume", is_flag=True, help="Continue the sweep --id names.")
@click.option(
    "--pick",
    "pick_point",
    type=int,
    default=None,
    help="With --id and --name: write point N of the sweep as a spec.",
)
@click.option("--name", "new_name", default=None, help="The picked spec's name.")
@click.option(
    "--specs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("specs"),
    show_default=True,
    help="Where --pick writes.",
)
@results_dir_option
@dispatch_options("each point's rounds")
@cache_dir_option
@track_option
@json_option
def sweep(
    spec_path: Path,
    params: tuple[str, ...],
    objectives: tuple[str, ...],
    constraints: tuple[str, ...],
    qps_runs: int,
    budget: str | None,
    until_decided: bool,
    max_rounds: int,
    repeat: int,
    env_name: str,
    seed: int | None,
    sweep_id: str | None,
    resume: bool,
    pick_point: int | None,
    new_name: str | None,
    specs_dir: Path,
    results_dir: Path,
    on: str | None,
    cache_dir: Path | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Replay every point of a grid of settings and report the uncertainty-aware Pareto front.

    Writes results/<name>/sweeps/<id>/: sweep.json, points.csv, sweep.md and each point's run.
    A point is dominated only when another beats it on every objective beyond both 95 %
    intervals. An interrupted sweep continues with --resume --id ID.

    \b
    Example:
      repro sweep specs/ort-resnet50.json --param backend.options.intra_op_threads=1,2 \\
        --param workload.batch_size=1,8 --objective max:Offline.throughput
      repro sweep specs/ort-resnet50.json --id sweep-1a2b3c4d --pick 3 --name resnet50-tuned
    """
    from repro.artifacts.cache import ArtifactCache
    from repro.runs.plan import OVERRIDABLE, ReplayPlan, loadgen_overrides
    from repro.spec.io import load_spec
    from repro.sweep import (
        Objective,
        SweepOptions,
        parse_budget,
        parse_params,
        pick,
        run_sweep,
        sweep_dir,
    )

    # LoadGen's overrides of each point's tests; the rest are the executors' own flags
    loadgen = {k: flags.pop(k) for k in OVERRIDABLE if k in flags}
    executor_flags = flags
    if pick_point is not None:
        if not sweep_id or not new_name:
            raise UsageError("--pick needs --id (the sweep) and --name (the new spec's name)")
        folder = sweep_dir(results_dir, load_spec(spec_path).name, sweep_id)
        target = pick(folder, pick_point, new_name, specs_dir, spec_path)
        click.echo(f"wrote {target}: capture it with `repro capture --from {target}`")
        return
    opts = SweepOptions(
        params=parse_params(params),
        objectives=[Objective.parse(o) for o in objectives],
        plan=ReplayPlan(
            repeat=repeat,
            loadgen=loadgen_overrides(**loadgen),
            env=env_name,
            results_dir=results_dir,
        ),
        seed=seed,
        sweep_id=sweep_id,
        resume=resume,
        constraints=list(constraints),
        qps_runs=qps_runs,
        until_decided=until_decided,
        max_rounds=max_rounds,
    )
    if budget is not None:
        opts.budget_points, opts.budget_s = parse_budget(budget)
    check_dispatch_options(on=on, **executor_flags)
    if on is not None:
        chosen = on
        opts.on = on
        from repro.dispatch.executors.registry import executor_from_flags

        opts.executor = lambda: executor_from_flags(chosen, executor_flags)
    folder, state = run_sweep(
        spec_path, opts, cache=ArtifactCache(cache_dir), report=note, progress=TimedBar
    )
    failed = [p for p in state["points"] if p["status"] == "failed"]
    if failed:
        total = len(state["points"])
        note(f"{len(failed)} of {total} point(s) failed: {folder / 'sweep.md'} says why")
    if as_json:
        click.echo(json.dumps(state, indent=2))
        return
    click.echo((folder / "sweep.md").read_text())
    click.echo(f"sweep {state['id']} -> {folder}")
