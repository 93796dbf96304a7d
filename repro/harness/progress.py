"""The progress file of a running test: what the orchestrator re-estimates its wait from.

The worker writes it once LoadGen is about to start (the inference calls its warm-up timed, and
when LoadGen started); in Offline, whose one query hides how far it is, a thread rewrites it
about once a second with the samples done. Nothing runs in the timed path but the count of an
Offline batch. The orchestrator reads it while it waits and removes it when the worker ends:
it is no part of the run. Writing it is best effort: a file system that refuses it costs the
estimate, never the test.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from repro.estimates import Live

#: seconds before the first count of an Offline test's samples, and between two counts
FIRST_S = 0.5
INTERVAL_S = 1.0


class ProgressFile:
    """The worker's side: `started` after the warm-up, `counting` around an Offline test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._doc: dict[str, object] = {}
        self._broken = False

    def started(self, warm_up_call_s: dict[int, float]) -> None:
        self._doc = {
            "warm_up_call_s": {str(b): t for b, t in warm_up_call_s.items()},
            "loadgen_start_unix": time.time(),
        }
        self._write()

    @contextlib.contextmanager
    def counting(self, done: list[int]) -> Iterator[None]:
        """Rewrite the file with `done[0]` (samples done) after FIRST_S, then every INTERVAL_S,
        while the block runs."""
        stop = threading.Event()

        def count() -> None:
            wait = FIRST_S
            while not stop.wait(wait) and not self._broken:
                wait = INTERVAL_S
                self._doc |= {"samples_done": done[0], "samples_at_unix": time.time()}
                self._write()

        thread = threading.Thread(target=count, name="repro-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            tmp.write_text(json.dumps(self._doc))
            tmp.replace(self.path)
        except OSError:
            self._broken = True  # the estimate goes without it; the test does not


def read_live(path: Path, spawn_unix: float) -> Live | None:
    """The orchestrator's side: what the worker said so far (None before it said anything, or
    when the file is unreadable: it is being replaced, or the worker could not write it)."""
    try:
        doc = json.loads(path.read_text())
        calls = {int(b): float(t) for b, t in doc["warm_up_call_s"].items()}
        start = float(doc["loadgen_start_unix"])
        done = int(doc.get("samples_done", 0))
        at = float(doc.get("samples_at_unix", start))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Live(
        warm_up_call_s=calls,
        loadgen_after_s=max(start - spawn_unix, 0.0),
        samples_done=done,
        samples_after_s=max(at - start, 0.0),
    )
