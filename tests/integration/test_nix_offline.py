"""`--env auto` with nix installed but offline: decided once, in a quick check, and said why.

A fake `nix` on PATH behaves as Debian's nix-bin does on a machine without network: fetching the
flake's GitHub input fails, after Nix's own retries (five attempts, ~9.5 s) unless it is told
to try once. It records every call, so the test sees what repro asked of it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import ClassVar

import pytest

from repro.environments import registry
from repro.environments.nix import manager as nix
from repro.spec.io import load_spec
from tests.fakes import FakeManager

FAKE_NIX = """#!/bin/sh
echo "$*" >> "{calls}"
if [ -f "{calls}.seeded" ]; then  # the store holds the shell: it is entered at once
  echo /nix/store/abc-python3/bin/python; echo /nix/store/abc-python3; exit 0
fi
url="https://github.com/nixos/nixpkgs/archive/2fc6539b481e1d2569f25f8799236694180c0993.tar.gz"
case " $* " in
  *" download-attempts 1 "*) ;;
  *) echo "warning: error: unable to download '$url': Couldn't resolve host name (6);" \
       "retrying in 262 ms" >&2
     sleep 1 ;;
esac
echo "error: unable to download '$url': Couldn't resolve host name (6)" >&2
exit 1
"""


class FakeVenv(FakeManager):
    name: ClassVar[str] = "venv"


@pytest.fixture
def offline_nix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake offline `nix` first on PATH; the file its calls are written to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "nix-calls.txt"
    fake = bin_dir / "nix"
    fake.write_text(FAKE_NIX.format(calls=calls))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(nix, "_CHECKED", {}, raising=False)  # a fresh process
    monkeypatch.setitem(registry.MANAGERS, "venv", FakeVenv)
    monkeypatch.setattr(FakeManager, "realized", [])
    return calls


def test_auto_decides_once_with_a_quick_check_and_says_why(root: Path, offline_nix: Path) -> None:
    spec_path = root / "specs" / "ort-digits.json"
    spec = load_spec(spec_path)
    assert spec.environment.manager == "nix"
    first = registry.realize("auto", spec, spec_path, root / "unused")
    second = registry.realize("auto", spec, spec_path, root / "unused")
    assert first.manager == second.manager == "venv"
    assert "captured manager 'nix' is not usable here (a quick check of nix" in first.reason
    assert "Couldn't resolve host name" in first.reason
    assert "fell back to venv" in first.reason
    calls = offline_nix.read_text().splitlines()
    assert len(calls) == 1  # once per process and flake: the second command asked nobody
    assert "download-attempts 1" in calls[0]  # never Nix's own slow retries
    assert "develop" in calls[0]
    assert FakeManager.realized == ["venv", "venv"]


def test_an_explicit_nix_still_waits_for_nixs_own_retries(root: Path, offline_nix: Path) -> None:
    from repro.errors import EnvironmentSetupError

    spec_path = root / "specs" / "ort-digits.json"
    with pytest.raises(EnvironmentSetupError, match="Couldn't resolve host name"):
        registry.realize("nix", load_spec(spec_path), spec_path, root / "unused")
    (call,) = offline_nix.read_text().splitlines()
    assert "download-attempts" not in call


def test_a_store_that_holds_the_shell_is_entered_once(root: Path, offline_nix: Path) -> None:
    """Pre-seeded (the README's air-gapped way): the quick check enters the shell, auto takes
    nix, and the realization uses what the check printed instead of entering again."""
    offline_nix.with_name(f"{offline_nix.name}.seeded").touch()
    spec_path = root / "specs" / "ort-digits.json"
    env = registry.realize("auto", load_spec(spec_path), spec_path, root / "unused")
    assert env.manager == "nix"
    assert "the captured manager 'nix' is available" in env.reason
    assert env.details["python"] == "/nix/store/abc-python3/bin/python"
    assert len(offline_nix.read_text().splitlines()) == 1
