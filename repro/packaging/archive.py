"""Reading and writing a package archive (`NAME.repro.tar`, `.tar.gz`, `.tar.xz`, `.tar.zst`).

Writing: `manifest.json` first (every other member's role, size and sha256), then the members in
a fixed order with fixed metadata (owner 0, mode 0644, mtime 0), so that packing the same inputs
twice gives the same bytes. Reading: the manifest is read first (at most 64 MiB) and every
member is checked against it before a byte of it is written: a regular file (no link, device or
sparse member), a relative, normalized name the manifest lists, once, with the size it lists.
Extraction goes into a fresh hidden folder beside the target, every file's sha256 is checked,
none listed may be missing, and only then is the folder renamed into place. Nothing is ever
written outside that folder, and never more bytes than the manifest declares.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.atomic import atomic_path, umask, write_bytes, writing
from repro.digests import sha256_file
from repro.errors import ArtifactError, ReproError, SpecError, UsageError

MANIFEST = "manifest.json"
SCHEMA = "repro.package/v1"
#: limits of what an archive may unpack to (a package of ResNet-50 with wheels is ~1.5 GiB)
MAX_TOTAL_BYTES = 32 * 2**30
MAX_MEMBERS = 200_000
MAX_MANIFEST_BYTES = 64 * 2**20
_CHUNK = 1 << 20

Role = Literal[
    "spec",
    "lock",
    "flake",
    "artifact",
    "original",
    "result",
    "cached-artifact",
    "wheel",
    "image",
    "attestation",
    "signature",
    "spack-source",
]


class Member(BaseModel):
    """One file of the package."""

    model_config = ConfigDict(extra="forbid")
    path: str
    role: Role
    size: int = Field(ge=0, le=MAX_TOTAL_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class PackageManifest(BaseModel):
    """manifest.json: what the package holds and the digest of every file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["repro.package/v1"] = Field("repro.package/v1", alias="schema")
    spec: str = Field(description="the spec's path inside the package")
    spec_name: str
    spec_id: str
    repro_version: str
    contents: dict[str, bool] = Field(
        description="what was asked for: artifacts, wheels, image, results"
    )
    members: list[Member]

    def of_role(self, role: str) -> list[Member]:
        return [m for m in self.members if m.role == role]

    def problems(self) -> list[str]:
        """What makes this manifest unusable: unsafe or repeated names, a spec it does not
        list as its spec."""
        out = []
        names = [m.path for m in self.members]
        if len(set(names)) != len(names):
            out.append("a member is listed twice")
        for name in names:
            if not _safe_name(name) or name == MANIFEST:
                out.append(f"member {name!r} is not a plain relative name inside the package")
        if self.spec not in {m.path for m in self.members if m.role == "spec"}:
            out.append(f"spec {self.spec!r} is not a member listed with the role 'spec'")
        return out


@dataclass(frozen=True)
class Source:
    """A member to write: its name in the package, its role, and where its bytes are."""

    path: str
    role: Role
    file: Path


def _mode(path: Path) -> str:
    name = path.name
    if name.endswith((".tar.gz", ".tgz")):
        return "gz"
    if name.endswith(".tar.xz"):
        return "xz"
    if name.endswith(".tar.zst"):
        return "zst"
    if name.endswith(".tar"):
        return ""
    raise UsageError(
        f"{path}: a package is NAME.repro.tar, .tar.gz, .tar.xz or .tar.zst",
        hint="name the output with one of these endings",
    )


@contextlib.contextmanager
def _open(path: Path, *, write: bool, mode: str) -> Iterator[IO[bytes]]:
    """The archive's tar stream, (de)compressed as its name says; gzip with no timestamp, so
    that the same members give the same bytes."""
    with path.open("wb" if write else "rb") as fh:
        if mode == "":
            yield fh
        elif mode == "gz":
            import gzip

            with gzip.GzipFile(filename="", fileobj=fh, mode="wb" if write else "rb", mtime=0) as z:
                yield z  # type: ignore[misc]
        elif mode == "xz":
            import lzma

            with lzma.LZMAFile(fh, "wb" if write else "rb") as z:
                yield z
        else:
            try:
                import zstandard
            except ImportError:
                raise UsageError(
                    f"{path}: .tar.zst needs the zstandard package",
                    hint="pip install zstandard, or use .tar.gz / .tar.xz",
                ) from None
            if write:
                with zstandard.ZstdCompressor(level=10).stream_writer(fh, closefd=False) as z:
                    yield z
            else:
                with zstandard.ZstdDecompressor().stream_reader(fh, closefd=False) as z:
                    yield z


