"""A cache entry whose bytes do not match its name is an error, never silently produced again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import materialize
from repro.cli import cli
from repro.errors import ArtifactError
from repro.spec.models import Artifact
from tests.helpers import portable_spec


def _corrupt_entry(cache: ArtifactCache, digest: str, content: bytes) -> Path:
    entry = cache.path_for(digest)
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_bytes(content)
    entry.chmod(0o444)  # as the cache commits its files
    return entry


def test_corrupt_entry_is_an_error_naming_artifact_path_and_both_digests(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    cache = ArtifactCache(tmp_path / "c")
    entry = _corrupt_entry(cache, digest, b"bit rot")
    with pytest.raises(ArtifactError) as info:
        materialize(
            "model", Artifact(path="model.bin", sha256=digest), base_dir=tmp_path, cache=cache
        )
    msg = info.value.message
    assert "'model'" in msg
    assert str(entry) in msg
    assert digest in msg
    assert hashlib.sha256(b"bit rot").hexdigest() in msg
    assert info.value.hint is not None
    assert f"rm -f {entry}" in info.value.hint
    assert "repro fetch" in info.value.hint
    assert info.value.exit_code == 3
    # left as found, for the user to look at
    assert entry.read_bytes() == b"bit rot"


def test_repro_fetch_exits_3_on_a_corrupt_entry(root: Path, tmp_path: Path) -> None:
    raw = portable_spec(root, "ort-digits")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(raw))
    cache = ArtifactCache(tmp_path / "c")
    pinned = raw["artifacts"]["model"]["sha256"]
    entry = _corrupt_entry(cache, pinned, b"not an onnx model")
    result = CliRunner().invoke(cli, ["fetch", str(spec), "--cache-dir", str(cache.root)])
    assert result.exit_code == 3, result.output
    assert pinned in result.stderr
    assert hashlib.sha256(b"not an onnx model").hexdigest() in result.stderr
    assert f"rm -f {entry}" in result.stderr
    assert entry.read_bytes() == b"not an onnx model"
