"""spack.yaml: structure checked as Spack's schema has it; a lock's roots are its specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.formats.spack.lockfile import read_spack_lock
from repro.formats.spack.manifest import canonical_spec, check_consistency, read_manifest

PAIRS = [
    ("poorjit.spack.yaml", "poorjit.v4.spack.lock"),
    ("open-r1.spack.yaml", "open-r1.v5.spack.lock"),  # Spack rewrote the order of the specs
    ("all-pythons.spack.yaml", "all-pythons.v6.spack.lock"),
    ("viperml-debian-11.spack.yaml", "viperml-debian-11.v6.spack.lock"),
    ("spack-develop-env.spack.yaml", "spack-develop-env.v2.spack.lock"),
]


@pytest.mark.parametrize(("manifest", "lock"), PAIRS)
def test_fixture_locks_are_consistent_with_their_manifests(
    shared_fixtures: Path, manifest: str, lock: str
) -> None:
    d = shared_fixtures / "locks" / "spack"
    result = check_consistency(
        read_manifest(d / manifest), [r.spec for r in read_spack_lock(d / lock).roots]
    )
    assert result.consistent, (result.only_in_manifest, result.only_in_lock)


def test_a_manifest_edited_after_its_lock_is_named(shared_fixtures: Path) -> None:
    # SOURCES.md: wf-reg-test's spack.yaml was edited after its lock was last written
    d = shared_fixtures / "locks" / "spack"
    result = check_consistency(
        read_manifest(d / "wf-reg-test.spack.yaml"),
        [r.spec for r in read_spack_lock(d / "wf-reg-test.v4.spack.lock").roots],
    )
    assert not result.consistent
    assert result.only_in_manifest == ("openjdk",)
    assert result.only_in_lock == ("py-domonic", "py-matplotlib")


def test_every_fixture_manifest_passes_the_structure_check(shared_fixtures: Path) -> None:
    for path in sorted((shared_fixtures / "locks" / "spack").glob("*.spack.yaml")):
        assert read_manifest(path).specs, path


def test_spec_strings_compare_regardless_of_order_and_spacing() -> None:
    assert canonical_spec("cuda@12.6.2 %gcc@11.4.1") == canonical_spec("cuda@12.6.2%gcc@11.4.1")
    assert canonical_spec("nccl@2.22.3-1 +cuda cuda_arch=80 %gcc@11.4.1") == canonical_spec(
        "nccl@2.22.3-1%gcc@11.4.1+cuda cuda_arch=80"
    )
    assert canonical_spec("snakemake@7.18.2+s3+http") == canonical_spec("snakemake@7.18.2+http+s3")
    assert canonical_spec("a ^b@1 ^c") == canonical_spec("a ^c ^b@1")
    assert canonical_spec("apache-tvm+llvm") != canonical_spec("apache-tvm~llvm")
    assert canonical_spec("py-x ^python@3:") != canonical_spec("py-x ^python@3.11")


def test_repos_list_and_v1_map_with_a_pinned_commit(tmp_path: Path) -> None:
    path = tmp_path / "spack.yaml"
    path.write_text(
        "spack:\n  specs: [apache-tvm+llvm]\n  repos:\n"
        "    repro: ../../spack-repo/spack_repo/repro\n"
        "    builtin:\n      git: https://github.com/spack/spack-packages.git\n"
        "      commit: fcf3a6d065b3b958a88e1c2f84a18cb2cf85ae36\n"
    )
    m = read_manifest(path)
    assert [r.name for r in m.repos] == ["repro", "builtin"]
    assert all(r.pinned for r in m.repos)
    path.write_text("spack:\n  specs: [zlib]\n  repos: [/opt/repo]\n")
    assert read_manifest(path).repos[0].path == "/opt/repo"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("spack: [1]", "$: a Spack environment file"),
        ("other: {}", "$: a Spack environment file"),
        ("spack:\n  specz: [a]\n", "$.spack.specz"),
        ("spack:\n  specs: a\n", "$.spack.specs: must be a list"),
        ("spack:\n  specs: [1]\n", "$.spack.specs[0]"),
        ("spack:\n  concretizer: {unify: maybe}\n", "$.spack.concretizer.unify"),
        ("spack:\n  repos: {b: {git: x, branch: m, commit: c}}\n", "$.spack.repos.b"),
        ("spack:\n  repos: 3\n", "$.spack.repos"),
        ("spack:\n  packages: [a]\n", "$.spack.packages"),
        ("spack:\n  specs: [a\n", "not YAML"),
        ("spack:\n  specs: [a]\n  specs: [b]\n", "appears twice"),
        ("spack:\n  concretizer: {unify: 1}\n", "$.spack.concretizer.unify"),
        ("spack:\n  specs: ['']\n", "$.spack.specs[0]"),
        ("spack:\n  repos: {x: ''}\n", "$.spack.repos.x: an empty path"),
        ("spack:\n  repos: {b: {git: x, commit: c, evil: 1}}\n", "$.spack.repos.b.evil"),
        ("spack:\n  1: a\n  foo: b\n", "must be a string"),
    ],
)
def test_a_malformed_manifest_names_file_and_key(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "spack.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        read_manifest(path)
    assert str(path) in err.value.message
    assert where in err.value.message


def test_a_git_repo_on_a_branch_is_not_pinned(tmp_path: Path) -> None:
    path = tmp_path / "spack.yaml"
    path.write_text("spack:\n  repos:\n    builtin: {git: https://x/y.git, branch: develop}\n")
    assert not read_manifest(path).repos[0].pinned


def test_specs_from_definitions_are_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "spack.yaml"
    path.write_text("spack:\n  definitions: [{pkgs: [a]}]\n  specs: [$pkgs]\n")
    result = check_consistency(read_manifest(path), ["a"])
    assert not result.checked
    assert "definitions" in result.note


def test_yaml_merge_keys_and_the_pre_018_concretization_section(tmp_path: Path) -> None:
    path = tmp_path / "spack.yaml"
    path.write_text(
        "spack:\n  specs: [zlib]\n  concretization: separately\n  packages:\n"
        "    all: &all\n      target: [x86_64_v3]\n    zlib:\n      <<: *all\n"
        "      target: [zen4]\n"
    )
    manifest = read_manifest(path)
    assert manifest.specs == ("zlib",)
    assert manifest.unify is False
