"""`--track` and `repro catalog sync|history` against MLflow's real SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run


def _pair(project: Path) -> Path:
    """An original and a replay 30 % slower (different threads): not reproduced."""
    make_run(project / "results" / "synthetic" / "original", throughput=[100, 101, 99], seed=1)
    make_run(project / "results" / "synthetic" / "r1", throughput=[70, 71, 69], seed=2, threads=1)
    return project / "results" / "synthetic"


def _report(*extra: str, env: dict[str, str] | None = None) -> object:
    return CliRunner().invoke(cli, ["report", "--compare", "results/synthetic/", *extra], env=env)


def test_a_report_with_track_logs_both_sides_and_its_verdict(project: Path) -> None:
    _pair(project)
    result = _report("--track")
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    assert "catalog: 2 new, 0 updated, 0 unchanged, 1 verdict(s)" in result.output  # type: ignore[attr-defined]
    assert (project / ".repro" / "catalog.db").is_file()
    history = CliRunner().invoke(cli, ["catalog", "history", "synthetic", "--json"])
    assert history.exit_code == 0, history.output
    rows = {r["run_id"]: r for r in json.loads(history.output)["runs"]}
    assert rows["original"]["role"] == "original"
    assert rows["original"]["verdict"] is None
    assert rows["r1"]["verdict"] == "not reproduced"
    assert rows["r1"]["against"] == "original"
    assert rows["r1"]["delta_rel"] == pytest.approx(-0.3, abs=0.02)
    assert rows["r1"]["ci"][0] < rows["r1"]["delta_rel"] < rows["r1"]["ci"][1]
    # logging the same folders again changes nothing, the verdict included
    again = CliRunner().invoke(cli, ["catalog", "sync"])
    assert again.exit_code == 0, again.output
    assert "0 new, 0 updated, 2 unchanged" in again.output
    assert "verdict" not in again.output


def test_history_prints_and_plots_every_run(project: Path) -> None:
    _pair(project)
    CliRunner().invoke(cli, ["catalog", "sync", "results/"])
    out = CliRunner().invoke(cli, ["catalog", "history", "synthetic", "--plot", "h.svg"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("synthetic: 2 run(s) in sqlite:///")
    assert any(line.split()[2] == "original" for line in lines[2:])
    svg = (project / "h.svg").read_text()
    assert svg.startswith("<?xml")
    assert "Offline.samples_per_second.median" in svg


def test_a_tracker_that_is_down_costs_the_command_nothing(project: Path) -> None:
    _pair(project)
    result = _report("--track", "http://127.0.0.1:9")
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 1, out  # type: ignore[attr-defined]  # the verdict's code
    assert (project / "reports" / "synthetic" / "report.json").is_file()
    assert "warning: catalog: 1 report(s) not logged: the catalog at http://127.0.0.1:9" in out
    assert "repro catalog sync reports/` logs them" in out
    assert "Retrying" not in out
    assert "Traceback" not in out


def test_sync_says_what_it_skipped_and_why(project: Path) -> None:
    _pair(project)
    broken = project / "results" / "synthetic" / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    out = CliRunner().invoke(cli, ["catalog", "sync", "results/", "--json"])
    assert out.exit_code == 0, out.output
    tally = json.loads(out.output)
    assert tally["new"] == 2
    (skipped,) = tally["skipped"]
    assert skipped["path"].endswith("broken")
    assert "run.json" in skipped["why"]
    empty = project / "empty"
    empty.mkdir()
    nothing = CliRunner().invoke(cli, ["catalog", "sync", "empty"])
    assert nothing.exit_code == 2
    assert "no run (run.json)" in nothing.output


def test_history_of_a_spec_it_never_saw_says_how_to_log_it(project: Path) -> None:
    out = CliRunner().invoke(cli, ["catalog", "history", "nope"])
    assert out.exit_code == 2
    assert "no run of spec 'nope'" in out.output
    assert "repro catalog sync" in out.output


def test_no_secret_and_no_home_path_reaches_the_catalog(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record written as repro writes it (this machine's real fingerprint, the home path in
    its fields), a token in the environment: neither is in the store, artifacts included."""
    from repro.machine.fingerprint import collect
    from repro.runs.commit import commit_run
    from repro.runs.store import load_run

    home = Path.home()
    secret = "tok_" + "s3cr3t" * 6
    for name in ("REPRO_TEST_TOKEN", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, secret if name != "OMP_NUM_THREADS" else "2")
    folder = _pair(project) / "r1"
    record = load_run(folder).model_copy(
        update={
            "fingerprint": collect(),
            "environment": {"manager": "venv", "python": f"{home}/.venv/bin/python"},
            "spec_path": f"{home}/specs/synthetic.json",
        }
    )
    commit_run(folder, record)
    result = _report("--track")
    assert "catalog: 2 new" in result.output, result.output  # type: ignore[attr-defined]
    stored = [project / ".repro" / "catalog.db"]
    stored += [p for p in (project / ".repro" / "catalog-artifacts").rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in stored)
    rows = sqlite3.connect(stored[0]).execute("select key, value from params").fetchall()
    assert ("backend.options.intra_op_threads", "1") in rows
    for path in stored:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert str(home).encode() not in data, path


