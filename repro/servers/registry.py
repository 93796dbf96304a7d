"""The registry of server engines: every engine `repro.spec.plugins.SERVERS` names, by name."""

from __future__ import annotations

from typing import Final

from repro.errors import SpecError
from repro.servers.base import ServerEngine
from repro.spec import plugins

ENGINES: Final[dict[str, ServerEngine]] = {e.name: e for e in map(plugins.load, plugins.SERVERS)}


def get_engine(name: str) -> ServerEngine:
    """The engine's plug-in; an unknown name lists the valid ones."""
    try:
        return ENGINES[name]
    except KeyError:
        raise SpecError(
            f"unknown server engine {name!r}; expected one of {sorted(ENGINES)}"
        ) from None
