"""The light tier of every environment manager: its face (its facts).

A manager is two tiers (`repro.environments.registry`): a face, `repro/environments/<name>/
__init__.py`, that holds its section of the spec (a subclass of
`repro.spec.sections.EnvironmentSpecBase`) and an `EnvironmentFace` of its facts; and its
work, `<name>/manager.py` (an `EnvironmentManager`: tools, builds, containers), imported only
where an environment is captured or realized. The spec, the registry and the worker process
import faces only.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.spec.sections import EnvironmentSpecBase


@dataclass(frozen=True)
class OfflineNeed:
    """What a replay of a package in this manager fetches from outside unless the package
    holds members of `role` (None: whatever it holds), said as `what`."""

    what: str
    role: str | None = None


@dataclass(frozen=True)
class ManagerOption:
    """One of a manager's own options of `repro replay`: `repro.cli` adds it to the command,
    the replay hands its value to the manager (`EnvironmentManager.check_options`)."""

    #: its key in the manager's options
    name: str
    #: the command line's flag: "--container-cpuset"
    flag: str
    help: str
    #: a flag without a value (on when given)
    switch: bool = False

    @property
    def param(self) -> str:
        """The keyword the command receives: container_cpuset."""
        return self.flag.lstrip("-").replace("-", "_")


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
    #: its own replay options (docker: --rebuild, --container-cpuset, --container-memory)
    options: tuple[ManagerOption, ...] = ()

    def flag(self, name: str) -> str:
        """The flag of its option `name`."""
        return next(o.flag for o in self.options if o.name == name)
