"""The registry of environment managers, and `auto`: the captured manager if usable, else venv.

Every manager `repro.spec.plugins` names, by name: adding one is its face and its work under
`repro/environments/<name>/` (`repro.environments.section`) and one line in
`repro.spec.plugins.ENVIRONMENTS`. The faces are
loaded with the spec; a manager's work is imported when an environment is captured, checked or
realized, never by a process that only reads a spec (the worker).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from repro.environments.section import EnvironmentFace
from repro.errors import EnvironmentSetupError, UsageError
from repro.spec import plugins

if TYPE_CHECKING:
    from repro.environments.base import EnvironmentManager, RealizedEnvironment
    from repro.spec.models import ExperimentSpec

#: what `auto` falls back to when the captured manager is not usable here
FALLBACK: Final = "venv"


#: every manager's face (its spec section and facts), by name: light, loaded with the spec
FACES: Final[dict[str, EnvironmentFace]] = {
    f.name: f for f in map(plugins.load, plugins.ENVIRONMENTS)
}


class _Managers(MutableMapping[str, "type[EnvironmentManager]"]):
    """The managers' classes by name, each imported when first asked for (its tools, builds
    and containers are no concern of a process that only reads a spec). Tests put fakes in."""

    def __init__(self) -> None:
        self._loaded: dict[str, type[EnvironmentManager]] = {}

    def __getitem__(self, name: str) -> type[EnvironmentManager]:
        if name not in self._loaded:
            if name not in FACES:
                raise KeyError(name)
            self._loaded[name] = plugins.load(FACES[name].manager)
        return self._loaded[name]

    def __setitem__(self, name: str, cls: type[EnvironmentManager]) -> None:
        self._loaded[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(FACES)

    def __len__(self) -> int:
        return len(FACES)


MANAGERS: Final = _Managers()


def replay_choices() -> list[str]:
    """`--env` choices: auto, then every manager."""
    return ["auto", *FACES]


def capture_choices() -> list[str]:
    """`--env-manager` choices: the managers that can pin an environment at capture."""
    return [n for n, f in FACES.items() if f.can_capture]


def get_manager(
    name: str,
    report: Callable[[str], None] | None = None,
    options: dict[str, Any] | None = None,
) -> EnvironmentManager:
    """A manager by name; an unknown name lists the valid ones."""
    if name not in FACES:
        raise UsageError(f"unknown environment {name!r}; expected one of {replay_choices()}")
    return MANAGERS[name](report, options)


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
