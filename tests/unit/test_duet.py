"""Placing paired rounds' tests: --cpus and --duet, checked before anything runs; the gate."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from repro.duet import duet_fits, placement
from repro.errors import UsageError
from repro.harness.gate import done_file, go_file, open_gates, ready_file, wait_at_gate
from repro.runs.placement import Placement, parse_cpus

CPUS = sorted(os.sched_getaffinity(0))


def test_cpus_are_parsed_and_must_be_this_processs() -> None:
    assert parse_cpus(str(CPUS[0])) == (CPUS[0],)
    assert parse_cpus(f"{CPUS[0]}-{CPUS[-1]}") == tuple(range(CPUS[0], CPUS[-1] + 1))
    with pytest.raises(UsageError, match="expected CPUs like 0-3,6"):
        parse_cpus("one")
    with pytest.raises(UsageError, match=r"CPU 4096 is not among this process's"):
        parse_cpus("4096")
    # a range this machine cannot have is refused by its end, never built in memory
    with pytest.raises(UsageError, match=r"CPU 99999999999 is not among this process's"):
        parse_cpus("0-99999999999")
    with pytest.raises(UsageError, match="is not a range of CPUs"):
        parse_cpus("3-1")


def test_duet_splits_the_cpus_by_the_specs_threads_or_refuses() -> None:
    assert placement(duet=True, cpus=(0, 1), threads=1) == Placement("duet", ((0,), (1,)))
    assert placement(duet=True, cpus=(0, 1, 2, 3), threads=2) == Placement("duet", ((0, 1), (2, 3)))
    with pytest.raises(UsageError, match=r"--duet runs both sides at once on 4 CPUs \(2 a side"):
        placement(duet=True, cpus=(0, 1), threads=2)
    assert placement(duet=False, cpus=(1,), threads=2) == Placement("sequential", ((1,),))
    assert placement(duet=False, cpus=None, threads=2) == Placement()
    assert duet_fits(2, 1)
    assert not duet_fits(2, 2)
    assert not duet_fits(8, 0)


def test_a_placement_round_trips_through_the_record_and_says_what_ran() -> None:
    duet = Placement("duet", ((0,), (1,)))
    assert Placement.from_record(duet.as_record()) == duet
    assert duet.describe().startswith("duet: the two sides' tests of a round ran at the same time")
    assert Placement.from_record({"mode": "duet", "cpus": [[0]]}) is None  # a side is missing
    assert Placement.from_record("nonsense") is None
    assert "unpinned" in Placement().describe()


def test_the_gate_opens_both_at_once_and_never_waits_for_a_side_that_is_gone(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    started: dict[str, float] = {}

    def worker(gate: Path) -> None:
        wait_at_gate(gate, timeout_s=10)
        started[gate.name] = time.monotonic()

    threads = [threading.Thread(target=worker, args=(g,)) for g in (a, b)]
    threads[0].start()
    time.sleep(0.2)  # one side is ready long before the other
    threads[1].start()
    assert open_gates([a, b], timeout_s=10)
    for t in threads:
        t.join()
    assert abs(started["a"] - started["b"]) < 0.1
    # a worker that exited before its gate: the other is let go alone, at once
    c, d = tmp_path / "c", tmp_path / "d"
    ready_file(c).write_text("1")
    done_file(d).write_text("exited")
    t0 = time.monotonic()
    assert not open_gates([c, d], timeout_s=30)
    assert time.monotonic() - t0 < 1
    assert go_file(c).exists()
    assert not go_file(d).exists()


def test_the_gate_gives_both_sides_the_faster_warm_ups_rate_when_they_share_a_workload(
    tmp_path: Path,
) -> None:
    """A short Offline test's query is sized from the warm-up's rate: each side sizing its own
    in a duet's first round ran different queries, and that round never counted."""
    for share, want in ((True, {"a": 400.0, "b": 400.0}), (False, {"a": 300.0, "b": 400.0})):
        folder = tmp_path / str(share)
        folder.mkdir()
        got: dict[str, float | None] = {}

        def worker(gate: Path, rate: float, got: dict[str, float | None]) -> None:
            got[gate.name] = wait_at_gate(gate, rate=rate, timeout_s=10)

        threads = [
            threading.Thread(target=worker, args=(folder / name, rate, got))
            for name, rate in (("a", 300.0), ("b", 400.0))
        ]
        for t in threads:
            t.start()
        assert open_gates([folder / "a", folder / "b"], share_rate=share, timeout_s=10)
        for t in threads:
            t.join()
        assert got == want
