"""Environment drift: what changed between two fingerprints, likeliest causes of a difference first.

Inputs are normalized into a flat "environment view" (group -> key -> value) taken from a
fingerprint file, a run directory (its fingerprint plus the backend options that ran, the spec
id and the lock hashes) or a spec (its hardware, backend options and locks).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.backends.registry import BACKENDS, spack_key_packages
from repro.digests import sha256_file
from repro.environments.nix.manager import flake_pins
from repro.environments.pylock import normalize, read_pins
from repro.environments.registry import get_manager
from repro.errors import SpecError
from repro.formats.spack.lockfile import read_spack_lock
from repro.runs.facts import BackendFacts
from repro.runs.record import ServerRecord
from repro.runs.store import load_run
from repro.spec.io import load_spec, spec_id
from repro.spec.paths import resolve_path

if TYPE_CHECKING:
    from repro.runs.record import RunRecord

View = dict[str, dict[str, Any]]
GROUPS = (
    "server",
    "artifacts",
    "backend",
    "hardware",
    "os",
    "python",
    "packages",
    "native",
    "variables",
    "pins",
    "spack",
)
#: packages every worker runs, whose version changes speed or results directly
HARNESS_PACKAGES = frozenset({"mlcommons-loadgen", "numpy"})


def key_packages() -> frozenset[str]:
    """The harness's packages and every backend's key packages."""

    return HARNESS_PACKAGES.union(*(p.key_packages for p in BACKENDS.values()))


@dataclass(frozen=True)
class Change:
    """One difference between A and B."""

    group: str
    key: str
    a: Any
    b: Any
    impact: int  # 0..100, how likely to explain a speed or accuracy difference

    @property
    def level(self) -> str:
        return "high" if self.impact >= 70 else "medium" if self.impact >= 40 else "low"


def _impact(group: str, key: str) -> int:
    k = key.lower()
    if group == "server":  # what was served, and by what: named before anything else
        return 100 if k in ("engine", "version", "model_sha256", "pinned") else 98
    if group == "artifacts":  # other bytes of the model or the data: another experiment
        return 99 if k.endswith("sha256") else 30
    if group == "backend":
        if "thread" in k:
            return 100
        if "." not in k or k == "options.execution_provider":  # what built and ran it
            return 88
        return 80
    if group == "hardware":
        if k in ("cpu.model", "machine"):
            return 95
        if k in ("cpu.logical_cpus", "cpu.physical_cores", "cpu.usable_cpus", "cpu.sockets"):
            return 92
        if k.startswith("cpu.flags"):
            return 72
        if k.startswith("cgroup."):  # a container's or a job's CPU and memory limits
            return 90 if "cpu" in k else 70
        if k.startswith("nvml."):
            return _nvml_impact(k)
        if k == "gpu_models":
            return 95
        if k.startswith(("caches", "gpus", "numa")):
            return 65
        if k in ("turbo", "frequency_governor"):
            return 60
        return 35
    if group == "pins":
        return 75
    if group == "spack":
        return _spack_impact(key)
    if group == "packages":
        return 85 if key in key_packages() else 20
    if group == "native":
        return 70
    if group == "variables":
        return 68 if any(t in key for t in ("THREAD", "NUM", "AFFINITY")) else 45
    if group == "python":
        return 40 if k in ("version", "implementation") else 10
    if group == "os":
        return 40 if k in ("kernel", "release", "libc", "container") else 5
    return 10


def _nvml_impact(key: str) -> int:
    """A GPU's facts: its driver, CUDA and clocks change its speed (high); its state now
    (clocks at this moment, temperature) is not a setting (low)."""
    if ".now." in key:
        return 20
    if key.endswith(("driver", "cuda_driver", ".name")) or "clock" in key:
        return 90
    if key.endswith(("power_limit_w", "persistence_mode", "mig_mode", "ecc_mode")):
        return 80
    if "torch." in key:
        return 85
    return 50


def _spack_impact(key: str) -> int:
    """A Spack package's change: a key package's compiler, target, version or variants first;
    a DAG hash alone changes whenever anything below it does, so it explains least."""

    package, _, attribute = key.rpartition(".")
    if package in ("", "spack"):  # spack.version: the tool that concretized
        return 55
    key_package = package.split("@")[0] in spack_key_packages()
    ranks = {
        "compiler": (90, 62),
        "target": (89, 61),
        "external": (87, 50),  # the system's own build instead of Spack's
        "version": (86, 45),
        "variants": (84, 42),
    }
    if attribute in ranks:
        return ranks[attribute][0 if key_package else 1]
    if attribute == "present":
        return 80 if key_package else 40
    return 30 if key_package else 15  # hash, namespace


def _spack_presence(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    """A package only one side has: any package when both sides list every package (two
    locks), else only the key packages (a spec or a run records those alone)."""

    full = a.get("spack.packages") == b.get("spack.packages") == "all"
    return {
        k
        for k in set(a) ^ set(b)
        if k.endswith(".present")
        and (full or k.split(".")[0].split("@")[0] in spack_key_packages())
    }


def spack_view(
    packages: dict[str, dict[str, Any]], *, every_package: bool = False, **meta: Any
) -> dict[str, Any]:
    """Spack packages (name -> pin) as drift keys `<package>.<version|variants|...>`;
    `every_package` when the list is a whole lock's, not its key packages."""
    out: dict[str, Any] = {f"spack.{k}": v for k, v in meta.items() if v is not None}
    out["spack.packages"] = "all" if every_package else "key"
    for name, pin in packages.items():
        out[f"{name}.present"] = True
        for attribute in ("version", "variants", "compiler", "target", "hash"):
            if pin.get(attribute) is not None:
                out[f"{name}.{attribute}"] = pin[attribute]
        out[f"{name}.external"] = bool(pin.get("external"))
    return out


