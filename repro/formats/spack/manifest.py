"""spack.yaml: read it, check the keys repro relies on against Spack's schema rules, and check
that a spack.lock was concretized from it (its roots are the manifest's specs).

The structure checked is Spack's environment schema for the keys an experiment uses
(https://spack.readthedocs.io/en/latest/environments.html, "spack.yaml";
https://spack.readthedocs.io/en/latest/repositories.html for `repos`, a list of paths or,
since Spack 1.0, a map of name to a path or to `{git, branch|commit|tag}`): the top-level
`spack:` mapping accepts only the sections Spack knows, and every section repro reads has the
type Spack requires. Spack itself validates the rest when it reads the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import SpecError

#: the sections Spack's environment schema accepts under `spack:` (Spack 0.23-1.1)
KNOWN_SECTIONS = frozenset(
    {
        "specs",
        "view",
        "concretizer",
        "packages",
        "repos",
        "mirrors",
        "config",
        "include",
        "include_concrete",
        "definitions",
        "develop",
        "concretization",  # Spack < 0.18; `concretizer: unify:` since
        "compilers",
        "toolchains",
        "modules",
        "upstreams",
        "bootstrap",
        "ci",
        "cdash",
        "container",
        "env_vars",
    }
)
REPO_GIT_REFS = ("branch", "commit", "tag")
HEX40 = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class RepoPin:
    """One package repository the manifest names: a path, or a git repository at a ref."""

    name: str | None
    path: str | None = None
    git: str | None = None
    ref_kind: str | None = None  # branch | commit | tag
    ref: str | None = None

    @property
    def pinned(self) -> bool:
        """A path (versioned with the experiment) or a git repository at a full commit."""
        if self.path is not None:
            return True
        return self.ref_kind == "commit" and bool(self.ref and HEX40.match(self.ref))


@dataclass(frozen=True)
class SpackManifest:
    path: Path
    specs: tuple[str, ...]
    uses_definitions: bool  # some specs come from `definitions` or matrices
    unify: Any
    repos: tuple[RepoPin, ...]

    def repo(self, name: str) -> RepoPin | None:
        return next((r for r in self.repos if r.name == name), None)


def _bad(path: Path, where: str, what: str, hint: str | None = None) -> SpecError:
    return SpecError(
        f"{path}: {where}: {what}",
        hint=hint or "see https://spack.readthedocs.io/en/latest/environments.html",
    )


def read_manifest(path: Path) -> SpackManifest:
    """Read and structurally check a spack.yaml; a violation names the file and the key."""
    data = _load_yaml(path)
    if not isinstance(data, dict) or set(data) != {"spack"} or not isinstance(data["spack"], dict):
        raise _bad(path, "$", "a Spack environment file is one mapping, `spack:`")
    env: dict[str, Any] = data["spack"]
    for key in env:
        if not isinstance(key, str):
            raise _bad(path, f"$.spack.{key!r:.40}", "a section's name must be a string")
    unknown = sorted(set(env) - KNOWN_SECTIONS)
    if unknown:
        raise _bad(path, f"$.spack.{unknown[0]}", "not a section Spack's environment schema has")
    specs, uses_definitions = _specs(path, env.get("specs", []))
    concretizer = env.get("concretizer", {})
    if not isinstance(concretizer, dict):
        raise _bad(path, "$.spack.concretizer", "must be a mapping")
    # Spack before 0.18 wrote `concretization: together|separately` at the top level
    legacy = {"together": True, "separately": False}.get(str(env.get("concretization")), True)
    unify = concretizer.get("unify", legacy)
    if not (isinstance(unify, bool) or unify == "when_possible"):
        raise _bad(path, "$.spack.concretizer.unify", f"is {unify!r}; true, false or when_possible")
    view = env.get("view", True)
    if not isinstance(view, bool | str | dict):
        raise _bad(path, "$.spack.view", "must be true/false, a path or a mapping of views")
    for section in ("packages", "config", "mirrors", "definitions"):
        value = env.get(section)
        ok = isinstance(value, list) if section == "definitions" else isinstance(value, dict)
        if value is not None and not ok:
            kind = "a list" if section == "definitions" else "a mapping"
            raise _bad(path, f"$.spack.{section}", f"must be {kind}")
    return SpackManifest(
        path=path,
        specs=tuple(specs),
        uses_definitions=uses_definitions,
        unify=unify,
        repos=tuple(_repos(path, env.get("repos"))),
    )


def _load_yaml(path: Path) -> Any:
    """The YAML document, read safely: a regular file, one document, no duplicate keys, no
    tags beyond YAML's own; damage is a SpecError naming the file and the line."""
    import stat

    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`, as Spack reads it: merged below, its keys overridable
            key = loader.construct_object(key_node)
            if isinstance(key, list | dict):
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a scalar", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} appears twice", key_node.start_mark
                )
            seen.add(key)
        out: dict[Any, Any] = loader.construct_mapping(node)
        return out

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise _bad(path, "$", "no such file") from None
    if not stat.S_ISREG(st.st_mode):
        raise _bad(path, "$", "not a regular file")
    if st.st_size > 64 << 20:
        raise _bad(path, "$", f"{st.st_size} bytes: not a Spack environment file")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)
    except UnicodeDecodeError as exc:
        raise _bad(path, "$", f"not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f"line {where.line + 1}" if where is not None else "$"
        raise _bad(path, at, f"not YAML ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:
        raise _bad(path, "$", "nested too deeply for a Spack environment file") from None


def _specs(path: Path, raw: Any) -> tuple[list[str], bool]:
    if not isinstance(raw, list):
        raise _bad(path, "$.spack.specs", "must be a list")
    out: list[str] = []
    indirect = False
    for i, item in enumerate(raw):
        if isinstance(item, str):
            if not item.strip() or "\0" in item:
                raise _bad(path, f"$.spack.specs[{i}]", "an empty spec or a NUL byte")
            if item.startswith("$"):
                indirect = True
            else:
                out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("matrix"), list):
            indirect = True
        else:
            raise _bad(path, f"$.spack.specs[{i}]", "must be a spec string or a {matrix: ...}")
    return out, indirect


def _repos(path: Path, raw: Any) -> list[RepoPin]:
    if raw is None:
        return []
    if isinstance(raw, list):  # before Spack 1.0: a list of paths
        for i, item in enumerate(raw):
            if not isinstance(item, str) or not item.strip():
                raise _bad(path, f"$.spack.repos[{i}]", "must be a path")
        return [RepoPin(None, path=p) for p in raw]
    if not isinstance(raw, dict):
        raise _bad(path, "$.spack.repos", "must be a list of paths or a mapping name -> repo")
    out = []
    for name, value in raw.items():
        where = f"$.spack.repos.{name}"
        if not isinstance(name, str) or not name:
            raise _bad(path, f"$.spack.repos.{name!r:.40}", "a repository's name must be a string")
        if isinstance(value, str):
            if not value.strip():
                raise _bad(path, where, "an empty path")
            out.append(RepoPin(name, path=value))
            continue
        if not isinstance(value, dict) or not isinstance(value.get("git"), str):
            raise _bad(path, where, "must be a path or a mapping with `git`")
        extra = sorted(set(map(str, value)) - {"git", "destination", *REPO_GIT_REFS})
        if extra:
            raise _bad(path, f"{where}.{extra[0]}", "not a key of a git repository entry")
        refs = [k for k in REPO_GIT_REFS if k in value]
        if len(refs) > 1:
            raise _bad(path, where, f"names {' and '.join(refs)}: give one of branch/commit/tag")
        kind = refs[0] if refs else None
        out.append(
            RepoPin(
                str(name), git=value["git"], ref_kind=kind, ref=str(value[kind]) if kind else None
            )
        )
    return out


# --- spec strings --------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<dep>\^)
  | (?P<kv>[\w.-]+==?(?:"[^"]*"|'[^']*'|[^\s^%]+))
  | (?P<compiler>%%?[\w.-]+(?:@[^\s+~^%/]+)?)
  | (?P<version>@[^\s+~^%/]+)
  | (?P<flag>(?:\+\+|~~|\+|~)[\w.-]+)
  | (?P<hash>/[a-z0-9]+)
  | (?P<name>[\w.-]+)
  | (?P<space>\s+)
    """,
    re.VERBOSE,
)


def canonical_spec(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """A spec string as (node, its attributes) for each node, independent of the order and
    spacing Spack may rewrite it in (`cuda@12 %gcc@11` and `cuda@12%gcc@11` are equal; so are
    `+a+b` and `+b +a`). Not a full spec parser: enough to compare a manifest with its lock."""
    nodes: list[tuple[str, set[str]]] = [("", set())]
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            nodes[-1][1].add(text[pos:])
            break
        pos = m.end()
        kind, value = m.lastgroup, m.group()
        if kind == "space":
            continue
        if kind == "dep":
            nodes.append(("", set()))
        elif kind == "name" and not nodes[-1][0]:
            nodes[-1] = (value, nodes[-1][1])
        else:
            nodes[-1][1].add(value)
    root, deps = nodes[0], sorted(nodes[1:], key=lambda n: (n[0], sorted(n[1])))
    return tuple((n, frozenset(a)) for n, a in [root, *deps])


@dataclass(frozen=True)
class Consistency:
    """Whether a lock's roots are the manifest's specs."""

    checked: bool
    only_in_manifest: tuple[str, ...] = ()
    only_in_lock: tuple[str, ...] = ()
    note: str = ""

    @property
    def consistent(self) -> bool:
        return self.checked and not self.only_in_manifest and not self.only_in_lock


def check_consistency(manifest: SpackManifest, lock_roots: list[str]) -> Consistency:
    """Compare the manifest's specs with a lock's root specs (order and spacing aside)."""
    if manifest.uses_definitions:
        return Consistency(
            False,
            note="the manifest's specs come from `definitions` or matrices, which this check "
            "does not expand; `spack -e DIR concretize` compares them",
        )
    want = {canonical_spec(s): s for s in manifest.specs}
    have = {canonical_spec(s): s for s in lock_roots}
    return Consistency(
        True,
        only_in_manifest=tuple(sorted(want[k] for k in set(want) - set(have))),
        only_in_lock=tuple(sorted(have[k] for k in set(have) - set(want))),
    )
