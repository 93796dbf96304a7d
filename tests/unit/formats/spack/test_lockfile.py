"""spack.lock versions 1-8 read into one summary shape: the real locks of ../shared/fixtures,
and small hand-written locks for the versions no fixture has (v1, v3, v7, v8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.backends.registry import spack_key_packages
from repro.errors import SpecError
from repro.formats.spack.lockfile import read_spack_lock

KEYS = spack_key_packages()

SUMMARY_KEYS = {
    "lockfile_version",
    "specfile_version",
    "spack",
    "roots",
    "packages",
    "included_environments",
    "key_packages",
}
FIXTURE_LOCKS = {
    # file: (version, number of concrete specs, root names in order (first 3))
    "spack-develop-env.v2.spack.lock": (2, 68, ["neovim", "node-js", "yarn"]),
    "poorjit.v4.spack.lock": (4, 7, ["boost", "zlib", "fmt"]),
    "wf-reg-test.v4.spack.lock": (4, 244, ["git", "tar", "xz"]),
    "open-r1.v5.spack.lock": (5, 48, ["cuda", "nccl"]),
    "all-pythons.v6.spack.lock": (6, 81, ["python", "python", "python"]),
    "viperml-debian-11.v6.spack.lock": (6, 126, ["netcdf-c", "libyaml", "hdf5"]),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_LOCKS))
def test_every_fixture_lock_reads_into_the_same_summary_shape(
    shared_fixtures: Path, name: str
) -> None:
    version, count, roots = FIXTURE_LOCKS[name]
    lock = read_spack_lock(shared_fixtures / "locks" / "spack" / name)
    summary = lock.summary(KEYS)
    assert set(summary) == SUMMARY_KEYS
    assert summary["lockfile_version"] == version
    assert summary["packages"] == count
    assert [r["name"] for r in summary["roots"]][:3] == roots
    for node in lock.nodes.values():
        assert node.name
        assert node.version
        assert len(node.hash) == 32
        assert node.target is not None
        assert node.platform == "linux"
        assert node.compiler is None or "@" in node.compiler
    json.dumps(summary)  # plain data


def test_v2_wrapped_nodes_and_dict_dependencies(shared_fixtures: Path) -> None:
    lock = read_spack_lock(shared_fixtures / "locks/spack/spack-develop-env.v2.spack.lock")
    numpy = lock.key_packages(KEYS)["py-numpy"]
    assert numpy["version"] == "1.18.3"
    assert numpy["compiler"] == "gcc@7.3.0"
    assert numpy["variants"] == "+blas+lapack"
    assert numpy["target"] == "x86_64"
    diffutils = next(n for n in lock.nodes.values() if n.name == "diffutils")
    assert [(d[0], d[2]) for d in diffutils.dependencies] == [("libiconv", ("build", "link"))]


def test_v5_compiler_attribute_and_target_dict(shared_fixtures: Path) -> None:
    lock = read_spack_lock(shared_fixtures / "locks/spack/open-r1.v5.spack.lock")
    assert (lock.spack_version, lock.spack_commit[:8]) == ("0.23.0.dev0", "f809b56f")
    cuda = lock.root_nodes()[0]
    assert (cuda.name, cuda.version, cuda.compiler, cuda.target) == (
        "cuda",
        "12.6.2",
        "gcc@11.4.1",
        "icelake",
    )
    nccl = lock.root_nodes()[1]
    assert nccl.variants["cuda"] is True
    assert nccl.variants["cuda_arch"] == ["80"]


def test_v6_compiler_is_the_build_dependency_providing_c(shared_fixtures: Path) -> None:
    lock = read_spack_lock(shared_fixtures / "locks/spack/viperml-debian-11.v6.spack.lock")
    python = lock.key_packages(KEYS)["python"]
    assert python["version"] == "3.13.2"
    assert python["compiler"] == "gcc@10.2.1"  # no `compiler` attribute in v6
    assert "+ssl" in python["variants"]


def test_a_package_concretized_several_times_is_keyed_by_version(shared_fixtures: Path) -> None:
    lock = read_spack_lock(shared_fixtures / "locks/spack/all-pythons.v6.spack.lock")
    pythons = sorted(k for k in lock.key_packages(KEYS) if k.startswith("python@"))
    assert len(pythons) == 8
    assert "python@3.11.11" in pythons


def _node(name: str, version: str, h: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "arch": {"platform": "linux", "platform_os": "debian12", "target": "zen4"},
        "namespace": "repro",
        "parameters": {"llvm": True, "dnnl": True, "cflags": [], "build_system": "python_pip"},
        "hash": h,
        **extra,
    }


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "spack.lock"
    path.write_text(json.dumps(data))
    return path


def test_v1_wrapped_nodes(tmp_path: Path) -> None:
    node = _node("apache-tvm", "0.25.0", "a" * 32, compiler={"name": "gcc", "version": "12.2.0"})
    del node["name"]
    path = _write(
        tmp_path,
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": 1},
            "roots": [{"hash": "a" * 32, "spec": "apache-tvm"}],
            "concrete_specs": {"a" * 32: {"apache-tvm": node}},
        },
    )
    tvm = read_spack_lock(path).key_packages(KEYS)["apache-tvm"]
    assert tvm["compiler"] == "gcc@12.2.0"
    assert tvm["variants"] == "+dnnl+llvm build_system=python_pip"


def test_v3_build_hash_keys_and_list_dependencies(tmp_path: Path) -> None:
    tvm = _node(
        "apache-tvm",
        "0.25.0",
        "d" * 32,
        dependencies=[{"name": "llvm", "build_hash": "l" * 32, "type": ["build", "link"]}],
    )
    llvm = _node("llvm", "19.1.7", "e" * 32)
    path = _write(
        tmp_path,
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": 3},
            "roots": [{"hash": "b" * 32, "spec": "apache-tvm+llvm"}],
            "concrete_specs": {"b" * 32: tvm, "l" * 32: llvm},
        },
    )
    lock = read_spack_lock(path)
    assert lock.root_nodes()[0].dependencies == (("llvm", "l" * 32, ("build", "link")),)
    assert lock.nodes["b" * 32].hash == "d" * 32  # the DAG hash, not the key


@pytest.mark.parametrize("version", [7, 8])
def test_v7_and_v8_groups_and_compiler_dependencies(tmp_path: Path, version: int) -> None:
    gcc = _node("gcc", "13.2.0", "g" * 32, external={"path": "/usr", "module": None})
    tvm = _node(
        "apache-tvm",
        "0.25.0",
        "t" * 32,
        dependencies=[
            {
                "name": "gcc",
                "hash": "g" * 32,
                "parameters": {"deptypes": ["build"], "virtuals": ["c", "cxx"]},
            }
        ],
    )
    path = _write(
        tmp_path,
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": version},
            "spack": {"version": "1.2.0", "type": "git", "commit": "c" * 40},
            "roots": [{"hash": "t" * 32, "spec": "apache-tvm +llvm", "group": "default"}],
            "concrete_specs": {"t" * 32: tvm, "g" * 32: gcc},
        },
    )
    lock = read_spack_lock(path)
    assert lock.roots[0].group == "default"
    assert lock.key_packages(KEYS)["apache-tvm"]["compiler"] == "gcc@13.2.0"
    assert lock.nodes["g" * 32].pin()["external"] is True
    assert "/usr" not in json.dumps(lock.summary(KEYS))  # an external's path is not kept


def test_included_environments_count_and_add_their_specs(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": 5},
            "roots": [{"hash": "t" * 32, "spec": "apache-tvm"}],
            "concrete_specs": {"t" * 32: _node("apache-tvm", "0.25.0", "t" * 32)},
            "include_concrete": {
                "/home/someone/envs/base": {
                    "roots": [],
                    "concrete_specs": {"l" * 32: _node("llvm", "19.1.7", "l" * 32)},
                }
            },
        },
    )
    summary = read_spack_lock(path).summary(KEYS)
    assert summary["included_environments"] == 1
    assert summary["packages"] == 2
    assert "/home/someone" not in json.dumps(summary)


def test_deep_nesting_and_huge_numbers_are_bad_input_not_crashes(tmp_path: Path) -> None:
    deep = tmp_path / "deep.lock"
    deep.write_text("[" * 100_000)
    with pytest.raises(SpecError, match="nested too deeply"):
        read_spack_lock(deep)
    big = tmp_path / "big.lock"
    big.write_text('{"_meta": {"lockfile-version": ' + "9" * 5000 + "}}")
    with pytest.raises(SpecError, match="not valid JSON"):
        read_spack_lock(big)


def test_only_a_regular_file_is_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "spack.lock"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        read_spack_lock(fifo)
    with pytest.raises(SpecError, match="no such file"):
        read_spack_lock(tmp_path / "missing.lock")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "invalid JSON at line 1"),
        ('{"_meta": NaN}', "not valid JSON"),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": true}}',
            "must be an integer",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, "spack": '
            '{"commit": 12345}, "concrete_specs": {}, "roots": []}',
            "$.spack.commit: must be a non-empty string",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"name": "a", "version": true, "hash": "x"}}, "roots": []}',
            "$.concrete_specs.x.version: must be a non-empty string",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"name": "a", "version": "1", "hash": "y"}}, "roots": []}',
            "$.concrete_specs.x.hash",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"name": "a", "version": "1", "dependencies": 5}}, '
            '"roots": []}',
            "$.concrete_specs.x.dependencies",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"name": "a", "version": "1", "parameters": {"v": {}}}}, '
            '"roots": []}',
            "$.concrete_specs.x.parameters.v",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"name": "a", "version": "1"}}, '
            '"roots": [{"hash": "x", "spec": "a"}, {"hash": "x", "spec": "a"}]}',
            "is a root twice",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 5}, '
            '"concrete_specs": {}, "roots": [], "include_concrete": {"e": {"concrete_specs": '
            '{"k": 3}}}}',
            "$.include_concrete.e.concrete_specs.k",
        ),
        ('{"roots": []}', "$._meta: missing"),
        ('{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 9}}', "knows 1-8"),
        ('{"_meta": {"file-type": "x", "lockfile-version": 4}}', "$._meta.file-type"),
        ('{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}}', "$.concrete_specs"),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {}, "roots": [{"hash": "x", "spec": "a"}]}',
            "$.roots[0].hash",
        ),
        (
            '{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}, '
            '"concrete_specs": {"x": {"version": "1"}}, "roots": []}',
            "without a name",
        ),
    ],
)
def test_a_damaged_lock_is_a_spec_error_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "spack.lock"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        read_spack_lock(path)
    assert str(path) in err.value.message
    assert message in err.value.message


def _v7(tmp_path: Path, *nodes: dict[str, Any]) -> Path:
    return _write(
        tmp_path,
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": 7},
            "roots": [{"hash": nodes[0]["hash"], "spec": nodes[0]["name"]}],
            "concrete_specs": {n["hash"]: n for n in nodes},
        },
    )


def _compiler_dep(node: dict[str, Any], virtuals: list[str]) -> dict[str, Any]:
    return {
        "name": node["name"],
        "hash": node["hash"],
        "parameters": {"deptypes": ["build"], "virtuals": virtuals},
    }


def test_a_mixed_toolchain_compiles_with_its_c_compiler(tmp_path: Path) -> None:
    """gcc gives only Fortran, llvm c and c++: the package is compiled by llvm."""
    gcc, llvm = _node("gcc", "10.2.1", "g" * 32), _node("llvm", "19.1.7", "l" * 32)
    numpy = _node(
        "py-numpy",
        "2.1.0",
        "n" * 32,
        dependencies=[_compiler_dep(gcc, ["fortran"]), _compiler_dep(llvm, ["c", "cxx"])],
    )
    lock = read_spack_lock(_v7(tmp_path, numpy, gcc, llvm))
    assert lock.nodes["n" * 32].compiler == "llvm@19.1.7"


def test_a_develop_spec_keeps_no_path(tmp_path: Path) -> None:
    numpy = _node("py-numpy", "2.1.0", "n" * 32)
    numpy["parameters"]["dev_path"] = "/home/alice/src/numpy"
    lock = read_spack_lock(_v7(tmp_path, numpy))
    pin = lock.nodes["n" * 32].pin()
    assert "alice" not in json.dumps(pin)
    assert "dev_path=<local checkout>" in pin["variants"]


def test_a_package_turned_external_is_drift(tmp_path: Path) -> None:
    from repro.compare.envdiff import diff_paths

    a = _v7(tmp_path / "a", _node("python", "3.11.4", "p" * 32))
    b = _v7(tmp_path / "b", _node("python", "3.11.4", "p" * 32, external={"path": "/usr"}))
    changes = diff_paths(a, b)
    assert [(c.key, c.a, c.b) for c in changes] == [("python.external", False, True)]


def test_a_dependency_outside_the_lock_or_a_nameless_target_is_refused(tmp_path: Path) -> None:
    gone = {"name": "zlib", "hash": "z" * 32, "parameters": {"deptypes": ["link"]}}
    numpy = _node("py-numpy", "2.1.0", "n" * 32, dependencies=[gone])
    with pytest.raises(SpecError, match=r"zlib /zzzzzzz is not in \$\.concrete_specs"):
        read_spack_lock(_v7(tmp_path / "a", numpy))
    odd = _node("py-numpy", "2.1.0", "n" * 32)
    odd["arch"]["target"] = {"vendor": "GenuineIntel"}
    with pytest.raises(SpecError, match="without the target's name"):
        read_spack_lock(_v7(tmp_path / "b", odd))


def test_a_second_concretization_is_one_package_more_not_the_first_gone(tmp_path: Path) -> None:
    from repro.compare.envdiff import diff_paths

    one = _node("python", "3.10.8", "p" * 32)
    two = _node("python", "3.11.4", "q" * 32)
    a = _v7(tmp_path / "a", one)
    b = _write(
        tmp_path / "b",
        {
            "_meta": {"file-type": "spack-lockfile", "lockfile-version": 7},
            "roots": [
                {"hash": "p" * 32, "spec": "python@3.10"},
                {"hash": "q" * 32, "spec": "python@3.11"},
            ],
            "concrete_specs": {"p" * 32: one, "q" * 32: two},
        },
    )
    changes = diff_paths(a, b)
    assert [(c.key, c.a, c.b) for c in changes] == [("python@3.11.4.present", False, True)]
