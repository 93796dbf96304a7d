"""`repro model fit` and `repro recommend --predict`: cross-validation by system, front
recovery, a model file that loads only if repro wrote it, ranked unsubmitted configurations
with intervals and extrapolation flags, and the bad inputs (exit 2)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.mlperf.hardware_fronts import pareto_mask
from repro.mlperf.hardware_model import cross_validate, fit, load_model, save_model, target_frame
from tests.hw_gen import table as generated


@pytest.fixture(autouse=True)
def model_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    key = tmp_path / "keys" / "model.key"
    monkeypatch.setenv("REPRO_MODEL_KEY", str(key))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return key


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return pd.DataFrame(generated(systems=12, seed=3))


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "t.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_each_system_is_held_out_in_one_fold_only(rows: pd.DataFrame) -> None:
    t = target_frame(rows, "throughput")
    v = cross_validate(t, target="throughput", kind="forest", folds=4, importance_repeats=0)
    folds = pd.Series(v.fold_of).groupby(t["system"]).nunique()
    assert (folds == 1).all()
    assert len(v.folds) == 4
    assert all(np.isfinite(f.mape) and f.worst for f in v.folds)
    assert v.residual_q > 0


def test_fit_prints_cv_fronts_and_importance(tmp_path: Path, rows: pd.DataFrame) -> None:
    table = _csv(tmp_path, rows)
    model = tmp_path / "m" / "tp.pkl"
    code, out = _run(
        "model",
        "fit",
        str(table),
        "--target",
        "throughput",
        "--model",
        "forest",
        "-k",
        "3",
        "--importance-repeats",
        "1",
        "-o",
        str(model),
        "--json",
    )
    assert code == 0, out
    data = json.loads(out[out.index("{") : out.rindex("}") + 1])
    assert [f["fold"] for f in data["folds"]] == [1, 2, 3]
    assert all(f["mape"] >= 0 and f["worst"] for f in data["folds"])
    for f in data["fronts"]["folds"]:
        assert f["found"] <= f["true_members"]
    page = tmp_path / "m" / "tp.pkl.fronts.html"  # the fronts as a table and a plot
    assert data["fronts"]["page"] == str(page)
    text = page.read_text()
    assert text.count("<svg") == 1
    for f in data["fronts"]["folds"]:
        assert f"fold {f['fold']}: {f['found']} of {f['true_members']} found" in text
    assert {i["feature"] for i in data["importance"]} >= {"accelerator_count", "benchmark"}
    side = json.loads((tmp_path / "m" / "tp.pkl.json").read_text())
    assert side["features"][0] == "benchmark"
    assert side["repro_version"]
    assert len(side["data_sha256"]) == 64


def test_a_model_loads_only_as_repro_wrote_it(tmp_path: Path, rows: pd.DataFrame) -> None:
    t = target_frame(rows, "throughput")
    v = cross_validate(t, target="throughput", kind="forest", folds=3, importance_repeats=0)
    path = tmp_path / "tp.pkl"
    sidecar = save_model(fit(t, target="throughput", kind="forest", seed=0, validation=v), path)
    assert load_model(path).predict(t.head(2)).shape == (2,)
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**meta, "target": "cost"}))
    with pytest.raises(SpecError, match="hmac"):
        load_model(path)
    sidecar.write_text(json.dumps(meta))
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(SpecError, match="model_sha256"):
        load_model(path)


class _Trap:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, (str(Path.cwd() / "unpickled"),))


def test_a_foreign_pickle_is_never_unpickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_key: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(_Trap()))
    fake = {"format": "repro.hwmodel/v1", "hmac": "0" * 64, "model_sha256": "0"}
    (tmp_path / "evil.pkl.json").write_text(json.dumps(fake))
    code, out = _run("recommend", "t.csv", "--predict", "--model", "evil.pkl")
    assert code == 2
    assert "hmac" in out
    assert not (tmp_path / "unpickled").exists()


def test_fewer_systems_than_folds_exit_2(tmp_path: Path, rows: pd.DataFrame) -> None:
    few = rows[rows["system"].isin(rows["system"].unique()[:3])]
    code, out = _run("model", "fit", str(_csv(tmp_path, few)), "--target", "throughput")
    assert code == 2
    assert "3 system(s) have it" in out
    assert "Traceback" not in out


def test_a_small_table_with_an_empty_feature_fits(tmp_path: Path, rows: pd.DataFrame) -> None:
    """8 rows of 6 systems whose processor the hardware table does not know (every TDP and
    launch year empty): gradient boosting's binning failed on such a column (exit 4)."""
    small = pd.concat([rows.groupby("system").head(2).head(4), rows.groupby("system").head(1)])
    small = small.drop_duplicates()
    small = small[small["system"].isin(small["system"].unique()[:6])].head(8).copy()
    small["processor"] = "a processor no table knows"
    assert small["system"].nunique() == 6
    model = tmp_path / "tp.pkl"
    outputs = []
    for folds in ("2", "3", "4"):
        code, out = _run(
            "model",
            "fit",
            str(_csv(tmp_path, small)),
            "--target",
            "throughput",
            "-k",
            folds,
            "--importance-repeats",
            "0",
            "-o",
            str(model),
        )
        assert code == 0, out
        assert "mean MAPE" in out
        outputs.append(out)
    assert "a fold trained on 4 row(s), fewer than 6: gradient boosting cannot split" in outputs[0]
    assert load_model(model).predict(target_frame(small, "throughput")).shape == (8,)


