"""A report's drift table as a person reads it: the CPU flags that differ are one row."""

from __future__ import annotations

from repro.reports.fmt import drift_lines
from repro.reports.model import DriftEntry


def _entry(key: str, original: object, replay: object, impact: int = 72) -> DriftEntry:
    level = "high" if impact >= 70 else "medium"
    return DriftEntry(
        group="hardware", key=key, original=original, replay=replay, impact=impact, level=level
    )


def test_sixteen_cpu_flags_are_one_row_where_the_first_stood() -> None:
    flags = [_entry(f"cpu.flags.avx512_{k:02d}", k % 2 == 0, k % 2 == 1) for k in range(16)]
    drift = [_entry("cpu.model", "Xeon", "EPYC", 95), *flags, _entry("turbo", True, False, 60)]
    lines = drift_lines(drift)
    assert [line.key for line in lines] == ["cpu.model", "16 CPU flag(s) differ", "turbo"]
    row = lines[1]
    assert row.level == "high"
    assert row.original.startswith("only here: avx512_00, avx512_02")
    assert row.original.endswith(", … (+2)")  # 8 of the original's, 6 shown
    assert len(row.flags) == 16
    assert ("avx512_01", "replay") in row.flags


def test_one_flag_keeps_its_own_name_and_other_rows_are_as_they_were() -> None:
    lines = drift_lines([_entry("cpu.flags.avx512f", False, True), _entry("cpu.model", "a", "b")])
    assert [line.key for line in lines] == ["cpu.flags.avx512f", "cpu.model"]
    assert lines[0].original == "-"
    assert lines[0].replay == "only here: avx512f"
    assert (lines[1].original, lines[1].replay, lines[1].flags) == ("a", "b", ())
