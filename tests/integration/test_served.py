"""Served models end to end: LoadGen drives an OpenAI-compatible server over HTTP.

The real server is `transformers serve` on the CPU, started by repro in the pinned environment
(here: this interpreter, `--env native`) and stopped by its process group. The failures a real
server rarely shows on demand (an HTTP 500, a stream that is not JSON, one that never ends, a
server that hangs or dies mid-run, no token counts) come from a small stub
(`tests/served_stub.py`) reached as an external endpoint: each is an error that says what
happened (exit 3), never a traceback, and the run's folder is kept.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.digests import tree_digest, tree_files
from repro.runs.store import load_run

pytest.importorskip("aiohttp", reason="the served SUT needs repro[serve] (aiohttp)")
pytest.importorskip("tokenizers", reason="the tiny-llama recipe needs repro[serve] (tokenizers)")

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "served-tinyllm.json"
SHORT = ["--env", "native", "--min-duration-ms", "100", "-s", "Offline", "-m", "performance"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[Any]:
    """Starts the stub in a mode; stopped by its PID at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(mode: str, tokens: int = 8) -> str:
        port = _free_port()
        with (tmp_path / f"stub-{mode}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.served_stub", str(port), mode, str(tokens)],
                cwd=ROOT,
                stderr=log,
            )
        started.append(proc)
        for _ in range(100):  # bounded: 10 s
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return f"http://127.0.0.1:{port}/v1"
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the stub did not start")

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _external(tmp_path: Path, url: str, **options: Any) -> Path:
    """The reference spec with an external endpoint in place of its server."""
    spec = json.loads(SPEC.read_text())
    spec.pop("id", None)
    spec.pop("original", None)
    for art in spec["artifacts"].values():
        art.pop("path", None)
    spec["server"] = {"engine": "external", "url": url, "model_name": "stub"}
    spec["backend"]["options"].update(options)
    path = tmp_path / "served-stub.json"
    path.write_text(json.dumps(_locks_from_specs(spec)))
    return path


