"""Packages for real: pack ort-digits, unpack it byte for byte, replay from it air-gapped (no
network namespace at all), and a 10 GB sparse member refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run


def test_pack_unpack_is_byte_identical_and_replays_from_the_package(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    package = tmp_path / "digits.repro.tar.gz"
    result = CliRunner().invoke(
        cli,
        [
            "pack",
            str(root / "specs" / "ort-digits.json"),
            "-o",
            str(package),
            "--with-artifacts",
            "--cache-dir",
            str(shared_cache),
        ],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "unpacked"
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "specs/ort-digits.json").read_bytes() == (
        root / "specs/ort-digits.json"
    ).read_bytes()
    original = root / "results" / "ort-digits" / "original"
    for f in original.rglob("*"):
        if f.is_file():
            assert (
                out / "results/ort-digits/original" / f.relative_to(original)
            ).read_bytes() == f.read_bytes()
    # a fresh cache: the data set comes from the package, not from its recipe or this machine
    cache = tmp_path / "cache"
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(package),
            "--env",
            "native",
            "-s",
            "SingleStream",
            "-m",
            "performance",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(cache),
            "--run-id",
            "p1",
        ],
    )
    assert result.exit_code in (0, 3), result.output
    assert load_run(tmp_path / "results" / "ort-digits" / "p1").tests
    dataset_sha = "21bc397116824593c52d72953f25c3a7d312ea873270747c0342c0ff1e52e442"
    assert (cache / "sha256" / dataset_sha[:2] / dataset_sha).is_file()


def _can_unshare_network() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_unshare_network(), reason="needs root and unshare -n (no network)")
def test_air_gapped_replay_builds_its_venv_from_the_packages_wheels(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    package = tmp_path / "digits.repro.tar.zst"
    result = CliRunner().invoke(
        cli,
        [
            "pack",
            str(root / "specs" / "ort-digits.json"),
            "-o",
            str(package),
            "--with-artifacts",
            "--with-wheels",
            "--cache-dir",
            str(shared_cache),
        ],
    )
    assert result.exit_code == 0, result.output
    # a new network namespace has no interface but lo: PyPI and everything else unreachable
    proc = subprocess.run(
        [
            "unshare",
            "-n",
            sys.executable,
            "-m",
            "repro",
            "replay",
            str(package),
            "--env",
            "venv",
            "-s",
            "SingleStream",
            "-m",
            "performance",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run-id",
            "air",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 3), proc.stderr
    record = load_run(tmp_path / "results" / "ort-digits" / "air")
    assert record.environment["manager"] == "venv"
    assert record.tests[0].status in ("valid", "invalid")


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar")
def test_a_ten_gigabyte_sparse_member_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    size = 10 * 2**30
    with (src / "huge.bin").open("wb") as fh:
        fh.truncate(size)  # 10 GB of holes: no disk used
    zero = "0" * 64
    (src / "manifest.json").write_text(
        json.dumps(
            {
                "schema": "repro.package/v1",
                "spec": "s.json",
                "spec_name": "x",
                "spec_id": "a" * 64,
                "repro_version": "t",
                "contents": {},
                "members": [
                    {"path": "s.json", "role": "spec", "size": 1, "sha256": zero},
                    {"path": "huge.bin", "role": "result", "size": size, "sha256": zero},
                ],
            }
        )
    )
    package = tmp_path / "big.repro.tar"
    subprocess.run(  # the manifest first, as a package has it; then the sparse member
        ["tar", "--sparse", "-cf", str(package), "-C", str(src), "manifest.json", "huge.bin"],
        check=True,
    )
    assert package.stat().st_size < 2**20
    target = tmp_path / "out"
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(target)])
    assert result.exit_code == 2, result.output
    assert "'huge.bin': a sparse file" in result.stderr
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.repro.tar", "src"]


@pytest.mark.docker
def test_a_package_with_its_image_replays_after_the_image_is_gone(
    root: Path, tmp_path: Path
) -> None:
    """The image travels in the package (`docker save`) and is loaded back (`docker load`)."""
    import docker

    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker daemon: {exc}")
    from repro.containers.image import DEFAULT_BASE

    try:
        client.images.get(DEFAULT_BASE)
    except Exception:
        pytest.skip(f"no {DEFAULT_BASE} image (docs/docker.md)")
    project = tmp_path / "project"
    (project / "artifacts").mkdir(parents=True)
    shutil.copyfile(
        root / "artifacts" / "digits-mlp.onnx", project / "artifacts" / "digits-mlp.onnx"
    )
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = "artifacts/digits-mlp.onnx"
    # a name of its own: its image (labelled with it) is not the one test_docker.py's tests use
    # beside it (pytest -n), which removing it would take from under them
    partial["name"] = "ort-digits-packed"
    (project / "partial.json").write_text(json.dumps(partial))
    cache = tmp_path / "cache"
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(project / "partial.json"),
            "--env-manager",
            "docker",
            "--no-run",
            "--specs-dir",
            str(project / "specs"),
            "--lockfiles-dir",
            str(project / "lockfiles"),
            "--results-dir",
            str(project / "results"),
            "--cache-dir",
            str(cache),
        ],
    )
    assert result.exit_code == 0, result.output
    spec = project / "specs" / "ort-digits-packed.json"
    image_id = json.loads(spec.read_text())["environment"]["image_id"]
    package = tmp_path / "d.repro.tar"
    result = CliRunner().invoke(
        cli, ["pack", str(spec), "-o", str(package), "--with-image", "--cache-dir", str(cache)]
    )
    assert result.exit_code == 0, result.output
    client.images.remove(image_id, force=True)  # another machine: the image is not there
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(package),
            "--env",
            "docker",
            "--scenario",
            "Offline",
            "--mode",
            "accuracy",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(cache),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["environment"]["image_id"] == image_id
    client.close()
