"""The command line's KEY=VALUE arguments, parsed one way everywhere."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from repro.errors import UsageError


class Finite(click.FloatRange):
    """A float option's type: a finite number within the range. click takes `nan` and `inf`
    for floats, and a NaN passes every comparison: `--max-time nan` ran and was written into
    run.json as NaN, which is not JSON."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def parse_value(text: str) -> Any:
    """A JSON value where the text is one (`2`, `true`, `"x"`, `{...}`), else the text itself."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text


def parse_key_value(text: str, *, option: str, example: str = "key=value") -> tuple[str, Any]:
    """`KEY=VALUE` -> (KEY, value); a missing `=` or an empty key is a usage error."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} {text!r}: expected {example}")
    return key.strip(), parse_value(raw)