def test_a_wrong_front_objective_fails_before_fitting(
    tmp_path: Path, rows: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("fitted before --front-with was checked")

    monkeypatch.setattr("repro.mlperf.hardware_model.cross_validate", never)
    code, out = _run(
        "model",
        "fit",
        str(_csv(tmp_path, rows)),
        "--target",
        "throughput",
        "--front-with",
        "max:nope",
        "-o",
        str(tmp_path / "m.pkl"),
    )
    assert code == 2
    assert "--front-with max:nope: the table has no column 'nope'" in out
    assert not (tmp_path / "m.pkl").exists()


def test_energy_without_measurements_exit_2(tmp_path: Path, rows: pd.DataFrame) -> None:
    table = _csv(tmp_path, rows.drop(columns=["energy_j"]))
    code, out = _run("model", "fit", str(table), "--target", "energy")
    assert code == 2
    assert "0 system(s) have it" in out


def test_a_table_without_needed_columns_exit_2(tmp_path: Path, rows: pd.DataFrame) -> None:
    table = _csv(tmp_path, rows.drop(columns=["system"]))
    code, out = _run("model", "fit", str(table), "--target", "throughput")
    assert code == 2
    assert "no system column" in out


def test_predict_ranks_unsubmitted_and_flags_extrapolation(
    tmp_path: Path, rows: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    small = rows[rows["accelerator_count"] <= 4]
    table = _csv(tmp_path, small)
    code, out = _run(
        "model",
        "fit",
        str(table),
        "--target",
        "throughput",
        "--model",
        "forest",
        "-k",
        "3",
        "--importance-repeats",
        "0",
        "-o",
        "m.pkl",
    )
    assert code == 0, out
    where = "benchmark=resnet50,scenario=Offline"
    code, out = _run(
        "recommend",
        str(table),
        "--predict",
        "--model",
        "m.pkl",
        "--where",
        where,
        "--json",
        "--top",
        "500",
    )
    assert code == 0, out
    ranked = json.loads(out[out.index("[") : out.rindex("]") + 1])
    assert any(not r["submitted"] for r in ranked)
    assert all(r["low"] <= r["predicted"] <= r["high"] for r in ranked)
    eights = [r for r in ranked if r["accelerator_count"] == 8]
    assert eights
    assert all("accelerator_count 8 outside" in r["extrapolation"] for r in eights)
    assert all(r["benchmark"] == "resnet50" for r in ranked)
    predictions = [r["predicted"] for r in ranked]
    assert predictions == sorted(predictions, reverse=True)
    assert (tmp_path / "reports" / "recommend" / "recommend-predict.csv").is_file()


def test_pareto_mask_keeps_the_undominated() -> None:
    points = np.array([[3.0, -1.0], [2.0, -2.0], [1.0, 0.0], [3.0, -1.0]])
    assert pareto_mask(points).tolist() == [True, False, True, True]


def test_predict_on_too_few_systems_names_an_option_it_has(
    tmp_path: Path, rows: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`recommend --predict` hinted "lower --folds", an option recommend lacks."""
    monkeypatch.chdir(tmp_path)
    few = rows[rows["system"].isin(rows["system"].unique()[:3])]
    table = _csv(tmp_path, few)
    code, out = _run("recommend", str(table), "--predict")
    assert code == 2
    assert "--folds" not in out
    assert f"repro model fit {table} --target throughput -k 2" in out
    code, out = _run("recommend", str(table), "--model", "m.pkl", "--objective", "max:throughput")
    assert code == 2
    assert "--model ranks by a model's predictions: it goes with --predict" in out


def test_a_model_worse_than_the_mean_is_said_and_not_ranked_by(
    tmp_path: Path, rows: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's chain fitted a model of R² -638 to -1544 and recommend ranked by it without a
    word: a figure unrelated to the hardware (shuffled across rows) gives one."""
    monkeypatch.chdir(tmp_path)
    noise = rows.copy()
    rng = np.random.default_rng(0)
    noise["value"] = rng.permutation(noise["value"].to_numpy())
    table = _csv(tmp_path, noise)
    model = tmp_path / "m.pkl"
    code, out = _run(
        "model", "fit", str(table), "--target", "throughput", "-k", "3", "-o", str(model)
    )
    assert code == 0, out
    assert "does WORSE than predicting the mean" in out
    code, out = _run("recommend", str(table), "--predict", "--model", str(model))
    assert code == 2, out
    assert "predicts worse than the table's mean" in out
    code, out = _run("recommend", str(table), "--predict", "--model", str(model), "--force")
    assert code == 0, out
