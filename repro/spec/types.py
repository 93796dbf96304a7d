"""The parts of the experiment spec that no plug-in owns: scalar types, artifacts, workload,
hardware, original, tolerances. Backends and environment managers build their own parts of the
spec on `SpecModel`; `repro.spec.models` assembles the whole spec from them and the registries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from repro.digests import tree_digest
from repro.spec.limits import MAX_DURATION_MS, UINT64_MAX

SCHEMA_V1: Final = "repro.experiment/v1"
SUPPORTED_SCHEMAS = (SCHEMA_V1,)

Sha256 = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9a-f]{64}$"),
    Field(description="sha256 digest: 64 lowercase hex digits"),
]


def _not_home_relative(path: str) -> str:
    """A spec names its files relative to its folder (or absolute), never by `~`: a home
    folder is another folder on every machine, and a package's paths must stay inside it."""
    if path.startswith("~"):
        raise ValueError(
            f"{path!r} starts with '~' (a home folder, another one on every machine): write "
            "the path relative to the spec's folder"
        )
    return path


LocalPath = Annotated[str, AfterValidator(_not_home_relative)]


@dataclass(frozen=True)
class Accepts:
    """The values a field accepts, in words; after the `Field` that holds a number's bounds.

    The words end the field's description in the JSON schema, and the message when a value
    is refused, so that the message names the whole range, not only the bound it crossed.
    """

    accepted: str
    about: str = ""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        text = f"{self.about}; {self.accepted}" if self.about else self.accepted
        return {**handler(schema), "description": text}

    def _check(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError as exc:
            errors = exc.errors()
            # Of a union's errors, the one that is not a type mismatch says what is wrong.
            telling = [e for e in errors if not str(e["type"]).endswith("_type")]
            err = errors[0] if len(errors) == 1 else telling[0] if len(telling) == 1 else None
            if err is None:
                raise PydanticCustomError(
                    "type_mismatch", "Input should be {accepted}", {"accepted": self.accepted}
                ) from None
            raise PydanticCustomError(
                err["type"],
                "{msg}; accepted: {accepted}",
                {"msg": err["msg"], "accepted": self.accepted},
            ) from None


#: The one rule for a name that becomes one folder or file name (a spec's name, a run id, a
#: report or sweep folder; `repro.runs.layout.component` applies it): a letter or digit first
#: (never hidden), then letters, digits, '.', '_', '+' and '-' with never two dots in a row (no
#: `..`). Written without lookaround, so that the JSON schema and pydantic read it alike.
FOLDER_NAME_PATTERN: Final = r"^[A-Za-z0-9](?:\.?[A-Za-z0-9_+-])*\.?$"
FOLDER_NAME_MAX: Final = 128
#: A spec's name (specs/<name>.json, lockfiles/<name>/, results/<name>/): the same rule, in
#: lowercase and without '+', at most 64 long; so every spec `repro validate` accepts is one
#: whose results replay can write.
SPEC_NAME_PATTERN: Final = FOLDER_NAME_PATTERN.replace("A-Za-z", "a-z").replace("+", "")
Name = Annotated[
    str,
    StringConstraints(pattern=SPEC_NAME_PATTERN, max_length=64),
    Accepts(
        "lowercase letters, digits, '.', '_' and '-', at most 64, starting with a letter or "
        "digit, never two dots in a row"
    ),
]

#: far beyond any SUT; LoadGen plans qps x duration queries up front and holds them in memory
MAX_QPS: Final = 1e9
#: the most samples a data set, and so LoadGen's query sample library, may hold
MAX_SAMPLES: Final = 10_000_000
#: the largest batch a SUT may be asked to run
MAX_BATCH: Final = 4096
#: class ids are small; a larger offset is a typo, and overflows int64 predictions near 2**63
MAX_CLASS_OFFSET: Final = 1_000_000
#: the most tokens a generation may ask for (a context longer than any model's here)
MAX_NEW_TOKENS: Final = 65536
#: the most threads a backend may start; onnxruntime's worker crashes at intra_op_threads 100000
MAX_THREADS: Final = 1024

NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(gt=0.0, lt=1.0), Accepts("between 0 and 1, both excluded")]
Seed = Annotated[
    int, Field(ge=0, le=UINT64_MAX), Accepts("an integer from 0 to 2**64-1 (LoadGen's uint64)")
]
DurationMs = Annotated[
    int, Field(ge=0, le=MAX_DURATION_MS), Accepts("milliseconds from 0 to 604800000 (7 days)")
]
QueryCount = Annotated[
    int, Field(ge=0, le=UINT64_MAX), Accepts("an integer from 0 to 2**64-1 (LoadGen's uint64)")
]
LatencyNs = Annotated[
    int, Field(ge=1, le=UINT64_MAX), Accepts("nanoseconds from 1 to 2**64-1 (LoadGen's uint64)")
]
Qps = Annotated[float, Field(gt=0, le=MAX_QPS), Accepts("a number > 0 and <= 1e9")]
SampleCount = Annotated[int, Field(ge=1, le=MAX_SAMPLES), Accepts("an integer from 1 to 10000000")]
Threads = Annotated[
    int,
    Field(ge=0, le=MAX_THREADS),
    Accepts("an integer from 0 (the library chooses) to 1024"),
]

