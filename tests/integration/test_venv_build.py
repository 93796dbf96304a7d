"""Two replays that need the same cold venv at once: one builds it, the other waits and uses it."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from repro import _subprocess
from repro.digests import sha256_file
from repro.environments.base import RealizedEnvironment
from repro.environments.venv import VenvEnvironment
from repro.environments.venv.manager import MARKER, VenvManager
from repro.spec.io import load_spec
from repro.spec.types import LockFile


def test_two_replays_building_the_same_venv_take_turns(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second starts 0.3 s after the first, while `python -m venv` (ensurepip) still runs:
    it waits on the lock beside the venv and then uses the venv the first built, instead of
    deleting it from under the first (both used to fail, the hint blaming the package index)."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("# a lock of nothing: the venv is built, pip installs nothing\n")
    spec = load_spec(root / "specs" / "ort-digits.json").model_copy(
        update={
            "environment": VenvEnvironment(
                manager="venv",
                python="3",
                python_lock=LockFile(path=str(lock), sha256=sha256_file(lock)),
            )
        }
    )
    real_run = _subprocess.run
    venvs_made: list[list[str]] = []

    def counting_run(cmd: Any, **kwargs: Any) -> Any:
        if list(cmd[1:3]) == ["-m", "venv"]:
            venvs_made.append(list(cmd))
        return real_run(cmd, **kwargs)

    monkeypatch.setattr("repro._subprocess.run", counting_run)
    realized: list[RealizedEnvironment] = []
    errors: list[BaseException] = []
    said: list[str] = []

    def replay() -> None:
        try:
            realized.append(VenvManager(said.append).realize(spec, tmp_path / "s.json", tmp_path))
        except BaseException as exc:
            errors.append(exc)

    first = threading.Thread(target=replay)
    second = threading.Thread(target=replay)
    first.start()
    time.sleep(0.3)
    second.start()
    first.join(timeout=300)
    second.join(timeout=300)
    assert errors == []
    assert len(realized) == 2
    assert realized[0].details["venv"] == realized[1].details["venv"]
    venv = Path(realized[0].details["venv"])
    assert (venv / MARKER).is_file()
    assert (venv / "bin" / "python").exists()
    assert len(venvs_made) == 1  # built once; the other waited and used it
    assert any(line.startswith("waiting for another replay that is building") for line in said)
