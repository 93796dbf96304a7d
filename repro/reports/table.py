"""The table of published results: its columns, and the pandas frame `repro results` writes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import SpecError
from repro.jsonio import MAX_JSON_BYTES, regular_file

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "round",
    "division",
    "submitter",
    "system",
    "processor",
    "processor_count",
    "accelerator",
    "accelerator_count",
    "node_count",
    "framework",
    "status",
    "benchmark",
    "scenario",
    "metric",
    "value",
    "unit",
    "validity",
    # False: read from LoadGen's summary alone (no detail log to hold it to) or from a result
    # repro does not check (an endpoints result); None where the row could not be read
    "checked",
    "loadgen_version",
    "accuracy_metric",
    "accuracy_value",
    "power_w",
    "energy_j",
    "energy_unit",
    "compliance",
    "compliance_detail",
    "notes",
    "path",
)


def frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The rows as a DataFrame with every column, in COLUMNS order."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=list(COLUMNS))


#: what a spreadsheet reads as a formula at the start of a cell (CSV injection)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
#: the quote that keeps a cell text; a cell that starts with one is quoted too, so that
#: reading the table back (`spreadsheet_text`) gives every cell exactly as it was
_QUOTE = "'"


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell that a spreadsheet would run as a formula (a published
    tree's names are anyone's text) prefixed with a quote; numbers are left as they are."""
    from pandas.api.types import is_numeric_dtype

    out = frame.copy()
    quoted = (*_FORMULA, _QUOTE)
    for column in out.columns:
        if not is_numeric_dtype(out[column]):
            out[column] = out[column].map(
                lambda v: _QUOTE + v if isinstance(v, str) and v.startswith(quoted) else v
            )
    return out


def spreadsheet_text(frame: pd.DataFrame) -> pd.DataFrame:
    """A table `spreadsheet_safe` wrote, read back: each quoted text cell as it was."""
    from pandas.api.types import is_numeric_dtype

    out = frame.copy()
    for column in out.columns:
        if not is_numeric_dtype(out[column]):
            out[column] = out[column].map(
                lambda v: v[1:] if isinstance(v, str) and v.startswith(_QUOTE) else v
            )
    return out


def load_table(path: Path) -> pd.DataFrame:
    """A table written by `repro results --csv`, read back and checked (this module owns its
    format: written by `frame` and `spreadsheet_safe`, read here)."""
    import pandas as pd

    regular_file(path, "a results table (`repro results --csv`)", max_bytes=MAX_JSON_BYTES)
    try:
        frame = spreadsheet_text(pd.read_csv(path, encoding="utf-8-sig"))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not a CSV table: {exc}") from None
    hint = "write one with `repro results TREE --csv FILE`"
    if "value" not in frame or "unit" not in frame:
        raise SpecError(f"{path}: not a results table (no value and unit columns)", hint=hint)
    missing = [c for c in TABLE_COLUMNS if c not in frame]
    if missing:
        raise SpecError(f"{path}: the results table has no {', '.join(missing)} column", hint=hint)
    for i, value in enumerate(frame["value"], start=2):
        number = pd.to_numeric(pd.Series([value]), errors="coerce")[0]
        empty = value is None or (isinstance(value, float) and math.isnan(value))
        if not empty and not (math.isfinite(number) and number > 0):
            raise SpecError(
                f"{path}:{i}: value is {value!r}: a result is a positive number (an empty cell "
                "is a result without a figure)",
                hint="the table is damaged: write it again with `repro results`",
            )
    _check_numbers(path)
    key = [c for c in ("path", "scenario") if c in frame]
    if "path" in key:
        named = frame[frame["path"].notna()]  # a hand-made table may leave paths out
        repeated = named[named.duplicated(subset=key, keep=False)]
        if len(repeated):
            rows = [str(i + 2) for i in repeated.index[:4]]
            raise SpecError(
                f"{path}: rows {', '.join(rows)} are the same result ({key[0]} "
                f"{repeated.iloc[0][key[0]]}): it would count twice",
                hint="keep one row per result (tables joined twice repeat them)",
            )
    return frame


#: the number columns of a results table a cell of which, when not empty, must be a count (a
#: whole number >= 0, at most MAX_COUNT) or a positive finite figure
COUNT_COLUMNS = ("processor_count", "accelerator_count", "node_count")
FIGURE_COLUMNS = ("value", "power_w", "energy_j")
MAX_COUNT = 1_000_000


def _check_numbers(path: Path) -> None:
    """Each count and figure cell as written (pandas reads `nan` as an empty cell)."""
    import csv

    with path.open(encoding="utf-8-sig", newline="") as f:
        for i, row in enumerate(csv.DictReader(f), start=2):
            for column in (*COUNT_COLUMNS, *FIGURE_COLUMNS):
                text = (row.get(column) or "").strip()
                if not text:
                    continue
                try:
                    number = float(text)
                except ValueError:
                    number = math.nan
                if column in COUNT_COLUMNS:
                    ok = number.is_integer() and 0 <= number <= MAX_COUNT
                    what = f"a count is a whole number from 0 to {MAX_COUNT:,}"
                else:
                    ok = math.isfinite(number) and number > 0
                    what = "a figure is a positive number"
                if not ok:
                    raise SpecError(
                        f"{path}:{i}: {column} is {text!r}: {what} (an empty cell is a figure "
                        "not given)",
                        hint="the table is damaged: write it again with `repro results`",
                    )


#: the columns `recommend` reads of a results table (`repro.reports.table.COLUMNS`); the
#: counts of processors and nodes may be missing (a table written before they existed)
TABLE_COLUMNS = (
    "submitter",
    "system",
    "processor",
    "accelerator",
    "accelerator_count",
    "benchmark",
    "scenario",
    "value",
    "unit",
)
