"""When the worker runs an Offline test again with a larger query: only when LoadGen called it
INVALID for ending before min_duration and nothing else (LoadGen's summaries, written here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repro.harness.loadgen import larger_offline_query
from repro.harness.request import WorkerRequest
from repro.runs.layout import SUMMARY


def _summary(folder: Path, *, valid: bool, duration: bool, queries: bool = True) -> Path:
    yes = {True: "Yes", False: "NO"}
    (folder / SUMMARY).write_text(
        "================================================\nMLPerf Results Summary\n"
        "================================================\nSUT name : PyFastSUT\n"
        "Scenario : Offline\nMode     : PerformanceOnly\nSamples per second: 250000\n"
        f"Result is : {'VALID' if valid else 'INVALID'}\n"
        f"  Min duration satisfied : {yes[duration]}\n  Min queries satisfied : {yes[queries]}\n"
        "  Early stopping satisfied: Yes\n"
    )
    return folder


def _request(scenario: str = "Offline", mode: str = "performance", **settings: int) -> Any:
    return WorkerRequest.model_construct(
        scenario=scenario,
        mode=mode,
        settings={"offline_expected_qps": 100.0, "min_duration_ms": 1000, **settings},
    )


def test_a_query_too_short_for_this_machine_is_made_larger(tmp_path: Path) -> None:
    found = larger_offline_query(_request(), _summary(tmp_path, valid=False, duration=False))
    assert found is not None
    used, adjusted = found
    assert used == 375000.0  # 1.5 x the 250000 samples/s LoadGen measured
    assert adjusted["offline_expected_qps"]["spec"] == 100.0
    assert adjusted["offline_expected_qps"]["used"] == used


@pytest.mark.parametrize(
    ("request_", "summary"),
    [
        (_request(), {"valid": True, "duration": True}),
        (_request(), {"valid": False, "duration": False, "queries": False}),  # another reason
        (_request("Server"), {"valid": False, "duration": False}),
        (_request(mode="accuracy"), {"valid": False, "duration": False}),
        (_request(max_duration_ms=500), {"valid": False, "duration": False}),  # capped below
    ],
)
def test_nothing_else_is_run_again(request_: Any, summary: dict, tmp_path: Path) -> None:
    assert larger_offline_query(request_, _summary(tmp_path, **summary)) is None
