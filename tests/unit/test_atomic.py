"""Atomic writes: all or nothing, and files get the usual permissions, not mkstemp's 0600."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repro.atomic import atomic_path, atomic_write_text


def test_the_written_file_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        os.umask(0o027)
        atomic_write_text(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("old")

    def write_half() -> None:
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_half()
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_full_disk_names_the_file_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def full(self: Path, *args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    target = tmp_path / "run.json"
    with pytest.raises(OSError, match="No space left") as caught:
        atomic_write_text(target, "{}")
    assert caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_a_lone_surrogate_is_written_as_its_escape(tmp_path: Path) -> None:
    name = b"sys\xfe1".decode("utf-8", "surrogateescape")  # a folder name that is not UTF-8
    atomic_write_text(tmp_path / "t.csv", f"system\n{name}\n")
    assert (tmp_path / "t.csv").read_text() == "system\nsys\\udcfe1\n"


def test_a_full_disk_while_unpacking_names_the_file_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's write calls name no file when the disk is full: the error names the member."""
    import errno
    import shutil

    from click.testing import CliRunner

    from repro.cli import cli
    from repro.packaging.archive import PackageManifest, Source, write_package

    (tmp_path / "s.json").write_text("{}")
    from repro.digests import sha256_file
    from repro.packaging.archive import Member

    member = Member(path="s.json", role="spec", size=2, sha256=sha256_file(tmp_path / "s.json"))
    manifest = PackageManifest(
        spec="s.json",
        spec_name="x",
        spec_id="a" * 64,
        repro_version="t",
        contents={},
        members=[member],
    )
    package = tmp_path / "x.repro.tar"
    write_package(package, [Source("s.json", "spec", tmp_path / "s.json")], manifest)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shutil, "copyfileobj", full)
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "a file:" not in result.stderr
    assert "s.json: No space left on device" in result.stderr
    assert "the file system is full" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_folder_no_file_can_be_made_in_is_said_of_the_target_not_the_temporary_name() -> None:
    """`repro pack -o /proc/x.repro.tar` named its temporary file (`/proc/.x.repro.tar.qxwesz4q
    .partial`), a name the user never gave."""
    target = Path("/proc/x.repro.tar")
    if not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    with (
        pytest.raises(OSError, match=r"x\.repro\.tar") as caught,
        atomic_path(target, suffix=".partial") as tmp,
    ):
        tmp.write_text("x")
    assert caught.value.filename == str(target)
