"""Where the catalog is: --track, REPRO_TRACKING_URI, .repro/config.toml, else off (or the
project's own SQLite file for a catalog command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.catalog.where import ENV, resolve
from repro.errors import SpecError, UsageError


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def _config(project: Path, text: str) -> None:
    (project / ".repro").mkdir()
    (project / ".repro" / "config.toml").write_text(text)


def test_off_unless_asked_and_the_project_file_for_a_catalog_command(tmp_path: Path) -> None:
    assert resolve(None, tmp_path) is None
    found = resolve(None, tmp_path, on=True)
    assert found is not None
    assert found.source == "default"
    assert found.uri == f"sqlite:///{tmp_path.resolve()}/.repro/catalog.db"
    assert found.artifacts == tmp_path.resolve() / ".repro" / "catalog-artifacts"


def test_the_flag_then_the_environment_then_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, '[catalog]\ntracking_uri = "http://config:5000"\n')
    assert resolve(None, tmp_path).uri == "http://config:5000"  # type: ignore[union-attr]
    monkeypatch.setenv(ENV, "http://env:5000")
    assert resolve(None, tmp_path).uri == "http://env:5000"  # type: ignore[union-attr]
    assert resolve("default", tmp_path).source == "default"  # type: ignore[union-attr]
    assert resolve("off", tmp_path) is None


def test_a_bad_config_or_uri_names_the_file_and_the_fix(tmp_path: Path) -> None:
    _config(tmp_path, "[catalog\n")
    with pytest.raises(SpecError, match=r"config\.toml: not TOML") as err:
        resolve(None, tmp_path)
    assert err.value.hint
    assert "tracking_uri" in err.value.hint
    with pytest.raises(UsageError, match="--track: 'ftp' is not a tracking store"):
        resolve("ftp://x", tmp_path)


def test_the_uri_is_shown_without_its_password(tmp_path: Path) -> None:
    found = resolve("https://bob:s3cret@mlflow.example:8443/x", tmp_path)
    assert found is not None
    assert found.shown == "https://mlflow.example:8443/x"
    assert "s3cret" not in found.shown


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("http://[::1", "is not a URI"),
        ("sqlite://", "in memory"),
        ("sqlite:///:memory:", "in memory"),
        ("file:///tmp/mlruns", "not a tracking store"),
    ],
)
def test_a_uri_that_cannot_keep_a_catalog_is_refused(tmp_path: Path, uri: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        resolve(uri, tmp_path)


def test_a_tracking_uri_outside_the_catalog_table_is_said(tmp_path: Path) -> None:
    """`.repro/config.toml`'s tracking_uri at the top level was silently ignored."""
    (tmp_path / ".repro").mkdir()
    (tmp_path / ".repro" / "config.toml").write_text('tracking_uri = "default"\n')
    with pytest.raises(SpecError, match=r"outside the \[catalog\] table"):
        resolve(None, tmp_path)
