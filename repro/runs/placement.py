"""How the tests of paired rounds were placed on the machine, as a run records it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from repro.errors import UsageError

Mode = Literal["sequential", "duet"]


@dataclass(frozen=True)
class Placement:
    """How the rounds' tests are placed: one at a time (on `cpus`, or wherever the scheduler
    puts them) or in duet (two CPU sets, one a side)."""

    mode: Mode = "sequential"
    #: sequential: one set (or none: unpinned); duet: two disjoint sets
    cpus: tuple[tuple[int, ...], ...] = ()

    def describe(self) -> str:
        if self.mode == "duet":
            a, b = (",".join(map(str, s)) for s in self.cpus)
            return (
                f"duet: the two sides' tests of a round ran at the same time, on CPUs {a} and "
                f"{b} (which side on which set followed the round's order)"
            )
        if self.cpus:
            return f"sequential, every test pinned to CPUs {','.join(map(str, self.cpus[0]))}"
        return "sequential, unpinned (wherever the scheduler put each test)"

    def as_record(self) -> dict[str, object]:
        return {"mode": self.mode, "cpus": [list(s) for s in self.cpus]}

    @classmethod
    def from_record(cls, raw: Any) -> Placement | None:
        """The placement a run's `interleave.placement` holds; None when it holds none."""
        if not isinstance(raw, dict) or raw.get("mode") not in ("sequential", "duet"):
            return None
        sets = raw.get("cpus") or []
        if not all(isinstance(c, list) and all(isinstance(x, int) for x in c) for c in sets):
            return None
        placed = cls(raw["mode"], tuple(tuple(c) for c in sets))
        return placed if placed.mode == "sequential" or len(placed.cpus) == 2 else None


def parse_cpus(text: str, *, option: str = "--cpus") -> tuple[int, ...]:
    """`0-3,6` -> (0, 1, 2, 3, 6): CPUs this process may run on, or bad input. A range past
    the CPUs this process may use is refused by its ends, never built (`0-99999999999`)."""
    allowed = sorted(os.sched_getaffinity(0))
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise UsageError(f"{option} {text!r}: expected CPUs like 0-3,6") from None
        if first > last or first < 0:
            raise UsageError(f"{option} {text!r}: {part!r} is not a range of CPUs")
        if last > allowed[-1]:
            raise UsageError(
                f"{option} {text!r}: CPU {last} is not among this process's ({_ranges(allowed)})",
                hint="`nproc` and `taskset -p $$` say which CPUs this shell may use",
            )
        cpus += range(first, last + 1)
    outside = sorted(set(cpus) - set(allowed))
    if outside:
        raise UsageError(
            f"{option} {text!r}: CPU(s) {outside} are not among this process's "
            f"({_ranges(allowed)})",
            hint="`nproc` and `taskset -p $$` say which CPUs this shell may use",
        )
    return tuple(sorted(set(cpus)))


def _ranges(cpus: Sequence[int]) -> str:
    return ",".join(map(str, cpus))
