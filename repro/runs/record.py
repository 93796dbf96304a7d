"""The run record (`run.json`): what ran, where, with what settings and outcome.

Its format is versioned one step per change (`format`, `FORMATS` below: pyperf's practice);
each step adds optional fields, so a record of an earlier format loads as it is, and a record
of a later format than this repro reads is refused with the version that wrote it (never read
as if it were of this one). Records written before `format` existed get the format their fields
show (`inferred_format`).

Format history as it grew (the `schema` field, then the steps):
# repro.run/v1 - first version.
# repro.run/v2 - `spec` (the spec as replayed) and `tolerances` (its effective tolerances), so
#                a report judges a run by the tolerances it ran under, wherever it is read;
#                `files_sha256`: the digest of every file of the run (LoadGen's logs included),
#                checked when the run is compared; machine probes around every test
#                (`probe_before`/`probe_after`, `probes_version`); `interleave` and `stopping`;
#                later, optional: `profiles` (layer profiles), `dispatch` and `parts` (a run
#                dispatched as parts, `--on`), and a test's `part`; `stopping.decided_after`
#                and a probe's `others_cpu_frac` (probes are free-form dicts: older readers
#                ignore them). A reader older than the typed fields refuses such a run (its
#                models forbid unknown fields). Later still: `record_sha256`, the digest of
#                the record as written (an edited record is refused when read); a test's
#                `changed_settings` (an Offline query sized for a faster machine). Later: a
#                test's `cpu` (the worker's CPU time over LoadGen's run) and `cpus` (the
#                CPUs it was pinned to); `stopping.rule`, `looks` and `look_confidence`
#                (the sequential rule the rounds ran under). Then `format` (`FORMATS`).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import SpecError
from repro.jsonio import canonical_json
from repro.privacy import redact
from repro.runs.facts import (
    AccuracyFacts,
    BackendFacts,
    EnvironmentFacts,
    Facts,
    Fingerprint,
    TestMetrics,
    TestSettings,
)
from repro.spec import plugins
from repro.spec.io import format_validation_error
from repro.spec.models import ExperimentSpec
from repro.spec.types import ModeName, ScenarioName, Tolerances
from repro.stats.verdicts import RunStatus, TestStatus

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

RUN_SCHEMA: Final = "repro.run/v2"
RUN_SCHEMAS: Final = ("repro.run/v1", RUN_SCHEMA)
#: the record's format, one step per change: what each step added (every field optional)
FORMATS: Final[dict[int, str]] = {
    1: "repro.run/v1",
    2: "repro.run/v2: the spec as replayed, its tolerances, every file's digest, probes "
    "around every test, interleave and stopping",
    3: "profiles; dispatch and parts (--on) and a test's part; stopping.decided_after",
    4: "record_sha256: the record's own digest (an edited record is refused)",
    5: "a test's changed_settings (an Offline query sized for the machine)",
    6: "a test's cpu (the worker's CPU time) and cpus (where it was pinned); stopping.rule, "
    "looks and look_confidence; format",
    7: "server: a served experiment's server (its engine, version, flags, model files, what it "
    "said of itself, each start) and the client's settings",
}
FORMAT: Final = max(FORMATS)
#: a part of a dispatched run: its run's status, or why it has none that finished
PartStatus = Literal["complete", "invalid", "failed", "interrupted", "missing"]
_F = TypeVar("_F", bound=Facts)


def record_digest(data: dict[str, Any]) -> str:
    """The digest a record carries: sha256 of its canonical JSON without `record_sha256`."""
    body = {k: v for k, v in data.items() if k != "record_sha256"}
    return hashlib.sha256(canonical_json(body).encode("utf-8", "surrogatepass")).hexdigest()


class SettingChange(BaseModel):
    """A LoadGen setting this machine needed other than the spec's, and why."""

    model_config = ConfigDict(extra="forbid")

    spec: float
    used: float
    why: str


