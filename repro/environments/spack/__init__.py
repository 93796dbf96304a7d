"""The `spack` environment's face: the worker in the spec's Spack environment.

Its section of the spec and its facts; the work is in `repro.environments.spack.manager`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from repro.environments.section import EnvironmentFace, OfflineNeed
from repro.spec.sections import EnvironmentSpecBase
from repro.spec.spack_pins import SpackPins


class SpackEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "spack", "spack": {...}}`: captured in a Spack environment."""

    manager: Literal["spack"] = Field(description="the environment's plug-in")
    spack: SpackPins = Field(description="the Spack environment: manifest, lock, key packages")


FACE = EnvironmentFace(
    name="spack",
    spec_model=SpackEnvironment,
    manager="repro.environments.spack.manager:SpackManager",
    can_capture=True,
    offline_need=OfflineNeed(
        "the Spack environment's sources (pack a Spack spec with --with-artifacts, or "
        "`repro spack mirror SPEC`) unless this machine's mirror or Spack store has them",
        role="spack-source",
    ),
)
