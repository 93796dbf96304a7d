"""The worker's CPU time over LoadGen's run: the process's, and each thread's.

CPU time is a second witness beside wall time on a shared machine: a neighbour that takes the
CPU away lengthens the wall clock of a test, not the CPU time its work costs (measured under
load here: for ms-scale work the samples per CPU second varied 2.5x less than per wall second;
not for µs-scale work, nor where threads spin while they wait). The process's time comes from
`getrusage` (µs resolution); each thread's from the kernel's scheduler statistics
(`/proc/self/task/<tid>/schedstat`, ns), named by its `comm`, so that a report can tell the
inference threads from LoadGen's own.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TASKS = Path("/proc/self/task")
#: threads shown (by name, busiest first): up to this many
TOP_THREADS = 8


def _process_s() -> tuple[float, float]:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime, use.ru_stime


def _threads_ns() -> dict[int, tuple[str, int]]:
    """tid -> (name, ns on a CPU) of every thread of this process (empty where /proc lacks
    them: not Linux, or schedstats off)."""
    out: dict[int, tuple[str, int]] = {}
    try:
        tasks = list(_TASKS.iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            ns = int((task / "schedstat").read_text().split()[0])
            name = (task / "comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        out[int(task.name)] = (name, ns)
    return out


@dataclass
class CpuClock:
    """Started before LoadGen's test, read after it."""

    wall: float = 0.0
    user: float = 0.0
    system: float = 0.0
    threads: dict[int, tuple[str, int]] | None = None

    def start(self) -> CpuClock:
        self.threads = _threads_ns()
        self.user, self.system = _process_s()
        self.wall = time.perf_counter()
        return self

    def stop(self, samples: int) -> dict[str, Any]:
        """The CPU time since `start`, per thread too, and the samples per CPU second."""
        wall = time.perf_counter() - self.wall
        user, system = _process_s()
        user, system = user - self.user, system - self.system
        before = self.threads or {}
        spent = [
            (name, max(ns - (before[tid][1] if tid in before else 0), 0) / 1e9)
            for tid, (name, ns) in _threads_ns().items()
        ]
        top = sorted(spent, key=lambda kv: -kv[1])[:TOP_THREADS]
        total = user + system
        return {
            "process_s": round(total, 6),
            "user_s": round(user, 6),
            "system_s": round(system, 6),
            "wall_s": round(wall, 6),
            "cpu_per_wall": round(total / wall, 4) if wall > 0 else None,
            "samples_per_cpu_second": round(samples / total, 3) if total > 0 else None,
            "threads": [{"name": n, "cpu_s": round(s, 6)} for n, s in top if s > 0],
        }