ScenarioName = Literal["SingleStream", "MultiStream", "Server", "Offline"]
ModeName = Literal["performance", "accuracy"]
SCENARIOS: tuple[ScenarioName, ...] = ("SingleStream", "MultiStream", "Server", "Offline")


class SpecModel(BaseModel):
    """A part of the spec: unknown fields are errors, values are immutable and strictly typed.

    Strict: `"450"` and `true` are not integers; a JSON integer is still a valid float.
    No float may be infinite or NaN (Python's JSON reader accepts `Infinity` and `NaN`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# --- artifacts -----------------------------------------------------------------------------


def _unsafe_member(name: str) -> bool:
    """A folder's member name that is not a plain relative path below it."""
    parts = name.split("/")
    return (
        not name or name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts)
    )


class Artifact(SpecModel):
    """A file the experiment needs, fixed by its sha256 like a Nix fixed-output path.

    Exactly one of `url`, `path` or `recipe` says where its bytes come from.
    """

    url: str | None = Field(None, description="http(s):// or file:// URL to download")
    path: LocalPath | None = Field(None, description="a local file, relative to the spec's folder")
    recipe: str | None = Field(None, description="a registered deterministic generator")
    params: dict[
        str,
        Annotated[
            int | float | str | bool, Accepts("an integer, a finite number, a string or a boolean")
        ],
    ] = Field(default_factory=dict, description="the recipe's parameters")
    sha256: Sha256
    files: dict[str, Sha256] | None = Field(
        None,
        description="a folder (a served model's weights, config and tokenizer): the sha256 of "
        "each of its files by relative path; `sha256` is then the folder's digest (sha256 of "
        "the sorted `path<TAB>sha256` lines), and a changed file is named",
    )
    size_bytes: NonNegInt | None = None
    media_type: str | None = Field(None, description="e.g. application/onnx, application/x-npz")
    description: str | None = None

    @property
    def is_folder(self) -> bool:
        return self.files is not None

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
        if self.files is not None:
            if self.url is not None:
                raise ValueError("a folder comes from a path or a recipe, not a url")
            bad = [n for n in self.files if _unsafe_member(n)]
            if bad or not self.files:
                raise ValueError(
                    f"files: relative paths inside the folder, at least one (got {bad or 'none'})"
                )
            if tree_digest(self.files) != self.sha256:
                raise ValueError(
                    "sha256 must be the folder's digest of `files` "
                    f"({tree_digest(self.files)}): a file's hash was edited, or the digest"
                )
        return self


# --- workload ------------------------------------------------------------------------------


