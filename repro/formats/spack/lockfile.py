"""spack.lock reader for lockfile versions 1-8: one summary shape whatever the version.

What changed between versions (Spack's `environment.py` history, and the real locks in the
tests' fixtures):

- v1-v2 (Spack 0.13-0.16): `concrete_specs` values wrap the node as `{name: {...}}`;
  `dependencies` is a dict `{name: {"hash": ..., "type": [...]}}`.
- v3 (0.17): keyed by build hash; nodes flat with `name`, dependencies a list whose entries
  carry `build_hash`.
- v4 (0.18-0.21): keyed by DAG hash; dependencies `[{name, hash, type}]`, later
  `[{name, hash, parameters: {deptypes, virtuals}}]`; `package_hash` appears.
- v5 (0.22-0.23): `include_concrete` (concrete specs of included environments).
- v6 (1.0-1.1): the compiler is no longer a node attribute but a build dependency providing
  the `c`/`cxx`/`fortran` virtuals.
- v7: `roots[].group`. v8: read as v7 (same node shape).

Nodes keep only what changes results: name, version, namespace, platform/os/target, compiler,
variants (the node's `parameters` minus empty flag lists), dependencies and the DAG hash. An
external's path is not kept (it may name a home folder).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from repro.errors import SpecError
from repro.jsonio import read_json

SUPPORTED_VERSIONS = range(1, 9)
#: Spack's compiler-flag parameters: variants only when set
FLAG_PARAMETERS = frozenset({"cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs"})
#: virtuals a compiler provides to the packages it builds (v6 on)
COMPILER_VIRTUALS = frozenset({"c", "cxx", "fortran"})
#: a develop spec's `dev_path` as recorded: that it is one (its sources are a local checkout no
#: lock pins), never the path itself (a home directory, a user name)
DEV_PATH = "<local checkout>"
#: the harness's own packages whose version, variants, compiler or target change an inference
#: result; each backend plug-in names its own (`BackendPlugin.spack_key_packages`), and
#: `repro.backends.registry.spack_key_packages()` is the whole set a caller passes here
HARNESS_KEY_PACKAGES: Final = frozenset({"python", "py-mlcommons-loadgen", "py-numpy"})


@dataclass(frozen=True)
class SpackNode:
    """One concrete spec of the lock."""

    name: str
    version: str
    hash: str
    namespace: str | None = None
    platform: str | None = None
    os: str | None = None
    target: str | None = None
    compiler: str | None = None  # "gcc@11.4.1"
    variants: dict[str, Any] = field(default_factory=dict)
    dependencies: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (name, hash, deptypes)
    external: bool = False

    def pin(self) -> dict[str, Any]:
        """What a spec records of a key package."""
        out: dict[str, Any] = {"version": self.version, "hash": self.hash}
        for k in ("compiler", "target", "namespace"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.variants:
            out["variants"] = variants_text(self.variants)
        if self.external:
            out["external"] = True
        return out


@dataclass(frozen=True)
class SpackRoot:
    spec: str
    hash: str
    group: str | None = None


@dataclass(frozen=True)
class SpackLock:
    path: Path
    lockfile_version: int
    specfile_version: int | None
    spack_version: str | None
    spack_commit: str | None
    roots: tuple[SpackRoot, ...]
    nodes: dict[str, SpackNode]
    included: int = 0  # environments whose concrete specs are included (v5 on)

    def root_nodes(self) -> list[SpackNode]:
        return [self.nodes[r.hash] for r in self.roots if r.hash in self.nodes]

    def by_name(self) -> dict[str, list[SpackNode]]:
        out: dict[str, list[SpackNode]] = {}
        for node in self.nodes.values():
            out.setdefault(node.name, []).append(node)
        return out

    def key_packages(self, names: Collection[str]) -> dict[str, dict[str, Any]]:
        """The key packages (`names`) present, each as its pin (several of one name:
        `name@version`)."""
        return {k: v for k, v in self.package_pins().items() if k.split("@")[0] in names}

    def package_pins(self) -> dict[str, dict[str, Any]]:
        """Every package by name; a name concretized more than once is keyed `name@version`
        (and `name@version/hash7` when even that repeats)."""
        out: dict[str, dict[str, Any]] = {}
        for name, nodes in sorted(self.by_name().items()):
            if len(nodes) == 1:
                out[name] = nodes[0].pin()
                continue
            versions = [n.version for n in nodes]
            for n in sorted(nodes, key=lambda n: (n.version, n.hash)):
                key = f"{name}@{n.version}"
                if versions.count(n.version) > 1:
                    key += f"/{n.hash[:7]}"
                out[key] = n.pin()
        return out

    def summary(self, key_names: Collection[str]) -> dict[str, Any]:
        """The same shape for every lockfile version; `key_names` the key packages."""
        return {
            "lockfile_version": self.lockfile_version,
            "specfile_version": self.specfile_version,
            "spack": {"version": self.spack_version, "commit": self.spack_commit},
            "roots": [
                {
                    "spec": r.spec,
                    "hash": r.hash,
                    "name": self.nodes[r.hash].name if r.hash in self.nodes else None,
                    "version": self.nodes[r.hash].version if r.hash in self.nodes else None,
                }
                for r in self.roots
            ],
            "packages": len(self.nodes),
            "included_environments": self.included,
            "key_packages": self.key_packages(key_names),
        }


def variants_text(variants: dict[str, Any]) -> str:
    """Variants as Spack writes them: `+a~b key=value`, sorted by name."""
    bools = [f"{'+' if v else '~'}{k}" for k, v in sorted(variants.items()) if isinstance(v, bool)]
    others = [
        f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in sorted(variants.items())
        if not isinstance(v, bool)
    ]
    return " ".join(["".join(bools), *others]).strip()


def _bad(path: Path, where: str, what: str) -> SpecError:
    return SpecError(
        f"{path}: {where}: {what}",
        hint="a spack.lock is written by `spack concretize`; restore the file Spack wrote",
    )


def _text(path: Path, where: str, value: Any, *, required: bool = False) -> str | None:
    """A string field: absent is None (or an error when required); another type is an error."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _bad(path, where, f"must be a non-empty string, not {value!r:.60}")
    return value


