"""The registry of executors: the only place that lists them.

Adding an executor is one module under `repro/dispatch/executors/` (an `ExecutorPlugin` named
PLUGIN and the executor it makes) and one line here. Plug-in modules are light (an executor's
heavy client, if it has one, is imported when it runs), so the registry loads them eagerly.
"""

from __future__ import annotations

import importlib
from typing import Final

from repro.dispatch.executors.base import ExecutorFlag, ExecutorPlugin
from repro.errors import UsageError

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
