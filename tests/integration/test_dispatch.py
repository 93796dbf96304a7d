"""Dispatched replays for real: parts on this machine (`--on local`) and as a Slurm job array
(`--on slurm`, on the single-node cluster `.ci/slurm start` brings up), gathered, cancelled,
resumed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import write_record

SHORT = ["-s", "SingleStream", "--min-duration-ms", "200", "--min-query-count", "64"]


def _replay(root: Path, out: Path, cache: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            *SHORT,
            "--results-dir",
            str(out),
            "--cache-dir",
            str(cache),
            *args,
        ],
    )
    return result.exit_code, result.output


def test_local_parts_are_gathered_into_one_run_and_reported_per_node(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    code, output = _replay(
        root, tmp_path, shared_cache, "--on", "local", "--repeat", "2", "--run-id", "L"
    )
    assert code in (0, 3), output  # 3 only for LoadGen's latency verdict under load
    run = tmp_path / "ort-digits" / "L"
    record = load_run(run)
    assert [p.status for p in record.parts] in (
        ["complete"] * 2,
        ["invalid"] * 2,
        ["complete", "invalid"],
        ["invalid", "complete"],
    )
    perf = record.performance("SingleStream")
    assert [t.part for t in perf] == [0, 1]
    assert all((run / t.dir / "mlperf_log_summary.txt").is_file() for t in perf)
    assert record.accuracy_test("SingleStream") is not None  # part 0 only
    assert len([t for t in record.tests if t.mode == "accuracy"]) == 1
    assert record.dispatch is not None
    assert record.dispatch.executor == "local"
    report = tmp_path / "report"
    result = CliRunner().invoke(
        cli,
        ["report", "--compare", str(root / "results" / "ort-digits"), str(run), "-o", str(report)],
    )
    assert result.exit_code in (0, 1), result.output
    doc = json.loads((report / "report.json").read_text())
    assert [n["parts"] for n in doc["nodes"]] == [[0, 1]]


def test_resume_runs_only_the_parts_that_did_not_finish(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    code, output = _replay(
        root, tmp_path, shared_cache, "--on", "local", "--repeat", "2", "--run-id", "R"
    )
    assert code in (0, 3), output
    run = tmp_path / "ort-digits" / "R"
    kept = (run / "parts" / "0" / "run.json").read_bytes()
    # as a part killed with its node leaves it: no run folder, the gathered run interrupted
    shutil.rmtree(run / "parts" / "1")
    doc = json.loads((run / "run.json").read_text())
    doc["parts"][1]["status"] = "interrupted"
    doc["status"] = "interrupted"
    write_record(run / "run.json", doc)
    result = CliRunner().invoke(cli, ["replay", "--resume", str(run)])
    assert result.exit_code in (0, 3), result.output
    assert "resuming 1 part(s) of 2: [1]" in result.output
    record = load_run(run)
    assert [p.status in ("complete", "invalid") for p in record.parts] == [True, True]
    assert (run / "parts" / "0" / "run.json").read_bytes() == kept  # part 0 was not rerun
    assert [t.part for t in record.performance("SingleStream")] == [0, 1]


def test_a_part_that_finished_before_kill_9_is_kept_on_resume(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    """The orchestrator of `--on local --repeat 3` killed outright after part 0 finished: the
    resume runs parts 1 and 2 only, and says that part 0 is kept."""
    import os
    import signal

    from repro.runs import layout

    cmd = [
        sys.executable,
        "-m",
        "repro",
        "replay",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "-m",
        "performance",
        *SHORT,
        "--on",
        "local",
        "--repeat",
        "3",
        "--run-id",
        "K",
        "--results-dir",
        str(tmp_path),
        "--cache-dir",
        str(shared_cache),
    ]
    run = tmp_path / "ort-digits" / "K"
    part0 = layout.partial_of(run) / "parts" / "0" / "run.json"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not part0.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert part0.is_file(), "part 0 did not finish within 120 s"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    kept = part0.read_bytes()
    result = CliRunner().invoke(cli, ["replay", "--resume", str(run)])
    assert result.exit_code in (0, 3), result.output
    assert "part 0 finished before: its results are kept" in result.output
    assert "resuming 2 part(s) of 3: [1, 2]" in result.output
    assert (run / "parts" / "0" / "run.json").read_bytes() == kept
    record = load_run(run)
    assert [p.status in ("complete", "invalid") for p in record.parts] == [True, True, True]
    assert [t.part for t in record.performance("SingleStream")] == [0, 1, 2]


def _slurm_up() -> None:
    if shutil.which("sbatch") is None:
        pytest.skip("Slurm is not installed (`.ci/slurm start` brings up a test cluster)")
    up = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    if up.returncode != 0 or not up.stdout.strip():
        pytest.skip(f"Slurm does not answer (`.ci/slurm start`): {up.stderr.strip()}")


@pytest.mark.slurm
def test_a_four_part_job_array_replays_and_is_gathered(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    _slurm_up()
    code, output = _replay(
        root,
        tmp_path,
        shared_cache,
        "--on",
        "slurm",
        "--repeat",
        "4",
        "--run-id",
        "S",
        "--time",
        "10:00",
    )
    assert code in (0, 3), output
    run = tmp_path / "ort-digits" / "S"
    record = load_run(run)
    assert len(record.parts) == 4
    assert all(p.status in ("complete", "invalid") for p in record.parts), record.parts
    assert all(p.state == "COMPLETED" and p.node for p in record.parts)
    assert len(record.performance("SingleStream")) == 4
    script = (run / "dispatch" / "job.sbatch").read_text()
    assert "#SBATCH --array=0-3" in script
    assert "#SBATCH --exclusive" in script
    assert "#SBATCH --time=10:00" in script
    assert all((run / "dispatch" / f"part-{k}.out").is_file() for k in range(4))


@pytest.mark.slurm
def test_a_cancelled_job_marks_its_part_interrupted_and_resume_completes_the_run(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    _slurm_up()
    cmd = [
        sys.executable,
        "-m",
        "repro",
        "replay",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "-s",
        "SingleStream",
        "-m",
        "performance",
        "--min-duration-ms",
        "4000",
        "--on",
        "slurm",
        "--repeat",
        "2",
        "--run-id",
        "C",
        "--results-dir",
        str(tmp_path),
        "--cache-dir",
        str(shared_cache),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        job = None
        for line in proc.stdout:  # this run's own job id, never another's of the same name
            lines.append(line)
            if m := re.search(r"submitted \d+ part\(s\) to slurm \(job (\d+)\)", line):
                job = m.group(1)
                break
        assert job is not None, "".join(lines)
        running = None
        deadline = time.monotonic() + 60
        while running is None and time.monotonic() < deadline and proc.poll() is None:
            out = subprocess.run(
                ["squeue", "-h", "-r", "-j", job, "-o", "%i %T"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
            running = next((ln.split()[0] for ln in out.splitlines() if "RUNNING" in ln), None)
            time.sleep(0.3)
        assert running is not None, "no part started running within 60 s"
        subprocess.run(["scancel", running], check=True, timeout=10)
        rest, _ = proc.communicate(timeout=120)
        output = "".join(lines) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, output
    run = tmp_path / "ort-digits" / "C"
    record = load_run(run)
    assert record.status == "interrupted"
    cancelled = [p for p in record.parts if p.state and p.state.startswith("CANCELLED")]
    assert len(cancelled) == 1, record.parts
    assert cancelled[0].status == "interrupted"
    assert "--resume" in (record.message or "")
    result = CliRunner().invoke(cli, ["replay", "--resume", str(run)])
    assert result.exit_code in (0, 3), result.output
    record = load_run(run)
    assert all(p.status in ("complete", "invalid") for p in record.parts), record.parts
    assert len(record.performance("SingleStream")) == 2


def test_a_sweep_dispatches_each_points_rounds_as_parts(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            str(root / "specs" / "ort-digits.json"),
            "--param",
            "workload.batch_size=8,32",
            "--objective",
            "max:Offline.throughput",
            "--repeat",
            "2",
            "--min-duration-ms",
            "200",
            "--on",
            "local",
            "--results-dir",
            str(tmp_path),
            "--cache-dir",
            str(shared_cache),
            "--id",
            "sw",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    state = json.loads(result.stdout)
    assert [p["status"] for p in state["points"]] == ["complete", "complete"]
    for point in state["points"]:
        (run,) = point["runs"]
        record = load_run(tmp_path / "ort-digits" / "sweeps" / "sw" / run)
        assert [p.index for p in record.parts] == [0, 1]
        assert record.dispatch is not None
