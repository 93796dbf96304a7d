"""Capture Nix pins for a spec, and prefetch hashes for fixed-output paths."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from repro.artifacts.cache import sha256_file
from repro.errors import SpecError
from repro.nix.flakelock import read_flake_lock

#: the devShell of nix/flake.nix for each backend
SHELLS = {"onnxruntime": "ort", "tvm": "tvm"}


def capture_nix_environment(
    *, flake_dir: Path, spec_dir: Path, backend: str, python_lock: dict[str, Any] | None
) -> dict[str, Any]:
    """The spec's `environment` for a flake: reference, lock hash and every locked input."""
    lock_path = flake_dir / "flake.lock"
    if not (flake_dir / "flake.nix").is_file() or not lock_path.is_file():
        raise SpecError(
            f"{flake_dir}: needs flake.nix and flake.lock",
            hint="nix flake lock (on a networked machine) writes flake.lock",
        )
    lock = read_flake_lock(lock_path)
    env: dict[str, Any] = {
        "manager": "nix",
        "flake": "path:" + os.path.relpath(flake_dir.resolve(), spec_dir.resolve()),
        "shell": SHELLS.get(backend, "default"),
        "flake_lock": {
            "path": os.path.relpath(lock_path.resolve(), spec_dir.resolve()),
            "sha256": sha256_file(lock_path),
        },
        "inputs": [i.pin() for i in lock.inputs()],
    }
    if python_lock is not None:
        env["python_lock"] = python_lock
    return env
