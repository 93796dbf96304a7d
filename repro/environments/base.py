"""The environment-manager interface: realize a spec's software stack for the worker."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from repro.spec.models import ExperimentSpec

#: variables that change results or speed; passed to the worker and recorded in fingerprints
RESULT_VARIABLE_PREFIXES = (
    "OMP_",
    "MKL_",
    "KMP_",
    "OPENBLAS_",
    "GOTO_",
    "BLIS_",
    "TVM_",
    "ORT_",
    "ONNXRUNTIME_",
    "CUDA_",
    "NVIDIA_",
    "HIP_",
    "ROCR_",
    "DNNL_",
    "ONEDNN_",
    "TF_",
    "XLA_",
)
BASE_VARIABLES = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "USER",
    "REPRO_CACHE_DIR",
    "XDG_CACHE_HOME",
    "NIX_PATH",
    "NIX_REMOTE",
    "SPACK_ROOT",
)


def worker_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A whitelisted copy of this process's environment, as pyperf gives its workers."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in BASE_VARIABLES or k.startswith(RESULT_VARIABLE_PREFIXES)
    }
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env


@dataclass
class RealizedEnvironment:
    """How to start the worker in the realized environment, and what was realized."""

    manager: str
    python: list[str]
    env: dict[str, str]
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def worker_command(self, request: Path) -> list[str]:
        return [*self.python, "-m", "repro.harness", str(request)]


class EnvironmentManager(Protocol):
    """One way of providing the software stack: native, venv, nix, spack, docker."""

    name: ClassVar[str]

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this machine can use the manager, and why not."""

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        """Make the environment exist (cached) and say how to run the worker in it."""


def repro_source_root() -> Path:
    """The folder holding the `repro` package (put on PYTHONPATH for workers)."""
    return Path(__file__).resolve().parents[2]
