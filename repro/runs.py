"""The run record (`run.json`) and the layout of a run directory.

A run directory is `results/<spec-name>/<run-id>/` with, per scenario,
`<Scenario>/performance/run_<k>/` and `<Scenario>/accuracy/` holding LoadGen's files untouched.
It is built under a hidden `.<run-id>.partial` name and renamed when run.json is written, so a
run killed hard never looks like a finished one; a run stopped by a signal says so in run.json.

Format history (the `schema` field):
# repro.run/v1 - first version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.errors import SpecError
from repro.spec.models import ModeName, ScenarioName

RUN_SCHEMA: Final = "repro.run/v1"
RUN_FILE = "run.json"
RunStatus = Literal["complete", "invalid", "failed", "interrupted"]


class TestRecord(BaseModel):
    """One LoadGen test of the run: a scenario in one mode (one repeat of it)."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    scenario: ScenarioName
    mode: ModeName
    repeat: int = 1
    dir: str
    status: Literal["valid", "invalid", "failed", "interrupted"]
    metrics: dict[str, Any] = Field(default_factory=dict)
    accuracy: dict[str, Any] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    backend: dict[str, Any] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    latencies_file: str | None = None
    error: str | None = None


class RunRecord(BaseModel):
    """Everything about one replay (or the original) besides LoadGen's own files."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["repro.run/v1"] = Field(RUN_SCHEMA, alias="schema")
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
    tests: list[TestRecord] = Field(default_factory=list)
    message: str | None = None

    def performance(self, scenario: str) -> list[TestRecord]:
        return [t for t in self.tests if t.scenario == scenario and t.mode == "performance"]

    def accuracy_test(self, scenario: str) -> TestRecord | None:
        return next(
            (t for t in self.tests if t.scenario == scenario and t.mode == "accuracy"), None
        )


def load_run(run_dir: Path) -> RunRecord:
    """Read a run directory's run.json; a missing or broken one is bad input."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise SpecError(
            f"{run_dir}: not a repro run directory (no {RUN_FILE})",
            hint="pass results/<name>/<run-id>/ or results/<name>/",
        )
    try:
        return RunRecord.model_validate(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValueError) as exc:
        raise SpecError(f"{path}: not a valid run record: {exc}") from None


def list_runs(results_dir: Path) -> list[Path]:
    """Finished run directories of one spec, oldest first (run ids sort by time)."""
    if not results_dir.is_dir():
        return []
    return sorted(
        p
        for p in results_dir.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / RUN_FILE).is_file()
    )