def _locks_from_specs(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's lock and Spack pins, named relative to specs/, at their absolute paths (the
    spec is written elsewhere)."""
    env = spec["environment"]
    env["python_lock"]["path"] = str(SPEC.parent / env["python_lock"]["path"])
    for key in ("spack_yaml", "spack_lock"):
        env["spack"][key]["path"] = str(SPEC.parent / env["spack"][key]["path"])
    return spec


def _replay(spec: Path, tmp_path: Path, cache: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(spec),
            *SHORT,
            "-o",
            str(tmp_path / "results"),
            "--cache-dir",
            str(cache),
            *extra,
        ],
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def _run(tmp_path: Path) -> Path:
    [run] = [p for p in (tmp_path / "results").glob("*/*") if p.is_dir()]
    return run


def test_an_external_endpoint_is_driven_and_said_to_be_unpinned(
    stub: Any, tmp_path: Path, shared_cache: Path
) -> None:
    code, out = _replay(_external(tmp_path, stub("ok", 8)), tmp_path, shared_cache)
    assert code == 0, out
    record = load_run(_run(tmp_path))
    assert record.server is not None
    assert (record.server.engine, record.server.pinned) == ("external", False)
    assert record.server.models["data"][0]["id"] == "stub"  # what it said of itself
    [test] = record.tests
    backend = test.backend_facts()
    # 8 tokens in chunks of up to 3: LoadGen gets the server's count, never the chunks'
    assert getattr(backend, "chunks", None) == 3 * 64
    assert test.metrics.tokens_per_second == pytest.approx(
        8 * test.metrics.samples_per_second, rel=1e-4
    )


def test_a_chat_answers_role_only_first_chunk_is_not_its_first_token(
    stub: Any, tmp_path: Path, shared_cache: Path
) -> None:
    spec = _external(tmp_path, stub("ok", 4), api="chat")
    code, out = _replay(spec, tmp_path, shared_cache)
    assert code == 0, out
    [test] = load_run(_run(tmp_path)).tests
    assert test.metrics.tokens_per_second == pytest.approx(
        4 * test.metrics.samples_per_second, rel=1e-4
    )


@pytest.mark.parametrize(
    ("mode", "options", "said"),
    [
        ("http500", {}, "the server answered HTTP 500"),
        ("http400", {}, "the server answered HTTP 400"),
        ("malformed", {}, "a stream event is not JSON"),
        ("endless", {}, "a stream that does not end"),
        ("hang", {"request_timeout_s": 2}, "ran past its deadline (2 s)"),
        ("die-after-3", {}, "failed"),
        ("no-usage", {}, "reported no token count"),
    ],
)
def test_a_server_that_misbehaves_is_an_error_that_says_how(
    stub: Any, tmp_path: Path, shared_cache: Path, mode: str, options: dict[str, Any], said: str
) -> None:
    code, out = _replay(_external(tmp_path, stub(mode), **options), tmp_path, shared_cache)
    assert code == 3, out
    assert said in out
    record = load_run(_run(tmp_path))  # the run is kept, marked failed
    assert record.status == "failed"


def test_an_endpoint_nobody_answers_fails_before_any_test(
    tmp_path: Path, shared_cache: Path
) -> None:
    spec = _external(tmp_path, f"http://127.0.0.1:{_free_port()}/v1")
    code, out = _replay(spec, tmp_path, shared_cache)
    assert code == 3, out
    assert "cannot be reached" in out


def test_a_url_with_credentials_is_refused_naming_the_field(tmp_path: Path) -> None:
    spec = _external(tmp_path, "http://user:secret@127.0.0.1:9/v1")
    result = CliRunner().invoke(cli, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert "$.server" in result.output
    assert "credentials" in result.output
    assert "secret" not in result.output.replace("user:secret@", "")


# -- the real server ---------------------------------------------------------------------------

transformers = pytest.importorskip(
    "transformers", reason="transformers serve needs repro[serve] (transformers[serving])"
)


def _server_pids() -> set[int]:
    """The transformers servers running now (a leftover is a process group repro left)."""
    out = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"transformers.cli.transformers" in words and b"serve" in words:
            out.add(int(cmdline.parent.name))
    return out


def test_a_real_server_is_started_pinned_restarted_each_round_and_stopped(
    tmp_path: Path, shared_cache: Path
) -> None:
    before = _server_pids()
    report_dir = str(tmp_path / "report")
    code, out = _replay(
        SPEC,
        tmp_path,
        shared_cache,
        "--against",
        "self",
        "--max-rounds",
        "2",
        "--report-dir",
        report_dir,
    )
    assert code in (0, 1), out
    runs = sorted(p for p in (tmp_path / "results" / "served-tinyllm").iterdir() if p.is_dir())
    assert len(runs) == 2
    for run in runs:
        record = load_run(run)
        server = record.server
        assert server is not None
        assert server.pinned
        assert server.engine == "transformers-serve"
        assert server.version == transformers.__version__
        assert server.packages["torch"]
        assert server.flags["device"] == "cpu"
        assert server.model_files == json.loads(SPEC.read_text())["artifacts"]["model"]["files"]
        assert [s.round for s in server.starts] == [1, 2]  # restarted for the second round
        assert all((run / s.log).is_file() for s in server.starts if s.log)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["spec_name"] == "served-tinyllm"
    assert _server_pids() <= before  # every server it started is gone


def test_a_server_that_cannot_start_is_an_error_with_its_log(
    tmp_path: Path, shared_cache: Path
) -> None:
    model = tmp_path / "broken-model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "no-such-architecture"}')
    files = tree_files(model)
    spec = json.loads(SPEC.read_text())
    spec.pop("id", None)
    spec.pop("original", None)
    spec["artifacts"]["model"] = {
        "path": str(model),
        "sha256": tree_digest(files),
        "files": files,
    }
    spec["server"]["startup_timeout_s"] = 300
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(_locks_from_specs(spec)))
    before = _server_pids()
    code, out = _replay(path, tmp_path, shared_cache)
    assert code == 3, out
    assert "the transformers-serve server exited with status" in out
    assert "the last lines of its log" in out
    assert _server_pids() <= before
