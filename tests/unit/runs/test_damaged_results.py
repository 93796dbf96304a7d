"""Damaged results are bad input with the file named (exit 2), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.runs import layout
from repro.runs.accuracy import decode_accuracy_log, load_predictions
from tests.helpers import make_run, write_record


def _report(tmp_path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "-o",
            str(tmp_path / "out"),
            "--compare",
            str(tmp_path / "r" / "original"),
            str(tmp_path / "r" / "replay"),
        ],
    )
    return result.exit_code, result.output


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    return tmp_path / "r" / "replay"


@pytest.mark.parametrize("value", [0, -5.0, "NaN", True, float("inf"), 10**400])
def test_a_bad_metric_value_names_the_run_file(tmp_path: Path, runs: Path, value: object) -> None:
    path = layout.record_file(runs)
    record = json.loads(path.read_text())
    offline = next(t for t in record["tests"] if t["scenario"] == "Offline")
    offline["metrics"]["samples_per_second"] = value
    path.write_text(json.dumps(record))
    code, out = _report(tmp_path)
    assert code == 2, out
    assert str(path) in out
    assert "samples_per_second" in out


def test_truncated_predictions_name_the_file(tmp_path: Path, runs: Path) -> None:
    pred = runs / "Offline" / "accuracy" / layout.PREDICTIONS_FILE
    pred.write_bytes(pred.read_bytes()[:60])
    code, out = _report(tmp_path)
    assert code == 2, out
    assert str(pred) in out
    assert "damaged predictions file" in out
    with pytest.raises(SpecError):
        load_predictions(pred)


def test_a_broken_run_record_names_the_file(tmp_path: Path, runs: Path) -> None:
    layout.record_file(runs).write_text('{"schema": "repro.run/v2", "run_id": ')
    code, out = _report(tmp_path)
    assert code == 2, out
    assert "not a valid run record" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a LoadGen accuracy log"),
        ('{"qsl_idx": 0}', "expected a JSON list"),
        ('[{"qsl_idx": 0}]', "entry 0 is not a <i8 response"),
        ('[{"qsl_idx": 0, "data": "zz"}]', "entry 0 is not a <i8 response"),
        ('[{"qsl_idx": 0, "data": ""}]', "entry 0 is not a <i8 response"),
    ],
)
def test_a_damaged_accuracy_log_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / layout.ACCURACY_LOG
    path.write_text(text)
    with pytest.raises(SpecError, match=message) as err:
        decode_accuracy_log(path, dtype="<i8", shape=())
    assert str(path) in err.value.message


def test_a_run_record_of_the_wrong_shape_names_each_field(tmp_path: Path, runs: Path) -> None:
    layout.record_file(runs).write_text('{"schema": "repro.run/v2", "status": "done"}')
    code, out = _report(tmp_path)
    assert code == 2, out
    assert "invalid run record" in out
    assert "$.run_id: required field is missing" in out
    assert "$.status:" in out
    assert "errors.pydantic.dev" not in out


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda t: t["metrics"].update(validity="MAYBE"), "metrics.validity is 'MAYBE'"),
        (lambda t: t.update(metrics={}), "metrics.validity is None"),
    ],
)
def test_a_finished_test_without_loadgens_validity_is_damaged(
    tmp_path: Path, runs: Path, edit: Any, named: str
) -> None:
    path = layout.record_file(runs)
    record = json.loads(path.read_text())
    edit(next(t for t in record["tests"] if t["mode"] == "performance"))
    path.write_text(json.dumps(record))
    code, out = _report(tmp_path)
    assert code == 2, out
    assert named in out


def test_an_accuracy_above_one_or_a_repeated_key_is_damaged(tmp_path: Path, runs: Path) -> None:
    path = layout.record_file(runs)
    text = path.read_text()
    record = json.loads(text)
    acc = next(t for t in record["tests"] if t["mode"] == "accuracy")
    acc["accuracy"]["value"] = 5.0
    path.write_text(json.dumps(record))
    code, out = _report(tmp_path)
    assert code == 2, out
    assert "accuracy.value is 5.0, not a fraction" in out
    path.write_text(text.replace('"status": ', '"status": "interrupted", "status": ', 1))
    code, out = _report(tmp_path)
    assert code == 2, out
    assert "appears twice" in out


def test_a_score_accuracy_is_not_held_to_a_fraction(tmp_path: Path, runs: Path) -> None:
    """An imported original keeps the published figure: an F1 of 90.87 is no damage."""
    from repro.runs.store import load_run

    path = layout.record_file(runs)
    record = json.loads(path.read_text())
    acc = next(t for t in record["tests"] if t["mode"] == "accuracy")
    acc["accuracy"].update(value=90.87, unit="score", metric="f1")
    path.write_text(json.dumps(record))
    assert load_run(runs).accuracy_test(acc["scenario"]).accuracy["value"] == 90.87


def _backend_edit(runs: Path, tuned: object, *, sealed: bool) -> None:
    """The replay's TVM-like backend facts with `tuned` as written; the record's digest made
    anew (`sealed`: as repro would have written it) or taken out (a record from before it)."""
    path = layout.record_file(runs)
    doc = json.loads(path.read_text())
    for test in doc["tests"]:
        test["backend"] = {"name": "tvm", "target": {"kind": "llvm"}, "tuned": tuned}
    if sealed:
        write_record(path, doc)
    else:
        doc.pop("record_sha256", None)
        path.write_text(json.dumps(doc))


def test_a_backend_recorded_as_a_plug_in_records_it_is_read(tmp_path: Path, runs: Path) -> None:
    """TVM records its target as an object: the typed view wanted a string (exit 2, the
    record blamed)."""
    _backend_edit(runs, True, sealed=True)
    code, out = _report(tmp_path)
    assert code in (0, 1), out


def test_a_record_repro_wrote_that_a_view_refuses_is_repro_s_bug_not_the_user_s(
    tmp_path: Path, runs: Path
) -> None:
    _backend_edit(runs, "maybe", sealed=True)
    code, out = _report(tmp_path)
    assert code == 4, out
    assert "repro cannot read a record it wrote" in out
    assert "$.backend.tuned" in out
    assert "a bug in repro, not damage to the record" in out
    assert "--debug" in out
    assert "damaged or not repro's" not in out


def test_a_record_without_its_digest_that_a_view_refuses_is_bad_input(
    tmp_path: Path, runs: Path
) -> None:
    _backend_edit(runs, "maybe", sealed=False)
    code, out = _report(tmp_path)
    assert code == 2, out
    assert "$.backend.tuned" in out
    assert "damaged or not repro's" in out