class LoadGenSettings(SpecModel):
    """TestSettings of one LoadGen scenario; names and units follow LoadGen's own."""

    min_duration_ms: DurationMs = 10_000
    max_duration_ms: Annotated[
        int,
        Field(ge=0, le=MAX_DURATION_MS),
        Accepts("0 (no limit) or milliseconds up to 604800000 (7 days)"),
    ] = 0
    min_query_count: QueryCount = 100
    max_query_count: Annotated[
        int, Field(ge=0, le=UINT64_MAX), Accepts("0 (no limit) or an integer up to 2**64-1")
    ] = 0
    single_stream_expected_latency_ns: LatencyNs | None = Field(
        None, description="SingleStream: the expected latency of one query, ns (sizes the run)"
    )
    single_stream_target_latency_percentile: Fraction | None = Field(
        None, description="SingleStream: the percentile reported as the metric (0.9)"
    )
    multi_stream_expected_latency_ns: LatencyNs | None = Field(
        None, description="MultiStream: the expected latency of one query, ns (sizes the run)"
    )
    multi_stream_samples_per_query: SampleCount | None = Field(
        None, description="MultiStream: the samples of one query (8 in MLPerf)"
    )
    multi_stream_target_latency_percentile: Fraction | None = Field(
        None, description="MultiStream: the percentile reported as the metric (0.99)"
    )
    server_target_qps: Qps | None = Field(
        None, description="Server: the rate queries arrive at (Poisson), queries per second"
    )
    server_target_latency_ns: LatencyNs | None = Field(
        None, description="Server: the latency bound a valid run keeps, ns"
    )
    server_target_latency_percentile: Fraction | None = Field(
        None, description="Server: the share of queries that must meet the bound (0.99)"
    )
    server_coalesce_queries: bool | None = Field(
        None, description="Server: LoadGen may issue queries that arrived together as one"
    )
    server_max_async_queries: (
        Annotated[
            int, Field(ge=0, le=UINT64_MAX), Accepts("0 (no limit) or an integer up to 2**64-1")
        ]
        | None
    ) = Field(None, description="Server: queries in flight at most (0: no limit)")
    offline_expected_qps: Qps | None = Field(
        None,
        description="Offline: the expected samples per second; the one query holds 1.1 x "
        "min_duration x this many samples (a replay sizes it for a faster machine)",
    )
    use_token_latencies: bool | None = Field(
        None,
        description="LLM runs: LoadGen measures time to first token (TTFT) and time per "
        "output token (TPOT); a Server run is then bounded by ttft_latency and tpot_latency",
    )
    ttft_latency: LatencyNs | None = Field(None, description="Server's TTFT bound, ns")
    tpot_latency: LatencyNs | None = Field(None, description="Server's TPOT bound, ns")

    def changed(self, changes: Mapping[str, float]) -> LoadGenSettings:
        """These settings with `changes` (what this machine needed: an Offline query sized for
        it), checked again."""
        if not changes:
            return self
        return type(self).model_validate(self.model_dump(exclude_none=True) | dict(changes))

    def as_set(self) -> dict[str, Any]:
        """The fields set, by LoadGen's names (what its TestSettings is given, and a record
        keeps)."""
        return self.model_dump(exclude_none=True)

    @model_validator(mode="after")
    def _durations(self) -> LoadGenSettings:
        if self.max_duration_ms and self.max_duration_ms < self.min_duration_ms:
            raise ValueError("max_duration_ms must be 0 (no limit) or >= min_duration_ms")
        if self.max_query_count and self.max_query_count < self.min_query_count:
            raise ValueError("max_query_count must be 0 (no limit) or >= min_query_count")
        if (self.ttft_latency or self.tpot_latency) and not self.use_token_latencies:
            raise ValueError(
                "ttft_latency and tpot_latency bound token latencies: set "
                "use_token_latencies to true with them"
            )
        return self


def optional_setting(name: str) -> Any:
    """LoadGen's setting `name` as the spec types it, optional (None: not given): for the
    models made from `LoadGenSettings`' fields (a plan's overrides, a test's recorded
    settings)."""
    info = LoadGenSettings.model_fields[name]
    annotation: Any = info.annotation
    if not info.metadata:
        return (annotation | None, None)
    return (Annotated[(annotation | None, *info.metadata)], None)


class ScenarioSpec(SpecModel):
    """One LoadGen scenario to run, with its settings."""

    scenario: ScenarioName = Field(description="LoadGen's scenario")
    settings: LoadGenSettings = Field(default_factory=LoadGenSettings)

    @model_validator(mode="after")
    def _token_bounds(self) -> ScenarioSpec:
        st = self.settings
        if self.scenario == "Server" and st.use_token_latencies:
            missing = [k for k in ("ttft_latency", "tpot_latency") if getattr(st, k) is None]
            if missing:
                raise ValueError(
                    f"a Server run with use_token_latencies is bounded by its token latencies: "
                    f"give settings.{' and settings.'.join(missing)} (ns)"
                )
        return self


class Seeds(SpecModel):
    """LoadGen's RNG seeds, set explicitly so a replay draws the same samples."""

    qsl_rng_seed: Seed
    sample_index_rng_seed: Seed
    schedule_rng_seed: Seed
    accuracy_log_rng_seed: Seed = 0


