"""The steps that narrow a results table before `repro recommend` takes its Pareto front, each
saying how many rows it left out and why: --where, one division, LoadGen's validity, each
--constraint (a row without the figure it constrains is told from one that breaks it); and
what the front says of availability (systems/<system>.json's `status`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from repro.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

#: objective and constraint names beyond the table's own columns
ALIASES = {
    "throughput": "throughput",
    "latency": "latency_ns",
    "accuracy": "accuracy_value",
    "energy": "energy_j",
    "power": "power_w",
    "cost": "cost",
}
_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "%": 0.01}
_CONSTRAINT = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>|==)\s*"
    r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z%]*)\s*$"
)


def pd_numeric(series: pd.Series) -> pd.Series:
    import pandas as pd

    return pd.to_numeric(series, errors="coerce")


def select_where(t: pd.DataFrame, where: dict[str, str], notes: list[str]) -> pd.DataFrame:
    """The rows that match every --where, and a note of how many they are."""
    before = len(t)
    for key, value in where.items():
        if key not in t:
            raise UsageError(f"--where {key}={value}: the table has no column {key!r}")
        t = t[_matches(t[key], value)]
    if where:
        said = ",".join(f"{k}={v}" for k, v in where.items())
        notes.append(f"--where {said}: {len(t)} of {before} row(s)")
    return t


def one_division(t: pd.DataFrame, where: dict[str, str], notes: list[str]) -> pd.DataFrame:
    """One division's rows: closed ones where the selection mixes closed with others and no
    --where names a division (an open result may change the model, its accuracy target and
    the rules: its figures are not a closed one's); a mix without closed is refused."""
    if "division" in where or "division" not in t or not len(t):
        return t
    divisions = t["division"].dropna().astype(str).str.lower()
    counts = divisions.value_counts()
    if len(counts) < 2:
        return t
    said = ", ".join(f"{d} ({n})" for d, n in sorted(counts.items()))
    if "closed" not in counts:
        raise UsageError(
            f"the selection mixes divisions {said}: their rules differ (an open result may "
            "change the model and its accuracy target), so their figures are not comparable",
            hint="choose one with --where division=NAME",
        )
    notes.append(
        f"divisions: the selection held {said}; only closed is compared (an open result may "
        "change the model and its accuracy target): --where division=NAME chooses another"
    )
    return t[t["division"].astype(str).str.lower() == "closed"]


def valid_only(t: pd.DataFrame, excluded: list[str], notes: list[str]) -> pd.DataFrame:
    """The rows LoadGen judged VALID; the others are listed, and counted in a note."""
    if "validity" not in t:
        return t
    invalid = t["validity"].astype(str) != "VALID"
    excluded += [
        (
            f"{who(row)}: could not be read ({row.get('notes')})"
            if row["validity"] == "unreadable"
            else f"{who(row)}: LoadGen judged it {row['validity']}"
        )
        for _, row in t[invalid].iterrows()
    ]
    if invalid.any():
        notes.append(
            f"validity: {int(invalid.sum())} of {len(t)} row(s) left out, not VALID (listed)"
        )
    t = t[~invalid]
    if "checked" in t:  # a table written before the column: its rows as they are
        unchecked = t["checked"].astype(str).str.lower().isin(("false", "0"))
        excluded += [
            f"{who(row)}: read from its summary alone (no detail log to cross-check it)"
            for _, row in t[unchecked].iterrows()
        ]
        if unchecked.any():
            notes.append(
                f"checked: {int(unchecked.sum())} of {len(t)} VALID row(s) left out, read "
                "from a summary alone: never ranked as checked (listed)"
            )
        t = t[~unchecked]
    return t


def constrained(t: pd.DataFrame, text: str, excluded: list[str], notes: list[str]) -> pd.DataFrame:
    """The rows that meet the constraint `text`. A row without the figure it constrains is
    left out too, listed apart from the rows that break it, and the note says how many each
    and why a figure is missing."""
    column, op, limit = _constraint(text, t)
    values = pd_numeric(t[column])
    ok = _compare(values, op, limit)
    absent = values.isna()
    for _, row in t[absent].iterrows():
        excluded.append(f"{who(row)}: no {column} figure, so it cannot meet {text}")
    for _, row in t[~ok & ~absent].iterrows():
        excluded.append(f"{who(row)}: {column} = {row[column]} breaks {text}")
    if not ok.all():
        parts = [f"{int((~ok & ~absent).sum())} break it"] if (~ok & ~absent).any() else []
        if absent.any():
            parts.append(f"{int(absent.sum())} have no {column} ({_why_absent(column, t[absent])})")
        notes.append(f"{text}: {int((~ok).sum())} of {len(t)} row(s) left out: {'; '.join(parts)}")
    return t[ok]


def _why_absent(column: str, rows: pd.DataFrame) -> str:
    """Why rows have no figure of `column`, in the table's own terms."""
    scenarios = ", ".join(sorted({str(s) for s in rows["scenario"]}))
    if column == "latency_ns":
        server = "Server" in set(rows["scenario"].astype(str))
        return (
            f"their scenario ({scenarios}) reports a throughput: the table holds a latency only "
            "where it is the MLPerf metric (SingleStream, MultiStream)"
            + (
                "; a VALID Server result already met its benchmark's latency bound"
                if server
                else ""
            )
        )
    if column == "throughput":
        return (
            f"their scenario ({scenarios}) reports a latency: the table holds a throughput only "
            "where it is the MLPerf metric (Offline, Server)"
        )
    if column == "cost":
        return "no price in --prices for their processor or accelerator"
    if column in ("power_w", "energy_j"):
        return "power results are not read"
    return "the table's cell is empty"


def per_accelerator_note(t: pd.DataFrame, cost: bool) -> str:
    """What --per-accelerator divided, and what it could not."""
    count = pd_numeric(t["accelerator_count"])
    none = int((~(count > 0)).sum())
    what = "throughput and cost are" if cost else "throughput is"
    return (
        f"--per-accelerator: {what} per accelerator (divided by accelerator_count x "
        "node_count)"
        + (f"; {none} row(s) without accelerators have no such figure (listed)" if none else "")
    )


#: what systems/<system>.json's `status` says of a system one can buy
AVAILABLE = "available"


def availability(front: pd.DataFrame) -> str | None:
    """How many systems on the front are not available (MLPerf's `preview`: to be available
    within 180 days; `rdi`: research, development or internal), where the table says."""
    if "status" not in front or not len(front):
        return None
    status = front["status"].dropna().astype(str).str.lower()
    if not len(status):
        return None
    other = status[status != AVAILABLE].value_counts()
    if not len(other):
        return f"availability: every system on the front is {AVAILABLE}"
    said = ", ".join(f"{s} {n}" for s, n in sorted(other.items()))
    return (
        f"availability: {int(other.sum())} of the {len(front)} system(s) on the front are not "
        f"{AVAILABLE} ({said}; the status column): --where status={AVAILABLE} keeps only "
        "systems one can buy"
    )


def _constraint(text: str, t: pd.DataFrame) -> tuple[str, str, float]:
    m = _CONSTRAINT.match(text)
    if not m:
        raise UsageError(
            f"--constraint {text}: expected NAME OP NUMBER[UNIT], e.g. latency<=15ms or "
            "accuracy_value>=0.75"
        )
    name, op, number, unit = m.groups()
    column = ALIASES.get(name, name)
    if column not in t:
        raise UsageError(f"--constraint {text}: the table has no column {column!r}")
    scale = 1.0
    if unit:
        if unit not in _UNITS:
            raise UsageError(f"--constraint {text}: unknown unit {unit!r} ({', '.join(_UNITS)})")
        scale = _UNITS[unit]
    return column, op, float(number) * scale


def _matches(column: pd.Series, value: str) -> pd.Series:
    """--where: numerically where the column and the value are numbers (8 matches 8.0), else
    as text, ignoring case."""
    numbers = pd_numeric(column)
    try:
        wanted = float(value)
    except ValueError:
        return column.astype(str).str.lower() == value.lower()
    if numbers.notna().any():
        return numbers == wanted
    return column.astype(str) == value


def _compare(values: pd.Series, op: str, limit: float) -> pd.Series:
    result: pd.Series = {
        "<=": values <= limit,
        ">=": values >= limit,
        "<": values < limit,
        ">": values > limit,
        "==": values == limit,
    }[op]
    return result.fillna(False).astype(bool)


def who(row: Any) -> str:
    return (
        f"{row.get('submitter')}/{row.get('system')} {row.get('benchmark')} {row.get('scenario')}"
    )
