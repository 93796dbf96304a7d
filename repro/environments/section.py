"""The light tier of every environment manager: its spec section and its facts.

A manager is two tiers (`repro.environments.registry`): a face, `repro/environments/<name>/
__init__.py`, that holds its section of the spec (a subclass of `EnvironmentSpecBase`) and an
`EnvironmentFace` of its facts; and its work, `<name>/manager.py` (an `EnvironmentManager`:
tools, builds, containers), imported only where an environment is captured or realized. The
spec, the registry and the worker process import faces only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from repro.formats.spack.section import SpackPins
from repro.spec.types import LockFile, SpecModel


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


@dataclass(frozen=True)
class OfflineNeed:
    """What a replay of a package in this manager fetches from outside unless the package
    holds members of `role` (None: whatever it holds), said as `what`."""

    what: str
    role: str | None = None


@dataclass(frozen=True)
class EnvironmentFace:
    """What the spec, the registry and the CLI know of a manager without importing its work."""

    name: str
    #: the spec's `environment` section for this manager; None: it pins nothing (native)
    spec_model: type[EnvironmentSpecBase] | None
    #: `module:Class` of its EnvironmentManager (imported when an environment is realized)
    manager: str
    #: whether `repro capture --env-manager NAME` can pin its section
    can_capture: bool
    #: what a replay from a package needs from outside in this manager (`repro pack` says it)
    offline_need: OfflineNeed | None = None