def view_from_spack_lock(path: Path) -> View:
    """A spack.lock alone: every package's version, variants, compiler, target and hash."""

    lock = read_spack_lock(path)
    view: View = {g: {} for g in GROUPS}
    view["spack"] = spack_view(lock.package_pins(), every_package=True, version=lock.spack_version)
    return view


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def view_from_fingerprint(fp: dict[str, Any]) -> View:
    """A fingerprint (as `repro env show --json` prints it) as a flat view."""
    view: View = {g: {} for g in GROUPS}
    for group in ("hardware", "os", "python", "native", "variables"):
        _flatten("", fp.get(group) or {}, view[group])
    view["packages"] = dict(fp.get("packages") or {})
    # where it ran, not what ran
    view["os"].pop("hostname", None)
    view["python"].pop("executable", None)
    view["python"].pop("prefix", None)
    return view


def _backend_view(backend: BackendFacts) -> dict[str, Any]:
    out = backend.identity_facts()
    for k, v in backend.options.items():
        if not k.endswith(("_path", "cache_dir")):
            out[f"options.{k}"] = v
    return out


def view_from_run(run_dir: Path) -> View:

    return view_from_record(load_run(run_dir))


def view_from_record(record: RunRecord) -> View:
    """A run's view: its fingerprint, the backend options that ran, its spec id and locks."""
    view = view_from_fingerprint(record.fingerprint)
    env = record.environment_facts()
    if record.tests:
        view["backend"] = _backend_view(record.tests[0].backend_facts())
    captured = ((record.spec or {}).get("environment") or {}).get("manager")
    ran = env.manager
    if captured and ran and captured != ran:  # what ran, and what the spec names (auto fell back)
        ran = f"{ran} (the spec's: {captured})"
    view["pins"] = {
        "spec_id": record.spec_id,
        **{k: v for k, v in record.environment.items() if k.endswith("sha256")},
        "environment.manager": ran,
    }
    if record.spec is not None:
        view["artifacts"] = _artifacts_view(record.spec.get("artifacts"))
    if record.server is not None:
        view["server"] = _server_view(record.server)
    packages = record.environment.get("packages")
    if env.manager == "spack" and isinstance(packages, dict):
        view["spack"] = spack_view(packages, version=record.environment.get("spack_version"))
    return view


def _server_view(server: ServerRecord) -> dict[str, Any]:
    """A served run's server: its engine and version, every package of the engine, its flags,
    the model's files (a changed weight file is named), the client's settings."""
    out: dict[str, Any] = {
        "engine": server.engine,
        "pinned": server.pinned,
        "version": server.version,
        "model_sha256": server.model_sha256,
        "restart": server.restart,
    }
    out.update({f"packages.{k}": v for k, v in server.packages.items()})
    out.update({f"flags.{k}": v for k, v in server.flags.items()})
    out.update({f"model_files.{k}": v for k, v in server.model_files.items()})
    out.update({f"client.{k}": v for k, v in server.client.items()})
    if server.url is not None:
        out["url"] = server.url
    return {k: v for k, v in out.items() if v is not None}


