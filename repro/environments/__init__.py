"""Registry of environment managers, and `auto`: the captured manager if usable, else venv."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Final

from repro.environments.base import EnvironmentManager, RealizedEnvironment
from repro.errors import EnvironmentSetupError, UsageError
from repro.spec.models import ExperimentSpec

MANAGERS: Final[dict[str, str]] = {
    "native": "repro.environments.native:NativeManager",
    "venv": "repro.environments.venv:VenvManager",
    "nix": "repro.environments.nix:NixManager",
    "spack": "repro.environments.unsupported:SpackManager",
    "docker": "repro.environments.unsupported:DockerManager",
}
CHOICES: Final = ("auto", *MANAGERS)


def get_manager(name: str) -> EnvironmentManager:
    if name not in MANAGERS:
        raise UsageError(f"unknown environment {name!r}; expected one of {list(CHOICES)}")
    module_name, cls_name = MANAGERS[name].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    manager: EnvironmentManager = cls()
    return manager


def choose(name: str, spec: ExperimentSpec) -> tuple[str, str]:
    """The manager to use and why: `auto` takes the captured one when its tool is installed."""
    if name != "auto":
        ok, why = get_manager(name).available()
        if not ok:
            raise EnvironmentSetupError(
                f"environment {name!r} is not usable here: {why}",
                hint="use --env auto, venv or native",
            )
        return name, f"asked for with --env {name}"
    captured = spec.environment.manager
    ok, why = get_manager(captured).available()
    if ok:
        return captured, f"auto: the captured manager {captured!r} is available"
    return (
        "venv",
        f"auto: the captured manager {captured!r} is not usable here ({why}); fell back to venv",
    )


def realize(name: str, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
    """Realize the chosen environment; the reason for the choice is kept in the result."""
    chosen, reason = choose(name, spec)
    try:
        env = get_manager(chosen).realize(spec, spec_path, workdir)
    except EnvironmentSetupError as exc:
        if name != "auto" or chosen == "venv":
            raise
        # auto: the captured manager is installed but could not realize (e.g. no network)
        reason = f"auto: realizing {chosen!r} failed ({exc.message[:300]}); fell back to venv"
        env = get_manager("venv").realize(spec, spec_path, workdir)
    env.reason = f"{reason}; {env.reason}" if env.reason else reason
    return env