def _target(path: Path, where: str, arch: Any) -> tuple[str | None, str | None, str | None]:
    if arch is None:
        return None, None, None
    if not isinstance(arch, dict):
        raise _bad(path, where, "must be an object {platform, platform_os, target}")
    target = arch.get("target")
    if isinstance(target, dict):
        if "name" not in target:
            raise _bad(path, f"{where}.target", "an object without the target's name")
        target = target.get("name")
    return (
        _text(path, f"{where}.platform", arch.get("platform")),
        _text(path, f"{where}.platform_os", arch.get("platform_os")),
        _text(path, f"{where}.target", target),
    )


def _dependencies(
    path: Path, where: str, raw: Any
) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(name, hash, deptypes, virtuals) of each dependency, in any of the lock's shapes."""
    if raw is None:
        return []
    if isinstance(raw, dict):  # v1-v2: {name: {hash, type}}
        items = [(f"{where}.{k}", {"name": k, **v}) for k, v in raw.items() if isinstance(v, dict)]
        if len(items) != len(raw):
            raise _bad(path, where, "every dependency must be an object {hash, type}")
    elif isinstance(raw, list):
        items = [(f"{where}[{i}]", d) for i, d in enumerate(raw)]
        if not all(isinstance(d, dict) for _, d in items):
            raise _bad(path, where, "every dependency must be an object {name, hash, ...}")
    else:
        raise _bad(path, where, "must be a list (or, before v3, an object) of dependencies")
    out = []
    for at, d in items:
        params = d.get("parameters", {})
        if not isinstance(params, dict):
            raise _bad(path, f"{at}.parameters", "must be an object")
        types = params.get("deptypes", d.get("type", []))
        virtuals = params.get("virtuals", [])
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise _bad(path, f"{at}.type", "must be a list of dependency types")
        if not isinstance(virtuals, list) or not all(isinstance(v, str) for v in virtuals):
            raise _bad(path, f"{at}.parameters.virtuals", "must be a list of names")
        dep_hash = d.get("hash") or d.get("build_hash") or d.get("dag_hash")
        out.append(
            (
                str(_text(path, f"{at}.name", d.get("name"), required=True)),
                str(_text(path, f"{at}.hash", dep_hash, required=True)),
                tuple(types),
                tuple(virtuals),
            )
        )
    return out


