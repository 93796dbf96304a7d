"""flake.lock reading on the real published locks."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.formats.nix.flakelock import parse_flake_lock, read_flake_lock
from repro.formats.nix.nar import nix32 as nix32_of


def test_every_published_lock_reads(shared_fixtures: Path) -> None:
    locks = sorted((shared_fixtures / "locks" / "nix").glob("*.flake.lock"))
    assert len(locks) >= 5
    for path in locks:
        inputs = read_flake_lock(path).inputs()
        assert inputs, path
        for i in inputs:
            assert i.type in ("github", "git", "path", "tarball", "indirect", "gitlab")
            if i.type == "github":
                assert all((i.owner, i.repo, i.rev, i.nar_hash)), (path, i)


NAR = "sha256-iBITPzJfuzJf3Yr+bAGNrb0ElPkVbKEMFtlPfAuP8as="


def test_follows_paths_resolve() -> None:
    lock = parse_flake_lock(
        {
            "version": 7,
            "root": "root",
            "nodes": {
                "root": {"inputs": {"a": "a", "nixpkgs": "nixpkgs"}},
                "a": {
                    "inputs": {"nixpkgs": ["nixpkgs"]},
                    "locked": {"type": "github", "owner": "o", "repo": "a", "rev": "1"},
                },
                "nixpkgs": {
                    "locked": {
                        "type": "github",
                        "owner": "NixOS",
                        "repo": "nixpkgs",
                        "rev": "2",
                        "narHash": NAR,
                    }
                },
            },
        }
    )
    assert lock.resolve(["a", "nixpkgs"]) == "nixpkgs"
    assert [i.name for i in lock.inputs()] == ["a", "nixpkgs"]  # nixpkgs once, via follows


def test_git_and_non_flake_inputs(shared_fixtures: Path) -> None:
    lock = read_flake_lock(
        shared_fixtures / "locks/nix/generated-local-git-and-path-inputs.flake.lock"
    )
    by_name = {i.name: i for i in lock.inputs()}
    assert by_name["dep-git"].url == "file:///srv/example/gitdep"
    assert by_name["dep-git2"].flake is False
    assert by_name["dep-path"].path == "/srv/example/flake2"


@pytest.mark.parametrize(
    "doc",
    [
        {"nodes": {}},
        {"nodes": {}, "root": "r", "version": 99},
        {"nodes": {}, "root": "missing", "version": 7},
    ],
)
def test_malformed_locks_are_spec_errors(doc: dict) -> None:
    with pytest.raises(SpecError):
        parse_flake_lock(doc)


def _lock(nodes: dict, root_inputs: dict | None = None) -> dict:
    return {
        "version": 7,
        "root": "root",
        "nodes": {"root": {"inputs": root_inputs or {"n": "n"}}, **nodes},
    }


def _node(**locked: object) -> dict:
    return {"locked": {"type": "github", "owner": "o", "repo": "r", "rev": "1", **locked}}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_lock({"n": {**_node(), "inputs": {"x": ["n", "x"]}}}), "loops"),
        (_lock({}, {"n": "missingnode"}), "node 'missingnode' is not in $.nodes"),
        (_lock({"n": {**_node(), "inputs": ["a"]}}), "$.nodes.n.inputs must be an object"),
        (_lock({"n": {"locked": None}}), "$.nodes.n.locked must be an object"),
        (_lock({"n": {"locked": "x"}}), "$.nodes.n.locked must be an object"),
        (_lock({"n": None}), "$.nodes.n must be an object"),
        (_lock({"n": _node()}, {"n": 5}), "neither a node id nor a follows path"),
        (_lock({"n": {"original": {}}}), "$.nodes.n.locked: input 'n' is not locked"),
        (_lock({"n": _node(narHash="sha256-abc=")}), "is not a sha256 narHash"),
        ({"version": 7, "nodes": {}}, "$.root is missing"),
    ],
)
def test_a_damaged_lock_names_the_node(doc: dict, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        parse_flake_lock(doc, source="x/flake.lock").inputs()


def test_a_nar_hash_in_nix32_is_the_same_hash() -> None:
    nix32 = "sha256:" + nix32_of(base64.b64decode(NAR[7:]))
    a = parse_flake_lock(_lock({"n": _node(narHash=NAR)})).inputs()
    b = parse_flake_lock(_lock({"n": _node(narHash=nix32)})).inputs()
    assert a[0].nar_hash == b[0].nar_hash == NAR


def test_pins_keep_no_credentials_or_home_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/alice")
    lock = parse_flake_lock(
        _lock(
            {
                "t": _node(type="tarball", url="https://oauth2:glpat-SECRET@gitlab.example/x.tgz"),
                "p": _node(type="path", path="/home/alice/work/proj"),
            },
            {"t": "t", "p": "p"},
        )
    )
    pins = json.dumps([i.pin() for i in lock.inputs()])
    assert "SECRET" not in pins
    assert "/home/alice" not in pins
    assert "~/work/proj" in pins
