"""Shared fixtures: paths, the published fixtures beside the checkout, and a private cache."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def shared_fixtures() -> Path:
    """../shared/fixtures: real published MLPerf trees and lock files (absent in a user's clone)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} is absent: the published fixtures come with the dev setup")
    return SHARED_FIXTURES


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private artifact cache for the test."""
    path = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE_DIR", str(path))
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the session's real runs, so recipes are generated once."""
    return tmp_path_factory.mktemp("shared-cache")


#: markers for what this machine cannot do; such tests run only when asked for
OPT_IN = {
    "network": "REPRO_TEST_NETWORK",
    "spack": "REPRO_TEST_SPACK",
    "docker": "REPRO_TEST_DOCKER",
    "slurm": "REPRO_TEST_SLURM",
    "gpu": "REPRO_TEST_GPU",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import os

    for item in items:
        for marker, variable in OPT_IN.items():
            if item.get_closest_marker(marker) and not os.environ.get(variable):
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"needs {marker}: set {variable}=1 to run it (see CONTRIBUTING.md)"
                    )
                )
