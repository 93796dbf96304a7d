"""What the orchestrator asks one worker process to run, and what the worker answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.spec.models import ModeName, ScenarioName


class WorkerRequest(BaseModel):
    """One LoadGen test: a scenario in one mode, in a fresh process."""

    model_config = ConfigDict(extra="forbid")

    spec_id: str
    spec_name: str
    scenario: ScenarioName
    mode: ModeName
    settings: dict[str, Any]
    seeds: dict[str, int]
    backend: str
    backend_options: dict[str, Any]
    model_path: str
    dataset_path: str
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


class WorkerResult(BaseModel):
    """What the worker reports besides LoadGen's own logs."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["complete", "failed"]
    error: str | None = None
    backend: dict[str, Any] = {}
    timings_s: dict[str, float] = {}
    queries_completed: int = 0
    samples_completed: int = 0
    latencies_file: str | None = None
    loadgen_version: str | None = None
    audit_config_found: bool = False
    output_dtype: str | None = None
    output_shape: list[int] = []
