"""The machine's state read by the probes: other processes' share of the CPU time."""

from __future__ import annotations

import resource
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from repro.probes import kernels
from repro.probes.kernels import ProbeSet


def _clock(
    monkeypatch: pytest.MonkeyPatch, readings: list[tuple[float, float, float]]
) -> Callable[[], float]:
    """Script (seconds since start, machine busy seconds, our own CPU seconds) per probe; the
    returned function advances to the next reading and gives its busy seconds."""
    it = iter(readings)
    now: dict[str, Any] = {}

    def advance() -> float:
        now["t"], now["busy"], now["own"] = next(it)
        return float(now["busy"])

    def usage(who: int) -> Any:
        own = now["own"] if who == resource.RUSAGE_SELF else 0.0
        return SimpleNamespace(ru_utime=own, ru_stime=0.0)

    monkeypatch.setattr(kernels.resource, "getrusage", usage)
    monkeypatch.setattr(kernels.time, "monotonic", lambda: now["t"])
    monkeypatch.setattr(kernels.os, "cpu_count", lambda: 2)
    return advance


def test_other_processes_share_is_the_machine_busy_time_not_ours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10 s on 2 CPUs: the machine was busy 9 s, 5 s of them ours (this process, its workers)
    read = _clock(monkeypatch, [(0.0, 100.0, 1.0), (10.0, 109.0, 6.0), (20.0, 114.0, 11.0)])
    probes = ProbeSet(1)
    assert probes._others_cpu(read()) is None  # nothing to compare with yet
    assert probes._others_cpu(read()) == pytest.approx(4 / 20)
    assert probes._others_cpu(read()) == pytest.approx(0.0)  # only our own work


def test_a_share_is_clamped_to_a_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    # jiffies are coarser than rusage: our own time can exceed the machine's busy time a bit
    read = _clock(monkeypatch, [(0.0, 100.0, 1.0), (1.0, 100.5, 1.6)])
    probes = ProbeSet(1)
    probes._others_cpu(read())
    assert probes._others_cpu(read()) == 0.0


def test_this_machine_s_proc_stat_is_read() -> None:
    stat = kernels._proc_stat()
    assert stat is not None
    total, steal, iowait, busy = stat
    assert 0 < busy <= total
    assert 0 <= steal <= total
    assert 0 <= iowait <= total
    seconds = kernels._busy_seconds(stat)
    assert seconds is not None
    assert seconds > 0


def test_a_probe_reads_the_share_unless_told_the_workers_are_not_its_children() -> None:
    counted = ProbeSet(1)
    counted.measure(repeats=2)
    share = counted.measure(repeats=2).others_cpu_frac
    assert share is not None
    assert 0.0 <= share <= 1.0
    blind = ProbeSet(1, count_others=False)
    blind.measure(repeats=2)
    assert blind.measure(repeats=2).others_cpu_frac is None
    assert "others_cpu_frac" in blind.measure(repeats=2).as_dict()


def test_a_real_probe_measures_both_compute_kernels_and_the_copy() -> None:
    probe = ProbeSet(1).measure(repeats=3)
    assert probe.compute_gflops > 0
    assert probe.compute_large_gflops is not None
    assert probe.compute_large_gflops > 0
    assert probe.memory_gbps > 0
