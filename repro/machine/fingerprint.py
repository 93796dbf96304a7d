"""The environment fingerprint: hardware, OS, Python, packages, native libraries, variables.

A fact that cannot be read is recorded as None (unknown), never guessed. Reading is cheap (no
backend is imported) unless `deep=True`, which imports every backend for its build info.
`python -m repro.machine.fingerprint [--deep]` prints it as JSON, so it can be read inside a
realized environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import Any

from repro import _subprocess
from repro.backends.registry import BACKENDS
from repro.machine import gpu
from repro.privacy import redact_text, result_variables
from repro.spec.types import Hardware

FINGERPRINT_SCHEMA = "repro.machine.fingerprint/v1"
#: CPU flags that change which kernels inference libraries pick
INTERESTING_FLAGS = re.compile(
    r"^(sse4_1|sse4_2|avx|avx2|fma|f16c|avx512.*|avx_vnni.*|amx.*|vnni|bf16|sha_ni|"
    r"neon|asimd.*|sve.*|sme\d*|hypervisor)$"
)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, Any]:
    text = _read("/proc/cpuinfo") or ""
    blocks = [b for b in text.split("\n\n") if b.strip()]
    first: dict[str, str] = {}
    physical: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                fields[k.strip()] = v.strip()
        if not first:
            first = fields
        if "physical id" in fields:
            sockets.add(fields["physical id"])
            physical.add((fields["physical id"], fields.get("core id", "")))
    flags = (first.get("flags") or first.get("Features") or "").split()
    return {
        "model": first.get("model name") or first.get("Model") or None,
        "vendor": first.get("vendor_id") or first.get("CPU implementer") or None,
        "family": first.get("cpu family"),
        "model_id": first.get("model"),
        "stepping": first.get("stepping"),
        "microcode": first.get("microcode"),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "physical_cores": len(physical) or None,
        "sockets": len(sockets) or None,
        "flags": sorted(f for f in flags if INTERESTING_FLAGS.match(f)),
    }


def _caches() -> dict[str, str] | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if not base.is_dir():
        return None
    out = {}
    for idx in sorted(base.glob("index*")):
        level, kind, size = (_read(str(idx / n)) for n in ("level", "type", "size"))
        if level and size:
            suffix = {"Data": "d", "Instruction": "i"}.get(kind or "", "")
            out[f"L{level}{suffix}"] = size
    return out or None


def _memory_bytes() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _turbo() -> bool | None:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return no_turbo == "0"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    return None if boost is None else boost == "1"


#: memory.limit_in_bytes at or above this is cgroup v1's "no limit" (a page-rounded 2**63 - 1)
_V1_UNLIMITED = 2**62


def _cgroup_dirs() -> dict[str, Path]:
    """controller -> the folder of this process's cgroup (v1), or {"": folder} (v2)."""
    root = Path("/sys/fs/cgroup")
    out: dict[str, Path] = {}
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        for name in controllers.split(",") if controllers else [""]:
            base = root / name if name else root
            # inside a container the cgroup's own folder is mounted at the controller's root
            here = base / path.lstrip("/")
            out[name] = here if here.is_dir() else base
    return out


def _cgroup_limits() -> dict[str, Any]:
    """The CPU and memory limits of this process's cgroup (a container's, a Slurm job's):
    `unlimited` when none is set, None when unreadable."""
    dirs = _cgroup_dirs()
    quota: Any = None
    cpuset: Any = None
    memory: Any = None
    if "" in dirs and (dirs[""] / "cgroup.controllers").exists():  # v2
        d = dirs[""]
        cpu_max = (_read(str(d / "cpu.max")) or "").split()
        if len(cpu_max) == 2:
            quota = "unlimited" if cpu_max[0] == "max" else int(cpu_max[0]) / int(cpu_max[1])
        cpuset = _read(str(d / "cpuset.cpus.effective"))
        mem = _read(str(d / "memory.max"))
        memory = "unlimited" if mem == "max" else int(mem) if mem and mem.isdigit() else None
    else:  # v1
        cpu = dirs.get("cpu") or dirs.get("cpuacct")
        if cpu is not None:
            q, period = _read(str(cpu / "cpu.cfs_quota_us")), _read(str(cpu / "cpu.cfs_period_us"))
            if q is not None and period and period.isdigit():
                quota = "unlimited" if q == "-1" else int(q) / int(period)
        if "cpuset" in dirs:
            cpuset = _read(str(dirs["cpuset"] / "cpuset.cpus"))
        if "memory" in dirs:
            mem = _read(str(dirs["memory"] / "memory.limit_in_bytes"))
            if mem and mem.isdigit():
                memory = "unlimited" if int(mem) >= _V1_UNLIMITED else int(mem)
    return {"cpu_quota_cpus": quota, "cpuset": cpuset or None, "memory_limit_bytes": memory}


