"""The `nix` environment's face: the worker in `nix develop <flake>#<shell>` on the pinned flake.

Its section of the spec and its facts; the work is in `repro.environments.nix.manager`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from repro.environments.section import EnvironmentFace, OfflineNeed
from repro.spec.sections import EnvironmentSpecBase
from repro.spec.types import LockFile, SpecModel


class NixInput(SpecModel):
    """One locked input of the flake, as flake.lock pins it."""

    name: str = Field(description="the input's name in flake.lock (nixpkgs)")
    type: str = Field(description="how it is fetched (github, path, tarball, ...)")
    owner: str | None = Field(None, description="github: the repository's owner")
    repo: str | None = Field(None, description="github: the repository")
    url: str | None = Field(None, description="a URL input's address")
    path: str | None = Field(None, description="a path input's folder")
    rev: str | None = Field(None, description="the locked commit")
    nar_hash: str | None = Field(None, description="the narHash that pins its content")


class NixEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "nix", ...}`: a flake's devShell, its flake.lock pinned."""

    manager: Literal["nix"] = Field(description="the environment's plug-in")
    flake: str = Field(description="flake reference, e.g. path:nix")
    shell: str = Field("default", description="devShell attribute")
    flake_lock: LockFile
    inputs: list[NixInput] = Field(
        default_factory=list, description="the flake's locked inputs, as flake.lock pins them"
    )

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
    offline_need=OfflineNeed(
        "the flake's inputs (nixpkgs) unless this machine's Nix store has them"
    ),
)
