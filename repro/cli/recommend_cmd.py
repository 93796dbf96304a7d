"""`repro recommend TABLE`: the Pareto-optimal systems of published results."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli.options import json_option
from repro.cli.progress import note


@click.command()
@click.argument("table", type=click.Path(path_type=Path))
@click.option(
    "--objective",
    "objectives",
    multiple=True,
    help="max:NAME or min:NAME (throughput, latency, accuracy, energy, power, cost, or a column).",
)
@click.option(
    "--where", "where", multiple=True, help="COLUMN=VALUE[,...], e.g. benchmark=resnet50."
)
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    help="NAME OP NUMBER[UNIT], e.g. latency<=15ms, accuracy_value>=0.75.",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, path_type=Path),
    help="CSV name,price_usd (or name,price): a processor or accelerator name as the table "
    "spells it, its price in US dollars (the same table as `results --enrich --prices`).",
)
@click.option(
    "--per-accelerator",
    is_flag=True,
    help="Throughput and cost per accelerator (divided by accelerator_count x node_count).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports") / "recommend",
    show_default=True,
    help="Folder for recommend.{md,csv,html}.",
)
@click.option(
    "--predict",
    is_flag=True,
    help="Rank configurations, unsubmitted ones included, by a model's prediction "
    "(--model FILE, else one fitted on TABLE for --target).",
)
@click.option(
    "--model",
    "model_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --predict: a model written by `repro model fit` (checked before loading).",
)
@click.option(
    "--target",
    type=click.Choice(["throughput", "energy", "cost"]),
    default="throughput",
    show_default=True,
    help="With --predict and no --model: what to fit.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --predict: rank by a model that predicts worse than the table's mean (refused "
    "without it).",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="With --predict: rows shown.",
)
@json_option
def recommend(
    table: Path,
    objectives: tuple[str, ...],
    where: tuple[str, ...],
    constraints: tuple[str, ...],
    prices: Path | None,
    per_accelerator: bool,
    output: Path,
    predict: bool,
    model_path: Path | None,
    target: str,
    force: bool,
    top: int,
    as_json: bool,
) -> None:
    """The systems no other system beats on every objective at once, from a table written by
    `repro results --csv` (or a published tree, read on the fly). Cost needs a price table you
    supply; a system missing an objective is listed, not dropped. Where the selection mixes
    closed with other divisions, only closed is compared unless --where division=NAME; the
    output says how many rows each step left out and why, and which systems on the front are
    not available (the table's status column: preview, rdi).

    --predict ranks every hardware configuration of the table (each processor, accelerator
    and framework, at 1, 2, 4, 8 accelerators and its own count) for the --where benchmark
    and scenario, submitted or not, by a model's prediction with a conformal prediction
    interval, flags extrapolations beyond the training data, and names the features that
    moved each prediction.

    \b
    Example:
      repro results inference_results_v5.0/ --csv v5.csv
      repro recommend v5.csv --objective max:throughput --objective min:cost \\
          --where benchmark=resnet50,scenario=Offline --prices prices.csv
      repro recommend v5.csv --predict --model reports/model/throughput.pkl \\
          --where benchmark=resnet50,scenario=Offline
    """
    from repro.errors import UsageError

    if predict:
        _predicted(table, where, model_path, target, top, output, as_json, force=force)
        return
    if model_path is not None:
        raise UsageError(
            "--model ranks by a model's predictions: it goes with --predict",
            hint=f"repro recommend {table} --predict --model {model_path}",
        )
    if not objectives:
        raise UsageError("give at least one --objective (e.g. max:throughput), or --predict")
    from repro.atomic import atomic_write_text
    from repro.reports import pareto
    from repro.reports.table import load_table
    from repro.stats.pareto import (
        load_prices,
        parse_objective,
        parse_where,
        unmatched_prices,
    )
    from repro.stats.pareto import recommend as run

    if table.is_dir():
        from repro.mlperf.published import results_table

        frame = results_table([table], progress=note)
    else:
        frame = load_table(table)
    goals = [parse_objective(o) for o in objectives]
    price_table = load_prices(prices) if prices else None
    if price_table is not None and (unused := unmatched_prices(frame, price_table)):
        note(
            f"warning: {prices}: {len(unused)} price name(s) match no processor or accelerator "
            f"of the table ({', '.join(repr(n) for n in unused[:5])}): spell them as the "
            "table does"
        )
    result = run(
        frame,
        goals,
        where=parse_where(where),
        constraints=constraints,
        prices=price_table,
        per_accelerator=per_accelerator,
    )
    objs = [(o.column, o.maximize) for o in goals]
    args = (objs, result.front, result.dominated, result.missing, result.excluded, result.notes)
    md = pareto.markdown(*args)
    atomic_write_text(output / "recommend.md", md)
    atomic_write_text(output / "recommend.html", pareto.page(*args))
    atomic_write_text(output / "recommend.csv", pareto.csv(objs, result.front, result.dominated))
    if as_json:
        import json

        click.echo(
            json.dumps(
                {
                    "objectives": [o.label for o in goals],
                    "front": json.loads(result.front.to_json(orient="records")),
                    "dominated": json.loads(result.dominated.to_json(orient="records")),
                    "missing": result.missing,
                    "excluded": result.excluded,
                    "notes": result.notes,
                },
                indent=2,
            )
        )
    else:
        click.echo(md, nl=False)
    note(f"recommendation written to {output}/recommend.{{md,csv,html}}")


def _predicted(
    table: Path,
    where: tuple[str, ...],
    model_path: Path | None,
    target: str,
    top: int,
    output: Path,
    as_json: bool,
    *,
    force: bool = False,
) -> None:
    """`--predict`: candidates ranked by a model, with intervals and extrapolation flags."""
    from repro.atomic import atomic_write_text
    from repro.errors import UsageError
    from repro.mlperf.hardware_fronts import candidates, rank
    from repro.mlperf.hardware_model import cross_validate, fit, load_model, target_frame
    from repro.reports.table import load_table
    from repro.stats.pareto import parse_where

    if model_path is not None:
        fitted = load_model(model_path)
        target = str(fitted.meta["target"])
    frame = target_frame(load_table(table), target)
    if model_path is None:
        note(f"no --model: fitting a {target} model on {table} (5 folds by system)")
        validation = cross_validate(
            frame,
            target=target,
            importance_repeats=0,
            hint=f"fit one with fewer folds, `repro model fit {table} --target {target} -k 2 "
            "-o model.pkl`, and give it with --model model.pkl",
        )
        fitted = fit(frame, target=target, kind="boosting", seed=0, validation=validation)
    folds = [f for f in fitted.meta.get("cv") or [] if isinstance(f, dict)]
    r2 = sum(float(f["r2_log"]) for f in folds) / len(folds) if folds else None
    if r2 is not None and r2 < 0 and not force:
        # the README's own chain: MAPE 24,247 %, R² -638 to -1544, and recommend ranked by it
        raise UsageError(
            f"the {target} model predicts worse than the table's mean (mean R²(log) "
            f"{r2:.3g} over its {len(folds)} held-out folds): its ranking would say nothing",
            hint="fit it on more rows of more systems (`repro model fit`), or pass --force to "
            "see its ranking anyway",
        )
    ranked = rank(fitted, candidates(frame, parse_where(where)))
    shown = [
        "processor_hw",
        "accelerator_hw",
        "accelerator_count",
        "benchmark",
        "scenario",
        "submitted",
        "predicted",
        "low",
        "high",
        "extrapolation",
        "contributions",
    ]
    coverage = f"{float(fitted.meta['coverage']):.0%}"
    atomic_write_text(output / "recommend-predict.csv", ranked[shown].to_csv(index=False))
    if as_json:
        click.echo(ranked[shown].head(top).to_json(orient="records", indent=2))
    else:
        click.echo(
            f"{target} predicted by {fitted.meta['model']} ({fitted.meta['rows']} rows, "
            f"{fitted.meta['systems']} systems); interval: {coverage} conformal, from the "
            "cross-validation residuals\n"
        )
        click.echo(ranked[shown].head(top).to_string(index=False, float_format="{:.4g}".format))
        unsubmitted = int((~ranked["submitted"]).sum())
        flagged = int((ranked["extrapolation"] != "").sum())
        click.echo(
            f"\n{len(ranked)} configuration(s): {unsubmitted} not submitted, "
            f"{flagged} extrapolated (outside the training data)"
        )
    note(f"ranking written to {output}/recommend-predict.csv")