class ThreadTime(BaseModel):
    """One thread's CPU time over the test, and its name (the kernel's comm)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    cpu_s: float


class CpuTime(BaseModel):
    """The worker's CPU time over LoadGen's run (`repro.harness.cputime`)."""

    model_config = ConfigDict(extra="forbid")
    process_s: float = Field(description="user + system seconds of the whole worker process")
    user_s: float
    system_s: float
    wall_s: float = Field(description="wall seconds of the same span")
    cpu_per_wall: float | None = Field(None, description="process CPU seconds per wall second")
    samples_per_cpu_second: float | None = None
    threads: list[ThreadTime] = Field(
        default_factory=list, description="the busiest threads, busiest first"
    )


class GpuEnergy(BaseModel):
    """The GPU's energy over one LoadGen test, from NVML's total-energy counter read at its
    start and end (`repro.machine.gpu.EnergyMeter`), and the power sampled meanwhile."""

    model_config = ConfigDict(extra="allow")
    device: str | None = Field(None, description="cuda:N")
    source: str | None = Field(None, description="the NVML call read")
    joules: float | None = None
    seconds: float | None = None
    average_watts: float | None = None
    samples: int | None = None
    joules_per_sample: float | None = None
    joules_per_query: float | None = Field(None, description="SingleStream and MultiStream")
    power_mean_w: float | None = Field(None, description="the sampled power's mean")
    power_max_w: float | None = None
    power_samples: int | None = None
    power_hz: float | None = None


class TestRecord(BaseModel):
    """One LoadGen test of the run: a scenario in one mode (one repeat of it)."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    scenario: ScenarioName
    mode: ModeName
    repeat: int = 1
    dir: str
    status: TestStatus
    metrics: TestMetrics = Field(
        default_factory=TestMetrics, description="LoadGen's figures, typed (`TestMetrics`)"
    )
    accuracy: dict[str, Any] | None = None
    settings: TestSettings = Field(
        default_factory=TestSettings,
        description="the LoadGen settings it ran with, typed as the spec's (`TestSettings`)",
    )
    backend: dict[str, Any] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    peak_rss_bytes: int | None = Field(None, description="the worker's peak resident memory")
    latencies_file: str | None = None
    error: str | None = None
    probe_before: dict[str, Any] | None = Field(None, description="machine probe before (v2)")
    probe_after: dict[str, Any] | None = Field(None, description="machine probe after (v2)")
    part: int | None = Field(None, description="the part of a dispatched run it ran in")
    energy: GpuEnergy | None = Field(
        None,
        description="the GPU's energy over the LoadGen test (NVML's total-energy counter at its "
        "start and end): joules, seconds, average_watts, joules_per_sample; absent without "
        "NVML or on the CPU, never zero (v2, later)",
    )
    changed_settings: dict[str, SettingChange] = Field(
        default_factory=dict,
        description="LoadGen settings this machine needed other than `settings` (the spec's), "
        "by name: an Offline query sized for a machine faster than the spec's "
        "offline_expected_qps, run again after LoadGen judged the first too short (later)",
    )
    cpu: CpuTime | None = Field(
        None,
        description="the worker's CPU time over LoadGen's run, per thread too, and its samples "
        "per CPU second (later)",
    )
    cpus: list[int] | None = Field(
        None, description="the CPUs the worker was pinned to (--cpus, --duet), when it was (later)"
    )

    def scored(self) -> AccuracyFacts | None:
        """The accuracy figure, typed; None when the test has none (a performance test)."""
        return None if not self.accuracy else _test_view(AccuracyFacts, self, "accuracy")

    def backend_facts(self) -> BackendFacts:
        """The backend as the worker reported it, typed by the model its plug-in declares
        (the common facts where no plug-in of this repro has its name)."""
        model: type[BackendFacts] = plugins.backend_facts(self.backend.get("name")) or BackendFacts
        return _test_view(model, self, "backend")


