"""Against a real Spack (REPRO_TEST_SPACK=1; `.ci/run` unpacks ../shared/tools/spack/): capture
writes and concretizes the spec's environment, `repro spack mirror` fetches what its lock
needs from PyPI, a replay installs it from that mirror and runs LoadGen inside it, and what
is wrong (a manifest that does not concretize, a lock of a newer Spack, a mirror that lacks a
source) is said. One capture and one install serve the module: Spack takes minutes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import cli
from repro.environments.spack.tool import find_spack
from repro.runs.store import load_run

pytestmark = pytest.mark.spack


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ort-digits (Offline, performance) captured with `--env-manager spack`, its mirror
    made, and one replay inside the installed environment."""
    if find_spack() is None:
        pytest.skip("no Spack: `spack` is not on PATH and SPACK_ROOT is not set")
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("spack")
    (tmp / "artifacts").mkdir()
    shutil.copyfile(root / "artifacts/digits-mlp.onnx", tmp / "artifacts/digits-mlp.onnx")
    raw: dict[str, Any] = json.loads((root / "specs/ort-digits.json").read_text())
    for key in ("id", "original", "hardware"):
        raw.pop(key)
    raw["artifacts"]["model"]["path"] = "artifacts/digits-mlp.onnx"
    raw["environment"] = {"manager": "spack"}
    raw["workload"]["scenarios"] = [
        s for s in raw["workload"]["scenarios"] if s["scenario"] == "Offline"
    ]
    raw["workload"]["modes"] = ["performance"]
    (tmp / "partial.json").write_text(json.dumps(raw))
    code, _, err = _cli(
        "capture",
        "--from",
        str(tmp / "partial.json"),
        "--env-manager",
        "spack",
        "--no-run",
        "--specs-dir",
        str(tmp / "specs"),
        "--lockfiles-dir",
        str(tmp / "lockfiles"),
        "--results-dir",
        str(tmp / "results"),
        "--cache-dir",
        str(tmp / "cache"),
    )
    assert code == 0, err
    spec = tmp / "specs" / "ort-digits.json"
    code, _, err = _cli("spack", "mirror", str(spec), "-o", str(tmp / "mirror"))
    assert code == 0, err
    return {"tmp": tmp, "spec": spec, "mirror": tmp / "mirror"}


def _replay(
    project: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    cache: Path,
    run_id: str,
    spec: Path | None = None,
) -> tuple[int, str, str]:
    monkeypatch.setenv("REPRO_SPACK_MIRROR", str(project["mirror"]))
    return _cli(
        "replay",
        str(spec or project["spec"]),
        "--env",
        "spack",
        "--min-duration-ms",
        "300",
        "--results-dir",
        str(project["tmp"] / "results"),
        "--cache-dir",
        str(cache),
        "--run-id",
        run_id,
    )


def test_capture_writes_the_environment_and_pins_the_lock_spack_made(
    project: dict[str, Path],
) -> None:
    lock_dir = project["tmp"] / "lockfiles" / "ort-digits"
    manifest = yaml.safe_load((lock_dir / "spack.yaml").read_text())["spack"]
    assert manifest["specs"] == ["py-mlcommons-loadgen@6.0.17"]
    assert manifest["packages"]["python"]["externals"][0]["prefix"] == "/usr"
    lock = json.loads((lock_dir / "spack.lock").read_text())
    assert lock["_meta"]["file-type"] == "spack-lockfile"
    assert lock["_meta"]["lockfile-version"] >= 6
    names = {n["name"] for n in lock["concrete_specs"].values()}
    assert {"py-mlcommons-loadgen", "py-pybind11", "python", "compiler-wrapper"} <= names
    pins = json.loads(project["spec"].read_text())["environment"]["spack"]
    assert pins["spack_lock"]["path"].endswith("lockfiles/ort-digits/spack.lock")
    assert pins["roots"][0]["hash"] == lock["roots"][0]["hash"]
    assert pins["spack_version"]


def test_the_mirror_holds_each_source_with_the_recipes_sha256(project: dict[str, Path]) -> None:
    import hashlib

    index = json.loads((project["mirror"] / "mirror.json").read_text())
    fetched = {s["name"] for s in index["sources"]}
    assert {"py-mlcommons-loadgen", "py-pybind11", "py-pip", "py-setuptools"} <= fetched
    for s in index["sources"]:
        path = project["mirror"] / s["name"]
        (file,) = path.iterdir()
        assert hashlib.sha256(file.read_bytes()).hexdigest() == s["sha256"], file
    assert {s["name"] for s in index["from_spack"]} == {"compiler-wrapper"}


