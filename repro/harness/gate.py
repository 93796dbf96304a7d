"""Where and when a worker runs its test: pinned to CPUs, and started at a gate.

Pinning (`os.sched_setaffinity`) keeps a test's threads, LoadGen's and the backend's, on the
CPUs it was given: on this VM, SingleStream's p90 varied 20x less from test to test on one CPU
than wherever the scheduler put it (issue 43). A duet round (Bulej et al., "Duet Benchmarking",
ICPE 2020) runs both sides' tests at the same time, each on its own CPUs, so that a neighbour's
load falls on both alike; the gate makes them start LoadGen together: each worker, loaded and
warmed up, writes `<gate>.ready` and waits for `<gate>.go`, which the orchestrator writes once
both are ready (`open_gates`). Files, not pipes: a worker in a container sees the run folder.

The ready file carries the rate the worker's warm-up measured, and the go file the faster
side's when the two sides run one workload: a short test's Offline query is sized from it
(`repro.harness.sizing`), so both sides of the first duet round run the same query rather than
each its own (a round whose sides ran different settings is left out of the comparison).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

#: how long a worker waits at its gate for the other side, and the orchestrator for both
GATE_TIMEOUT_S = 600.0
#: a worker at its gate looks for the go this often (the two start within about this much);
#: the orchestrator looks for both ready less often: it polls beside the tests it waits for
_POLL_S = 0.0005
_COORDINATOR_POLL_S = 0.005


class GateTimeout(RuntimeError):
    """The other side of a duet round never got ready (it failed, or was killed)."""


def pin(cpus: Sequence[int]) -> None:
    """Run this process (and every thread it starts from now on) on `cpus` only."""
    os.sched_setaffinity(0, set(cpus))


def gate_name(k: int, scenario: str, mode: str) -> str:
    """The gate of round k's test of a scenario in a mode (the same name on both sides)."""
    return f"{k}-{scenario}-{mode}"


def ready_file(gate: Path) -> Path:
    return gate.with_name(gate.name + ".ready")


def go_file(gate: Path) -> Path:
    return gate.with_name(gate.name + ".go")


def wait_at_gate(
    gate: Path, *, rate: float | None = None, timeout_s: float = GATE_TIMEOUT_S
) -> float | None:
    """Say this worker is ready (its warm-up measured `rate` samples/s), and wait until the
    orchestrator opens the gate. Returns the rate both sides size their queries from (the
    faster side's, `open_gates(share_rate=True)`), else `rate`."""
    _put(ready_file(gate), {"pid": os.getpid(), "rate": rate})
    go = go_file(gate)
    deadline = time.monotonic() + timeout_s
    while not go.exists():
        if time.monotonic() > deadline:
            raise GateTimeout(f"the duet gate {gate.name} did not open in {timeout_s:g} s")
        time.sleep(_POLL_S)
    shared = _rate(go)
    return shared if shared is not None else rate


def _put(path: Path, data: dict[str, object]) -> None:
    """Write a gate file whole: the other end sees it only once it is complete."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data))
    partial.replace(path)


def _rate(path: Path) -> float | None:
    """The rate a gate file carries (None: none, or not a positive number)."""
    try:
        found = json.loads(path.read_text()).get("rate")
    except (OSError, ValueError, AttributeError):
        return None
    ok = isinstance(found, int | float) and math.isfinite(found) and found > 0
    return float(found) if ok else None


def done_file(gate: Path) -> Path:
    """Written by the orchestrator once the gate's worker has exited (ready or not)."""
    return gate.with_name(gate.name + ".done")


def open_gates(
    gates: Sequence[Path], *, share_rate: bool = False, timeout_s: float = GATE_TIMEOUT_S
) -> bool:
    """Wait until every gate's worker is ready, then open them all at once; with `share_rate`
    (the sides run one workload) the go carries the fastest warm-up's rate for all. False when
    a worker exited before it was ready (it failed) or the wait timed out: the workers that are
    ready are let go on alone then, so that none waits for a partner that will not come."""
    deadline = time.monotonic() + timeout_s
    while True:
        ready = [ready_file(g).exists() for g in gates]
        if all(ready):
            rates = [r for r in map(_rate, map(ready_file, gates)) if r is not None]
            shared = max(rates) if share_rate and len(rates) == len(gates) else None
            for g in gates:
                _put(go_file(g), {"rate": shared})
            return True
        gone = any(done_file(g).exists() and not r for g, r in zip(gates, ready, strict=True))
        if gone or time.monotonic() > deadline:
            for g, r in zip(gates, ready, strict=True):
                if r:
                    _put(go_file(g), {"rate": None})
            return False
        time.sleep(_COORDINATOR_POLL_S)