def _test_view(model: type[_F], test: TestRecord, field: str) -> _F:
    raw = getattr(test, field)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(
                f"the record's test {test.dir}", exc, raw, root=f"$.{field}", what=field
            ),
            hint=DAMAGED_HINT,
        ) from None


class Interleave(BaseModel):
    """How a run was interleaved with another on one machine (`--against`, a claim's sides):
    one pairing id on both runs, this side, the seed and the order of every round, and where
    the tests ran. Fields a later repro adds are kept (`extra`), as a record's digest covers
    them."""

    model_config = ConfigDict(extra="allow")
    id: str | None = Field(None, description="the pairing: the same on both sides")
    side: str | None = Field(None, description="a: the replay (a claim's candidate), b: the other")
    seed: int | None = Field(None, description="the seed of the rounds' random order")
    rounds: int | None = None
    orders: list[list[str]] = Field(default_factory=list, description="each round's order")
    placement: dict[str, Any] | None = Field(
        None, description="where the tests ran (`repro.runs.placement.Placement`)"
    )
    claim: str | None = Field(None, description="the claim whose sides they are")


class ServerStart(BaseModel):
    """One start of a served experiment's server."""

    model_config = ConfigDict(extra="allow")
    round: int = Field(description="the round it was started for (1: the first)")
    port: int | None = None
    ready_s: float | None = Field(None, description="seconds to its first healthy answer")
    log: str | None = Field(None, description="its log, relative to the run's folder")
    exit: int | None = Field(None, description="its exit status when it was stopped")


class ServerRecord(BaseModel):
    """The server a served experiment's tests ran against: what was served, by what, how."""

    model_config = ConfigDict(extra="allow")
    engine: str = Field(description="transformers-serve, vllm, sglang, or external")
    pinned: bool = Field(
        description="repro started it in the pinned environment; false: an external endpoint, "
        "whose stack this run does not pin"
    )
    version: str | None = Field(None, description="the engine's own package version")
    packages: dict[str, str] = Field(
        default_factory=dict, description="the engine's packages and their versions"
    )
    flags: dict[str, Any] = Field(default_factory=dict, description="the flags it ran with")
    model_sha256: str | None = Field(None, description="the model folder's digest")
    model_files: dict[str, str] = Field(
        default_factory=dict, description="every file of the model folder and its sha256"
    )
    url: str | None = Field(None, description="an external endpoint's URL (no credentials)")
    model_name: str | None = None
    models: dict[str, Any] = Field(
        default_factory=dict, description="what `/v1/models` answered (the server's own words)"
    )
    restart: str | None = Field(None, description="each-round or once")
    starts: list[ServerStart] = Field(default_factory=list)
    client: dict[str, Any] = Field(
        default_factory=dict, description="the client's settings (the served backend's options)"
    )


class StoppingRecord(BaseModel):
    """How the number of rounds was decided: the rule and its caps fixed in advance, the rounds
    run, why they stopped and when each scenario was decided (`repro.replay.rounds`, a claim's or a
    sweep point's rounds). A report read later judges the rounds by the rule they ran under."""

    model_config = ConfigDict(extra="allow")
    rule: str | None = Field(None, description="the sequential rule (`repro.stats.sequential`)")
    fixed: bool | None = Field(None, description="a fixed number of rounds, no early stop")
    min_rounds: int | None = None
    max_rounds: int | None = None
    max_time_s: float | None = None
    looks: list[int] = Field(default_factory=list, description="the rounds after which it looks")
    look_confidence: float | None = Field(None, description="each look's confidence")
    rounds: int | None = Field(None, description="the rounds run")
    stopped: str | None = Field(None, description="why they stopped, for a person")
    time_capped: bool | None = Field(None, description="the time cap stopped them")
    elapsed_s: float | None = None
    decided_after: dict[str, int] = Field(
        default_factory=dict, description="scenario -> the round after which it was decided"
    )


