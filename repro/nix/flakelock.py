"""flake.lock (version 7) reader: nodes, root, `follows` paths, and the locked inputs.

A node's `inputs` map an input name either to a node id or to a follows path (a list of input
names walked from the root, e.g. ["nixpkgs"] or ["a", "nixpkgs"]).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import SpecError

SUPPORTED_VERSIONS = (5, 6, 7)


@dataclass(frozen=True)
class LockedInput:
    """One input of the flake, as locked: where from, which revision, what content hash."""

    name: str  # the path of input names from the root, e.g. "a/nixpkgs"
    node: str
    type: str
    owner: str | None = None
    repo: str | None = None
    url: str | None = None
    path: str | None = None
    ref: str | None = None
    rev: str | None = None
    nar_hash: str | None = None
    last_modified: int | None = None
    flake: bool = True
    original: dict[str, Any] = field(default_factory=dict)

    def pin(self) -> dict[str, Any]:
        """The spec's NixInput fields."""
        return {
            k: v
            for k, v in {
                "name": self.name,
                "type": self.type,
                "owner": self.owner,
                "repo": self.repo,
                "url": self.url,
                "path": self.path,
                "rev": self.rev,
                "nar_hash": self.nar_hash,
            }.items()
            if v is not None
        }


@dataclass(frozen=True)
class FlakeLock:
    version: int
    root: str
    nodes: dict[str, dict[str, Any]]

    def resolve(self, target: str | list[str]) -> str:
        """A node id, or a follows path resolved from the root to a node id."""
        if isinstance(target, str):
            return target
        node = self.root
        for name in target:
            ref = self.nodes[node].get("inputs", {}).get(name)
            if ref is None:
                raise SpecError(f"flake.lock: follows path {target} breaks at {name!r}")
            node = self.resolve(ref)
        return node

    def inputs(self) -> list[LockedInput]:
        """Every input reachable from the root (breadth first), each node once."""
        out: list[LockedInput] = []
        seen: set[str] = set()
        queue: list[tuple[str, str]] = [
            (name, self.resolve(ref))
            for name, ref in sorted(self.nodes[self.root].get("inputs", {}).items())
        ]
        while queue:
            name, node_id = queue.pop(0)
            if node_id in seen:
                continue
            seen.add(node_id)
            node = self.nodes[node_id]
            locked = node.get("locked", {})
            out.append(
                LockedInput(
                    name=name,
                    node=node_id,
                    type=str(locked.get("type", "unknown")),
                    owner=locked.get("owner"),
                    repo=locked.get("repo"),
                    url=locked.get("url"),
                    path=locked.get("path"),
                    ref=locked.get("ref"),
                    rev=locked.get("rev"),
                    nar_hash=locked.get("narHash"),
                    last_modified=locked.get("lastModified"),
                    flake=node.get("flake", True),
                    original=node.get("original", {}),
                )
            )
            for child, ref in sorted(node.get("inputs", {}).items()):
                queue.append((f"{name}/{child}", self.resolve(ref)))
        return out


def parse_flake_lock(data: Any, *, source: str = "flake.lock") -> FlakeLock:
    """Validate the shape of a flake.lock document."""
    if not isinstance(data, dict) or "nodes" not in data or "root" not in data:
        raise SpecError(f"{source}: not a flake.lock (needs `nodes` and `root`)")
    version = data.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise SpecError(
            f"{source}: $.version: flake.lock version {version!r} is not supported "
            f"(expected one of {SUPPORTED_VERSIONS})"
        )
    if data["root"] not in data["nodes"]:
        raise SpecError(f"{source}: $.root: node {data['root']!r} is not in $.nodes")
    return FlakeLock(int(version), str(data["root"]), dict(data["nodes"]))


def read_flake_lock(path: Path) -> FlakeLock:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: cannot read flake.lock: {exc}") from None
    return parse_flake_lock(data, source=str(path))


def diff_locks(a: FlakeLock, b: FlakeLock) -> list[tuple[str, str, Any, Any]]:
    """(input, field, a, b) for every input whose locked revision or hash differs."""
    ia = {i.name: i for i in a.inputs()}
    ib = {i.name: i for i in b.inputs()}
    out = []
    for name in sorted(set(ia) | set(ib)):
        x, y = ia.get(name), ib.get(name)
        for attr in ("type", "owner", "repo", "url", "path", "rev", "nar_hash"):
            va, vb = getattr(x, attr, None), getattr(y, attr, None)
            if va != vb:
                out.append((name, attr, va, vb))
    return out
