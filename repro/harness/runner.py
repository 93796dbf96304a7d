"""How the orchestrator runs a worker: a fresh process in the realized environment.

`ProcessRunner` starts `python -m repro.harness REQUEST.json` (tied to this process by a
lifeline, so it never outlives a replay), waits, stops it cleanly on an interruption and redacts
its log. Tests replace it with an in-process fake (`tests/fakes.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any, Protocol

from repro import _subprocess
from repro.atomic import atomic_write_text
from repro.environments.base import RealizedEnvironment
from repro.privacy import redact_text
from repro.runs import layout


class WorkerRunner(Protocol):
    """How the orchestrator runs the worker: a process in the realized environment, or a fake."""

    def fingerprint(self, env: RealizedEnvironment) -> dict[str, Any]:
        """The fingerprint of the environment the worker runs in."""

    def run(
        self, env: RealizedEnvironment, request: Path, out_dir: Path, *, timeout_s: float
    ) -> int:
        """Run one test; the exit status of the worker."""


class ProcessRunner:
    """Each test in a fresh worker process (`python -m repro.harness`), as pyperf does."""

    def __init__(self) -> None:
        self._current: Any = None  # the worker running now (`stop` ends it from another thread)

    def fingerprint(self, env: RealizedEnvironment) -> dict[str, Any]:
        from repro.backends.registry import result_variables

        allowed = "--variables=" + ",".join(sorted(result_variables()))
        proc = _subprocess.run(
            [*env.python, "-m", "repro.machine.fingerprint", allowed], env=env.env, timeout_s=120
        )
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:]}
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    def run(
        self, env: RealizedEnvironment, request: Path, out_dir: Path, *, timeout_s: float
    ) -> int:
        proc = _subprocess.spawn(
            env.worker_command(request.resolve()),
            env=env.env,
            cwd=out_dir,
            log_path=out_dir / layout.WORKER_LOG,
            lifeline=True,
        )
        self._current = proc
        try:
            rc: int = proc.wait(timeout=timeout_s)
        except BaseException:
            _stop(proc)
            raise
        finally:
            self._current = None
            _subprocess.release(proc)
            _redact_file(out_dir / layout.WORKER_LOG)
        return rc

    def stop(self) -> None:
        """End the worker running now, if any (a duet round interrupted in the other thread)."""
        proc = self._current
        if proc is not None:
            _stop(proc)


def _redact_file(path: Path) -> None:
    """Rewrite a text file of ours (a worker's log) with the home directory redacted."""
    if path.is_file():
        text = path.read_text(errors="replace")
        redacted = redact_text(text)
        if redacted != text:
            atomic_write_text(path, redacted)


def _stop(proc: Any) -> None:
    """Stop a worker: SIGINT (LoadGen flushes its logs), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=5)
    except Exception:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
