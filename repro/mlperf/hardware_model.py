"""Predictive models of throughput, energy or cost from hardware, software and scenario
features (`repro model fit`), validated by system.

A table written by `repro results --enrich` (or enriched here) gives the features: the counts,
the hardware table's specifications of the processor and the accelerator, the benchmark,
scenario, framework and division. The model (scikit-learn gradient boosting, or a random
forest) is fitted on the log of the target; `GroupKFold` by system keeps every system out of
its own fold's training data, so a score says how the model does on a system it never saw.
The out-of-fold residuals give split-conformal prediction intervals.

A saved model is a pickle beside a JSON sidecar (features, data hash, repro version, the
pickle's sha256, an HMAC-SHA256 with this user's key): `load_model` checks the sidecar's HMAC
and the pickle's digest before it unpickles anything, so only a model repro wrote here loads.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import pickle
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro import __version__
from repro.atomic import atomic_path, atomic_write_text
from repro.attest.keys import default_key_dir
from repro.errors import SpecError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

FORMAT = "repro.hwmodel/v1"
TARGETS = ("throughput", "energy", "cost")
MODELS = ("boosting", "forest")
NUMERIC = (
    "processor_count",
    "accelerator_count",
    "node_count",
    "processor_tdp_w",
    "processor_launch_year",
    "accelerator_tdp_w",
    "accelerator_memory_gb",
    "accelerator_memory_bandwidth_gbs",
    "accelerator_fp16_tflops_dense",
    "accelerator_int8_tops_dense",
    "accelerator_launch_year",
)
CATEGORICAL = ("benchmark", "scenario", "framework_family", "division", "accelerator_hw")
FEATURES = (*CATEGORICAL, *NUMERIC)
#: the columns a table needs before enrichment can give the rest
NEEDED = (
    "system",
    "processor",
    "accelerator",
    "accelerator_count",
    "benchmark",
    "scenario",
    "value",
    "unit",
)
#: the fewest rows a leaf of gradient boosting holds: a fold trained on fewer than twice this
#: cannot split, and predicts one value for every row (`repro model fit` says so)
MIN_LEAF = 3
#: the coverage of the prediction intervals
COVERAGE = 0.9
KEY_FILE = "model-hmac.key"


@dataclass
class FoldScore:
    """One held-out fold: its systems, scores, and the systems predicted worst."""

    fold: int
    train_rows: int
    test_rows: int
    test_systems: int
    mape: float
    r2_log: float
    worst: list[tuple[str, float]]  # (system, its mean absolute percentage error)


@dataclass
class Validation:
    """Cross-validation by system: per fold, and the out-of-fold predictions."""

    folds: list[FoldScore]
    predicted: np.ndarray  # out-of-fold predictions, original scale
    fold_of: np.ndarray  # the fold each row was held out in
    residual_q: float  # the conformal |log residual| quantile at COVERAGE
    importance: list[tuple[str, float, float]] = field(default_factory=list)  # name, mean, sd


def target_frame(table: pd.DataFrame, target: str) -> pd.DataFrame:
    """The rows that have the target (valid results only), with `y` and the features."""
    import pandas as pd

    if target not in TARGETS:
        raise SpecError(f"--target {target!r}: expected one of {', '.join(TARGETS)}")
    missing = [c for c in NEEDED if c not in table]
    if missing:
        raise SpecError(
            f"the table has no {', '.join(missing)} column (needed to fit a model)",
            hint="write it with `repro results TREE --enrich --csv FILE`",
        )
    t = table
    if "processor_tdp_w" not in t:
        from repro.mlperf.hardware import enrich

        t = enrich(t)[0]
    t = t.copy()
    if "validity" in t:
        t = t[t["validity"].astype(str).str.upper().isin(["VALID", "NAN", "NONE"])]
    value = pd.to_numeric(t["value"], errors="coerce")
    if target == "throughput":
        y = value.where(t["unit"].astype(str).isin(["samples/s", "tokens/s"]))
    elif target == "energy":
        column = "energy_measured_j"
        y = pd.to_numeric(t[column], errors="coerce") if column in t else value * math.nan
    else:
        y = pd.to_numeric(t["cost_usd"], errors="coerce")
    t["y"] = y
    t = t[t["y"].notna() & (t["y"] > 0)]
    t["framework_family"] = t.get("framework", pd.Series(index=t.index, dtype=object)).map(_family)
    for column in FEATURES:
        if column not in t:
            t[column] = None if column in CATEGORICAL else math.nan
    for column in NUMERIC:
        t[column] = pd.to_numeric(t[column], errors="coerce")
    for column in CATEGORICAL:
        t[column] = t[column].map(lambda v: "" if v is None or v != v else str(v))
    return t.reset_index(drop=True)


def _family(value: Any) -> str:
    """A framework's family: its first word, lowercased ("TensorRT 10.2" -> "tensorrt")."""
    if not isinstance(value, str) or not value.strip():
        return ""
    text = value.lower()
    for known in ("tensorrt", "onnxruntime", "pytorch", "tvm", "openvino", "jax", "vllm"):
        if known in text:
            return known
    return text.split()[0]


