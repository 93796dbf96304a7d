"""Reading and hashing JSON files: the low-level form every file format of repro shares.

`read_json` refuses what a careless or hostile file holds (a key given twice, a device, a
gigabyte, nesting deeper than Python's parser follows) with the file named; `canonical_json` is
the form that is hashed (spec ids, record digests).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from repro.errors import SpecError

DEEP_HINT = (
    "the files repro reads nest objects and arrays only a few levels deep: check that this is "
    "the file you meant and not a damaged or generated one"
)


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: the form that is hashed."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


#: the largest JSON file repro reads (a 300 000-package spack.lock is about 110 MB)
MAX_JSON_BYTES = 1 << 30


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def regular_file(path: Path, what: str, *, max_bytes: int) -> int:
    """The size of `path`, a regular file of at most `max_bytes` (not a folder, a device such
    as /dev/zero that never ends, a pipe or a socket): else a SpecError naming it."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read it: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise SpecError(f"{path}: is a directory, expected {what}")
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(
            f"{path}: not a regular file (a device, a pipe or a socket), expected {what}"
        )
    if st.st_size > max_bytes:
        raise SpecError(f"{path}: {st.st_size} bytes, more than the {max_bytes} read of {what}")
    return st.st_size


def read_json(path: Path, *, deep_hint: str = DEEP_HINT, constants: bool = True) -> Any:
    """Parse a JSON file; a syntax error names the file, line and column. Only a regular file
    is read (not a FIFO or a device). NaN and Infinity (not JSON, but Python writes them) are
    read when `constants` is set, for the schema to refuse them at their field; else here."""
    regular_file(path, "a JSON file", max_bytes=MAX_JSON_BYTES)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=None if constants else _no_constant,
        )
    except DuplicateKeyError as exc:
        raise SpecError(
            f"{path}: the key {exc.key!r} appears twice in one object; JSON readers disagree on "
            "which value wins",
            hint="keep one of them",
        ) from None
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip())
        raise SpecError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            + (" (the file ends early: truncated?)" if truncated else ""),
            hint="fix the JSON syntax there (`python -m json.tool FILE` shows it)",
        ) from None
    except RecursionError:
        raise SpecError(
            f"{path}: JSON nested too deeply (objects and arrays deeper than the "
            f"{sys.getrecursionlimit()} or so levels Python's JSON parser follows)",
            hint=deep_hint,
        ) from None
    except ValueError as exc:  # NaN/Infinity, an integer of thousands of digits
        raise SpecError(f"{path}: not valid JSON: {exc}") from None
