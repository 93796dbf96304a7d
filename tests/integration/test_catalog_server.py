"""The catalog's team store, for real: PostgreSQL (Debian's), an `mlflow server` on it with a
local artifact folder, repro logging to it over HTTP, and the MLflow UI read in headless
Chromium (the verdict tag and the metrics on the page of the experiment and of the run).

The server is a full MLflow (`mlflow server` needs its UI and web stack, which repro's
`repro[mlflow]` client extra leaves out): REPRO_TEST_MLFLOW_SERVER names its `mlflow`
executable (.ci/run installs one in a virtual environment of its own). Everything started here
is stopped by its PID (the server's process group) or its data folder (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.catalog.where import ENV
from repro.cli import cli
from tests.helpers import make_run

MLFLOW = os.environ.get("REPRO_TEST_MLFLOW_SERVER")
INITDB = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(
        not MLFLOW or not os.access(MLFLOW, os.X_OK),
        reason="set REPRO_TEST_MLFLOW_SERVER to the `mlflow` executable of a full MLflow "
        "install (.ci/run makes one: pip install mlflow==3.17.2 psycopg2-binary)",
    ),
    pytest.mark.skipif(
        not INITDB, reason="PostgreSQL is not installed (apt-get install postgresql)"
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: its tools run as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """PostgreSQL in a folder of its own and an `mlflow server` on it; its URL."""
    assert MLFLOW is not None
    # not under pytest's own temporary folder: the postgres user cannot enter root's
    base = Path(tempfile.mkdtemp(prefix="repro-mlflow-server-"))
    pg_bin = INITDB[-1].parent
    data = base / "pg"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    pg_port, port = _free_port(), _free_port()
    subprocess.run(
        _as_postgres([str(pg_bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    subprocess.run(
        _as_postgres(
            [
                str(pg_bin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(base / "pg.log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-k {base} -p {pg_port} -c listen_addresses=127.0.0.1",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    log = (base / "mlflow.log").open("w")
    proc = subprocess.Popen(
        [
            MLFLOW,
            "server",
            "--backend-store-uri",
            f"postgresql+psycopg2://postgres@127.0.0.1:{pg_port}/postgres",
            "--artifacts-destination",
            str(base / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start: {(base / 'mlflow.log').read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        log.close()
        subprocess.run(
            _as_postgres([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(base, ignore_errors=True)


def _chromium(url: str, profile: Path, *, screenshot: Path | None = None) -> str:
    assert CHROMIUM is not None
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=20000",
        "--window-size=1400,1000",
    ]
    if screenshot is not None:
        subprocess.run([*args, f"--screenshot={screenshot}", url], capture_output=True, timeout=120)
    out = subprocess.run([*args, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    return out.stdout


def test_a_report_logged_over_http_shows_its_verdict_in_the_mlflow_ui(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "results" / "synthetic" / "original", throughput=[100, 101, 99], seed=1)
    make_run(
        tmp_path / "results" / "synthetic" / "replay-7f3a",
        throughput=[70, 71, 69],
        seed=2,
        threads=1,
    )
    result = CliRunner().invoke(
        cli, ["report", "--compare", "results/synthetic/", "--track", server]
    )
    assert result.exit_code == 1, result.output
    assert f"catalog: 2 new, 0 updated, 0 unchanged, 1 verdict(s) in {server}" in result.output
    assert "View run" not in result.output  # MLflow's own lines are not repro's output
    # the page of the runs table, named where a person reads it
    page = re.search(r"synthetic: (http\S+)", result.output)
    assert page is not None, result.output
    # the history read back from the server
    history = CliRunner().invoke(
        cli, ["catalog", "history", "synthetic", "--track", server, "--json"]
    )
    assert history.exit_code == 0, history.output
    rows = {r["run_id"]: r for r in json.loads(history.output)["runs"]}
    assert rows["replay-7f3a"]["verdict"] == "not reproduced"
    # and again over HTTP: nothing new
    again = CliRunner().invoke(cli, ["catalog", "sync", "results/", "reports/", "--track", server])
    assert "0 new, 0 updated, 2 unchanged" in again.output, again.output
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium): the UI is not read")
    experiment, run = rows["replay-7f3a"]["experiment_id"], rows["replay-7f3a"]["mlflow_run_id"]
    assert page.group(1).startswith(f"{server}/#/experiments/{experiment}?")
    shots = Path(os.environ.get("REPRO_TEST_ARTIFACTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    pages = {
        # the page a person lands on when they click the experiment (MLflow 3.17 opened an
        # empty GenAI overview there: "Traces 0", and nothing seemed logged)
        "experiment": page.group(1),
        "run": f"{server}/#/experiments/{experiment}/runs/{run}",
    }
    dom = {
        name: _chromium(url, tmp_path / "profile", screenshot=tmp_path / f"{name}.png")
        for name, url in pages.items()
    }
    try:
        # the runs table, the verdict in the name it shows (no column to configure)
        assert ">replay-7f3a · not reproduced<" in dom["experiment"]
        assert ">original<" in dom["experiment"]
        assert "No data available" not in dom["experiment"]
        assert "repro.verdict" in dom["run"]
        assert "not reproduced" in dom["run"]
        assert "Offline.samples_per_second" in dom["run"]
        assert "backend.options.intra_op_threads" in dom["run"]
    except AssertionError:
        for name in pages:  # kept for CI's artifacts
            if (tmp_path / f"{name}.png").is_file():
                shutil.copy(tmp_path / f"{name}.png", shots / f"catalog-{name}.png")
        raise
