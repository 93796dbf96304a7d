"""Scoring an accuracy test outside the engine: top-1 against the data set's labels (read once,
verified), and a spec with neither labels nor reference predictions says why there is no score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from repro.digests import sha256_file
from repro.errors import ArtifactError, RunError
from repro.harness.request import WorkerResult
from repro.replay.scoring import Scorer
from repro.runs import layout
from repro.spec.io import parse_spec
from repro.spec.models import ExperimentSpec
from tests.helpers import portable_spec

LABELS = [3, 1, 4, 1, 5, 9]


def _spec(root: Path, tmp_path: Path, **accuracy: Any) -> tuple[ExperimentSpec, dict[str, Path]]:
    data = tmp_path / "data.npz"
    np.savez(data, inputs=np.zeros((len(LABELS), 64), np.float32), labels=np.asarray(LABELS))
    raw = portable_spec(root, "ort-digits")
    raw["artifacts"]["dataset"] = {
        "path": str(data),
        "sha256": sha256_file(data),
        "media_type": "application/x-npz",
    }
    raw["workload"]["accuracy"].update(accuracy)
    artifacts = {"model": Path(raw["artifacts"]["model"]["path"]), "dataset": data}
    return parse_spec(raw, source="test"), artifacts


def _test_dir(tmp_path: Path, predicted: list[int]) -> Path:
    out = tmp_path / "test"
    out.mkdir()
    entries = [
        {"seq_id": k, "qsl_idx": k, "data": np.asarray(p, dtype="<i8").tobytes().hex().upper()}
        for k, p in enumerate(predicted)
    ]
    (out / layout.ACCURACY_LOG).write_text(json.dumps(entries))
    return out


def _result() -> WorkerResult:
    return WorkerResult(status="complete", output_dtype="<i8", output_shape=[])


def test_top1_is_scored_against_the_data_sets_labels_and_the_predictions_kept(
    root: Path, tmp_path: Path
) -> None:
    spec, artifacts = _spec(root, tmp_path)
    predicted = [*LABELS[:-1], 0]  # the last one wrong
    out = _test_dir(tmp_path, predicted)
    got = Scorer(spec, artifacts).score(out, _result())
    assert (got["metric"], got["correct"], got["total"]) == ("top1", 5, 6)
    assert got["value"] == pytest.approx(5 / 6)
    assert len(got["predictions_sha256"]) == 64
    assert (out / layout.PREDICTIONS_FILE).is_file()


def test_a_class_offset_shifts_the_predictions(root: Path, tmp_path: Path) -> None:
    spec, artifacts = _spec(root, tmp_path, class_offset=1)
    got = Scorer(spec, artifacts).score(_test_dir(tmp_path, [x - 1 for x in LABELS]), _result())
    assert got["correct"] == len(LABELS)


def test_a_data_set_without_the_labels_is_a_run_error(root: Path, tmp_path: Path) -> None:
    spec, artifacts = _spec(root, tmp_path, labels_key="classes")
    with pytest.raises(RunError, match="no 'classes' array"):
        Scorer(spec, artifacts).score(_test_dir(tmp_path, LABELS), _result())


def test_a_changed_data_set_is_refused_before_it_is_scored(root: Path, tmp_path: Path) -> None:
    spec, artifacts = _spec(root, tmp_path)
    np.savez(artifacts["dataset"], inputs=np.zeros((1, 64)), labels=np.asarray(LABELS))
    with pytest.raises(ArtifactError, match="sha256 mismatch when loaded"):
        Scorer(spec, artifacts).score(_test_dir(tmp_path, LABELS), _result())
