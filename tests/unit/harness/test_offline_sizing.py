"""When the worker runs an Offline test again with a larger query: only when LoadGen called it
INVALID for ending before min_duration and nothing else (LoadGen's summaries, written here;
no LoadGen runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repro.harness.request import WorkerRequest
from repro.harness.sizing import MAX_ATTEMPTS, larger_offline_query, run_sized
from repro.runs.layout import SUMMARY
from repro.runs.record import SettingChange
from repro.spec.models import LoadGenSettings

SETTINGS = LoadGenSettings(offline_expected_qps=100.0, min_duration_ms=1000)


def _summary(
    folder: Path, *, valid: bool, duration: bool, queries: bool = True, rate: float = 250000
) -> Path:
    yes = {True: "Yes", False: "NO"}
    (folder / SUMMARY).write_text(
        "================================================\nMLPerf Results Summary\n"
        "================================================\nSUT name : PyFastSUT\n"
        f"Scenario : Offline\nMode     : PerformanceOnly\nSamples per second: {rate}\n"
        f"Result is : {'VALID' if valid else 'INVALID'}\n"
        f"  Min duration satisfied : {yes[duration]}\n  Min queries satisfied : {yes[queries]}\n"
        "  Early stopping satisfied: Yes\n"
    )
    return folder


def _request(scenario: str = "Offline", mode: str = "performance", **settings: Any) -> Any:
    return WorkerRequest.model_construct(
        scenario=scenario, mode=mode, settings=SETTINGS.changed(settings), changed_settings={}
    )


def test_a_query_too_short_for_this_machine_is_made_larger(tmp_path: Path) -> None:
    req = _request()
    used = larger_offline_query(req, req.settings, _summary(tmp_path, valid=False, duration=False))
    assert used == 375000.0  # 1.5 x the 250000 samples/s LoadGen measured


def test_a_larger_query_grows_at_least_twofold(tmp_path: Path) -> None:
    # a short query's rate understates the machine's: the next one is at least twice the last
    req = _request(offline_expected_qps=300000.0)
    used = larger_offline_query(req, req.settings, _summary(tmp_path, valid=False, duration=False))
    assert used == 600000.0


@pytest.mark.parametrize(
    ("request_", "summary"),
    [
        (_request(), {"valid": True, "duration": True}),
        (_request(), {"valid": False, "duration": False, "queries": False}),  # another reason
        (_request("Server"), {"valid": False, "duration": False}),
        (_request(mode="accuracy"), {"valid": False, "duration": False}),
        (_request(max_duration_ms=1000), {"valid": False, "duration": False}),  # capped at it
        (_request(), {"valid": False, "duration": False, "rate": float("nan")}),
        # MLPerf's 600 s at 500 k samples/s: a query LoadGen could not build in memory
        (_request(min_duration_ms=600000), {"valid": False, "duration": False, "rate": 5e5}),
    ],
)
def test_nothing_else_is_run_again(request_: Any, summary: dict[str, Any], tmp_path: Path) -> None:
    found = larger_offline_query(request_, request_.settings, _summary(tmp_path, **summary))
    assert found is None


def test_tests_too_short_run_again_until_one_lasts_and_the_change_is_recorded(
    tmp_path: Path,
) -> None:
    ran: list[float] = []

    def test(settings: LoadGenSettings) -> str:
        ran.append(settings.offline_expected_qps)
        _summary(tmp_path, valid=len(ran) == 3, duration=len(ran) == 3)
        return f"test {len(ran)}"

    result, changed, discarded_s = run_sized(_request(), tmp_path, test)
    assert result == "test 3"
    assert ran == [100.0, 375000.0, 750000.0]  # 1.5 x the rate, then twice the last
    change = changed["offline_expected_qps"]
    assert (change.spec, change.used) == (100.0, 750000.0)
    assert "test 3 of at most" in change.why
    assert discarded_s >= 0


def test_a_query_still_too_short_after_every_attempt_stays_invalid(tmp_path: Path) -> None:
    ran: list[float] = []

    def test(settings: LoadGenSettings) -> None:
        ran.append(settings.offline_expected_qps)
        _summary(tmp_path, valid=False, duration=False)

    _, changed, _ = run_sized(_request(), tmp_path, test)
    assert len(ran) == MAX_ATTEMPTS  # then the last test's INVALID logs are the result
    assert changed["offline_expected_qps"].used == ran[-1]


def test_a_later_test_starts_from_the_query_an_earlier_one_sized(tmp_path: Path) -> None:
    earlier = SettingChange(spec=100.0, used=4e5, why="as an earlier test of this run needed: ")
    req = _request().model_copy(update={"changed_settings": {"offline_expected_qps": earlier}})
    ran: list[float] = []

    def test(settings: LoadGenSettings) -> None:
        ran.append(settings.offline_expected_qps)
        _summary(tmp_path, valid=True, duration=True)

    _, changed, discarded_s = run_sized(req, tmp_path, test)
    assert ran == [4e5]
    assert changed == {"offline_expected_qps": earlier}
    assert discarded_s == 0


def test_a_short_test_sizes_its_query_from_the_warm_ups_rate(tmp_path: Path) -> None:
    """`--min-duration-ms 500` Offline tests ran 20-74 s where a high offline_expected_qps
    sized the query: a short test's query is sized from the warm-up's rate instead."""
    req = _request(offline_expected_qps=1e6, min_duration_ms=500).model_copy(
        update={"short_test_ms": 500}
    )
    ran: list[float] = []

    def test(settings: LoadGenSettings) -> None:
        ran.append(settings.offline_expected_qps)
        _summary(tmp_path, valid=True, duration=True)

    _, changed, _ = run_sized(req, tmp_path, test, rate=20000.0)
    assert ran == [30000.0]  # 1.5 x the warm-up's 20,000 samples/s: about the 0.5 s asked
    change = changed["offline_expected_qps"]
    assert (change.spec, change.used) == (1e6, 30000.0)
    assert "a short test was asked (--min-duration-ms 500)" in change.why
    assert "55x as long" in change.why


@pytest.mark.parametrize(
    ("short", "spec_qps", "rate"),
    [(None, 1e6, 20000.0), (500, 30000.0, 20000.0), (500, 1e6, None)],
    ids=["not-short", "spec-close-enough", "no-warm-up-rate"],
)
def test_otherwise_the_query_is_the_specs(
    tmp_path: Path, short: int | None, spec_qps: float, rate: float | None
) -> None:
    req = _request(offline_expected_qps=spec_qps).model_copy(update={"short_test_ms": short})
    ran: list[float] = []

    def test(settings: LoadGenSettings) -> None:
        ran.append(settings.offline_expected_qps)
        _summary(tmp_path, valid=True, duration=True)

    _, changed, _ = run_sized(req, tmp_path, test, rate=rate)
    assert ran == [spec_qps]
    assert changed == {}


def test_the_estimate_of_a_short_test_is_the_time_it_will_take() -> None:
    """The estimate said "about 18 s" for a test that was asked to last 0.5 s (and, sized
    from its rate, does)."""
    from repro.estimates import PlannedTest, loadgen_seconds

    settings = LoadGenSettings(offline_expected_qps=1e6, min_duration_ms=500, min_query_count=1)
    long = PlannedTest("Offline", "performance", settings, total=64, batch=8)
    short = PlannedTest("Offline", "performance", settings, total=64, batch=8, short=True)
    unit_s = 1 / 20000  # 20,000 samples/s
    assert loadgen_seconds(long, unit_s) == pytest.approx(27.5)
    assert loadgen_seconds(short, unit_s) == pytest.approx(0.825)  # 1.1 x 1.5 x 0.5 s
