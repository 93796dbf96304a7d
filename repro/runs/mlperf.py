"""Read a published MLPerf Inference result (v4.0 to v5.x trees) as a run record.

Accepted paths: `<division>/<submitter>/results/<system>/<benchmark>/` (all its scenarios) or
one scenario folder below it. The system description comes from
`<division>/<submitter>/systems/<system>.json`; LoadGen's logs from
`<scenario>/performance/run_<k>/`; accuracy from `<scenario>/accuracy/accuracy.txt`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from repro.runs import layout
from repro.runs.layout import SUMMARY
from repro.runs.loadgen_logs import read_logs
from repro.runs.record import RunRecord, TestRecord
from repro.spec.types import SCENARIOS

_SCENARIO_NAMES = {s.lower(): s for s in SCENARIOS}
_ACCURACY = re.compile(r"(?:accuracy|top1|acc)\s*[=:]\s*([0-9.]+)\s*%", re.IGNORECASE)


def _scenario_dirs(path: Path) -> list[Path]:
    if path.name.lower() in _SCENARIO_NAMES:
        return [path]
    return sorted(p for p in path.iterdir() if p.is_dir() and p.name.lower() in _SCENARIO_NAMES)


def is_mlperf_result(path: Path) -> bool:
    """True for a benchmark or scenario folder holding LoadGen summaries under performance/."""
    if not path.is_dir() or layout.record_file(path).exists():
        return False
    return any(any((d / "performance").glob(f"run_*/{SUMMARY}")) for d in _scenario_dirs(path))


def parse_accuracy_txt(text: str) -> float | None:
    """`accuracy=76.456%, good=38228, total=50000` -> 0.76456 (resnet50 and the like)."""
    m = _ACCURACY.search(text)
    return float(m.group(1)) / 100 if m else None


def _system(path: Path) -> tuple[str, str, dict[str, Any]]:
    """(submitter, system name, systems/<system>.json) found above a benchmark folder."""
    parts = path.resolve().parts
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        if i + 1 < len(parts):
            system = parts[i + 1]
            submitter_dir = Path(*parts[:i])
            desc_path = submitter_dir / "systems" / f"{system}.json"
            desc: dict[str, Any] = {}
            if desc_path.is_file():
                try:
                    desc = json.loads(desc_path.read_text())
                except json.JSONDecodeError:
                    desc = {}
            return submitter_dir.name, system, desc
    return "unknown", path.name, {}


def fingerprint_from_system(desc: dict[str, Any]) -> dict[str, Any]:
    """A partial fingerprint from an MLPerf system description (unknown stays None)."""

    def num(v: Any) -> int | None:
        try:
            return int(str(v).split()[0])
        except (ValueError, IndexError):
            return None

    per_node = num(desc.get("host_processors_per_node"))
    cores = num(desc.get("host_processor_core_count"))
    return {
        "schema": "repro.fingerprint/v1",
        "hardware": {
            "cpu": {
                "model": desc.get("host_processor_model_name"),
                "physical_cores": cores * per_node if cores and per_node else cores,
                "sockets": per_node,
            },
            "memory": desc.get("host_memory_capacity"),
            "accelerators": desc.get("accelerator_model_name"),
            "accelerators_per_node": desc.get("accelerators_per_node"),
        },
        "os": {"release": desc.get("operating_system")},
        "python": {},
        "packages": {},
        "native": {
            "framework": desc.get("framework"),
            "software": desc.get("other_software_stack"),
        },
        "variables": {},
    }


def read_mlperf_result(path: Path) -> RunRecord:
    """The published result as a RunRecord: one test per performance run, plus accuracy."""
    submitter, system, desc = _system(path)
    benchmark = path.parent.name if path.name.lower() in _SCENARIO_NAMES else path.name
    tests: list[TestRecord] = []
    for sdir in _scenario_dirs(path):
        scenario = _SCENARIO_NAMES[sdir.name.lower()]
        for k, run in enumerate(sorted((sdir / "performance").glob("run_*")), start=1):
            if not (run / SUMMARY).is_file():
                continue
            metrics = read_logs(run)
            status = "valid" if metrics.get("validity") == "VALID" else "invalid"
            tests.append(
                TestRecord(
                    scenario=scenario,
                    mode="performance",
                    repeat=k,
                    dir=str(run.relative_to(path)),
                    status=status,
                    metrics=metrics,
                )
            )
        acc_txt = sdir / "accuracy" / "accuracy.txt"
        if acc_txt.is_file():
            value = parse_accuracy_txt(acc_txt.read_text(errors="replace"))
            if value is not None:
                tests.append(
                    TestRecord(
                        scenario=scenario,
                        mode="accuracy",
                        dir=str(acc_txt.parent.relative_to(path)),
                        status="valid",
                        accuracy={"metric": "top1", "value": value},
                    )
                )
    return RunRecord(
        run_id=f"mlperf:{submitter}/{system}/{benchmark}",
        spec_name=benchmark,
        spec_id="",
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="",
        environment={
            "manager": "published",
            "submitter": submitter,
            "system": system,
            "division": desc.get("division"),
            "framework": desc.get("framework"),
        },
        fingerprint=fingerprint_from_system(desc),
        tests=tests,
    )
