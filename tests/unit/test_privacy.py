"""The allow-list of recorded variables, secret names, and home-path redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.environments.base import worker_environment
from repro.machine.fingerprint import collect
from repro.privacy import RESULT_VARIABLES, is_secret_name, redact, redact_text, result_variables


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "someone"
    monkeypatch.setenv("HOME", str(home))
    for name in RESULT_VARIABLES:  # this machine's own settings (OPENBLAS_CORETYPE, ...)
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "TF_TOKEN_app_terraform_io": "tok",
        "TF_VAR_region": "eu",
        "NVIDIA_API_KEY": "key",
        "CUDA_HOME": "/opt/cuda",
        "OMP_NUM_THREADS": "2",
        "MALLOC_CONF": f"prof_prefix:{home}/jeprof",
    }.items():
        monkeypatch.setenv(name, value)
    return home


def test_only_allow_listed_variables_are_recorded(planted: Path) -> None:
    recorded = result_variables()
    assert recorded == {"MALLOC_CONF": "prof_prefix:~/jeprof", "OMP_NUM_THREADS": "2"}
    assert collect()["variables"] == recorded


def test_workers_get_no_unlisted_variable(planted: Path) -> None:
    env = worker_environment()
    assert "TF_TOKEN_app_terraform_io" not in env
    assert "NVIDIA_API_KEY" not in env
    assert env["OMP_NUM_THREADS"] == "2"


@pytest.mark.parametrize(
    "name", ["GITHUB_TOKEN", "NVIDIA_API_KEY", "db_password", "X_AUTH", "OMP_SECRET"]
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


def test_home_is_redacted_as_a_path_only(planted: Path) -> None:
    home = str(planted)
    assert redact_text(f"{home}/.cache/repro") == "~/.cache/repro"
    assert redact_text(home) == "~"
    assert redact_text(f"{home}x/other") == f"{home}x/other"  # another folder, not home
    assert redact({"k": [f"a {home}/b", 3], f"{home}/key": None}) == {
        "k": ["a ~/b", 3],
        "~/key": None,
    }


def test_other_users_homes_and_root_are_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    from repro.privacy import redact_text

    monkeypatch.setenv("HOME", "/home/me")
    assert redact_text("XLA_FLAGS=/home/alice/dump") == "XLA_FLAGS=<home>/dump"
    assert redact_text("PATH=/home/me/bin:/root/bin") == "PATH=~/bin:<home>/bin"
    assert redact_text("/srv/root/data /home") == "/srv/root/data /home"  # not a home


def test_a_results_table_names_no_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from repro.cli import cli
    from tests.helpers import published_result

    monkeypatch.setenv("HOME", str(tmp_path))
    published_result(tmp_path / "tree")
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["results", str(tmp_path / "tree"), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert str(tmp_path) not in out.read_text()
    assert "~/tree/closed/Acme" in out.read_text()
