"""`repro catalog sync|history`: every run, comparison and verdict in an MLflow store."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from repro.cli.options import json_option
from repro.errors import SpecError, UsageError

if TYPE_CHECKING:
    from repro.catalog.store import CatalogRun

_TRACK_HELP = (
    "The tracking URI (default: $REPRO_TRACKING_URI, else .repro/config.toml's "
    "catalog.tracking_uri, else the project's .repro/catalog.db)."
)


@click.group()
def catalog() -> None:
    """Every run, comparison and verdict in an MLflow store: log them, see a spec's history.

    The store is MLflow's (the `repro[mlflow]` extra): an embedded SQLite file in the project
    (.repro/catalog.db) unless --track, $REPRO_TRACKING_URI or .repro/config.toml names
    another, such as a team's `mlflow server`. `repro replay/capture/report/sweep/claim check
    --track` log as they run; sync logs what is already on disk.

    \b
    Example:
      repro catalog sync results/ reports/
      repro catalog history specs/ort-digits.json
    """


@catalog.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--track", "track", metavar="URI", default=None, help=_TRACK_HELP)
@click.option("--logs", is_flag=True, help="Attach LoadGen's detail logs too (large).")
@json_option
def sync(paths: tuple[Path, ...], track: str | None, logs: bool, as_json: bool) -> None:
    """Log run, report and sweep folders (default: results/ and reports/) into the catalog.

    Idempotent: an MLflow run per repro run (found again by its run id), updated when the
    folder changed, skipped when the catalog already holds it as it is. A report tags the runs
    it judged with its verdict and attaches itself.

    \b
    Example:
      repro catalog sync
      repro catalog sync results/ort-digits/ reports/ort-digits/ --track http://mlflow:5000
    """
    from repro.catalog.store import Catalog
    from repro.catalog.sync import find, log_written, summary
    from repro.catalog.where import for_catalog_command

    roots = list(paths) or [p for p in (Path("results"), Path("reports")) if p.is_dir()]
    if not roots:
        raise UsageError(
            "nothing to sync: no results/ or reports/ in this folder",
            hint="name the folders: repro catalog sync PATH...",
        )
    tracking = for_catalog_command(track, Path.cwd())
    found = find(roots)
    if not found:
        raise UsageError(
            f"{', '.join(map(str, roots))}: no run (run.json), report (report.json) or sweep "
            "(sweep.json) there",
            hint="pass results/ and reports/, or a run folder",
        )
    store = Catalog(tracking)
    tally = log_written(store, found, logs=logs)
    pages = {n: p for n, e in sorted(store.touched.items()) if (p := tracking.page(e))}
    if as_json:
        shown = {"tracking_uri": tracking.shown, **tally.as_dict(), "pages": pages}
        click.echo(json.dumps(shown, indent=2))
        if tally.nothing_logged:
            raise click.exceptions.Exit(2)
        return
    click.echo(f"catalog {tracking.shown}: {summary(tally)}")
    for path, why in tally.skipped:
        click.echo(f"  skipped {path}: {why}")
    for line in tally.notes:
        click.echo(f"  note: {line}")
    for name, page in pages.items():
        click.echo(f"  {name}: {page}")
    if tally.nothing_logged:
        raise UsageError(
            "nothing could be logged: every folder found was skipped (above)",
            hint="repair or remove the folders named, or sync others",
        )


@catalog.command()
@click.argument("spec")
@click.option("--track", "track", metavar="URI", default=None, help=_TRACK_HELP)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also draw the history into this SVG file: each run's MLPerf metric over time, "
    "coloured by its verdict.",
)
@json_option
def history(spec: str, track: str | None, plot: Path | None, as_json: bool) -> None:
    """Every run of a spec in the catalog, oldest first: when, role, machine, its MLPerf metric,
    and the verdict of the report that judged it (change and interval).

    SPEC is a spec file or a spec's name.

    \b
    Example:
      repro catalog history specs/ort-digits.json
      repro catalog history ort-digits --plot history.svg
    """
    from repro.catalog.store import Catalog
    from repro.catalog.where import for_catalog_command, sqlite_file

    if plot is not None and plot.suffix.lower() != ".svg":
        raise UsageError(
            f"--plot {plot}: the plot is an SVG file", hint=f"name it {plot.with_suffix('.svg')}"
        )
    name = _spec_name(spec)
    tracking = for_catalog_command(track, Path.cwd())
    database = sqlite_file(tracking.uri)
    if database is not None and not database.exists():  # a read never makes a store
        raise SpecError(
            f"{spec}: no run of spec {name!r} in the catalog at {tracking.shown}: there is no "
            "catalog there yet",
            hint="log them first: repro catalog sync results/ reports/ (or replay with --track)",
        )
    runs = [r for r in Catalog(tracking, read=True).runs(name) if r.tags.get("repro.kind") == "run"]
    if not runs:
        raise SpecError(
            f"{spec}: no run of spec {name!r} in the catalog at {tracking.shown}",
            hint="log them first: repro catalog sync results/ reports/ (or replay with --track)",
        )
    rows = [_row(r) for r in runs]
    if plot is not None:
        _plot(rows, name, plot)
    if as_json:
        click.echo(json.dumps({"spec_name": name, "runs": rows}, indent=2))
        return
    click.echo(f"{name}: {len(rows)} run(s) in {tracking.shown}")
    click.echo(_table(rows))
    if plot is not None:
        click.echo(f"plot written to {plot}")


def _spec_name(spec: str) -> str:
    path = Path(spec)
    if path.suffix == ".json" or path.is_file():
        from repro.spec.io import load_spec

        return load_spec(path, check_id=False).name
    return spec


def _row(run: CatalogRun) -> dict[str, Any]:
    tags, params = run.tags, run.params
    metric = tags.get("repro.headline_metric")
    when = (
        dt.datetime.fromtimestamp(run.start_ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")
        if run.start_ms
        else None
    )
    return {
        "started_utc": when,
        "run_id": tags.get("repro.run_id"),
        "role": tags.get("repro.role"),
        "status": tags.get("repro.status"),
        "machine": params.get("machine.cpu_model"),
        "gpus": params.get("machine.gpus"),
        "metric": metric,
        "value": run.metrics.get(metric) if metric else None,
        "verdict": tags.get("repro.verdict"),
        "verdict_metric": tags.get("repro.verdict_metric"),
        "delta_rel": run.metrics.get("verdict.delta_rel"),
        "ci": [run.metrics.get("verdict.ci_low"), run.metrics.get("verdict.ci_high")]
        if "verdict.ci_low" in run.metrics
        else None,
        "against": tags.get("repro.original_run_id"),
        "mlflow_run_id": run.run_id,
        "experiment_id": run.experiment_id,
    }


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f} %"


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("started (UTC)", "run", "role", "machine", "MLPerf metric", "verdict", "change")
    lines = [head]
    for r in rows:
        value = "" if r["value"] is None else f"{r['metric']} {r['value']:.6g}"
        change = _pct(r["delta_rel"])
        if r["ci"] and None not in r["ci"]:
            change += f" [{r['ci'][0] * 100:+.1f}, {r['ci'][1] * 100:+.1f}]"
        lines.append(
            (
                r["started_utc"] or "?",
                r["run_id"] or "?",
                r["role"] or "",
                (r["machine"] or "?") + ("" if r["gpus"] in (None, "none") else f" + {r['gpus']}"),
                value,
                r["verdict"] or "-",
                change,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _plot(rows: list[dict[str, Any]], name: str, path: Path) -> None:
    from repro.atomic import atomic_write_text
    from repro.reports.plots import GREEN, GREY, RED, document

    colours = {"reproduced": GREEN, "not reproduced": RED}
    metrics = [r["metric"] for r in rows if r["value"] is not None and r["started_utc"]]
    metric = max(set(metrics), key=metrics.count) if metrics else None
    points = [
        (_when(r["started_utc"]), r["value"], r)
        for r in rows
        if r["metric"] == metric and r["value"] is not None and r["started_utc"]
    ]
    if not points:
        raise SpecError(
            f"{name}: no run in the catalog has an MLPerf metric to plot",
            hint="drop --plot: the runs have no performance test",
        )

    judged = [
        (_when(r["started_utc"]), r)
        for r in rows
        if r["delta_rel"] is not None and r["ci"] and None not in r["ci"] and r["started_utc"]
    ]

    def draw(fig: Any) -> None:
        axes = fig.subplots(2 if judged else 1, 1, sharex=True, squeeze=False)[:, 0]
        ax = axes[0]
        for when, value, r in points:
            verdict = r["verdict"] or ""
            colour = colours.get(verdict, GREY if verdict else "#000000")
            marker = "s" if r["role"] == "original" else "o"
            ax.plot([when], [value], marker=marker, color=colour, linestyle="none")
        ax.set_title(f"{name}: {metric} (colour: the verdict; square: an original)", fontsize=9)
        ax.set_ylabel(metric or "")
        if judged:  # each judged run's change against its original, with its interval
            low = axes[1]
            for when, r in judged:
                delta, (lo, hi) = 100 * r["delta_rel"], r["ci"]
                low.errorbar(
                    [when],
                    [delta],
                    yerr=[[delta - 100 * lo], [100 * hi - delta]],
                    fmt="o",
                    color=colours.get(r["verdict"] or "", GREY),
                    capsize=3,
                )
            low.axhline(0, color=GREY, linewidth=0.8)
            low.set_ylabel("change vs original (%)")
            low.set_title("the verdict's metric: change and interval")
        fig.autofmt_xdate()

    height = 5.5 if judged else 3.5
    atomic_write_text(path, document(draw, title=f"{name} history", width_in=7, height_in=height))


def _when(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=dt.UTC)
