"""Rounds: a reproducible random order, a stopping rule that never exceeds its caps."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from repro.artifacts.cache import ArtifactCache
from repro.backends import registry
from repro.environments.base import RealizedEnvironment
from repro.harness.request import WorkerRequest
from repro.replay.replayer import Replayer
from repro.replay.round_judge import judged_rounds as run_rounds
from repro.replay.round_judge import what_would_decide
from repro.runs.plan import ReplayPlan
from repro.runs.record import SettingChange
from repro.spec.io import parse_spec
from repro.spec.models import ScenarioName
from repro.stats.sequential import MIN_ROUNDS, Stopping
from tests.fakes import EchoPlugin, FakeProbes, InProcessRunner
from tests.helpers import portable_spec


@contextlib.contextmanager
def _no_bar(label: str, seconds: float) -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _echo_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", EchoPlugin())


def _replayer(
    root: Path,
    tmp_path: Path,
    run_id: str,
    runner: InProcessRunner,
    scenarios: tuple[ScenarioName, ...] = ("Offline",),
) -> Replayer:
    raw = portable_spec(root, "ort-digits")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(raw))
    return Replayer(
        parse_spec(raw, source=str(path)),
        path,
        RealizedEnvironment(manager="fake", python=[sys.executable], env={}),
        cache=ArtifactCache(tmp_path / "cache"),
        plan=ReplayPlan(
            results_dir=tmp_path / "results",
            run_id=run_id,
            scenarios=scenarios,
            modes=("performance",),
        ),
        report=lambda _: None,
        progress=_no_bar,
        runner=runner,
        probes=FakeProbes(),
    )


def _pair(root: Path, tmp_path: Path, tag: str, speed: Any = None) -> tuple[Replayer, Replayer]:
    return (
        _replayer(root, tmp_path, f"{tag}-a", InProcessRunner(speed=speed)),
        _replayer(root, tmp_path, f"{tag}-b", InProcessRunner(speed=speed)),
    )


def test_the_order_of_the_rounds_is_reproducible_from_its_seed(root: Path, tmp_path: Path) -> None:
    orders = []
    for tag in ("one", "two"):
        a, b = _pair(root, tmp_path, tag)
        out = run_rounds(a, against=b, stopping=Stopping(max_rounds=6, fixed=True), seed=1234)
        assert out.baseline is not None
        il_a, il_b = out.run[1].interleave, out.baseline[1].interleave
        assert il_a is not None
        assert il_b is not None
        assert il_a.id == il_b.id
        assert (il_a.side, il_b.side) == ("a", "b")
        assert il_a.seed == 1234
        orders.append(il_a.orders)
    assert orders[0] == orders[1]
    assert len(orders[0]) == 6
    # balanced: every pair of rounds runs both orders, so each side goes first 3 times
    for first, second in zip(orders[0][::2], orders[0][1::2], strict=True):
        assert first == second[::-1]
    assert sum(o[0] == "a" for o in orders[0]) == 3


def test_identical_sides_are_decided_at_the_first_look_and_paired(
    root: Path, tmp_path: Path
) -> None:
    a, b = _pair(root, tmp_path, "same")
    stopping = Stopping(max_rounds=40)
    out = run_rounds(a, against=b, stopping=stopping, seed=7)
    assert out.run[1].stopping is not None
    assert out.run[1].stopping.rounds == MIN_ROUNDS
    assert f"decided after round {MIN_ROUNDS}" in out.run[1].stopping.stopped
    assert out.run[1].stopping.looks == [8, 16, 32, 40]
    assert out.run[1].stopping.look_confidence == pytest.approx(0.9875)
    assert out.report is not None
    assert out.report.verdict == "reproduced"
    tp = next(
        m for s in out.report.scenarios for m in s.metrics if m.metric == "samples_per_second"
    )
    assert tp.method == "paired-rounds"


@pytest.mark.parametrize("cap", [1, 3, 9])
def test_the_stopping_rule_never_exceeds_its_round_cap(
    root: Path, tmp_path: Path, cap: int
) -> None:
    rng = np.random.Generator(np.random.PCG64(cap))

    def noisy(req: WorkerRequest) -> float:  # +-30 % per test: never decided
        return float(1000 * rng.uniform(0.7, 1.3))

    a, b = _pair(root, tmp_path, f"cap{cap}", speed=noisy)
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=cap), seed=3)
    assert out.run[1].stopping is not None
    assert out.run[1].stopping.rounds == cap
    assert len([t for t in out.run[1].tests if t.mode == "performance"]) == cap
    assert out.report is not None
    assert out.report.verdict.startswith("inconclusive")


def test_the_time_cap_stops_the_rounds(root: Path, tmp_path: Path) -> None:
    rng = np.random.Generator(np.random.PCG64(9))
    a, b = _pair(root, tmp_path, "time", speed=lambda req: float(1000 * rng.uniform(0.7, 1.3)))
    stopping = Stopping(max_rounds=50, max_time_s=1e-9)
    out = run_rounds(a, against=b, stopping=stopping, seed=3)
    assert out.run[1].stopping is not None
    assert out.run[1].stopping.rounds == 2  # the time cap is looked at after a whole pair
    assert "time cap" in out.run[1].stopping.stopped


def test_a_decided_scenario_stops_while_a_noisy_one_gets_the_rounds(
    root: Path, tmp_path: Path
) -> None:
    rng = np.random.Generator(np.random.PCG64(5))

    def speed(req: WorkerRequest) -> float:  # Offline +-30 % per test, SingleStream exact
        return float(1000 * (rng.uniform(0.7, 1.3) if req.scenario == "Offline" else 1.0))

    both: tuple[ScenarioName, ...] = ("SingleStream", "Offline")
    a, b = (
        _replayer(root, tmp_path, f"open-{side}", InProcessRunner(speed=speed), both)
        for side in "ab"
    )
    stopping = Stopping(max_rounds=12)
    out = run_rounds(a, against=b, stopping=stopping, seed=11)
    stop = out.run[1].stopping
    assert stop is not None
    assert stop.rounds == 12
    assert stop.decided_after == {"SingleStream": 8}
    for record in (out.run[1], out.baseline[1] if out.baseline else None):
        assert record is not None
        runs = {s: [t.repeat for t in record.tests if t.scenario == s] for s in both}
        assert runs == {"SingleStream": list(range(1, 9)), "Offline": list(range(1, 13))}
    assert out.report is not None
    verdicts = {s.scenario: s.verdict for s in out.report.scenarios}
    assert verdicts["SingleStream"] == "reproduced"
    assert verdicts["Offline"].startswith("inconclusive")
    assert any("SingleStream after round 8" in n for n in out.report.notes)


def test_a_scenario_the_baseline_lacks_stops_after_the_first_pair_of_rounds(
    root: Path, tmp_path: Path
) -> None:
    factors = itertools.cycle([0.6, 1.4, 1.0, 1.3, 0.7, 0.9, 1.2])

    def noisy(req: WorkerRequest) -> float:  # never decided within 5 rounds
        return 1000 * next(factors)

    a = _replayer(
        root, tmp_path, "lacks-a", InProcessRunner(speed=noisy), ("SingleStream", "Offline")
    )
    b = _replayer(root, tmp_path, "lacks-b", InProcessRunner(speed=noisy), ("Offline",))
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=5), seed=2)
    assert out.run[1].stopping is not None
    assert out.run[1].stopping.rounds == 5
    assert out.run[1].stopping.decided_after == {}
    assert [t.repeat for t in out.run[1].tests if t.scenario == "SingleStream"] == [1, 2]
    assert [t.repeat for t in out.run[1].tests if t.scenario == "Offline"] == [1, 2, 3, 4, 5]


def test_interleaved_rounds_stop_only_after_a_whole_pair(root: Path, tmp_path: Path) -> None:
    a, b = _pair(root, tmp_path, "pairs")
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=20, min_rounds=7), seed=4)
    assert out.run[1].stopping is not None
    assert out.run[1].stopping.looks == [8, 16, 20]  # the first look waits for the pair
    assert out.run[1].stopping.rounds == 8


def _sided(
    root: Path,
    tmp_path: Path,
    tag: str,
    runners: tuple[InProcessRunner, InProcessRunner],
    probes: tuple[FakeProbes, FakeProbes] | None = None,
) -> tuple[Replayer, Replayer]:
    a, b = (_replayer(root, tmp_path, f"{tag}-{s}", r) for s, r in zip("ab", runners, strict=True))
    if probes is not None:
        a.probes, b.probes = probes
    return a, b


@pytest.mark.parametrize(("seed", "first_in_round_3"), [(1, "b"), (2, "a")])
def test_a_query_one_side_sized_is_the_others_from_the_next_test_and_the_odd_round_is_left_out(
    root: Path, tmp_path: Path, seed: int, first_in_round_3: str
) -> None:
    # the replay's Offline test of round 3 ends too soon and is resized (as LoadGen advises);
    # the baseline ran round 3 first with the spec's query: that round pairs two different
    # tests, and from round 4 both sides run the resized query
    def sized(req: WorkerRequest) -> dict[str, SettingChange]:
        if req.changed_settings or not req.output_dir.endswith("/run_3"):
            return dict(req.changed_settings)
        return {"offline_expected_qps": SettingChange(spec=1e6, used=2e6, why="too short")}

    def never(req: WorkerRequest) -> dict[str, SettingChange]:
        return dict(req.changed_settings)

    a, b = _sided(
        root,
        tmp_path,
        f"sized{seed}",
        (InProcessRunner(sizing=sized), InProcessRunner(sizing=never)),
    )
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=12, fixed=True), seed=seed)
    assert out.baseline is not None
    used = {
        side: [t.changed_settings.get("offline_expected_qps") for t in record.tests]
        for side, record in (("a", out.run[1]), ("b", out.baseline[1]))
    }
    order_3 = out.run[1].interleave.orders[2]  # type: ignore[index]
    assert order_3[0] == first_in_round_3
    # round 3: the replay resized; the baseline did too only if it ran after it
    assert used["a"][2] is not None
    assert (used["b"][2] is not None) == (first_in_round_3 == "a")
    for side in "ab":  # every later test of both sides starts from the sized query
        assert all(c is not None and c.used == 2e6 for c in used[side][3:])
    assert out.report is not None
    left = [n for n in out.report.notes if "left out" in n]
    if order_3 == ["b", "a"]:
        assert left == [
            "Offline: 1 of 12 round(s) left out, their two tests ran different LoadGen settings "
            "(round 3: offline_expected_qps 1e+06 (baseline) vs 2e+06 (replay)); the rest are "
            "judged"
        ]
        [row] = [
            m for s in out.report.scenarios for m in s.metrics if m.metric == "samples_per_second"
        ]
        assert len(row.original) == len(row.replay) == 11
    else:
        assert left == []


def test_the_busier_side_being_the_slower_one_is_inconclusive_machine_busy(
    root: Path, tmp_path: Path
) -> None:
    # identical software, but the replay's tests ran beside other work (70 % of the CPU time,
    # the baseline's 5 %) and were 30 % slower: not the software's doing
    def speed(slow: float) -> Any:
        return lambda req: 1000.0 * slow

    a, b = _sided(
        root,
        tmp_path,
        "busy",
        (InProcessRunner(speed=speed(0.7)), InProcessRunner()),
        (FakeProbes(others=[0.70]), FakeProbes(others=[0.05])),
    )
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=8, fixed=True), seed=1)
    assert out.report is not None
    [row] = [m for s in out.report.scenarios for m in s.metrics if m.metric == "samples_per_second"]
    assert row.verdict == "inconclusive: machine busy"
    assert row.raw_verdict == "not reproduced"
    assert "other work took 5 % beside the baseline, 70 % beside the replay" in row.reason
    assert out.report.verdict == "inconclusive: machine busy"


@pytest.mark.parametrize(
    ("replay_others", "replay_speed", "verdict"),
    [
        (0.05, 0.7, "not reproduced"),  # both quiet: the software is slower
        (0.70, 1.3, "not reproduced"),  # busier but faster: the load cannot explain it
        (0.70, 1.0, "reproduced"),  # busier and as fast: reproduced stays possible
    ],
)
def test_a_busy_side_excuses_only_its_own_slowness(
    root: Path, tmp_path: Path, replay_others: float, replay_speed: float, verdict: str
) -> None:
    a, b = _sided(
        root,
        tmp_path,
        f"excuse-{replay_others}-{replay_speed}",
        (InProcessRunner(speed=lambda req: 1000.0 * replay_speed), InProcessRunner()),
        (FakeProbes(others=[replay_others]), FakeProbes(others=[0.05])),
    )
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=8, fixed=True), seed=1)
    assert out.report is not None
    [row] = [m for s in out.report.scenarios for m in s.metrics if m.metric == "samples_per_second"]
    assert row.verdict == verdict


def test_cpu_time_is_a_second_witness_judged_with_its_own_interval(
    root: Path, tmp_path: Path
) -> None:
    # wall time moves +-30 % a test (a busy neighbour), the CPU cost per sample does not: the
    # wall-time row stays undecided, the CPU-time row is decided and the headline says so
    rng = np.random.Generator(np.random.PCG64(8))

    def wall(req: WorkerRequest) -> float:
        return float(1000 * rng.uniform(0.7, 1.3))

    runners = (
        InProcessRunner(speed=wall, cpu=lambda r: 900.0),
        InProcessRunner(speed=wall, cpu=lambda r: 900.0),
    )
    a, b = _sided(root, tmp_path, "cpu", runners)
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=8, fixed=True), seed=1)
    assert out.report is not None
    rows = {m.metric: m for s in out.report.scenarios for m in s.metrics}
    assert rows["samples_per_cpu_second"].verdict == "reproduced"
    assert rows["samples_per_cpu_second"].judged is False
    assert rows["samples_per_second"].verdict == "inconclusive"
    assert (
        "wall time is undecided and CPU time is decided: samples per CPU second reproduced"
        in rows["samples_per_second"].reason
    )
    for record in (out.run[1], out.baseline[1] if out.baseline else None):
        assert record is not None
        assert all(t.cpu is not None for t in record.tests)


def test_undecided_rounds_say_what_stopped_them_and_what_would_decide_them(
    root: Path, tmp_path: Path
) -> None:
    rng = np.random.Generator(np.random.PCG64(21))

    def noisy(req: WorkerRequest) -> float:
        return float(1000 * rng.uniform(0.9, 1.1))

    a, b = _pair(root, tmp_path, "advice", speed=noisy)
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=8), seed=3)
    assert out.report is not None
    advice = what_would_decide(out.report, out.run[1], duet_fits=True)
    assert advice is not None
    assert advice.startswith(
        "undecided: Offline throughput (the rounds stopped because the round cap (8) was reached)"
    )
    assert "rounds would decide: --max-rounds " in advice
    assert "--duet" in advice
    assert "a quieter machine" not in advice  # nothing else ran beside these rounds
    busy = out.run[1].model_copy(
        update={
            "tests": [
                t.model_copy(
                    update={"probe_after": {**(t.probe_after or {}), "others_cpu_frac": 0.6}}
                )
                for t in out.run[1].tests
            ]
        }
    )
    advice = what_would_decide(out.report, busy, duet_fits=True)
    assert advice is not None
    assert "other work took 60% of the CPU beside these rounds and widened them" in advice
    timed = _pair(root, tmp_path, "advice-time", speed=noisy)
    out = run_rounds(timed[0], against=timed[1], stopping=Stopping(max_rounds=50, max_time_s=1e-9))
    assert out.report is not None
    advice = what_would_decide(out.report, out.run[1], duet_fits=False)
    assert advice is not None
    assert (
        "2 round(s) ran, and a paired verdict needs at least 8: give them more with --max-time"
        in advice
    )
    assert "--duet" not in advice
    same = _pair(root, tmp_path, "advice-none")
    out = run_rounds(same[0], against=same[1], stopping=Stopping(max_rounds=8), seed=3)
    assert out.report is not None
    assert what_would_decide(out.report, out.run[1], duet_fits=True) is None


def _leftovers(tmp_path: Path, sides: tuple[Replayer, ...]) -> list[str]:
    """Half-written runs and scratch folders a failed command left behind."""
    partial = [p.name for p in (tmp_path / "results").rglob(".*.partial")]
    folders = [getattr(s, "_scratch", None) for s in sides]
    scratch = [str(f) for f in folders if f is not None and f.exists()]
    return partial + scratch


def test_a_side_whose_worker_fails_leaves_no_half_written_run(root: Path, tmp_path: Path) -> None:
    """A failed rounds run left a `.partial` and a `repro-requests-*` folder behind."""
    from repro.errors import ReproError, RunError
    from repro.runs.store import load_run

    a = _replayer(root, tmp_path, "k-a", InProcessRunner())
    broken = InProcessRunner()

    def fails(*args: Any, **kwargs: Any) -> int:
        raise RunError("the worker could not start: no such interpreter")

    broken.run = fails  # type: ignore[method-assign]
    b = _replayer(root, tmp_path, "k-b", broken)
    with pytest.raises(ReproError):
        run_rounds(a, against=b, stopping=Stopping(max_rounds=4, fixed=True), seed=7)
    assert _leftovers(tmp_path, (a, b)) == []
    runs = sorted((tmp_path / "results").glob("*/k-*"))
    assert [load_run(r).status for r in runs] == ["interrupted", "interrupted"]


def test_a_worker_killed_from_outside_stops_the_rounds_as_a_run_failure(
    root: Path, tmp_path: Path
) -> None:
    """A worker killed by `docker kill` or the OOM killer is no Ctrl-C: the rounds end as the
    replay's own run does (exit 3, the runs marked interrupted), not as an interruption."""
    from repro.errors import RunError

    a = _replayer(root, tmp_path, "x-a", InProcessRunner())
    b = _replayer(root, tmp_path, "x-b", InProcessRunner({"Offline/performance": "killed"}))
    with pytest.raises(RunError, match="the runs are marked interrupted"):
        run_rounds(a, against=b, stopping=Stopping(max_rounds=4, fixed=True), seed=7)
    assert _leftovers(tmp_path, (a, b)) == []


