"""A missing execution provider fails the run; an explicit fallback runs and is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.backends.onnxruntime import OnnxRuntimeOptions
from repro.backends.onnxruntime.engine import OnnxRuntimeEngine
from repro.cli import cli

MODEL = Path(__file__).resolve().parents[2] / "artifacts" / "digits-mlp.onnx"
MISSING = "NoSuchExecutionProvider"


def test_a_missing_provider_is_refused_not_silently_replaced() -> None:
    engine = OnnxRuntimeEngine()
    with pytest.raises(RuntimeError, match=f"execution provider {MISSING} is not available"):
        engine.load(
            MODEL,
            OnnxRuntimeOptions(execution_provider=MISSING),
            runtime={},
            input_name=None,
            output_name=None,
        )


def test_an_explicit_fallback_runs_and_records_the_provider_used() -> None:
    engine = OnnxRuntimeEngine()
    engine.load(
        MODEL,
        OnnxRuntimeOptions(execution_provider=[MISSING, "CPUExecutionProvider"]),
        runtime={},
        input_name=None,
        output_name=None,
    )
    info = engine.describe()
    assert info["providers_used"] == ["CPUExecutionProvider"]
    assert info["options"]["execution_provider"] == [MISSING, "CPUExecutionProvider"]


def test_a_replay_on_a_missing_provider_fails_with_the_reason(root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--scenario",
            "Offline",
            "--mode",
            "accuracy",
            "--backend-option",
            f"execution_provider={MISSING}",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
        ],
    )
    assert result.exit_code == 3, result.output
    record = json.loads(result.stdout)
    assert record["status"] == "failed"
    assert f"execution provider {MISSING} is not available" in record["tests"][0]["error"]
