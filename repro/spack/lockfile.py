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

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import SpecError

SUPPORTED_VERSIONS = range(1, 9)
#: Spack's compiler-flag parameters: variants only when set
FLAG_PARAMETERS = frozenset({"cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs"})
#: virtuals a compiler provides to the packages it builds (v6 on)
COMPILER_VIRTUALS = frozenset({"c", "cxx", "fortran"})
#: packages whose version, variants, compiler or target change an inference result
KEY_PACKAGES = (
    "apache-tvm",
    "llvm",
    "onednn",
    "python",
    "py-onnxruntime",
    "py-mlcommons-loadgen",
    "py-apache-tvm-ffi",
    "py-numpy",
)


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

    def key_packages(self) -> dict[str, dict[str, Any]]:
        """The key packages present, each as its pin (several of one name: `name@version`)."""
        return {k: v for k, v in self.package_pins().items() if k.split("@")[0] in KEY_PACKAGES}

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

    def summary(self) -> dict[str, Any]:
        """The same shape for every lockfile version."""
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
            "key_packages": self.key_packages(),
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


def _target(arch: Any) -> tuple[str | None, str | None, str | None]:
    if not isinstance(arch, dict):
        return None, None, None
    target = arch.get("target")
    if isinstance(target, dict):
        target = target.get("name")
    return (
        arch.get("platform"),
        arch.get("platform_os"),
        target if isinstance(target, str) else None,
    )


def _dependencies(raw: Any) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(name, hash, deptypes, virtuals) of each dependency, in any of the lock's shapes."""
    out = []
    if isinstance(raw, dict):  # v1-v2: {name: {hash, type}}
        items = [{"name": k, **v} for k, v in raw.items() if isinstance(v, dict)]
    elif isinstance(raw, list):
        items = [d for d in raw if isinstance(d, dict)]
    else:
        items = []
    for d in items:
        params: dict[str, Any] = d["parameters"] if isinstance(d.get("parameters"), dict) else {}
        types = params.get("deptypes", d.get("type", []))
        virtuals = params.get("virtuals", [])
        dep_hash = d.get("hash") or d.get("build_hash") or d.get("dag_hash") or ""
        out.append(
            (
                str(d.get("name", "")),
                str(dep_hash),
                tuple(types) if isinstance(types, list) else (str(types),),
                tuple(virtuals) if isinstance(virtuals, list) else (),
            )
        )
    return out


def _unwrap(key: str, raw: Any, path: Path) -> dict[str, Any]:
    """A node, flat, whether written flat (v3 on) or wrapped as `{name: {...}}` (v1-v2)."""
    if not isinstance(raw, dict):
        raise _bad(path, f"$.concrete_specs.{key}", "not an object")
    if "name" in raw:
        return raw
    if len(raw) == 1:
        ((name, node),) = raw.items()
        if isinstance(node, dict):
            return {"name": name, **node}
    raise _bad(path, f"$.concrete_specs.{key}", "a node without a name")


def read_spack_lock(path: Path) -> SpackLock:
    """Parse a spack.lock; anything Spack would not have written is a SpecError naming it."""
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, "$", f"not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("_meta"), dict):
        raise _bad(path, "$._meta", "missing: not a spack.lock")
    meta = data["_meta"]
    if meta.get("file-type") != "spack-lockfile":
        raise _bad(path, "$._meta.file-type", f"is {meta.get('file-type')!r}, not 'spack-lockfile'")
    version = meta.get("lockfile-version")
    if not isinstance(version, int) or version not in SUPPORTED_VERSIONS:
        raise SpecError(
            f"{path}: $._meta.lockfile-version is {version!r}; this reader knows 1-8",
            hint="a newer Spack wrote it: update repro, or write the lock with Spack <= 1.1",
        )
    concrete = data.get("concrete_specs")
    if not isinstance(concrete, dict):
        raise _bad(path, "$.concrete_specs", "missing or not an object")
    nodes: dict[str, SpackNode] = {}
    raw_nodes = {k: _unwrap(k, v, path) for k, v in concrete.items()}
    included = 0
    extra = data.get("include_concrete")
    if isinstance(extra, dict):  # v5 on: included environments, each a lock of its own
        for env in extra.values():
            if isinstance(env, dict) and isinstance(env.get("concrete_specs"), dict):
                included += 1
                for k, v in env["concrete_specs"].items():
                    raw_nodes.setdefault(k, _unwrap(k, v, path))
    for key, raw in raw_nodes.items():
        nodes[key] = _node(key, raw, path)
    # v6 on: the compiler is the build dependency that provides c/cxx/fortran
    for key, node in list(nodes.items()):
        if node.compiler is None:
            compiler = _compiler_dependency(raw_nodes[key], nodes)
            if compiler is not None:
                nodes[key] = SpackNode(**{**node.__dict__, "compiler": compiler})
    roots_raw = data.get("roots")
    if not isinstance(roots_raw, list):
        raise _bad(path, "$.roots", "missing or not a list")
    roots = []
    for i, r in enumerate(roots_raw):
        if not isinstance(r, dict) or not isinstance(r.get("hash"), str):
            raise _bad(path, f"$.roots[{i}]", "not {hash, spec}")
        if r["hash"] not in nodes:
            raise _bad(path, f"$.roots[{i}].hash", f"{r['hash']} is not in $.concrete_specs")
        roots.append(SpackRoot(str(r.get("spec", "")), r["hash"], r.get("group")))
    spack: dict[str, Any] = data["spack"] if isinstance(data.get("spack"), dict) else {}
    specfile = meta.get("specfile-version")
    return SpackLock(
        path=path,
        lockfile_version=version,
        specfile_version=specfile if isinstance(specfile, int) else None,
        spack_version=spack.get("version"),
        spack_commit=spack.get("commit"),
        roots=tuple(roots),
        nodes=nodes,
        included=included,
    )


def _node(key: str, raw: dict[str, Any], path: Path) -> SpackNode:
    name, version = raw.get("name"), raw.get("version")
    if not isinstance(name, str) or not name:
        raise _bad(path, f"$.concrete_specs.{key}.name", "missing")
    if not isinstance(version, str | int | float):
        raise _bad(path, f"$.concrete_specs.{key}.version", "missing")
    platform, os_, target = _target(raw.get("arch"))
    compiler = raw.get("compiler")
    compiler_text = None
    if isinstance(compiler, dict) and compiler.get("name"):
        compiler_text = f"{compiler['name']}@{compiler.get('version', '')}".rstrip("@")
    params: dict[str, Any] = raw["parameters"] if isinstance(raw.get("parameters"), dict) else {}
    variants = {
        k: v for k, v in params.items() if k != "patches" and not (k in FLAG_PARAMETERS and not v)
    }
    deps = _dependencies(raw.get("dependencies"))
    return SpackNode(
        name=name,
        version=str(version),
        hash=str(raw.get("hash") or key),
        namespace=raw.get("namespace"),
        platform=platform,
        os=os_,
        target=target,
        compiler=compiler_text,
        variants=variants,
        dependencies=tuple((n, h, t) for n, h, t, _ in deps),
        external=isinstance(raw.get("external"), dict),
    )


def _compiler_dependency(raw: dict[str, Any], nodes: dict[str, SpackNode]) -> str | None:
    for _, dep_hash, types, virtuals in _dependencies(raw.get("dependencies")):
        if "build" in types and COMPILER_VIRTUALS & set(virtuals) and dep_hash in nodes:
            dep = nodes[dep_hash]
            return f"{dep.name}@{dep.version}"
    return None