def test_a_baseline_that_cannot_begin_leaves_nothing_half_written(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro.errors import ArtifactError

    a, b = _pair(root, tmp_path, "f")

    def missing() -> None:
        raise ArtifactError("the baseline's model is missing")

    monkeypatch.setattr(b, "fetch", missing)
    with pytest.raises(ArtifactError):
        run_rounds(a, against=b, stopping=Stopping(max_rounds=4, fixed=True), seed=7)
    assert _leftovers(tmp_path, (a, b)) == []
    assert not list((tmp_path / "results").glob("*/f-b"))  # nothing ran: no run of it


def test_two_replays_of_one_run_id_at_once_say_so(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of two replays started with one --run-id failed "File exists", hint generic."""
    from repro.errors import UsageError

    first = _replayer(root, tmp_path, "same", InProcessRunner())
    first.begin()
    second = _replayer(root, tmp_path, "same", InProcessRunner())
    real_exists = Path.exists
    # the second checked before the first made its folder: the race the check cannot close
    monkeypatch.setattr(
        Path, "exists", lambda p: False if p.name == ".same.partial" else real_exists(p)
    )
    with pytest.raises(UsageError, match="another replay with run id 'same' started at the same"):
        second.begin()
    monkeypatch.undo()
    first.finish()
    assert _leftovers(tmp_path, (first, second)) == []


def test_rounds_judged_against_an_original_on_other_hardware_stop_after_the_first(
    root: Path, tmp_path: Path
) -> None:
    """Not comparable (the hardware differs from the original's, or is unknown) is a fact of
    the machines: no round can change it, so the rounds stop after the first, not at a look."""
    from repro.runs.store import LoadedRun
    from tests.helpers import make_run

    folder = make_run(
        tmp_path / "original",
        throughput=[1000.0] * 3,
        fingerprint={"hardware": {"cpu_model": "Intel(R) Xeon(R) Gold 6230", "logical_cpus": 80}},
    )
    from repro.runs.store import load_run

    original = LoadedRun(folder, "repro", load_run(folder))
    replay = _replayer(root, tmp_path, "other-hw", InProcessRunner())
    said: list[str] = []
    out = run_rounds(
        replay, original=original, stopping=Stopping(max_rounds=16), report=said.append
    )
    assert out.report is not None
    assert out.report.verdict.startswith("not comparable"), out.report.verdict
    stop = out.run[1].stopping
    assert stop is not None
    assert stop.rounds == 1
    assert stop.stopped == (
        f"{out.report.verdict} after round 1: more rounds cannot change the machines"
    )
    assert not any("at most 0 more round" in s for s in said)


def test_a_query_size_is_shared_only_between_sides_of_one_workload(root: Path) -> None:
    """`--against` another model shared the first side's Offline query size: the digits
    model's rate made a ResNet's 200 ms test about 11.5 minutes."""
    from repro.replay.rounds import same_workload
    from repro.spec.io import load_spec, with_backend_options

    digits = load_spec(root / "specs" / "ort-digits.json")
    resnet = load_spec(root / "specs" / "ort-resnet50.json")
    threads = with_backend_options(digits, {"intra_op_threads": 2}, source="a test")
    assert same_workload(digits, threads)  # an A/B of a backend option: one workload
    assert not same_workload(digits, resnet)


def test_advice_that_no_budget_would_follow_is_not_given(root: Path, tmp_path: Path) -> None:
    """The demo's A/A said "more than 1000 rounds would decide: --max-time 254110 (and
    --max-rounds 26556 or more)": 70 hours. Beyond a sensible budget it says what can decide."""
    rng = np.random.Generator(np.random.PCG64(5))

    def very_noisy(req: WorkerRequest) -> float:
        return float(1000 * rng.lognormal(0.0, 1.0))

    a, b = _pair(root, tmp_path, "hopeless", speed=very_noisy)
    out = run_rounds(a, against=b, stopping=Stopping(max_rounds=8), seed=3)
    assert out.report is not None
    advice = what_would_decide(out.report, out.run[1], duet_fits=True)
    assert advice is not None
    assert "no sensible budget decides it on this machine now" in advice
    assert "--max-rounds" not in advice.split("no sensible budget")[1].split("--duet")[0]