def _unwrap(path: Path, where: str, raw: Any) -> dict[str, Any]:
    """A node, flat, whether written flat (v3 on) or wrapped as `{name: {...}}` (v1-v2)."""
    if not isinstance(raw, dict):
        raise _bad(path, where, "not an object")
    if "name" in raw:
        return raw
    if len(raw) == 1:
        ((name, node),) = raw.items()
        if isinstance(node, dict):
            return {"name": name, **node}
    raise _bad(path, where, "a node without a name")


def _variant_value(value: Any) -> bool:
    """Spack's variant values: a bool, a string or number, or a list of strings."""
    if isinstance(value, bool | str) or (isinstance(value, int | float) and math.isfinite(value)):
        return True
    return isinstance(value, list) and all(isinstance(v, str | int) for v in value)


def read_spack_lock(path: Path) -> SpackLock:
    """Parse a spack.lock; anything Spack would not have written is a SpecError naming it."""
    data = read_json(
        path, deep_hint="a spack.lock nests a few levels deep: a damaged file?", constants=False
    )
    if not isinstance(data, dict) or not isinstance(data.get("_meta"), dict):
        raise _bad(path, "$._meta", "missing: not a spack.lock")
    meta = data["_meta"]
    if meta.get("file-type") != "spack-lockfile":
        raise _bad(
            path, "$._meta.file-type", f"is {meta.get('file-type')!r:.40}, not 'spack-lockfile'"
        )
    version = meta.get("lockfile-version")
    if type(version) is not int:
        raise _bad(path, "$._meta.lockfile-version", f"must be an integer, not {version!r:.40}")
    if version not in SUPPORTED_VERSIONS:
        raise SpecError(
            f"{path}: $._meta.lockfile-version is {version}; this reader knows 1-8",
            hint="a newer Spack wrote it: update repro"
            if version > 8
            else "Spack's lock versions start at 1",
        )
    concrete = data.get("concrete_specs")
    if not isinstance(concrete, dict):
        raise _bad(path, "$.concrete_specs", "missing or not an object")
    raw_nodes = {
        k: (f"$.concrete_specs.{k}", _unwrap(path, f"$.concrete_specs.{k}", v))
        for k, v in concrete.items()
    }
    included = 0
    extra = data.get("include_concrete")
    if extra is not None and not isinstance(extra, dict):
        raise _bad(path, "$.include_concrete", "must be an object")
    for env_name, env in (extra or {}).items():  # v5 on: included environments' locks
        where = f"$.include_concrete.{env_name}"
        if not isinstance(env, dict) or not isinstance(env.get("concrete_specs"), dict):
            raise _bad(path, f"{where}.concrete_specs", "missing or not an object")
        included += 1
        for k, v in env["concrete_specs"].items():
            at = f"{where}.concrete_specs.{k}"
            raw_nodes.setdefault(k, (at, _unwrap(path, at, v)))
    nodes = {key: _node(path, where, key, raw, version) for key, (where, raw) in raw_nodes.items()}
    if version >= 4:  # keyed by DAG hash: a dependency names a node of the lock
        for key, node in nodes.items():
            for name, dep_hash, _ in node.dependencies:
                if dep_hash not in nodes:
                    raise _bad(
                        path,
                        f"{raw_nodes[key][0]}.dependencies",
                        f"{name} /{dep_hash[:7]} is not in $.concrete_specs: the lock is "
                        "incomplete",
                    )
    # v6 on: the compiler is the build dependency that provides c/cxx/fortran
    for key, node in list(nodes.items()):
        if node.compiler is None:
            where, raw = raw_nodes[key]
            compiler = _compiler_dependency(path, where, raw, nodes)
            if compiler is not None:
                nodes[key] = dataclasses.replace(node, compiler=compiler)
    roots_raw = data.get("roots")
    if not isinstance(roots_raw, list):
        raise _bad(path, "$.roots", "missing or not a list")
    roots: list[SpackRoot] = []
    for i, r in enumerate(roots_raw):
        if not isinstance(r, dict):
            raise _bad(path, f"$.roots[{i}]", "not {hash, spec}")
        h = str(_text(path, f"$.roots[{i}].hash", r.get("hash"), required=True))
        if h not in nodes:
            raise _bad(path, f"$.roots[{i}].hash", f"{h:.40} is not in $.concrete_specs")
        spec = str(_text(path, f"$.roots[{i}].spec", r.get("spec"), required=True))
        if any(x.spec == spec for x in roots):
            raise _bad(path, f"$.roots[{i}].spec", f"{spec!r:.60} is a root twice")
        roots.append(SpackRoot(spec, h, _text(path, f"$.roots[{i}].group", r.get("group"))))
    spack = data.get("spack", {})
    if not isinstance(spack, dict):
        raise _bad(path, "$.spack", "must be an object {version, type, commit}")
    specfile = meta.get("specfile-version")
    if specfile is not None and type(specfile) is not int:
        raise _bad(path, "$._meta.specfile-version", "must be an integer")
    return SpackLock(
        path=path,
        lockfile_version=version,
        specfile_version=specfile,
        spack_version=_text(path, "$.spack.version", spack.get("version")),
        spack_commit=_text(path, "$.spack.commit", spack.get("commit")),
        roots=tuple(roots),
        nodes=nodes,
        included=included,
    )


