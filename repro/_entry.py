"""The `repro` script's entry point: Ctrl-C while the command line is still being imported
(the first fraction of a second) ends it as quietly as Ctrl-C later does (exit 130)."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from repro.cli import main as run
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    run()
