"""The machine's state read by the probes: other processes' share of the CPU time."""

from __future__ import annotations

import resource
from types import SimpleNamespace
from typing import Any

import pytest

from repro.probes import kernels
from repro.probes.kernels import ProbeSet


def _clock(monkeypatch: pytest.MonkeyPatch, readings: list[tuple[float, float, float]]) -> None:
    """Script (seconds since start, machine busy seconds, our own CPU seconds) per probe."""
    it = iter(readings)
    now: dict[str, Any] = {}

    def advance() -> float:
        now["t"], now["busy"], now["own"] = next(it)
        return float(now["busy"])

    def usage(who: int) -> Any:
        own = now["own"] if who == resource.RUSAGE_SELF else 0.0
        return SimpleNamespace(ru_utime=own, ru_stime=0.0)

    monkeypatch.setattr(kernels, "_proc_busy_seconds", advance)
    monkeypatch.setattr(kernels.resource, "getrusage", usage)
    monkeypatch.setattr(kernels.time, "monotonic", lambda: now["t"])
    monkeypatch.setattr(kernels.os, "cpu_count", lambda: 2)


def test_other_processes_share_is_the_machine_busy_time_not_ours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10 s on 2 CPUs: the machine was busy 9 s, 5 s of them ours (this process, its workers)
    _clock(monkeypatch, [(0.0, 100.0, 1.0), (10.0, 109.0, 6.0), (20.0, 114.0, 11.0)])
    probes = ProbeSet(1)
    assert probes._others_cpu() is None  # nothing to compare with yet
    assert probes._others_cpu() == pytest.approx(4 / 20)
    assert probes._others_cpu() == pytest.approx(0.0)  # only our own work


def test_a_share_is_clamped_to_a_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    # jiffies are coarser than rusage: our own time can exceed the machine's busy time a bit
    _clock(monkeypatch, [(0.0, 100.0, 1.0), (1.0, 100.5, 1.6)])
    probes = ProbeSet(1)
    probes._others_cpu()
    assert probes._others_cpu() == 0.0
