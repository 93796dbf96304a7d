"""Use case: every result of published MLPerf trees as one table (`repro results`).

One row per (result, scenario): where it comes from (round, division, submitter, system), the
hardware and framework the system description names, the MLPerf metric of the scenario with
its unit and LoadGen's validity, LoadGen's version, the accuracy figure, and the compliance
tests' verdicts. Each run is read as the checker reads it, its summary and its detail log
(which must agree): a whole round of thousands of results reads in seconds
(`bench/results_table.py`).
Power and energy are a power result's (`repro.mlperf.power`), else empty; compliance is
judged by the round's checker rules (`repro.mlperf.compliance`). A cell that cannot be read
is empty, never guessed; `notes` says what a result's reading found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import SpecError
from repro.mlperf.compliance import checks_of, describe, overall
from repro.mlperf.power import energy_of
from repro.mlperf.rules import checker_metric, endpoints_metric
from repro.mlperf.tree import (
    HEADLINE,
    INTERACTIVE,
    division_of,
    find_results,
    os_error_reason,
    read_mlperf_result,
    round_of,
)
from repro.privacy import redact_text
from repro.reports.table import COLUMNS, frame
from repro.runs.record import RunRecord

if TYPE_CHECKING:
    import pandas as pd


def rows_of(bench: Path, record: RunRecord) -> list[dict[str, Any]]:
    """One row per scenario of a published result."""
    env, hardware = record.environment_facts(), record.facts().hardware
    rows = []
    for scenario in HEADLINE:
        perf = record.performance(scenario)
        if not perf:
            continue
        metrics = perf[0].metrics
        if record.environment.get("format") == "endpoints":
            interactive = record.spec_name.endswith("-interactive")
            taken = endpoints_metric(env.round, record.spec_name, scenario, interactive)
        else:
            model = record.environment.get("mlperf_model") or record.spec_name
            taken = checker_metric(env.round, str(model), scenario, metrics)
        key, unit = taken.key, taken.unit
        notes = [*record.notes, *([taken.rule] if taken.rule else [])]
        accuracy = (record.accuracy_test(scenario) or perf[0]).accuracy or {}
        checks = checks_of(record.environment, scenario)
        energy, energy_unit = energy_of(metrics)
        rows.append(
            {
                "round": round_of(bench),
                "division": division_of(bench),
                "submitter": env.submitter,
                "system": env.system,
                "processor": hardware.cpu.model,
                # per node, as systems/<system>.json says; node_count nodes in all
                "processor_count": hardware.cpu.sockets,
                "accelerator": hardware.accelerators,
                "accelerator_count": hardware.accelerators_per_node,
                "node_count": hardware.nodes,
                "framework": env.framework,
                # systems/<system>.json's status: available, preview or rdi
                "status": env.system_status,
                "benchmark": record.spec_name,
                "scenario": scenario,
                "metric": key,
                "value": _number(metrics.get(key)),
                "unit": unit,
                "validity": metrics.get("validity"),
                "checked": not any(t.metrics.get("summary_only") for t in perf)
                and not accuracy.get("unhashed")
                and record.environment.get("format") != "endpoints",
                "loadgen_version": metrics.get("loadgen_version"),
                "accuracy_metric": accuracy.get("metric"),
                "accuracy_value": _number(accuracy.get("value")),
                "power_w": _number(metrics.get("power_w")),
                "energy_j": energy,
                "energy_unit": energy_unit,
                "compliance": overall(checks),
                "compliance_detail": describe(checks),
                # a table is shared: no home directory in it (`repro.privacy`)
                "notes": redact_text("; ".join(notes)) or None,
                "path": redact_text(str(bench)),
            }
        )
    return rows


def results_table(
    trees: Iterable[Path], *, progress: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Every result of the trees as one table (`repro.reports.table`), a row per scenario."""
    return frame(result_rows(trees, progress=progress))


def result_rows(
    trees: Iterable[Path], *, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every result of the trees, one row (COLUMNS) per scenario."""
    rows: list[dict[str, Any]] = []
    read: set[Path] = set()
    for tree in trees:
        held = find_results(tree)
        found = [b for b in held if b.resolve() not in read]
        read.update(b.resolve() for b in found)
        if progress:
            again = (
                f" ({len(held) - len(found)} more already read under an earlier path)"
                if len(held) > len(found)
                else ""
            )
            progress(f"{tree}: {len(found)} result(s){again}")
        for bench in found:
            rows += _rows_or_unread(bench)
            for sdir in bench.iterdir() if bench.is_dir() else ():
                if sdir.name.lower() == INTERACTIVE and sdir != bench and sdir.is_dir():
                    rows += _rows_or_unread(sdir)
    return rows


#: the validity of a row for a result that could not be read (its notes say why)
UNREADABLE = "unreadable"


def _rows_or_unread(bench: Path) -> list[dict[str, Any]]:
    """The result's rows; one that cannot be read is one row that says so (file and reason),
    never the end of the table: a round of thousands of results has odd files (a damaged
    log, or a file the system will not let us read)."""
    try:
        return rows_of(bench, read_mlperf_result(bench))
    except SpecError as exc:
        return [unread_row(bench, exc.message)]
    except OSError as exc:
        return [unread_row(bench, os_error_reason(bench, exc))]


def unread_row(bench: Path, reason: str) -> dict[str, Any]:
    """A row for a result that could not be read: where it is, and why."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    parts = bench.absolute().parts
    i = len(parts) - 1 - parts[::-1].index("results") if "results" in parts else None
    row.update(
        round=round_of(bench),
        division=division_of(bench),
        submitter=parts[i - 1] if i else None,
        system=parts[i + 1] if i is not None and i + 1 < len(parts) else None,
        benchmark=bench.name,
        validity=UNREADABLE,
        notes=redact_text(reason),
        path=redact_text(str(bench)),
    )
    return row


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            return float(str(value).replace(",", "")) if value is not None else None
        except ValueError:
            return None
    return float(value)
