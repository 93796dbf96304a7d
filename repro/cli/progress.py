"""Progress display on stderr: a bar on a terminal, plain lines elsewhere (CI logs)."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

import click


def note(message: str) -> None:
    """A status line on stderr."""
    click.echo(message, err=True)


class TimedBar:
    """A bar that advances with elapsed time against an expected duration, in a thread."""

    def __init__(self, label: str, expected_s: float) -> None:
        self.label = label
        self.expected_s = max(expected_s, 0.1)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tty = sys.stderr.isatty()

    def __enter__(self) -> TimedBar:
        if self._tty:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        else:
            note(f"{self.label} (about {self.expected_s:.0f} s)")
        return self

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(0.2):
            self._draw(time.monotonic() - start)

    def _draw(self, elapsed: float) -> None:
        frac = min(elapsed / self.expected_s, 0.99)
        width = 30
        filled = int(frac * width)
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(f"\r{self.label} [{bar}] {elapsed:5.1f}s")
        sys.stderr.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            sys.stderr.write("\r" + " " * (len(self.label) + 48) + "\r")
            sys.stderr.flush()
