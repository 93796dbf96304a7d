"""The Pareto-optimal systems of a results table (`repro recommend`).

The analysis users of published MLPerf data do by hand: filter the table (`--where`), drop what
breaks a constraint (`--constraint accuracy_value>=0.75`), and keep the systems no other system
beats on every objective at once (`--objective max:throughput --objective min:cost`). Cost comes
only from a price table the user supplies (`--prices`, a CSV of `name,price`: a processor or
accelerator name as the table spells it, and the price of one); energy only from power results.
A row missing an objective is listed as such, never dropped silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import SpecError, UsageError
from repro.jsonio import regular_file
from repro.stats.selection import (
    ALIASES,
    availability,
    constrained,
    one_division,
    pd_numeric,
    per_accelerator_note,
    select_where,
    valid_only,
    who,
)

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Objective:
    column: str
    maximize: bool

    @property
    def label(self) -> str:
        return f"{'max' if self.maximize else 'min'}:{self.column}"


@dataclass
class Recommendation:
    """The front, the dominated rows and the rows that could not be judged, with why; `notes`
    says what each step of the selection left out (how many rows, and why)."""

    objectives: list[Objective]
    front: pd.DataFrame
    dominated: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_objective(text: str) -> Objective:
    direction, _, name = text.partition(":")
    if direction not in ("max", "min") or not name:
        raise UsageError(
            f"--objective {text}: expected max:NAME or min:NAME",
            hint=f"names: {', '.join(ALIASES)} or a column of the table",
        )
    return Objective(ALIASES.get(name, name), direction == "max")


def parse_where(texts: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for text in texts:
        for part in text.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise UsageError(f"--where {text}: expected COLUMN=VALUE[,COLUMN=VALUE...]")
            out[key.strip()] = value.strip()
    return out


#: the largest price list read (a name and a price a line: a few hundred kB at most)
MAX_PRICES_BYTES = 16 << 20


def load_prices(path: Path) -> dict[str, float]:
    """`name,price` rows: a processor or accelerator name as the table spells it."""
    import csv

    prices: dict[str, float] = {}
    regular_file(path, "a price list (name,price rows)", max_bytes=MAX_PRICES_BYTES)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            if "name" not in header or "price" not in header:
                sep = next((c for c in ";\t|" if c in ",".join(header)), None)
                raise SpecError(
                    f"{path}:1: the header is {','.join(header)!r}, not name,price"
                    + (f" (the columns are separated by {sep!r}: use commas)" if sep else ""),
                    hint="e.g.\nname,price\nNVIDIA H100-SXM-80GB,25000",
                )
            for i, row in enumerate(reader, start=2):
                try:
                    name, price = _name(row["name"]), float(row["price"])
                    if not math.isfinite(price) or price <= 0:
                        raise ValueError(price)
                    if name in prices and prices[name] != price:
                        raise SpecError(
                            f"{path}:{i}: {name!r} has two prices ({prices[name]:g}, {price:g})",
                            hint="keep one row per name",
                        )
                    prices[name] = price
                except (KeyError, TypeError, ValueError, AttributeError):
                    raise SpecError(
                        f"{path}:{i}: expected the columns name,price with a positive number as "
                        "price",
                        hint="e.g.\nname,price\nNVIDIA H100-SXM-80GB,25000",
                    ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the price table: {exc}") from None
    if not prices:
        raise SpecError(
            f"{path}: the price table has no rows",
            hint="e.g.\nname,price\nNVIDIA H100-SXM-80GB,25000",
        )
    return prices


def with_derived(
    table: pd.DataFrame, *, prices: dict[str, float] | None, per_accelerator: bool
) -> pd.DataFrame:
    """throughput, latency_ns and cost columns from the table's own (per accelerator with
    `per_accelerator`: divided by accelerator_count x node_count)."""
    import numpy as np
    import pandas as pd

    t = table.copy()
    unit = t["unit"].astype(str)
    value = pd_numeric(t["value"])
    t["throughput"] = value.where(unit.isin(["samples/s", "tokens/s"]))
    t["latency_ns"] = value.where(unit == "ns")
    # counts are per node (systems/<system>.json); a count the table lacks is one (a table
    # written before these columns existed, or a description that does not say)
    count = pd_numeric(t["accelerator_count"])
    nodes = _count(t, "node_count")
    if prices is not None:
        processor, accelerator = t["processor"].map(_name), t["accelerator"].map(_name)
        cpu = processor.map(prices) * _count(t, "processor_count")
        acc = accelerator.map(prices) * count.where(count > 0, 1)
        no_acc = t["accelerator"].isin(["N/A", "", None]) | t["accelerator"].isna()
        t["cost"] = pd.Series(np.where(no_acc, cpu, cpu + acc), index=t.index) * nodes
    if per_accelerator:
        # both per accelerator: a system's whole cost against one accelerator's throughput
        # would favour the largest systems
        accelerators = (count * nodes).where(count > 0)
        for column in ("throughput", "cost"):
            if column in t:
                t[column] = t[column] / accelerators
    for column in ("accuracy_value", "energy_j", "power_w"):
        if column in t:
            t[column] = pd_numeric(t[column])
    return t


def _name(value: Any) -> Any:
    """A processor or accelerator name as prices and tables are matched: Unicode NFC (a name
    typed on a Mac may come decomposed), without surrounding spaces."""
    import unicodedata

    return unicodedata.normalize("NFC", value).strip() if isinstance(value, str) else value


def unmatched_prices(table: pd.DataFrame, prices: dict[str, float]) -> list[str]:
    """Price names that match no processor or accelerator of the table (a misspelling would
    otherwise leave systems without a cost, silently)."""
    names = {_name(v) for c in ("processor", "accelerator") if c in table for v in table[c]}
    return sorted(n for n in prices if n not in names)


def _count(table: pd.DataFrame, column: str) -> pd.Series:
    """A per-row count from `column`, one where it is missing or not a positive number."""
    import pandas as pd

    if column not in table:
        return pd.Series(1.0, index=table.index)
    values = pd_numeric(table[column])
    return values.where(values > 0, 1).fillna(1)


def recommend(
    table: pd.DataFrame,
    objectives: list[Objective],
    *,
    where: dict[str, str],
    constraints: tuple[str, ...] = (),
    prices: dict[str, float] | None = None,
    per_accelerator: bool = False,
) -> Recommendation:
    """The Pareto front of the rows that match `where` and meet every constraint."""
    if not objectives:
        raise UsageError("give at least one --objective (e.g. max:throughput)")
    if any(o.column == "cost" for o in objectives) and prices is None:
        enriched = "cost_usd" in table
        raise UsageError(
            "min:cost needs a price table (--prices prices.csv): repro never invents prices"
            + (
                "; this table was enriched and has list prices: --objective min:cost_usd"
                if enriched
                else ""
            ),
            hint="a CSV with the columns name,price; a name is a processor or accelerator "
            "as the results table spells it"
            + (" (or min:cost_usd, the hardware table's list prices)" if enriched else ""),
        )
    t = with_derived(table, prices=prices, per_accelerator=per_accelerator)
    notes: list[str] = []
    excluded: list[str] = []
    t = select_where(t, where, notes)
    t = one_division(t, where, notes)
    t = valid_only(t, excluded, notes)
    for text in constraints:
        t = constrained(t, text, excluded, notes)
    for o in objectives:
        if o.column not in t:
            raise UsageError(
                f"--objective {o.label}: the table has no column {o.column!r}",
                hint=f"names: {', '.join(ALIASES)} or a column of the table",
            )
    kinds = t[["benchmark", "scenario", "unit"]].drop_duplicates() if len(t) else t
    if len(kinds) > 1:
        listing = "; ".join(
            f"{r.benchmark} {r.scenario} ({r.unit})" for r in kinds.head(6).itertuples()
        )
        raise UsageError(
            f"the selection mixes {len(kinds)} kinds of result ({listing}): their figures are "
            "not comparable",
            hint="narrow it with --where benchmark=NAME,scenario=NAME",
        )
    if not len(t):
        raise UsageError(
            "nothing is left to compare after --where and the constraints"
            + (f": {'; '.join(notes)}" if notes else ""),
            hint="`repro results TREE` shows what the table holds",
        )
    if per_accelerator:
        notes.append(per_accelerator_note(t, prices is not None))
    import numpy as np

    values = t[[o.column for o in objectives]].apply(pd_numeric)
    values = values.where(np.isfinite(values))  # inf from a hand-edited table is no figure
    complete = values.notna().all(axis=1)
    missing = [
        f"{who(row)}: no {', '.join(o.column for o in objectives if _nan(row[o.column]))}"
        for _, row in t[~complete].iterrows()
    ]
    t, values = t[complete], values[complete]
    signs = [1.0 if o.maximize else -1.0 for o in objectives]
    points = values.to_numpy(dtype=float) * signs
    on_front = [
        not any(
            all(q >= p for q, p in zip(other, point, strict=True))
            and any(q > p for q, p in zip(other, point, strict=True))
            for other in points
        )
        for point in points
    ]
    mask = np.asarray(on_front, dtype=bool)
    front = t[mask].sort_values(objectives[0].column, ascending=not objectives[0].maximize)
    dominated = t[~mask]
    if status := availability(front):
        notes.append(status)
    return Recommendation(objectives, front, dominated, missing, excluded, notes)


def _nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True
