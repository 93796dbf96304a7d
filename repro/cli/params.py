"""The command line's KEY=VALUE arguments, parsed one way everywhere."""

from __future__ import annotations

import json
from typing import Any

from repro.errors import UsageError


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
