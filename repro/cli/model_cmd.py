"""`repro model fit TABLE`: a model of throughput, energy or cost, cross-validated by system."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from repro.cli.options import json_option
from repro.cli.progress import note

if TYPE_CHECKING:
    import pandas as pd

    from repro.mlperf.hardware_fronts import FrontRecovery
    from repro.mlperf.hardware_model import Validation


@click.group()
def model() -> None:
    """Predictive models of published results (fit, validated by system)."""


@model.command("fit")
@click.argument("table", type=click.Path(path_type=Path))
@click.option("--target", type=click.Choice(["throughput", "energy", "cost"]), required=True)
@click.option(
    "--by",
    type=click.Choice(["system"]),
    default="system",
    show_default=True,
    help="The groups of the cross-validation: no group is in both a fold's train and test.",
)
@click.option("-k", "--folds", type=int, default=5, show_default=True, help="GroupKFold folds.")
@click.option(
    "--model",
    "kind",
    type=click.Choice(["boosting", "forest"]),
    default="boosting",
    show_default=True,
    help="Gradient boosting or a random forest (scikit-learn).",
)
@click.option(
    "--front-with",
    default=None,
    help="The front's second objective, max:COLUMN or min:COLUMN (default: min:cost_usd for "
    "throughput, max:value otherwise).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--importance-repeats",
    type=int,
    default=3,
    show_default=True,
    help="Shuffles per feature of the permutation importance (0: none).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The model file (default reports/model/<target>.pkl; its sidecar beside it, .json).",
)
@json_option
def fit(
    table: Path,
    target: str,
    by: str,
    folds: int,
    kind: str,
    front_with: str | None,
    seed: int,
    importance_repeats: int,
    output: Path | None,
    as_json: bool,
) -> None:
    """Fit a model of TARGET on the hardware (the hardware table's specifications and the
    counts), software (framework, division) and scenario (benchmark, scenario) features of a
    results table, cross-validated with GroupKFold by system: per fold MAPE, R² (of the log)
    and the worst-predicted systems; per fold the true Pareto front (TARGET against
    --front-with) against the predicted one; permutation importance on held-out data. The
    model is saved with its feature list, data hash and repro version, signed with this
    user's key (only a model repro wrote loads).

    \b
    Example:
      repro results inference_results_v5.0/ --enrich --csv v5.csv
      repro model fit v5.csv --target throughput --by system -o reports/model/tp.pkl
    """
    from repro.atomic import atomic_write_text
    from repro.mlperf.hardware_fronts import SECOND, front_members, parse_second, recovery
    from repro.mlperf.hardware_model import (
        MIN_LEAF,
        cross_validate,
        fronts_page_of,
        save_model,
        target_frame,
    )
    from repro.mlperf.hardware_model import fit as fit_model
    from repro.reports.table import load_table

    frame = target_frame(load_table(table), target)
    second = front_with or SECOND[target]
    parse_second(second, frame)  # a wrong --front-with fails before the fitting, not after
    note(f"{table}: {len(frame)} row(s) of {frame['system'].nunique()} system(s) have {target}")
    validation = cross_validate(
        frame,
        target=target,
        kind=kind,
        folds=folds,
        seed=seed,
        importance_repeats=importance_repeats,
    )
    fewest = min(f.train_rows for f in validation.folds)
    if kind == "boosting" and fewest < 2 * MIN_LEAF:
        note(
            f"a fold trained on {fewest} row(s), fewer than {2 * MIN_LEAF}: gradient boosting "
            "cannot split them and predicts one value (add results, or --model forest)"
        )
    members = front_members(
        frame, validation.predicted, validation.fold_of, target=target, second=second
    )
    fronts = recovery(members, folds=[f.fold for f in validation.folds])
    fitted = fit_model(frame, target=target, kind=kind, seed=seed, validation=validation)
    path = output or Path("reports") / "model" / f"{target}.pkl"
    sidecar = save_model(fitted, path)
    plot = fronts_page_of(path)
    atomic_write_text(plot, _fronts_page(frame, members, fronts, target=target, second=second))
    if as_json:
        data = _as_json(fitted.meta, validation, fronts, second)
        click.echo(json.dumps({**data, "fronts": {**data["fronts"], "page": str(plot)}}, indent=2))
    else:
        click.echo(render(validation, fronts, target=target, second=second))
    note(f"model written to {path} (sidecar {sidecar}); the fronts per fold plotted in {plot}")


def _fronts_page(
    frame: pd.DataFrame,
    members: pd.DataFrame,
    fronts: list[FrontRecovery],
    *,
    target: str,
    second: str,
) -> str:
    """The per-fold page of true and predicted fronts, in the units of the table."""
    from repro.reports.fronts import page
    from repro.reports.pareto import unit_of

    column = {"throughput": "value", "energy": "energy_j", "cost": "cost_usd"}[target]
    return page(
        members,
        fronts,
        target=target,
        target_unit=unit_of(column, frame),
        second=second,
        second_unit=unit_of(second.partition(":")[2], frame),
    )


def _as_json(
    meta: dict[str, Any], v: Validation, fronts: list[FrontRecovery], second: str
) -> dict[str, Any]:
    return {
        **{k: meta[k] for k in ("target", "model", "rows", "systems", "data_sha256")},
        "folds": [vars(f) for f in v.folds],
        "fronts": {"second": second, "folds": [vars(f) for f in fronts]},
        "importance": [{"feature": f, "mean": m, "sd": s} for f, m, s in v.importance],
        "interval": {"coverage": meta["coverage"], "log_residual_q": v.residual_q},
    }


def render(v: Validation, fronts: list[FrontRecovery], *, target: str, second: str) -> str:
    """The CV table, the front-recovery table and the importance, as text."""
    lines = [f"cross-validation by system ({len(v.folds)} folds), target {target}:", ""]
    lines.append("fold  train  test  systems   MAPE    R²(log)  worst systems (MAPE)")
    for f in v.folds:
        worst = ", ".join(f"{s} ({e:.0%})" for s, e in f.worst)
        lines.append(
            f"{f.fold:>4}  {f.train_rows:>5}  {f.test_rows:>4}  {f.test_systems:>7}  "
            f"{f.mape:>6.1%}  {f.r2_log:>8.3f}  {worst}"
        )
    mean_mape = sum(f.mape for f in v.folds) / len(v.folds)
    mean_r2 = sum(f.r2_log for f in v.folds) / len(v.folds)
    lines += ["", f"mean MAPE {mean_mape:.1%}, mean R²(log) {mean_r2:.3f}"]
    if mean_r2 < 0:
        lines.append(
            "the model does WORSE than predicting the mean on the systems it did not see "
            "(R² below 0): its predictions and importances say nothing; fit it on more rows "
            "of more systems (recommend --predict refuses it without --force)"
        )
    lines.append("")
    lines.append(f"Pareto front recovery per held-out fold ({target} vs {second}):")
    lines.append("fold  groups  true front  found  false")
    for r in fronts:
        lines.append(
            f"{r.fold:>4}  {r.groups:>6}  {r.true_members:>10}  {r.found:>5}  {r.false_members:>5}"
        )
    total, found = sum(r.true_members for r in fronts), sum(r.found for r in fronts)
    false = sum(r.false_members for r in fronts)
    lines.append(f"all   true front {total}, found {found}, false {false}")
    lines += ["", "permutation importance (held-out folds, MAE of log target):"]
    lines += [f"  {name:<34} {m:+.4f} ± {s:.4f}" for name, m, s in v.importance[:8]]
    return "\n".join(lines) + "\n"


def frame_records(frame: pd.DataFrame) -> Any:
    return json.loads(frame.to_json(orient="records"))