def test_a_replay_installs_from_the_mirror_and_runs_loadgen_inside_the_environment(
    project: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _replay(project, monkeypatch, project["tmp"] / "cache", "in-spack")
    assert code in (0, 3), out + err  # 3 only for LoadGen's own verdict on a loaded machine
    record = load_run(project["tmp"] / "results" / "ort-digits" / "in-spack")
    assert record.tests[0].status in ("valid", "invalid")
    env = record.environment
    assert env["manager"] == "spack"
    assert ".spack-env/view/bin/python" in env["python"]
    lock = json.loads((project["tmp"] / "lockfiles/ort-digits/spack.lock").read_text())
    ran = {s["name"]: s["hash"] for s in env["concrete_specs"]}
    assert ran["py-mlcommons-loadgen"] == lock["roots"][0]["hash"]
    assert env["spack_version_here"]
    assert env["mirror"] == str(project["mirror"])
    assert "install.log" in (err + out) or (Path(env["spack_env"]) / "install.log").is_file()


def test_a_lock_of_a_newer_spack_is_refused_naming_both(
    project: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = _copy_project(project, tmp_path)
    lock = tmp_path / "lockfiles/ort-digits/spack.lock"
    doc = json.loads(lock.read_text())
    doc["spack"]["version"] = "9.9.0"
    lock.write_text(json.dumps(doc))
    _repin(spec, lock, "spack_lock")
    code, out, err = _replay(project, monkeypatch, tmp_path / "cache", "newer", spec)
    assert code == 3, out + err
    assert "written by Spack 9.9.0, newer than the Spack here" in err


def test_a_mirror_without_a_source_names_it(
    project: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(project["mirror"], mirror)
    shutil.rmtree(mirror / "py-pybind11")
    monkeypatch.setenv("REPRO_SPACK_MIRROR", str(mirror))
    spec = _copy_project(project, tmp_path)
    code, out, err = _cli(
        "replay",
        str(spec),
        "--env",
        "spack",
        "--min-duration-ms",
        "300",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert code == 3, out + err
    assert "lacks py-pybind11@2.11.1" in err


def test_a_manifest_that_does_not_concretize_is_bad_input(
    project: dict[str, Path], tmp_path: Path
) -> None:
    spec = _copy_project(project, tmp_path)
    manifest = tmp_path / "lockfiles/ort-digits/spack.yaml"
    data = yaml.safe_load(manifest.read_text())
    data["spack"]["specs"].append("py-no-such-package-repro@1")
    manifest.write_text(yaml.safe_dump(data))
    code, out, err = _cli("spack", "pin", str(spec), "--concretize")
    assert code == 2, out + err
    assert "does not concretize" in err
    assert "py-no-such-package-repro" in err


def test_env_diff_of_two_real_locks_names_the_changed_variant_first(
    project: dict[str, Path], tmp_path: Path
) -> None:
    lock = project["tmp"] / "lockfiles/ort-digits/spack.lock"
    doc = json.loads(lock.read_text())
    root = doc["roots"][0]["hash"]
    node = doc["concrete_specs"][root]
    node["parameters"]["build_system"] = "generic"  # one variant of the root changed
    other = tmp_path / "spack.lock"
    other.write_text(json.dumps(doc))
    code, out, err = _cli("env", "diff", str(lock), str(other))
    assert code == 0, out + err
    changes = [line for line in out.splitlines() if "py-mlcommons-loadgen" in line]
    assert changes, out
    assert "build_system=generic" in out
    first = next(line for line in out.splitlines() if "->" in line)
    assert "py-mlcommons-loadgen" in first, out


def _copy_project(project: dict[str, Path], tmp: Path) -> Path:
    for name in ("specs", "lockfiles", "artifacts"):
        shutil.copytree(project["tmp"] / name, tmp / name)
    return tmp / "specs" / "ort-digits.json"


def _repin(spec: Path, file: Path, key: str) -> None:
    import hashlib

    doc = json.loads(spec.read_text())
    doc["environment"]["spack"][key]["sha256"] = hashlib.sha256(file.read_bytes()).hexdigest()
    doc.pop("id", None)
    spec.write_text(json.dumps(doc))
