"""`python -m repro.replay.part PLAN K`, what a node runs: a bad plan names its field, a part
that ran already says how to go on, and a node that cannot write the run says why (no
traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.replay.part import main
from tests.helpers import portable_spec


def _plan(tmp_path: Path, **fields: Any) -> Path:
    doc = {
        "run_id": "r1",
        "run_dir": str(tmp_path / "run"),
        "spec_path": str(tmp_path / "s.json"),
        "spec": {},
        "env": "native",
        "cache_dir": str(tmp_path / "cache"),
        "parts": 2,
        "python": ["python3"],
        "executor": "local",
        **fields,
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_plans_bad_spec_names_the_field(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = portable_spec(root, "ort-digits")
    spec["backend"]["name"] = "tensorrt"
    assert main([str(_plan(tmp_path, spec=spec)), "0"]) == 2
    err = capsys.readouterr().err
    assert "$.spec.backend" in err
    assert "onnxruntime" in err  # the valid names


def test_a_part_that_ran_already_points_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run" / "parts" / "1").mkdir(parents=True)
    assert main([str(_plan(tmp_path)), "1"]) == 2
    err = capsys.readouterr().err
    assert "part 1 ran already" in err
    assert f"repro replay --resume {tmp_path / 'run'}" in err


def test_a_node_that_cannot_write_the_run_says_so(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    spec = portable_spec(root, "ort-digits")
    plan = _plan(tmp_path, spec=spec, cache_dir=str(tmp_path / "file" / "cache"))
    assert main([str(plan), "0"]) == 3
    err = capsys.readouterr().err
    assert "Not a directory" in err
    assert "mounted on this node" in err
