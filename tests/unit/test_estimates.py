"""Progress estimates from synthetic timings: unknown says so, measured rates decide after the
first test, an Offline test planned for a faster machine is estimated from the real rate, the
bar never pretends (no 99 % stall), the worker's progress file is read back."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro.estimates import (
    MEASURED,
    Estimate,
    Forecast,
    Live,
    Measured,
    PlannedTest,
    Snapshot,
    estimate_test,
    plan_estimate,
)
from repro.spec.models import LoadGenSettings

SS = LoadGenSettings(
    min_duration_ms=1000, min_query_count=1024, single_stream_expected_latency_ns=1
)
OFFLINE = LoadGenSettings(min_duration_ms=1000, min_query_count=64, offline_expected_qps=1000.0)


def _finished(measured: Measured, plan: PlannedTest, *, loadgen_s: float, units: int) -> None:
    """A test that took 0.5 s to start LoadGen, `loadgen_s` in it and 0.2 s after."""
    metrics = {"sut_queries_completed": units, "samples_per_query": units}
    timings = {"loadgen_s": loadgen_s, "loadgen_start_unix": 100.5}
    measured.learn_test(plan, timings, metrics, wall_s=0.5 + loadgen_s + 0.2, spawn_unix=100.0)


def test_before_any_inference_was_timed_the_estimate_is_unknown_and_says_so() -> None:
    est = estimate_test(PlannedTest("SingleStream", "performance", SS, 450, 1), Measured(), None)
    assert not est.known
    assert est.text() == "time unknown (no inference timed yet; at least 1.0 s)"
    plan = PlannedTest("Offline", "performance", OFFLINE, 450, 8)
    offline = estimate_test(plan, Measured(), None)
    assert not offline.known
    assert offline.floor_s == 0  # an Offline test faster than planned ends before min_duration


def test_after_the_first_test_the_estimate_uses_its_measured_rate() -> None:
    plan = PlannedTest("SingleStream", "performance", SS, 450, 1)
    measured = Measured()
    _finished(measured, plan, loadgen_s=4.0, units=2000)  # 2 ms a query
    est = estimate_test(plan, measured, None)
    assert est.basis == MEASURED
    # 0.5 s to LoadGen, 1024 queries x 2 ms (more than the 1 s minimum), 0.2 s after
    assert est.seconds == pytest.approx(0.5 + 1024 * 0.002 + 0.2)
    fast = Measured()
    _finished(fast, plan, loadgen_s=1.0, units=100_000)  # 10 us a query: the minimum duration
    assert estimate_test(plan, fast, None).seconds == pytest.approx(0.5 + 1.0 + 0.2)


def test_an_offline_test_planned_for_a_faster_machine_takes_its_samples_at_the_real_rate() -> None:
    """1.1 x 1 s x the expected QPS samples at the rate this machine measured: an expected
    QPS 100x the real one makes the test 100x longer than its minimum duration."""
    real = Measured()
    _finished(
        real, PlannedTest("Offline", "performance", OFFLINE, 450, 8), loadgen_s=2.0, units=20
    )  # (10 samples/s)
    planned_for_faster = OFFLINE.changed({"offline_expected_qps": 1000.0})
    est = estimate_test(
        PlannedTest("Offline", "performance", planned_for_faster, 450, 8), real, None
    )
    assert est.seconds == pytest.approx(0.5 + 1100 / 10 + 0.2)


def test_the_running_test_re_estimates_from_its_warm_up_and_its_samples_so_far() -> None:
    plan = PlannedTest("Offline", "performance", OFFLINE, 450, 8)
    warm = Live(warm_up_call_s={8: 0.08}, loadgen_after_s=3.0)  # 10 ms a sample
    est = estimate_test(plan, Measured(), warm)
    assert est.basis == "this test's warm-up"
    assert est.seconds == pytest.approx(3.0 + 1100 * 0.01)
    running = Live(
        warm_up_call_s={8: 0.08}, loadgen_after_s=3.0, samples_done=100, samples_after_s=4.0
    )  # (40 ms a sample: 4x slower than warm)
    est = estimate_test(plan, Measured(), running)
    assert est.basis == "this test's rate so far"
    assert est.seconds == pytest.approx(3.0 + 1100 * 0.04)


def test_multistream_runs_its_minimum_query_count_and_a_replay_sums_its_tests() -> None:
    multi = LoadGenSettings(
        min_duration_ms=2000, min_query_count=662, multi_stream_samples_per_query=8
    )
    plan = PlannedTest("MultiStream", "performance", multi, 64, 8)
    measured = Measured(call_s={8: 0.08}, pre_s=[1.0], between_s=[0.5])
    assert estimate_test(plan, measured, None).seconds == pytest.approx(1.0 + 662 * 0.08)
    ss = PlannedTest("SingleStream", "performance", SS, 450, 8)  # batch 1 was never timed
    assert estimate_test(ss, measured, None).basis == "an earlier warm-up at another batch size"
    both = plan_estimate([plan, plan], measured)
    assert both.seconds == pytest.approx(2 * (1.0 + 662 * 0.08 + 0.5))
    unknown = plan_estimate([plan, ss], Measured(pre_s=[1.0]))
    assert not unknown.known
    assert unknown.floor_s == pytest.approx(2.0 + 1.0)


def test_the_bar_never_stalls_at_99_percent_and_says_when_it_does_not_know() -> None:
    from repro.cli.progress import bar_line, log_line, moved

    known = Snapshot(Estimate(10.0, MEASURED, 1.0), Estimate(60.0, MEASURED))
    assert "5.0 s of about 10 s (measured on this machine); then about 60 s more" in bar_line(
        "Offline performance", 5.0, known
    )
    late = bar_line("Offline performance", 25.0, known)
    assert "longer than the 10 s estimated" in late
    assert "%" not in late
    unknown = Snapshot(Estimate.unknown("no inference timed yet", 5.0))
    assert "1.0 s elapsed (no rate measured on this machine yet)" in bar_line("x", 1.0, unknown)
    assert log_line("x", unknown) == "x: started (no rate measured on this machine yet)"
    assert moved(unknown.test, known.test)
    assert not moved(known.test, Estimate(12.0, MEASURED))
    assert moved(known.test, Estimate(40.0, "this test's rate so far"))


def test_a_warm_ups_guess_is_never_shown_as_the_time_a_test_takes() -> None:
    """Estimates from a warm-up's call times swung one test's from 8 s to 5.6 min to 87 s:
    until a rate is measured the wait says the time elapsed, then the measured estimate."""
    from repro.cli.progress import bar_line, log_line, moved

    guess = Snapshot(Estimate(8.0, "this test's warm-up"), Estimate(300.0, "an earlier warm-up"))
    line = bar_line("Offline performance (test 2 of 6)", 3.0, guess)
    assert "3.0 s elapsed (no rate measured on this machine yet)" in line
    assert "about" not in line  # neither the test's guess nor the rest's
    assert log_line("x", guess) == "x: started (no rate measured on this machine yet)"
    assert not moved(guess.test, Estimate(336.0, "this test's warm-up"))  # no swinging lines
    assert moved(guess.test, Estimate(87.0, "this test's rate so far"))


def test_the_workers_progress_file_is_read_back(tmp_path: Path) -> None:
    from repro.harness.progress import ProgressFile, read_live

    path = tmp_path / "progress.json"
    assert read_live(path, time.time()) is None
    spawn = time.time()
    progress = ProgressFile(path)
    progress.started({8: 0.25})
    live = read_live(path, spawn - 2.0)
    assert live is not None
    assert live.warm_up_call_s == {8: 0.25}
    assert live.loadgen_after_s == pytest.approx(2.0, abs=1.0)
    path.write_text("{not json")
    assert read_live(path, spawn) is None  # half-replaced or damaged: no estimate, no error
    broken = ProgressFile(tmp_path / "missing" / "progress.json")
    broken.started({1: 0.1})  # a file system that refuses it costs the estimate only


def test_a_replay_tells_its_bar_unknown_first_then_measured(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the Replayer: the first test's forecast is unknown until its worker's warm-up
    is in; the next test of the same scenario is estimated from the first one's rate."""
    from repro.artifacts.cache import ArtifactCache
    from repro.backends import registry
    from repro.environments.base import RealizedEnvironment
    from repro.replay.replayer import Replayer
    from repro.runs import layout
    from repro.spec.io import parse_spec
    from tests.fakes import EchoPlugin, FakeProbes, InProcessRunner
    from tests.helpers import portable_spec, replay_plan

    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", EchoPlugin())
    seen: list[tuple[str, Snapshot, Snapshot]] = []

    class Timed(InProcessRunner):
        """Writes the progress file as a worker does, and LoadGen timings of 0.9 s."""

        def run(self, env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
            (out_dir / layout.PROGRESS_FILE).write_text(
                json.dumps({"warm_up_call_s": {"1": 0.001}, "loadgen_start_unix": time.time()})
            )
            mid = forecasts[-1].now()
            rc = super().run(env, request, out_dir, timeout_s=timeout_s)
            result = json.loads((out_dir / layout.WORKER_RESULT).read_text())
            result["timings_s"] = {"loadgen_s": 0.9, "loadgen_start_unix": time.time()}
            (out_dir / layout.WORKER_RESULT).write_text(json.dumps(result))
            seen.append((req_label(request), starts[-1], mid))
            return rc

    def req_label(request: Path) -> str:
        req = json.loads(request.read_text())
        return f"{req['scenario']} {req['mode']}"

    forecasts: list[Forecast] = []
    starts: list[Snapshot] = []

    @contextlib.contextmanager
    def recorder(label: str, forecast: Forecast) -> Iterator[None]:
        forecasts.append(forecast)
        starts.append(forecast.now())
        yield

    spec = parse_spec(portable_spec(root, "ort-digits"), source="ort-digits.json")
    replayer = Replayer(
        spec,
        root / "specs" / "ort-digits.json",
        RealizedEnvironment(manager="fake", python=[sys.executable], env={}),
        cache=ArtifactCache(tmp_path / "cache"),
        plan=replay_plan(
            scenarios=("SingleStream",),
            modes=("performance",),
            min_duration_ms=100,
            repeat=2,
            results_dir=tmp_path / "results",
        ),
        report=lambda _: None,
        progress=recorder,
        runner=Timed(),
        probes=FakeProbes(),
    )
    replayer.run()
    (first_label, first_start, first_mid), (_, second_start, _) = seen
    assert first_label == "SingleStream performance"
    assert not first_start.test.known  # nothing timed yet: said so
    assert first_start.rest is not None
    assert not first_start.rest.known
    assert first_mid.test.basis == "this test's warm-up"  # re-estimated while it runs
    assert second_start.test.basis == MEASURED
    # 1024 queries at 0.9 s / 450 queries (the fake's count): 2.05 s
    assert second_start.test.seconds == pytest.approx(1024 * 0.9 / 450, abs=0.2)
    leftovers = list((tmp_path / "results").rglob(layout.PROGRESS_FILE))
    assert leftovers == []  # the progress file is no part of the run


def test_an_offline_test_counts_its_samples_into_the_progress_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro.harness import progress as progress_module
    from repro.harness.progress import ProgressFile, read_live

    monkeypatch.setattr(progress_module, "FIRST_S", 0.01)
    monkeypatch.setattr(progress_module, "INTERVAL_S", 0.01)
    path = tmp_path / "progress.json"
    progress = ProgressFile(path)
    progress.started({32: 0.001})
    done = [0]
    with progress.counting(done):
        done[0] = 640
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            live = read_live(path, time.time())
            if live is not None and live.samples_done == 640:
                break
            time.sleep(0.01)
    assert live is not None
    assert live.samples_done == 640
