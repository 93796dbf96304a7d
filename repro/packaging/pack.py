"""Use case: `repro pack SPEC -o NAME.repro.tar[.gz|.xz|.zst]`, `repro unpack`, and opening a
package for `repro replay PACKAGE`.

A package keeps the spec byte for byte (so its id, and the original's, stay what they were):
the spec and every file it names by a relative path (path artifacts, lock files, the flake, the
original results) go in at their places relative to the folder that holds them all, so the
spec's relative paths resolve inside the unpacked package as they did beside it. On request it
adds every artifact's verified bytes (`cache/<sha256>`), the Python lock's wheels (`wheels/`),
the Docker image (`image/image.tar`, `docker save`) and the spec's other finished runs
(`runs/<run-id>/`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from repro import __version__, _subprocess
from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetching import fetch_all
from repro.attest.package import SIGNATURE, sign_members
from repro.digests import sha256_file
from repro.environments.registry import FACES
from repro.errors import ArtifactError, EnvironmentSetupError, SpecError, UsageError
from repro.formats.nix.flake_files import credential_reason, flake_files
from repro.packaging.archive import (
    MANIFEST,
    MAX_TOTAL_BYTES,
    Member,
    PackageManifest,
    Role,
    Source,
    _mode,
    _open,
    _parse_manifest,
    check_cached_name,
    extract,
    read_manifest,
    write_package,
)
from repro.runs import layout
from repro.runs.store import list_runs
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec
from repro.spec.paths import resolve_path
from repro.spec.references import paths_outside, references

Reporter = Callable[[str], None]
PACKAGE_ENDINGS = (".repro.tar", ".repro.tar.gz", ".repro.tgz", ".repro.tar.xz", ".repro.tar.zst")
#: a flake folder larger than this is not packed whole (a flake is a few small files)
_FLAKE_MAX_FILES = 200


def is_package(path: Path) -> bool:
    """Whether a path names a package (by its ending)."""
    return path.name.endswith(PACKAGE_ENDINGS)


@dataclass(frozen=True)
class PackOptions:
    with_artifacts: bool = False
    with_wheels: bool = False
    with_image: bool = False
    with_results: bool = False


def _files_of(folder: Path, *, limit: int) -> list[Path]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if len(files) > limit:
        raise UsageError(f"{folder}: more than {limit} files; not packed whole")
    return files


def _referenced(spec: ExperimentSpec, spec_path: Path, report: Reporter) -> list[tuple[Path, Role]]:
    """The spec and the files it names by relative path, absolute, with their roles."""

    base = spec_path.parent
    out: list[tuple[Path, Role]] = [(_absolute(spec_path), "spec")]
    attestation = spec_path.with_name(spec_path.name + ".intoto.json")
    if attestation.is_file():
        out.append((_absolute(attestation), "attestation"))

    def named(path: str, field: str) -> Path:
        if Path(path).is_absolute():
            raise UsageError(
                f"{spec_path}: {field}: {path} is an absolute path; a package keeps the spec "
                "as it is, so the files it names must be relative to it",
                hint="move the file beside the spec (or below its parent) and name it relatively",
            )
        # absolute but not resolved: a folder reached through a link keeps its place
        resolved = _absolute(resolve_path(path, base))
        if not resolved.exists():
            raise SpecError(f"{spec_path}: {field}: {resolved} does not exist")
        return resolved

    for ref in references(spec):
        if ref.kind == "artifact":
            file = named(ref.path, ref.field)
            name = ref.key
            want = spec.artifacts[name].sha256
            got = sha256_file(file)
            if got != want:  # what ships is the pin
                raise ArtifactError(
                    f"{spec_path}: $.artifacts.{name}: {file} has sha256 {got[:16]}..., the spec "
                    f"pins {want[:16]}...",
                    hint="restore the file the spec pins, or re-capture the spec",
                )
            out.append((file, "artifact"))
        elif ref.kind == "lock":
            out.append((named(ref.path, ref.field), "lock"))
        elif ref.kind == "flake":
            folder = named(ref.path, ref.field)
            taken = flake_files(folder, limit=_FLAKE_MAX_FILES)
            out += [(f, "flake") for f in taken.files]
            _say_left_out(folder, taken.left_out, report)
        elif not resolve_path(ref.path, base).is_dir():
            report(f"note: the spec's original ({ref.path}) is not here: packed without it")
        else:
            folder = named(ref.path, ref.field)
            out += [(f, "original") for f in _run_files(folder, report)]
    return out


def _run_files(run: Path, report: Reporter) -> list[Path]:
    """The files of a run folder that travel: all but those that look like credentials (a
    `.env` or `.netrc` someone left there is no part of the run), each of those said."""
    files: list[Path] = []
    left_out: list[tuple[str, str]] = []
    for f in _files_of(run, limit=100_000):
        rel = f.relative_to(run).as_posix()
        why = credential_reason(rel)
        if why is None:
            files.append(f)
        else:
            left_out.append((rel, why))
    _say_left_out(run, left_out, report)
    return files


def _say_left_out(folder: Path, left_out: list[tuple[str, str]], report: Reporter) -> None:
    """One line per file of a folder that is not packed (at most 10, then a count)."""
    for rel, why in left_out[:10]:
        report(f"note: not packed: {folder / rel} ({why})")
    if len(left_out) > 10:
        report(f"note: not packed: {len(left_out) - 10} more files of {folder}")


def _absolute(path: Path) -> Path:
    """Absolute, `..` folded, links not followed (a folder reached through a link keeps its
    place in the package)."""
    return Path(os.path.normpath(Path.cwd() / path))


def _private_key(file: Path) -> bool:
    """A PEM private key (a signing key must never travel in a package)."""
    if file.stat().st_size > 64 * 1024:
        return False
    with file.open("rb") as fh:
        head = fh.read(4096)
    return b"PRIVATE KEY-----" in head


def pack(
    spec: ExperimentSpec,
    spec_path: Path,
    out: Path,
    opts: PackOptions,
    *,
    cache: ArtifactCache,
    results_dir: Path,
    report: Reporter,
    signer: Any | None = None,
) -> PackageManifest:
    """Write the package; its manifest. With `signer`, the package carries its signature: a
    signed statement of every member's sha256 (`package.intoto.json`)."""
    if out.exists() and not _is_our_package(out):
        raise UsageError(
            f"{out}: exists and is not a repro package; not overwritten",
            hint="choose another name, or remove the file",
        )
    refs = _referenced(spec, spec_path, report)
    root = Path(os.path.commonpath([str(p.parent) for p, _ in refs]))
    sources: dict[str, Source] = {}

    def add(name: str, role: Role, file: Path) -> None:
        if _private_key(file):
            raise UsageError(
                f"{file}: a private key; it is never packed",
                hint="move it out of the folders the spec names (keys belong in "
                "~/.config/repro/keys)",
            )
        if name not in sources:
            sources[name] = Source(name, role, file)

    for file, role in refs:
        add(PurePosixPath(*file.relative_to(root).parts).as_posix(), role, file)
    with tempfile.TemporaryDirectory(prefix="repro-pack-") as tmp:
        scratch = Path(tmp)
        if opts.with_artifacts:
            _add_artifacts(spec, spec_path, cache, add, report)
            if spec.environment.manager == "spack":
                _add_spack_mirror(spec, spec_path, scratch, add, report)
        if opts.with_wheels:
            _add_wheels(spec, spec_path, scratch, add, report)
        if opts.with_image:
            _add_image(spec, spec_path, scratch, add, report)
        if opts.with_results:
            _add_results(spec, results_dir, add, report)
        members = []
        total = 0
        for name in sorted(sources):
            src = sources[name]
            size = src.file.stat().st_size
            total += size
            if total > MAX_TOTAL_BYTES:
                raise UsageError(
                    f"the package would be larger than {MAX_TOTAL_BYTES // 2**30} GiB",
                    hint="leave out --with-image or --with-results",
                )
            members.append(
                Member(path=name, role=src.role, size=size, sha256=sha256_file(src.file))
            )
        spec_member = PurePosixPath(*_absolute(spec_path).relative_to(root).parts).as_posix()
        if signer is not None:
            members.append(_signature(members, spec_member, spec, signer, scratch, sources))
        manifest = PackageManifest(
            spec=spec_member,
            spec_name=spec.name,
            spec_id=spec_id(spec),
            repro_version=__version__,
            contents={
                "artifacts": opts.with_artifacts,
                "wheels": opts.with_wheels,
                "image": opts.with_image,
                "results": opts.with_results,
            },
            members=members,
        )
        write_package(out, [sources[m.path] for m in members], manifest)
    return manifest


