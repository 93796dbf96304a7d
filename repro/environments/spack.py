"""The `spack` environment: a Spack environment pinned by its spack.lock (replay not built yet)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from repro import _subprocess
from repro.environments.base import EnvironmentManager, EnvironmentSpecBase, RealizedEnvironment
from repro.errors import EnvironmentSetupError
from repro.spec.types import LockFile, SpecModel

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec


class SpackRoot(SpecModel):
    """A root spec of the environment with its DAG hash."""

    name: str
    hash: str
    spec: str | None = None


class SpackEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "spack", ...}`: spack.yaml + spack.lock, extra repo."""

    manager: Literal["spack"]
    spack_lock: LockFile
    spack_yaml: LockFile | None = None
    repo: str | None = Field("spack-repo", description="extra package repository")
    roots: list[SpackRoot] = Field(default_factory=list)


class SpackManager(EnvironmentManager):
    """Recognised in specs; replaying inside Spack says plainly that it is not built yet."""

    name: ClassVar[str] = "spack"
    spec_model = SpackEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which("spack") is None:
            return False, "`spack` is not on PATH"
        return False, "replay inside spack is not implemented in this version of repro"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        _, why = self.available()
        raise EnvironmentSetupError(
            f"cannot realize a spack environment: {why}",
            hint="replay with --env venv or --env native",
        )
