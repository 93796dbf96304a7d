"""Parts gathered into one run: never complete while a part is missing; the executor's state
says why a part left no run."""

from __future__ import annotations

from pathlib import Path

from repro.dispatch.executors.slurm import part_state
from repro.dispatch.gather import gather
from repro.dispatch.plan import DispatchPlan
from repro.runs.record import RunRecord
from tests.helpers import make_run


def _plan(tmp_path: Path, parts: int) -> DispatchPlan:
    return DispatchPlan(
        run_id="r1",
        run_dir=str(tmp_path / ".r1.partial"),
        spec_path="/specs/x.json",
        spec={},
        env="native",
        cache_dir="/cache",
        parts=parts,
        executor="slurm",
        python=["python3"],
    )


def _record() -> RunRecord:
    return RunRecord(
        run_id="r1",
        spec_name="synthetic",
        spec_id="a" * 64,
        spec_path="x.json",
        status="interrupted",
        started_utc="2026-11-30T00:00:00+00:00",
        repro_version="test",
    )


def test_every_part_complete_makes_a_complete_run_of_all_their_tests(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 2)
    for k in range(2):
        make_run(plan.part_dir(k), throughput=[100.0 + k])
    states = {k: part_state("COMPLETED", f"node{k}", f"7_{k}") for k in range(2)}
    run = gather(plan, states, _record(), interrupted=False)
    assert run.status == "complete"
    assert run.message is None
    assert [p.node for p in run.parts] == ["node0", "node1"]
    assert [p.cpu_model for p in run.parts] == ["Test CPU", "Test CPU"]
    offline = run.performance("Offline")
    assert [(t.part, t.repeat, t.dir) for t in offline] == [
        (0, 1, "parts/0/Offline/performance/run_1"),
        (1, 2, "parts/1/Offline/performance/run_1"),
    ]
    assert run.fingerprint["hardware"]["cpu"]["model"] == "Test CPU"


def test_a_missing_part_never_looks_complete_and_says_why(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 4)
    make_run(plan.part_dir(0), throughput=[100.0])
    states = {
        0: part_state("COMPLETED", "n0"),
        1: part_state("CANCELLED", "n1"),
        2: part_state("TIMEOUT", "n2"),
        3: part_state("FAILED", "n3"),
    }
    run = gather(plan, states, _record(), interrupted=False)
    assert [p.status for p in run.parts] == ["complete", "interrupted", "interrupted", "failed"]
    assert run.status == "failed"
    assert run.message is not None
    assert "3 of 4 part(s) did not finish" in run.message
    assert "--resume" in run.message
    assert "TIMEOUT" in (run.parts[2].message or "")


def test_parts_stopped_with_the_replay_are_interrupted(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 3)
    make_run(plan.part_dir(0), throughput=[100.0])
    states = {0: part_state("COMPLETED"), 1: part_state("PENDING"), 2: part_state("ENDED")}
    run = gather(plan, states, _record(), interrupted=True)
    assert [p.status for p in run.parts] == ["complete", "interrupted", "interrupted"]
    assert run.status == "interrupted"


def test_a_part_that_wrote_a_failed_run_is_failed(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 1)
    make_run(plan.part_dir(0), throughput=[100.0], status="failed")
    run = gather(plan, {0: part_state("FAILED", "n0")}, _record(), interrupted=False)
    assert run.parts[0].status == "failed"
    assert run.status == "failed"


def test_gathering_reads_repros_words_whatever_the_executor_says(tmp_path: Path) -> None:
    """An executor of other words (a pod's phases): its phase decides, its word heads the
    message and is recorded as the part's last word."""
    from repro.dispatch.executors.base import PartState

    plan = _plan(tmp_path, 3)
    make_run(plan.part_dir(0), throughput=[100.0])
    states = {
        0: PartState("completed", "Succeeded", "pod-0"),
        1: PartState("stopped", "Evicted", "pod-1", why="the node ran out of memory"),
        2: PartState("failed", "Error", "pod-2"),
    }
    run = gather(plan, states, _record(), interrupted=False)
    assert [(p.status, p.state) for p in run.parts] == [
        ("complete", "Succeeded"),
        ("interrupted", "Evicted"),
        ("failed", "Error"),
    ]
    assert run.parts[1].message == "Evicted: the node ran out of memory"
    assert run.parts[2].message == "Error: it left no run (see dispatch/part-2.out)"
