"""The server engine plug-in interface: what repro knows of an engine without importing it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from repro.spec.sections import ServerSectionBase
from repro.spec.types import SpecModel


class EngineFlags(SpecModel):
    """An engine's flags that change its results or speed (each engine's own, typed)."""


class ServerEngine:
    """One server engine: its spec section, its command and its facts."""

    name: ClassVar[str]
    #: the spec's `server` section for this engine (a ServerSectionBase with a Literal engine)
    spec_model: ClassVar[type[ServerSectionBase]]
    #: the distributions whose versions are the engine's (recorded with every run; the drift
    #: ranks them first)
    packages: ClassVar[tuple[str, ...]]
    #: the module the environment's Python runs (`python -m MODULE ...`)
    module: ClassVar[str]
    #: how to get the engine where it is missing
    install_hint: ClassVar[str]
    #: the path that answers 200 once the server takes requests
    ready_path: ClassVar[str] = "/health"
    #: environment variables the server runs with (no hub lookups: the model is a local folder)
    variables: ClassVar[dict[str, str]] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def arguments(self, model: Path, host: str, port: int, flags: EngineFlags) -> list[str]:
        """The command line after `python -m MODULE`: the model folder, where it listens, and
        the spec's flags."""
        raise NotImplementedError

    def served_name(self, model: Path) -> str:
        """The model's name in the API (`model` of a request; `/v1/models` lists it)."""
        return str(model)


def flag_arguments(flags: EngineFlags, *, spelled: dict[str, str] | None = None) -> list[str]:
    """`--name value` for every flag set (`--name` for a true switch, nothing for false or
    None), in the model's field order: the spec's flags, as the engine spells them."""
    out: list[str] = []
    for name, value in flags.model_dump(exclude_none=True).items():
        flag = (spelled or {}).get(name) or "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not False:
            out += [flag, str(value)]
    return out
