"""Replayer orchestration with fakes: selection, settings, status collection, interruption."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from repro.artifacts.cache import ArtifactCache
from repro.backends import registry
from repro.environments.base import RealizedEnvironment
from repro.errors import RunError, UsageError
from repro.replay.replayer import Replayer
from repro.runs import layout
from repro.runs.store import load_run
from repro.spec.io import parse_spec
from repro.spec.models import ExperimentSpec
from tests.fakes import EchoPlugin, FakeProbes, InProcessRunner
from tests.helpers import portable_spec, replay_plan


@contextlib.contextmanager
def _no_bar(label: str, seconds: float) -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _echo_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", EchoPlugin())


@pytest.fixture
def spec(root: Path, tmp_path: Path) -> tuple[ExperimentSpec, Path]:
    raw = portable_spec(root, "ort-digits")
    raw["tolerances"] = {"throughput_rel": 0.2}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(raw))
    return parse_spec(raw, source=str(path)), path


def _replay(
    spec: tuple[ExperimentSpec, Path],
    tmp_path: Path,
    runner: InProcessRunner,
    probes: FakeProbes | None = None,
    **opts: Any,
) -> tuple[Path, Any]:
    env = RealizedEnvironment(manager="fake", python=[sys.executable], env={})
    options = replay_plan(results_dir=tmp_path / "results", **opts)
    probes = probes or FakeProbes()
    return Replayer(
        spec[0],
        spec[1],
        env,
        cache=ArtifactCache(tmp_path / "cache"),
        plan=options,
        report=lambda _: None,
        progress=_no_bar,
        runner=runner,
        probes=probes,
    ).run()


def test_selection_runs_only_the_chosen_scenarios_and_modes(spec: Any, tmp_path: Path) -> None:
    runner = InProcessRunner()
    _, record = _replay(spec, tmp_path, runner, scenarios=("Offline",), modes=("accuracy",))
    assert [(r.scenario, r.mode) for r in runner.requests] == [("Offline", "accuracy")]
    assert [(t.scenario, t.mode, t.status) for t in record.tests] == [
        ("Offline", "accuracy", "valid")
    ]
    assert record.status == "complete"
    assert record.tests[0].accuracy is not None
    assert 0.0 <= record.tests[0].accuracy["value"] <= 1.0


def test_a_scenario_the_spec_lacks_is_a_usage_error(spec: Any, tmp_path: Path) -> None:
    raw = json.loads(spec[1].read_text())
    raw["workload"]["scenarios"] = [
        s for s in raw["workload"]["scenarios"] if s["scenario"] != "Server"
    ]
    raw.pop("id", None)
    spec[1].write_text(json.dumps(raw))
    lacking = (parse_spec(raw, source=str(spec[1])), spec[1])
    with pytest.raises(UsageError, match="no such scenario"):
        _replay(lacking, tmp_path, InProcessRunner(), scenarios=("Server",))
    with pytest.raises(ValidationError, match="scenarios"):  # not a scenario at all: the plan
        replay_plan(scenarios=("Nope",))


def test_settings_overrides_seeds_and_repeats_reach_the_worker(spec: Any, tmp_path: Path) -> None:
    runner = InProcessRunner()
    _replay(
        spec,
        tmp_path,
        runner,
        scenarios=("SingleStream",),
        modes=("performance",),
        repeat=2,
        min_duration_ms=123,
    )
    assert len(runner.requests) == 2
    for req in runner.requests:
        assert req.settings.min_duration_ms == 123
        assert req.seeds == spec[0].workload.seeds
        assert req.backend == spec[0].backend


def test_run_records_spec_and_effective_tolerances(spec: Any, tmp_path: Path) -> None:
    run_dir, record = _replay(spec, tmp_path, InProcessRunner(), scenarios=("Offline",))
    assert record.tolerances is not None
    assert record.tolerances.throughput_rel == 0.2
    assert record.spec["tolerances"]["throughput_rel"] == 0.2
    assert load_run(run_dir).tolerances == record.tolerances
    assert "Offline/accuracy/mlperf_log_summary.txt" in record.files_sha256
    assert "run.json" not in record.files_sha256


@pytest.mark.parametrize(
    ("behaviour", "test_status", "run_status", "error"),
    [
        ("invalid", "invalid", "invalid", None),
        ("fail", "failed", "failed", "scripted failure"),
        ("crash", "failed", "failed", "killed by signal 11"),
    ],
)
def test_worker_outcomes_are_collected(
    spec: Any, tmp_path: Path, behaviour: str, test_status: str, run_status: str, error: str | None
) -> None:
    runner = InProcessRunner({"Offline/performance": behaviour})
    _, record = _replay(spec, tmp_path, runner, scenarios=("Offline",))
    perf = record.performance("Offline")
    assert [t.status for t in perf] == [test_status]
    assert record.accuracy_test("Offline").status == "valid"
    assert record.status == run_status
    if error:
        assert error in (perf[0].error or "")


def test_interruption_leaves_an_interrupted_run_and_no_partial(spec: Any, tmp_path: Path) -> None:
    runner = InProcessRunner({"SingleStream/accuracy": "interrupt"})
    with pytest.raises(KeyboardInterrupt):
        _replay(spec, tmp_path, runner, run_id="cut")
    run_dir = layout.run_dir(tmp_path / "results", "ort-digits", "cut")
    record = load_run(run_dir)
    assert record.status == "interrupted"
    assert [t.mode for t in record.tests] == ["performance"]  # what finished is kept
    assert not layout.partial_dir(tmp_path / "results", "ort-digits", "cut").exists()


def test_a_worker_killed_from_outside_leaves_an_interrupted_run(spec: Any, tmp_path: Path) -> None:
    # e.g. `docker kill` of the worker's container: exit 137 and no result
    runner = InProcessRunner({"MultiStream/performance": "killed"})
    with pytest.raises(RunError, match=r"MultiStream performance was killed \(exit 137\)") as err:
        _replay(spec, tmp_path, runner, run_id="killed")
    run_dir = layout.run_dir(tmp_path / "results", "ort-digits", "killed")
    assert str(run_dir) in err.value.message
    record = load_run(run_dir)
    assert record.status == "interrupted"
    assert "killed (exit 137)" in (record.message or "")
    assert record.tests[-1].status == "failed"
    assert [r.scenario for r in runner.requests][-1] == "MultiStream"  # nothing ran after it


def test_command_line_overrides_are_bounded_like_the_spec(root: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    spec = str(root / "specs" / "ort-digits.json")
    for option, value in (("--min-duration-ms", "99999999999"), ("--min-query-count", "-1")):
        result = CliRunner().invoke(cli, ["replay", spec, option, value])
        assert result.exit_code == 2, result.output
        assert option in result.output


def test_repeats_are_rounds_with_a_probe_between_every_two_tests(spec: Any, tmp_path: Path) -> None:
    runner, probes = InProcessRunner(), FakeProbes([100.0, 90.0, 80.0])
    _, record = _replay(
        spec, tmp_path, runner, probes, scenarios=("SingleStream", "Offline"), repeat=2
    )
    order = [(t.scenario, t.mode, t.repeat) for t in record.tests]
    assert order == [
        ("SingleStream", "performance", 1),
        ("SingleStream", "accuracy", 1),
        ("Offline", "performance", 1),
        ("Offline", "accuracy", 1),
        ("SingleStream", "performance", 2),
        ("Offline", "performance", 2),
    ]
    assert probes.calls == len(record.tests) + 1  # before the first test, then after each
    for before, after in zip(record.tests, record.tests[1:], strict=False):
        assert before.probe_after == after.probe_before
    assert record.tests[0].probe_before["compute_gflops"] == 100.0
    assert record.probes_version == "repro.probes/v2"


def test_overrides_that_cannot_run_are_refused_before_a_worker_starts(root: Path) -> None:
    from repro.errors import UsageError
    from repro.replay.settings import scenario_settings
    from repro.spec.io import load_spec

    spec = load_spec(root / "specs" / "ort-digits.json")
    with pytest.raises(UsageError, match=r"would generate about 1\.84e"):
        scenario_settings(spec, "SingleStream", replay_plan(min_query_count=2**64 - 1))
    with pytest.raises(UsageError, match="--max-duration-ms 1 is below"):
        scenario_settings(spec, "SingleStream", replay_plan(min_duration_ms=100, max_duration_ms=1))
    settings = scenario_settings(spec, "SingleStream", replay_plan(min_duration_ms=100))
    assert settings.min_duration_ms == 100


def test_a_workers_failure_is_its_exception_not_its_traceback() -> None:
    from repro.replay.worker_end import worker_failure

    log = (
        'loading\nTraceback (most recent call last):\n  File "x.py", line 1, in run_test\n'
        "    lg.StartTestWithLogSettings(sut)\nMemoryError: std::bad_alloc\n"
    )
    assert worker_failure(log) == "MemoryError: std::bad_alloc"
    assert worker_failure("") == "its log is empty"
    assert worker_failure("a\nb\nc\nd\n") == "b / c / d"


def test_a_refused_override_leaves_no_run_folder(root: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--min-query-count",
            str(2**64 - 1),
            "--results-dir",
            str(tmp_path / "results"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*"))
