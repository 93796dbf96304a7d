"""Who runs the parts: this machine, one after the other, or Slurm, as a job array.

An executor submits parts by index, says where each one stands (`poll`), cancels them, and
says which of its earlier jobs still run (`alive`). The part's own run.json says how it ended;
the executor's state says why a part left no run (it failed, was cancelled, ran out of time)
and on which node it ran.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

from repro import _subprocess
from repro.atomic import atomic_write_text
from repro.dispatch.plan import DispatchPlan, SlurmOptions
from repro.errors import ClusterUnavailableError, RunError, UsageError
from repro.runs import layout

#: states of a part that has not finished
WAITING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED"})
ACTIVE = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"})


class PartState(NamedTuple):
    """Where one part stands: a Slurm job state (PENDING, RUNNING, COMPLETED, FAILED,
    CANCELLED, TIMEOUT, ...; ENDED when it left the queue and nothing says how) and the node,
    when known."""

    state: str
    node: str | None = None
    job_id: str | None = None


class Executor(Protocol):
    name: str
    #: the id of the current submission, once there is one
    job: str | None

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        """Start the parts; an id of the submission (a Slurm job id)."""

    def poll(self) -> dict[int, PartState]:
        """The state of every submitted part (none before a submission)."""

    def cancel(self) -> None:
        """Stop every part that has not finished (nothing before a submission)."""

    def alive(self, jobs: list[str]) -> list[str]:
        """Which of these earlier submissions still have parts queued or running."""

    def check(self) -> None:
        """Raise ClusterUnavailableError when parts could not be submitted at all (before
        anything is written for them)."""


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back while a submission is made, so that an interruption
    arrives once its id is known (and the parts can be cancelled), never in between."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class LocalExecutor:
    """The parts on this machine, one at a time, each a fresh `python -m repro.dispatch`; they
    die with this process (a lifeline), so no earlier one is ever alive."""

    name = "local"

    def __init__(self) -> None:
        self.job: str | None = None
        self._queue: list[int] = []
        self._states: dict[int, PartState] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._current: int | None = None
        self._plan: DispatchPlan | None = None
        self._plan_path: Path | None = None
        self._cancelled = False

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        self._plan, self._plan_path = plan, plan_path
        self._queue = list(indices)
        self._states = {i: PartState("PENDING") for i in indices}
        self.job = f"local-{os.getpid()}"
        self._advance()
        return self.job

    def _advance(self) -> None:
        if self._plan is None or self._plan_path is None:
            return
        if self._proc is not None:
            rc = self._proc.poll()
            if rc is None:
                return
            assert self._current is not None
            stopped = self._cancelled or rc in (130, -2, -15)
            state = "COMPLETED" if rc == 0 else ("CANCELLED" if stopped else "FAILED")
            self._states[self._current] = PartState(state, "localhost", self.job)
            _subprocess.release(self._proc)
            self._proc, self._current = None, None
        if self._queue and not self._cancelled:
            index = self._queue.pop(0)
            self._proc = _subprocess.spawn(
                [*self._plan.python, "-m", "repro.dispatch", str(self._plan_path), str(index)],
                env=None,
                cwd=Path(self._plan.run_dir),
                log_path=Path(self._plan.run_dir) / layout.part_log(index),
                lifeline=True,
            )
            self._current = index
            self._states[index] = PartState("RUNNING", "localhost", self.job)

    def poll(self) -> dict[int, PartState]:
        self._advance()
        return dict(self._states)

    def cancel(self) -> None:
        self._cancelled = True
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

    def alive(self, jobs: list[str]) -> list[str]:
        return []

    def check(self) -> None:
        """This machine can always run its parts."""


def _need(tool: str) -> str:
    path = _subprocess.which(tool)
    if path is None:
        raise ClusterUnavailableError(
            f"--on slurm: `{tool}` is not on PATH",
            hint="run on a Slurm login node (slurm-wlm installed, slurm.conf in place), or "
            "replay without --on",
        )
    return path


_ARRAY_TASK = re.compile(r"^(\d+)_(\d+)$")
#: what a folder named in an #SBATCH line may hold (Slurm neither quotes nor escapes there, and
#: expands %A, %a, ...)
_SBATCH_PATH = re.compile(r"^[^\s%\"'\\]+$")


class SlurmExecutor:
    """The parts as one Slurm job array, from a generated batch script kept in the run."""

    name = "slurm"

    def __init__(self, options: SlurmOptions, *, timeout_s: float = 30.0) -> None:
        self.options = options
        self.timeout_s = timeout_s
        self.job: str | None = None
        self._indices: list[int] = []
        self._last: dict[int, PartState] = {}

    def script(self, plan: DispatchPlan, plan_path: Path, indices: list[int], name: str) -> str:
        """The batch script: one array task per part; no code but the plan crosses over."""
        o = self.options
        if not _SBATCH_PATH.match(plan.run_dir):
            raise UsageError(
                f"--on slurm: the run folder {plan.run_dir!r} holds a space, a quote or a '%', "
                "which an #SBATCH line cannot carry",
                hint="use a --results-dir whose path has none",
            )
        array = _ranges(indices) + (f"%{o.concurrency}" if o.concurrency else "")
        lines = [
            "#!/bin/bash",
            f"#SBATCH --job-name=repro-{name}",
            f"#SBATCH --array={array}",
            "#SBATCH --nodes=1",
            "#SBATCH --ntasks=1",
            f"#SBATCH --output={plan.run_dir}/{layout.DISPATCH_FOLDER}/part-%a.out",
            f"#SBATCH --chdir={plan.run_dir}",
        ]
        if o.exclusive:
            lines.append("#SBATCH --exclusive")
        if o.partition:
            lines.append(f"#SBATCH --partition={o.partition}")
        if o.time:
            lines.append(f"#SBATCH --time={o.time}")
        python = " ".join(shlex.quote(p) for p in plan.python)
        lines += [
            "# a part of a repro dispatched replay: `python -m repro.dispatch PLAN PART`",
            f'exec {python} -m repro.dispatch {shlex.quote(str(plan_path))} "$SLURM_ARRAY_TASK_ID"',
        ]
        return "\n".join(lines) + "\n"

    def _run(self, cmd: list[str]) -> subprocess.CompletedProcess[str] | None:
        """A Slurm command; None when it did not answer in time (a busy controller)."""
        try:
            return _subprocess.run(cmd, timeout_s=self.timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        sbatch = _need("sbatch")
        script = Path(plan.run_dir) / layout.DISPATCH_SCRIPT
        name = Path(plan.run_dir).parent.name or "run"
        atomic_write_text(script, self.script(plan, plan_path, indices, name))
        with signals_held():
            proc = self._run([sbatch, "--parsable", str(script)])
            if proc is not None and proc.returncode == 0:
                self.job = proc.stdout.strip().split(";")[0]
        if proc is None:
            raise RunError(
                f"sbatch did not answer within {self.timeout_s:.0f} s ({script})",
                hint="the controller may be busy: check `squeue` for a job of this name, "
                "scancel it, and replay again",
            )
        if self.job is None:
            said = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            said = said.removeprefix("sbatch: error: ")
            if re.search(r"contact|connect|controller|communication|timed out", said, re.I):
                raise ClusterUnavailableError(
                    f"sbatch cannot reach Slurm: {said}",
                    hint="is slurmctld running (`scontrol ping`)? Replay here without --on, "
                    "or where Slurm answers",
                )
            raise UsageError(
                f"sbatch refused the job: {said}",
                hint="check --partition and --time against `sinfo`",
            )
        self._indices = list(indices)
        self._last = {i: PartState("PENDING", None, f"{self.job}_{i}") for i in indices}
        return self.job

    def check(self) -> None:
        """`sbatch` is on PATH (whether the controller answers, only a submission tells)."""
        _need("sbatch")

    def poll(self) -> dict[int, PartState]:
        if self.job is None:
            return {}
        proc = self._run([_need("squeue"), "-h", "-r", "-j", self.job, "-o", "%i|%T|%N"])
        if proc is None or (proc.returncode != 0 and "Invalid job id" not in proc.stderr):
            return dict(self._last)  # the controller is busy: keep the last known states
        queued: dict[int, PartState] = {}
        for line in proc.stdout.splitlines():
            job, _, rest = line.partition("|")
            state, _, node = rest.partition("|")
            m = _ARRAY_TASK.match(job.strip())
            if m:
                queued[int(m.group(2))] = PartState(state.strip(), node.strip() or None, job)
        left = [
            i
            for i in self._indices
            if i not in queued and self._last.get(i, PartState("PENDING")).state in WAITING | ACTIVE
        ]
        final = self._final_states() if left else {}
        for i in self._indices:
            if i in queued:
                self._last[i] = queued[i]
            elif i in left:
                found = final.get(i)
                previous = self._last.get(i, PartState("PENDING"))
                self._last[i] = PartState(
                    found.state if found else "ENDED",
                    (found.node if found else None) or previous.node,
                    f"{self.job}_{i}",
                )
        return dict(self._last)

    def _final_states(self) -> dict[int, PartState]:
        """Ended tasks' states from `scontrol show job` (kept a few minutes after the end),
        else from accounting (`sacct`, where the cluster has it)."""
        states: dict[int, PartState] = {}
        scontrol = _subprocess.which("scontrol")
        proc = self._run([scontrol, "-o", "show", "job", str(self.job)]) if scontrol else None
        for line in proc.stdout.splitlines() if proc is not None else []:
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            node = fields.get("NodeList")
            # one line per task, or one for the tasks that never started ("1-3,5%2")
            for task in _task_ids(fields.get("ArrayTaskId", "")):
                states[task] = PartState(
                    fields.get("JobState", "ENDED"),
                    node if node and node != "(null)" else None,
                    f"{self.job}_{task}",
                )
        sacct = _subprocess.which("sacct")
        if not states and sacct:
            proc = self._run(
                [sacct, "-n", "-P", "-X", "-j", str(self.job), "-o", "JobID,State,NodeList"]
            )
            for line in proc.stdout.splitlines() if proc is not None else []:
                parts = line.split("|")
                m = _ARRAY_TASK.match(parts[0]) if parts else None
                if m and len(parts) >= 3:
                    states[int(m.group(2))] = PartState(
                        parts[1].split()[0], parts[2] or None, parts[0]
                    )
        return states

    def cancel(self) -> None:
        if self.job is None:
            return
        proc = self._run([_need("scancel"), self.job])
        if proc is None or proc.returncode != 0:
            raise RunError(
                f"scancel {self.job} failed: {proc.stderr.strip() if proc else 'no answer'}",
                hint=f"cancel the parts yourself: `scancel {self.job}`",
            )

    def alive(self, jobs: list[str]) -> list[str]:
        ids = [j for j in jobs if j.isdigit()]
        if not ids:
            return []
        proc = self._run([_need("squeue"), "-h", "-j", ",".join(ids), "-o", "%F"])
        if proc is None:
            raise RunError(
                "squeue did not answer: cannot tell whether this run's jobs still run",
                hint="try again in a moment",
            )
        return sorted({line.strip() for line in proc.stdout.splitlines() if line.strip()})


def _ranges(indices: list[int]) -> str:
    """`0-3,7,9-10`: an array spec that stays short for thousands of parts."""
    out: list[str] = []
    ordered = sorted(set(indices))
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}-{prev}" if prev > start else str(start))
        if i is not None:
            start = prev = i
    return ",".join(out)


def _task_ids(text: str) -> list[int]:
    """Array task ids as Slurm writes them: `3`, `1-3`, `0,2,5-7%2`."""
    ids: list[int] = []
    for piece in text.split("%")[0].split(","):
        lo, _, hi = piece.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            ids += range(int(lo), int(hi or lo) + 1)
    return ids
