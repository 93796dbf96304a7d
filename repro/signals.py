"""SIGTERM and SIGHUP (a closed terminal) stop repro as Ctrl-C does: cleanup runs (a run marked
interrupted, temporary files removed, child processes stopped) and the command exits 130."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

from repro.errors import Interrupted


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise Interrupted; the handlers before are put
    back after it. Outside the main thread (a test runner's worker) signals cannot be
    handled: the block runs as it is."""

    def handler(signum: int, frame: object) -> None:
        raise Interrupted()

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
