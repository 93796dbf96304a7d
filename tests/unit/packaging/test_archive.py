"""Package archives: a byte-identical, deterministic round trip; hostile archives refused with
nothing written outside (or inside) the target."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.digests import sha256_file
from repro.errors import ArtifactError, SpecError
from repro.packaging.archive import (
    Member,
    PackageManifest,
    Source,
    extract,
    write_package,
)


def _tree(tmp_path: Path) -> list[Source]:
    src = tmp_path / "src"
    (src / "specs").mkdir(parents=True)
    (src / "specs" / "x.json").write_text('{"name": "x"}\n')
    (src / "results" / "x" / "original").mkdir(parents=True)
    (src / "results" / "x" / "original" / "run.json").write_bytes(bytes(range(256)) * 100)
    return [
        Source("results/x/original/run.json", "original", src / "results/x/original/run.json"),
        Source("specs/x.json", "spec", src / "specs/x.json"),
    ]


def _manifest(sources: list[Source]) -> PackageManifest:
    return PackageManifest(
        spec="specs/x.json",
        spec_name="x",
        spec_id="a" * 64,
        repro_version="t",
        contents={},
        members=[
            Member(path=s.path, role=s.role, size=s.file.stat().st_size, sha256=sha256_file(s.file))
            for s in sources
        ],
    )


@pytest.mark.parametrize(
    "ending", [".repro.tar", ".repro.tar.gz", ".repro.tar.xz", ".repro.tar.zst"]
)
def test_round_trip_is_byte_identical_and_packing_is_deterministic(
    tmp_path: Path, ending: str
) -> None:
    sources = _tree(tmp_path)
    a, b = tmp_path / f"a{ending}", tmp_path / f"b{ending}"
    write_package(a, sources, _manifest(sources))
    write_package(b, sources, _manifest(sources))
    assert a.read_bytes() == b.read_bytes()
    manifest = extract(a, tmp_path / "out")
    assert manifest.spec == "specs/x.json"
    for s in sources:
        assert (tmp_path / "out" / s.path).read_bytes() == s.file.read_bytes()


def _hostile(tmp_path: Path, add: object, listed: list[str]) -> Path:
    """A package whose manifest (first, valid) lists a spec and `listed` (one byte each), then
    the spec and whatever `add(tar)` writes."""
    import hashlib

    one = {"size": 1, "sha256": hashlib.sha256(b"x").hexdigest()}
    doc = json.dumps(
        {
            "schema": "repro.package/v1",
            "spec": "s.json",
            "spec_name": "x",
            "spec_id": "a" * 64,
            "repro_version": "t",
            "contents": {},
            "members": [{"path": "s.json", "role": "spec", **one}]
            + [{"path": n, "role": "result", **one} for n in listed],
        }
    ).encode()
    path = tmp_path / "evil.repro.tar"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(doc)
        tar.addfile(info, io.BytesIO(doc))
        _file(tar, "s.json")
        add(tar)  # type: ignore[operator]
    return path


def _file(tar: tarfile.TarFile, name: str, data: bytes = b"x") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _link(tar: tarfile.TarFile, name: str, target: str, kind: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    tar.addfile(info)


@pytest.mark.parametrize(
    ("add", "listed", "why"),
    [
        (lambda t: _file(t, "../escape.txt"), [], "not a plain relative name"),
        (lambda t: _file(t, "../escape.txt"), ["../escape.txt"], "not a plain relative name"),
        (lambda t: _file(t, "/etc/evil.txt"), [], "not a plain relative name"),
        (lambda t: _file(t, "a/./b.txt"), [], "not a plain relative name"),
        (lambda t: _link(t, "link", "/etc/passwd", tarfile.SYMTYPE), ["link"], "a symbolic link"),
        (lambda t: _link(t, "hard", "../../etc/passwd", tarfile.LNKTYPE), ["hard"], "a hard link"),
        (lambda t: _link(t, "dev", "", tarfile.CHRTYPE), ["dev"], "a device or pipe"),
        (lambda t: _link(t, "fifo", "", tarfile.FIFOTYPE), ["fifo"], "a device or pipe"),
        (lambda t: (_file(t, "a.txt"), _file(t, "a.txt")), ["a.txt"], "appears twice"),
        (lambda t: (_file(t, "a"), _file(t, "a/b")), ["a", "a/b"], "a file and a folder"),
        (lambda t: _file(t, "extra.txt"), [], "not listed in the manifest"),
        (lambda t: _file(t, "big.txt", b"x" * 5000), ["big.txt"], "the manifest lists 1"),
    ],
)
def test_hostile_members_are_refused_and_nothing_is_written(
    tmp_path: Path, add: object, listed: list[str], why: str
) -> None:
    package = _hostile(tmp_path, add, listed)
    before = set(tmp_path.rglob("*"))
    with pytest.raises(SpecError, match=why):
        extract(package, tmp_path / "out")
    assert set(tmp_path.rglob("*")) == before  # no target, no leftover
    assert not (tmp_path.parent / "escape.txt").exists()
    assert not Path("/etc/evil.txt").exists()


def _raw_package(path: Path, manifest: PackageManifest, files: dict[str, bytes]) -> None:
    """A package as an attacker writes it: any manifest, any bytes."""
    with tarfile.open(path, "w") as tar:
        doc = manifest.model_dump_json(by_alias=True).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(doc)
        tar.addfile(info, io.BytesIO(doc))
        for name, data in files.items():
            _file(tar, name, data)


def test_a_member_whose_bytes_differ_from_the_manifest_is_an_integrity_error(
    tmp_path: Path,
) -> None:
    sources = _tree(tmp_path)
    manifest = _manifest(sources)
    package = tmp_path / "p.repro.tar"
    files = {s.path: s.file.read_bytes() for s in sources}
    files["specs/x.json"] = files["specs/x.json"].replace(b"x", b"y")  # same size, other bytes
    _raw_package(package, manifest, files)
    with pytest.raises(ArtifactError, match="the package was altered"):
        extract(package, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(tmp_path / "o2")])
    assert result.exit_code == 3, result.output
    assert not (tmp_path / "o2").exists()


def test_a_file_that_changes_while_it_is_packed_is_refused(tmp_path: Path) -> None:
    from repro.errors import UsageError

    sources = _tree(tmp_path)
    manifest = _manifest(sources)
    sources[1].file.write_text('{"name": "y"}\n')  # after its hash was taken
    with pytest.raises(UsageError, match="changed while it was packed"):
        write_package(tmp_path / "p.repro.tar", sources, manifest)
    assert not (tmp_path / "p.repro.tar").exists()


def test_files_missing_from_or_extra_to_the_manifest_are_refused(tmp_path: Path) -> None:
    sources = _tree(tmp_path)
    manifest = _manifest(sources)
    package = tmp_path / "p.repro.tar"
    files = {s.path: s.file.read_bytes() for s in sources}
    _raw_package(package, manifest, {"specs/x.json": files["specs/x.json"]})
    with pytest.raises(SpecError, match="listed in the manifest but not in the archive"):
        extract(package, tmp_path / "out")
    _raw_package(package, _manifest(sources[1:]), files)  # one file not listed
    with pytest.raises(SpecError, match="not listed in the manifest"):
        extract(package, tmp_path / "out")


def test_a_manifest_whose_spec_is_not_its_spec_member_is_refused(tmp_path: Path) -> None:
    sources = _tree(tmp_path)
    manifest = _manifest(sources)
    for spec in ("/etc/passwd", "../specs/x.json", "results/x/original/run.json"):
        manifest.spec = spec
        package = tmp_path / "p.repro.tar"
        write_package(package, sources, manifest)
        with pytest.raises(SpecError, match="is not a member listed with the role 'spec'"):
            extract(package, tmp_path / "out")


def test_an_oversized_member_is_refused_before_it_is_written(tmp_path: Path) -> None:
    sources = _tree(tmp_path)
    package = tmp_path / "p.repro.tar"
    write_package(package, sources, _manifest(sources))
    with pytest.raises(SpecError, match="more than the 1000 bytes"):
        extract(package, tmp_path / "out", max_bytes=1000)
    assert not (tmp_path / "out").exists()


def test_a_damaged_archive_and_a_foreign_file_are_bad_input(tmp_path: Path) -> None:
    sources = _tree(tmp_path)
    package = tmp_path / "p.repro.tar.gz"
    write_package(package, sources, _manifest(sources))
    data = package.read_bytes()
    package.write_bytes(data[: len(data) // 2])
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "damaged" in result.stderr or "not a readable archive" in result.stderr
    foreign = tmp_path / "f.repro.tar"
    foreign.write_text("hello")
    result = CliRunner().invoke(cli, ["verify", str(foreign)])
    assert result.exit_code == 2, result.output


def test_a_cached_artifact_whose_bytes_are_not_its_name_is_refused(tmp_path: Path) -> None:
    """The manifest is not signed: an attacker can list any bytes under a pinned name."""
    sources = _tree(tmp_path)
    forged = tmp_path / "forged"
    forged.write_bytes(b"other bytes")
    pinned = "c" * 64  # the sha256 the (signed) spec pins
    sources.append(Source(f"cache/{pinned}", "cached-artifact", forged))
    package = tmp_path / "p.repro.tar"
    _raw_package(package, _manifest(sources), {s.path: s.file.read_bytes() for s in sources})
    with pytest.raises(ArtifactError, match="named for sha256 cccc"):
        extract(package, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_unpacked_folder_has_the_umasks_mode_not_mkdtemps_private_one(
    tmp_path: Path,
) -> None:
    # it was extracted into a mkdtemp folder (0700) and renamed: private to its owner
    import os
    import stat

    sources = _tree(tmp_path)
    write_package(tmp_path / "a.repro.tar", sources, _manifest(sources))
    old = os.umask(0o022)
    try:
        extract(tmp_path / "a.repro.tar", tmp_path / "out")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755


def _with_manifest(tmp_path: Path, data: bytes) -> Path:
    """A package whose manifest member holds `data`."""
    package = tmp_path / "m.repro.tar"
    with tarfile.open(package, "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return package


def test_a_damaged_manifest_is_named_field_by_field(tmp_path: Path) -> None:
    """`unpack` of a damaged manifest printed one truncated pydantic line."""
    sources = _tree(tmp_path)
    doc = json.loads(_manifest(sources).model_dump_json(by_alias=True))
    doc["members"][0]["size"] = "big"
    doc["members"][1]["sha256"] = "xyz"
    del doc["spec_id"]
    package = _with_manifest(tmp_path, json.dumps(doc).encode())
    result = CliRunner().invoke(cli, ["unpack", str(package), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "manifest.json: invalid package manifest (3 problem(s))" in result.stderr
    for where in ("$.members[0].size", "$.members[1].sha256", "$.spec_id: required field"):
        assert where in result.stderr
    assert "pydantic" not in result.stderr
    assert "hint: the package is damaged" in result.stderr
    result = CliRunner().invoke(
        cli, ["unpack", str(_with_manifest(tmp_path, b"{nope")), "-o", str(tmp_path / "o2")]
    )
    assert result.exit_code == 2, result.output
    assert "manifest.json: not JSON" in result.stderr
