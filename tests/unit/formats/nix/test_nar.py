"""NAR serialization and narHash against vectors computed by real Nix (nix-bin 2.8)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from repro.formats.nix.nar import from_nix32, nar_hash, nix32


def build_case(case: dict[str, Any], root: Path) -> Path:
    """Materialize a vector's file tree; returns the path to hash."""
    target = root / "case"

    def content(entry: dict[str, Any]) -> bytes:
        return base64.b64decode(entry["b64"]) if "b64" in entry else entry["text"].encode()

    def mode(entry: dict[str, Any]) -> int:
        if "mode" in entry:
            return int(entry["mode"], 8)
        return 0o755 if entry.get("executable") else 0o644

    if case.get("root") == "regular":
        target.write_bytes(content(case))
        target.chmod(mode(case))
        return target
    if case.get("root") == "symlink":
        target.symlink_to(case["target"])
        return target
    target.mkdir()
    for entry in case["entries"]:
        p = target / entry["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        if entry["type"] == "directory":
            p.mkdir(exist_ok=True)
        elif entry["type"] == "symlink":
            p.symlink_to(entry["target"])
        else:
            p.write_bytes(content(entry))
            p.chmod(mode(entry))
    return target


def _vectors() -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parents[5] / "shared/fixtures/locks/nix/narhash-vectors.json"
    if not path.is_file():
        return []
    return list(json.loads(path.read_text())["cases"])


@pytest.mark.parametrize(
    "case",
    _vectors()
    or [
        pytest.param(
            None,
            marks=pytest.mark.skip(
                reason="../shared/fixtures is absent: the Nix vectors come with the dev setup"
            ),
        )
    ],
    ids=lambda c: c["name"] if c else "absent",
)
def test_nar_hash_matches_real_nix(case: dict[str, Any], tmp_path: Path) -> None:
    got = nar_hash(build_case(case, tmp_path))
    want = case["expected"]
    assert got["hex"] == want["nar_sha256_hex"]
    assert got["nix32"] == want["nar_sha256_nix32"]
    assert got["sri"] == want["narHash_sri"]
    assert got["nar_size"] == want["nar_size"]


def test_nix32_round_trips() -> None:
    digest = bytes(range(32))
    assert from_nix32(nix32(digest)) == digest
    assert len(nix32(digest)) == 52


def test_owner_execute_bit_is_the_only_mode_that_counts(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x")
    b.write_text("x")
    a.chmod(0o444)
    b.chmod(0o654)
    assert nar_hash(a) == nar_hash(b)
    b.chmod(0o744)
    assert nar_hash(a) != nar_hash(b)
    os.utime(a, (0, 0))
    assert nar_hash(a)["hex"] == nar_hash(tmp_path / "a")["hex"]
