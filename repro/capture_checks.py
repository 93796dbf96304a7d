"""What `repro capture` checks before it locks or writes anything.

Locking the worker's Python packages takes tens of seconds and realizing a manager longer, so
every input that can be wrong is checked first: the partial spec as a spec (its schema and its
semantic checks, with what capture fills in standing in as placeholders), the environment
manager's own files (a flake, a spack.yaml, a Docker base image), and the workload against the
artifacts' bytes (the model's input and output names, the data set's arrays and sample counts
from its .npz headers). A capture that fails here has written nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import materialize
from repro.backends.base import BackendPlugin
from repro.backends.registry import get_backend
from repro.environments.base import CapturePlan, EnvironmentManager
from repro.environments.registry import capture_choices, get_manager
from repro.errors import SpecError, UsageError
from repro.spec.io import format_validation_error, parse_spec
from repro.spec.models import ExperimentSpec
from repro.validate import Problem, check, check_contents

#: what stands in for the environment capture pins, so that the rest can be checked first
_PLACEHOLDER_ENV = {"manager": "venv", "python": "3"}
#: what stands in for an artifact's sha256 that capture has not computed yet
_PLACEHOLDER_SHA256 = "0" * 64
HINT = (
    "fix each field named, in the spec or with the flag that sets it ($.workload.input_name: "
    "--input-name, a scenario's settings: --setting SCENARIO.key=value); nothing was written"
)


@dataclass(frozen=True)
class EnvironmentPlan:
    """The backend whose worker is locked and the manager that pins the rest."""

    backend: BackendPlugin
    manager: EnvironmentManager
    manager_name: str


def trial_spec(raw: dict[str, Any], source: str) -> ExperimentSpec:
    """The partial spec as a spec, with placeholders for what capture fills in (hashes, the
    environment, the hardware): only what the user gave can be wrong."""
    trial = json.loads(json.dumps(raw))
    for art in (trial.get("artifacts") or {}).values():
        if isinstance(art, dict):
            art.setdefault("sha256", _PLACEHOLDER_SHA256)
    trial["environment"] = dict(_PLACEHOLDER_ENV)
    trial.pop("hardware", None)
    return parse_spec(trial, source=source)


def check_spec(raw: dict[str, Any], source: str, spec_path: Path) -> None:
    """The partial spec's schema, then every semantic check `repro validate` makes (LoadGen's
    required settings, artifact references, ...), before minutes of hashing and locking."""
    _raise_problems(check(trial_spec(raw, source), spec_path), source)


def check_part(model: type[BaseModel], raw: Any, source: str, root: str) -> None:
    """A part of the spec kept as it is, validated alone: a bad one is a SpecError naming it."""
    try:
        model.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(source, exc, raw, root=root),
            hint="fix the spec (`repro validate` names each problem), or drop the part",
        ) from None


def plan_environment(
    raw: dict[str, Any],
    *,
    name: str,
    env_manager: str | None,
    lockfiles_dir: Path,
    flake_dir: Path,
    docker_base: str | None,
    docker_bake: bool,
) -> EnvironmentPlan:
    """The manager that will pin the environment, its own files and services checked now."""
    backend = get_backend(str((raw.get("backend") or {}).get("name")))
    manager_name = env_manager or _captured_manager(raw) or "venv"
    manager = get_manager(manager_name)
    if not manager.can_capture():
        raise UsageError(f"--env-manager {manager_name}: capture supports {capture_choices()}")
    if (docker_base or docker_bake) and manager_name != "docker":
        raise UsageError("--docker-base and --docker-bake-artifacts need --env-manager docker")
    options = {"docker_base": docker_base} if docker_base else {}
    manager.preflight_capture(
        CapturePlan(name=name, lockfiles_dir=lockfiles_dir, flake_dir=flake_dir, options=options)
    )
    return EnvironmentPlan(backend, manager, manager_name)


def _captured_manager(raw: dict[str, Any]) -> str | None:
    """The manager of the spec being re-captured, when capture can pin it again."""
    env = raw.get("environment")
    name = env.get("manager") if isinstance(env, dict) else None
    return name if isinstance(name, str) and name in capture_choices() else None


def check_artifacts(
    raw: dict[str, Any], *, source: str, spec_dir: Path, cache: ArtifactCache
) -> None:
    """The workload against the bytes of its model and data set (their sha256 pinned by now):
    input and output names the model has, arrays and samples the data set holds."""
    spec = trial_spec(raw, source)
    files = {
        name: materialize(name, spec.artifacts[name], base_dir=spec_dir, cache=cache).path
        for name in (spec.workload.model, spec.workload.dataset)
        if name in spec.artifacts
    }
    _raise_problems(check_contents(spec, files), source)


def _raise_problems(problems: list[Problem], source: str) -> None:
    errors = [p for p in problems if p.severity == "error"]
    if not errors:
        return
    if len(errors) == 1:
        raise SpecError(f"{source}: {errors[0].where}: {errors[0].message}", hint=HINT)
    lines = "\n".join(f"  {p.where}: {p.message}" for p in errors)
    raise SpecError(f"{source}: {len(errors)} problems:\n{lines}", hint=HINT)
