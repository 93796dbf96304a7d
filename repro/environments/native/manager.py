"""The `native` environment: the current interpreter, its drift from the capture recorded."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from repro.environments.base import (
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    worker_environment,
)
from repro.environments.pylock import installed_versions, read_pins
from repro.spec.paths import resolve_path

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec


class NativeManager(EnvironmentManager):
    """Runs the worker with this very Python; nothing is installed."""

    name: ClassVar[str] = "native"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "the current interpreter"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        env = worker_environment({"PYTHONPATH": str(repro_source_root())})
        return RealizedEnvironment(
            manager=self.name,
            python=[sys.executable],
            env=env,
            reason="the current interpreter; package drift from the capture is recorded",
            details={"python": sys.executable, "drift": drift_from_lock(spec, spec_path)},
        )


def drift_from_lock(spec: ExperimentSpec, spec_path: Path) -> dict[str, dict[str, str | None]]:
    """Packages whose installed version differs from the spec's Python lock (None: absent)."""
    lock = spec.environment.python_lock
    if lock is None:
        return {}
    path = resolve_path(lock.path, spec_path.parent)
    if not path.is_file():
        return {}
    installed = installed_versions()
    return {
        name: {"locked": version, "installed": installed.get(name)}
        for name, version in read_pins(path.read_text()).items()
        if installed.get(name) != version
    }
