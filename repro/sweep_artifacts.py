"""Sweep parameters that name an artifact's source: each file is hashed and pinned per point.

An artifact is fixed by its sha256, and the cache is addressed by it: a point that only changed
`artifacts.model.path` would be verified against the base spec's hash and run the base spec's
cached bytes, whatever file it names. So a swept path is hashed here, and the point's spec pins
that file's sha256 (and its size, where the spec records one). A URL or a recipe cannot be
pinned without fetching or generating it: sweeping one is refused, naming the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.digests import sha256_file
from repro.errors import UsageError
from repro.spec.paths import resolve_path

#: an artifact's fields that say where its bytes come from (and the recipe's parameters)
_SOURCES = ("url", "path", "recipe", "params")


def artifact_field(path: str) -> tuple[str, str] | None:
    """`artifacts.model.path` -> ("model", "path"); None for a path outside `artifacts`."""
    keys = path.split(".")
    if len(keys) < 3 or keys[0] != "artifacts":
        return None
    return keys[1], keys[2]


def check_params(params: list[tuple[str, list[Any]]]) -> None:
    """Refuse the swept artifact fields no point could pin: a URL, a recipe or its parameters,
    and a sha256 swept beside the path it must match."""
    swept = {artifact_field(p) for p, _ in params} - {None}
    for path, _ in params:
        found = artifact_field(path)
        if found is None:
            continue
        name, key = found
        if key in ("url", "recipe", "params"):
            raise UsageError(
                f"--param {path}: every point would be verified against the one pinned "
                f"artifacts.{name}.sha256 and run the cached bytes of the spec's own "
                f"{name!r}: a sweep cannot pin the bytes of a {key} per point",
                hint=f"sweep local files with --param artifacts.{name}.path=A,B (each file is "
                "hashed and pinned per point), or write one spec per model and capture each",
            )
        if key == "sha256" and (name, "path") in swept:
            raise UsageError(
                f"--param {path}: the sha256 of a swept artifacts.{name}.path is the file's "
                "own, hashed per point",
                hint=f"drop --param {path}",
            )


class PathPins:
    """The sha256 (and size) of each swept artifact file, hashed once per file."""

    def __init__(self, raw: dict[str, Any], spec_path: Path) -> None:
        self.raw = raw
        self.spec_path = spec_path
        self._hashed: dict[Path, tuple[str, int]] = {}

    def pins(self, values: dict[str, Any]) -> dict[str, Any]:
        """The fields a point's spec pins besides its values: for each swept
        `artifacts.<name>.path`, that file's `sha256` (and `size_bytes`, where recorded)."""
        out: dict[str, Any] = {}
        for path, value in values.items():
            found = artifact_field(path)
            if found is None or found[1] != "path":
                continue
            name = found[0]
            sha, size = self._hash(path, value)
            out[f"artifacts.{name}.sha256"] = sha
            if (self.raw.get("artifacts", {}).get(name) or {}).get("size_bytes") is not None:
                out[f"artifacts.{name}.size_bytes"] = size
        return out

    def _hash(self, param: str, value: Any) -> tuple[str, int]:
        if not isinstance(value, str):
            raise UsageError(f"--param {param}: {value!r} is not a file path")
        src = resolve_path(value, self.spec_path.parent)
        if src not in self._hashed:
            if not src.is_file():
                raise UsageError(
                    f"--param {param}: {value!r} is not a file (looked at {src})",
                    hint=f"paths are relative to the spec's folder ({self.spec_path.parent})",
                )
            self._hashed[src] = (sha256_file(src), src.stat().st_size)
        return self._hashed[src]


def only_source(artifact: dict[str, Any], source: str) -> None:
    """An artifact given a new source by a point keeps that one only (exactly one of url, path
    or recipe; a recipe's parameters go with the recipe)."""
    for key in _SOURCES:
        if key != source:
            artifact.pop(key, None)
