"""What `repro prefetch` and the NAR hash cannot read is bad input naming the path (exit 2)."""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.formats.nix.nar import flat_hash, nar_chunks, nar_hash


def _prefetch(target: str) -> Any:
    return CliRunner().invoke(cli, ["prefetch", target])


def _assert_bad_input(result: Any, path: Path | str, expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert f"error: {path}: {expected}" in result.stderr
    assert "internal error" not in result.stderr
    assert "hint: " in result.stderr


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> set[Path]:
    """Paths that, as for a user without the rights, cannot be opened or listed.

    The tests run as root, whom mode 000 does not stop, so the refusal is simulated.
    """
    paths: set[Path] = set()
    real_open, real_listdir = Path.open, os.listdir

    def refuse(path: Any) -> None:
        if Path(os.fsdecode(path)) in paths:
            raise PermissionError(13, "Permission denied", str(path))

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        refuse(self)
        return real_open(self, *args, **kwargs)

    def listdir(path: Any = ".") -> Any:
        refuse(path)
        return real_listdir(path)

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(os, "listdir", listdir)
    return paths


def test_prefetch_of_a_missing_path_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    _assert_bad_input(_prefetch(str(missing)), missing, "no such file or directory")


def test_prefetch_below_a_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    below = tmp_path / "file" / "model.onnx"
    _assert_bad_input(_prefetch(str(below)), below, "no such file or directory")


def test_prefetch_of_an_empty_path_exits_2() -> None:
    result = _prefetch("")
    assert result.exit_code == 2, result.output
    assert "PATH is empty" in result.stderr


def test_prefetch_of_a_path_that_cannot_be_looked_at_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "locked" / "model.onnx"
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    _assert_bad_input(_prefetch(str(target)), target, "cannot look at it (Permission denied)")


def test_prefetch_of_an_unreadable_file_exits_2(tmp_path: Path, unreadable: set[Path]) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"weights")
    path.chmod(0)
    unreadable.add(path)
    _assert_bad_input(_prefetch(str(path)), path, "cannot read it (Permission denied)")


def test_prefetch_of_a_tree_with_an_unreadable_folder_names_the_folder(
    tmp_path: Path, unreadable: set[Path]
) -> None:
    inner = tmp_path / "tree" / "private"
    inner.mkdir(parents=True)
    (tmp_path / "tree" / "a").write_text("a")
    unreadable.add(inner)
    _assert_bad_input(_prefetch(str(tmp_path / "tree")), inner, "cannot read it")


def test_prefetch_of_a_fifo_exits_2(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _assert_bad_input(_prefetch(str(fifo)), fifo, "is a named pipe (FIFO)")


def test_prefetch_of_a_tree_holding_a_socket_names_the_socket(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "a").write_text("a")
    sock_path = tree / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        _assert_bad_input(_prefetch(str(tree)), sock_path, "is a socket")


def test_prefetch_of_a_dangling_symlink_hashes_the_link(tmp_path: Path) -> None:
    # NOTE: `nix hash path` hashes a symlink, not what it points to, so this one is fine
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    result = _prefetch(str(link))
    assert result.exit_code == 0, result.output
    assert "narHash (NAR):" in result.stdout
    assert "fetchurl hash" not in result.stdout


def test_nar_hash_of_a_missing_path_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="missing: no such file or directory"):
        nar_hash(tmp_path / "missing")


def test_flat_hash_of_an_unreadable_file_is_a_spec_error(
    tmp_path: Path, unreadable: set[Path]
) -> None:
    path = tmp_path / "f"
    path.write_text("x")
    unreadable.add(path)
    with pytest.raises(SpecError, match="f: cannot read it"):
        flat_hash(path)


@pytest.mark.parametrize("new", [b"abc and more", b"a", b""])
def test_a_file_that_changes_while_hashed_is_a_spec_error(tmp_path: Path, new: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    chunks = nar_chunks(path)
    for chunk in chunks:
        if chunk == struct.pack("<Q", 3):  # the length is out, the contents not yet read
            break
    path.write_bytes(new)
    with pytest.raises(SpecError, match="changed while it was hashed"):
        list(chunks)


def test_a_tree_deeper_than_the_recursion_limit_hashes(tmp_path: Path) -> None:
    depth = 1200
    dirs = [tmp_path / "d"]
    for _ in range(depth - 1):
        dirs.append(dirs[-1] / "d")
    leaf = dirs[-1] / "f"
    try:
        for d in dirs:  # NOTE: mkdir(parents=True) would recurse past the limit itself
            d.mkdir()
        leaf.write_text("leaf")
        got = nar_hash(dirs[0])
        assert int(got["nar_size"]) > depth * 100
        assert nar_hash(dirs[0]) == got
    finally:
        # NOTE: removed here, leaf first: pytest's own clean-up of old tmp dirs would recurse
        leaf.unlink(missing_ok=True)
        for d in reversed(dirs):
            if d.is_dir():
                d.rmdir()