def _signature(
    members: list[Member],
    spec_member: str,
    spec: ExperimentSpec,
    signer: Any,
    scratch: Path,
    sources: dict[str, Source],
) -> Member:
    """The package's signature member, over every other member."""

    if SIGNATURE in sources:
        raise UsageError(
            f"{sources[SIGNATURE].file}: a file named {SIGNATURE} at the package's root; the "
            "package's signature has that name",
            hint="rename or move the file",
        )
    out = scratch / SIGNATURE
    fields = {"spec": spec_member, "spec_name": spec.name, "spec_id": spec_id(spec)}
    sign_members(members, fields, signer, out)
    sources[SIGNATURE] = Source(SIGNATURE, "signature", out)
    return Member(
        path=SIGNATURE, role="signature", size=out.stat().st_size, sha256=sha256_file(out)
    )


def _add_artifacts(
    spec: ExperimentSpec,
    spec_path: Path,
    cache: ArtifactCache,
    add: Callable[[str, Role, Path], None],
    report: Reporter,
) -> None:
    """Every artifact's verified bytes by hash (recipes generated, URLs downloaded, once)."""

    for name, m in fetch_all(spec, spec_path, cache=cache, progress=report).items():
        if spec.artifacts[name].path is None:
            add(f"cache/{spec.artifacts[name].sha256}", "cached-artifact", m.path)


