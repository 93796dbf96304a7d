"""`--on slurm`: the parts as one Slurm job array, from a generated batch script kept in the run.

Slurm's job states are translated here into repro's words (`part_state`); its options are
checked here before anything reaches the batch script.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final

from pydantic import Field, field_validator

from repro import _subprocess
from repro.atomic import atomic_write_text
from repro.dispatch.executors.base import (
    PART_MODULE,
    UNFINISHED,
    ExecutorFlag,
    ExecutorOptions,
    ExecutorPlugin,
    PartState,
    Phase,
    signals_held,
)
from repro.errors import ClusterUnavailableError, RunError, UsageError
from repro.runs import layout

if TYPE_CHECKING:
    from repro.dispatch.plan import DispatchPlan

#: Slurm's states of a task that waits, and of one that runs
_WAITING: Final = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED"})
_ACTIVE: Final = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"})
#: Slurm's states of a task that Slurm or its node stopped (not a failure of its own)
_STOPPED: Final = frozenset({"PREEMPTED", "DEADLINE", "NODE_FAIL", "BOOT_FAIL", "TIMEOUT"})
#: the word for a task that left the queue when nothing (scontrol, sacct) says how it ended
ENDED: Final = "ENDED"
_WHY: Final = {
    "TIMEOUT": "the part ran past its --time limit",
    ENDED: "it left the queue without a run and Slurm no longer says why",
}


def part_state(word: str, node: str | None = None, job_id: str | None = None) -> PartState:
    """A Slurm job state (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...; ENDED)
    in repro's words."""
    phase: Phase
    if word in _WAITING:
        phase = "pending"
    elif word in _ACTIVE:
        phase = "running"
    elif word == "COMPLETED":
        phase = "completed"
    elif word.startswith("CANCELLED"):
        phase = "cancelled"
    elif word in _STOPPED:
        phase = "stopped"
    elif word == ENDED:
        phase = "gone"
    else:
        phase = "failed"
    return PartState(phase, word, node, job_id, _WHY.get(word))


#: a partition list as sbatch takes it; a time limit in one of sbatch's forms
_PARTITION = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
_TIME = re.compile(
    r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE)$"
)


class SlurmOptions(ExecutorOptions):
    """What `sbatch` is asked for; each value in a form sbatch takes (nothing reaches the batch
    script unchecked, from the command line or from an edited plan)."""

    partition: str | None = None
    exclusive: bool = Field(True, description="a node to each part (benchmarks must not share)")
    time: str | None = Field(None, description="the time limit of each part, as sbatch takes it")
    concurrency: int | None = Field(
        None, ge=1, description="parts running at once (the array's %N)"
    )

    @field_validator("partition")
    @classmethod
    def _partition(cls, value: str | None) -> str | None:
        if value is not None and not _PARTITION.match(value):
            raise ValueError("not a partition name")
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not _seconds(value):
            raise ValueError("not a time limit sbatch takes, or zero")
        return value


def _seconds(text: str) -> float:
    """A Slurm time limit in seconds (inf for UNLIMITED); 0 when it is not one."""
    if text in ("UNLIMITED", "INFINITE"):
        return float("inf")
    if not _TIME.match(text):
        return 0
    days, _, rest = text.rpartition("-")
    fields = [int(x) for x in rest.split(":")]
    if days:  # D-HH[:MM[:SS]]
        h, m, sec = [*fields, 0, 0][:3]
        return int(days) * 86400 + h * 3600 + m * 60 + sec
    if len(fields) == 1:  # minutes
        return fields[0] * 60
    if len(fields) == 2:  # MM:SS
        return fields[0] * 60 + fields[1]
    return fields[0] * 3600 + fields[1] * 60 + fields[2]


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

    def __init__(self, options: ExecutorOptions | None = None, *, timeout_s: float = 30.0) -> None:
        assert options is None or isinstance(options, SlurmOptions), options
        self.options = options or SlurmOptions()
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
            f"# a part of a repro dispatched replay: `python -m {PART_MODULE} PLAN PART`",
            f'exec {python} -m {PART_MODULE} {shlex.quote(str(plan_path))} "$SLURM_ARRAY_TASK_ID"',
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
            unconfigured = r"slurm\.conf|configuration|config source|unable to read|no such file"
            if re.search(unconfigured, said, re.I):
                # an installed Slurm with no configuration: not the user's --partition
                raise ClusterUnavailableError(
                    f"Slurm is installed here but not configured: {said}",
                    hint="configure it (slurm.conf, slurmctld and slurmd running; "
                    "docs/dispatch.md), or replay without --on",
                )
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
        self._last = {i: part_state("PENDING", None, f"{self.job}_{i}") for i in indices}
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
                queued[int(m.group(2))] = part_state(state.strip(), node.strip() or None, job)
        left = [
            i
            for i in self._indices
            if i not in queued and self._last.get(i, part_state("PENDING")).phase in UNFINISHED
        ]
        final = self._final_states() if left else {}
        for i in self._indices:
            if i in queued:
                self._last[i] = queued[i]
            elif i in left:
                found = final.get(i)
                previous = self._last.get(i, part_state("PENDING"))
                self._last[i] = part_state(
                    found.state if found else ENDED,
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
                states[task] = part_state(
                    fields.get("JobState", ENDED),
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
                    states[int(m.group(2))] = part_state(
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


class SlurmPlugin(ExecutorPlugin):
    name: ClassVar[str] = "slurm"
    where = "as a Slurm job array"
    options_model = SlurmOptions
    executor = "repro.dispatch.executors.slurm:SlurmExecutor"
    node_variable = "SLURMD_NODENAME"

    def state(self, word: str, node: str | None = None, job_id: str | None = None) -> PartState:
        return part_state(word, node, job_id)

    def stop_hint(self, jobs: list[str]) -> str:
        return f"`scancel {' '.join(jobs)}`"

    flags = (
        ExecutorFlag(
            "--partition",
            "partition",
            "partition",
            "the jobs' partition.",
            hint="letters, digits, '_', '.', '-'; several separated by ','",
        ),
        ExecutorFlag(
            "--nodes",
            "nodes",
            "concurrency",
            "parts running at once (each on a node of its own with --exclusive).",
            kind="count",
        ),
        ExecutorFlag(
            "--exclusive/--shared",
            "exclusive",
            "exclusive",
            "a whole node to each part (the default: benchmarks must not share a node), or not.",
            kind="switch",
        ),
        ExecutorFlag(
            "--time",
            "time_limit",
            "time",
            "each part's time limit, as sbatch takes it (e.g. 30:00).",
            hint="minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED",
        ),
    )


PLUGIN = SlurmPlugin()
