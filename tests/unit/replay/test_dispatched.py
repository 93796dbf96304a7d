"""The dispatch use case with a scripted executor: whatever happens between submission and the
end (done, Ctrl-C, an error, a killed orchestrator), nothing keeps running unattended and the
run is left findable and resumable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.dispatch.executors.base import PartState
from repro.dispatch.executors.slurm import SlurmOptions, part_state
from repro.dispatch.plan import DispatchPlan
from repro.errors import RunError, UsageError
from repro.replay import dispatched as dispatch_run
from repro.replay.dispatched import DispatchInterrupted, _run_parts, resume
from repro.runs import layout
from repro.runs.record import DispatchRecord, RunRecord
from repro.runs.store import load_run
from tests.helpers import make_run, write_record


class ScriptedExecutor:
    """Parts that 'run' by writing their run folder when polled; can be told to fail."""

    name = "slurm"
    options = SlurmOptions()

    def __init__(self, plan_dir: Path, *, fail_submit: bool = False, interrupt_at: int = -1):
        self.job: str | None = None
        self.fail_submit = fail_submit
        self.interrupt_at = interrupt_at
        self.polls = 0
        self.cancelled = False
        self.indices: list[int] = []
        self.plan_dir = plan_dir
        self.still_alive: list[str] = []

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        if self.fail_submit:
            raise UsageError("sbatch refused the job: invalid partition specified: nope")
        self.job, self.indices = "42", indices
        return self.job

    def poll(self) -> dict[int, PartState]:
        if self.job is None:
            return {}
        self.polls += 1
        if self.polls == self.interrupt_at:
            raise KeyboardInterrupt
        if self.cancelled:
            return {i: part_state("CANCELLED", "n1", f"42_{i}") for i in self.indices}
        for i in self.indices:
            make_run(Path(self.plan_dir) / "parts" / str(i), throughput=[100.0 + i])
        return {i: part_state("COMPLETED", "n1", f"42_{i}") for i in self.indices}

    def cancel(self) -> None:
        self.cancelled = True

    def alive(self, jobs: list[str]) -> list[str]:
        return self.still_alive

    def check(self) -> None:
        pass


def _start(tmp_path: Path, parts: int = 2) -> tuple[DispatchPlan, RunRecord, Path, Path]:
    final = tmp_path / "results" / "synthetic" / "r1"
    work = layout.partial_of(final)
    work.mkdir(parents=True)
    plan = DispatchPlan(
        run_id="r1",
        run_dir=str(work),
        spec_path="/s.json",
        spec={},
        env="native",
        cache_dir="/c",
        parts=parts,
        executor="slurm",
        python=["python3"],
    )
    record = RunRecord(
        run_id="r1",
        spec_name="synthetic",
        spec_id="a" * 64,
        spec_path="s.json",
        status="interrupted",
        started_utc="2026-11-30T00:00:00+00:00",
        repro_version="t",
        dispatch=DispatchRecord(executor="slurm"),
    )
    return plan, record, work, final


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch_run, "POLL_S", 0.0)
    monkeypatch.setattr(dispatch_run, "CANCEL_WAIT_S", 0.5)
    monkeypatch.setattr(dispatch_run, "VISIBLE_WAIT_S", 0.0)


def test_parts_done_make_a_complete_run_under_its_final_name(tmp_path: Path) -> None:
    plan, record, work, final = _start(tmp_path)
    ex = ScriptedExecutor(work)
    out, run = _run_parts(
        plan, record, [0, 1], ex, work=work, final=final, report=print, fresh=True
    )
    assert out == final
    assert run.status == "complete"
    assert not work.exists()
    assert load_run(final).dispatch.jobs == ["42"]  # type: ignore[union-attr]


def test_ctrl_c_cancels_the_parts_and_leaves_an_interrupted_resumable_run(tmp_path: Path) -> None:
    plan, record, work, final = _start(tmp_path)
    ex = ScriptedExecutor(work, interrupt_at=1)
    with pytest.raises(DispatchInterrupted) as stop:
        _run_parts(plan, record, [0, 1], ex, work=work, final=final, report=print, fresh=True)
    assert ex.cancelled
    assert stop.value.final == final
    saved = load_run(final)
    assert saved.status == "interrupted"
    assert [p.status for p in saved.parts] == ["interrupted", "interrupted"]
    assert f"repro replay --resume {final}" in (saved.message or "")


def test_a_refused_first_submission_leaves_no_run(tmp_path: Path) -> None:
    plan, record, work, final = _start(tmp_path)
    with pytest.raises(UsageError, match="invalid partition"):
        _run_parts(
            plan,
            record,
            [0, 1],
            ScriptedExecutor(work, fail_submit=True),
            work=work,
            final=final,
            report=print,
            fresh=True,
        )
    assert not work.exists()
    assert not final.exists()


def _dispatched_run(tmp_path: Path) -> Path:
    """A finished dispatched run whose part 1 was cancelled."""
    plan, record, work, final = _start(tmp_path)
    ex = ScriptedExecutor(work)
    _run_parts(plan, record, [0, 1], ex, work=work, final=final, report=print, fresh=True)
    doc = json.loads((final / "run.json").read_text())
    doc["parts"][1]["status"] = "interrupted"
    write_record(final / "run.json", doc)
    return final


def test_a_refused_resubmission_leaves_the_run_where_it_was(tmp_path: Path) -> None:
    final = _dispatched_run(tmp_path)
    with pytest.raises(UsageError, match="invalid partition"):
        resume(final, lambda plan: ScriptedExecutor(plan.run_dir, fail_submit=True), print)
    assert final.is_dir()
    assert not layout.partial_of(final).exists()
    assert load_run(final).parts[0].status == "complete"


def test_resume_waits_for_jobs_of_the_run_that_still_run(tmp_path: Path) -> None:
    final = _dispatched_run(tmp_path)
    ex = ScriptedExecutor(final)
    ex.still_alive = ["42"]
    with pytest.raises(UsageError, match="still queued or running") as exc:
        resume(final, lambda plan: ex, print)
    assert "`scancel 42`" in (exc.value.hint or "")  # the executor says how to stop its jobs
    assert final.is_dir()


def test_a_run_whose_replay_was_killed_is_resumed_from_its_provisional_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, record, work, final = _start(tmp_path)

    class Killed(ScriptedExecutor):
        def poll(self) -> dict[int, PartState]:
            raise SystemExit("SIGKILL")  # stands for the orchestrator dying after the submission

    monkeypatch.setattr(dispatch_run, "_cancel", lambda ex, idx: (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        _run_parts(plan, record, [0, 1], Killed(work), work=work, final=final, report=print)
    # what a SIGKILL leaves: the partial with its provisional record, never gathered
    assert load_run(work).message is not None
    assert not final.exists()
    out, run = resume(final, lambda p: ScriptedExecutor(p.run_dir), print)
    assert out == final
    assert run.status == "complete"
    assert not work.exists()


def test_resume_refuses_a_partial_path_and_an_edited_plan(tmp_path: Path) -> None:
    final = _dispatched_run(tmp_path)
    with pytest.raises(UsageError, match="name the run"):
        resume(layout.partial_of(final), lambda p: ScriptedExecutor(p.run_dir), print)
    plan_path = final / layout.DISPATCH_PLAN
    doc = json.loads(plan_path.read_text())
    doc["parts"] = 1
    plan_path.write_text(json.dumps(doc))
    with pytest.raises(Exception, match="does not match the run"):
        resume(final, lambda p: ScriptedExecutor(p.run_dir), print)


def test_a_controller_error_after_submission_still_cancels(tmp_path: Path) -> None:
    plan, record, work, final = _start(tmp_path)

    class Broken(ScriptedExecutor):
        def poll(self) -> dict[int, PartState]:
            if not self.cancelled:
                raise RunError("squeue: socket timed out")
            return super().poll()

    ex = Broken(work)
    with pytest.raises(RunError, match="socket timed out"):
        _run_parts(plan, record, [0, 1], ex, work=work, final=final, report=print, fresh=True)
    assert ex.cancelled
    assert load_run(final).status == "interrupted"


def test_resume_refuses_settings_of_its_own(tmp_path: Path) -> None:
    """A resumed run keeps the settings it started with: a new one would make its parts two
    experiments, and ignoring it silently would be worse."""
    from click.testing import CliRunner

    from repro.cli import cli

    result = CliRunner().invoke(
        cli, ["replay", "--resume", str(tmp_path / "run"), "--min-duration-ms", "300"]
    )
    assert result.exit_code == 2, result.output
    assert "--min-duration-ms would make its parts two experiments" in result.output


def test_a_part_that_finished_before_the_replay_was_killed_is_kept_not_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 after part 0 of 3 finished: the provisional record says no part finished, the
    part's own run.json says part 0 did. Only parts 1 and 2 run again."""
    plan, record, work, final = _start(tmp_path, parts=3)

    class KilledAfterPart0(ScriptedExecutor):
        def poll(self) -> dict[int, PartState]:
            make_run(work / "parts" / "0", throughput=[100.0])
            raise SystemExit("SIGKILL")

    monkeypatch.setattr(dispatch_run, "_cancel", lambda ex, idx: (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        _run_parts(
            plan, record, [0, 1, 2], KilledAfterPart0(work), work=work, final=final, report=print
        )
    kept = (work / "parts" / "0" / "run.json").read_bytes()
    said: list[str] = []
    again = ScriptedExecutor(work)
    _, run = resume(final, lambda p: again, said.append)
    assert again.indices == [1, 2]
    assert "resuming 2 part(s) of 3: [1, 2]" in said
    assert any("part 0 finished before: its results are kept" in line for line in said), said
    assert (final / "parts" / "0" / "run.json").read_bytes() == kept
    assert run.status == "complete"
    assert [p.status for p in run.parts] == ["complete"] * 3
