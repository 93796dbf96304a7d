"""The `docker` environment's face: the worker in a container of an image built from the spec.

Its section of the spec and its facts; the work is in `repro.environments.docker.manager`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from repro.environments.section import EnvironmentFace, ManagerOption, OfflineNeed
from repro.spec.sections import EnvironmentSpecBase

ImageId = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
#: docker's --cpuset-cpus (0-3,6) and --memory (a number of bytes with an optional b/k/m/g)
CPUSET = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"
MEMORY = r"^[0-9]+[bkmgBKMG]?$"
#: Docker refuses a memory limit below 6 MiB


class DockerEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "docker", ...}`: an image built from the spec, by id."""

    manager: Literal["docker"] = Field(description="the environment's plug-in")
    image: str = Field(description="the name the image was built as, e.g. repro/ort-digits:...")
    image_id: ImageId | None = Field(None, description="the pinned image id (sha256:...)")
    base: str | None = Field(None, description="the base image it was built from")
    base_id: ImageId | None = Field(None, description="the base image's id (sha256:...)")
    digest: ImageId | None = Field(None, description="the registry digest, once pushed")
    baked_artifacts: list[str] = Field(
        default_factory=list, description="sha256 of the artifacts inside the image"
    )
    hashes_complete: bool = Field(True, description="false when the index gave no wheel hashes")
    cpuset: Annotated[str, StringConstraints(pattern=CPUSET)] | None = Field(
        None, description="CPUs the container may use, e.g. 0-1"
    )
    memory: Annotated[str, StringConstraints(pattern=MEMORY)] | None = Field(
        None, description="the container's memory limit, e.g. 4g"
    )


FACE = EnvironmentFace(
    name="docker",
    spec_model=DockerEnvironment,
    manager="repro.environments.docker.manager:DockerManager",
    can_capture=True,
    offline_need=OfflineNeed(
        "the Docker image (pack with --with-image) unless this machine has it", role="image"
    ),
    options=(
        ManagerOption(
            "rebuild",
            "--rebuild",
            "build the image again from the spec when the pinned id is not here",
            switch=True,
        ),
        ManagerOption(
            "cpuset",
            "--container-cpuset",
            "the CPUs the container may use (e.g. 0-1); default: the spec's",
        ),
        ManagerOption(
            "memory",
            "--container-memory",
            "the container's memory limit (e.g. 4g); default: the spec's",
        ),
    ),
)
