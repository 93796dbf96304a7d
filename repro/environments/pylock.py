"""Hashed Python locks: what the worker needs, pinned to the versions installed here.

The lock is written by pip-compile (pip-tools) with `--generate-hashes`, so that
`pip install --require-hashes -r requirements.lock` accepts it. Top-level requirements are the
worker's packages at the versions installed in this interpreter; every other installed
distribution is a constraint, so the lock describes this environment and not PyPI's newest.
Without a package index that has those versions there is no lock: an EnvironmentSetupError,
and nothing is written (a lock of bare top-level pins would neither install the dependencies nor
pass `--require-hashes`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from repro import _subprocess
from repro.atomic import atomic_write_text, write_text
from repro.digests import sha256_file
from repro.errors import EnvironmentSetupError
from repro.privacy import redact_text

if TYPE_CHECKING:
    from repro.backends.base import BackendPlugin

LOCK_NAME = "requirements.lock"


@dataclass(frozen=True)
class PythonLock:
    """A written lock file and what it pins."""

    path: Path
    sha256: str
    hashes_complete: bool
    packages: dict[str, str]


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
    """name -> version of every pinned requirement of a requirements-style lock, as pip reads
    it: `name[extras] == version ; markers` (a line whose markers do not hold for this
    interpreter is another platform's pin, as in uv's and pip-compile's universal locks, and is
    skipped), and `name @ URL` or `-e URL#egg=name` (the URL, credentials redacted). Lines pip
    would not install from (options, comments, unpinned names) are not pins."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: dict[str, str] = {}
    for line in _logical_lines(lock_text):
        text = re.split(r"\s+--hash[=\s]", line, maxsplit=1)[0].strip()
        if text.startswith(("-e ", "--editable ", "--editable=")):
            url = re.split(r"[=\s]", text, maxsplit=1)[1].strip()
            egg = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", url)
            if egg:
                out[normalize(egg.group(1))] = redact_text(url)
            continue
        if not text or text.startswith("-"):
            continue
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        if req.url:
            out[normalize(req.name)] = redact_text(req.url)
            continue
        exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
        if exact:
            out[normalize(req.name)] = exact[0]
    return out


def unhashed_requirements(lock_text: str) -> list[str]:
    """The requirements of a lock that `pip install --require-hashes` refuses: an editable or
    a requirement without a `--hash` (options and comments are not requirements)."""
    bad = []
    for line in _logical_lines(lock_text):
        text = line.strip()
        if not text or (text.startswith("-") and not text.startswith(("-e", "--editable"))):
            continue
        if text.startswith(("-e", "--editable")) or "--hash" not in text:
            bad.append(re.split(r"\s+--hash", text, maxsplit=1)[0][:120])
    return bad


def lock_hashes(lock_text: str) -> dict[str, set[str]]:
    """name -> every sha256 a requirements-style lock lists for it (`--hash=sha256:...`), over
    all its lines whatever their markers: the files pip would accept for that project."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: dict[str, set[str]] = {}
    for line in _logical_lines(lock_text):
        text = re.split(r"\s+--hash[=\s]", line, maxsplit=1)[0].strip()
        if not text or text.startswith("-"):
            continue
        try:
            name = normalize(Requirement(text).name)
        except InvalidRequirement:
            continue
        found = re.findall(r"--hash[=\s]+sha256:([0-9a-fA-F]{64})", line)
        out.setdefault(name, set()).update(h.lower() for h in found)
    return out


def without(lock_text: str, names: set[str]) -> str:
    """The lock's requirements but those of `names` (normalized project names), joined
    continuations and all: what pip installs beside a stack that provides `names` itself."""
    from packaging.requirements import InvalidRequirement, Requirement

    kept = []
    for line in _logical_lines(lock_text):
        text = re.split(r"\s+--hash[=\s]", line, maxsplit=1)[0].strip()
        if not text:
            continue
        try:
            name = normalize(Requirement(text).name) if not text.startswith("-") else None
        except InvalidRequirement:
            name = None
        if name not in names:
            kept.append(" ".join(line.split()))
    return "\n".join(kept) + "\n"


def _logical_lines(text: str) -> list[str]:
    """The lines of a requirements file with `\\` continuations joined and comments cut."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [re.sub(r"(^|\s)#.*$", "", line) for line in joined.splitlines()]


def top_level(
    backend: BackendPlugin, installed: dict[str, str], extra: tuple[str, ...] = ()
) -> list[str]:
    """`name==version` lines for the worker's packages and `extra` ones (a served experiment's
    server engine's; `name[extra]` keeps its extra); a missing one is an error."""
    lines = []
    for name in dict.fromkeys((*backend.worker_packages, *extra)):
        version = installed.get(normalize(name.split("[")[0]))
        if version is None:
            raise EnvironmentSetupError(
                f"cannot lock the {backend.name} worker: {name} is not installed in "
                f"{sys.executable}",
                hint=f"pip install {name} (or: {backend.install_hint})",
            )
        lines.append(f"{name}=={version}")
    return lines


def write_python_lock(
    backend: BackendPlugin, out: Path, *, extra: tuple[str, ...] = (), timeout_s: float = 600
) -> PythonLock:
    """Lock the worker's packages for `backend` (and `extra`: a server engine's) into `out`
    (atomically)."""
    installed = installed_versions()
    requirements = top_level(backend, installed, extra)
    constraints = [f"{n}=={v}" for n, v in sorted(installed.items()) if n != "repro"]
    with tempfile.TemporaryDirectory() as tmp:
        req_in = Path(tmp) / "requirements.in"
        write_text(req_in, "\n".join(requirements) + "\n")
        cons = Path(tmp) / "constraints.txt"
        write_text(cons, "\n".join(constraints) + "\n")
        staged = Path(tmp) / LOCK_NAME
        try:
            proc = _run_pip_compile(cons, req_in, staged, timeout_s=timeout_s)
        except subprocess.TimeoutExpired:
            raise _lock_failed(backend, f"no answer within {timeout_s:.0f} s") from None
        if proc.returncode != 0 or not staged.is_file():
            raise _lock_failed(backend, proc.stderr or proc.stdout)
        text = staged.read_text()
        unhashed = unhashed_requirements(text)
        if unhashed:
            raise _lock_failed(backend, f"its lock has {unhashed[0]!r} without a --hash")
        header = (
            f"# repro Python lock for the {backend.name} worker, Python "
            f"{sys.version_info.major}.{sys.version_info.minor}; install with\n"
            f"#   pip install --no-deps --require-hashes -r {LOCK_NAME}\n"
        )
        atomic_write_text(out, header + text)
    return PythonLock(out, sha256_file(out), True, read_pins(text))


def _run_pip_compile(
    cons: Path, req_in: Path, staged: Path, *, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return _subprocess.run(
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
        cwd=req_in.parent,
        timeout_s=timeout_s,
    )


def _lock_failed(backend: BackendPlugin, output: str) -> EnvironmentSetupError:
    """pip-compile could not lock (no package index answered, a version is not on it): a lock
    of bare top-level pins would install neither the dependencies nor verify a hash, so none is
    written."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    reason = (errors or lines or ["pip-compile failed with no output"])[-1][:300]
    return EnvironmentSetupError(
        f"cannot lock the {backend.name} worker's Python packages: pip-compile "
        f"--generate-hashes failed: {reason}",
        hint="capture needs a package index that has the installed versions (PyPI, or a "
        "mirror named by PIP_INDEX_URL / pip.conf); nothing was written",
    )
