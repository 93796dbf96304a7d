"""`repro spack check/show` and `repro env diff` on Spack files: every path checked, bad input
named, nothing compared that has nothing in common."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli


def test_check_reports_every_path_and_fails_on_any(root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "spack",
            "check",
            str(tmp_path / "nope.yaml"),
            str(root / "lockfiles" / "ort-digits"),
            str(root / "specs" / "tvm-resnet50.json"),
        ],
    )
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert lines[0] == f"{tmp_path / 'nope.yaml'}: no such file or folder"
    assert lines[1].endswith("ort-digits: ok")  # checked after the failure
    assert lines[2].endswith("tvm-resnet50.json: ok")


def test_check_names_a_lock_not_made_from_its_manifest(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    d = shared_fixtures / "locks" / "spack"
    (tmp_path / "spack.yaml").write_bytes((d / "wf-reg-test.spack.yaml").read_bytes())
    (tmp_path / "spack.lock").write_bytes((d / "wf-reg-test.v4.spack.lock").read_bytes())
    result = CliRunner().invoke(cli, ["spack", "check", str(tmp_path)])
    assert result.exit_code == 2
    assert "only in the manifest ['openjdk']" in result.stdout


def test_show_json_is_the_summary(shared_fixtures: Path) -> None:
    lock = shared_fixtures / "locks" / "spack" / "open-r1.v5.spack.lock"
    result = CliRunner().invoke(cli, ["spack", "show", str(lock), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["lockfile_version"] == 5
    assert [r["name"] for r in data["roots"]] == ["cuda", "nccl"]


def test_env_diff_refuses_inputs_with_nothing_in_common(shared_fixtures: Path, root: Path) -> None:
    lock = shared_fixtures / "locks" / "spack" / "poorjit.v4.spack.lock"
    result = CliRunner().invoke(cli, ["env", "diff", str(lock), str(root / "nix" / "flake.lock")])
    assert result.exit_code == 2
    assert "nothing in common" in result.output


def test_env_diff_of_a_lock_with_itself_is_empty(shared_fixtures: Path) -> None:
    lock = shared_fixtures / "locks" / "spack" / "viperml-debian-11.v6.spack.lock"
    result = CliRunner().invoke(cli, ["env", "diff", str(lock), str(lock)])
    assert result.exit_code == 0
    assert result.stdout.strip() == "no differences"


def test_pin_without_spack_keeps_the_builtin_commit_of_the_same_lock(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-pinning where no Spack is (nothing to ask the commit of) keeps the commit pinned
    with this very lock; a changed lock drops it (it was not concretized with it)."""
    import shutil

    from tests.helpers import portable_spec

    monkeypatch.delenv("SPACK_ROOT", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    lock_dir = tmp_path / "lockfiles" / "ort-digits"
    shutil.copytree(root / "lockfiles" / "ort-digits", lock_dir)
    (tmp_path / "specs").mkdir()
    raw = portable_spec(root, "ort-digits")
    commit = raw["environment"]["spack"]["builtin_commit"]
    raw["environment"]["spack"]["spack_yaml"]["path"] = str(lock_dir / "spack.yaml")
    raw["environment"]["spack"]["spack_lock"]["path"] = str(lock_dir / "spack.lock")
    spec = tmp_path / "specs" / "ort-digits.json"
    spec.write_text(json.dumps(raw))
    result = CliRunner().invoke(
        cli, ["spack", "pin", str(spec), "--manifest", str(lock_dir / "spack.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(spec.read_text())["environment"]["spack"]["builtin_commit"] == commit
    lock = json.loads((lock_dir / "spack.lock").read_text())
    lock["spack"]["version"] = "1.2.0.dev1"  # another concretization
    (lock_dir / "spack.lock").write_text(json.dumps(lock))
    result = CliRunner().invoke(
        cli, ["spack", "pin", str(spec), "--manifest", str(lock_dir / "spack.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert "builtin_commit" not in json.loads(spec.read_text())["environment"]["spack"]
