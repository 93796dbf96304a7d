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


#: the price bounds of a processor or an accelerator, in US dollars: below, a table in
#: thousands of dollars; above, no part costs that (1e308 reached a plot's tick locator)
MIN_PRICE_USD = 20.0
MAX_PRICE_USD = 1e9


def load_prices(path: Path) -> dict[str, float]:
    """`name,price_usd` rows (`name,price` too): a processor or accelerator name as the table
    spells it, its price in whole US dollars. One reader for `results --enrich --prices` and
    `recommend --prices`: a header in another unit, a price that is not a plain number, not
    finite, below MIN_PRICE_USD or above MAX_PRICE_USD, or a name priced twice is refused,
    naming the line."""
    import csv

    example = "e.g.\nname,price_usd\nNVIDIA H100-SXM-80GB,25000"
    regular_file(path, "a price list (name,price_usd rows)", max_bytes=MAX_PRICES_BYTES)
    try:
        lines = path.read_text("utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the price table: {exc}") from None
    reader = csv.DictReader(lines)
    header = [h.strip() for h in reader.fieldnames or []]
    price_col = next((h for h in header if h.lower().startswith("price")), None)
    if "name" not in header or price_col is None:
        sep = next((c for c in ";\t|" if c in ",".join(header)), None)
        raise SpecError(
            f"{path}:1: the header is {','.join(header)!r}, not name,price_usd"
            + (f" (the columns are separated by {sep!r}: use commas)" if sep else ""),
            hint=example,
        )
    if price_col.lower() not in ("price_usd", "price"):
        raise SpecError(
            f"{path}:1: column {price_col!r}: prices are read in US dollars (price_usd)",
            hint="convert the prices to US dollars and name the column price_usd",
        )
    prices: dict[str, float] = {}
    lines_of: dict[str, int] = {}
    for i, row in enumerate(reader, start=2):
        cell = (row.get(price_col) or "").strip()
        try:
            price = float(cell)
        except ValueError:
            raise SpecError(
                f"{path}:{i}: {price_col} is {cell!r}: a plain number of US dollars (no "
                "currency sign, thousands separator or suffix such as k)",
                hint=example,
            ) from None
        name = _name(row.get("name") or "")
        if not name:
            raise SpecError(f"{path}:{i}: a price without a name", hint=example)
        if not math.isfinite(price):
            raise SpecError(
                f"{path}:{i}: {price_col} of {name!r} is {cell}: not a finite number",
                hint="give whole US dollars, e.g. 25000 for 25k",
            )
        if name in prices:
            raise SpecError(
                f"{path}:{i}: {name!r} is priced twice (also line {lines_of[name]})",
                hint="keep one price for each name",
            )
        if not MIN_PRICE_USD <= price <= MAX_PRICE_USD:
            raise SpecError(
                f"{path}:{i}: {price_col} of {name!r} is {cell}: outside "
                f"{MIN_PRICE_USD:g} to {MAX_PRICE_USD:g} USD, no processor or accelerator "
                "costs that (a table in thousands of dollars?)",
                hint="give whole US dollars, e.g. 25000 for 25k",
            )
        prices[name] = price
        lines_of[name] = i
    if not prices:
        raise SpecError(f"{path}: the price table has no rows", hint=example)
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