def test_two_originals_of_one_spec_are_two_runs_of_the_catalog(project: Path) -> None:
    folder = _pair(project) / "original"
    assert CliRunner().invoke(cli, ["catalog", "sync", "results/"]).exit_code == 0
    raw = json.loads((folder / "run.json").read_text())  # captured again, later
    raw["started_utc"] = "2026-12-01T00:00:00+00:00"
    (folder / "run.json").write_text(json.dumps(raw))
    out = CliRunner().invoke(cli, ["catalog", "sync", "results/"])
    assert "1 new, 0 updated, 1 unchanged" in out.output, out.output
    history = CliRunner().invoke(cli, ["catalog", "history", "synthetic", "--json"])
    roles = [r["role"] for r in json.loads(history.output)["runs"]]
    assert sorted(roles) == ["original", "original", "replay"]


def test_ctrl_c_while_logging_keeps_the_commands_exit_code(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import repro.catalog.sync

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(repro.catalog.sync, "_after_command", interrupted)
    _pair(project)
    result = _report("--track")
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    assert "interrupted while logging" in result.output  # type: ignore[attr-defined]
    assert "repro catalog sync reports/" in result.output  # type: ignore[attr-defined]


def test_off_and_a_bad_uri_are_said_before_anything_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pair(project)
    bad = _report("--track", "ftp://nowhere")
    assert bad.exit_code == 2  # type: ignore[attr-defined]
    assert "'ftp' is not a tracking store" in bad.output  # type: ignore[attr-defined]
    assert not (project / "reports").exists()
    off = CliRunner().invoke(cli, ["catalog", "sync", "--track", "off"])
    assert off.exit_code == 2
    assert "a catalog command needs a catalog" in off.output
    # `off` in the environment switches commands off, and catalog commands pass it over
    monkeypatch.setenv("REPRO_TRACKING_URI", "off")
    assert "catalog:" not in _report("--track", "off").output  # type: ignore[attr-defined]
    synced = CliRunner().invoke(cli, ["catalog", "sync", "results/"])
    assert synced.exit_code == 0, synced.output
    assert "catalog sqlite:///" in synced.output


def test_sync_leaves_the_catalogs_own_copies_alone(project: Path) -> None:
    _pair(project)
    assert _report("--track").exit_code == 1  # type: ignore[attr-defined]
    out = CliRunner().invoke(cli, ["catalog", "sync", ".", "--json"])
    tally = json.loads(out.output)
    assert tally["new"] == 0
    assert tally["skipped"] == []


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("report.json", '{"schema": "repro.report/v2", "scenarios": "x"}', "not as repro writes"),
        ("claims.json", '{"schema": "repro.claim_rounds/v1", "claims": 5}', "not as repro writes"),
        ("sweep.json", '{"schema": "repro.sweep/v1", "points": [1]}', "sweep.json: not as"),
        ("report.json", '{"schema": "repro.report/v9"}', "not a repro.report/v2 file"),
    ],
)
def test_a_hostile_file_is_skipped_with_its_reason(
    project: Path, name: str, text: str, why: str
) -> None:
    folder = project / "reports" / "x"
    folder.mkdir(parents=True)
    (folder / name).write_text(text)
    out = CliRunner().invoke(cli, ["catalog", "sync", "reports/", "--json"])
    assert out.exit_code == 2, out.output  # nothing could be logged
    (skipped,) = json.loads(out.output)["skipped"]
    assert why in skipped["why"]


def test_a_copy_of_a_run_is_logged_once_and_named(project: Path) -> None:
    import shutil

    folder = _pair(project) / "r1"
    shutil.copytree(folder, project / "copy" / "r1")
    out = CliRunner().invoke(cli, ["catalog", "sync", "results/", "copy/", "--json"])
    tally = json.loads(out.output)
    assert tally["new"] == 2
    (skipped,) = tally["skipped"]
    assert skipped["path"].endswith("copy/r1")
    assert "a copy" in skipped["why"]


