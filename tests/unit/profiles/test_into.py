"""`repro profile --into RUN`: a pass that fails, or a record that cannot be written, leaves the
run as it was; one pass at a time per run."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from repro import profiling
from repro.errors import UsageError
from repro.harness.request import WorkerRequest
from repro.profiling import ProfilePass
from repro.runs.store import load_run
from repro.spec.io import load_spec, spec_id
from tests.helpers import make_run


@pytest.fixture
def setup(tmp_path: Path, root: Path) -> tuple[ProfilePass, Path]:
    spec = load_spec(root / "specs" / "ort-digits.json")
    run = make_run(tmp_path / "ort-digits" / "r1", throughput=[100.0], spec_id=spec_id(spec))
    old = run / "profile" / "SingleStream"
    old.mkdir(parents=True)
    (old / "profile.json").write_text('{"old": true}')
    doc = json.loads((run / "run.json").read_text())
    doc["profiles"] = [
        {
            "scenario": "SingleStream",
            "dir": "profile/SingleStream",
            "status": "complete",
            "samples_requested": 8,
        }
    ]
    (run / "run.json").write_text(json.dumps(doc))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    artifacts = {name: tmp_path / name for name in spec.artifacts}
    ppass = ProfilePass(
        spec,
        request=lambda scenario, settings, out_dir: WorkerRequest.from_spec(
            spec,
            spec_id=spec_id(spec),
            scenario=scenario,
            mode="performance",
            settings=settings,
            artifacts=artifacts,
            cache_root=tmp_path / "cache",
            output_dir=out_dir,
            profile=True,
        ),
        run_worker=lambda req, out, label, s: 137,  # killed: no result written
        scratch=scratch,
    )
    return ppass, run


def _hidden(run: Path) -> list[str]:
    return [p.name for p in (run / "profile").iterdir() if p.name.startswith(".")]


def test_a_failed_pass_keeps_the_runs_profile_and_record(setup: tuple[ProfilePass, Path]) -> None:
    ppass, run = setup
    before = (run / "run.json").read_bytes()
    found = ppass.into(run, "SingleStream", 8)
    assert found.status == "failed"
    assert "exited with 137" in (found.error or "")
    assert (run / "run.json").read_bytes() == before
    assert (run / "profile" / "SingleStream" / "profile.json").read_text() == '{"old": true}'
    assert _hidden(run) == []


def test_a_record_that_cannot_be_written_puts_the_old_profile_back(
    setup: tuple[ProfilePass, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ppass, run = setup
    from repro.runs.record import ProfileRecord

    def worker_ok(req: Path, out: Path, label: str, s: float) -> int:
        (out / "new.txt").write_text("new")
        return 0

    ppass.run_worker = worker_ok
    monkeypatch.setattr(
        profiling,
        "collect",
        lambda out, rel, sc, n, rc: ProfileRecord(
            scenario="SingleStream", dir=rel, status="complete", samples_requested=n
        ),
    )

    def fail(folder: Path, record: object, **_: object) -> Path:
        raise OSError(30, "Read-only file system", str(folder / "run.json"))

    monkeypatch.setattr(profiling, "commit_run", fail)
    with pytest.raises(OSError, match="Read-only"):
        ppass.into(run, "SingleStream", 8)
    assert (run / "profile" / "SingleStream" / "profile.json").read_text() == '{"old": true}'
    assert not (run / "profile" / "SingleStream" / "new.txt").exists()
    assert _hidden(run) == []
    assert load_run(run).profiles[0].samples_requested == 8


def test_one_pass_at_a_time_per_run(setup: tuple[ProfilePass, Path]) -> None:
    ppass, run = setup
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another `--into` holds the run
        with pytest.raises(UsageError, match="another `repro profile --into`"):
            ppass.into(run, "SingleStream", 8)
    finally:
        os.close(fd)


def test_an_unfinished_run_is_refused(setup: tuple[ProfilePass, Path]) -> None:
    ppass, run = setup
    doc = json.loads((run / "run.json").read_text())
    doc["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="the run is interrupted"):
        ppass.into(run, "SingleStream", 8)