def pipeline(kind: str, seed: int) -> Any:
    """Ordinal-encoded categories + numbers -> a tree ensemble (NaN is a value to both)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    if kind not in MODELS:
        raise SpecError(f"--model {kind!r}: expected one of {', '.join(MODELS)}")
    encode = ColumnTransformer(
        [
            (
                "categories",
                OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
                list(CATEGORICAL),
            ),
            ("numbers", KnownColumns(), list(NUMERIC)),
        ]
    )
    regressor = (
        HistGradientBoostingRegressor(
            max_iter=100, learning_rate=0.1, min_samples_leaf=MIN_LEAF, random_state=seed
        )
        if kind == "boosting"
        else RandomForestRegressor(
            n_estimators=100, min_samples_leaf=1, random_state=seed, n_jobs=1
        )
    )
    return Pipeline([("encode", encode), ("model", regressor)])


class KnownColumns:
    """The numeric features with at least one value in the rows fitted on, as they are (NaN
    stays NaN: the trees take it as a value). A feature no training row has says nothing, and
    gradient boosting's binning fails on a column without one value (a small table: the
    processor's TDP known for no system of a fold's training rows)."""

    def fit(self, x: Any, y: Any = None) -> KnownColumns:
        import numpy as np

        values = np.asarray(x, dtype=float)
        self.keep_ = ~np.isnan(values).all(axis=0) if values.size else np.zeros(0, dtype=bool)
        return self

    def transform(self, x: Any) -> Any:
        import numpy as np

        return np.asarray(x, dtype=float)[:, self.keep_]

    def fit_transform(self, x: Any, y: Any = None) -> Any:
        return self.fit(x, y).transform(x)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {}

    def set_params(self, **params: Any) -> KnownColumns:
        return self


def check_groups(t: pd.DataFrame, target: str, folds: int, *, hint: str | None = None) -> None:
    """Enough systems for `folds` folds, each held out whole (`hint`: what the caller's user
    can do about too few)."""
    if folds < 2:
        raise SpecError(f"--folds {folds}: at least 2")
    systems = t["system"].nunique()
    if systems < folds:
        raise SpecError(
            f"--target {target}: {systems} system(s) have it ({len(t)} row(s)), fewer than the "
            f"{folds} folds: a fold needs a system of its own",
            hint=hint or "lower --folds, or add results (e.g. more rounds) to the table",
        )


def cross_validate(
    t: pd.DataFrame,
    *,
    target: str,
    kind: str = "boosting",
    folds: int = 5,
    seed: int = 0,
    importance_repeats: int = 3,
    hint: str | None = None,
) -> Validation:
    """GroupKFold by system: per fold MAPE, R² of the log, the worst systems; out-of-fold
    predictions, the conformal residual quantile, and permutation importance on held-out data."""
    import numpy as np
    from sklearn.inspection import permutation_importance
    from sklearn.metrics import r2_score
    from sklearn.model_selection import GroupKFold

    check_groups(t, target, folds, hint=hint)
    x, y, groups = t[list(FEATURES)], np.log(t["y"].to_numpy(float)), t["system"].to_numpy()
    predicted = np.full(len(t), np.nan)
    fold_of = np.full(len(t), -1)
    scores, importances = [], []
    for k, (train, test) in enumerate(GroupKFold(n_splits=folds).split(x, y, groups)):
        model = pipeline(kind, seed).fit(x.iloc[train], y[train])
        log_pred = model.predict(x.iloc[test])
        predicted[test], fold_of[test] = np.exp(log_pred), k
        truth = np.exp(y[test])
        ape = np.abs(np.exp(log_pred) - truth) / truth
        per_system = (
            t.iloc[test].assign(ape=ape).groupby("system")["ape"].mean().sort_values()[::-1]
        )
        r2 = float(r2_score(y[test], log_pred)) if len(test) > 1 else math.nan
        scores.append(
            FoldScore(
                k + 1,
                len(train),
                len(test),
                len(per_system),
                float(ape.mean()),
                r2,
                [(str(s), float(v)) for s, v in per_system.head(3).items()],
            )
        )
        if importance_repeats and len(test) > 1:
            result = permutation_importance(
                model,
                x.iloc[test],
                y[test],
                n_repeats=importance_repeats,
                random_state=seed,
                scoring="neg_mean_absolute_error",
            )
            importances.append(result.importances_mean)
    residuals = np.abs(np.log(predicted) - y)
    n = len(residuals)
    level = min(1.0, math.ceil((n + 1) * COVERAGE) / n)
    q = float(np.quantile(residuals, level, method="higher"))
    mean = np.mean(importances, axis=0) if importances else np.zeros(len(FEATURES))
    sd = np.std(importances, axis=0) if importances else np.zeros(len(FEATURES))
    ranked = sorted(zip(FEATURES, mean, sd, strict=True), key=lambda r: -r[1])
    return Validation(
        scores, predicted, fold_of, q, [(f, float(m), float(s)) for f, m, s in ranked]
    )


def data_sha256(t: pd.DataFrame) -> str:
    """The digest of the rows a model was fitted on (its features and target, as CSV)."""
    text = t[["system", *FEATURES, "y"]].to_csv(index=False, float_format="%.17g")
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class FittedModel:
    """A fitted pipeline and what it was fitted on."""

    estimator: Any
    meta: dict[str, Any]

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        import numpy as np

        log_pred = self.estimator.predict(frame[list(self.meta["features"])])
        return np.asarray(np.exp(log_pred), dtype=float)


def fit(
    t: pd.DataFrame, *, target: str, kind: str, seed: int, validation: Validation
) -> FittedModel:
    """The model refitted on every row, with the metadata its sidecar keeps."""
    import numpy as np

    estimator = pipeline(kind, seed).fit(t[list(FEATURES)], np.log(t["y"].to_numpy(float)))
    ranges = {c: [float(t[c].min()), float(t[c].max())] for c in NUMERIC if t[c].notna().any()}
    seen = sorted({f"{b}|{a}" for b, a in zip(t["benchmark"], t["accelerator_hw"], strict=True)})
    meta = {
        "format": FORMAT,
        "repro_version": __version__,
        "target": target,
        "model": kind,
        "seed": seed,
        "features": list(FEATURES),
        "rows": len(t),
        "systems": int(t["system"].nunique()),
        "data_sha256": data_sha256(t),
        "ranges": ranges,
        "seen_benchmark_accelerator": seen,
        "medians": {c: float(t[c].median()) for c in NUMERIC if t[c].notna().any()},
        "modes": {c: str(t[c].mode().iloc[0]) for c in CATEGORICAL},
        "coverage": COVERAGE,
        "residual_q": validation.residual_q,
        "cv": [vars(f) for f in validation.folds],
    }
    return FittedModel(estimator, meta)


def _key() -> bytes:
    """This user's HMAC key for model sidecars (made, mode 0600, on first use)."""
    path = Path(os.environ.get("REPRO_MODEL_KEY") or default_key_dir() / KEY_FILE)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(secrets.token_hex(32))
            tmp.chmod(0o600)
    return bytes.fromhex(path.read_text().strip())


