"""The `docker` environment: an image pinned by its digest (replay not built yet)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import StringConstraints

from repro.environments.base import EnvironmentSpecBase, PendingManager


class DockerEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "docker", ...}`: an image and its content digest."""

    manager: Literal["docker"]
    image: str
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None


class DockerManager(PendingManager):
    """Recognised in specs; replaying inside Docker is not built yet."""

    name: ClassVar[str] = "docker"
    tool: ClassVar[str] = "docker"
    spec_model = DockerEnvironment
