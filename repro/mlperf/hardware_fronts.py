"""Predicted Pareto fronts checked against the true ones on held-out folds, configurations no
one submitted ranked by a model, and what moved each prediction.

Front recovery: in each held-out fold and each (benchmark, scenario), the rows no other beats
on (the target, a second objective) are the true front; the same with the out-of-fold
predictions in place of the target is the predicted front. Found = true members the predicted
front has; false = predicted members the true front lacks.

Contributions: `shap` would add ~65 MB of wheels (numba and llvmlite; measured with
`pip download shap`), so a prediction's contributions are baseline-substitution deltas: the
prediction over the one with the feature set to the training median (or most common value),
as a factor (x1.8: the feature raises the prediction 1.8-fold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.errors import SpecError
from repro.mlperf.hardware_model import CATEGORICAL, NUMERIC, FittedModel

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: the direction of each target, and the default second objective of its front
MAXIMIZE = {"throughput": True, "energy": False, "cost": False}
SECOND = {"throughput": "min:cost_usd", "energy": "max:value", "cost": "max:value"}
#: the columns that say whose a row of `front_members` is
WHO = ("benchmark", "scenario", "submitter", "system")


@dataclass
class FrontRecovery:
    """One fold's true front against its predicted one."""

    fold: int
    groups: int  # (benchmark, scenario) groups with a front
    true_members: int
    found: int
    false_members: int


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """Rows of `points` (larger is better in every column) that no other row dominates."""
    import numpy as np

    keep = np.ones(len(points), dtype=bool)
    for i, p in enumerate(points):
        better = np.all(points >= p, axis=1) & np.any(points > p, axis=1)
        keep[i] = not better.any()
    return keep


def parse_second(text: str, t: pd.DataFrame) -> tuple[str, bool]:
    """`max:COLUMN` or `min:COLUMN` of the table."""
    sense, _, column = text.partition(":")
    if sense not in ("max", "min") or not column:
        raise SpecError(f"--front-with {text!r}: expected max:COLUMN or min:COLUMN")
    if column not in t:
        raise SpecError(
            f"--front-with {text}: the table has no column {column!r}",
            hint="cost_usd comes from --enrich; value is the MLPerf metric",
        )
    return column, sense == "max"


def front_members(
    t: pd.DataFrame, predicted: np.ndarray, fold_of: np.ndarray, *, target: str, second: str
) -> pd.DataFrame:
    """Every held-out row that has the second objective: its fold (from 1), benchmark,
    scenario, submitter and system, `second` (that objective), `true` and `predicted` (the
    target) and whether it is on its (benchmark, scenario)'s true front (`on_true`) and on
    the front of the predictions (`on_predicted`)."""
    import numpy as np
    import pandas as pd

    column, second_max = parse_second(second, t)
    sign_t = 1.0 if MAXIMIZE[target] else -1.0
    sign_s = 1.0 if second_max else -1.0
    other = pd.to_numeric(t[column], errors="coerce").to_numpy(float)
    truth_all = t["y"].to_numpy(float)
    parts = []
    for fold in sorted(set(fold_of.tolist())):
        in_fold = (fold_of == fold) & np.isfinite(other)
        for _, idx in t[in_fold].groupby(["benchmark", "scenario"]).groups.items():
            rows = np.asarray(list(idx))
            truth = np.column_stack([sign_t * truth_all[rows], sign_s * other[rows]])
            guess = np.column_stack([sign_t * predicted[rows], sign_s * other[rows]])
            part = t.loc[rows, [c for c in WHO if c in t]].copy()
            part.insert(0, "fold", fold + 1)
            part["second"], part["true"], part["predicted"] = (
                other[rows],
                truth_all[rows],
                predicted[rows],
            )
            part["on_true"], part["on_predicted"] = pareto_mask(truth), pareto_mask(guess)
            parts.append(part)
    columns = ["fold", *WHO, "second", "true", "predicted", "on_true", "on_predicted"]
    return pd.concat(parts) if parts else pd.DataFrame(columns=columns)


def recovery(members: pd.DataFrame, *, folds: Sequence[int]) -> list[FrontRecovery]:
    """`front_members` counted per fold (numbered from 1; a fold without a row that has both
    objectives counts zeros)."""
    out = []
    for fold in folds:
        m = members[members["fold"] == fold]
        on_true, on_predicted = m["on_true"].astype(bool), m["on_predicted"].astype(bool)
        out.append(
            FrontRecovery(
                fold=fold,
                groups=len(m[["benchmark", "scenario"]].drop_duplicates()),
                true_members=int(on_true.sum()),
                found=int((on_true & on_predicted).sum()),
                false_members=int((on_predicted & ~on_true).sum()),
            )
        )
    return out


