"""`--env auto` with fake managers: the captured one when usable, else venv, and why."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from repro.environments import registry
from repro.errors import EnvironmentSetupError
from repro.spec.io import load_spec
from repro.spec.models import ExperimentSpec
from tests.fakes import FakeManager


class FakeNix(FakeManager):
    name: ClassVar[str] = "nix"


class FakeVenv(FakeManager):
    name: ClassVar[str] = "venv"


@pytest.fixture
def spec(root: Path) -> ExperimentSpec:
    spec = load_spec(root / "specs" / "ort-digits.json")
    assert spec.environment.manager == "nix"
    return spec


@pytest.fixture(autouse=True)
def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.MANAGERS, "nix", FakeNix)
    monkeypatch.setitem(registry.MANAGERS, "venv", FakeVenv)
    for cls in (FakeNix, FakeVenv):
        monkeypatch.setattr(cls, "usable", True)
        monkeypatch.setattr(cls, "fails", False)
    monkeypatch.setattr(FakeManager, "realized", [])


def test_auto_takes_the_captured_manager_when_usable(spec: ExperimentSpec, tmp_path: Path) -> None:
    env = registry.realize("auto", spec, tmp_path / "s.json", tmp_path)
    assert env.manager == "nix"
    assert "the captured manager 'nix' is available" in env.reason


def test_auto_falls_back_to_venv_when_the_tool_is_missing(
    spec: ExperimentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeNix, "usable", False)
    env = registry.realize("auto", spec, tmp_path / "s.json", tmp_path)
    assert env.manager == "venv"
    assert "not usable here (fake tool is missing); fell back to venv" in env.reason
    assert FakeManager.realized == ["venv"]


def test_auto_falls_back_when_realizing_fails(
    spec: ExperimentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeNix, "fails", True)
    env = registry.realize("auto", spec, tmp_path / "s.json", tmp_path)
    assert env.manager == "venv"
    assert "realizing 'nix' failed (nix: scripted failure to realize)" in env.reason


def test_an_explicit_manager_never_falls_back(
    spec: ExperimentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeNix, "usable", False)
    with pytest.raises(EnvironmentSetupError, match="not usable here: fake tool is missing"):
        registry.realize("nix", spec, tmp_path / "s.json", tmp_path)
    monkeypatch.setattr(FakeVenv, "fails", True)
    with pytest.raises(EnvironmentSetupError, match="scripted failure"):
        registry.realize("venv", spec, tmp_path / "s.json", tmp_path)
    assert FakeManager.realized == []
