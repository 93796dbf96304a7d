"""The worker dies with its orchestrator: a pipe whose other end only the orchestrator holds.

When the orchestrator exits for any reason (even `kill -9`), the kernel closes its end, the
worker's read returns end-of-file and the worker exits at once, so no orphaned benchmark keeps
loading the machine and skewing the next replay. A pipe works through wrappers such as
`nix develop --command` that PR_SET_PDEATHSIG (which only reaches the direct child) does not;
the direct child gets PR_SET_PDEATHSIG as well, where Linux offers it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Final

#: the variable that tells the worker which inherited fd is its lifeline
ENV: Final = "REPRO_LIFELINE_FD"
#: the worker's exit status when its orchestrator is gone
ORPHANED_EXIT: Final = 137
_PR_SET_PDEATHSIG: Final = 1


def open_lifeline() -> tuple[int, int]:
    """(read end for the worker, write end the orchestrator keeps); both close-on-exec."""
    return os.pipe()


def die_with_parent() -> None:
    """preexec_fn for the direct child: SIGKILL when the parent thread goes (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def watch(fd: int, *, on_orphaned: Callable[[], None] | None = None) -> threading.Thread:
    """A daemon thread that ends the process when the other end of `fd` is closed."""

    def run() -> None:
        while True:
            try:
                data = os.read(fd, 1)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                break
        if on_orphaned is not None:
            on_orphaned()
        print("repro worker: the orchestrator is gone; exiting", file=sys.stderr, flush=True)
        os._exit(ORPHANED_EXIT)

    thread = threading.Thread(target=run, name="repro-lifeline", daemon=True)
    thread.start()
    return thread


def watch_from_environment() -> threading.Thread | None:
    """Start the watch when the orchestrator passed a lifeline (`python -m repro.harness`)."""
    value = os.environ.get(ENV)
    if not value:
        return None
    try:
        fd = int(value)
        os.fstat(fd)
    except (ValueError, OSError):
        return None
    return watch(fd)
