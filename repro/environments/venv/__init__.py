"""The `venv` environment's face: a venv built from the spec's hashed Python lock (`pip install --require-hashes`).

Its section of the spec and its facts; the work is in `repro.environments.venv.manager`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from repro.environments.section import EnvironmentFace, OfflineNeed
from repro.spec.sections import EnvironmentSpecBase


class VenvEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "venv", ...}`: a venv built from the hashed Python lock."""

    manager: Literal["venv"] = Field(description="the environment's plug-in")
    python: str = Field(description="Python version the lock was made for, e.g. 3.11")
    hashes_complete: bool = Field(True, description="false when the index gave no wheel hashes")


FACE = EnvironmentFace(
    name="venv",
    spec_model=VenvEnvironment,
    manager="repro.environments.venv.manager:VenvManager",
    can_capture=True,
    offline_need=OfflineNeed(
        "the Python lock's wheels (pack with --with-wheels): a venv is built from a package "
        "index unless this machine has built it before",
        role="wheel",
    ),
)
