"""`--on local`: the parts on this machine, one at a time, each a fresh
`python -m repro.replay.part`.

They die with this process (a lifeline), so no earlier one is ever alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final

from repro import _subprocess
from repro.dispatch.executors.base import (
    PART_MODULE,
    ExecutorOptions,
    ExecutorPlugin,
    PartState,
    Phase,
)
from repro.runs import layout

if TYPE_CHECKING:
    from repro.dispatch.plan import DispatchPlan

#: the states this executor says, in repro's words (it says them as Slurm does)
_PHASES: Final[dict[str, Phase]] = {
    "PENDING": "pending",
    "RUNNING": "running",
    "COMPLETED": "completed",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
}
#: the node a local part runs on
NODE: Final = "localhost"


def _state(word: str, job: str | None = None) -> PartState:
    return PLUGIN.state(word, NODE if job is not None else None, job)


class LocalOptions(ExecutorOptions):
    """None: this machine runs its parts one at a time."""


class LocalExecutor:
    """The parts on this machine, one at a time."""

    name = "local"

    def __init__(self, options: ExecutorOptions | None = None) -> None:
        assert options is None or isinstance(options, LocalOptions), options
        self.options = options or LocalOptions()
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
        self._states = {i: _state("PENDING") for i in indices}
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
            word = "COMPLETED" if rc == 0 else ("CANCELLED" if stopped else "FAILED")
            self._states[self._current] = _state(word, self.job)
            _subprocess.release(self._proc)
            self._proc, self._current = None, None
        if self._queue and not self._cancelled:
            index = self._queue.pop(0)
            self._proc = _subprocess.spawn(
                [*self._plan.python, "-m", PART_MODULE, str(self._plan_path), str(index)],
                env=None,
                cwd=Path(self._plan.run_dir),
                log_path=Path(self._plan.run_dir) / layout.part_log(index),
                lifeline=True,
            )
            self._current = index
            self._states[index] = _state("RUNNING", self.job)

    def poll(self) -> dict[int, PartState]:
        self._advance()
        return dict(self._states)

    def cancel(self) -> None:
        self._cancelled = True
        self._queue.clear()
        for i, s in self._states.items():
            if s.phase == "pending":
                self._states[i] = _state("CANCELLED")
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


class LocalPlugin(ExecutorPlugin):
    name: ClassVar[str] = "local"
    where = "on this machine, one after the other"
    options_model = LocalOptions
    executor = "repro.dispatch.executors.local:LocalExecutor"

    def state(self, word: str, node: str | None = None, job_id: str | None = None) -> PartState:
        """Its words are Slurm's (a word it never says, from another executor: a failure)."""
        return PartState(_PHASES.get(word, "failed"), word, node, job_id)


PLUGIN = LocalPlugin()
