"""A published MLCommons endpoints result (MLPerf v6.1's served results) as a run record: a
benchmark folder whose scenario folders hold `config.yaml` and `performance/result_summary.json`
(`repro.formats.served.endpoints`) instead of LoadGen's logs; one test per scenario, its
accuracy beside it, the figure the round's checker takes named as its MLPerf metric
(`repro.mlperf.rules.endpoints_metric`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.formats.served import definitions as defs
from repro.formats.served.endpoints import is_endpoints_result, read_result
from repro.mlperf.rules import endpoints_metric
from repro.runs.record import RunRecord, TestRecord

INTERACTIVE = "interactive"


def endpoints_scenarios(path: Path) -> list[Path]:
    """The scenario folders in endpoints' layout at `path` (itself, or its subfolders)."""
    if is_endpoints_result(path):
        return [path]
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and is_endpoints_result(p))
    except OSError:
        return []


def read_endpoints_tests(
    path: Path, benchmark: str, round_name: str | None
) -> tuple[list[TestRecord], list[str], dict[str, Any]]:
    """The tests of the endpoints scenario folders at `path`, the notes their reading made and
    what the harness recorded about itself (the first scenario's)."""
    tests: list[TestRecord] = []
    notes: list[str] = []
    facts: dict[str, Any] = {}
    seen: set[str] = set()
    for sdir in endpoints_scenarios(path):
        if sdir.name.lower() == INTERACTIVE and sdir != path:
            notes.append(
                f"{sdir.name}/: Server runs under interactive latency bounds, a result of its "
                f"own: compare it as `repro report --compare {path.name}/{sdir.name} ...`"
            )
            continue
        got = read_result(sdir)
        if got.scenario in seen:
            raise SpecError(
                f"{sdir}: a second {got.scenario} result beside another folder's",
                hint="a published result keeps one folder per scenario",
            )
        seen.add(got.scenario)
        taken = endpoints_metric(round_name, benchmark, got.scenario, got.interactive)
        metrics = {**got.metrics, "mlperf_metric": taken.key}
        if taken.rule:
            notes.append(f"{sdir.name}/: {taken.rule}")
        notes += [f"{sdir.name}/: {n}" for n in got.notes]
        backend = {
            "name": "endpoints",
            "definitions": defs.as_json(got.definitions),
            **got.facts,
        }
        tests.append(
            TestRecord(
                scenario=got.scenario,
                mode="performance",
                dir=str(sdir.relative_to(path)) if sdir != path else ".",
                status="valid",
                metrics=metrics,
                backend=backend,
            )
        )
        if got.accuracy is not None:
            tests.append(
                TestRecord(
                    scenario=got.scenario,
                    mode="accuracy",
                    dir=str((sdir / "accuracy").relative_to(path)),
                    status="valid",
                    accuracy=got.accuracy,
                )
            )
        facts = facts or got.facts
    return tests, notes, facts


def endpoints_record(
    path: Path,
    *,
    submitter: str,
    system: str,
    benchmark: str,
    environment: dict[str, Any],
    fingerprint: dict[str, Any],
    notes: list[str],
    round_name: str | None,
) -> RunRecord:
    tests, more, facts = read_endpoints_tests(path, benchmark, round_name)
    return published_record(
        f"{submitter}/{system}/{benchmark}",
        benchmark,
        environment={
            **environment,
            "format": "endpoints",
            "harness": f"MLCommons endpoints {facts.get('version') or ''}".strip(),
            "server_url": facts.get("server_url"),
            "model": facts.get("model"),
        },
        fingerprint=fingerprint,
        tests=tests,
        notes=[
            *notes,
            "MLCommons endpoints result: no LoadGen log; read as the v6.1 checker reads it "
            "(performance/result_summary.json, accuracy/accuracy_results.json, config.yaml)",
            *more,
        ],
    )


def published_record(
    where: str,
    benchmark: str,
    *,
    environment: dict[str, Any],
    fingerprint: dict[str, Any],
    tests: list[TestRecord],
    notes: list[str],
) -> RunRecord:
    """A published result as a run record (`where`: submitter/system/benchmark): complete,
    no spec of repro's behind it."""
    return RunRecord(
        run_id=f"mlperf:{where}",
        spec_name=benchmark,
        spec_id="",
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="",
        environment=environment,
        fingerprint=fingerprint,
        tests=tests,
        notes=notes,
    )