class AccuracySpec(SpecModel):
    """How accuracy mode is scored."""

    metric: Literal["top1", "agreement", "rouge"] = Field(
        description="top1: against the data set's labels; "
        "agreement: against the reference predictions in `original` (a generation task: the "
        "share of prompts whose generated tokens equal the original's exactly); "
        "rouge (a generation task): the generated texts against the data set's reference "
        "texts, rouge1 (0 to 100) as MLPerf's LLM accuracy scripts score it"
    )
    class_offset: Annotated[
        int,
        Field(ge=-MAX_CLASS_OFFSET, le=MAX_CLASS_OFFSET),
        Accepts("-1000000 to 1000000", about="added to predictions before comparing (MLPerf: -1)"),
    ] = 0
    labels_key: str = Field("labels", description="array of labels inside the dataset artifact")
    references_key: str = Field(
        "reference_texts",
        description="rouge: array of reference texts (strings, one per prompt) in the data set",
    )
    vocabulary_key: str = Field(
        "vocabulary",
        description="rouge: array of token pieces (strings, one per token id) in the data set "
        "that decodes the generated tokens; SentencePiece's U+2581 reads as a space",
    )


class GenerationSpec(SpecModel):
    """A generative workload (`task: "generation"`): prompts of token ids, decoded greedily."""

    max_new_tokens: Annotated[
        int,
        Field(ge=1, le=MAX_NEW_TOKENS),
        Accepts("1 to 65536", about="tokens generated per prompt (with eos_token_id: at most)"),
    ]
    decoding: Literal["greedy"] = Field(
        "greedy", description="greedy (argmax): deterministic, so the tokens can be compared"
    )
    lengths_key: str = Field(
        "input_lengths",
        description="array of prompt lengths in the data set; `inputs_key` names the token ids "
        "(int, N x max length, padded)",
    )
    eos_token_id: Annotated[int, Field(ge=0)] | None = Field(
        None, description="a token that ends a generation early; null: always max_new_tokens"
    )


#: the scenarios of a generation task: MLPerf's LLM benchmarks run Offline and Server (an
#: "interactive" benchmark is Server under tighter TTFT/TPOT bounds, as LoadGen 6.0.17 has it)
GENERATION_SCENARIOS: Final = ("Offline", "Server")


def _generation_problems(wl: Workload) -> list[str]:
    """Why a workload's task and scenarios do not go together (empty: they do)."""
    if wl.task == "classification":
        found = ['generation: only for task "generation"; remove it'] if wl.generation else []
        if wl.accuracy.metric == "rouge":
            found.append('accuracy.metric: "rouge" scores generated texts (task "generation")')
        return found
    problems = []
    if wl.accuracy.metric not in ("agreement", "rouge"):
        problems.append(
            'accuracy.metric: a generation is scored by "agreement" (its tokens against the '
            "original's, exactly) or by \"rouge\" (its texts against the data set's references)"
        )
    if wl.generation is None:
        problems.append('generation: task "generation" needs it (max_new_tokens, ...)')
    for i, sc in enumerate(wl.scenarios):
        at = f"scenarios[{i}]"
        if sc.scenario not in GENERATION_SCENARIOS:
            problems.append(
                f"{at}.scenario: {sc.scenario} is not a scenario of a generation task: use "
                f"{' or '.join(GENERATION_SCENARIOS)} (MLPerf's LLM scenarios)"
            )
        elif not sc.settings.use_token_latencies:
            bounds = " with ttft_latency and tpot_latency (ns)" if sc.scenario == "Server" else ""
            problems.append(
                f"{at}.settings.use_token_latencies: a generation task streams tokens to "
                f"LoadGen, which measures them only with use_token_latencies true: set it{bounds}"
            )
    return problems


def _both_modes() -> list[ModeName]:
    return ["performance", "accuracy"]


class Workload(SpecModel):
    """What LoadGen runs: the model on the data set, scenario by scenario."""

    task: Literal["classification", "generation"] = Field(
        "classification",
        description="classification (a class per sample) or generation (tokens per prompt, "
        "streamed to LoadGen with their latencies)",
    )
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
    total_sample_count: SampleCount
    performance_sample_count: Annotated[
        int,
        Field(ge=1, le=MAX_SAMPLES),
        Accepts("1 to 10000000, and <= total_sample_count", about="samples LoadGen keeps loaded"),
    ]
    batch_size: Annotated[
        int,
        Field(ge=1, le=MAX_BATCH),
        Accepts("1 to 4096", about="largest batch the SUT runs (Offline, Server)"),
    ] = 1
    scenarios: Annotated[list[ScenarioSpec], Field(min_length=1)] = Field(
        description="the LoadGen scenarios to run, each with its TestSettings"
    )
    modes: Annotated[list[ModeName], Field(min_length=1)] = Field(
        default_factory=_both_modes,
        description="performance (speed) and accuracy (LoadGen's accuracy log, scored)",
    )
    seeds: Seeds
    accuracy: AccuracySpec
    generation: GenerationSpec | None = Field(
        None, description='task "generation" only: decoding and the prompts\' layout'
    )

    @model_validator(mode="after")
    def _counts(self) -> Workload:
        if self.performance_sample_count > self.total_sample_count:
            raise ValueError("performance_sample_count must be <= total_sample_count")
        names = [s.scenario for s in self.scenarios]
        if len(set(names)) != len(names):
            raise ValueError(f"a scenario is listed twice: {names}")
        problems = _generation_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


