"""A served run keeps its server's log, never a home path in it (transformers names the model
folder it loads, in the cache under the home directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.servers.process import _redact_log


def test_the_home_directory_in_a_servers_log_is_written_as_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/alice")
    log = tmp_path / "server-1.log"
    log.write_bytes(
        b"[transformers] Loading /home/alice/.cache/repro/trees/8d/8dbb\n"
        b"Loading weights: 0%\rLoading weights: 100%\n/root/x.py:1: UserWarning\n"
    )
    _redact_log(log)
    assert log.read_bytes() == (
        b"[transformers] Loading ~/.cache/repro/trees/8d/8dbb\n"
        b"Loading weights: 0%\rLoading weights: 100%\n<home>/x.py:1: UserWarning\n"
    )
