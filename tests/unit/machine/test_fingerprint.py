"""The fingerprint: complete sections, unknowns recorded as None, variables filtered."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.machine import fingerprint


@pytest.fixture(autouse=True)
def _no_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests start no programs: nvidia-smi, where installed, is not asked."""
    monkeypatch.setattr(fingerprint, "_gpus", lambda: None)


def test_sections_and_facts_of_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    fp = fingerprint.collect()
    assert set(fp) >= {"hardware", "os", "python", "packages", "native", "variables"}
    assert fp["hardware"]["cpu"]["logical_cpus"] >= 1
    assert fp["packages"]["mlcommons-loadgen"] == "6.0.17"
    assert fp["variables"]["OMP_NUM_THREADS"] == "3"
    assert "UNRELATED_SECRET" not in fp["variables"]


def test_unreadable_facts_are_unknown_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "_read", lambda path: None)
    fp = fingerprint.collect()
    assert fp["hardware"]["cpu"]["model"] is None
    assert fp["hardware"]["memory_bytes"] is None
    assert fp["hardware"]["frequency_governor"] is None
    assert fp["os"]["release"] is None


def test_env_show_json_and_text() -> None:
    runner = CliRunner()
    data = json.loads(runner.invoke(cli, ["env", "show", "--json"]).stdout)
    assert data["schema"] == "repro.machine.fingerprint/v1"
    text = runner.invoke(cli, ["env", "show"]).stdout
    assert text.startswith("cpu ")


def test_the_script_the_runner_runs_in_the_workers_environment_records_what_it_is_given() -> None:
    """`ProcessRunner.fingerprint` runs this module as a script in the worker's environment:
    it must run whole (a fingerprint that is a traceback leaves a report "hardware unknown"),
    and record the variables of the allow-list the parent passes, no other."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TVM_NUM_THREADS": "3", "SOME_TOKEN": "x"}
    proc = subprocess.run(
        [sys.executable, "-m", "repro.machine.fingerprint", "--variables=TVM_NUM_THREADS"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["variables"] == {"TVM_NUM_THREADS": "3"}
