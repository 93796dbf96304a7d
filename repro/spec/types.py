"""The parts of the experiment spec that no plug-in owns: scalar types, artifacts, workload,
hardware, original, tolerances. Backends and environment managers build their own parts of the
spec on `SpecModel`; `repro.spec.models` assembles the whole spec from them and the registries.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

SCHEMA_V1: Final = "repro.experiment/v1"
SUPPORTED_SCHEMAS = (SCHEMA_V1,)

Sha256 = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9a-f]{64}$"),
    Field(description="sha256 digest: 64 lowercase hex digits"),
]
Name = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$"),
    Field(description="lowercase letters, digits, '.', '_' and '-'; starts with a letter or digit"),
]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(gt=0.0, lt=1.0)]

ScenarioName = Literal["SingleStream", "MultiStream", "Server", "Offline"]
ModeName = Literal["performance", "accuracy"]
SCENARIOS: tuple[ScenarioName, ...] = ("SingleStream", "MultiStream", "Server", "Offline")


class SpecModel(BaseModel):
    """A part of the spec: unknown fields are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- artifacts -----------------------------------------------------------------------------


class Artifact(SpecModel):
    """A file the experiment needs, fixed by its sha256 like a Nix fixed-output path.

    Exactly one of `url`, `path` or `recipe` says where its bytes come from.
    """

    url: str | None = Field(None, description="http(s):// or file:// URL to download")
    path: str | None = Field(None, description="a local file, relative to the spec's folder")
    recipe: str | None = Field(None, description="a registered deterministic generator")
    params: dict[str, int | float | str | bool] = Field(
        default_factory=dict, description="the recipe's parameters"
    )
    sha256: Sha256
    size_bytes: NonNegInt | None = None
    media_type: str | None = Field(None, description="e.g. application/onnx, application/x-npz")
    description: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Artifact:
        given = [k for k in ("url", "path", "recipe") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one source of url, path or recipe (got {given or 'none'})"
            )
        if self.params and self.recipe is None:
            raise ValueError("params are only for a recipe source")
        if self.url is not None and not re.match(r"^(https?|file)://", self.url):
            raise ValueError("url must start with http://, https:// or file://")
        return self


# --- workload ------------------------------------------------------------------------------


class LoadGenSettings(SpecModel):
    """TestSettings of one LoadGen scenario; names and units follow LoadGen's own."""

    min_duration_ms: NonNegInt = 10_000
    max_duration_ms: NonNegInt = 0
    min_query_count: NonNegInt = 100
    max_query_count: NonNegInt = 0
    single_stream_expected_latency_ns: PosInt | None = None
    single_stream_target_latency_percentile: Fraction | None = None
    multi_stream_expected_latency_ns: PosInt | None = None
    multi_stream_samples_per_query: PosInt | None = None
    multi_stream_target_latency_percentile: Fraction | None = None
    server_target_qps: Annotated[float, Field(gt=0)] | None = None
    server_target_latency_ns: PosInt | None = None
    server_target_latency_percentile: Fraction | None = None
    server_coalesce_queries: bool | None = None
    server_max_async_queries: NonNegInt | None = None
    offline_expected_qps: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _durations(self) -> LoadGenSettings:
        if self.max_duration_ms and self.max_duration_ms < self.min_duration_ms:
            raise ValueError("max_duration_ms must be 0 (no limit) or >= min_duration_ms")
        if self.max_query_count and self.max_query_count < self.min_query_count:
            raise ValueError("max_query_count must be 0 (no limit) or >= min_query_count")
        return self


class ScenarioSpec(SpecModel):
    """One LoadGen scenario to run, with its settings."""

    scenario: ScenarioName
    settings: LoadGenSettings = Field(default_factory=LoadGenSettings)


class Seeds(SpecModel):
    """LoadGen's RNG seeds, set explicitly so a replay draws the same samples."""

    qsl_rng_seed: NonNegInt
    sample_index_rng_seed: NonNegInt
    schedule_rng_seed: NonNegInt
    accuracy_log_rng_seed: NonNegInt = 0


class AccuracySpec(SpecModel):
    """How accuracy mode is scored."""

    metric: Literal["top1", "agreement"] = Field(
        description="top1: against the data set's labels; "
        "agreement: against the reference predictions in `original`"
    )
    class_offset: int = Field(0, description="added to predictions before comparing (MLPerf: -1)")
    labels_key: str = Field("labels", description="array of labels inside the dataset artifact")


def _both_modes() -> list[ModeName]:
    return ["performance", "accuracy"]


class Workload(SpecModel):
    """What LoadGen runs: the model on the data set, scenario by scenario."""

    task: Literal["classification"] = "classification"
    model: str = Field("model", description="name of the model artifact")
    dataset: str = Field("dataset", description="name of the dataset artifact (.npz)")
    inputs_key: str = Field("inputs", description="array of preprocessed inputs in the dataset")
    input_name: str | None = Field(None, description="model input; default: its first input")
    output_name: str | None = Field(
        None, description="model output holding the predicted class; default: its first output"
    )
    preprocessing: str = Field(
        "none", description="what was done to the raw data to produce the dataset's inputs"
    )
    total_sample_count: PosInt
    performance_sample_count: PosInt
    batch_size: PosInt = Field(1, description="largest batch the SUT runs (Offline, Server)")
    scenarios: Annotated[list[ScenarioSpec], Field(min_length=1)]
    modes: Annotated[list[ModeName], Field(min_length=1)] = Field(default_factory=_both_modes)
    seeds: Seeds
    accuracy: AccuracySpec

    @model_validator(mode="after")
    def _counts(self) -> Workload:
        if self.performance_sample_count > self.total_sample_count:
            raise ValueError("performance_sample_count must be <= total_sample_count")
        names = [s.scenario for s in self.scenarios]
        if len(set(names)) != len(names):
            raise ValueError(f"a scenario is listed twice: {names}")
        return self


# --- environment ---------------------------------------------------------------------------


class LockFile(SpecModel):
    """A lock file under lockfiles/<name>/, pinned by the hash of its bytes."""

    path: str = Field(description="relative to the spec's folder")
    sha256: Sha256


# --- observations and checks ---------------------------------------------------------------


class Hardware(SpecModel):
    """The fingerprint of the machine the original ran on (as `repro env show` reads it)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    cpu_model: str | None = None
    cpu_vendor: str | None = None
    logical_cpus: int | None = None
    physical_cores: int | None = None
    sockets: int | None = None
    memory_bytes: int | None = None
    machine: str | None = None
    cpu_flags: list[str] = Field(default_factory=list)


class ReferencePredictions(SpecModel):
    """Top-1 predictions of the original, in data-set order, for agreement checks."""

    top1: list[int]
    sha256: Sha256 | None = None


class Original(SpecModel):
    """Where the original results are and their headline metrics."""

    path: str = Field(description="run directory of the original, relative to the spec's folder")
    metrics: dict[str, dict[str, float | str | bool | None]] = Field(
        default_factory=dict, description="scenario -> metric -> value"
    )
    reference_predictions: ReferencePredictions | None = None


class Tolerances(SpecModel):
    """What counts as reproduced; the defaults follow MLPerf practice."""

    accuracy_ratio: Annotated[float, Field(gt=0, le=1)] = Field(
        0.99, description="replay accuracy >= this x original (MLPerf closed: 0.99)"
    )
    throughput_rel: Annotated[float, Field(gt=0)] = Field(0.05, description="+/- relative")
    latency_rel: Annotated[float, Field(gt=0)] = Field(
        0.10, description="+/- relative, as TEST01 allows"
    )
    confidence: Fraction = 0.95
