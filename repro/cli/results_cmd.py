"""`repro results TREE...`: every result of published MLPerf trees as one table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from repro.cli.options import json_option
from repro.cli.params import Finite
from repro.cli.progress import note
from repro.errors import SpecError, UsageError

if TYPE_CHECKING:
    import pandas as pd

#: the columns printed when no file is asked for
SHOWN = ("round", "submitter", "system", "benchmark", "scenario", "value", "unit", "validity")


@click.command()
@click.argument("trees", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), help="Write a CSV."
)
@click.option(
    "--parquet",
    "parquet_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a Parquet file (needs pyarrow).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 2, nothing written) when a result cannot be read, instead of listing it.",
)
@click.option(
    "--enrich",
    is_flag=True,
    help="Add the hardware table's specifications, measured and estimated energy, and cost.",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --enrich: CSV name,price_usd overriding the hardware table's list prices.",
)
@click.option(
    "--utilization",
    type=Finite(),
    default=1.0,
    show_default=True,
    help="With --enrich: the fraction of TDP the estimated energy assumes.",
)
@json_option
def results(
    trees: tuple[Path, ...],
    csv_path: Path | None,
    parquet_path: Path | None,
    strict: bool,
    enrich: bool,
    prices: Path | None,
    utilization: float,
    as_json: bool,
) -> None:
    """Every result of published MLPerf trees (any level: a round, division, submitter, system,
    benchmark) as one table: one row per result and scenario, with round, division, submitter,
    system, processor, accelerator and count, framework, benchmark, scenario, the MLPerf
    metric with its value and unit, validity, LoadGen version, accuracy metric and value,
    power and energy where present, compliance. A result that cannot be read (a damaged or
    edited log, a missing file) is a row of validity `unreadable` whose notes say the file and
    why, and the table goes on (--strict: exit 2 instead).

    \b
    --enrich matches each processor and accelerator to repro's hardware table
    (repro/data/hardware.csv: TDP, memory, peaks, launch year, list price, each row with its
    datasheet) and lists the names it could not match (--strict: exit 2); energy_measured_j
    is MLPerf's measurement, energy_estimated_j an estimate from TDP, in separate columns.

    \b
    Example:
      repro results inference_results_v4.1/ inference_results_v5.0/ --csv round.csv
      repro results inference_results_v5.0/ --enrich --csv enriched.csv
    """
    from repro.atomic import atomic_path, atomic_write_text
    from repro.mlperf.published import UNREADABLE, results_table
    from repro.mlperf.tree import is_mlperf_result
    from repro.reports.table import spreadsheet_safe

    for tree in trees:
        if tree.is_file() and tree.suffix.lower() in (".csv", ".json"):
            raise SpecError(
                f"{tree}: a file, not a published tree: `repro results` reads a round's folder",
                hint=f"a table `repro results --csv` wrote is read by `repro recommend {tree}`",
            )
        if not tree.is_dir():
            what = "not a folder" if tree.exists() else "no such folder"
            raise SpecError(f"{tree}: {what}", hint="pass a published MLPerf tree's folder")
        if not is_mlperf_result(tree):  # stops at the first result: the round is read once
            raise SpecError(
                f"{tree}: no published MLPerf result below it (no LoadGen summary under "
                "<benchmark>/<scenario>/performance/run_k/, no MLCommons endpoints result: "
                "<benchmark>/<scenario>/config.yaml and performance/result_summary.json)",
                hint="pass a round, division, submitter, system or benchmark folder",
            )
    if parquet_path is not None:
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise UsageError(
                "--parquet needs pyarrow, which is not installed",
                hint="pip install pyarrow, or write --csv",
            )
    table = results_table(trees, progress=note)
    unread = table[table["validity"] == UNREADABLE]
    note(
        f"{len(table)} row(s): {table['path'].nunique()} result(s) of {len(trees)} tree(s)"
        + (f"; {len(unread)} could not be read (validity {UNREADABLE}):" if len(unread) else "")
    )
    for _, row in unread.head(20).iterrows():
        note(f"  not read: {row['notes']}")
    if len(unread) > 20:
        note(f"  ... and {len(unread) - 20} more (the table's notes say each)")
    if strict and len(unread):
        raise SpecError(
            f"--strict: {len(unread)} result(s) could not be read; nothing written",
            hint="fix or remove them, or leave --strict out to list them in the table",
        )
    if prices is not None and not enrich:
        raise UsageError("--prices needs --enrich", hint="add --enrich")
    if enrich:
        table = _enriched(table, prices=prices, utilization=utilization, strict=strict)
    if csv_path is not None:
        atomic_write_text(csv_path, spreadsheet_safe(table).to_csv(index=False))
        note(f"table written to {csv_path} ({len(table.columns)} columns)")
    if parquet_path is not None:
        with atomic_path(parquet_path, suffix=".parquet") as tmp:
            table.to_parquet(tmp, index=False)
        note(f"table written to {parquet_path}")
    if as_json:
        click.echo(table.to_json(orient="records", indent=2))
    elif csv_path is None and parquet_path is None:
        click.echo(table[list(SHOWN)].to_string(index=False, max_rows=200))


def _enriched(
    table: pd.DataFrame, *, prices: Path | None, utilization: float, strict: bool
) -> pd.DataFrame:
    """The table with the hardware table's columns; unmatched names listed (--strict: exit 2)."""
    from repro.mlperf.hardware import enrich
    from repro.stats.pareto import load_prices

    out, report = enrich(
        table,
        prices=load_prices(prices) if prices else None,
        utilization=utilization,
    )
    for line in report.notes:
        note(line)
    listing = [
        f"{column} {name!r} ({rows} row(s)): {why}" for column, name, rows, why in report.unmatched
    ]
    if listing:
        note(f"--enrich: {len(listing)} name(s) matched no row of the hardware table:")
        for line in listing:
            note(f"  not matched: {line}")
    hint = "add a row (with its datasheet as source) to repro/data/hardware.csv"
    if listing and not report.matched:
        raise SpecError(
            "--enrich: no processor or accelerator of the table matched the hardware table: "
            + "; ".join(listing[:5]),
            hint=hint,
        )
    if listing and strict:
        raise SpecError(
            f"--strict: {len(listing)} hardware name(s) matched nothing; nothing written: "
            + "; ".join(listing[:5]),
            hint=hint,
        )
    return out
