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

    monkeypatch.setattr("repro._subprocess.run", fake_run)
    with pytest.raises(EnvironmentSetupError) as info:
        VenvManager()._build(tmp_path / "venv", tmp_path / "lock", require_hashes=True)
    assert f"{failing} broke" in info.value.message
    assert info.value.hint is not None
    assert hint in info.value.hint
    assert not (tmp_path / "venv").exists()