def test_a_run_json_that_is_a_fifo_is_skipped_not_waited_for(project: Path) -> None:
    """A FIFO named run.json would block its read for ever: it is skipped with its reason."""
    import os

    _pair(project)
    fifo = project / "results" / "synthetic" / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "run.json")
    out = CliRunner().invoke(cli, ["catalog", "sync", "results/", "--json"])
    assert out.exit_code == 0, out.output
    (skipped,) = json.loads(out.output)["skipped"]
    assert "not a regular file" in skipped["why"]


def test_a_tracker_that_answers_a_byte_at_a_time_is_not_waited_for(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener that answers `200 OK` and then a byte every second never times out a read:
    the catalog step has a deadline of its own, and the command ends after it."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    stop = threading.Event()

    def drip() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            while not stop.is_set():
                try:
                    conn.sendall(b" ")
                except OSError:
                    break
                time.sleep(1)
            conn.close()

    threading.Thread(target=drip, daemon=True).start()
    monkeypatch.setenv("REPRO_CATALOG_DEADLINE_S", "3")
    _pair(project)
    t0 = time.monotonic()
    result = _report("--track", f"http://127.0.0.1:{port}")
    took = time.monotonic() - t0
    stop.set()
    server.close()
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 1, out  # type: ignore[attr-defined]  # the verdict's code
    assert "did not finish within 3 s" in out
    assert took < 30


def test_an_application_database_is_never_written_into(project: Path) -> None:
    """`catalog history --track sqlite:///other.db` on an application's database added
    MLflow's tables to it; a read makes no store either."""
    import sqlite3

    db = project / "other.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE invoices (id INTEGER)")
    before = db.read_bytes()
    _pair(project)
    for args in (
        ["catalog", "history", "synthetic", "--track", f"sqlite:///{db}"],
        ["catalog", "sync", "results/", "--track", f"sqlite:///{db}"],
    ):
        out = CliRunner().invoke(cli, args)
        assert out.exit_code != 0, out.output
        assert "not an MLflow store" in out.output
    assert db.read_bytes() == before
    fresh = project / "none.db"
    out = CliRunner().invoke(cli, ["catalog", "history", "x", "--track", f"sqlite:///{fresh}"])
    assert out.exit_code == 2, out.output
    assert "there is no catalog there yet" in out.output
    assert not fresh.exists()  # a read never makes a store


def test_a_damaged_store_is_said_damaged_with_the_way_to_rebuild_it(project: Path) -> None:
    """A store whose tables are not MLflow's any more said 'cannot be written' with an SQL
    statement, and that the results would be logged 'when it is back'."""
    import sqlite3

    db = project / "cat.db"
    _pair(project)
    args = ["catalog", "sync", "results/", "--track", f"sqlite:///{db}"]
    made = CliRunner().invoke(cli, args)
    assert made.exit_code == 0, made.output
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE metrics")
        con.execute("CREATE TABLE metrics (key TEXT)")
        con.execute("DELETE FROM runs")
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 3, out.output
    assert "is damaged: its tables are not as MLflow made them (table metrics has no column" in (
        out.output
    )
    assert "rebuilds the catalog from the runs on disk" in out.output
    assert "[SQL:" not in out.output


def test_a_report_tracked_in_markdown_only_is_logged_and_says_so(project: Path) -> None:
    _pair(project)
    result = _report("--track", "--format", "md")
    out = result.output  # type: ignore[attr-defined]
    assert "report.json written too" in out
    assert "1 verdict(s)" in out
    assert (project / "reports" / "synthetic" / "report.json").is_file()


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        ({"samples_per_second": float("nan")}, "metrics.samples_per_second is nan"),
        ({"spec_name": "../../../../outside/cat-escape"}, "$.spec_name"),
        ({"run_id": "another"}, "$.run_id is 'another', not its folder's name 'r1'"),
    ],
)
def test_sync_refuses_what_report_refuses(project: Path, edit: dict[str, object], why: str) -> None:
    """One reader for both: a record edited with its digest made anew (a NaN rate, a spec name
    that climbs out of the catalog, a run id not its folder's) is skipped with the reason."""
    from tests.helpers import write_record

    folder = _pair(project) / "r1"
    doc = json.loads((folder / "run.json").read_text())
    if "samples_per_second" in edit:
        doc["tests"][0]["metrics"]["samples_per_second"] = edit["samples_per_second"]
    else:
        doc.update(edit)
    write_record(folder / "run.json", doc)
    out = CliRunner().invoke(cli, ["catalog", "sync", "results/", "--json"])
    tally = json.loads(out.output)
    (skipped,) = tally["skipped"]
    assert skipped["path"].endswith("r1")
    assert why in skipped["why"]
    assert not (project / ".repro" / "outside").exists()
    report = _report()
    assert report.exit_code == 2  # type: ignore[attr-defined]