def _mac(meta: dict[str, Any]) -> str:
    body = json.dumps({k: v for k, v in meta.items() if k != "hmac"}, sort_keys=True)
    return hmac.new(_key(), body.encode(), hashlib.sha256).hexdigest()


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def fronts_page_of(path: Path) -> Path:
    """Where `repro model fit` writes the page of the model's fronts per fold (HTML)."""
    return path.with_name(path.name + ".fronts.html")


def save_model(model: FittedModel, path: Path) -> Path:
    """The pickle at `path`, its sidecar beside it (`path`.json), both written atomically."""
    blob = pickle.dumps(model.estimator, protocol=pickle.HIGHEST_PROTOCOL)
    meta = {**model.meta, "model_sha256": hashlib.sha256(blob).hexdigest()}
    meta["hmac"] = _mac(meta)
    with atomic_path(path) as tmp:
        tmp.write_bytes(blob)
    atomic_write_text(sidecar_of(path), json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return sidecar_of(path)


def load_model(path: Path) -> FittedModel:
    """A model repro saved here: the sidecar's HMAC and the pickle's sha256 are checked
    before the pickle is read; anything else is refused without unpickling it."""
    side = path if path.suffix == ".json" else sidecar_of(path)
    blob_path = side.with_name(side.name.removesuffix(".json"))
    hint = "fit it again here with `repro model fit TABLE -o FILE`"
    try:
        meta = json.loads(side.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{side}: not a model sidecar: {exc}", hint=hint) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SpecError(f"{side}: format is not {FORMAT}", hint=hint)
    if not hmac.compare_digest(str(meta.get("hmac", "")), _mac(meta)):
        raise SpecError(
            f"{side}: hmac: this model was not written by repro with this user's key; "
            "it is not loaded (a pickle runs code)",
            hint=hint,
        )
    try:
        blob = blob_path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{blob_path}: cannot read the model: {exc}", hint=hint) from None
    if hashlib.sha256(blob).hexdigest() != meta.get("model_sha256"):
        raise SpecError(
            f"{blob_path}: model_sha256: the file changed since repro wrote it; not loaded",
            hint=hint,
        )
    return FittedModel(pickle.loads(blob), meta)
