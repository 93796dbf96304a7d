"""The Spack on this machine: where it is, its version, and running it.

Found as `spack` on PATH, else `$SPACK_ROOT/bin/spack`. Every call goes through
`repro._subprocess` with the worker's whitelisted environment (Spack's own variables pass:
`SPACK_PYTHON`, the interpreter that has clingo; `SPACK_USER_CONFIG_PATH`, where a user or a
test keeps its configuration).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from repro import _subprocess
from repro.environments.base import worker_environment
from repro.errors import EnvironmentSetupError, SpecError

INSTALL_HINT = (
    'without a network, `eval "$(.ci/spack)"` unpacks the project\'s own Spack (its archives '
    "in ../shared/tools/spack/, docs/spack.md); else install Spack (git clone --depth=2 "
    "https://github.com/spack/spack.git) and put its bin/ on PATH, or set SPACK_ROOT"
)
#: the variables a Spack call needs besides the worker's (`worker_environment`)
SPACK_VARIABLES = (
    "SPACK_PYTHON",
    "SPACK_USER_CONFIG_PATH",
    "SPACK_SYSTEM_CONFIG_PATH",
    "SPACK_DISABLE_LOCAL_CONFIG",
    "SPACK_ROOT",
)


def find_spack() -> str | None:
    """The `spack` executable: on PATH, else `$SPACK_ROOT/bin/spack`; None when neither."""
    found = _subprocess.which("spack")
    if found is not None:
        return found
    root = os.environ.get("SPACK_ROOT")
    candidate = Path(root) / "bin" / "spack" if root else None
    return str(candidate) if candidate is not None and candidate.is_file() else None


def require_spack() -> str:
    """`find_spack()`, or an environment error saying how to get Spack."""
    spack = find_spack()
    if spack is None:
        raise EnvironmentSetupError(
            "`spack` is not on PATH and SPACK_ROOT is not set", hint=INSTALL_HINT
        )
    return spack


def spack_env() -> dict[str, str]:
    """The environment a Spack call runs with: the worker's, and Spack's own variables."""
    extra = {k: v for k, v in os.environ.items() if k in SPACK_VARIABLES}
    return worker_environment(extra)


def run(args: list[str], *, timeout_s: float = 900, what: str) -> str:
    """`spack ARGS`, its stdout; a failure is an environment error with Spack's last words."""
    proc = _subprocess.run([require_spack(), *args], env=spack_env(), timeout_s=timeout_s)
    if proc.returncode != 0:
        raise EnvironmentSetupError(
            f"`spack {' '.join(args)}` failed (exit {proc.returncode}) while {what}: "
            f"{last_error(proc.stderr or proc.stdout)}",
            hint="run the command yourself for Spack's whole output",
        )
    return proc.stdout


def run_logged(
    args: list[str], *, log: Path, report: Callable[[str], None], timeout_s: float
) -> tuple[int, list[str]]:
    """`spack ARGS` with its whole output in `log` and its progress lines reported; (exit
    status, the last lines)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:

        def echo(line: str) -> None:
            fh.write(line + "\n")
            if line.startswith(("==> Installing", "==> Error", "[+]", "==> Fetching")):
                report(f"  spack: {line}")

        return _subprocess.run_streaming(
            [require_spack(), *args], env=spack_env(), timeout_s=timeout_s, echo=echo
        )


def last_error(text: str) -> str:
    """Spack's error of an output: its `Error:` lines first, else its last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "error:" in ln]
    return ((errors or lines or ["no output"])[0])[:800]


def spack_version() -> str:
    """`spack --version` (e.g. 1.2.0.dev0)."""
    return run(["--version"], timeout_s=120, what="asking its version").strip().split()[0]


def version_tuple(text: str) -> tuple[int, ...]:
    """`1.2.0.dev0` -> (1, 2, 0): the release parts of a Spack version."""
    return tuple(int(p) for p in re.findall(r"\d+", text.split(".dev")[0])[:3])


def builtin_repository() -> tuple[Path | None, str | None]:
    """The builtin package repository this Spack uses (`spack repo list`) and its git commit:
    a git checkout's HEAD; else the commit `REPRO_SPACK_BUILTIN_COMMIT` declares (an archive of
    the repository carries none); else None."""
    out = run(["repo", "list"], timeout_s=300, what="listing its package repositories")
    declared = os.environ.get("REPRO_SPACK_BUILTIN_COMMIT", "").strip().lower() or None
    if declared is not None and not re.fullmatch(r"[0-9a-f]{40}", declared):
        raise SpecError(
            f"REPRO_SPACK_BUILTIN_COMMIT={declared!r}: not a full 40-hex git commit",
            hint="give the commit the builtin repository's archive was made from",
        )
    for line in out.splitlines():
        parts = line.split()
        if "builtin" in parts:
            path = Path(parts[-1])
            return path, _git_commit(path) or declared
    return None, declared


def _git_commit(path: Path) -> str | None:
    git = _subprocess.which("git")
    if git is None or not path.is_dir():
        return None
    proc = _subprocess.run([git, "-C", str(path), "rev-parse", "HEAD"], timeout_s=30)
    text = proc.stdout.strip()
    return text if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", text) else None


def concretize(env_dir: Path) -> None:
    """`spack -e DIR concretize --fresh`: DIR/spack.lock from DIR/spack.yaml. A manifest that
    does not concretize (an unknown package, conflicting constraints) is bad input: clingo's
    message, first lines, exit 2."""
    spack = require_spack()
    proc = _subprocess.run(
        [spack, "-e", str(env_dir), "concretize", "--fresh"], env=spack_env(), timeout_s=1800
    )
    if proc.returncode != 0:
        text = (proc.stderr or "") + (proc.stdout or "")
        first = [ln for ln in text.strip().splitlines() if ln.strip()][:6]
        raise SpecError(
            f"{env_dir / 'spack.yaml'}: does not concretize: " + " | ".join(first)[:1200],
            hint="check the specs and their constraints (`spack -e DIR concretize` shows all)",
        )


def spack_python(env_dir: Path, script: Path, *args: str) -> object:
    """The JSON a script prints when Spack's own interpreter runs it in the environment."""
    out = run(
        ["-e", str(env_dir), "python", str(script), *args],
        timeout_s=900,
        what=f"reading the environment {env_dir}",
    )
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise EnvironmentSetupError(
            f"`spack python {script.name}` printed no JSON: {out[-400:]}",
            hint="this Spack's Python API may differ from the one repro was tested with",
        ) from None