# --- environment ---------------------------------------------------------------------------


class LockFile(SpecModel):
    """A lock file under lockfiles/<name>/, pinned by the hash of its bytes."""

    path: LocalPath = Field(description="relative to the spec's folder")
    sha256: Sha256


# --- observations and checks ---------------------------------------------------------------


class Hardware(SpecModel):
    """The fingerprint of the machine the original ran on (as `repro env show` reads it)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    cpu_model: str | None = Field(None, description="the CPU's model name")
    cpu_vendor: str | None = Field(None, description="the CPU's vendor")
    logical_cpus: int | None = Field(None, description="logical CPUs (hardware threads)")
    physical_cores: int | None = Field(None, description="physical cores")
    sockets: int | None = Field(None, description="CPU sockets")
    memory_bytes: int | None = Field(None, description="main memory, bytes")
    machine: str | None = Field(None, description="the architecture (x86_64, aarch64)")
    cpu_flags: list[str] = Field(
        default_factory=list, description="the CPU's instruction-set flags that change results"
    )


class ReferencePredictions(SpecModel):
    """Top-1 predictions of the original, in data-set order, for agreement checks; for a
    generation task, the sha256 of each prompt's generated tokens (int32 little-endian, as
    LoadGen's accuracy log holds them) instead."""

    top1: list[int] = Field(
        default_factory=list, description="classification: each sample's top-1 class"
    )
    outputs_sha256: list[Sha256] = Field(
        default_factory=list,
        description="generation: per prompt in data-set order, sha256 of its generated tokens",
    )
    sha256: Sha256 | None = Field(None, description="sha256 of the predictions as recorded")


class Original(SpecModel):
    """Where the original results are and their headline metrics."""

    path: LocalPath = Field(
        description="run directory of the original, relative to the spec's folder"
    )
    metrics: dict[
        str,
        dict[
            str,
            Annotated[
                float | str | bool | None, Accepts("a finite number, a string, a boolean or null")
            ],
        ],
    ] = Field(default_factory=dict, description="scenario -> metric -> value")
    reference_predictions: ReferencePredictions | None = None


class Tolerances(SpecModel):
    """What counts as reproduced; the defaults follow MLPerf practice."""

    accuracy_ratio: Annotated[
        float,
        Field(gt=0, le=1),
        Accepts("> 0 and <= 1", about="replay accuracy >= this x original (MLPerf closed: 0.99)"),
    ] = 0.99
    throughput_rel: Annotated[
        float, Field(gt=0, le=1), Accepts("> 0 and <= 1", about="+/- relative")
    ] = 0.05
    latency_rel: Annotated[
        float, Field(gt=0, le=1), Accepts("> 0 and <= 1", about="+/- relative, as TEST01 allows")
    ] = 0.10
    confidence: Annotated[
        float,
        Field(gt=0.5, lt=1),
        Accepts("between 0.5 and 1, both excluded", about="confidence of the statistical tests"),
    ] = 0.95
    #: later (issue 36): unset, the id of every earlier spec is unchanged (`spec_id`) and
    #: ENERGY_REL_DEFAULT applies
    energy_rel: (
        Annotated[
            float,
            Field(gt=0, le=1),
            Accepts(
                "> 0 and <= 1",
                about="+/- relative, for energy per sample or query (NVML's counter on a GPU); "
                "unset: 0.10",
            ),
        ]
        | None
    ) = Field(
        None,
        description="+/- relative, for energy per sample or query (NVML's counter on a GPU); "
        "unset: 0.10",
    )

    @property
    def energy(self) -> float:
        """The tolerance of energy per sample or query: `energy_rel`, else ENERGY_REL_DEFAULT."""
        return self.energy_rel if self.energy_rel is not None else ENERGY_REL_DEFAULT


#: energy per sample is the test's power over its throughput: it moves with both, and with the
#: GPU's temperature, so its default tolerance is the latency's (MLPerf's power rules check
#: the measurement, not a reproduction bound; this is repro's choice)
ENERGY_REL_DEFAULT = 0.10
