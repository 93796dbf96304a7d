"""A served run's server processes: its log kept without a home path (transformers names the model
folder it loads, in the cache under the home directory); every live server counted as ours."""

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


def test_every_live_server_is_the_experiments_cpu_not_other_work() -> None:
    """Paired rounds run two servers: a side's probes counted the other side's server, busy
    with its own tests, as other work (the busy-rounds rule held it against the rounds)."""
    import subprocess
    import sys
    import time

    from repro.servers import process as servers

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    procs = [
        subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"], start_new_session=True)
        for _ in range(2)
    ]
    sides = [servers.ServerProcess(None, Path("m"), None, Path("log")) for _ in procs]  # type: ignore[arg-type]
    try:
        time.sleep(0.1)
        for side, proc in zip(sides, procs, strict=True):
            side.proc = proc
            servers._LIVE[id(side)] = side
        deadline = time.monotonic() + 20
        while servers.live_cpu_seconds() < 0.55 and time.monotonic() < deadline:
            time.sleep(0.1)
        both = servers.live_cpu_seconds()
        one = sides[0].cpu_seconds()
        assert both >= 0.55  # the two groups' 0.3 s each (a tick's rounding aside)
        assert both > one
    finally:
        for side, proc in zip(sides, procs, strict=True):
            servers._LIVE.pop(id(side), None)
            proc.kill()
            proc.wait()
    assert servers.live_cpu_seconds() == 0.0
