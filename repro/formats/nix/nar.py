"""Nix archive (NAR) serialization and narHash, byte-for-byte as `nix hash path` computes them.

NAR grammar (see Eelco Dolstra's thesis, ch. 5.2.1): every string is its u64 little-endian
length, its bytes and zero padding to a multiple of 8. A node is `(` `type` then
  regular:   `regular` [`executable` ``] `contents` <bytes>
  symlink:   `symlink` `target` <target>
  directory: `directory` then per entry, in byte-wise name order,
             `entry` `(` `name` <name> `node` <node> `)`
followed by `)`. Only the owner-execute bit of a file counts; times and owners do not.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

from repro.errors import SpecError

NIX32_ALPHABET = "0123456789abcdfghijklmnpqrsvwxyz"
CHUNK = 1 << 20


def _str(data: bytes) -> bytes:
    pad = (8 - len(data) % 8) % 8
    return struct.pack("<Q", len(data)) + data + b"\0" * pad


_KINDS = (
    (stat.S_ISFIFO, "named pipe (FIFO)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _unreadable(path: Path, exc: OSError) -> SpecError:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        what, hint = "no such file or directory", "check the path; was it removed while hashed?"
    else:
        what = f"cannot read it ({exc.strerror or type(exc).__name__})"
        hint = "make it readable by this user, or hash a copy that is"
    return SpecError(f"{path}: {what}", hint=hint)


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    yield struct.pack("<Q", size)
    left = size
    try:
        with path.open("rb") as fh:
            while left and (chunk := fh.read(min(CHUNK, left))):
                left -= len(chunk)
                yield chunk
            grew = bool(fh.read(1))
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    if left or grew:
        # NOTE: the length is already out; a file that changes under us would give a wrong NAR
        raise SpecError(
            f"{path}: changed while it was hashed (it was {size} bytes when hashing began)",
            hint="hash it again once nothing writes to it",
        )
    pad = (8 - size % 8) % 8
    if pad:
        yield b"\0" * pad


def nar_chunks(path: Path) -> Iterator[bytes]:
    """The NAR serialization of a file, symlink or directory tree, streamed.

    A tree of any depth: directories are walked with an explicit stack, not by recursion.
    Anything that cannot be read, or that a NAR cannot hold, is a SpecError naming its path.
    """
    yield _str(b"nix-archive-1")
    # NOTE: a node yields its bytes, and a Path where a directory entry's node goes
    stack = [_node(path)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, Path):
                stack.append(_node(item))
                break
            yield item
        else:
            stack.pop()


def _node(path: Path) -> Iterator[bytes | Path]:
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    yield _str(b"(") + _str(b"type")
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.fsencode(str(path.readlink()))
        except OSError as exc:
            raise _unreadable(path, exc) from exc
        yield _str(b"symlink") + _str(b"target") + _str(target)
    elif stat.S_ISREG(st.st_mode):
        yield _str(b"regular")
        if st.st_mode & stat.S_IXUSR:
            yield _str(b"executable") + _str(b"")
        yield _str(b"contents")
        yield from _file_chunks(path, st.st_size)
    elif stat.S_ISDIR(st.st_mode):
        yield _str(b"directory")
        # NOTE: Nix sorts entries by their raw bytes; listing with a bytes path gives them.
        try:
            names = sorted(os.listdir(os.fsencode(path)))  # noqa: PTH208
        except OSError as exc:
            raise _unreadable(path, exc) from exc
        for name in names:
            yield _str(b"entry") + _str(b"(") + _str(b"name") + _str(name) + _str(b"node")
            yield path / os.fsdecode(name)
            yield _str(b")")
    else:
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "special file")
        raise SpecError(
            f"{path}: is a {kind}; a NAR holds only regular files, symlinks and directories",
            hint="hash a copy of the tree without it",
        )
    yield _str(b")")


def nar_digest(path: Path) -> tuple[bytes, int]:
    """(sha256 digest of the NAR, NAR size) without holding the NAR in memory."""
    h = hashlib.sha256()
    size = 0
    for chunk in nar_chunks(path):
        h.update(chunk)
        size += len(chunk)
    return h.digest(), size


def nix32(digest: bytes) -> str:
    """Nix's base-32: its own alphabet, and the bits taken from the end of the digest."""
    length = (len(digest) * 8 - 1) // 5 + 1
    out = []
    for n in range(length - 1, -1, -1):
        b = n * 5
        i, j = divmod(b, 8)
        c = digest[i] >> j
        if i + 1 < len(digest):
            c |= digest[i + 1] << (8 - j)
        out.append(NIX32_ALPHABET[c & 0x1F])
    return "".join(out)


def from_nix32(text: str) -> bytes:
    """Inverse of nix32 (for SRI conversion of hashes printed by Nix)."""
    size = len(text) * 5 // 8
    out = bytearray(size)
    for n, ch in enumerate(reversed(text)):
        digit = NIX32_ALPHABET.index(ch)
        b = n * 5
        i, j = divmod(b, 8)
        out[i] |= (digit << j) & 0xFF
        if i + 1 < size:
            out[i + 1] |= digit >> (8 - j)
        elif digit >> (8 - j):
            raise ValueError(f"invalid nix32 hash {text!r}")
    return bytes(out)


def sri(digest: bytes) -> str:
    return "sha256-" + base64.b64encode(digest).decode()


def nar_hash(path: Path) -> dict[str, str | int]:
    """narHash of a path in the three forms Nix prints, and the NAR size."""
    digest, size = nar_digest(path)
    return {"hex": digest.hex(), "nix32": nix32(digest), "sri": sri(digest), "nar_size": size}


def flat_hash(path: Path) -> dict[str, str]:
    """The flat (file-contents) sha256 of a file, as fixed-output fetchurl wants it."""
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    d = h.digest()
    return {"hex": d.hex(), "nix32": nix32(d), "sri": sri(d)}
