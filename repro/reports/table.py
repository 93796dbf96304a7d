"""The table of published results: its columns, and the pandas frame `repro results` writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "round", "division", "submitter", "system", "processor", "processor_count",
    "accelerator", "accelerator_count", "node_count", "framework", "status", "benchmark",
    "scenario",
    "metric", "value", "unit", "validity", "loadgen_version", "accuracy_metric",
    "accuracy_value", "power_w", "energy_j", "energy_unit", "compliance", "compliance_detail",
    "notes", "path",
)  # fmt: skip


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
