"""The plug-ins the spec is made of: every backend and every environment manager, named here.

Adding a backend is one package under `repro/backends/` (a `BackendPlugin` named PLUGIN and its
engine) and one line in BACKENDS; adding a manager is its face and its work under
`repro/environments/<name>/` and one line in ENVIRONMENTS. The spec names its plug-ins by
module, as an entry-point table does, and loads them when its models are built: a plug-in
imports the spec's types and sections (`repro.spec.sections`), the spec imports no plug-in.
The plug-ins' modules are light (no inference library, no manager's tools); the registries
(`repro.backends.registry`, `repro.environments.registry`) hold what they give.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Final, Union

from pydantic import Field

from repro.spec.sections import EndpointSection

#: `module:attribute` of every backend's `BackendPlugin`, in the CLI's order
BACKENDS: Final = (
    "repro.backends.onnxruntime:PLUGIN",
    "repro.backends.tvm:PLUGIN",
    "repro.backends.torch:PLUGIN",
    "repro.backends.served:PLUGIN",
)
#: `module:attribute` of every server engine's `ServerEngine` (a served experiment's `server`)
SERVERS: Final = (
    "repro.servers.transformers_serve:ENGINE",
    "repro.servers.vllm:ENGINE",
    "repro.servers.sglang:ENGINE",
)
#: `module:attribute` of every environment manager's `EnvironmentFace`, in the CLI's order
ENVIRONMENTS: Final = (
    "repro.environments.native:FACE",
    "repro.environments.venv:FACE",
    "repro.environments.nix:FACE",
    "repro.environments.spack:FACE",
    "repro.environments.docker:FACE",
)


def load(ref: str) -> Any:
    """The object `module:attribute` names (a plug-in or a face); a module is imported once."""
    module, attr = ref.split(":")
    return getattr(importlib.import_module(module), attr)


def backend_section() -> Any:
    """The spec's `backend` field: every backend's section, tagged by `name`."""
    models = tuple(load(ref).spec_model for ref in BACKENDS)
    return Annotated[Union[models], Field(discriminator="name")]  # noqa: UP007


def server_section() -> Any:
    """The spec's `server` field: every engine's section and an external endpoint, tagged by
    `engine`."""
    models = (*(load(ref).spec_model for ref in SERVERS), EndpointSection)
    return Annotated[Union[models], Field(discriminator="engine")]  # noqa: UP007


def environment_section() -> Any:
    """The spec's `environment` field: every manager's section, tagged by `manager`."""
    faces = (load(ref) for ref in ENVIRONMENTS)
    models = tuple(f.spec_model for f in faces if f.spec_model is not None)
    return Annotated[Union[models], Field(discriminator="manager")]  # noqa: UP007


def backend_facts(name: object) -> Any:
    """The model of what the backend named `name` records of a test (its plug-in's `facts`);
    None when no plug-in has that name (a record of a backend this repro does not have)."""
    for ref in BACKENDS:
        plugin = load(ref)
        if plugin.name == name:
            return plugin.facts
    return None
