"""Typed views of what a run record keeps as free-form JSON: the machine's fingerprint, the
environment as realized (or as a published result describes them), and a test's accuracy,
backend and LoadGen figures.

The record stores them as plain objects (run.json's format does not change, and a reader keeps
what it does not know: every view allows extra fields); a reader takes them through these views
(`RunRecord.facts()`, `RunRecord.environment_facts()`, `TestRecord.scored()`,
`TestRecord.backend_facts()`, a test's typed `metrics` and `settings`), never through `.get`
chains that repeat the defaults. A fact nobody recorded is None (a published result knows few).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    Strict,
    create_model,
)

from repro.spec.types import LoadGenSettings, optional_setting


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
    # a served-LLM test's (repro's served backend, an MLCommons endpoints result, another
    # harness's run: `repro.formats.served`)
    api: str | None = None
    server_url: str | None = Field(None, description="scheme, host and port only")
    request_errors: int | None = None
    tokens_counted_by: str | None = Field(None, description="server, tokenizer, or both")
    definitions: dict[str, Any] | None = Field(
        None,
        description="what its TTFT, TPOT, latency and rates mean, where not LoadGen's "
        "(`repro.formats.served.definitions`)",
    )

    def on_cpu(self) -> bool | None:
        """Whether the test computed on the CPU; None when the record does not say."""
        return None if self.device is None else self.device.lower() == "cpu"

    def identity_facts(self) -> dict[str, Any]:
        """The recorded `identity` facts, by name (those not recorded left out)."""
        return {k: v for k in self.identity if (v := getattr(self, k, None)) is not None}


class Recorded(Mapping[str, Any]):
    """A section of a test's record, typed, that is written back as it was read: the keys it
    was given, in their order, so that reading and writing a run.json changes no byte. A
    reader takes a figure it names as an attribute; a figure named by data (a metric table's
    key, LoadGen's setting) by its key, as from a mapping."""

    #: the model the section's typed figures are validated with (a subclass's)
    model: ClassVar[type[BaseModel]]

    def __init__(self, given: Mapping[str, Any] | Recorded | None = None) -> None:
        raw = dict(given.items()) if given is not None else {}
        self._typed = self.model.model_validate(raw)
        #: as given: what the figures' names give, and what is written back
        self._items = raw

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._typed, name)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple(self._items))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        """Validated from a mapping (its figures typed by `model`), written as the mapping it
        was read from."""
        from pydantic_core import core_schema

        def make(value: Any) -> Recorded:
            return value if isinstance(value, cls) else cls(value)

        return core_schema.no_info_before_validator_function(
            make,
            core_schema.is_instance_schema(cls),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda v: dict(v._items), when_used="always"
            ),
        )


#: a figure: an integer or a float as written (never a boolean or a numeric string: those are
#: an edit)
_Number = Annotated[int, Strict()] | Annotated[float, Strict()]


class _Metrics(Facts):
    """The LoadGen figures of a test that readers take by name: validity, rates, latency
    percentiles, counts, token figures (the rest: by key)."""

    validity: str | None = Field(None, description="VALID or INVALID, LoadGen's verdict")
    mlperf_metric: str | None = Field(None, description="the key of the figure MLPerf takes")
    samples_per_second: _Number | None = None
    queries_per_second: _Number | None = None
    tokens_per_second: _Number | None = None
    latency_min_ns: _Number | None = None
    latency_mean_ns: _Number | None = None
    latency_max_ns: _Number | None = None
    latency_p50_ns: _Number | None = None
    latency_p90_ns: _Number | None = None
    latency_p95_ns: _Number | None = None
    latency_p97_ns: _Number | None = None
    latency_p99_ns: _Number | None = None
    latency_p999_ns: _Number | None = Field(None, alias="latency_p99.9_ns")
    ttft_p50_ns: _Number | None = None
    ttft_p90_ns: _Number | None = None
    ttft_p99_ns: _Number | None = None
    tpot_p50_ns: _Number | None = None
    tpot_p90_ns: _Number | None = None
    tpot_p99_ns: _Number | None = None
    early_stopping_p90_ns: _Number | None = None
    early_stopping_p99_ns: _Number | None = None
    num_errors: int | None = None
    samples_per_query: _Number | None = None
    sut_queries_completed: int | None = None
    samples_per_cpu_second: _Number | None = None
    errors: str | None = Field(None, description="what repro found wrong with the test")


class TestMetrics(Recorded):
    """A test's LoadGen figures (`mlperf_log_summary.txt`, the detail log, repro's own)."""

    __test__ = False  # not a pytest class
    model = _Metrics


#: LoadGen's TestSettings as a test ran with them: the spec's fields and types
#: (`LoadGenSettings`), each optional (a published run's logs say only some)
_Settings = create_model(
    "_Settings",
    __base__=Facts,
    **{name: optional_setting(name) for name in LoadGenSettings.model_fields},
)


class TestSettings(Recorded):
    """The LoadGen settings a test ran with, typed by the spec's `LoadGenSettings`."""

    __test__ = False  # not a pytest class
    model = _Settings

    def effective(self) -> LoadGenSettings:
        """The settings as the spec's type (checked as a spec's are)."""
        return LoadGenSettings.model_validate(dict(self._items))
