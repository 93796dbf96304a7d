"""The spack.yaml `repro capture --env-manager spack` writes for a spec.

The environment is the worker's native stack as Spack builds it: its roots are the backend's
`spack_specs` (MLPerf LoadGen's bindings from their PyPI sdist, built by Spack, and, for TVM,
LLVM and oneDNN); the build tools (cmake, ninja, make, perl) and the compiler are this
machine's, as externals `spack external find` finds; Python is the system's (`/usr`, not a
home folder), as an external of the lock's Python version. The backend's Python wheels
(onnxruntime, apache-tvm, numpy, ...) are not Spack's: they come from the spec's hashed Python
lock, installed beside the environment's view (`layer.py`). Targets are generic
(`x86_64_v3`), so a lock made on one CPU of the family installs on another. The builtin
repository is not named: the Spack that realizes the environment uses its own, and the lock's
recipe hashes say whether it is the one pinned.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from repro import _subprocess
from repro.atomic import write_text
from repro.environments.spack import tool
from repro.errors import EnvironmentSetupError

#: what building the stack needs of this machine (found, when present, as externals)
BUILD_TOOLS = ("cmake", "ninja", "gmake", "perl", "gcc")
TARGET = "x86_64_v3"
HEADER = """# Spack environment of specs/{name}.json (`repro capture --env-manager spack` wrote it):
# the worker's native stack (roots below) on this machine's compiler, build tools and Python
# (externals); the Python wheels come from the hashed lock beside it (requirements.lock).
# Re-concretize: spack -e lockfiles/{name} concretize --fresh && repro spack pin specs/{name}.json
"""


def system_python(version: str) -> tuple[str, str]:
    """(version, prefix) of the system Python of `version`'s minor (`/usr/bin/python3`), the
    one the environment runs the worker with; an environment error when there is none."""
    python = "/usr/bin/python3"
    minor = ".".join(version.split(".")[:2])
    if Path(python).is_file():
        proc = _subprocess.run(
            [python, "-c", "import platform, sys; print(platform.python_version(), sys.prefix)"],
            timeout_s=30,
        )
        if proc.returncode == 0 and proc.stdout.split()[0].startswith(minor + "."):
            found, prefix = proc.stdout.split()[:2]
            return found, prefix
    raise EnvironmentSetupError(
        f"no system Python {minor} (/usr/bin/python3) for the Spack environment's worker",
        hint=f"install it (Debian: apt-get install python3 python3-dev python3-venv), or write "
        f"lockfiles/<name>/spack.yaml yourself with a python@{minor} external",
    )


def write_environment(
    folder: Path,
    *,
    name: str,
    specs: tuple[str, ...],
    repro_repo: Path,
    externals: tuple[str, ...],
    report: Callable[[str], None],
) -> Path:
    """Write folder/spack.yaml for `specs` and add this machine's externals to it."""
    version, prefix = system_python(platform.python_version())
    data = {
        "spack": {
            "specs": list(specs),
            "concretizer": {"unify": True},
            "view": True,
            "repos": {"repro": os.path.relpath(repro_repo.resolve(), folder.resolve())},
            "packages": {
                "all": {"target": [TARGET]},
                "python": {
                    "buildable": False,
                    "externals": [{"spec": f"python@{version}", "prefix": prefix}],
                },
            },
        }
    }
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "spack.yaml"
    write_text(manifest, HEADER.format(name=name) + yaml.safe_dump(data, sort_keys=False))
    wanted = (*BUILD_TOOLS, *externals)
    report(f"spack: finding this machine's {', '.join(wanted)} (spack external find)")
    tool.run(
        ["-e", str(folder), "external", "find", "--not-buildable", *wanted],
        timeout_s=900,
        what="finding externals",
    )
    found = _external_names(manifest)
    for name in (e for e in externals if e not in found):
        if (entry := DETECTORS[name]()) is not None:  # what `spack external find` cannot find
            _add_external(manifest, name, *entry)
    missing = [e for e in externals if e not in _external_names(manifest)]
    if missing:
        raise EnvironmentSetupError(
            f"{manifest}: Spack found no {', '.join(missing)} on this machine, which the "
            "backend's native stack pins as externals",
            hint="Debian: apt-get install llvm-14-dev libdnnl-dev (then capture again)",
        )
    return manifest


def externals(manifest: Path) -> dict[str, list[dict[str, Any]]]:
    """The manifest's externals by package: `packages.<name>.externals` entries."""
    data = yaml.safe_load(manifest.read_text()) or {}
    packages = (data.get("spack") or {}).get("packages") or {}
    return {
        name: [e for e in conf["externals"] if isinstance(e, dict)]
        for name, conf in packages.items()
        if isinstance(conf, dict) and conf.get("externals")
    }


def _external_names(manifest: Path) -> set[str]:
    return set(externals(manifest))


def _add_external(manifest: Path, name: str, spec: str, prefix: str) -> None:
    text = manifest.read_text()
    head, _, body = text.partition("spack:\n")
    data = yaml.safe_load("spack:\n" + body)
    data["spack"]["packages"][name] = {
        "buildable": False,
        "externals": [{"spec": spec, "prefix": prefix}],
    }
    write_text(manifest, head + yaml.safe_dump(data, sort_keys=False))


def _llvm() -> tuple[str, str] | None:
    """Debian's LLVM (llvm-*-dev): `llvm-config --version` and `--prefix`; Spack's own
    detection looks for its compilers (clang), which the -dev package does not bring. The
    version alone: Spack's llvm recipe rejects an external spelled `~clang` (its other
    defaults need clang), and nothing here builds against LLVM's clang."""
    candidates = sorted(Path("/usr/bin").glob("llvm-config*"), reverse=True)
    for exe in candidates:
        proc = _subprocess.run([str(exe), "--version", "--prefix"], timeout_s=30)
        lines = proc.stdout.split()
        if proc.returncode == 0 and len(lines) >= 2:
            return f"llvm@{lines[0].split('git')[0].rstrip('.-')}", lines[1]
    return None


def _onednn() -> tuple[str, str] | None:
    """Debian's oneDNN (libdnnl-dev): the version its dnnl_version.h defines; Spack's onednn
    package has no detection."""
    import re

    for prefix in ("/usr", "/usr/local"):
        header = Path(prefix) / "include" / "oneapi" / "dnnl" / "dnnl_version.h"
        if header.is_file():
            parts = dict(
                re.findall(r"#define DNNL_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)", header.read_text())
            )
            if len(parts) == 3:
                return f"onednn@{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}", prefix
    return None


#: repro's own finders, for the externals `spack external find` does not detect
DETECTORS: dict[str, Callable[[], tuple[str, str] | None]] = {"llvm": _llvm, "onednn": _onednn}
