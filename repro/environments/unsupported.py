"""Managers whose replay is not built yet: they say so instead of pretending."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from repro import _subprocess
from repro.environments.base import RealizedEnvironment
from repro.errors import EnvironmentSetupError
from repro.spec.models import ExperimentSpec


class _ToolManager:
    name: ClassVar[str] = ""
    tool: ClassVar[str] = ""

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which(cls.tool) is None:
            return False, f"`{cls.tool}` is not on PATH"
        return False, f"replay inside {cls.name} is not implemented in this version of repro"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        _, why = self.available()
        raise EnvironmentSetupError(
            f"cannot realize a {self.name} environment: {why}",
            hint="replay with --env venv or --env native",
        )


class SpackManager(_ToolManager):
    name = "spack"
    tool = "spack"


class DockerManager(_ToolManager):
    name = "docker"
    tool = "docker"
