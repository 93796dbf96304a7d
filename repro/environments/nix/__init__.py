"""The `nix` environment's face: the worker in `nix develop <flake>#<shell>` on the pinned flake.

Its section of the spec and its facts; the work is in `repro.environments.nix.manager`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from repro.environments.section import EnvironmentFace, EnvironmentSpecBase
from repro.spec.types import LockFile, SpecModel


class NixInput(SpecModel):
    """One locked input of the flake, as flake.lock pins it."""

    name: str
    type: str
    owner: str | None = None
    repo: str | None = None
    url: str | None = None
    path: str | None = None
    rev: str | None = None
    nar_hash: str | None = None


class NixEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "nix", ...}`: a flake's devShell, its flake.lock pinned."""

    manager: Literal["nix"]
    flake: str = Field(description="flake reference, e.g. path:nix")
    shell: str = Field("default", description="devShell attribute")
    flake_lock: LockFile
    inputs: list[NixInput] = Field(default_factory=list)

    @field_validator("flake")
    @classmethod
    def _not_home(cls, flake: str) -> str:
        if flake.startswith(("path:~", "~")):
            raise ValueError(
                f"{flake!r} names a home folder (another one on every machine): write the "
                "flake's folder relative to the spec's, e.g. path:../nix"
            )
        return flake


FACE = EnvironmentFace(
    name="nix",
    spec_model=NixEnvironment,
    manager="repro.environments.nix.manager:NixManager",
    can_capture=True,
)
