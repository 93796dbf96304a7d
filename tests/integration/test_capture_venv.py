"""Capture pins the same experiment to the same id; replay runs it in a venv and natively."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.environments.pylock import read_pins


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The digits experiment captured twice (--no-run) into two separate trees."""
    root = Path(__file__).resolve().parents[2]
    outs = []
    for name in ("one", "two"):
        base = tmp_path_factory.mktemp(name)
        partial = json.loads((root / "specs" / "ort-digits.json").read_text())
        partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
        del partial["artifacts"]["dataset"]["sha256"]  # capture pins it from the bytes
        (base / "partial.json").write_text(json.dumps(partial))
        result = CliRunner().invoke(
            cli,
            [
                "capture",
                "--from",
                str(base / "partial.json"),
                "--no-run",
                "--env-manager",
                "venv",
                "--specs-dir",
                str(base / "specs"),
                "--lockfiles-dir",
                str(base / "lockfiles"),
                "--results-dir",
                str(base / "results"),
                "--cache-dir",
                str(base / "cache"),
                "--json",
            ],
        )
        assert result.exit_code == 0, result.stderr
        outs.append(base)
    return outs[0], outs[1]


def test_capturing_twice_gives_the_same_id(captured: tuple[Path, Path]) -> None:
    a, b = (json.loads((p / "specs" / "ort-digits.json").read_text()) for p in captured)
    assert a["id"] == b["id"]
    assert a["artifacts"]["dataset"]["sha256"] == (
        "21bc397116824593c52d72953f25c3a7d312ea873270747c0342c0ff1e52e442"
    )
    assert a["hardware"]["logical_cpus"] >= 1


def test_the_python_lock_pins_every_worker_package(captured: tuple[Path, Path]) -> None:
    base = captured[0]
    spec = json.loads((base / "specs" / "ort-digits.json").read_text())
    lock_text = (base / "lockfiles" / "ort-digits" / "requirements.lock").read_text()
    pins = read_pins(lock_text)
    assert {"onnxruntime", "mlcommons-loadgen", "numpy", "pydantic"} <= set(pins)
    assert spec["environment"]["hashes_complete"]  # a lock without hashes is never written
    assert lock_text.count("--hash=sha256:") >= len(pins)
    assert (
        CliRunner().invoke(cli, ["validate", str(base / "specs" / "ort-digits.json")]).exit_code
        == 0
    )


@pytest.mark.parametrize("env", ["venv", "native"])
def test_replay_in_venv_and_native(captured: tuple[Path, Path], env: str) -> None:
    base = captured[0]
    if env == "venv" and shutil.which("pip") is None and not (base / "cache").exists():
        pytest.skip("pip is needed to build the venv")
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(base / "specs" / "ort-digits.json"),
            "--env",
            env,
            "--scenario",
            "Offline",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(base / "results"),
            "--cache-dir",
            str(base / "cache"),
            "--run-id",
            env,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "complete"
    assert record["environment"]["manager"] == env
    if env == "venv":
        assert record["fingerprint"]["python"]["executable"].startswith(str(base / "cache"))
        assert "apache-tvm" not in record["fingerprint"]["packages"]  # only the lock's packages
    else:
        assert isinstance(record["environment"]["drift"], dict)


def test_a_lock_that_cannot_be_made_fails_the_capture_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No package index answers (one that refuses every connection, this machine's mirrors and
    pip.conf out of the way): pip-compile cannot hash, so capture stops with exit 3 and leaves
    no spec, no lock and no results, instead of pinning bare top-level versions that the
    replay's `pip install --require-hashes` refuses."""
    root = Path(__file__).resolve().parents[2]
    for variable in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(root / "specs" / "ort-digits.json"),
            "--name",
            "x",
            "--no-run",
            "--env-manager",
            "venv",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 3, result.output
    assert "cannot lock the onnxruntime worker's Python packages" in result.stderr
    assert "Traceback" not in result.output
    for left in ("specs/x.json", "lockfiles/x", "results/x"):
        assert not (tmp_path / left).exists(), left


def test_a_wrong_input_name_fails_the_capture_before_locking_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real capture, run included: the model's graph says 'bogus' is none of its inputs
    before pip-compile runs (it was found by the worker after the lock, leaving a spec that
    `repro validate` called ok)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(root / "specs" / "ort-digits.json"),
            "--name",
            "x",
            "--input-name",
            "bogus",
            "--env-manager",
            "venv",
            "--scenario",
            "Offline",
            "--min-duration-ms",
            "100",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "$.workload.input_name: 'bogus' is not an input of the model" in result.stderr
    assert "locking" not in result.stderr
    for left in ("specs", "lockfiles", "results"):
        assert not (tmp_path / left).exists(), left
