"""How a worker's end is read: killed from outside (a signal, `docker kill`, the OOM killer),
or failed (what its log says, in a line)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from repro.errors import Interrupted
from repro.signals import interruptible

#: a worker's exit status when something outside killed it: SIGKILL or SIGTERM, directly or as
#: a container's status (`docker kill`, the OOM killer) or a shell's (128 + signal)
KILLED_STATUSES = frozenset({-9, -15, 137, 143})


class WorkerKilled(Interrupted):
    """A worker was killed from outside before it finished: the run stops, interrupted."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end the block as Ctrl-C does (a KeyboardInterrupt), so that its
    `finally` blocks remove what it was writing."""
    with interruptible():
        try:
            yield
        except Interrupted:
            raise KeyboardInterrupt from None


def worker_failure(log: str) -> str:
    """What a worker's log says went wrong, in a line: the exception a traceback ends with
    (never the traceback itself), else its last lines."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    if not lines:
        return "its log is empty"
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        raised = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b", line)]
        if raised:
            return raised[-1][:300]
    return " / ".join(lines[-3:])[:300]
