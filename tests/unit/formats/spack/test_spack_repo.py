"""spack-repo/ and lockfiles/*/spack.yaml, checked without Spack: every recipe parses, pins its
versions by sha256 and depends only on packages that exist; every environment has the
structure Spack's schema gives it and pins its repositories."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from repro.formats.spack.manifest import canonical_spec, read_manifest

ROOT = Path(__file__).resolve().parents[4]
REPO = ROOT / "spack-repo" / "spack_repo" / "repro"
BUILTIN = ROOT / "tests" / "data" / "spack" / "builtin-packages.txt"
ENVIRONMENTS = sorted((ROOT / "lockfiles").glob("*/spack.yaml"))
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _builtin() -> set[str]:
    lines = BUILTIN.read_text().splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def _recipes() -> dict[str, Path]:
    """Package name (dashes) -> recipe, as Spack v1 maps `packages/<name_with_underscores>/`."""
    return {p.parent.name.replace("_", "-"): p for p in sorted(REPO.glob("packages/*/package.py"))}


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]


def _package_name(spec: str) -> str:
    match = re.match(r"[a-z0-9][a-z0-9-]*", spec)
    assert match, spec
    return match.group()


def test_the_repository_is_a_spack_v1_repository_named_repro() -> None:
    data = yaml.safe_load((REPO / "repo.yaml").read_text())
    assert data["repo"]["namespace"] == "repro"
    assert str(data["repo"]["api"]).startswith("v2.")
    assert {"py-mlcommons-loadgen", "apache-tvm", "py-apache-tvm-ffi"} <= set(_recipes())


@pytest.mark.parametrize("name", sorted(_recipes()))
def test_every_recipe_parses_and_pins_its_versions_by_sha256(name: str) -> None:
    tree = ast.parse(_recipes()[name].read_text())
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert len(classes) == 1
    # Spack's class name is the package name in CamelCase
    assert classes[0].name == "".join(p.capitalize() for p in name.split("-"))
    versions = _calls(tree, "version")
    assert versions, f"{name}: no version()"
    for call in versions:
        sha = {k.arg: k.value for k in call.keywords}.get("sha256")
        assert isinstance(sha, ast.Constant), f"{name}: a version without sha256"
        assert SHA256.match(str(sha.value)), f"{name}: {sha.value!r} is not a sha256"


@pytest.mark.parametrize("name", sorted(_recipes()))
def test_every_dependency_exists_in_builtin_or_here(name: str) -> None:
    known = _builtin() | set(_recipes())
    tree = ast.parse(_recipes()[name].read_text())
    for call in _calls(tree, "depends_on"):
        first = call.args[0]
        assert isinstance(first, ast.Constant), f"{name}: a computed dependency"
        assert _package_name(str(first.value)) in known, f"{name}: depends on {first.value}"


def test_tvm_variants_depend_on_llvm_and_onednn() -> None:
    tree = ast.parse(_recipes()["apache-tvm"].read_text())
    variants = {str(c.args[0].value) for c in _calls(tree, "variant")}  # type: ignore[attr-defined]
    assert {"llvm", "dnnl"} <= variants
    conditional = {
        str(c.args[0].value): str({k.arg: k.value for k in c.keywords}["when"].value)  # type: ignore[attr-defined]
        for c in _calls(tree, "depends_on")
        if any(k.arg == "when" for k in c.keywords)
    }
    assert conditional["llvm@15:"] == "+llvm"
    assert conditional["onednn"] == "+dnnl"


#: the structure of spack.yaml for the keys these environments use, as Spack's environment
#: schema has it (https://spack.readthedocs.io/en/latest/environments.html; `repos` as a map
#: of name -> path | {git, commit}: https://spack.readthedocs.io/en/latest/repositories.html;
#: `packages` as in packages.yaml: externals, buildable, target)
EXPECTED_KEYS = {"specs": list, "concretizer": dict, "view": bool, "repos": dict}
OPTIONAL_KEYS = {"packages": dict}
FROM_SOURCE = ROOT / "lockfiles" / "tvm-resnet50" / "spack-from-source.yaml"


def _spec_pins(path: Path) -> dict:
    spec = json.loads((ROOT / "specs" / f"{path.parent.name}.json").read_text())
    return spec["environment"]["spack"]


@pytest.mark.parametrize(
    "path", [*ENVIRONMENTS, FROM_SOURCE], ids=lambda p: p.parent.name + "/" + p.name
)
def test_every_environment_has_spacks_structure_and_pins_its_repos(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    assert set(raw) == {"spack"}
    env = raw["spack"]
    assert set(EXPECTED_KEYS) <= set(env) <= set(EXPECTED_KEYS) | set(OPTIONAL_KEYS)
    for key, kind in {**EXPECTED_KEYS, **OPTIONAL_KEYS}.items():
        assert key not in env or isinstance(env[key], kind), key
    assert env["concretizer"] == {"unify": True}
    manifest = read_manifest(path)  # Spack's rules for every section, as repro checks them
    repro_repo, builtin = manifest.repo("repro"), manifest.repo("builtin")
    assert repro_repo is not None
    assert next(iter(env["repos"])) == "repro", "spack-repo/ must come before builtin"
    assert (path.parent / str(repro_repo.path)).resolve() == REPO
    if builtin is not None:  # named: pinned by commit
        assert builtin.pinned
        assert builtin.ref_kind == "commit"
    else:  # Spack's own: the spec pins the commit it was concretized with
        assert re.fullmatch(r"[0-9a-f]{40}", _spec_pins(path)["builtin_commit"])
    known = _builtin() | set(_recipes())
    for spec in manifest.specs:
        assert _package_name(spec) in known, spec
        assert canonical_spec(spec)  # parses


def test_the_from_source_environment_builds_tvm_with_llvm_and_dnnl() -> None:
    manifest = read_manifest(FROM_SOURCE)
    names = {_package_name(s): canonical_spec(s)[0][1] for s in manifest.specs}
    assert {"+llvm", "+dnnl"} <= names["apache-tvm"]
    assert {"llvm", "onednn", "python", "py-mlcommons-loadgen"} <= set(names)


def test_the_captured_tvm_environment_takes_llvm_and_onednn_from_the_system() -> None:
    env = yaml.safe_load((ROOT / "lockfiles" / "tvm-resnet50" / "spack.yaml").read_text())["spack"]
    assert {"py-mlcommons-loadgen@6.0.17", "llvm", "onednn"} <= set(env["specs"])
    for name in ("llvm", "onednn", "python"):
        conf = env["packages"][name]
        assert conf["buildable"] is False, name
        assert conf["externals"][0]["prefix"].startswith("/usr"), name
    pins = _spec_pins(ROOT / "lockfiles" / "tvm-resnet50" / "spack.yaml")
    assert pins["packages"]["llvm"]["external"]
    assert pins["packages"]["onednn"]["external"]
    assert not pins["packages"]["py-mlcommons-loadgen"]["external"]  # Spack builds it


def test_every_reference_spec_has_an_environment() -> None:
    """Each spec pins a Spack environment of lockfiles/ (ort-resnet-small shares
    ort-resnet50's stack), and each environment there is some spec's."""
    named = set()
    for path in (ROOT / "specs").glob("*.json"):
        spack = json.loads(path.read_text())["environment"].get("spack")
        assert spack is not None, path
        named.add((path.parent / spack["spack_yaml"]["path"]).resolve().parent.name)
    assert named == {p.parent.name for p in ENVIRONMENTS}
