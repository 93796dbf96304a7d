"""The Slurm executor against scripted sbatch/squeue/scontrol answers (the real cluster is
tests/integration/test_dispatch.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from repro.dispatch.executors import slurm as executors
from repro.dispatch.executors.slurm import SlurmExecutor, SlurmOptions, _task_ids
from repro.dispatch.plan import DispatchPlan
from repro.errors import EnvironmentSetupError, RunError, UsageError


class FakeSlurm:
    """Answers each Slurm command from a script; records what was run."""

    def __init__(self, answers: dict[str, list[tuple[int, str, str]]]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def run(self, cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(cmd))
        tool = Path(cmd[0]).name
        rc, out, err = (
            self.answers[tool].pop(0) if len(self.answers[tool]) > 1 else self.answers[tool][0]
        )
        return subprocess.CompletedProcess(cmd, rc, out, err)


@pytest.fixture
def plan(tmp_path: Path) -> DispatchPlan:
    run = tmp_path / "results" / "digits" / ".r1.partial"
    (run / "dispatch").mkdir(parents=True)
    return DispatchPlan(
        run_id="r1",
        run_dir=str(run),
        spec_path="/specs/x.json",
        spec={},
        env="venv",
        cache_dir="/cache",
        parts=4,
        executor="slurm",
        python=["/opt/venv/bin/python"],
    )


def _install(monkeypatch: pytest.MonkeyPatch, fake: FakeSlurm, tools: tuple[str, ...]) -> None:
    monkeypatch.setattr(executors._subprocess, "run", fake.run)
    monkeypatch.setattr(
        executors._subprocess, "which", lambda t: f"/usr/bin/{t}" if t in tools else None
    )


def test_the_batch_script_asks_for_an_array_of_exclusive_nodes(plan: DispatchPlan) -> None:
    ex = SlurmExecutor(SlurmOptions(partition="debug", time="10:00", concurrency=2))
    text = ex.script(plan, Path(plan.run_dir) / "dispatch/plan.json", [0, 1, 3], "digits")
    assert "#SBATCH --array=0-1,3%2" in text
    assert "#SBATCH --exclusive" in text
    assert "#SBATCH --partition=debug" in text
    assert "#SBATCH --time=10:00" in text
    assert f"#SBATCH --output={plan.run_dir}/dispatch/part-%a.out" in text
    assert text.rstrip().endswith('"$SLURM_ARRAY_TASK_ID"')
    assert "-m repro.replay.part" in text
    shared = SlurmExecutor(SlurmOptions(exclusive=False)).script(plan, Path("p"), [0], "d")
    assert "--exclusive" not in shared


def test_submit_then_poll_reads_the_queue_then_the_ended_tasks(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(
        {
            "sbatch": [(0, "42;ci\n", "")],
            "squeue": [
                (0, "42_0|RUNNING|node1\n42_1|PENDING|\n42_2|PENDING|\n42_3|PENDING|\n", ""),
                (0, "42_3|RUNNING|node2\n", ""),
            ],
            "scontrol": [
                (
                    0,
                    "JobId=43 ArrayJobId=42 ArrayTaskId=0 JobState=COMPLETED NodeList=node1\n"
                    "JobId=44 ArrayJobId=42 ArrayTaskId=1 JobState=FAILED NodeList=node2\n"
                    "JobId=42 ArrayJobId=42 ArrayTaskId=2 JobState=CANCELLED NodeList=(null)\n",
                    "",
                )
            ],
        }
    )
    _install(monkeypatch, fake, ("sbatch", "squeue", "scontrol"))
    ex = SlurmExecutor(SlurmOptions())
    assert ex.submit(plan, Path(plan.run_dir) / "dispatch/plan.json", [0, 1, 2, 3]) == "42"
    assert (Path(plan.run_dir) / "dispatch" / "job.sbatch").is_file()
    first = ex.poll()
    assert first[0].state == "RUNNING"
    assert first[0].node == "node1"
    assert first[1].state == "PENDING"
    second = ex.poll()
    assert {i: s.state for i, s in second.items()} == {
        0: "COMPLETED",
        1: "FAILED",
        2: "CANCELLED",
        3: "RUNNING",
    }
    assert second[0].node == "node1"
    assert second[2].node is None


def test_sbatch_refusing_the_job_is_a_usage_error_with_its_reason(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm({"sbatch": [(1, "", "sbatch: error: invalid partition specified: gpu")]})
    _install(monkeypatch, fake, ("sbatch",))
    ex = SlurmExecutor(SlurmOptions(partition="gpu"))
    with pytest.raises(UsageError, match="sbatch refused the job: invalid partition") as exc:
        ex.submit(plan, Path("plan.json"), [0])
    assert "sinfo" in (exc.value.hint or "")
    assert ex.job is None
    assert ex.poll() == {}  # nothing submitted: nothing to poll or cancel
    ex.cancel()


def test_a_controller_that_does_not_answer_keeps_the_last_states(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm({"sbatch": [(0, "42\n", "")], "squeue": [(0, "42_0|RUNNING|n1\n", "")]})
    _install(monkeypatch, fake, ("sbatch", "squeue"))
    ex = SlurmExecutor(SlurmOptions())
    ex.submit(plan, Path("plan.json"), [0])
    assert ex.poll()[0].state == "RUNNING"

    def slow(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(cmd, 30)

    monkeypatch.setattr(executors._subprocess, "run", slow)
    assert ex.poll()[0].state == "RUNNING"
    with pytest.raises(RunError, match="cannot tell whether"):
        ex.alive(["42"])


def test_a_run_folder_an_sbatch_line_cannot_carry_is_refused(plan: DispatchPlan) -> None:
    odd = plan.model_copy(update={"run_dir": "/tmp/my results/%A/run"})
    with pytest.raises(UsageError, match="cannot carry"):
        SlurmExecutor(SlurmOptions()).script(odd, Path("p"), [0], "d")


def test_array_ranges_stay_short() -> None:
    assert executors._ranges(list(range(5000))) == "0-4999"
    assert executors._ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_without_slurm_the_error_says_what_is_missing(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(monkeypatch, FakeSlurm({}), ())
    with pytest.raises(EnvironmentSetupError, match="sbatch"):
        SlurmExecutor(SlurmOptions()).submit(plan, Path("plan.json"), [0])


def test_array_task_ids_as_slurm_writes_them() -> None:
    assert _task_ids("3") == [3]
    assert _task_ids("1-3") == [1, 2, 3]
    assert _task_ids("0,2,5-7%2") == [0, 2, 5, 6, 7]
    assert _task_ids("") == []
    assert _task_ids("(null)") == []


def test_sbatch_that_cannot_reach_slurm_is_an_environment_failure(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro.errors import EnvironmentSetupError

    said = "sbatch: error: Batch job submission failed: Unable to contact slurm controller"
    fake = FakeSlurm({"sbatch": [(1, "", said + " (connect failure)")]})
    _install(monkeypatch, fake, ("sbatch",))
    with pytest.raises(EnvironmentSetupError, match="cannot reach Slurm") as exc:
        SlurmExecutor(SlurmOptions()).submit(plan, Path("plan.json"), [0])
    assert exc.value.exit_code == 3


@pytest.mark.parametrize(
    ("word", "phase"),
    [
        ("PENDING", "pending"),
        ("REQUEUED", "pending"),
        ("RUNNING", "running"),
        ("COMPLETING", "running"),
        ("COMPLETED", "completed"),
        ("CANCELLED", "cancelled"),
        ("CANCELLED+", "cancelled"),
        ("TIMEOUT", "stopped"),
        ("PREEMPTED", "stopped"),
        ("NODE_FAIL", "stopped"),
        ("ENDED", "gone"),
        ("FAILED", "failed"),
        ("OUT_OF_MEMORY", "failed"),
    ],
)
def test_slurms_job_states_in_repros_words(word: str, phase: str) -> None:
    state = executors.part_state(word, "n1", "7_1")
    assert (state.phase, state.state, state.node, state.job_id) == (phase, word, "n1", "7_1")


def test_slurm_says_why_a_timed_out_or_vanished_part_left_no_run() -> None:
    assert executors.part_state("TIMEOUT").why == "the part ran past its --time limit"
    assert "Slurm no longer says why" in (executors.part_state("ENDED").why or "")


def test_an_installed_slurm_with_no_configuration_is_said_as_such(
    plan: DispatchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unconfigured Slurm was blamed on the user's --partition and --time."""
    from repro.errors import EnvironmentSetupError

    said = 'sbatch: error: s_p_parse_file: unable to read "/etc/slurm/slurm.conf": No such file'
    _install(monkeypatch, FakeSlurm({"sbatch": [(1, "", said)]}), ("sbatch",))
    with pytest.raises(EnvironmentSetupError, match="installed here but not configured") as exc:
        SlurmExecutor(SlurmOptions()).submit(plan, Path("plan.json"), [0])
    assert "--partition" not in (exc.value.hint or "")