def _container() -> str | None:
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
    cgroup = _read("/proc/1/cgroup") or ""
    for name in ("docker", "kubepods", "containerd", "lxc"):
        if name in cgroup:
            return name
    return None


def _os_release() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def _gpus() -> list[dict[str, str | None]] | None:

    if _subprocess.which("nvidia-smi") is None:
        return None
    try:
        proc = _subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total,uuid",
                "--format=csv,noheader",
            ],
            timeout_s=5,
        )
    except (OSError, TimeoutError):
        return None
    rows = [r.split(", ") for r in proc.stdout.strip().splitlines() if r.strip()]
    gpus: list[dict[str, str | None]] = [
        dict(zip(("name", "driver", "memory", "uuid"), r, strict=False)) for r in rows
    ]
    for g in gpus:  # an identifier, hashed like every other one repro records
        uuid = g.pop("uuid", None)
        g["uuid_sha256"] = hashlib.sha256(uuid.encode()).hexdigest() if uuid else None
    return gpus


def _gpu_models(
    nvml: dict[str, Any] | None, gpus: list[dict[str, str | None]] | None
) -> list[str] | None:
    """The GPUs' model names, sorted: what makes two machines different hardware (a driver or
    a clock is drift, ranked by `repro env diff`; another model is another machine)."""
    if nvml and nvml.get("devices"):
        return sorted(str(d.get("name")) for d in nvml["devices"].values())
    return sorted(str(g["name"]) for g in gpus if g.get("name")) if gpus else None


def _packages() -> dict[str, str]:
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower().replace("_", "-")] = dist.version
    return dict(sorted(out.items()))


def _native(deep: bool) -> dict[str, Any]:
    """Each backend's build information (imports the backends, so only when `deep`)."""
    if not deep:
        return {}

    return {name: plugin.build_info() for name, plugin in BACKENDS.items()}


def collect(*, deep: bool = False, variables: frozenset[str] | None = None) -> dict[str, Any]:
    """The fingerprint of this machine and of the interpreter running this function; of the
    environment's variables, those of `variables` (default: the registry's allow-list)."""
    uname = platform.uname()
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    numa = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    libc = platform.libc_ver()
    gpus, nvml = _gpus(), gpu.collect()
    return {
        "schema": FINGERPRINT_SCHEMA,
        "hardware": {
            "machine": uname.machine,
            "cpu": _cpuinfo(),
            "caches": _caches(),
            "memory_bytes": _memory_bytes(),
            "numa_nodes": len(numa) or None,
            "frequency_governor": governor,
            "turbo": _turbo(),
            "gpus": gpus,
            "nvml": nvml,
            "gpu_models": _gpu_models(nvml, gpus),
            "cgroup": _cgroup_limits(),
        },
        "os": {
            "system": uname.system,
            "kernel": uname.release,
            "kernel_version": uname.version,
            "release": _os_release(),
            "libc": f"{libc[0]} {libc[1]}".strip() or None,
            "container": _container(),
            "virtualization": _read("/sys/class/dmi/id/product_name"),
        },
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "build": " ".join(platform.python_build()),
            "compiler": platform.python_compiler(),
            "executable": redact_text(sys.executable),
            "prefix": redact_text(sys.prefix),
            "platform_tag": sysconfig.get_platform(),
        },
        "packages": _packages(),
        "native": _native(deep),
        "variables": result_variables(_result_names() if variables is None else variables),
    }


def hardware_from(fp: dict[str, Any]) -> dict[str, Any]:
    """The spec's hardware section from a fingerprint."""
    hw, cpu = fp.get("hardware", {}), fp.get("hardware", {}).get("cpu", {})
    return Hardware(
        cpu_model=cpu.get("model"),
        cpu_vendor=cpu.get("vendor"),
        logical_cpus=cpu.get("logical_cpus"),
        physical_cores=cpu.get("physical_cores"),
        sockets=cpu.get("sockets"),
        memory_bytes=hw.get("memory_bytes"),
        machine=hw.get("machine"),
        cpu_flags=cpu.get("flags") or [],
    ).model_dump(exclude_none=True)


def _result_names() -> frozenset[str]:
    """The allow-list of variables a fingerprint records: the backends' and their libraries'."""
    from repro.backends.registry import result_variables as names

    return names()


if __name__ == "__main__":
    # run in the worker's environment (`ProcessRunner.fingerprint`): the parent passes the
    # allow-list of variables, so that this process imports no plug-in
    given = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--variables=")), None)
    names = frozenset(filter(None, given.split(","))) if given is not None else None
    found = collect(deep="--deep" in sys.argv, variables=names)
    json.dump(found, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
