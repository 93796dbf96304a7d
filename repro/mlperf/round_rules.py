"""What each round's MLPerf Inference submission checker asks of a tree, as facts repro keeps.

Read from the rounds' checkers (mlcommons/inference `tools/submission`: `submission_checker/
constants.py` and `submission_checker_old.py` at b66003e, the pinned copy in
`../shared/tools/mlperf-submission-checker/`), written down here as data, not taken as code:

- the seeds (`MODEL_CONFIG[round]["seeds"]`): each round has its own, and LoadGen's compiled
  mlperf.conf holds one round's only (LoadGen 6.0.17's are v6.1's, not v6.0's);
- the layout: up to v5.1 the measurements (`measurements/<system>/<benchmark>/<scenario>/`)
  and the compliance tests (`compliance/...`) sit beside `results/`, and the code in `code/`;
  from v6.0 both sit inside each result folder (`measurements.json`, `TEST01/`) and the code in
  `src/` (`MEASUREMENTS_PATH`, `TEST01_PERF_PATH`, `SRC_PATH`);
- the benchmarks each round knows (`models`), its own aliases (`model_mapping`, resnet50 ->
  resnet), and for the benchmark repro runs (image classification, `resnet`) its numbers:
  performance sample count, data set size, accuracy target, Server latency bound, minimum
  queries, the closed Offline query size, compliance tests, the scenarios per system type;
- the system description's fields (`SYSTEM_DESC_REQUIRED_FIELDS`, and those that must not be
  empty, `SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS`) and the measurements JSON's.

A round is named `vX.Y`; the LoadGen of release X.Y is that round's (6.0.17 -> v6.0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import metadata
from types import MappingProxyType
from typing import Final

from repro.errors import UsageError

Scenario = str
SEED_KEYS: Final = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
SCENARIOS: Final = ("SingleStream", "MultiStream", "Server", "Offline")
#: the scenarios whose results LoadGen's early stopping bounds (the checkers' uses_early_stopping)
EARLY_STOPPING: Final = frozenset({"SingleStream", "MultiStream", "Server"})
SYSTEM_TYPES: Final = ("datacenter", "edge", "datacenter,edge", "edge,datacenter")
AVAILABILITIES: Final = ("available", "preview", "rdi")
DIVISIONS: Final = ("closed", "open", "network")
#: every round's minimum duration of a performance run (TEST_DURATION_MS)
MIN_DURATION_MS: Final = 600_000
#: the largest accuracy log a published tree may keep (MAX_ACCURACY_LOG_SIZE) and the size of
#: the head and tail truncate_accuracy_log.py keeps of a longer one, joined by its marker
MAX_ACCURACY_LOG: Final = 10 * 1024
TRUNCATE_BYTES: Final = 4096
TRUNCATE_MARKER: Final = b"\n\n...\n\n"
#: a file the single-file checker refuses to find in a tree (FILE_SIZE_LIMIT_MB)
MAX_FILE_BYTES: Final = 50 * 1024 * 1024

#: the system description's fields (every round from v5.0 to v6.1 asks the same)
SYSTEM_FIELDS: Final = (
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
)
#: the fields whose answer must not be empty (the checkers read `not value`: 0 is empty too)
MEANINGFUL_FIELDS: Final = frozenset(
    {
        "division",
        "submitter",
        "system_type",
        "status",
        "system_name",
        "number_of_nodes",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_processor_core_count",
        "host_memory_capacity",
        "host_memory_configuration",
        "host_storage_capacity",
        "host_storage_type",
        "host_networking",
        "host_network_card_count",
        "host_networking_topology",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_host_interconnect",
        "accelerator_memory_configuration",
        "accelerator_interconnect",
        "cooling",
        "framework",
        "operating_system",
        "other_software_stack",
    }
)
#: the measurements JSON's fields (SYSTEM_IMP_REQUIRED_FILES), none of them empty
MEASUREMENT_FIELDS: Final = (
    "input_data_types",
    "retraining",
    "starting_weights_filename",
    "weight_data_types",
    "weight_transformations",
)
#: what a measurements folder must hold besides its JSON (REQUIRED_MEASURE_FILES), not empty
MEASUREMENT_FILES: Final = ("user.conf", "README.md")
#: the files of an accuracy folder (REQUIRED_ACC_FILES) and of a performance run
ACCURACY_FILES: Final = (
    "mlperf_log_summary.txt",
    "mlperf_log_detail.txt",
    "accuracy.txt",
    "mlperf_log_accuracy.json",
)
PERFORMANCE_FILES: Final = ("mlperf_log_summary.txt", "mlperf_log_detail.txt")
#: files a folder may hold besides those (files_diff's optional ones)
OPTIONAL_FILES: Final = frozenset({"mlperf_log_trace.json", "results.json", ".gitkeep"})
#: the spec's task -> the MLPerf benchmarks (the checkers' names) that perform it, the one to
#: take first first (a generation: the smallest LLM benchmark of the round)
TASK_BENCHMARKS: Final = MappingProxyType(
    {"classification": ("resnet",), "generation": ("llama3.1-8b", "gptj-99", "llama2-70b-99")}
)


@dataclass(frozen=True)
class BenchmarkRules:
    """The numbers a round's checker holds for one benchmark (its own name: `resnet`)."""

    name: str
    #: the name mlperf.conf and published trees give its folder (resnet50)
    folder: str
    performance_sample_count: int
    dataset_size: int
    #: the accuracy.txt pattern's name (ACC_PATTERN) and the closed division's lower bound (%)
    accuracy_metric: str
    accuracy_target: float
    #: Server: the largest target latency early stopping may be given (ns)
    server_latency_ns: int | None
    #: the minimum query count of the scenarios early stopping does not bound
    min_queries: MappingProxyType[Scenario, int]
    #: the closed division's smallest Offline query (OFFLINE_MIN_SPQ_SINCE_V4)
    offline_min_samples: int
    compliance_tests: tuple[str, ...]
    #: the scenarios a system of each type must submit (None: the type does not run it)
    required: MappingProxyType[str, tuple[Scenario, ...] | None]
    #: mlperf.conf's settings of a full-length run (what `--full-length` sets)
    full_length_queries: MappingProxyType[Scenario, int]


