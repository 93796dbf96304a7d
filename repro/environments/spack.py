"""The `spack` environment: a Spack environment pinned by its spack.lock (replay not built yet)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from repro.environments.base import EnvironmentSpecBase, PendingManager
from repro.spec.types import LockFile, SpecModel


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


class SpackManager(PendingManager):
    """Recognised in specs; replaying inside Spack is not built yet."""

    name: ClassVar[str] = "spack"
    tool: ClassVar[str] = "spack"
    spec_model = SpackEnvironment
