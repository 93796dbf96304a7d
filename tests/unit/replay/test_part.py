"""`python -m repro.replay.part PLAN K`, what a node runs: a bad plan names its field, a part
that ran already says how to go on, and a node that cannot write the run says why (no
traceback)."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["plan.json", "²"], "usage: python -m repro.replay.part PLAN.json PART"),  # a digit
        (["plan.json", "-1"], "usage: python -m repro.replay.part PLAN.json PART"),
    ],
)
def test_a_part_number_that_is_not_one_is_a_usage_error(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert said in capsys.readouterr().err


def test_a_plan_that_is_a_fifo_or_nested_deep_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert main([str(fifo), "0"]) == 2  # never opened: a FIFO would block the read for ever
    assert "not a regular file" in capsys.readouterr().err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main([str(deep), "0"]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err
    assert "Traceback" not in err
    huge = _plan(tmp_path, parts=10**30)
    assert main([str(huge), "0"]) == 2
    assert "parts" in capsys.readouterr().err
