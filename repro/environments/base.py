"""The environment-manager interface: pin a software stack at capture, realize it at replay.

A manager is one package under `repro/environments/` and one line in `repro/spec/plugins.py`.
It owns its section of the spec (`spec_model`, None for a manager that pins nothing, like
`native`), the lock files in that section, how `repro capture` fills the section in, what its
pins look like in a drift, its own replay options, and how the stack is realized for the
worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from repro import _subprocess
from repro.digests import sha256_file
from repro.errors import EnvironmentSetupError, UsageError
from repro.privacy import is_secret_name
from repro.spec.paths import resolve_path
from repro.spec.sections import EnvironmentSpecBase, section_locks
from repro.spec.types import LockFile

if TYPE_CHECKING:
    from repro.backends.base import BackendPlugin
    from repro.spec.models import ExperimentSpec

#: what a worker needs to run, passed but never recorded (with the allow-listed result variables)
BASE_VARIABLES = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "USER",
    "REPRO_CACHE_DIR",
    "XDG_CACHE_HOME",
    "NIX_PATH",
    "NIX_REMOTE",
    "SPACK_ROOT",
    "LD_LIBRARY_PATH",
    "DOCKER_HOST",
)


def worker_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A whitelisted copy of this process's environment, as pyperf gives its workers."""
    from repro.backends.registry import result_variables

    allowed = result_variables()
    env = {
        k: v
        for k, v in os.environ.items()
        if k in BASE_VARIABLES or (k in allowed and not is_secret_name(k))
    }
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env


@dataclass
class RealizedEnvironment:
    """How to start the worker in the realized environment, and what was realized."""

    manager: str
    python: list[str]
    env: dict[str, str]
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: False where the worker's processes are not descendants of the replay (a container's):
    #: their CPU time cannot be told from another job's
    workers_are_children: bool = True

    def worker_command(self, request: Path) -> list[str]:
        return [*self.python, "-m", "repro.harness", str(request)]


@dataclass(frozen=True)
class CaptureContext:
    """What a manager needs to pin the environment of a spec being captured."""

    name: str
    spec_dir: Path
    lockfiles_dir: Path
    flake_dir: Path
    backend: BackendPlugin
    python: str  # "3.11"
    python_lock: dict[str, Any] | None  # {"path", "sha256"} of the lock written for the spec
    hashes_complete: bool
    report: Callable[[str], None]
    options: dict[str, Any] = field(default_factory=dict)  # e.g. docker_base

    def relative(self, target: Path) -> str:
        """A path as the spec writes it: relative to the spec's folder."""
        return os.path.relpath(target.resolve(), self.spec_dir.resolve())


@dataclass(frozen=True)
class CapturePlan:
    """What a manager checks before a capture hashes, locks or writes anything."""

    name: str
    lockfiles_dir: Path
    flake_dir: Path
    options: dict[str, Any] = field(default_factory=dict)  # e.g. docker_base

    @property
    def lock_dir(self) -> Path:
        """`lockfiles/<name>/`: where the environment's lock files are written."""
        return self.lockfiles_dir / self.name


class EnvironmentManager:
    """One way of providing the software stack: native, venv, nix, spack, docker."""

    name: ClassVar[str]
    #: the spec's `environment` section for this manager; None: it pins nothing (native)
    spec_model: ClassVar[type[EnvironmentSpecBase] | None] = None

    def __init__(
        self,
        report: Callable[[str], None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        #: where a long realization (a build) reports its progress
        self.report: Callable[[str], None] = report or (lambda line: None)
        #: the replay's or capture's options for this manager (e.g. docker's --rebuild)
        self.options: dict[str, Any] = dict(options or {})

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this machine can use the manager, and why not."""
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Refuse its own options (its face's `options`) that cannot work here, before any
        replay starts; none by default."""

    @classmethod
    def with_cpus(cls, options: Mapping[str, Any], cpus: list[int]) -> dict[str, Any]:
        """Its options for tests pinned to `cpus` (docker: a container that holds them);
        unchanged by default."""
        return dict(options)

    def usable_for(self, spec: ExperimentSpec, spec_path: Path) -> tuple[bool, str]:
        """Whether `--env auto` takes this manager for the spec, and why not: `available`
        unless a manager can tell more, quickly (nix: whether it can enter the pinned shell
        without waiting on downloads)."""
        return self.available()

    @classmethod
    def can_capture(cls) -> bool:
        """Whether `repro capture --env-manager NAME` can pin this manager's section."""
        return cls.spec_model is not None and cls.capture is not EnvironmentManager.capture

    def preflight_capture(self, plan: CapturePlan) -> None:
        """Checks before a capture does any work (the files the manager pins, a daemon, a base
        image): a missing one fails the capture before the Python lock is made; none by
        default."""

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        """The spec's `environment` section for a new capture (JSON, before validation)."""
        raise UsageError(f"--env-manager {self.name}: this manager cannot capture an environment")

    def locks(self, env: EnvironmentSpecBase) -> dict[str, LockFile]:
        """Every lock file the section pins, by field name (`spack.spack_lock` for nested)."""
        return section_locks(env)

    def pins_view(self, env: EnvironmentSpecBase, spec_dir: Path) -> dict[str, Any]:
        """Pins beyond the lock hashes, for a drift (e.g. every input of a flake.lock)."""
        return {}

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        """Make the environment exist (cached) and say how to run the worker in it."""
        raise NotImplementedError  # pragma: no cover


class PendingManager(EnvironmentManager):
    """A manager whose spec section is read and validated but whose replay is not built yet:
    it says so plainly instead of pretending."""

    tool: ClassVar[str]

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which(cls.tool) is None:
            return False, f"`{cls.tool}` is not on PATH"
        return False, f"replay inside {cls.name} is not implemented in this version of repro"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        _, why = self.available()
        raise EnvironmentSetupError(
            f"cannot realize a {self.name} environment: {why}",
            hint="replay with --env venv or --env native",
        )


def verified_lock(lock: LockFile, spec_path: Path, *, hint: str) -> Path:
    """The pinned file a spec names, resolved from the spec's folder, with the pinned bytes:
    else an EnvironmentSetupError (nothing is realized from a file that changed)."""

    path = resolve_path(lock.path, spec_path.parent)
    if not path.is_file() or sha256_file(path) != lock.sha256:
        raise EnvironmentSetupError(
            f"{path}: missing or not the pinned sha256 {lock.sha256}", hint=hint
        )
    return path


def repro_source_root() -> Path:
    """The folder holding the `repro` package (put on PYTHONPATH for workers)."""
    return Path(__file__).resolve().parents[2]
