"""The hardware table shipped with repro, and a results table enriched with it (`--enrich`).

`repro/data/hardware.csv` holds, per processor or accelerator seen in MLPerf Inference
v4.0-v6.0, what its vendor's datasheet says: TDP, memory size and bandwidth, dense FP16 and
INT8 peaks, launch year and a list price where one is public, with the document named in
`source`. A cell the datasheet does not give is empty, never guessed.

Names in `systems/*.json` are spelled many ways ("INTEL(R) XEON(R) PLATINUM 8592+", "AMD
Ryzen 9 7950X 16-Core Processor"): `normalize` lowercases them and drops the trademark marks,
core counts, clock speeds and filler words; a row matches when all the tokens of one of its
aliases are tokens of the name, the longest alias winning. A name that matches no row, or two
rows equally, is reported (`Enrichment.unmatched`), never matched by guess.

Energy: `energy_measured_j` is MLPerf's own (a power result's), `energy_estimated_j` an
estimate from the TDPs (processors + accelerators, x counts x nodes, x `utilization`) over the
throughput (J/sample) or x the latency (J/query): two columns, never one.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import SpecError

if TYPE_CHECKING:
    import pandas as pd

#: the hardware table's numeric columns, with their units in the names
NUMBERS = (
    "tdp_w",
    "memory_gb",
    "memory_bandwidth_gbs",
    "fp16_tflops_dense",
    "int8_tops_dense",
    "launch_year",
    "list_price_usd",
)
HEADER = ("name", "kind", "vendor", "aliases", *NUMBERS, "source")
KINDS = ("processor", "accelerator")
#: a results table's columns that enrichment reads
NEEDED = ("processor", "accelerator", "accelerator_count", "value", "unit")

_FILLER = re.compile(
    r"\(r\)|\(tm\)|®|™|\bprocessor\b|\b\d+-core\b|\bcpu\b|@\s*[\d.]+\s*ghz|\bwith radeon.*$"
)


@dataclass(frozen=True)
class Hardware:
    """One row of the hardware table."""

    name: str
    kind: str
    vendor: str
    aliases: tuple[tuple[str, ...], ...]
    numbers: dict[str, float | None]
    source: str


@dataclass
class Enrichment:
    """What enrichment matched, and what it could not."""

    #: (column, name as the table spells it, rows, why)
    unmatched: list[tuple[str, str, int, str]] = field(default_factory=list)
    matched: dict[str, str] = field(default_factory=dict)  # table name -> hardware row
    notes: list[str] = field(default_factory=list)


def normalize(name: str) -> tuple[str, ...]:
    """A processor or accelerator name as tokens: lowercase, no trademark marks, core counts,
    clock speeds or filler; `-`, `_` and `/` separate tokens."""
    text = _FILLER.sub(" ", name.lower())
    return tuple(t for t in re.split(r"[\s\-_/,]+", text) if t)


def load_hardware(path: Path | None = None) -> list[Hardware]:
    """The hardware table (repro's own unless `path`); a bad cell names its row and column."""
    if path is None:
        text = resources.files("repro").joinpath("data/hardware.csv").read_text("utf-8")
        where = "repro/data/hardware.csv"
    else:
        try:
            text, where = path.read_text("utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"{path}: cannot read the hardware table: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != HEADER:
        raise SpecError(f"{where}:1: the header is not {','.join(HEADER)}")
    rows = []
    for i, row in enumerate(reader, start=2):
        if row["kind"] not in KINDS:
            raise SpecError(f"{where}:{i}: kind is {row['kind']!r}, not one of {KINDS}")
        if not row["source"].strip():
            raise SpecError(f"{where}:{i}: {row['name']}: no source", hint="name the datasheet")
        numbers: dict[str, float | None] = {}
        for column in NUMBERS:
            cell = row[column].strip()
            try:
                numbers[column] = float(cell) if cell else None
            except ValueError:
                raise SpecError(f"{where}:{i}: {column} is {cell!r}, not a number") from None
        aliases = tuple(normalize(a) for a in row["aliases"].split("|") if a.strip())
        rows.append(
            Hardware(row["name"], row["kind"], row["vendor"], aliases, numbers, row["source"])
        )
    return rows


def match(name: str, kind: str, table: list[Hardware]) -> tuple[Hardware | None, str]:
    """The row a name is, and why not where none is: the longest alias all of whose tokens are
    the name's; two rows with aliases as long are ambiguous, and neither is taken."""
    tokens = set(normalize(name))
    best: list[tuple[int, Hardware]] = []
    for hw in table:
        if hw.kind != kind:
            continue
        for alias in hw.aliases:
            if alias and set(alias) <= tokens:
                best.append((len(alias), hw))
    if not best:
        return None, f"no {kind} row of the hardware table has an alias in it"
    top = max(n for n, _ in best)
    names = sorted({hw.name for n, hw in best if n == top})
    if len(names) > 1:
        return None, f"ambiguous: {' / '.join(names)}"
    return next(hw for n, hw in best if n == top), ""


def _absent(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().upper() in ("", "N/A", "NA", "NONE", "-")


def enrich(
    table: pd.DataFrame,
    *,
    hardware: list[Hardware] | None = None,
    prices: dict[str, float] | None = None,
    utilization: float = 1.0,
) -> tuple[pd.DataFrame, Enrichment]:
    """The table with the hardware table's columns (`processor_*`, `accelerator_*`), measured
    and estimated energy, and cost; what matched nothing is in the `Enrichment`."""

    missing = [c for c in NEEDED if c not in table]
    if missing:
        raise SpecError(
            f"the results table has no {', '.join(missing)} column",
            hint="write it with `repro results TREE --csv FILE`",
        )
    if not 0 < utilization <= 1:
        raise SpecError(f"--utilization is {utilization:g}: a fraction in (0, 1]")
    hw = hardware if hardware is not None else load_hardware()
    report = Enrichment()
    t = table.copy()
    for column in KINDS:
        rows: list[Hardware | None] = []
        cache: dict[str, Hardware | None] = {}
        for value in t[column]:
            if _absent(value):
                rows.append(None)
                continue
            name = str(value).strip()
            if name not in cache:
                found, why = match(name, column, hw)
                cache[name] = found
                if found is None:
                    count = int((t[column].astype(str).str.strip() == name).sum())
                    report.unmatched.append((column, name, count, why))
                else:
                    report.matched[name] = found.name
            rows.append(cache[name])
        t[f"{column}_hw"] = [r.name if r else None for r in rows]
        for number in NUMBERS:
            t[f"{column}_{number}"] = [r.numbers[number] if r else None for r in rows]
        t[f"{column}_hw_source"] = [r.source if r else None for r in rows]
    _energy(t, utilization, report)
    _cost(t, prices, report)
    return t, report


def _counts(t: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    import pandas as pd

    def count(column: str, default: float) -> pd.Series:
        if column not in t:
            return pd.Series(default, index=t.index)
        return pd.to_numeric(t[column], errors="coerce").fillna(default)

    return count("processor_count", 1.0), count("accelerator_count", 0.0), count("node_count", 1.0)


def _energy(t: pd.DataFrame, utilization: float, report: Enrichment) -> None:
    import numpy as np
    import pandas as pd

    cpus, accs, nodes = _counts(t)
    cpu_w = pd.to_numeric(t["processor_tdp_w"], errors="coerce") * cpus
    acc_w = pd.to_numeric(t["accelerator_tdp_w"], errors="coerce") * accs
    # a system without accelerators draws none; one whose accelerator has no TDP is unknown
    acc_w = acc_w.where(accs > 0, 0.0)
    t["tdp_total_w"] = (cpu_w + acc_w) * nodes
    value = pd.to_numeric(t["value"], errors="coerce")
    unit = t["unit"].astype(str)
    watts = t["tdp_total_w"] * utilization
    per_sample = watts / value.where(unit.isin(["samples/s", "tokens/s"]))
    per_query = watts * value.where(unit == "ns") / 1e9
    t["energy_estimated_j"] = per_sample.fillna(per_query)
    t["energy_estimated_unit"] = np.where(
        unit == "ns", "J/query", np.where(unit == "tokens/s", "J/token", "J/sample")
    )
    t["energy_estimated_unit"] = t["energy_estimated_unit"].where(t["energy_estimated_j"].notna())
    t["energy_estimate_basis"] = f"TDP x {utilization:g} utilization (estimated)"
    measured = t["energy_j"] if "energy_j" in t else pd.Series(np.nan, index=t.index)
    t["energy_measured_j"] = pd.to_numeric(measured, errors="coerce")
    report.notes.append(
        f"energy: {int(t['energy_measured_j'].notna().sum())} row(s) measured by MLPerf "
        f"(energy_measured_j), {int(t['energy_estimated_j'].notna().sum())} estimated from "
        f"TDP x {utilization:g} (energy_estimated_j): separate columns"
    )


def _cost(t: pd.DataFrame, prices: dict[str, float] | None, report: Enrichment) -> None:
    import pandas as pd

    cpus, accs, nodes = _counts(t)

    def price(column: str) -> pd.Series:
        listed = pd.to_numeric(t[f"{column}_list_price_usd"], errors="coerce")
        if prices is None:
            return listed
        given = t[column].map(lambda v: prices.get(str(v).strip()) if not _absent(v) else None)
        return pd.to_numeric(given, errors="coerce").fillna(listed)

    cpu = price("processor") * cpus
    acc = (price("accelerator") * accs).where(accs > 0, 0.0)
    t["cost_usd"] = (cpu + acc) * nodes
    t["cost_source"] = ("--prices, else " if prices else "") + "hardware.csv list_price_usd"
    t["cost_source"] = t["cost_source"].where(t["cost_usd"].notna())
    report.notes.append(
        f"cost: {int(t['cost_usd'].notna().sum())} of {len(t)} row(s) priced (processors and "
        "accelerators x counts x nodes; a part without a price leaves the row unpriced)"
    )
