"""Reading other harnesses' result files as bad input is read everywhere in repro: a file that
is not what it claims, a field missing or of the wrong kind, a number that is not a possible
figure (NaN, negative, absurdly large) is a SpecError naming the file and the field."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from repro.errors import SpecError
from repro.jsonio import read_json, regular_file

#: larger than any figure a served run produces in its unit (a rate, a count, a timestamp in
#: nanoseconds since 1970 until the 2280s): a file that says more is damaged or hostile
HUGE: Final = 1e19
MAX_JSONL_BYTES: Final = 256 << 20
MAX_YAML_BYTES: Final = 1 << 20


class Fields:
    """A JSON object of `path` at `where`, its fields read with their place named."""

    def __init__(self, path: Path, obj: Any, where: str = "$", *, tool: str) -> None:
        if not isinstance(obj, dict):
            raise bad(path, where, f"must be an object, not {_kind(obj)}", tool)
        self.path, self.obj, self.where, self.tool = path, obj, where, tool

    def has(self, key: str) -> bool:
        return self.obj.get(key) is not None

    def _given(self, key: str, required: bool) -> Any:
        value = self.obj.get(key)
        if value is None and required:
            raise bad(self.path, f"{self.where}.{key}", "missing", self.tool)
        return value

    def num(self, key: str, *, zero: bool = True) -> float:
        """A finite number from 0 (or above 0, `zero` False) to HUGE; missing is an error."""
        value = self._given(key, True)
        return checked_number(self.path, f"{self.where}.{key}", value, self.tool, zero=zero)

    def num_or_none(self, key: str) -> float | None:
        value = self._given(key, False)
        if value is None:
            return None
        return checked_number(self.path, f"{self.where}.{key}", value, self.tool)

    def count(self, key: str) -> int:
        return self._whole(key, self.num(key))

    def count_or_none(self, key: str) -> int | None:
        value = self.num_or_none(key)
        return None if value is None else self._whole(key, value)

    def _whole(self, key: str, value: float) -> int:
        if value != int(value):
            raise bad(self.path, f"{self.where}.{key}", f"{value!r} is not a count", self.tool)
        return int(value)

    def text(self, key: str) -> str | None:
        value = self._given(key, False)
        if value is None or isinstance(value, str):
            return value
        raise bad(self.path, f"{self.where}.{key}", f"must be text, not {_kind(value)}", self.tool)

    def need_text(self, key: str) -> str:
        self._given(key, True)
        value = self.text(key)
        assert value is not None
        return value

    def flag(self, key: str) -> bool | None:
        value = self.obj.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise bad(
            self.path, f"{self.where}.{key}", f"must be true or false, not {value!r}", self.tool
        )

    def child(self, key: str) -> Fields | None:
        value = self._given(key, False)
        return (
            None
            if value is None
            else Fields(self.path, value, f"{self.where}.{key}", tool=self.tool)
        )

    def need(self, key: str) -> Fields:
        return Fields(self.path, self._given(key, True), f"{self.where}.{key}", tool=self.tool)

    def items(self, key: str, *, required: bool = False) -> list[Any]:
        value = self._given(key, required)
        if value is None:
            return []
        if not isinstance(value, list):
            raise bad(
                self.path, f"{self.where}.{key}", f"must be a list, not {_kind(value)}", self.tool
            )
        return value


def checked_number(path: Path, where: str, value: Any, tool: str, *, zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(path, where, f"must be a number, not {_kind(value)}", tool)
    x = float(value)
    if not math.isfinite(x):
        raise bad(path, where, f"{value!r} is not a possible figure", tool)
    if x < 0 or (x == 0 and not zero):
        raise bad(path, where, f"{value!r}: a figure of a run cannot be negative or zero", tool)
    if x > HUGE:
        raise bad(path, where, f"{value!r} is larger than any run's figure", tool)
    return x


def bad(path: Path, where: str, problem: str, tool: str) -> SpecError:
    return SpecError(
        f"{path}: {where}: {problem}",
        hint=f"the file is not {tool}'s output as written, or it was damaged: use the file "
        f"{tool} wrote",
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def load_json(path: Path, tool: str) -> Any:
    """A harness's JSON file: one document, no NaN (Python writes it; JSON has none)."""
    try:
        return read_json(path, constants=False)
    except SpecError as exc:
        raise SpecError(
            exc.message, hint=f"{tool} writes complete JSON: rerun it, or restore the file"
        ) from None


def json_documents(path: Path, tool: str) -> list[Any]:
    """A file of one JSON document or of several one after another (`--append-result`)."""
    regular_file(path, f"{tool}'s result file", max_bytes=MAX_JSONL_BYTES)
    text = path.read_text(encoding="utf-8", errors="strict")
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    docs, at = [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        try:
            doc, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(text.rstrip())
            raise SpecError(
                f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
                + (" (the file ends early: truncated?)" if cut else ""),
                hint=f"{tool} writes complete JSON: rerun it, or restore the file",
            ) from None
        except (ValueError, RecursionError) as exc:
            raise SpecError(f"{path}: not valid JSON: {exc}") from None
        docs.append(doc)
    if not docs:
        raise SpecError(f"{path}: empty: no result in it", hint=f"use the file {tool} wrote")
    return docs


def jsonl(path: Path, tool: str) -> Iterator[tuple[int, Any]]:
    """The records of a JSON-lines file, with their line numbers."""
    regular_file(path, f"{tool}'s per-request records", max_bytes=MAX_JSONL_BYTES)
    with path.open(encoding="utf-8", errors="strict") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line, parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                raise SpecError(
                    f"{path}: line {n}: not a JSON record ({exc})",
                    hint=f"{tool} writes one JSON object a line; the file is damaged or truncated",
                ) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_yaml(path: Path, tool: str) -> Any:
    """A small YAML file read safely: a regular file, no anchors or aliases (a config a harness
    writes has none; aliases are how a small file expands to gigabytes), no tags beyond YAML's."""
    import yaml

    regular_file(path, f"{tool}'s config", max_bytes=MAX_YAML_BYTES)
    try:
        text = path.read_text(encoding="utf-8")
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                mark = event.start_mark
                raise SpecError(
                    f"{path}: line {mark.line + 1}: YAML anchors and aliases are not read here",
                    hint=f"{tool} writes its config without them; use the file it wrote",
                )
        return yaml.safe_load(text)
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "$"
        raise SpecError(
            f"{path}: {at}: not YAML ({getattr(exc, 'problem', None) or exc})",
            hint=f"use the config {tool} wrote",
        ) from None
    except RecursionError:
        raise SpecError(f"{path}: YAML nested too deeply for a config") from None


def inside(root: Path, path: Path) -> Path:
    """`path` resolved, refused when a link takes it out of `root` (a result folder's files
    are its own: a link to elsewhere is not read)."""
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise SpecError(
            f"{path}: a link out of {root} (to {real})",
            hint="copy the file into the result's folder instead of linking to it",
        )
    return real


def server_url(raw: str | None) -> str | None:
    """A server's URL as a report may show it: scheme, host and port only (no user, password,
    path or query: a URL can hold a key)."""
    if not raw:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(raw)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not host:
        return None
    return f"{parts.scheme or 'http'}://{host}" + (f":{port}" if port else "")