def _add_spack_mirror(
    spec: ExperimentSpec,
    spec_path: Path,
    scratch: Path,
    add: Callable[[str, Role, Path], None],
    report: Reporter,
) -> None:
    """The sources the spec's spack.lock needs (`repro spack mirror`), so that `repro replay
    PACKAGE --env spack` installs the environment offline."""
    from repro.environments.spack.manager import SpackManager, pinned_environment
    from repro.environments.spack.mirror import make_mirror

    if not SpackManager.available()[0]:
        report(
            "no Spack here: the package carries no source mirror of its Spack environment "
            "(pack where Spack is, or `repro spack mirror SPEC` there)"
        )
        return
    env_dir = pinned_environment(SpackManager(report), spec, spec_path, scratch / "spack-env")
    mirror = scratch / "spack-mirror"
    make_mirror(env_dir, mirror, report=report)
    for f in sorted(p for p in mirror.rglob("*") if p.is_file()):
        add(f"spack-mirror/{f.relative_to(mirror).as_posix()}", "spack-source", f)


def _add_wheels(
    spec: ExperimentSpec,
    spec_path: Path,
    scratch: Path,
    add: Callable[[str, Role, Path], None],
    report: Reporter,
) -> None:
    """The Python lock's wheels, downloaded by pip and checked against the lock's hashes."""
    import sys

    lock = spec.environment.python_lock
    if lock is None:
        raise UsageError(f"{spec_path}: --with-wheels: the spec has no Python lock")
    lock_path = resolve_path(lock.path, spec_path.parent)
    wheels = scratch / "wheels"
    hashes = bool(getattr(spec.environment, "hashes_complete", True))
    report(f"downloading the wheels of {lock.path}")
    proc = _subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            *(["--require-hashes"] if hashes else []),
            "-r",
            str(lock_path),
            "-d",
            str(wheels),
        ],
        timeout_s=3600,
    )
    if proc.returncode != 0:
        raise EnvironmentSetupError(
            f"--with-wheels: pip could not download the lock's wheels: "
            f"{(proc.stderr or proc.stdout).strip()[-800:]}",
            hint="a package index must be reachable when packing with --with-wheels",
        )
    for wheel in sorted(wheels.iterdir()):
        add(f"wheels/{wheel.name}", "wheel", wheel)


def _add_image(
    spec: ExperimentSpec,
    spec_path: Path,
    scratch: Path,
    add: Callable[[str, Role, Path], None],
    report: Reporter,
) -> None:
    """The spec's pinned Docker image, as `docker save` writes it."""

    image_id = getattr(spec.environment, "image_id", None)
    if image_id is None:
        raise UsageError(
            f"{spec_path}: --with-image: $.environment.image_id: the spec pins no Docker image",
            hint="capture it with --env-manager docker (or `repro image SPEC`) first",
        )
    docker = _subprocess.which("docker")
    if docker is None:
        raise EnvironmentSetupError("--with-image: `docker` is not on PATH")
    target = scratch / "image.tar"
    report(f"saving image {image_id[:19]}")
    proc = _subprocess.run([docker, "save", "-o", str(target), image_id], timeout_s=3600)
    if proc.returncode != 0:
        raise EnvironmentSetupError(
            f"--with-image: docker save {image_id[:19]} failed: {proc.stderr.strip()[-500:]}",
            hint=f"build it first: `repro image {spec_path}`",
        )
    add("image/image.tar", "image", target)


def _add_results(
    spec: ExperimentSpec,
    results_dir: Path,
    add: Callable[[str, Role, Path], None],
    report: Reporter,
) -> None:
    """The spec's finished runs (not partial ones, not the original: that is in already)."""

    for run in list_runs(layout.spec_results(results_dir, spec.name)):
        if run.name == layout.ORIGINAL_RUN_ID:
            continue
        for f in _run_files(run, report):
            add(f"runs/{run.name}/{f.relative_to(run).as_posix()}", "result", f)


