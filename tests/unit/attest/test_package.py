"""A package's signature statement and the image check, without a key or Docker."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from repro.attest.package import PACKAGE_PREDICATE, _image_id, package_statement
from repro.packaging.archive import Member


def _save(path: Path, config: bytes, named: str | None = None) -> Path:
    digest = hashlib.sha256(config).hexdigest()
    with tarfile.open(path, "w") as tar:
        for name, data in (
            ("manifest.json", json.dumps([{"Config": f"{named or digest}.json"}]).encode()),
            (f"{named or digest}.json", config),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_statement_lists_every_member_by_name_and_digest() -> None:
    members = [
        Member(path="b.json", role="spec", size=1, sha256="b" * 64),
        Member(path="a/c.onnx", role="artifact", size=2, sha256="c" * 64),
    ]
    statement = package_statement(members, spec="b.json", spec_name="x", spec_id_="d" * 64)
    assert statement["predicateType"] == PACKAGE_PREDICATE
    assert statement["subject"] == [
        {"name": "a/c.onnx", "digest": {"sha256": "c" * 64}},
        {"name": "b.json", "digest": {"sha256": "b" * 64}},
    ]
    assert statement["predicate"] == {"spec": "b.json", "spec_name": "x", "spec_id": "d" * 64}


def test_an_image_archive_is_its_configs_digest_or_nothing(tmp_path: Path) -> None:
    config = b'{"architecture": "amd64"}'
    good = _save(tmp_path / "good.tar", config)
    assert _image_id(good) == "sha256:" + hashlib.sha256(config).hexdigest()
    lying = _save(tmp_path / "lying.tar", config, named="0" * 64)  # named for other bytes
    assert _image_id(lying) is None
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    assert _image_id(tmp_path / "junk.tar") is None
