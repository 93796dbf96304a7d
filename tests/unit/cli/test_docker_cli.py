"""Docker flags checked on the command line, before any daemon, build or run directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "docker", "--container-cpuset", "99"], "this machine has CPUs"),
        (["--env", "docker", "--container-memory", "foo"], "expected bytes"),
        (["--env", "docker", "--container-cpuset", ""], "--container-cpuset: empty"),
        (["--env", "venv", "--container-memory", "1g"], "--container-memory: --env docker's own"),
        (["--env", "native", "--rebuild"], "--rebuild: --env docker's own"),
    ],
)
def test_replay_refuses_bad_container_flags(
    root: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            *args,
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tag", "hostile/UPPER:1"], "--tag: 'hostile/UPPER:1' is not an image name"),
        (["--tag", ""], "--tag: '' is not an image name"),
        (["--base", "UPPER/Bad::ref"], "--base"),
        (["--tag", "local/debian:bookworm-py"], "the base image's name"),
    ],
)
def test_image_refuses_bad_names_before_building(root: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["image", str(root / "specs" / "ort-digits.json"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_capture_refuses_docker_options_for_another_manager(root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(root / "specs" / "ort-digits.json"),
            "--env-manager",
            "venv",
            "--docker-base",
            "x/y:1",
            "--no-run",
            "--specs-dir",
            str(tmp_path / "specs"),
            "--lockfiles-dir",
            str(tmp_path / "locks"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "need --env-manager docker" in result.output
    assert not (tmp_path / "locks").exists()
