"""The `repro` script's entry point: Ctrl-C, SIGTERM or SIGHUP while the command line is still
being imported (the first fraction of a second) end it as quietly as later (exit 130)."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # SIGTERM and SIGHUP during the import end it as Ctrl-C does; the command group puts its
    # own handlers in place for the command itself
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        from repro.cli import main as run
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    run()
