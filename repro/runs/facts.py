"""Typed views of what a run record keeps as free-form JSON: the machine's fingerprint, the
environment as realized (or as a published result describes them), and a test's accuracy,
backend and LoadGen figures.

The record stores them as plain objects (run.json's format does not change, and a reader keeps
what it does not know: every view allows extra fields); a reader takes them through these views
(`RunRecord.facts()`, `RunRecord.environment_facts()`, `TestRecord.scored()`,
`TestRecord.backend_facts()`, `TestRecord.loadgen()`), never through `.get` chains that repeat
the defaults. A fact nobody recorded is None (a published result knows few).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _absent_is_empty(value: Any) -> Any:
    """A section recorded as null is a section that says nothing."""
    return {} if value is None else value


class Facts(BaseModel):
    """A view of a recorded object: the fields a reader takes, typed; the rest kept."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class CpuFacts(Facts):
    model: str | None = None
    vendor: str | None = None
    logical_cpus: int | None = None
    physical_cores: int | None = None
    sockets: int | None = None


class GpuFacts(Facts):
    name: str | None = None


class HardwareFacts(Facts):
    machine: str | None = None
    cpu: Annotated[CpuFacts, BeforeValidator(_absent_is_empty)] = Field(default_factory=CpuFacts)
    memory_bytes: int | None = None
    gpus: list[GpuFacts] | None = Field(None, description="as nvidia-smi lists them")
    accelerators: str | None = Field(None, description="a published system's, in its words")
    accelerators_per_node: int | None = None
    nodes: int | None = None


class OsFacts(Facts):
    system: str | None = None
    kernel: str | None = None
    release: str | None = None


class PythonFacts(Facts):
    version: str | None = None


class Fingerprint(Facts):
    """The machine a run ran on (`repro.machine.fingerprint`'s collect, or a published system's)."""

    schema_: str | None = Field(None, alias="schema")
    hardware: Annotated[HardwareFacts, BeforeValidator(_absent_is_empty)] = Field(
        default_factory=HardwareFacts
    )
    os: Annotated[OsFacts, BeforeValidator(_absent_is_empty)] = Field(default_factory=OsFacts)
    python: Annotated[PythonFacts, BeforeValidator(_absent_is_empty)] = Field(
        default_factory=PythonFacts
    )
    packages: Annotated[dict[str, str], BeforeValidator(_absent_is_empty)] = Field(
        default_factory=dict
    )


class EnvironmentFacts(Facts):
    """The environment a run ran in: the manager that realized it and why (a replay), or the
    submitter's system (a published result, manager `published`)."""

    manager: str | None = None
    reason: str | None = None
    submitter: str | None = None
    system: str | None = None
    division: str | None = None
    round: str | None = None
    framework: str | None = None
    system_status: str | None = Field(None, description="available, preview or rdi")


def _absent_is_true(value: Any) -> Any:
    return True if value is None else value


class AccuracyFacts(Facts):
    """An accuracy test's score (`repro.replay.scoring`, or a published accuracy.txt's figure)."""

    metric: str | None = Field(None, description="top1, agreement, rouge1, a published name")
    value: float | None = Field(None, description="None: not scored (`note` says why)")
    unit: str = Field("fraction", description="fraction (0-1), or score (ROUGE: 0-100)")
    higher_is_better: Annotated[bool, BeforeValidator(_absent_is_true)] = True
    correct: int | None = None
    total: int | None = None
    note: str | None = None
    #: a generation scored by ROUGE: its share of prompts with the original's exact tokens
    agreement: float | None = None
    tokens: int | None = None
    predictions_sha256: str | None = None
    responses_sha256: str | None = None
    output_digests: list[str] | None = None


class BackendFacts(Facts):
    """The backend a test ran on, as its worker reported it (`Engine.describe()`): the facts
    every backend records. A backend plug-in declares its own (`BackendPlugin.facts`, a
    subclass: TVM's target object, onnxruntime's providers) and `TestRecord.backend_facts()`
    reads a test's backend with the model of the backend it names."""

    #: the facts that say which build and configuration ran (the drift and the catalog show
    #: them beside the options); a plug-in's model adds its own
    identity: ClassVar[tuple[str, ...]] = ("name", "version", "device")

    name: str | None = None
    version: str | None = None
    device: str | None = Field(None, description="CPU, or the accelerator's kind")
    options: Annotated[dict[str, Any], BeforeValidator(_absent_is_empty)] = Field(
        default_factory=dict
    )

    def on_cpu(self) -> bool | None:
        """Whether the test computed on the CPU; None when the record does not say."""
        return None if self.device is None else self.device.lower() == "cpu"

    def identity_facts(self) -> dict[str, Any]:
        """The recorded `identity` facts, by name (those not recorded left out)."""
        return {k: v for k in self.identity if (v := getattr(self, k, None)) is not None}


class LoadGenFacts(Facts):
    """The LoadGen figures of a test that readers take by name (the rest: `metrics[key]`)."""

    validity: str | None = Field(None, description="VALID or INVALID, LoadGen's verdict")
    num_errors: int | None = None
    samples_per_query: float | None = None
    latency_p50_ns: float | None = None
    sut_queries_completed: int | None = None
    errors: str | None = Field(None, description="what repro found wrong with the test")
