"""`python -m repro.dispatch PLAN.json K`: run part K of a dispatched replay on this node.

Exit 0 when the part's run is complete, 3 when it is not (its run.json says why), 2 on a bad plan.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m repro.dispatch PLAN.json PART", file=sys.stderr)
        return 2
    from repro.dispatch.part import run_part
    from repro.errors import ReproError

    try:
        return run_part(Path(argv[0]), int(argv[1]))
    except ReproError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