@dataclass(frozen=True)
class Layout:
    """Where a round's tree keeps what a result folder does not."""

    #: v6.0+: `results/<system>/<benchmark>/<scenario>/measurements.json` beside user.conf
    measurements_in_results: bool
    #: v6.0+: `results/<system>/<benchmark>/<scenario>/TEST01/`
    compliance_in_results: bool
    #: the folder of the code (SRC_PATH): `code` up to v5.1, `src` from v6.0
    code: str


@dataclass(frozen=True)
class RoundRules:
    """One round's rules for a submission tree."""

    name: str
    seeds: MappingProxyType[str, int]
    models: frozenset[str]
    aliases: MappingProxyType[str, str]
    layout: Layout
    #: the single-file checker asks closed submitters for calibration.md (not of v5.0)
    calibration: bool
    benchmarks: MappingProxyType[str, BenchmarkRules] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @property
    def loadgen(self) -> tuple[int, int]:
        """The LoadGen release of the round (v6.0 -> (6, 0))."""
        number = round_number(self.name)
        assert number is not None
        return number


def round_number(name: str) -> tuple[int, int] | None:
    """`v6.0` (or `6.0`) -> (6, 0); None for what is not a round's name."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)", name.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _resnet(*, datacenter: tuple[Scenario, ...] | None) -> BenchmarkRules:
    return BenchmarkRules(
        name="resnet",
        folder="resnet50",
        performance_sample_count=1024,
        dataset_size=50_000,
        accuracy_metric="acc",
        accuracy_target=76.46 * 0.99,
        server_latency_ns=15_000_000,
        min_queries=MappingProxyType(
            {"SingleStream": 1024, "MultiStream": 270336, "Server": 270336, "Offline": 1}
        ),
        offline_min_samples=24_576,
        compliance_tests=("TEST01", "TEST04"),
        required=MappingProxyType(
            {
                "datacenter": datacenter,
                "edge": ("SingleStream", "MultiStream", "Offline"),
                "datacenter,edge": ("SingleStream", "MultiStream", "Offline", "Server"),
                "edge,datacenter": ("SingleStream", "MultiStream", "Offline", "Server"),
            }
        ),
        full_length_queries=MappingProxyType({"MultiStream": 662, "Offline": 24_576}),
    )


_ALIASES_50 = {
    "ssd-resnet34": "retinanet",
    "mobilenet": "resnet",
    "resnet50": "resnet",
    "llama3_1-405b": "llama3.1-405b",
}
_ALIASES = {**_ALIASES_50, "llama3_1-8b": "llama3.1-8b", "llama3_1-8b-edge": "llama3.1-8b-edge"}
_MODELS_50 = (
    "resnet",
    "retinanet",
    "bert-99",
    "bert-99.9",
    "dlrm-v2-99",
    "dlrm-v2-99.9",
    "3d-unet-99",
    "3d-unet-99.9",
    "gptj-99",
    "gptj-99.9",
    "llama2-70b-99",
    "llama2-70b-99.9",
    "llama2-70b-interactive-99",
    "llama2-70b-interactive-99.9",
    "stable-diffusion-xl",
    "mixtral-8x7b",
    "llama3.1-405b",
    "rgat",
    "pointpainting",
)
_MODELS_51 = (
    "resnet",
    "retinanet",
    "bert-99",
    "bert-99.9",
    "dlrm-v2-99",
    "dlrm-v2-99.9",
    "3d-unet-99",
    "3d-unet-99.9",
    "llama3.1-8b",
    "llama3.1-8b-edge",
    "llama2-70b-99",
    "llama2-70b-99.9",
    "stable-diffusion-xl",
    "mixtral-8x7b",
    "llama3.1-405b",
    "rgat",
    "pointpainting",
    "deepseek-r1",
    "whisper",
)
_MODELS_60 = (
    "resnet",
    "retinanet",
    "bert-99",
    "bert-99.9",
    "3d-unet-99",
    "3d-unet-99.9",
    "llama3.1-8b",
    "llama3.1-8b-edge",
    "llama2-70b-99",
    "llama2-70b-99.9",
    "stable-diffusion-xl",
    "mixtral-8x7b",
    "llama3.1-405b",
    "rgat",
    "pointpainting",
    "deepseek-r1",
    "whisper",
    "gpt-oss-120b",
    "wan-2.2-t2v-a14b",
    "qwen3-vl-235b-a22b",
    "dlrm-v3",
    "yolo-95",
    "yolo-99",
)
_MODELS_61 = (
    "resnet",
    "bert-99",
    "bert-99.9",
    "3d-unet-99",
    "3d-unet-99.9",
    "llama3.1-8b",
    "llama3.1-8b-edge",
    "llama2-70b-99.9",
    "stable-diffusion-xl",
    "rgat",
    "deepseek-r1",
    "whisper",
    "gpt-oss-120b",
    "wan-2.2-t2v-a14b",
    "qwen3-vl-235b-a22b",
    "qwen3.6-27b",
    "dlrm-v3",
    "yolo-95",
    "yolo-99",
    "e2e-rag-qna",
    "e2e-rag-db",
)
_SEPARATE = Layout(measurements_in_results=False, compliance_in_results=False, code="code")
_INSIDE = Layout(measurements_in_results=True, compliance_in_results=True, code="src")


def _round(
    name: str,
    seeds: tuple[int, int, int],
    models: tuple[str, ...],
    aliases: dict[str, str],
    layout: Layout,
    *,
    datacenter_resnet: tuple[Scenario, ...] | None = None,
) -> RoundRules:
    return RoundRules(
        name=name,
        seeds=MappingProxyType(dict(zip(SEED_KEYS, seeds, strict=True))),
        models=frozenset(models),
        aliases=MappingProxyType(aliases),
        layout=layout,
        calibration=name != "v5.0",
        benchmarks=MappingProxyType({"resnet": _resnet(datacenter=datacenter_resnet)}),
    )


ROUNDS: Final = MappingProxyType(
    {
        r.name: r
        for r in (
            _round(
                "v5.0",
                (6023615788873153749, 15036839855038426416, 9933818062894767841),
                _MODELS_50,
                _ALIASES_50,
                _SEPARATE,
                datacenter_resnet=("Server", "Offline"),
            ),
            _round(
                "v5.1",
                (1780908523862526354, 14771362308971278857, 18209322760996052031),
                _MODELS_51,
                _ALIASES,
                _SEPARATE,
            ),
            _round(
                "v6.0",
                (2465351861681999779, 14276810075590677512, 3936089224930324775),
                _MODELS_60,
                _ALIASES,
                _INSIDE,
            ),
            _round(
                "v6.1",
                (2085463073848966840, 2747215439041700203, 16159082839903944936),
                _MODELS_61,
                _ALIASES,
                _INSIDE,
            ),
        )
    }
)


def round_rules(name: str) -> RoundRules:
    """The rules of round `name` (v5.0 ... v6.1)."""
    number = round_number(name)
    key = f"v{number[0]}.{number[1]}" if number else name
    if key not in ROUNDS:
        raise UsageError(
            f"--round {name}: repro knows the submission rules of rounds {sorted(ROUNDS)}",
            hint="give one of them (the round whose checker will read the tree)",
        )
    return ROUNDS[key]


def round_of_loadgen(version: str) -> str | None:
    """The round a LoadGen release belongs to: '6.0.17 @ d6147c7eb7' -> 'v6.0'."""
    m = re.match(r"\s*(\d+)\.(\d+)", version)
    return f"v{m.group(1)}.{m.group(2)}" if m else None


def installed_loadgen() -> str | None:
    """The version of the LoadGen installed beside repro (None: not installed)."""
    try:
        return metadata.version("mlcommons-loadgen")
    except metadata.PackageNotFoundError:
        return None


def default_round() -> tuple[str, str]:
    """The round of the installed LoadGen, and the sentence that says so."""
    version = installed_loadgen()
    name = round_of_loadgen(version) if version else None
    if name is None or name not in ROUNDS:
        raise UsageError(
            f"the installed LoadGen ({version or 'none'}) is of no round repro knows "
            f"({sorted(ROUNDS)}): give --round",
            hint="--round v6.0, for instance",
        )
    return name, f"round {name} (that of the installed LoadGen {version}; --round to choose)"


def checker_model(rules: RoundRules, folder: str, mapping: dict[str, str]) -> str:
    """The benchmark a result folder stands for, as the round's checker resolves it: its own
    name, its alias, the submitter's model_mapping.json (open), then the checkers' guess kept
    for old trees (a name holding resnet50, mobilenet or efficientnet is resnet). A name none
    of these knows comes back as it is (and is no benchmark of the round)."""
    if folder in rules.models:
        return folder
    if folder in rules.aliases:
        return rules.aliases[folder]
    if folder in mapping:
        return mapping[folder]
    guessed = folder
    if any(part in folder for part in ("mobilenet", "efficientnet", "resnet50")):
        guessed = "resnet"
    elif "bert-99.9" in folder:
        guessed = "bert-99.9"
    elif "bert-99" in folder:
        guessed = "bert-99"
    return rules.aliases.get(guessed, guessed)


def known_names(rules: RoundRules) -> list[str]:
    """The benchmark names a closed-division folder may take in this round, for messages."""
    return sorted(rules.models | set(rules.aliases))