def _is_our_package(path: Path) -> bool:
    """A regular file whose first member is a manifest (a package repro wrote)."""
    import tarfile

    if not path.is_file():
        return False
    try:
        with (
            _open(path, write=False, mode=_mode(path)) as raw,
            tarfile.open(fileobj=raw, mode="r|") as tar,
        ):
            first = tar.next()
            return first is not None and first.name == MANIFEST
    except Exception:
        return False


def unpack(package: Path, target: Path) -> PackageManifest:
    """The package extracted into the new folder `target`, every hash checked."""
    return extract(package, target)


def open_package(package: Path, cache: ArtifactCache) -> tuple[Path, PackageManifest]:
    """The package unpacked under the cache, by its sha256: its folder and manifest. A folder
    unpacked before (by this or another process) is used in place once every file is checked
    against the manifest; it is never removed while another replay may be using it, only when
    its bytes are wrong. The copy is checked against the package's own manifest, read from
    the package (an edited copy whose manifest was edited to match is unpacked again). Its
    cached artifacts are put into the artifact cache."""
    import fcntl

    if not package.is_file():
        raise SpecError(f"{package}: no such package file")
    digest = sha256_file(package)
    packages = cache.root / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    folder = packages / digest
    with (packages / f".{digest}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest = _unpacked_copy(package, folder)
        if manifest is None:
            if folder.is_symlink():
                folder.unlink()
            elif folder.exists():
                shutil.rmtree(folder)  # the copy differs from the package: unpacked again
            manifest = extract(package, folder)
        for m in manifest.of_role("cached-artifact"):
            check_cached_name(package, m.path, m.sha256)  # its bytes are m.sha256 (checked)
            sha = m.sha256
            if not cache.path_for(sha).is_file():
                with cache.staging(sha) as staged:
                    shutil.copyfile(folder / m.path, staged)
                    cache.commit(staged, sha)
    return folder, manifest


def _unpacked_copy(package: Path, folder: Path) -> PackageManifest | None:
    """The manifest of the copy of `package` unpacked in `folder` before, when that copy is
    the package's: its manifest the bytes the package holds (read from the package, never
    taken from the copy), every member there with its sha256, and no other file; else None."""
    if not (folder / MANIFEST).is_file() or folder.is_symlink():
        return None
    held = read_manifest(package)
    if (folder / MANIFEST).read_bytes() != held:
        return None
    manifest = _parse_manifest(package, held)
    listed = {m.path for m in manifest.members} | {MANIFEST}
    for file in folder.rglob("*"):
        name = file.relative_to(folder).as_posix()
        if file.is_symlink() or (file.is_file() and name not in listed):
            return None
    for m in manifest.members:
        file = folder / m.path
        if file.is_symlink() or not file.is_file() or sha256_file(file) != m.sha256:
            return None
    return manifest


def check_inside(spec: ExperimentSpec, spec_path: Path, root: Path, package: Path) -> bool:
    """Refuse a packaged spec that names a file outside its package (exit 2, the field named);
    whether its original is inside (one packed without it names a folder outside: the replay
    then has no original, and reads nothing there)."""
    outside = paths_outside(spec, spec_path, root)
    files = [ref for ref in outside if ref.kind != "original"]
    if files:
        ref = files[0]
        raise SpecError(
            f"{package}: {ref.field}: {ref.path} resolves outside the package; a replay from a "
            "package reads only the package's own files",
            hint="this package was altered or not made by `repro pack`: get it again from its "
            "source",
        )
    return not any(ref.kind == "original" for ref in outside)


def offline_gaps(
    spec: ExperimentSpec, root: Path, manifest: PackageManifest, env_name: str, cache: ArtifactCache
) -> tuple[list[str], list[str]]:
    """What a replay from the package needs from outside: (missing for certain, needed only if
    not already on this machine)."""
    certain: list[str] = []
    maybe: list[str] = []
    for name, art in spec.artifacts.items():
        if art.path is None and art.recipe is None and not cache.path_for(art.sha256).is_file():
            certain.append(
                f"artifact {name!r} (sha256 {art.sha256[:12]}...) downloads from {art.url}: not "
                "in the package (pack with --with-artifacts) and not in this machine's cache"
            )
    manager = spec.environment.manager if env_name == "auto" else env_name
    face = FACES.get("venv" if manager == "auto" else manager)
    need = face.offline_need if face is not None else None
    if need is not None and (need.role is None or not manifest.of_role(need.role)):
        maybe.append(need.what)
    return certain, maybe
