"""What the orchestrator asks one worker process to run, and what the worker answers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.backends.registry import get_backend
from repro.runs.record import CpuTime, GpuEnergy, SettingChange
from repro.spec.models import (
    BackendSpec,
    ExperimentSpec,
    GenerationSpec,
    LoadGenSettings,
    ModeName,
    ScenarioName,
    Seeds,
)


class ServedTarget(BaseModel):
    """Where a served test's requests go: the server the replay started, or an external one."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(description="the API's base URL: http://127.0.0.1:PORT/v1")
    model: str = Field(description="the model's name in the API")
    api_key_env: str | None = Field(
        None, description="the variable that holds the API key (the key is never written)"
    )
    model_dir: str | None = Field(
        None,
        description="the served model's folder (its tokenizer counts tokens where the "
        "server does not say)",
    )


class WorkerRequest(BaseModel):
    """One LoadGen test: a scenario in one mode, in a fresh process.

    The backend section is the spec's own typed model (validated again in the worker); `runtime`
    is what the backend's plug-in adds for its engine (resolved paths, cache keys).
    """

    model_config = ConfigDict(extra="forbid")

    spec_id: str
    spec_name: str
    scenario: ScenarioName
    mode: ModeName
    settings: LoadGenSettings = Field(description="the scenario's LoadGen settings, overrides in")
    seeds: Seeds
    backend: BackendSpec
    runtime: dict[str, Any] = Field(default_factory=dict)
    model_path: str
    model_sha256: str = Field(description="the spec's pin; the worker checks the bytes it loads")
    dataset_path: str
    dataset_name: str = Field("dataset", description="the data set's artifact name (messages)")
    dataset_sha256: str = Field(description="the spec's pin; the worker checks the bytes it loads")
    inputs_key: str
    input_name: str | None
    output_name: str | None
    batch_size: int
    total_sample_count: int
    performance_sample_count: int
    output_dir: str
    record_latencies: bool = Field(
        False, description="also keep raw per-query latencies (.npy); a histogram is always kept"
    )
    profile: bool = Field(
        False, description="a profiled pass: the backend's profiler records every layer"
    )
    audit_config: str | None = Field(
        None,
        description="an MLPerf compliance test's audit.config, which LoadGen reads (TEST01, "
        "TEST04); otherwise LoadGen is given a path that cannot exist",
    )
    generation: GenerationSpec | None = Field(
        None, description='a `task: "generation"` workload: the generative harness runs it'
    )
    short_test_ms: int | None = Field(
        None,
        description="the test time the command line asked for (--min-duration-ms): an "
        "Offline query is sized from the warm-up's rate to last about that long "
        "(`repro.estimates.short_query`), where the spec's expected QPS would make it "
        "last more than twice as long",
    )
    changed_settings: dict[str, SettingChange] = Field(
        default_factory=dict,
        description="settings to run with instead of `settings`: what an earlier test of the "
        "run needed on this machine (an Offline query sized for it, `repro.harness.sizing`)",
    )
    cpus: list[int] | None = Field(
        None,
        description="the CPUs the worker pins itself to before it loads anything (its threads, "
        "LoadGen's among them, inherit them); None: wherever the scheduler puts it",
    )
    start_gate: str | None = Field(
        None,
        description="a duet round's gate: the worker writes <gate>.ready when it is about to "
        "start LoadGen and waits for <gate>.go, so that both sides' tests start together",
    )
    served: ServedTarget | None = Field(
        None, description="a served experiment: the server its queries go to"
    )

    @classmethod
    def from_spec(
        cls,
        spec: ExperimentSpec,
        *,
        spec_id: str,
        scenario: ScenarioName,
        mode: ModeName,
        settings: LoadGenSettings,
        artifacts: Mapping[str, Path],
        cache_root: Path,
        output_dir: Path,
        record_latencies: bool = False,
        profile: bool = False,
        audit_config: str | None = None,
    ) -> WorkerRequest:
        """The request for one test of `spec`, with its artifacts at `artifacts`."""
        wl = spec.workload
        return cls(
            spec_id=spec_id,
            spec_name=spec.name,
            scenario=scenario,
            mode=mode,
            settings=settings,
            seeds=wl.seeds,
            backend=spec.backend,
            runtime=get_backend(spec.backend.name).runtime(spec, artifacts, cache_root),
            model_path=str(artifacts[wl.model]),
            model_sha256=spec.artifacts[wl.model].sha256,
            dataset_path=str(artifacts[wl.dataset]),
            dataset_name=wl.dataset,
            dataset_sha256=spec.artifacts[wl.dataset].sha256,
            inputs_key=wl.inputs_key,
            input_name=wl.input_name,
            output_name=wl.output_name,
            batch_size=wl.batch_size,
            total_sample_count=wl.total_sample_count,
            performance_sample_count=wl.performance_sample_count,
            output_dir=str(output_dir.resolve()),
            record_latencies=record_latencies,
            profile=profile,
            audit_config=audit_config,
            generation=wl.generation if wl.task == "generation" else None,
        )


class WorkerResult(BaseModel):
    """What the worker reports besides LoadGen's own logs."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["complete", "failed"]
    error: str | None = None
    #: the failure is the spec's (a name the model does not have): the run stops, exit 2
    spec_error: bool = False
    backend: dict[str, Any] = {}
    timings_s: dict[str, float] = {}
    peak_rss_bytes: int | None = None
    queries_completed: int = 0
    samples_completed: int = 0
    latencies_file: str | None = None
    loadgen_version: str | None = None
    audit_config_found: bool = False
    output_dtype: str | None = None
    output_shape: list[int] = []
    #: a generation test: the tokens the SUT reported to LoadGen (first tokens included)
    tokens_completed: int = 0
    #: the GPU's energy over the test (`repro.machine.gpu.EnergyMeter`); None without NVML
    energy: GpuEnergy | None = None
    #: LoadGen settings this machine needed other than the request's (`repro.harness.sizing`)
    changed_settings: dict[str, SettingChange] = {}
    #: the worker's CPU time over LoadGen's run (`repro.harness.cputime`)
    cpu: CpuTime | None = None
    #: the CPUs the worker was allowed to run on, as it read them (pinned: the request's)
    cpus: list[int] | None = None
