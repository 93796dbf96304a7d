"""Unit tests need no network and start no external program (cibuildwheel's mock protection)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_network_or_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unit tests must not start programs or download")

    monkeypatch.setattr("repro._subprocess.run", refuse)
    monkeypatch.setattr("repro._subprocess.spawn", refuse)
    monkeypatch.setattr("urllib.request.urlopen", refuse)
