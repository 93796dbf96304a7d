"""A served experiment's server as a process: started in the realized environment on 127.0.0.1
and a free port, waited for with a bound, warmed up, described, and stopped by its process group.

The server's output goes to a log in the run's folder (`server.log`, one per start); a server
that exits, never answers its health check, answers a request with an error, or cannot be
reached is a `RunError` (exit 3) that says what happened with the last lines of its log. It runs
in a process group of its own and dies with repro (a lifeline), so that nothing it starts
outlives the replay.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from repro import _subprocess
from repro.atomic import atomic_write_text
from repro.environments.base import RealizedEnvironment
from repro.errors import RunError
from repro.privacy import redact_text
from repro.servers.base import EngineFlags, ServerEngine

HOST: Final = "127.0.0.1"
#: seconds between two health checks, and each one's own deadline
POLL_S: Final = 0.5
CHECK_TIMEOUT_S: Final = 5.0
#: seconds a server has to stop after SIGTERM before SIGKILL
STOP_WAIT_S: Final = 15.0
#: the lines of a server's log an error quotes
TAIL_LINES: Final = 12


def free_port() -> int:
    """A TCP port nobody listens on now, on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _redact_log(path: Path) -> None:
    """The server's log as the run keeps it: home paths written as `~` (transformers names the
    model folder it loads, in the cache under the home directory), never a user's name."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return
    redacted = redact_text(text)
    if redacted != text:
        atomic_write_text(path, redacted)


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of a log, for an error message."""
    if not path.is_file():
        return "(no log)"
    text = path.read_bytes()[-16384:].decode(errors="replace")
    return "\n".join("    " + line for line in text.splitlines()[-lines:]) or "(empty log)"


#: the servers this process started and has not stopped yet, by id: their CPU is the
#: experiment's (both sides' of paired rounds), never other work
_LIVE: dict[int, ServerProcess] = {}


def live_cpu_seconds() -> float:
    """The CPU seconds every live server repro started used so far (`repro.probes.ProbeSet
    .also_own`): a side's probes count the other side's server as the experiment's too, not as
    other work the busy-rounds rule would hold against the rounds."""
    groups = {p.proc.pid for p in list(_LIVE.values()) if p.proc is not None}
    return _group_ticks(groups) / os.sysconf("SC_CLK_TCK") if groups else 0.0


def _group_ticks(groups: set[int]) -> int:
    """The clock ticks the processes of these process groups used, with the children they
    reaped."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        # after the command: state, ppid, pgrp, ...; utime, stime, cutime, cstime are the
        # 12th to 15th
        if len(fields) > 14 and int(fields[2]) in groups:
            ticks += sum(int(f) for f in fields[11:15])
    return ticks


@dataclass
class ServerProcess:
    """One start of a server: its process, where it listens, its log."""

    engine: ServerEngine
    model: Path
    flags: EngineFlags
    log_path: Path
    port: int = 0
    proc: Any = None
    started_unix: float = 0.0
    ready_s: float | None = None
    #: what the server said of itself (`/v1/models`)
    models: dict[str, Any] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def served_name(self) -> str:
        return self.engine.served_name(self.model)

    def command(self, env: RealizedEnvironment) -> list[str]:
        """The server's command line: the environment's Python running the engine's module
        (never a shell line)."""
        args = self.engine.arguments(self.model, HOST, self.port, self.flags)
        return [*env.python, "-m", self.engine.module, *args]

    def start(self, env: RealizedEnvironment) -> None:
        """Start the server on a free port, in its own process group, dying with repro."""
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        variables = {**env.env, **self.engine.variables}
        self.started_unix = time.time()
        self.proc = _subprocess.spawn(
            self.command(env),
            env=variables,
            cwd=self.log_path.parent,
            log_path=self.log_path,
            lifeline=True,
        )
        _LIVE[id(self)] = self

    def wait_ready(self, timeout_s: float, *, say: Callable[[str], None]) -> float:
        """Poll the health check until it answers 200 (bounded); the seconds it took. The
        server exiting or the bound passing is a RunError with its log's last lines."""
        t0 = time.monotonic()
        next_word = t0 + 10.0
        while True:
            if self.proc.poll() is not None:
                raise self._failed(f"exited with status {self.proc.returncode} before it was ready")
            if self._healthy():
                self.ready_s = round(time.monotonic() - t0, 2)
                return self.ready_s
            now = time.monotonic()
            if now - t0 > timeout_s:
                self.stop()
                raise self._failed(
                    f"did not answer {self.engine.ready_path} within {timeout_s:g} s",
                    hint="give it longer (server.startup_timeout_s), or read its log",
                )
            if now >= next_word:  # progress on a wait that may take minutes
                say(
                    f"server: waiting for {self.engine.name} on port {self.port} ({now - t0:.0f} s)"
                )
                next_word = now + 10.0
            time.sleep(POLL_S)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(
                self.root_url + self.engine.ready_path, timeout=CHECK_TIMEOUT_S
            ) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def describe(self) -> dict[str, Any]:
        """What the server says it serves (`/v1/models`); an error said, not raised."""
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=CHECK_TIMEOUT_S) as r:
                data = json.loads(r.read(1 << 20))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return {"error": f"/v1/models: {exc}"}
        self.models = data if isinstance(data, dict) else {"answer": data}
        return self.models

    def warm_up(self, prompts: list[str], *, api: str, max_tokens: int) -> None:
        """Requests sent after the start and never counted (the first answers load kernels,
        allocate caches); an error is the server's, said with its log."""
        for prompt in prompts:
            asked: dict[str, Any] = (
                {"messages": [{"role": "user", "content": prompt}]}
                if api == "chat"
                else {"prompt": prompt}
            )
            body = {"model": self.served_name, **asked, "max_tokens": max_tokens, "temperature": 0}
            path = "/chat/completions" if api == "chat" else "/completions"
            request = urllib.request.Request(
                self.base_url + path,
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=120) as resp:
                    resp.read(1 << 20)
            except urllib.error.HTTPError as exc:
                said = exc.read(500).decode(errors="replace")
                raise self._failed(
                    f"answered a warm-up request with HTTP {exc.code}: {said}"
                ) from None
            except (urllib.error.URLError, OSError) as exc:
                raise self._failed(f"did not answer a warm-up request: {exc}") from None

    def check_alive(self) -> None:
        """A server that died during a test is the run's failure, with its log."""
        if self.proc is not None and self.proc.poll() is not None:
            raise self._failed(f"exited with status {self.proc.returncode} during the run")

    def cpu_seconds(self) -> float:
        """The CPU seconds the server's processes (its process group: an engine forks its
        model's worker) used so far, with the children they reaped: part of the experiment,
        not other work (once the server is stopped and reaped, its time is our children's)."""
        proc = self.proc
        if proc is None:
            return 0.0
        return _group_ticks({proc.pid}) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int | None:
        """SIGTERM to its process group, SIGKILL after a bound; its exit status."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except Exception:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _subprocess.release(proc)
        self.proc = None
        _LIVE.pop(id(self), None)  # reaped: its time is our children's now
        _redact_log(self.log_path)
        code: int | None = proc.returncode
        return code

    def _failed(self, what: str, *, hint: str | None = None) -> RunError:
        return RunError(
            f"the {self.engine.name} server {what}; the last lines of its log "
            f"({self.log_path}):\n{log_tail(self.log_path)}",
            hint=hint or f"read {self.log_path}; `{self.engine.install_hint}` if it is missing",
        )
