"""The experiment spec v1: pydantic models that are the JSON contract of repro.

The spec is assembled here from the parts no plug-in owns (`repro.spec.types`) and the sections
the backends and environment managers declare (their registries). Nothing else names a backend
or a manager.

Format history (the `schema` field):
# repro.experiment/v1 - first published version; later, optional: `claims` (relative results
#                       stated about the experiment, with their evidence; not part of the id);
#                       later: `server` (a served experiment: the server repro starts, or an
#                       external endpoint) and an artifact's `files` (a folder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field

from repro.spec import plugins
from repro.spec.claims import ClaimList
from repro.spec.sections import (
    BackendSpecBase,
    EndpointSection,
    EnvironmentSpecBase,
    ServerSectionBase,
)
from repro.spec.types import (
    SCENARIOS,
    SCHEMA_V1,
    SUPPORTED_SCHEMAS,
    AccuracySpec,
    Artifact,
    GenerationSpec,
    Hardware,
    LoadGenSettings,
    LockFile,
    ModeName,
    Name,
    Original,
    ReferencePredictions,
    ScenarioName,
    ScenarioSpec,
    Seeds,
    Sha256,
    SpecModel,
    Tolerances,
    Workload,
)

__all__ = [
    "SCENARIOS",
    "SCHEMA_V1",
    "SUPPORTED_SCHEMAS",
    "AccuracySpec",
    "Artifact",
    "BackendSpec",
    "EnvironmentSpec",
    "ExperimentSpec",
    "GenerationSpec",
    "Hardware",
    "LoadGenSettings",
    "LockFile",
    "ModeName",
    "Original",
    "ReferencePredictions",
    "ScenarioName",
    "ScenarioSpec",
    "Seeds",
    "Tolerances",
    "Workload",
]

if TYPE_CHECKING:
    # For the type checker a section is its base; at run time, the tagged union of plug-ins.
    BackendSpec = BackendSpecBase
    EnvironmentSpec = EnvironmentSpecBase
    ServerSpec = ServerSectionBase | EndpointSection
else:
    BackendSpec = plugins.backend_section()
    EnvironmentSpec = plugins.environment_section()
    ServerSpec = plugins.server_section()


class ExperimentSpec(SpecModel):
    """One benchmark experiment: what to run, where, and how to check it."""

    schema_: Literal["repro.experiment/v1"] = Field(
        SCHEMA_V1, alias="schema", description="the spec's format and its version"
    )
    id: Sha256 | None = Field(
        None,
        description="sha256 of the canonical JSON (sorted keys, compact, defaults filled in) "
        "without `id`, `original`, `hardware` and `claims`",
    )
    name: Name
    description: str = Field("", description="what the experiment is, for a person")
    tags: list[str] = Field(
        default_factory=list,
        description="words to find it by; a benchmark's name among them (`resnet50`) makes the "
        "spec stand in for that MLPerf benchmark when compared with published results",
    )
    artifacts: dict[str, Artifact] = Field(
        description="name -> the model, data set or other file the experiment uses, each "
        "pinned by its sha256"
    )
    backend: BackendSpec = Field(
        description="the inference engine and the options that change results (`name` picks "
        "the plug-in: onnxruntime, tvm, torch)"
    )
    workload: Workload
    server: ServerSpec | None = Field(
        None,
        description="a served experiment: the OpenAI-compatible server repro starts in the "
        "pinned environment (`engine`: transformers-serve, vllm, sglang; the model folder, the "
        "engine's flags) or an `external` endpoint the user runs (not pinned); the `served` "
        "backend drives it",
    )
    environment: EnvironmentSpec = Field(
        description="the software stack and how it is pinned (`manager` picks the plug-in: "
        "venv, nix, spack, docker)"
    )
    hardware: Hardware = Field(default_factory=Hardware)
    original: Original | None = Field(
        None, description="the original results the replays are compared with"
    )
    tolerances: Tolerances = Field(default_factory=Tolerances)
    claims: ClaimList = Field(
        None,
        description="relative results stated about the experiment (two variants, a metric, a "
        "bound on their ratio), checked on any machine by `repro claim check`; not part of the id",
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
