"""Reading and writing a package archive (`NAME.repro.tar`, `.tar.gz`, `.tar.xz`, `.tar.zst`).

Writing: members in a fixed order with fixed metadata (owner 0, mode 0644, mtime 0), so that
packing the same inputs twice gives the same bytes; `manifest.json` last. Reading: every member
is checked before a byte of it is written (a regular file; a relative, normalized name; no link,
device, sparse or duplicate member; its size within the limits), extraction goes into a fresh
hidden folder beside the target, every file is checked against the manifest (none more, none
missing, every size and hash), and only then is the folder renamed into place. Nothing is ever
written outside that folder.
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
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import ArtifactError, ReproError, SpecError, UsageError

MANIFEST = "manifest.json"
SCHEMA = "repro.package/v1"
#: limits of what an archive may unpack to (a package of ResNet-50 with wheels is ~1.5 GiB)
MAX_TOTAL_BYTES = 32 * 2**30
MAX_MEMBERS = 200_000
_CHUNK = 1 << 20

Role = Literal[
    "spec", "lock", "flake", "artifact", "original", "result", "cached-artifact", "wheel", "image"
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


@dataclass(frozen=True)
class Source:
    """A member to write: its name in the package, its role, and where its bytes are."""

    path: str
    role: Role
    file: Path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


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
    from repro.atomic import atomic_path

    mode = _mode(out)
    with (
        atomic_path(out, suffix=".partial") as tmp,
        _open(tmp, write=True, mode=mode) as stream,
        tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for src in sources:
            info = _info(src.path, src.file.stat().st_size)
            with src.file.open("rb") as fh:
                tar.addfile(info, fh)
        data = (manifest.model_dump_json(by_alias=True, indent=1) + "\n").encode()
        tar.addfile(_info(MANIFEST, len(data)), io.BytesIO(data))


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


def _check_member(path: Path, info: tarfile.TarInfo, seen: set[str], budget: int) -> str:
    """The member's safe relative name, or a SpecError saying why it is refused."""
    name = info.name
    if not info.isreg() or info.issparse():
        kind = (
            "a symbolic link" if info.issym() else "a hard link" if info.islnk()
            else "a folder" if info.isdir() else "a sparse file" if info.issparse()
            else "a device or pipe"
        )  # fmt: skip
        raise _bad(path, name, f"{kind}; a package holds regular files only")
    pure = PurePosixPath(name)
    if (
        pure.is_absolute()
        or name.startswith(("/", "\\"))
        or ".." in pure.parts
        or "\\" in name
        or "\x00" in name
        or str(pure) != name
        or not pure.parts
        or any(p in ("", ".") for p in pure.parts)
    ):
        raise _bad(path, name, "not a plain relative name inside the package")
    if name in seen:
        raise _bad(path, name, "appears twice")
    if info.size > budget:
        raise _bad(path, name, f"{info.size} bytes, more than the {budget} bytes left to unpack")
    return name


def extract(path: Path, target: Path, *, max_bytes: int = MAX_TOTAL_BYTES) -> PackageManifest:
    """Unpack `path` into the new folder `target`, checked member by member and against the
    manifest; on any problem nothing is left behind."""
    if target.exists():
        raise UsageError(f"{target} exists", hint="unpack into a new folder")
    if not path.is_file():
        raise SpecError(f"{path}: no such package file")
    mode = _mode(path)
    work = target.parent / f".{target.name}.unpacking"
    if work.exists():
        shutil.rmtree(work)
    target.parent.mkdir(parents=True, exist_ok=True)
    work.mkdir()
    try:
        with _open(path, write=False, mode=mode) as raw:
            try:
                _extract_members(path, raw, work, max_bytes)
            except ReproError:
                raise
            except OSError as exc:
                if exc.errno is not None:
                    raise  # our own disk: full, not writable
                raise SpecError(f"{path}: the archive is damaged ({exc})") from None
            except Exception as exc:  # tarfile's, gzip's, lzma's, zstandard's own errors
                raise SpecError(f"{path}: the archive is damaged ({exc})") from None
        manifest = _read_manifest(path, work)
        _verify_files(path, work, manifest)
        work.replace(target)
        return manifest
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _extract_members(path: Path, raw: IO[bytes], work: Path, max_bytes: int) -> None:
    """Every member into `work`, each checked before it is written."""
    seen: set[str] = set()
    folders: set[str] = set()
    budget = max_bytes
    with tarfile.open(fileobj=raw, mode="r|") as tar:
        for info in tar:
            if len(seen) >= MAX_MEMBERS:
                raise _bad(path, info.name, f"more than {MAX_MEMBERS} members")
            name = _check_member(path, info, seen, budget)
            parents = {str(p) for p in PurePosixPath(name).parents if str(p) != "."}
            if name in folders or parents & seen:
                raise _bad(path, name, "a file and a folder of the same name")
            seen.add(name)
            folders |= parents
            budget -= info.size
            dest = work / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(info)
            assert src is not None
            with dest.open("xb") as out:
                shutil.copyfileobj(src, out, _CHUNK)


def _read_manifest(path: Path, root: Path) -> PackageManifest:
    file = root / MANIFEST
    if not file.is_file():
        raise SpecError(f"{path}: no {MANIFEST}: not a repro package")
    try:
        return PackageManifest.model_validate(json.loads(file.read_bytes()))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[:2]
        raise SpecError(f"{path}: {MANIFEST}: {' '.join(first)}") from None


def _verify_files(path: Path, root: Path, manifest: PackageManifest) -> None:
    """Every file is in the manifest with its size and sha256, and every listed file is there."""
    listed = {m.path: m for m in manifest.members}
    if len(listed) != len(manifest.members) or MANIFEST in listed:
        raise SpecError(f"{path}: {MANIFEST}: a member listed twice, or the manifest itself")
    present = {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != MANIFEST
    } | {str(p.relative_to(root)) for p in root.rglob(MANIFEST) if p.parent != root}
    extra = sorted(present - set(listed))
    if extra:
        raise _bad(path, extra[0], "not listed in the manifest")
    missing = sorted(set(listed) - present)
    if missing:
        raise SpecError(
            f"{path}: {missing[0]} is listed in the manifest but not in the archive",
            hint="the package is incomplete: get it again from its source",
        )
    for m in manifest.members:
        file = root / m.path
        size = file.stat().st_size
        got = sha256_file(file)
        if size != m.size or got != m.sha256:
            raise ArtifactError(
                f"{path}: {m.path}: sha256 {got[:16]}... ({size} bytes), the manifest says "
                f"{m.sha256[:16]}... ({m.size} bytes): the package was altered",
                hint="get the package again from its source",
            )


def read_manifest_only(path: Path) -> dict[str, Any]:
    """The manifest's JSON without unpacking (for `repro verify`'s summary)."""
    with (
        _open(path, write=False, mode=_mode(path)) as raw,
        tarfile.open(fileobj=raw, mode="r|") as tar,
    ):
        for info in tar:
            if info.name == MANIFEST and info.isreg():
                fh = tar.extractfile(info)
                assert fh is not None
                doc: dict[str, Any] = json.loads(fh.read())
                return doc
    raise SpecError(f"{path}: no {MANIFEST}")
