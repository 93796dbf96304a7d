"""The spec's plug-in sections: the bases each backend's `backend` section and each environment
manager's `environment` section narrow (`repro.spec.plugins` names the plug-ins)."""

from __future__ import annotations

from pydantic import Field

from repro.spec.spack_pins import SpackPins
from repro.spec.types import LockFile, SpecModel


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


def section_locks(env: EnvironmentSpecBase) -> dict[str, LockFile]:
    """Every lock file a section pins, by field name (`spack.spack_lock` for nested)."""
    out = {k: v for k, v in env if isinstance(v, LockFile)}
    if env.spack is not None:
        out.update({f"spack.{k}": v for k, v in env.spack if isinstance(v, LockFile)})
    return out
