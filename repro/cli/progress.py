"""Progress display on stderr: a bar on a terminal, plain lines elsewhere (CI logs).

The bar shows what the wait's forecast says, asked again as the wait goes on: a fraction only
while a measured estimate stands ahead of the elapsed time; past it, that the wait is longer
than estimated (never a bar stuck at 99 %); until a rate is measured on this machine (a test
finished, or an Offline test's own rate so far), the time elapsed and no estimate: one from a
warm-up's call times swung a test's from 8 s to 5.6 min to 87 s.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import TracebackType

import click

from repro.estimates import Estimate, Forecast, Snapshot, duration

WIDTH = 30
#: in a log, a new line when the estimate moves by more than this factor (or becomes known)
RELOG_FACTOR = 1.5


def note(message: str) -> None:
    """A status line on stderr."""
    click.echo(message, err=True)


#: what a wait without a measured rate says instead of an estimate
UNMEASURED = "no rate measured on this machine yet"


def _then(rest: Estimate | None) -> str:
    if rest is None or (rest.known and not rest.seconds):
        return ""
    if not rest.measured:
        return ""  # a guess from warm-ups: said once a rate is measured
    return f"; then about {duration(rest.seconds or 0.0)} more"


def bar_line(label: str, elapsed_s: float, snap: Snapshot) -> str:
    """One redraw of the bar: `label [#####-----] 12.3 s of about 30 s (basis)`, or the time
    elapsed until a rate is measured."""
    test = snap.test
    if not test.measured or test.seconds is None:
        spin = "-\\|/"[int(elapsed_s * 4) % 4]
        return f"{label} [{spin}] {elapsed_s:.1f} s elapsed ({UNMEASURED}){_then(snap.rest)}"
    if elapsed_s >= test.seconds:
        over = f"longer than the {duration(test.seconds)} estimated ({test.basis})"
        return f"{label} [{'~' * WIDTH}] {elapsed_s:.1f} s, {over}{_then(snap.rest)}"
    filled = int(elapsed_s / test.seconds * WIDTH)
    bar = "#" * filled + "-" * (WIDTH - filled)
    return f"{label} [{bar}] {elapsed_s:.1f} s of {test.text()}{_then(snap.rest)}"


def log_line(label: str, snap: Snapshot) -> str:
    """The line a log gets: `label: about 30 s (basis); then about 2 min more`, or that it
    started, until a rate is measured."""
    if not snap.test.measured:
        return f"{label}: started ({UNMEASURED})"
    return f"{label}: {snap.test.text()}{_then(snap.rest)}"


def moved(before: Estimate, now: Estimate) -> bool:
    """Whether a log should say the estimate again: a measured one came, or it moved a lot."""
    if not now.measured or now.seconds is None:
        return False
    if not before.measured or before.seconds is None:
        return True
    ratio = max(now.seconds, 0.1) / max(before.seconds, 0.1)
    return ratio > RELOG_FACTOR or ratio < 1 / RELOG_FACTOR


class TimedBar:
    """The wait for one worker: redrawn from its forecast on a terminal, a line (and a line
    each time the estimate moves much) in a log."""

    def __init__(self, label: str, forecast: Forecast) -> None:
        self.label = label
        self.forecast = forecast
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tty = sys.stderr.isatty()
        self._width = 0

    def __enter__(self) -> TimedBar:
        self._start = time.monotonic()
        first = self.forecast.now()
        if not self._tty:
            note(log_line(self.label, first))
        self._thread = threading.Thread(target=self._run, args=(first.test,), daemon=True)
        self._thread.start()
        return self

    def _run(self, said: Estimate) -> None:
        while not self._stop.wait(0.2 if self._tty else 0.5):
            snap = self.forecast.now()
            if self._tty:
                self._draw(bar_line(self.label, time.monotonic() - self._start, snap))
            elif moved(said, snap.test):
                elapsed = duration(time.monotonic() - self._start)
                note(f"{self.label}: {elapsed} elapsed, {snap.test.text()} in all")
                said = snap.test

    def _draw(self, text: str) -> None:
        self._width = max(self._width, len(text))
        sys.stderr.write("\r" + text.ljust(self._width))
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
        if self._tty and self._width:
            sys.stderr.write("\r" + " " * self._width + "\r")
            sys.stderr.flush()


def warn_if_stale(target: Path) -> None:
    """A file an attestation signed was rewritten by this command: said, with how to attest
    it again (`repro.attest.chain.stale_attestation`)."""
    from repro.attest.chain import stale_attestation

    if said := stale_attestation(target):
        click.secho(f"warning: {said}", err=True, fg="yellow")