def write_package(out: Path, sources: list[Source], manifest: PackageManifest) -> None:
    """The archive at `out` (written beside it under a temporary name, then renamed)."""

    mode = _mode(out)
    with (
        atomic_path(out, suffix=".partial") as tmp,
        _open(tmp, write=True, mode=mode) as stream,
        tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        data = (manifest.model_dump_json(by_alias=True, indent=1) + "\n").encode()
        tar.addfile(_info(MANIFEST, len(data)), io.BytesIO(data))
        listed = {m.path: m for m in manifest.members}
        for src in sources:
            member = listed[src.path]
            with src.file.open("rb") as fh:
                reader = _Hashing(fh)
                tar.addfile(_info(src.path, member.size), reader)
                if reader.digest() != member.sha256 or reader.count != member.size:
                    raise UsageError(
                        f"{src.file}: changed while it was packed",
                        hint="pack again when nothing writes to the files the spec names",
                    )


class _Hashing:
    """A file's bytes as tarfile reads them, hashed and counted on the way."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.h = hashlib.sha256()
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.h.update(data)
        self.count += len(data)
        return data

    def digest(self) -> str:
        return self.h.hexdigest()


class _Capped:
    """An archive stream that refuses to give more than `limit` bytes (headers included): a
    small compressed archive cannot make tarfile read gigabytes of names into memory."""

    def __init__(self, raw: IO[bytes], limit: int, path: Path) -> None:
        self.raw = raw
        self.left = limit
        self.path = path

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n if n >= 0 else self.left + 1)
        self.left -= len(data)
        if self.left < 0:
            raise SpecError(
                f"{self.path}: unpacks to more than the manifest allows; nothing was unpacked",
                hint="this is not a package repro wrote: get it again from its source",
            )
        return data


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _bad(path: Path, member: str, why: str) -> SpecError:
    return SpecError(
        f"{path}: member {member!r}: {why}; nothing was unpacked",
        hint="this is not a package repro wrote, or it was altered: get it again from its source",
    )


def _safe_name(name: str) -> bool:
    pure = PurePosixPath(name)
    return not (
        pure.is_absolute()
        or name.startswith(("/", "\\"))
        or ".." in pure.parts
        or "\\" in name
        or "\x00" in name
        or str(pure) != name
        or not pure.parts
        or any(p in ("", ".") for p in pure.parts)
        or len(name) > 4096
    )


def _check_member(
    path: Path, info: tarfile.TarInfo, listed: dict[str, Member], seen: set[str]
) -> str:
    """The member's safe relative name, or a SpecError saying why it is refused."""
    name = info.name
    if not info.isreg() or info.issparse():
        kind = (
            "a symbolic link"
            if info.issym()
            else "a hard link"
            if info.islnk()
            else "a folder"
            if info.isdir()
            else "a sparse file"
            if info.issparse()
            else "a device or pipe"
        )
        raise _bad(path, name, f"{kind}; a package holds regular files only")
    if not _safe_name(name):
        raise _bad(path, name, "not a plain relative name inside the package")
    if name in seen:
        raise _bad(path, name, "appears twice")
    member = listed.get(name)
    if member is None:
        raise _bad(path, name, "not listed in the manifest")
    if info.size != member.size:
        raise _bad(path, name, f"{info.size} bytes, the manifest lists {member.size}")
    return name


def extract(path: Path, target: Path, *, max_bytes: int = MAX_TOTAL_BYTES) -> PackageManifest:
    """Unpack `path` into the new folder `target`, checked member by member against the
    manifest; on any problem nothing is left behind."""
    import tempfile

    if target.exists() or target.is_symlink():
        raise UsageError(f"{target}: exists", hint="unpack into a new folder")
    if not path.is_file():
        raise SpecError(f"{path}: no such package file")
    mode = _mode(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.unpacking-", dir=target.parent))
    work.chmod(0o777 & ~umask())  # mkdtemp's is private (0700); the rename would keep it
    try:
        with _open(path, write=False, mode=mode) as raw:
            capped = _Capped(raw, max_bytes + MAX_MANIFEST_BYTES + (64 << 20), path)
            try:
                manifest = _extract_members(path, capped, work, max_bytes)  # type: ignore[arg-type]
            except ReproError:
                raise
            except OSError as exc:
                if exc.errno is not None:
                    raise  # our own disk: full, not writable
                raise SpecError(f"{path}: the archive is damaged ({exc})") from None
            except _DAMAGED as exc:
                raise SpecError(f"{path}: the archive is damaged ({exc})") from None
        _verify_files(path, work, manifest)
        work.replace(target)
        return manifest
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _damaged_errors() -> tuple[type[BaseException], ...]:
    """What the decompressors and tarfile raise on damaged input (not repro's own bugs)."""
    import lzma
    import zlib

    errors: list[type[BaseException]] = [
        tarfile.TarError,
        EOFError,
        ValueError,
        lzma.LZMAError,
        zlib.error,
        UnicodeError,
    ]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - a pinned dependency
        pass
    return tuple(errors)


_DAMAGED = _damaged_errors()


def _extract_members(path: Path, raw: IO[bytes], work: Path, max_bytes: int) -> PackageManifest:
    """The manifest (the first member), then every member into `work`, each checked against
    it before it is written."""
    with tarfile.open(fileobj=raw, mode="r|") as tar:
        first = tar.next()
        if first is None or first.name != MANIFEST or not first.isreg():
            raise SpecError(
                f"{path}: its first member is not {MANIFEST}: not a package repro wrote",
                hint="get the package again from its source",
            )
        if first.size > MAX_MANIFEST_BYTES:
            raise _bad(path, MANIFEST, f"{first.size} bytes; a manifest is at most 64 MiB")
        fh = tar.extractfile(first)
        assert fh is not None
        data = fh.read()
        manifest = _parse_manifest(path, data)
        write_bytes(work / MANIFEST, data)  # kept in the unpacked folder, as it came
        total = sum(m.size for m in manifest.members)
        if total > max_bytes or len(manifest.members) > MAX_MEMBERS:
            raise _bad(
                path,
                MANIFEST,
                f"lists {total} bytes in {len(manifest.members)} files, more than the "
                f"{max_bytes} bytes (or {MAX_MEMBERS} files) allowed",
            )
        listed = {m.path: m for m in manifest.members}
        seen: set[str] = set()
        folders: set[str] = set()
        for info in tar:
            if info is first:  # iterating a TarFile yields what it has read already
                continue
            name = _check_member(path, info, listed, seen)
            parents = {str(p) for p in PurePosixPath(name).parents if str(p) != "."}
            if name in folders or parents & seen:
                raise _bad(path, name, "a file and a folder of the same name")
            seen.add(name)
            folders |= parents
            dest = work / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(info)
            assert src is not None
            with writing(dest), dest.open("xb") as out:
                shutil.copyfileobj(src, out, _CHUNK)
    return manifest


def read_manifest(path: Path) -> bytes:
    """The manifest's bytes as the package itself holds them (its first member): what a copy
    unpacked earlier is checked against, never that copy's own manifest."""
    try:
        with (
            _open(path, write=False, mode=_mode(path)) as raw,
            tarfile.open(fileobj=raw, mode="r|") as tar,
        ):
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isreg():
                raise SpecError(
                    f"{path}: its first member is not {MANIFEST}: not a package repro wrote",
                    hint="get the package again from its source",
                )
            if first.size > MAX_MANIFEST_BYTES:
                raise _bad(path, MANIFEST, f"{first.size} bytes; a manifest is at most 64 MiB")
            fh = tar.extractfile(first)
            assert fh is not None
            return fh.read()
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise SpecError(f"{path}: the archive is damaged ({exc})") from None
    except _DAMAGED as exc:
        raise SpecError(f"{path}: the archive is damaged ({exc})") from None


def _parse_manifest(path: Path, data: bytes) -> PackageManifest:
    from repro.spec.io import format_validation_error

    hint = "the package is damaged or not one repro wrote: get it again from its source"
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise SpecError(f"{path}: {MANIFEST}: not JSON ({exc})", hint=hint) from None
    try:
        manifest = PackageManifest.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(f"{path}: {MANIFEST}", exc, raw, what="package manifest"),
            hint=hint,
        ) from None
    problems = manifest.problems()
    if problems:
        raise SpecError(f"{path}: {MANIFEST}: {problems[0]}", hint="get the package again")
    return manifest


def _verify_files(path: Path, root: Path, manifest: PackageManifest) -> None:
    """Every listed file is there with its sha256 (what is there was checked as it came)."""
    for m in manifest.members:
        file = root / m.path
        if not file.is_file():
            raise SpecError(
                f"{path}: {m.path} is listed in the manifest but not in the archive",
                hint="the package is incomplete: get it again from its source",
            )
        got = sha256_file(file)
        if got != m.sha256:
            raise ArtifactError(
                f"{path}: {m.path}: sha256 {got[:16]}..., the manifest says {m.sha256[:16]}...: "
                "the package was altered",
                hint="get the package again from its source",
            )
        if m.role == "cached-artifact":
            check_cached_name(path, m.path, got)


def check_cached_name(package: Path, member: str, sha256: str) -> None:
    """A cached artifact is named for its bytes' sha256 (the cache is content-addressed, and
    the signed spec pins an artifact by that name); one that is not was altered."""
    named = member.rsplit("/", 1)[-1]
    if named != sha256:
        raise ArtifactError(
            f"{package}: {member}: named for sha256 {named[:16]}... but its bytes are "
            f"{sha256[:16]}...: the package was altered",
            hint="get the package again from its source",
        )
