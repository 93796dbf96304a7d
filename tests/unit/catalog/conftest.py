"""The catalog's tests against MLflow's real SQLite store (the `repro[mlflow]` extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.catalog.where import ENV


@pytest.fixture
def mlflow_installed() -> None:
    pytest.importorskip(
        "mlflow.tracking", reason="MLflow's client is not installed: pip install -e '.[mlflow]'"
    )
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy is not installed (repro[mlflow])")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_installed: None) -> Path:
    """A project folder as the working directory, no tracking URI from outside."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path
