"""flake.lock (version 7) reader: nodes, root, `follows` paths, and the locked inputs.

A node's `inputs` map an input name either to a node id or to a follows path (a list of input
names walked from the root, e.g. ["nixpkgs"] or ["a", "nixpkgs"]).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.formats.nix.nar import NIX32_ALPHABET, from_nix32, sri
from repro.privacy import redact_text

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
        """The spec's NixInput fields: a URL's credentials and home paths never leave the
        machine (`repro.privacy`); the narHash pins the content either way."""
        return {
            k: v
            for k, v in {
                "name": self.name,
                "type": self.type,
                "owner": self.owner,
                "repo": self.repo,
                "url": redact_text(self.url) if self.url else None,
                "path": redact_text(self.path) if self.path else None,
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
    source: str = "flake.lock"

    def resolve(self, target: str | list[str], *, where: str = "") -> str:
        """A node id, or a follows path resolved from the root to a node id; a path that
        breaks or loops is an error naming the file and the input."""
        if isinstance(target, str):
            return target
        seen: set[tuple[str, ...]] = set()
        path = list(target)
        node = self.root
        while path:
            key = (node, *path)
            if key in seen or len(seen) > 10_000:
                raise SpecError(
                    f"{self.source}: {where or '$.nodes'}: follows path {target} loops",
                    hint="regenerate the lock with `nix flake lock`",
                )
            seen.add(key)
            name = path.pop(0)
            ref = self.nodes[node].get("inputs", {}).get(name)
            if ref is None:
                raise SpecError(
                    f"{self.source}: {where or '$.nodes'}: follows path {target} breaks at "
                    f"{name!r} (node {node!r} has no such input)",
                    hint="regenerate the lock with `nix flake lock`",
                )
            if isinstance(ref, str):
                node = ref
            else:  # a follows path inside a follows path: walk it from the root
                path = [*ref, *path]
                node = self.root
        return node

    def inputs(self) -> list[LockedInput]:
        """Every input reachable from the root (breadth first), each node once."""
        out: list[LockedInput] = []
        seen: set[str] = set()
        queue: list[tuple[str, str]] = [
            (name, self.resolve(ref, where=f"$.nodes.{self.root}.inputs.{name}"))
            for name, ref in sorted(self.nodes[self.root].get("inputs", {}).items())
        ]
        while queue:
            name, node_id = queue.pop(0)
            if node_id in seen:
                continue
            seen.add(node_id)
            node = self.nodes[node_id]
            locked = node.get("locked")
            if not isinstance(locked, dict):
                raise SpecError(
                    f"{self.source}: $.nodes.{node_id}.locked: input {name!r} is not locked "
                    "(no `locked` object): it is not pinned",
                    hint="run `nix flake lock` to pin every input",
                )
            out.append(
                LockedInput(
                    name=name,
                    node=node_id,
                    type=str(locked.get("type", "unknown")),
                    owner=_opt_text(locked.get("owner")),
                    repo=_opt_text(locked.get("repo")),
                    url=_opt_text(locked.get("url")),
                    path=_opt_text(locked.get("path")),
                    ref=_opt_text(locked.get("ref")),
                    rev=_opt_text(locked.get("rev")),
                    nar_hash=_nar_hash(self.source, node_id, locked.get("narHash")),
                    last_modified=locked.get("lastModified"),
                    flake=node.get("flake", True),
                    original=node.get("original") or {},
                )
            )
            for child, ref in sorted(node.get("inputs", {}).items()):
                where = f"$.nodes.{node_id}.inputs.{child}"
                queue.append((f"{name}/{child}", self.resolve(ref, where=where)))
        return out


def _opt_text(value: Any) -> str | None:
    return None if value is None else str(value)


#: a narHash as Nix writes it in SRI form (sha256-<base64 of 32 bytes>) or nix32 (sha256:<52>)
_SRI = re.compile(r"sha256-[A-Za-z0-9+/]{43}=")
_NIX32 = re.compile(r"sha256:[" + NIX32_ALPHABET + r"]{52}")


def _nar_hash(source: str, node_id: str, value: Any) -> str | None:
    """A node's narHash in SRI form (the same hash written in nix32 compares equal)."""
    if value is None:
        return None
    text = str(value)
    if _SRI.fullmatch(text):
        return text
    if _NIX32.fullmatch(text):
        try:
            return sri(from_nix32(text.removeprefix("sha256:")))
        except ValueError:
            pass
    raise SpecError(
        f"{source}: $.nodes.{node_id}.locked.narHash: {text[:80]!r} is not a sha256 narHash "
        "(sha256-<44 base64 characters>, or sha256:<52 nix32 characters>)",
        hint="regenerate the lock with `nix flake lock`",
    )


def parse_flake_lock(data: Any, *, source: str = "flake.lock") -> FlakeLock:
    """Validate the shape of a flake.lock document: every node an object, every input a node
    id or a follows path (a list of names), every reference to a node that exists."""
    if not isinstance(data, dict) or "nodes" not in data:
        raise SpecError(f"{source}: not a flake.lock (needs `nodes` and `root`)")
    if "root" not in data:
        raise SpecError(f"{source}: $.root is missing: not a flake.lock `nix flake lock` wrote")
    version = data.get("version")
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise SpecError(
            f"{source}: $.version: flake.lock version {version!r} is not supported "
            f"(expected one of {SUPPORTED_VERSIONS})"
        )
    nodes = data["nodes"]
    if not isinstance(nodes, dict):
        raise SpecError(f"{source}: $.nodes must be an object of nodes")
    if not isinstance(data["root"], str) or data["root"] not in nodes:
        raise SpecError(f"{source}: $.root: node {data['root']!r} is not in $.nodes")
    for node_id, node in nodes.items():
        if not isinstance(node, dict):
            raise SpecError(f"{source}: $.nodes.{node_id} must be an object")
        inputs = node.get("inputs", {})
        if not isinstance(inputs, dict):
            raise SpecError(
                f"{source}: $.nodes.{node_id}.inputs must be an object of input name -> "
                "node id or follows path"
            )
        for name, ref in inputs.items():
            where = f"$.nodes.{node_id}.inputs.{name}"
            if isinstance(ref, str):
                if ref not in nodes:
                    raise SpecError(f"{source}: {where}: node {ref!r} is not in $.nodes")
            elif not (isinstance(ref, list) and all(isinstance(p, str) for p in ref)):
                raise SpecError(
                    f"{source}: {where}: {ref!r:.60} is neither a node id nor a follows path "
                    "(a list of input names)"
                )
        if "locked" in node and not isinstance(node["locked"], dict):
            raise SpecError(f"{source}: $.nodes.{node_id}.locked must be an object")
    return FlakeLock(int(version), data["root"], dict(nodes), source)


def read_flake_lock(path: Path) -> FlakeLock:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: cannot read flake.lock: {str(exc)[:200]}") from None
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
