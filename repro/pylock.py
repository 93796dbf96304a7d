"""Hashed Python locks: what the worker needs, pinned to the versions installed here.

The lock is written by pip-compile (pip-tools) with `--generate-hashes`, so that
`pip install --require-hashes -r requirements.lock` accepts it. Top-level requirements are the
worker's packages at the versions installed in this interpreter; every other installed
distribution is a constraint, so the lock describes this environment and not PyPI's newest.
Without a package index, the lock holds versions only and says that hashes are missing.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from repro import _subprocess
from repro.artifacts.cache import sha256_file
from repro.atomic import atomic_write_text
from repro.errors import EnvironmentSetupError

if TYPE_CHECKING:
    from repro.backends.base import BackendPlugin

LOCK_NAME = "requirements.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)


@dataclass(frozen=True)
class PythonLock:
    """A written lock file and what it pins."""

    path: Path
    sha256: str
    hashes_complete: bool
    packages: dict[str, str]
    note: str = ""


def normalize(name: str) -> str:
    """PEP 503 normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions() -> dict[str, str]:
    """Normalized name -> version of every distribution in this interpreter."""
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[normalize(name)] = dist.version
    return out


def read_pins(lock_text: str) -> dict[str, str]:
    """name -> version of every `name==version` line of a requirements-style lock."""
    return {normalize(m.group(1)): m.group(2) for m in _PIN.finditer(lock_text)}


def top_level(backend: BackendPlugin, installed: dict[str, str]) -> list[str]:
    """`name==version` lines for the worker's packages; a missing one is an error."""
    lines = []
    for name in backend.worker_packages:
        version = installed.get(normalize(name))
        if version is None:
            raise EnvironmentSetupError(
                f"cannot lock the {backend.name} worker: {name} is not installed in "
                f"{sys.executable}",
                hint=f"pip install {name} (or: {backend.install_hint})",
            )
        lines.append(f"{name}=={version}")
    return lines


def write_python_lock(backend: BackendPlugin, out: Path, *, timeout_s: float = 600) -> PythonLock:
    """Lock the worker's packages for `backend` into `out` (atomically)."""
    installed = installed_versions()
    requirements = top_level(backend, installed)
    constraints = [f"{n}=={v}" for n, v in sorted(installed.items()) if n != "repro"]
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        req_in = Path(tmp) / "requirements.in"
        req_in.write_text("\n".join(requirements) + "\n")
        cons = Path(tmp) / "constraints.txt"
        cons.write_text("\n".join(constraints) + "\n")
        staged = Path(tmp) / LOCK_NAME
        proc = _subprocess.run(
            [
                sys.executable,
                "-m",
                "piptools",
                "compile",
                "--generate-hashes",
                "--allow-unsafe",
                "--strip-extras",
                "--no-header",
                "--no-annotate",
                "--no-emit-index-url",
                "--no-emit-find-links",
                "--quiet",
                "-c",
                str(cons),
                "-o",
                str(staged),
                str(req_in),
            ],
            cwd=Path(tmp),
            timeout_s=timeout_s,
        )
        if proc.returncode == 0 and staged.is_file():
            text = staged.read_text()
            complete, note = True, ""
        else:
            reason = (proc.stderr.strip().splitlines() or ["pip-compile failed"])[-1][:300]
            note = f"hashes missing: pip-compile could not reach a package index ({reason})"
            text = f"# {note}\n" + "\n".join(requirements) + "\n"
            complete = False
        header = (
            f"# repro Python lock for the {backend.name} worker, Python "
            f"{sys.version_info.major}.{sys.version_info.minor}; install with\n"
            f"#   pip install --no-deps --require-hashes -r {LOCK_NAME}\n"
        )
        atomic_write_text(out, header + text)
    return PythonLock(out, sha256_file(out), complete, read_pins(text), note)
