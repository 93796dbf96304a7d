"""The worker's Python wheels beside a Spack environment: the spec's hashed lock, less what
Spack provides, installed into a folder of its own (`pip install --target`, every hash
checked) that goes first on the worker's PYTHONPATH. Spack builds the native stack (LoadGen's
bindings, LLVM, oneDNN); the wheels Spack has no source for (onnxruntime, apache-tvm) and the
pure-Python rest are PyPI's files, pinned by the lock like any venv's. Cached by the lock's
sha256 and what Spack provides; made under a temporary name, renamed when whole."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from repro import _subprocess
from repro.atomic import write_text
from repro.environments.pylock import normalize, without
from repro.errors import EnvironmentSetupError


def provided(names: list[str]) -> set[str]:
    """The Python distributions a Spack environment provides: its `py-*` packages."""
    return {normalize(n[3:]) for n in names if n.startswith("py-")}


def install_layer(
    lock: Path,
    spack_provides: set[str],
    cache: Path,
    *,
    wheels: Path | None,
    report: Callable[[str], None],
) -> Path:
    """The layer folder for `lock` beside a stack that provides `spack_provides`."""
    text = without(lock.read_text(), spack_provides)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    target = cache / f"spack-layer-{key}"
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=cache))
    try:
        req = work / "requirements.lock"
        write_text(req, text)
        report(f"spack: the lock's wheels beside the environment ({target})")
        args = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--require-hashes",
            "--only-binary=:all:",
            "--target",
            str(work / "site"),
            "-r",
            str(req),
        ]
        if wheels is not None:
            args += ["--no-index", "--find-links", str(wheels)]
        proc = _subprocess.run(args, timeout_s=3600)
        if proc.returncode != 0:
            raise EnvironmentSetupError(
                f"pip could not install the lock's wheels beside the Spack environment: "
                f"{(proc.stderr or proc.stdout).strip()[-600:]}",
                hint="a package index (or a package's wheels) must be at hand",
            )
        (work / "site").replace(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)
