"""`repro fetch` against real sources: recipes offline, file:// URLs, wrong pins."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from click.testing import CliRunner

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import materialize
from repro.cli import cli
from repro.spec.models import Artifact
from tests.helpers import portable_spec


def test_fetch_digits_spec_offline(root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["fetch", str(root / "specs" / "ort-digits.json"), "--cache-dir", str(tmp_path), "--json"],
    )
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["artifact"] for r in rows} == {"model", "dataset"}
    for r in rows:
        assert hashlib.sha256(Path(r["path"]).read_bytes()).hexdigest() == r["sha256"]


def test_file_url_download(tmp_path: Path) -> None:
    src = tmp_path / "w.bin"
    src.write_bytes(b"abc" * 1000)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    m = materialize(
        "w",
        Artifact(url=src.as_uri(), sha256=digest),
        base_dir=tmp_path,
        cache=ArtifactCache(tmp_path / "c"),
    )
    assert m.origin == "url"
    assert m.path.read_bytes() == src.read_bytes()


def test_fetch_with_wrong_pin_exits_3_and_caches_nothing(data_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["fetch", str(data_dir / "specs" / "bad-artifact-hash.json"), "--cache-dir", str(tmp_path)],
    )
    assert result.exit_code == 3
    assert "sha256 mismatch: expected 0000" in result.stderr
    assert not (tmp_path / "sha256" / "00").exists() or not any(
        (tmp_path / "sha256" / "00").iterdir()
    )


def test_missing_url_exits_3(tmp_path: Path) -> None:
    spec = portable_spec(Path(__file__).parents[2], "ort-digits")
    spec["artifacts"]["dataset"] = {"url": (tmp_path / "gone.npz").as_uri(), "sha256": "1" * 64}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec))
    result = CliRunner().invoke(cli, ["fetch", str(path), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 3, result.stderr
    assert "download of" in result.stderr
