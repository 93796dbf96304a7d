"""The `docker` environment: an image pinned by its digest (replay not built yet)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import StringConstraints

from repro import _subprocess
from repro.environments.base import EnvironmentManager, EnvironmentSpecBase, RealizedEnvironment
from repro.errors import EnvironmentSetupError

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec


class DockerEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "docker", ...}`: an image and its content digest."""

    manager: Literal["docker"]
    image: str
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None


class DockerManager(EnvironmentManager):
    """Recognised in specs; replaying inside Docker says plainly that it is not built yet."""

    name: ClassVar[str] = "docker"
    spec_model = DockerEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which("docker") is None:
            return False, "`docker` is not on PATH"
        return False, "replay inside docker is not implemented in this version of repro"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        _, why = self.available()
        raise EnvironmentSetupError(
            f"cannot realize a docker environment: {why}",
            hint="replay with --env venv or --env native",
        )