class PartRecord(BaseModel):
    """One part of a dispatched run (`parts/<k>/`): one round, on one node."""

    model_config = ConfigDict(extra="forbid")
    index: int
    dir: str
    status: PartStatus
    state: str | None = Field(None, description="the executor's last word (Slurm's job state)")
    job_id: str | None = None
    node: str | None = None
    cpu_model: str | None = None
    logical_cpus: int | None = None
    message: str | None = None


class DispatchRecord(BaseModel):
    """How a run was dispatched as parts (`--on`)."""

    model_config = ConfigDict(extra="forbid")
    executor: str = Field(description="who ran the parts (a name in the executors' registry)")
    jobs: list[str] = Field(default_factory=list, description="every submission, in order")
    plan: dict[str, Any] = Field(
        default_factory=dict, description="the plan (dispatch/plan.json), home redacted"
    )


class ProfileRecord(BaseModel):
    """A profiled pass of the run (`profile/<Scenario>/`): separate from its measured tests."""

    model_config = ConfigDict(extra="forbid")
    scenario: ScenarioName
    dir: str
    status: Literal["complete", "failed"]
    samples_requested: int
    profiler: str | None = None
    layers: int | None = None
    inferences: int | None = None
    samples: int | None = None
    overhead_rel: float | None = Field(None, description="the profiler's cost per inference")
    error: str | None = None


