"""Artifacts are verified when used: a cached model rewritten during or before a real replay of
ort-digits fails it (exit 3, both digests named), never yielding a "complete" run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import numpy_helper

from repro.cli import cli
from repro.harness.runner import ProcessRunner
from repro.runs.store import load_run
from tests.helpers import replay_performance


def _other_model(original: Path) -> bytes:
    """The digits model with its first weight matrix scrambled: a valid model that loads and
    runs, with a poor accuracy (what a hostile rewrite would look like)."""
    proto = onnx.load(str(original))
    init = proto.graph.initializer[0]
    weights = numpy_helper.to_array(init)
    scrambled = np.random.default_rng(0).permutation(weights.ravel()).reshape(weights.shape)
    init.CopyFrom(numpy_helper.from_array(scrambled, init.name))
    data: bytes = proto.SerializeToString()
    return data


def _rewrite(path: Path, data: bytes) -> None:
    path.chmod(0o644)  # the cache commits its files read-only
    path.write_bytes(data)


def _fetch(spec: Path, cache: Path) -> dict[str, Path]:
    result = CliRunner().invoke(cli, ["fetch", str(spec), "--cache-dir", str(cache), "--json"])
    assert result.exit_code == 0, result.stderr
    return {row["artifact"]: Path(row["path"]) for row in json.loads(result.stdout)}


def test_model_rewritten_after_verification_fails_the_test(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = root / "specs" / "ort-digits.json"
    model = _fetch(spec, tmp_path / "cache")["model"]
    pinned = hashlib.sha256(model.read_bytes()).hexdigest()
    other = _other_model(model)
    real_run = ProcessRunner.run

    def rewrite_then_run(self: ProcessRunner, *args: Any, **kwargs: Any) -> int:
        # After the orchestrator verified the cache entry, before the worker reads it.
        _rewrite(model, other)
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(ProcessRunner, "run", rewrite_then_run)
    result = replay_performance(spec, tmp_path, "Offline", "--min-duration-ms", "300")
    assert result.exit_code == 3, result.output
    assert pinned in result.stderr
    assert hashlib.sha256(other).hexdigest() in result.stderr
    record = load_run(tmp_path / "results" / "ort-digits" / "t1")
    assert record.status == "failed"
    ((test,),) = [record.tests]
    assert test.status == "failed"
    assert test.error is not None
    assert test.error.startswith("ArtifactError: model ")
    assert pinned in test.error
    assert hashlib.sha256(other).hexdigest() in test.error


def test_corrupt_cache_entry_stops_the_replay_before_any_test(root: Path, tmp_path: Path) -> None:
    spec = root / "specs" / "ort-digits.json"
    model = _fetch(spec, tmp_path / "cache")["model"]
    pinned = hashlib.sha256(model.read_bytes()).hexdigest()
    other = _other_model(model)
    _rewrite(model, other)
    result = replay_performance(spec, tmp_path, "Offline", "--min-duration-ms", "300")
    assert result.exit_code == 3, result.output
    assert f"the cache entry {model} is corrupt" in result.stderr
    assert pinned in result.stderr
    assert hashlib.sha256(other).hexdigest() in result.stderr
    assert f"rm -f {model}" in result.stderr
    assert model.read_bytes() == other  # left as found
    assert not (tmp_path / "results" / "ort-digits").exists()
