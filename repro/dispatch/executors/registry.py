"""The registry of executors: the only place that lists them.

Adding an executor is one module under `repro/dispatch/executors/` (an `ExecutorPlugin` named
PLUGIN and the executor it makes) and one line here. Plug-in modules are light (an executor's
heavy client, if it has one, is imported when it runs), so the registry loads them eagerly.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from repro.dispatch.executors.base import ExecutorFlag, ExecutorPlugin
from repro.errors import UsageError

if TYPE_CHECKING:
    from repro.dispatch.executors.base import Executor, ExecutorOptions
    from repro.dispatch.plan import DispatchPlan

_PLUGINS: Final = (
    "repro.dispatch.executors.local:PLUGIN",
    "repro.dispatch.executors.slurm:PLUGIN",
)


def _load(ref: str) -> ExecutorPlugin:
    module, attr = ref.split(":")
    plugin: ExecutorPlugin = getattr(importlib.import_module(module), attr)
    return plugin


EXECUTORS: Final[dict[str, ExecutorPlugin]] = {p.name: p for p in map(_load, _PLUGINS)}


def executor_names() -> list[str]:
    """Every executor's name, in registry order (`--on`'s choices)."""
    return list(EXECUTORS)


def get_executor(name: str) -> ExecutorPlugin:
    """The plug-in of an executor; an unknown name lists the valid ones."""
    try:
        return EXECUTORS[name]
    except KeyError:
        raise UsageError(
            f"unknown executor {name!r}; expected one of {sorted(EXECUTORS)}"
        ) from None


def executor_flags() -> list[tuple[ExecutorPlugin, ExecutorFlag]]:
    """Every executor's command-line flags, with the executor each belongs to."""
    return [(p, f) for p in EXECUTORS.values() for f in p.flags]


def executor_from_flags(
    on: str, given: Mapping[str, Any], *, saved: ExecutorOptions | None = None
) -> Executor:
    """The executor `--on` names, with `saved` options (else its defaults) and the flags given
    over them; other executors' flags are not its own and are left alone."""
    plugin = get_executor(on)
    return plugin.make(plugin.options_from(given, saved))


def resume_executor(plan: DispatchPlan, on: str | None, given: Mapping[str, Any]) -> Executor:
    """The executor of `--resume RUN`: the run's own with the options it ran with and the flags
    given again over them; with --on another executor, that one with the flags given."""
    if on is None or on == plan.executor:
        return executor_from_flags(plan.executor, given, saved=plan.options())
    return executor_from_flags(on, given)
