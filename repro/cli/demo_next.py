"""The demo's last line: the one next command that fits this machine, from the demo's reports.

python -m repro.cli.demo_next reports/ort-digits/report.json reports/ort-resnet-small-aa/report.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _read(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def next_step(speed: dict[str, Any] | None, aa: dict[str, Any] | None, spec: str) -> str:
    """What to run next: an original of this machine's own where the shipped one ran on other
    hardware; what decides an undecided A/A; else a model of one's own."""
    if speed is not None and speed.get("verdict") == "not comparable: different hardware":
        why = "; ".join(speed.get("different_hardware") or []) or "other hardware"
        return (
            f"next: the shipped original ran on other hardware ({why}): capture an original "
            f"of this machine, `repro capture --from {spec} --force`; replays here are then "
            "judged against it, speed included"
        )
    if aa is not None and str(aa.get("verdict", "")).startswith("inconclusive"):
        return (
            "next: the A/A was undecided (its `next:` line above says why): run it again on a "
            "quieter machine, or with more time (`--max-time 300`)"
        )
    return (
        "next: your own model and data: `repro capture` (docs/bring-your-own-model.md), then "
        "`repro replay` and `repro report --compare` as above"
    )


def main() -> None:
    speed, aa = (_read(Path(p)) for p in sys.argv[1:3])
    spec = sys.argv[3] if len(sys.argv) > 3 else "specs/ort-digits.json"
    print(next_step(speed, aa, spec))


if __name__ == "__main__":
    main()
