"""The only place that starts external programs (tests replace these functions)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def run(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion, capturing its text output."""
    return subprocess.run(
        list(cmd),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        timeout=timeout_s,
        check=check,
        capture_output=True,
        text=True,
    )


def spawn(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: Path | None,
    log_path: Path,
) -> subprocess.Popen[bytes]:
    """Start a command in its own process group with stdout and stderr going to `log_path`."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            list(cmd),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def which(program: str) -> str | None:
    """The program's path on PATH, or None."""
    from shutil import which as _which

    return _which(program, path=os.environ.get("PATH"))
