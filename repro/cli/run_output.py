"""What a command that replays says about the runs it made: a summary or its JSON, and the
replay engine's reporter on a terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from repro.cli.progress import TimedBar, note

if TYPE_CHECKING:
    from repro.estimates import Forecast
    from repro.replay.reporter import RunRole
    from repro.runs.record import ProfileRecord, RunRecord, TestRecord


@dataclass(frozen=True)
class TerminalReporter:
    """The replay engine's reporter (`repro.replay.reporter.ReplayReporter`) on a terminal:
    status lines and bars on stderr; each run on stdout, its summary or (with --json) its
    record, a baseline's summary only without --json."""

    as_json: bool = False
    #: False: no run on stdout (with --claims --json, the claims' JSON is the one document)
    show_runs: bool = True

    def note(self, message: str) -> None:
        note(message)

    def progress(self, label: str, forecast: Forecast) -> contextlib.AbstractContextManager[Any]:
        return TimedBar(label, forecast)

    def run(self, run_dir: Path, record: RunRecord, role: RunRole) -> None:
        if not self.show_runs:
            return
        if role != "baseline":
            print_run(run_dir, record, self.as_json)
        elif not self.as_json:
            print_run_summary(run_dir, record)


def print_run(run_dir: Path, record: RunRecord, as_json: bool) -> None:
    """The run as JSON (--json), or its summary for a person."""
    if as_json:
        click.echo(record.model_dump_json(indent=2, by_alias=True))
    else:
        print_run_summary(run_dir, record)


def print_run_summary(run_dir: Path, record: RunRecord) -> None:
    """The run's status and folder, then a line per part, per test and per profiled pass."""
    click.echo(f"run {record.run_id}: {record.status} -> {run_dir}")
    for part in record.parts:
        where = f" on {part.node}" if part.node else ""
        state = f" ({part.state})" if part.state else ""
        click.echo(f"  part {part.index}{where}: {part.status}{state}")
    for test in record.tests:
        click.echo("  " + "  ".join(_test_line(test)))
    for prof in record.profiles:
        click.echo(
            f"  {prof.scenario:<12} {'profile':<11}  {prof.status.upper()}  {_profiled(prof)}  "
            f"-> {prof.dir}"
        )


def _test_line(t: TestRecord) -> list[str]:
    """A test's scenario, mode and status, its headline figures, and the start of its error."""
    m = t.metrics
    parts = [f"{t.scenario:<12} {t.mode:<11}", t.status.upper()]
    if t.mode == "performance":
        if m.get("samples_per_second") is not None:
            parts.append(f"{float(m['samples_per_second']):.1f} samples/s")
        if m.get("tokens_per_second") is not None:  # an LLM: its MLPerf metric, TTFT, TPOT
            parts.append(f"{float(m['tokens_per_second']):.1f} tokens/s")
            for name, key in (("TTFT p50", "ttft_p50_ns"), ("TPOT p50", "tpot_p50_ns")):
                if (v := m.get(key)) is not None:
                    parts.append(f"{name} {float(v) / 1e6:.3f} ms")
            return _ended(t, m, parts)
        for p in ("p50", "p90", "p99"):
            v = m.get(f"latency_{p}_ns")
            if v is not None:
                parts.append(f"{p} {float(v) / 1e6:.3f} ms")
    elif (acc := t.scored()) is not None and acc.value is not None:
        # a score (ROUGE, as MLPerf prints it) is 0 to 100; a fraction is shown as a percentage
        parts.append(
            f"{acc.metric} {acc.value:.4g}"
            if acc.unit == "score"
            else f"{acc.metric} {100 * acc.value:.2f}%"
        )
    return _ended(t, m, parts)


def _ended(t: TestRecord, m: Any, parts: list[str]) -> list[str]:
    """The line's end: why LoadGen judged it INVALID, the start of its error."""
    if t.status == "invalid" and (why := _why_invalid(m)):
        parts.append(f"({why})")
    if t.error:
        parts.append(t.error.splitlines()[0][:120])
    return parts


#: LoadGen's own criteria of a VALID run, as its summary states them
_MINIMUMS = (
    ("min_duration_met", "the min duration was not met"),
    ("min_queries_met", "the min query count was not met"),
    ("perf_constraints_met", "the latency bound was not met"),
)


def _why_invalid(m: Mapping[str, object]) -> str:
    """Why LoadGen judged a test INVALID, from its summary: what was only in the file."""
    said = [why for key, why in _MINIMUMS if m.get(key) is False]
    if m.get("early_stopping_met") is False:
        need, done = m.get("early_stopping_queries_needed"), m.get("early_stopping_queries_done")
        said.append(
            f"early stopping needs {need} queries, {done} ran"
            if need and done is not None
            else "early stopping was not met"
        )
    return "; ".join(said)


def _profiled(prof: ProfileRecord) -> str:
    """What a profiled pass found, or the start of its error."""
    if prof.status == "complete":
        overhead = (
            f", profiler overhead {prof.overhead_rel:+.1%}" if prof.overhead_rel is not None else ""
        )
        return f"{prof.layers} layers, {prof.inferences} inferences{overhead}"
    return (prof.error or "").splitlines()[0][:120] if prof.error else ""
