"""Another harness's served run, as repro compares it: its metrics in repro's keys, what each
means (`definitions`), its requests where the file kept them, and what the harness recorded
about itself and the server. The server's stack is not pinned by any of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from repro.formats.served.definitions import Definitions, as_json
from repro.formats.served.requests import Requests
from repro.runs.record import RunRecord, TestRecord
from repro.spec.types import ScenarioName

#: the harnesses read, by the name a record's environment and a test's backend give them
TOOLS: Final = {
    "aiperf": "AIPerf",
    "guidellm": "GuideLLM",
    "vllm-bench": "vllm bench serve",
    "endpoints": "MLCommons endpoints",
}


@dataclass(frozen=True)
class ToolRun:
    """One run of a harness against a served model."""

    tool: str  # a TOOLS key
    file: Path  # the result file (or folder) it was read from
    scenario: ScenarioName  # LoadGen's nearest: Offline (all at once or a concurrency), Server
    load: str  # the load in words: "concurrency 16", "Poisson, 10 requests/s"
    metrics: dict[str, Any]
    definitions: Definitions
    requests: Requests | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return TOOLS[self.tool]


def as_record(runs: list[ToolRun], root: Path) -> RunRecord:
    """The runs of one harness (repeats of one load are its rounds) as a run record: a test per
    run, each test's backend the harness's facts and definitions."""
    first = runs[0]
    tests = []
    repeats: dict[tuple[str, str], int] = {}
    for run in runs:
        k = repeats[(run.scenario, run.load)] = repeats.get((run.scenario, run.load), 0) + 1
        metrics = {"scenario": run.scenario, "mode": "performance", **run.metrics}
        tests.append(
            TestRecord(
                scenario=run.scenario,
                mode="performance",
                repeat=k,
                dir=_relative(run.file, root),
                status="valid",
                metrics=metrics,
                backend={
                    "name": run.tool,
                    "load": run.load,
                    "definitions": as_json(run.definitions),
                    "requests_kept": run.requests is not None,
                    **run.facts,
                },
            )
        )
    notes = [
        f"{first.name}'s result: the server's software stack is not pinned (what {first.name} "
        "recorded about itself and the server is shown, nothing more)"
    ]
    for run in runs:
        notes += [n for n in run.notes if n not in notes]
    return RunRecord(
        run_id=f"{first.tool}:{root.name}",
        spec_name=str(first.facts.get("model") or root.name),
        spec_id="",
        spec_path="",
        status="complete",
        started_utc=str(first.facts.get("started") or ""),
        repro_version="",
        environment={
            "manager": first.tool,
            "tool": first.name,
            "tool_version": first.facts.get("version"),
            "server_url": first.facts.get("server_url"),
            "model": first.facts.get("model"),
            "server_pinned": False,
        },
        tests=tests,
        notes=notes,
    )


def _relative(path: Path, root: Path) -> str:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return path.name
    return str(rel) if str(rel) != "." else path.name