#: the accelerator counts tried for a configuration beside the ones submitted
COUNTS = (1, 2, 4, 8)
HARDWARE = (
    "processor",
    "processor_hw",
    "processor_count",
    "node_count",
    "accelerator",
    "accelerator_hw",
    "framework_family",
    "division",
    "processor_tdp_w",
    "processor_launch_year",
    "accelerator_tdp_w",
    "accelerator_memory_gb",
    "accelerator_memory_bandwidth_gbs",
    "accelerator_fp16_tflops_dense",
    "accelerator_int8_tops_dense",
    "accelerator_launch_year",
)


def candidates(t: pd.DataFrame, where: dict[str, str]) -> pd.DataFrame:
    """Every hardware configuration of the table (processor, accelerator, framework) at every
    accelerator count of COUNTS and its own, for every (benchmark, scenario) of the selection;
    `submitted` says whether a result of it exists."""
    import pandas as pd

    for column, value in where.items():
        if column not in t:
            raise SpecError(f"--where {column}={value}: the table has no column {column!r}")
    selected = t
    for column, value in where.items():
        if column in ("benchmark", "scenario"):
            selected = selected[selected[column].astype(str).isin(value.split(","))]
    if not len(selected):
        raise SpecError(f"--where {where}: no row of the table matches")
    tasks = selected[["benchmark", "scenario"]].drop_duplicates()
    configs = t[[c for c in HARDWARE if c in t] + ["accelerator_count"]].drop_duplicates(
        subset=["processor", "accelerator", "framework_family", "accelerator_count"]
    )
    rows = []
    for _, config in configs.iterrows():
        has_accelerator = (config["accelerator_count"] or 0) > 0
        counts = sorted({*(COUNTS if has_accelerator else ()), config["accelerator_count"]})
        for n in counts:
            for _, task in tasks.iterrows():
                rows.append({**config.to_dict(), "accelerator_count": n, **task.to_dict()})
    out = pd.DataFrame(rows).drop_duplicates(
        subset=[
            "processor",
            "accelerator",
            "framework_family",
            "accelerator_count",
            "benchmark",
            "scenario",
        ]
    )
    key = ["processor", "accelerator", "accelerator_count", "benchmark", "scenario"]
    submitted = set(map(tuple, t[key].astype(str).to_numpy().tolist()))
    out["submitted"] = [tuple(r) in submitted for r in out[key].astype(str).to_numpy().tolist()]
    return out.reset_index(drop=True)


def extrapolations(frame: pd.DataFrame, meta: dict[str, Any]) -> list[str]:
    """Per row, what lies outside the training data (a number beyond its range, an accelerator
    never trained on that benchmark); empty where nothing does."""
    seen = set(meta.get("seen_benchmark_accelerator", []))
    out = []
    for _, row in frame.iterrows():
        flags = []
        for column, (low, high) in meta.get("ranges", {}).items():
            value = row.get(column)
            if value is not None and value == value and not low <= float(value) <= high:
                flags.append(f"{column} {float(value):g} outside [{low:g}, {high:g}]")
        if f"{row['benchmark']}|{row['accelerator_hw']}" not in seen:
            flags.append(
                f"{row['accelerator_hw'] or 'no accelerator'} not trained on {row['benchmark']}"
            )
        out.append("; ".join(flags))
    return out


def contributions(model: FittedModel, frame: pd.DataFrame, *, top: int = 3) -> list[str]:
    """Per row, the features that moved its prediction most: prediction over the prediction
    with the feature at its training median (numbers) or most common value (categories)."""
    import numpy as np

    base = model.predict(frame)
    effects = []
    for column in (*CATEGORICAL, *NUMERIC):
        swapped = frame.copy()
        if column in NUMERIC:
            swapped[column] = model.meta["medians"].get(column, np.nan)
        else:
            swapped[column] = model.meta["modes"].get(column, "")
        effects.append((column, base / model.predict(swapped)))
    out = []
    for i in range(len(frame)):
        ranked = sorted(effects, key=lambda e: -abs(np.log(e[1][i])))
        out.append(", ".join(f"{c} x{r[i]:.2g}" for c, r in ranked[:top] if abs(r[i] - 1) > 0.01))
    return out


def rank(model: FittedModel, frame: pd.DataFrame) -> pd.DataFrame:
    """Candidates with their prediction, conformal interval, extrapolations, contributions,
    best first (the target's direction)."""
    import numpy as np

    out = frame.copy()
    q = float(model.meta["residual_q"])
    out["predicted"] = model.predict(out)
    out["low"], out["high"] = out["predicted"] * np.exp(-q), out["predicted"] * np.exp(q)
    out["extrapolation"] = extrapolations(out, model.meta)
    out["contributions"] = contributions(model, out)
    maximize = MAXIMIZE[str(model.meta["target"])]
    return out.sort_values("predicted", ascending=not maximize).reset_index(drop=True)
