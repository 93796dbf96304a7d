"""flake.lock reading on the real published locks."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.nix.flakelock import parse_flake_lock, read_flake_lock


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
                        "narHash": "sha256-x",
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
