"""The registry of environment managers, and `auto`: the captured manager if usable, else venv.

The only place that lists the managers: adding one is one module under `repro/environments/`
and one line here. Manager modules import no heavy package, so the registry loads them eagerly.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Union

from pydantic import Field

from repro.environments.base import EnvironmentManager, RealizedEnvironment
from repro.errors import EnvironmentSetupError, UsageError

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

_MANAGERS: Final = (
    "repro.environments.native:NativeManager",
    "repro.environments.venv:VenvManager",
    "repro.environments.nix:NixManager",
    "repro.environments.spack:SpackManager",
    "repro.environments.docker:DockerManager",
)
#: what `auto` falls back to when the captured manager is not usable here
FALLBACK: Final = "venv"


def _load(ref: str) -> type[EnvironmentManager]:
    module, attr = ref.split(":")
    cls: type[EnvironmentManager] = getattr(importlib.import_module(module), attr)
    return cls


MANAGERS: Final[dict[str, type[EnvironmentManager]]] = {c.name: c for c in map(_load, _MANAGERS)}


def replay_choices() -> list[str]:
    """`--env` choices: auto, then every manager."""
    return ["auto", *MANAGERS]


def capture_choices() -> list[str]:
    """`--env-manager` choices: the managers that can pin an environment at capture."""
    return [n for n, c in MANAGERS.items() if c.can_capture()]


def get_manager(
    name: str,
    report: Callable[[str], None] | None = None,
    options: dict[str, Any] | None = None,
) -> EnvironmentManager:
    """A manager by name; an unknown name lists the valid ones."""
    if name not in MANAGERS:
        raise UsageError(f"unknown environment {name!r}; expected one of {replay_choices()}")
    return MANAGERS[name](report, options)


def environment_spec_union() -> Any:
    """The spec's `environment` field: every manager's section, tagged by `manager`."""
    models = tuple(c.spec_model for c in MANAGERS.values() if c.spec_model is not None)
    return Annotated[Union[models], Field(discriminator="manager")]  # noqa: UP007


def choose(name: str, spec: ExperimentSpec, spec_path: Path) -> tuple[str, str]:
    """The manager to use and why: `auto` takes the captured one when it is usable for the spec
    here (its tool is installed; nix: it can enter the pinned shell, checked quickly)."""
    if name != "auto":
        ok, why = get_manager(name).available()
        if not ok:
            raise EnvironmentSetupError(
                f"environment {name!r} is not usable here: {why}",
                hint="use --env auto, venv or native",
            )
        return name, f"asked for with --env {name}"
    captured = spec.environment.manager
    ok, why = get_manager(captured).usable_for(spec, spec_path)
    if ok:
        return captured, f"auto: the captured manager {captured!r} is available"
    return (
        FALLBACK,
        f"auto: the captured manager {captured!r} is not usable here ({why}); "
        f"fell back to {FALLBACK}",
    )


def realize(
    name: str,
    spec: ExperimentSpec,
    spec_path: Path,
    workdir: Path,
    *,
    report: Callable[[str], None] | None = None,
    options: dict[str, Any] | None = None,
) -> RealizedEnvironment:
    """Realize the chosen environment; the reason for the choice is kept in the result.
    `report` receives the progress of a long realization (a Spack or Docker build); `options`
    are the manager's own (docker: rebuild, cpuset, memory)."""
    chosen, reason = choose(name, spec, spec_path)
    try:
        env = get_manager(chosen, report, options).realize(spec, spec_path, workdir)
    except EnvironmentSetupError as exc:
        if name != "auto" or chosen == FALLBACK:
            raise
        # auto: the captured manager is installed but could not realize (e.g. no network)
        reason = f"auto: realizing {chosen!r} failed ({exc.message[:300]}); fell back to {FALLBACK}"
        env = get_manager(FALLBACK, report).realize(spec, spec_path, workdir)
    env.reason = f"{reason}; {env.reason}" if env.reason else reason
    return env
