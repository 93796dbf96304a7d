"""The `native` environment: the current interpreter, its drift from the capture recorded."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from repro.environments.base import RealizedEnvironment, repro_source_root, worker_environment
from repro.spec.models import ExperimentSpec


class NativeManager:
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
            details={"python": sys.executable},
        )