def _artifacts_view(artifacts: Any) -> dict[str, Any]:
    """Each artifact's sha256 (what it is) and its source (where its bytes came from)."""
    out: dict[str, Any] = {}
    for name, art in (artifacts or {}).items() if isinstance(artifacts, dict) else ():
        if not isinstance(art, dict):
            continue
        out[f"{name}.sha256"] = art.get("sha256")
        for source in ("path", "url", "recipe"):
            if art.get(source) is not None:
                out[f"{name}.{source}"] = art[source]
    return out


def view_from_spec(path: Path) -> View:
    """A spec's view: its hardware, backend options, lock hashes and the pins of its manager."""

    spec = load_spec(path)
    view: View = {g: {} for g in GROUPS}
    names = {
        "cpu_model": "cpu.model",
        "logical_cpus": "cpu.logical_cpus",
        "physical_cores": "cpu.physical_cores",
        "sockets": "cpu.sockets",
        "cpu_flags": "cpu.flags",
        "cpu_vendor": "cpu.vendor",
    }
    for k, v in spec.hardware.model_dump(exclude_none=True).items():
        view["hardware"][names.get(k, k)] = v
    view["artifacts"] = _artifacts_view(spec.model_dump(mode="json")["artifacts"])
    options = spec.backend.options.model_dump(mode="json")
    view["backend"] = {"name": spec.backend.name, **{f"options.{k}": v for k, v in options.items()}}
    env = spec.environment
    manager = get_manager(env.manager)
    view["pins"] = {"spec_id": spec_id(spec), "environment.manager": env.manager}
    for attr, lock in manager.locks(env).items():
        view["pins"][f"{attr}_sha256"] = lock.sha256
    view["pins"].update(manager.pins_view(env, path.parent))
    if env.spack is not None:
        pins = env.spack.model_dump(mode="json")
        view["spack"] = spack_view(pins["packages"], version=env.spack.spack_version)
    if env.python_lock is not None:
        lock_path = resolve_path(env.python_lock.path, path.parent)
        if lock_path.is_file():
            view["packages"] = read_pins(_pinned_text(lock_path, env.python_lock.sha256, path))
    return view


def _pinned_text(lock_path: Path, sha256: str, spec_path: Path) -> str:
    """A lock file's text, when it is the one the spec pins (its sha256): a lock edited or
    replaced since would describe another environment than the spec's."""

    if sha256_file(lock_path) != sha256:
        raise SpecError(
            f"{lock_path}: not the lock {spec_path} pins (its sha256 differs from "
            f"$.environment's {sha256[:12]}...): it was edited or replaced",
            hint="restore the lock the spec was captured with (`repro validate` checks every "
            "pin), or re-capture the spec",
        )
    try:
        return lock_path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{lock_path}: cannot read the lock: {exc}") from None


def view_from_flake_lock(path: Path) -> View:
    """A flake.lock alone: its inputs, each as type:source@rev narHash."""

    view: View = {g: {} for g in GROUPS}
    view["pins"] = flake_pins(path)
    return view