def _node(path: Path, where: str, key: str, raw: dict[str, Any], version: int) -> SpackNode:
    name = str(_text(path, f"{where}.name", raw.get("name"), required=True))
    node_version = str(_text(path, f"{where}.version", raw.get("version"), required=True))
    platform, os_, target = _target(path, f"{where}.arch", raw.get("arch"))
    compiler = raw.get("compiler")
    compiler_text = None
    if compiler is not None:
        if not isinstance(compiler, dict):
            raise _bad(path, f"{where}.compiler", "must be an object {name, version}")
        cname = _text(path, f"{where}.compiler.name", compiler.get("name"), required=True)
        cversion = _text(path, f"{where}.compiler.version", compiler.get("version"))
        compiler_text = f"{cname}@{cversion}" if cversion else cname
    params = raw.get("parameters", {})
    if not isinstance(params, dict):
        raise _bad(path, f"{where}.parameters", "must be an object")
    variants: dict[str, Any] = {}
    for k, v in params.items():
        if k == "patches" or (k in FLAG_PARAMETERS and not v):
            continue
        if k == "dev_path":  # a develop spec: built from a checkout on that machine
            variants[k] = DEV_PATH
            continue
        if not _variant_value(v):
            raise _bad(path, f"{where}.parameters.{k}", f"not a variant value: {v!r:.60}")
        variants[k] = v
    deps = _dependencies(path, f"{where}.dependencies", raw.get("dependencies"))
    dag_hash = str(_text(path, f"{where}.hash", raw.get("hash") or key, required=True))
    if version >= 4 and dag_hash != key:  # keyed by DAG hash from v4 on
        raise _bad(path, f"{where}.hash", f"{dag_hash:.40} is not the key it is stored under")
    return SpackNode(
        name=name,
        version=node_version,
        hash=dag_hash,
        namespace=_text(path, f"{where}.namespace", raw.get("namespace")),
        platform=platform,
        os=os_,
        target=target,
        compiler=compiler_text,
        variants=variants,
        dependencies=tuple((n, h, t) for n, h, t, _ in deps),
        external=isinstance(raw.get("external"), dict),
    )


def _compiler_dependency(
    path: Path, where: str, raw: dict[str, Any], nodes: dict[str, SpackNode]
) -> str | None:
    """The compiler of a node from Spack 1.0's compiler dependencies: the one providing c or
    c++ (a mixed toolchain takes only Fortran from gcc), else the Fortran one."""
    found: list[tuple[int, str]] = []
    for _, dep_hash, types, virtuals in _dependencies(
        path, f"{where}.dependencies", raw.get("dependencies")
    ):
        provided = COMPILER_VIRTUALS & set(virtuals)
        if "build" in types and provided and dep_hash in nodes:
            dep = nodes[dep_hash]
            found.append((0 if provided & {"c", "cxx"} else 1, f"{dep.name}@{dep.version}"))
    return min(found)[1] if found else None
