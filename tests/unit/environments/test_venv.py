"""The venv manager's build: each failing step gets the hint that fits it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from repro.environments.venv.manager import VenvManager
from repro.errors import EnvironmentSetupError


@pytest.mark.parametrize(
    ("failing", "hint"),
    [("venv", "-m venv` must work"), ("pip", "a package index must be reachable")],
)
def test_a_failed_step_is_named_with_its_own_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str, hint: str
) -> None:
    def fake_run(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        step = "venv" if cmd[1:3] == ["-m", "venv"] else "pip"
        return subprocess.CompletedProcess(cmd, 1 if step == failing else 0, "", f"{step} broke")

    def fake_streaming(cmd: list[str], **kwargs: Any) -> tuple[int, list[str]]:
        kwargs["echo"]("Collecting numpy==2.4.6 (from -r lock (line 3))")
        return (1 if failing == "pip" else 0), ["Collecting numpy==2.4.6", "pip broke"]

    monkeypatch.setattr("repro._subprocess.run", fake_run)
    monkeypatch.setattr("repro._subprocess.run_streaming", fake_streaming)
    lock = tmp_path / "lock"
    lock.write_text("numpy==2.4.6 --hash=sha256:" + "0" * 64 + "\n")
    said: list[str] = []
    with pytest.raises(EnvironmentSetupError) as info:
        VenvManager(said.append)._build(tmp_path / "venv", lock, require_hashes=True)
    assert f"{failing} broke" in info.value.message
    assert info.value.hint is not None
    assert hint in info.value.hint
    assert not (tmp_path / "venv").exists()
    if failing == "pip":  # never silent: how far the build got, package by package
        assert said[0].startswith("building the venv venv: 1 pinned package(s)")
        assert "  venv: 1/1 numpy==2.4.6" in said
