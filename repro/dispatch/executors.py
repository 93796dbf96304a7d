"""Who runs the parts: this machine, one after the other, or Slurm, as a job array.

An executor submits parts by index, says where each one stands (`poll`) and cancels them. The
part's own run.json says how it ended; the executor's state says why a part left no run (it
failed, was cancelled, ran out of time) and on which node it ran.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import NamedTuple, Protocol

from repro import _subprocess
from repro.atomic import atomic_write_text
from repro.dispatch.plan import DispatchPlan, SlurmOptions
from repro.errors import EnvironmentSetupError, RunError

#: states of a part that has not finished
WAITING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED"})
ACTIVE = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"})


class PartState(NamedTuple):
    """Where one part stands: a Slurm job state (PENDING, RUNNING, COMPLETED, FAILED,
    CANCELLED, TIMEOUT, ...) and the node, when known."""

    state: str
    node: str | None = None
    job_id: str | None = None


class Executor(Protocol):
    name: str

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        """Start the parts; an id of the submission (a Slurm job id)."""

    def poll(self) -> dict[int, PartState]:
        """The state of every submitted part."""

    def cancel(self) -> None:
        """Stop every part that has not finished."""


def part_log(plan: DispatchPlan, index: int) -> Path:
    return plan.dispatch_dir() / f"part-{index}.out"


class LocalExecutor:
    """The parts on this machine, one at a time, each a fresh `python -m repro.dispatch`."""

    name = "local"

    def __init__(self) -> None:
        self._queue: list[int] = []
        self._states: dict[int, PartState] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._current: int | None = None
        self._plan: DispatchPlan | None = None
        self._plan_path: Path | None = None

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        self._plan, self._plan_path = plan, plan_path
        self._queue = list(indices)
        self._states = {i: PartState("PENDING") for i in indices}
        self._advance()
        return f"local-{os.getpid()}"

    def _advance(self) -> None:
        assert self._plan is not None
        assert self._plan_path is not None
        if self._proc is not None:
            rc = self._proc.poll()
            if rc is None:
                return
            assert self._current is not None
            state = "COMPLETED" if rc == 0 else ("CANCELLED" if rc in (130, -2, -15) else "FAILED")
            self._states[self._current] = PartState(state, "localhost")
            _subprocess.release(self._proc)
            self._proc, self._current = None, None
        if self._queue:
            index = self._queue.pop(0)
            self._proc = _subprocess.spawn(
                [*self._plan.python, "-m", "repro.dispatch", str(self._plan_path), str(index)],
                env=None,
                cwd=Path(self._plan.run_dir),
                log_path=part_log(self._plan, index),
                lifeline=True,
            )
            self._current = index
            self._states[index] = PartState("RUNNING", "localhost")

    def poll(self) -> dict[int, PartState]:
        self._advance()
        return dict(self._states)

    def cancel(self) -> None:
        self._queue.clear()
        for i, s in self._states.items():
            if s.state == "PENDING":
                self._states[i] = PartState("CANCELLED")
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            self._advance()


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise EnvironmentSetupError(
            f"--on slurm: `{tool}` is not on PATH",
            hint="run on a Slurm login node (slurm-wlm installed, slurm.conf in place), or "
            "replay without --on",
        )
    return path


_ARRAY_TASK = re.compile(r"^(\d+)_(\d+)$")


class SlurmExecutor:
    """The parts as one Slurm job array, from a generated batch script kept in the run."""

    name = "slurm"

    def __init__(self, options: SlurmOptions, *, timeout_s: float = 30.0) -> None:
        self.options = options
        self.timeout_s = timeout_s
        self.job_id: str | None = None
        self._indices: list[int] = []
        self._last: dict[int, PartState] = {}

    def script(self, plan: DispatchPlan, plan_path: Path, indices: list[int], name: str) -> str:
        """The batch script: one array task per part; no code but the plan crosses over."""
        o = self.options
        array = ",".join(str(i) for i in indices) + (f"%{o.concurrency}" if o.concurrency else "")
        lines = [
            "#!/bin/bash",
            f"#SBATCH --job-name=repro-{name}",
            f"#SBATCH --array={array}",
            "#SBATCH --nodes=1",
            "#SBATCH --ntasks=1",
            f"#SBATCH --output={plan.dispatch_dir()}/part-%a.out",
            f"#SBATCH --chdir={plan.run_dir}",
        ]
        if o.exclusive:
            lines.append("#SBATCH --exclusive")
        if o.partition:
            lines.append(f"#SBATCH --partition={o.partition}")
        if o.time:
            lines.append(f"#SBATCH --time={o.time}")
        python = " ".join(_quote(p) for p in plan.python)
        lines += [
            "# a part of a repro dispatched replay: `python -m repro.dispatch PLAN PART`",
            f'exec {python} -m repro.dispatch {_quote(str(plan_path))} "$SLURM_ARRAY_TASK_ID"',
        ]
        return "\n".join(lines) + "\n"

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        sbatch = _need("sbatch")
        script = plan.dispatch_dir() / "job.sbatch"
        name = Path(plan.run_dir).parent.name or "run"
        atomic_write_text(script, self.script(plan, plan_path, indices, name))
        proc = _subprocess.run([sbatch, "--parsable", str(script)], timeout_s=self.timeout_s)
        if proc.returncode != 0:
            raise RunError(
                f"sbatch refused the job ({script}): {proc.stderr.strip()[-500:]}",
                hint="check --partition and --time against `sinfo`; the script is kept in the run",
            )
        self.job_id = proc.stdout.strip().split(";")[0]
        self._indices = list(indices)
        self._last = {i: PartState("PENDING", None, f"{self.job_id}_{i}") for i in indices}
        return self.job_id

    def poll(self) -> dict[int, PartState]:
        assert self.job_id is not None, "submit() first"
        squeue = _need("squeue")
        proc = _subprocess.run(
            [squeue, "-h", "-r", "-j", self.job_id, "-o", "%i|%T|%N"], timeout_s=self.timeout_s
        )
        if proc.returncode != 0 and "Invalid job id" not in proc.stderr:
            return dict(self._last)  # the controller is busy: keep the last known states
        queued: dict[int, PartState] = {}
        for line in proc.stdout.splitlines():
            job, _, rest = line.partition("|")
            state, _, node = rest.partition("|")
            m = _ARRAY_TASK.match(job.strip())
            if m:
                queued[int(m.group(2))] = PartState(state.strip(), node.strip() or None, job)
        gone = [i for i in self._indices if i not in queued]
        final = (
            self._final_states()
            if gone
            and any(self._last.get(i, PartState("PENDING")).state in WAITING | ACTIVE for i in gone)
            else {}
        )
        for i in self._indices:
            if i in queued:
                self._last[i] = queued[i]
            elif self._last.get(i, PartState("PENDING")).state in WAITING | ACTIVE:
                previous = self._last.get(i, PartState("PENDING"))
                found = final.get(i)
                self._last[i] = PartState(
                    found.state if found else "ENDED",
                    (found.node if found else None) or previous.node,
                    f"{self.job_id}_{i}",
                )
        return dict(self._last)

    def _final_states(self) -> dict[int, PartState]:
        """Ended tasks' states from `scontrol show job` (kept a few minutes after the end),
        else from accounting (`sacct`, where the cluster has it)."""
        states: dict[int, PartState] = {}
        scontrol = shutil.which("scontrol")
        if scontrol:
            proc = _subprocess.run(
                [scontrol, "-o", "show", "job", str(self.job_id)], timeout_s=self.timeout_s
            )
            for line in proc.stdout.splitlines():
                fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
                node = fields.get("NodeList")
                # one line per task, or one for tasks that never started ("1-3,5%2")
                for task in _task_ids(fields.get("ArrayTaskId", "")):
                    states[task] = PartState(
                        fields.get("JobState", "ENDED"),
                        node if node and node != "(null)" else None,
                        f"{self.job_id}_{task}",
                    )
        sacct = shutil.which("sacct")
        if not states and sacct:
            proc = _subprocess.run(
                [sacct, "-n", "-P", "-X", "-j", str(self.job_id), "-o", "JobID,State,NodeList"],
                timeout_s=self.timeout_s,
            )
            for line in proc.stdout.splitlines():
                parts = line.split("|")
                m = _ARRAY_TASK.match(parts[0]) if parts else None
                if m and len(parts) >= 3:
                    states[int(m.group(2))] = PartState(
                        parts[1].split()[0], parts[2] or None, parts[0]
                    )
        return states

    def cancel(self) -> None:
        if self.job_id is None:
            return
        scancel = _need("scancel")
        _subprocess.run([scancel, self.job_id], timeout_s=self.timeout_s)


def _task_ids(text: str) -> list[int]:
    """Array task ids as Slurm writes them: `3`, `1-3`, `0,2,5-7%2`."""
    ids: list[int] = []
    for piece in text.split("%")[0].split(","):
        lo, _, hi = piece.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            ids += range(int(lo), int(hi or lo) + 1)
    return ids


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