class RunRecord(BaseModel):
    """Everything about one replay (or the original) besides LoadGen's own files."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["repro.run/v1", "repro.run/v2"] = Field(RUN_SCHEMA, alias="schema")
    format: int = Field(
        FORMAT,
        ge=1,
        le=FORMAT,
        description="the record's format, one step per change (`repro.runs.record.FORMATS`); "
        "a record written before it existed is read with the one its fields show "
        "(`inferred_format`)",
    )
    run_id: str
    spec_name: str
    spec_id: str
    spec_path: str
    status: RunStatus
    started_utc: str
    finished_utc: str | None = None
    duration_s: float | None = None
    repro_version: str
    environment: dict[str, Any] = Field(default_factory=dict)
    fingerprint: dict[str, Any] = Field(default_factory=dict)
    overrides: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] | None = Field(None, description="the spec as replayed (v2)")
    tolerances: Tolerances | None = Field(None, description="what counts as reproduced (v2)")
    probes_version: str | None = Field(None, description="repro.probes/v1 or /v2 when probed (v2)")
    interleave: Interleave | None = Field(
        None,
        description="when run interleaved with another run (--against): the pairing id, this "
        "side (a: the replay, b: the baseline), the seed and the order of every round (v2)",
    )
    stopping: StoppingRecord | None = Field(
        None,
        description="how the number of rounds was decided (--until-decided): caps fixed in "
        "advance, rounds run, why it stopped, time to the verdict (v2); later: "
        "`decided_after`, the round after which each scenario was decided and stopped",
    )
    files_sha256: dict[str, str] = Field(
        default_factory=dict, description="relative path -> sha256 of every file of the run (v2)"
    )
    tests: list[TestRecord] = Field(default_factory=list)
    dispatch: DispatchRecord | None = Field(
        None,
        description="how the run was dispatched (--on EXECUTOR): executor, job ids, the plan "
        "with the home directory redacted (v2)",
    )
    parts: list[PartRecord] = Field(
        default_factory=list, description="the parts of a dispatched run, in order (v2)"
    )
    profiles: list[ProfileRecord] = Field(
        default_factory=list, description="layer profiles: profiled passes beside the tests (v2)"
    )
    server: ServerRecord | None = Field(
        None,
        description="a served experiment's server: its engine, version and packages, flags, "
        "model files, what it said of itself, each start; an external one, unpinned (7)",
    )
    message: str | None = None
    notes: list[str] = Field(
        default_factory=list,
        description="what reading the run found worth saying: a published result's scenario "
        "folder that holds another scenario's run, a field that could not be read",
    )
    record_sha256: str | None = Field(
        None,
        description="sha256 of the record's canonical JSON without this field, written with "
        "it: an edit of the record shows (v2, later). Not a signature: `repro attest` signs",
    )

    def dump(self) -> str:
        """run.json as written: indented, with the home directory redacted everywhere, and
        the digest of what is written."""
        data = redact(self.model_dump(mode="json", by_alias=True))
        data["record_sha256"] = record_digest(data)
        return json.dumps(data, indent=2) + "\n"

    def facts(self) -> Fingerprint:
        """The fingerprint of the machine it ran on, typed."""
        return self._view(Fingerprint, self.fingerprint, "$.fingerprint")

    def environment_facts(self) -> EnvironmentFacts:
        """The environment it ran in, typed."""
        return self._view(EnvironmentFacts, self.environment, "$.environment")

    def replayed_spec(self) -> ExperimentSpec | None:
        """The spec as replayed (`$.spec`), typed; None in a record of before it was kept."""
        # NOTE: imported here: the spec's models load the backend and environment registries

        if self.spec is None:
            return None
        try:
            return ExperimentSpec.model_validate(self.spec)
        except ValidationError as exc:
            raise SpecError(
                format_validation_error(
                    f"the record of run {self.run_id}",
                    exc,
                    self.spec,
                    root="$.spec",
                    what="embedded spec",
                ),
                hint=DAMAGED_HINT,
            ) from None

    def _view(self, model: type[_F], raw: dict[str, Any], root: str) -> _F:
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            raise SpecError(
                format_validation_error(
                    f"the record of run {self.run_id}", exc, raw, root=root, what=root[2:]
                ),
                hint=DAMAGED_HINT,
            ) from None

    def check_views(self) -> None:
        """Every typed view of the record reads (SpecError naming the field if one does not):
        a reader then never meets a record it cannot take halfway through its work."""
        self.facts()
        self.environment_facts()
        for test in self.tests:
            test.scored()
            test.backend_facts()

    def performance(self, scenario: str) -> list[TestRecord]:
        return [t for t in self.tests if t.scenario == scenario and t.mode == "performance"]

    def accuracy_test(self, scenario: str) -> TestRecord | None:
        return next(
            (t for t in self.tests if t.scenario == scenario and t.mode == "accuracy"), None
        )


def inferred_format(raw: dict[str, Any]) -> int:
    """The format of a record written before `format` existed, from its fields (the lowest
    format that holds them all)."""
    if raw.get("schema") == "repro.run/v1":
        return 1
    tests = [t for t in raw.get("tests") or [] if isinstance(t, dict)]
    found = raw.get("stopping")
    stopping: dict[str, Any] = found if isinstance(found, dict) else {}
    if raw.get("server") is not None:
        return 7
    if stopping.get("rule") is not None or any(t.get("cpu") or t.get("cpus") for t in tests):
        return 6
    if any(t.get("changed_settings") for t in tests):
        return 5
    if raw.get("record_sha256") is not None:
        return 4
    if (
        raw.get("profiles")
        or raw.get("dispatch")
        or raw.get("parts")
        or "decided_after" in stopping
        or any(t.get("part") is not None for t in tests)
    ):
        return 3
    return 2


def newer_format(raw: Any) -> str | None:
    """Why a record cannot be read by this repro when it is of a later format (or schema) than
    this repro knows; None otherwise."""
    if not isinstance(raw, dict):
        return None
    fmt, schema = raw.get("format"), raw.get("schema")
    later = (isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > FORMAT) or (
        isinstance(schema, str) and schema.startswith("repro.run/") and schema not in RUN_SCHEMAS
    )
    if not later:
        return None
    what = f"format {fmt}" if isinstance(fmt, int) and fmt > FORMAT else f"schema {schema!r}"
    wrote = raw.get("repro_version")
    by = f", written by repro {wrote}" if isinstance(wrote, str) else ""
    return f"the record is of {what}{by}; this repro reads formats up to {FORMAT} ({RUN_SCHEMA})"


DAMAGED_HINT = "the run record is damaged or not repro's: re-run the replay, or delete the run"