def load_view(arg: Path) -> View:
    """A fingerprint JSON, a run directory, a spec, a flake.lock or a spack.lock; anything
    else is bad input."""
    if arg.is_dir():
        return view_from_run(arg)
    if arg.exists() and not arg.is_file():
        raise SpecError(
            f"{arg}: not a regular file (a pipe or a device)",
            hint="give a fingerprint (repro env show --json), a run dir, a spec or a lock file",
        )
    if not arg.is_file():
        raise SpecError(
            f"{arg}: no such file or directory",
            hint="give a fingerprint (repro env show --json), a run dir or a spec",
        )
    try:
        data = json.loads(arg.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        python_lock = arg.suffix in (".lock", ".txt") and isinstance(exc, json.JSONDecodeError)
        if python_lock and not arg.name.endswith(("flake.lock", "spack.lock")):
            raise SpecError(
                f"{arg}: a Python lock is compared through what pins it",
                hint="diff the specs (or runs) that pin the two locks: `repro env diff "
                "specs/a.json specs/b.json` lists every package that differs",
            ) from None
        raise SpecError(f"{arg}: not JSON: {str(exc)[:200]}") from None
    except RecursionError:
        raise SpecError(f"{arg}: not JSON this tool reads: nested too deeply") from None
    except OSError as exc:
        raise SpecError(f"{arg}: cannot read: {exc.strerror or exc}") from None
    if isinstance(data, dict) and str(data.get("schema", "")).startswith(
        "repro.machine.fingerprint/"
    ):
        return view_from_fingerprint(data)
    if isinstance(data, dict) and str(data.get("schema", "")).startswith("repro.experiment/"):
        return view_from_spec(arg)
    if isinstance(data, dict) and str(data.get("schema", "")).startswith("repro.run/"):
        return view_from_run(arg.parent)
    if isinstance(data, dict) and "nodes" in data and "root" in data:
        return view_from_flake_lock(arg)
    if isinstance(data, dict) and isinstance(data.get("_meta"), dict):
        return view_from_spack_lock(arg)
    raise SpecError(
        f"{arg}: $.schema: not a repro fingerprint, run record or spec, nor a flake.lock or "
        "spack.lock"
    )


def _align_versions(side: dict[str, Any], *, like: dict[str, Any]) -> dict[str, Any]:
    """A package concretized more than once is keyed `name@version` (`SpackLock.package_pins`);
    where the other side (`like`) keys a name so and this side has it once, this side's keys
    of that name get its version too: a second concretization added is one package more, not
    the first one gone."""
    versioned = {k.split(".", 1)[0].split("@", 1)[0] for k in like if "@" in k.split(".", 1)[0]}
    out: dict[str, Any] = {}
    for key, value in side.items():
        name, dot, rest = key.partition(".")
        version = side.get(f"{name}.version")
        if dot and "@" not in name and name in versioned and version is not None:
            key = f"{name}@{version}.{rest}"
        out[key] = value
    return out


def _nix_inputs(pins: dict[str, Any]) -> set[str]:
    return {k for k in pins if k.startswith("nix.")}


def _flags_changes(a: Any, b: Any) -> list[tuple[str, Any, Any]]:
    sa, sb = set(a or []), set(b or [])
    return [(f"cpu.flags.{f}", f in sa, f in sb) for f in sorted(sa ^ sb)]


def _needed_packages(a: View, b: View) -> set[str]:

    names = {v.get("name") for v in (a.get("backend", {}), b.get("backend", {}))}
    return {normalize(p) for n in names if n in BACKENDS for p in BACKENDS[str(n)].worker_packages}


def diff_views(a: View, b: View, *, compare_missing: bool = False) -> list[Change]:
    """Every difference, most likely to matter first.

    A key present on one side only is a change when `compare_missing` is set; otherwise only
    keys both sides know are compared (a spec records less than a fingerprint).
    """
    changes: list[Change] = []
    for group in GROUPS:
        ga, gb = a.get(group, {}), b.get(group, {})
        keys = (set(ga) | set(gb)) if compare_missing else set(ga) & set(gb)
        if group == "packages" and ga and gb:
            # A package only one side has matters when the experiment's backend needs it.
            keys |= _needed_packages(a, b) & (set(ga) | set(gb))
        if group == "pins" and _nix_inputs(ga) and _nix_inputs(gb):
            # an input one flake.lock has and the other has not: a part of the stack added or
            # dropped (both sides list every input of their lock)
            keys |= _nix_inputs(ga) ^ _nix_inputs(gb)
        if group == "spack" and ga and gb:
            gb = _align_versions(gb, like=ga)
            ga = _align_versions(ga, like=gb)
            keys = (set(ga) | set(gb)) if compare_missing else set(ga) & set(gb)
            keys |= _spack_presence(ga, gb)
            keys.discard("spack.packages")  # how much each side lists, not a difference
        for key in sorted(keys):
            va, vb = ga.get(key), gb.get(key)
            if group == "spack" and key.endswith(".present"):
                va, vb = bool(va), bool(vb)  # a package one side has not: absent, not unknown
            if va == vb:
                continue
            if key == "cpu.flags":
                changes += [
                    Change(group, k, x, y, _impact(group, k)) for k, x, y in _flags_changes(va, vb)
                ]
                continue
            changes.append(Change(group, key, va, vb, _impact(group, key)))
    return sorted(changes, key=lambda c: (-c.impact, c.group, c.key))


def diff_paths(a: Path, b: Path) -> list[Change]:
    """The changes from A to B; inputs that describe nothing in common are bad input."""
    va, vb = load_view(a), load_view(b)
    if not any(va.get(g) and vb.get(g) for g in GROUPS):
        raise SpecError(
            f"{a} and {b} describe nothing in common to compare (e.g. a spack.lock and a "
            "flake.lock)",
            hint="compare two of a kind, or runs and specs that carry the same pins",
        )
    return diff_views(va, vb)


def as_json(changes: list[Change]) -> list[dict[str, Any]]:
    return [{**asdict(c), "level": c.level} for c in changes]
