"""`repro tune` runs MetaSchedule in a child process: its errors come back as repro's own."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("tvm") is None:
    pytest.skip("apache-tvm is not installed (pip install 'repro[tvm]')", allow_module_level=True)

from repro.artifacts.cache import ArtifactCache
from repro.backends.tvm import tuning
from repro.errors import ArtifactError, RunError
from repro.spec.io import load_spec


def _tune(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], status: int
) -> Any:
    def fake(cmd: list[str], *, echo: Any, **_: Any) -> tuple[int, list[str]]:
        for line in lines:
            echo(line)
        return status, lines

    monkeypatch.setattr("repro._subprocess.run_streaming", fake)
    spec_path = root / "specs" / "tvm-resnet50.json"
    return tuning.tune(
        load_spec(spec_path),
        spec_path,
        trials_per_task=1,
        out_path=tmp_path / "db.json",
        cache=ArtifactCache(tmp_path / "cache"),
        report=lambda line: None,
    )


def test_the_childs_repro_error_is_raised_as_itself(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = {"kind": "ArtifactError", "message": "model: sha256 mismatch", "hint": "fetch it"}
    with pytest.raises(ArtifactError, match="sha256 mismatch") as caught:
        _tune(root, tmp_path, monkeypatch, ["working", tuning._ERROR + json.dumps(said)], 3)
    assert caught.value.hint == "fetch it"


def test_a_child_that_dies_is_a_run_failure(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RunError, match=re.escape("tuning failed (exit -11): Segfault")):
        _tune(root, tmp_path, monkeypatch, ["Segfault"], -11)
