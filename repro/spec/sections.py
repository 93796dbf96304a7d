"""The spec's plug-in sections: the bases each backend's `backend` section, each environment
manager's `environment` section and each server engine's `server` section narrow
(`repro.spec.plugins` names the plug-ins)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from repro.spec.spack_pins import SpackPins
from repro.spec.types import Accepts, LockFile, SpecModel


class BackendSpecBase(SpecModel):
    """The spec's `backend` section; each backend narrows `name` and `options`."""

    name: str
    options: SpecModel


class EnvironmentSpecBase(SpecModel):
    """The spec's `environment` section; each manager narrows `manager` and adds its pins."""

    manager: str
    python_lock: LockFile | None = Field(
        None, description="the worker's Python packages, hashed (lockfiles/<name>/)"
    )
    spack: SpackPins | None = Field(
        None,
        description="a Spack environment for the stack (lockfiles/<name>/spack.yaml + "
        "spack.lock), usable with --env spack whichever manager captured the spec",
    )


#: whether a served experiment's server starts anew before each round of paired rounds (the
#: state a server keeps between requests, its caches and allocator, then falls on both sides
#: alike; results that differ between restarts and not within one: vllm-project/vllm#39903),
#: or once for all of them
Restart = Literal["each-round", "once"]


class ServerSectionBase(SpecModel):
    """The spec's `server` section for a server repro starts: the engine (each narrows
    `engine` and `flags`), the model folder it serves, and how it is started."""

    engine: str
    model: str = Field(description="the artifact (a folder: `files`) the server serves")
    flags: SpecModel
    restart: Restart = Field(
        "each-round",
        description="start the server anew before each round (each-round) or once per run",
    )
    startup_timeout_s: Annotated[float, Field(ge=1, le=7200), Accepts("1 to 7200 seconds")] = Field(
        600.0, description="how long the server may take to answer its health check"
    )
    warm_up_requests: Annotated[int, Field(ge=0, le=1000), Accepts("0 to 1000")] = Field(
        4, description="requests sent after each start and never counted"
    )


class EndpointSection(SpecModel):
    """`"server": {"engine": "external", "url": ...}`: a server the user runs, reached at its
    URL. Its software stack is not pinned by this spec, and every report says so."""

    engine: Literal["external"] = Field(description="a server repro does not start")
    url: str = Field(description="the API's base URL, e.g. http://gpu-node:8000/v1")
    model_name: str = Field(description="the model's name in the API (`/v1/models` lists it)")
    api_key_env: str | None = Field(
        None,
        description="the environment variable that holds an API key (the key is used, never "
        "written down)",
    )

    @field_validator("url")
    @classmethod
    def _plain_url(cls, url: str) -> str:
        if not re.match(r"^https?://[^/@\s]+(/\S*)?$", url):
            raise ValueError(
                "an http(s) URL without credentials, e.g. http://gpu-node:8000/v1 (a key goes "
                "in the variable api_key_env names)"
            )
        return url.rstrip("/")


def section_locks(env: EnvironmentSpecBase) -> dict[str, LockFile]:
    """Every lock file a section pins, by field name (`spack.spack_lock` for nested)."""
    out = {k: v for k, v in env if isinstance(v, LockFile)}
    if env.spack is not None:
        out.update({f"spack.{k}": v for k, v in env.spack if isinstance(v, LockFile)})
    return out
