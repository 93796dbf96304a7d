"""A spec's Spack pins (`$.environment.spack`): the manifest and lock hashes, the Spack and
builtin-repository revisions, the roots with their DAG hashes, the key packages.

Made from `lockfiles/<name>/spack.yaml` (and its spack.lock, once Spack has concretized it).
Every spec may carry them beside its captured manager's pins, so `repro replay --env spack`
works on a spec captured with Nix; they enter the spec id only when Spack is the captured
manager (pins for another way of building the stack do not change what the experiment is).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from repro.digests import sha256_file
from repro.errors import SpecError
from repro.formats.spack.lockfile import SpackLock, read_spack_lock
from repro.formats.spack.manifest import check_consistency, read_manifest
from repro.spec.spack_pins import (
    LOCK_NAME,
    SpackPins,
)


def _relative(target: Path, spec_dir: Path) -> str:
    import os

    return os.path.relpath(target.resolve(), spec_dir.resolve())


def pins_from_files(
    manifest_path: Path, spec_dir: Path, key_names: Collection[str]
) -> dict[str, Any]:
    """The pins (JSON, before validation) for the manifest and the spack.lock beside it, with
    the versions of its key packages (`key_names`).

    The lock must have been concretized from this manifest (its roots are the manifest's
    specs), or the pins would claim a stack the manifest does not describe.
    """

    manifest = read_manifest(manifest_path)
    pins: dict[str, Any] = {
        "spack_yaml": {
            "path": _relative(manifest_path, spec_dir),
            "sha256": sha256_file(manifest_path),
        }
    }
    builtin = manifest.repo("builtin")
    if builtin is not None and builtin.ref_kind == "commit":
        pins["builtin_commit"] = builtin.ref
    lock_path = manifest_path.parent / LOCK_NAME
    if not lock_path.is_file():
        return pins
    lock = read_spack_lock(lock_path)
    require_consistent(manifest_path, lock)
    pins["spack_lock"] = {"path": _relative(lock_path, spec_dir), "sha256": sha256_file(lock_path)}
    pins.update(lock_pins(lock, key_names))
    return pins


def lock_pins(lock: SpackLock, key_names: Collection[str]) -> dict[str, Any]:
    """What a lock pins, as the spec (and a run's record) keeps it: its roots and its key
    packages (`key_names`)."""
    out: dict[str, Any] = {
        "roots": [
            {"spec": r.spec, "hash": r.hash, "name": lock.nodes[r.hash].name} for r in lock.roots
        ],
        "packages": lock.key_packages(key_names),
    }
    if lock.spack_version:
        out["spack_version"] = lock.spack_version
    if lock.spack_commit:
        out["spack_commit"] = lock.spack_commit
    return out


def require_consistent(manifest_path: Path, lock: SpackLock) -> None:
    """A lock whose roots are not the manifest's specs is refused, naming the difference."""
    result = check_consistency(read_manifest(manifest_path), [r.spec for r in lock.roots])
    if result.checked and not result.consistent:
        parts = []
        if result.only_in_manifest:
            parts.append(f"only in {manifest_path.name}: {', '.join(result.only_in_manifest)}")
        if result.only_in_lock:
            parts.append(f"only in {lock.path.name}: {', '.join(result.only_in_lock)}")
        raise SpecError(
            f"{lock.path}: $.roots are not the specs of {manifest_path} ({'; '.join(parts)})",
            hint=f"concretize again: spack -e {manifest_path.parent} concretize --force",
        )


def pins_view(pins: SpackPins) -> dict[str, Any]:
    """The pins as drift keys: `spack.<package>` -> `version variants %compiler target /hash`."""
    view: dict[str, Any] = {}
    if pins.builtin_commit:
        view["spack.builtin"] = pins.builtin_commit
    if pins.spack_version:
        view["spack.version"] = pins.spack_version
    for name, p in pins.packages.items():
        view[f"spack.{name}"] = package_text(p.model_dump())
    for r in pins.roots:
        view[f"spack.root.{r.spec}"] = r.hash
    return view


def package_text(p: dict[str, Any]) -> str:
    """`0.25.0 +dnnl+llvm %gcc@13.2.0 target=zen4 /abcdefg` (as `spack find -lv` would)."""
    parts = [p["version"]]
    if p.get("variants"):
        parts.append(p["variants"])
    if p.get("compiler"):
        parts.append(f"%{p['compiler']}")
    if p.get("target"):
        parts.append(f"target={p['target']}")
    parts.append(f"/{p['hash'][:7]}")
    return " ".join(parts)


def keep_builtin_commit(pins: dict[str, Any], previous: Any) -> None:
    """Carry the builtin commit pinned before into `pins` when the lock is the same one (its
    sha256 unchanged): re-pinning without a Spack to ask must not drop it."""
    if not isinstance(previous, dict) or "builtin_commit" in pins:
        return
    before, now = previous.get("spack_lock") or {}, pins.get("spack_lock") or {}
    if (
        previous.get("builtin_commit")
        and before.get("sha256")
        and before.get("sha256") == now.get("sha256")
    ):
        pins["builtin_commit"] = previous["builtin_commit"]
