"""`repro sweep` on the real harness: two points of ort-digits, short runs, a front, a pick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli


def test_a_real_sweep_writes_its_points_front_and_a_picked_spec(root: Path, tmp_path: Path) -> None:
    spec = str(root / "specs" / "ort-digits.json")
    common = ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    track = ["--track", f"sqlite:///{tmp_path / 'catalog.db'}"]  # logged where it ran, if MLflow
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            spec,
            "--param",
            "workload.batch_size=1,16",
            "--objective",
            "max:Offline.throughput",
            "--min-duration-ms",
            "200",
            "--id",
            "real",
            "--seed",
            "5",
            "--json",
            *common,
            *track,
        ],
    )
    assert result.exit_code == 0, result.output
    state = json.loads(result.stdout)
    _the_catalog_holds_the_sweep(track[1], state)
    assert [p["status"] for p in state["points"]] == ["complete", "complete"]
    marks = {p["values"]["workload.batch_size"]: p["front"] for p in state["points"]}
    assert set(marks.values()) <= {"front", "tied", "dominated"}
    assert "front" in marks.values()
    folder = tmp_path / "results" / "ort-digits" / "sweeps" / "real"
    for p in state["points"]:
        run = json.loads((folder / p["runs"][0] / "run.json").read_text())
        assert run["spec_id"] == p["spec_id"]
        assert [t["repeat"] for t in run["tests"]] == [1, 2]
    picked = CliRunner().invoke(
        cli,
        [
            "sweep",
            spec,
            "--id",
            "real",
            "--pick",
            "1",
            "--name",
            "digits-b16",
            "--specs-dir",
            str(tmp_path / "specs"),
            *common,
        ],
    )
    assert picked.exit_code == 0, picked.output
    check = CliRunner().invoke(cli, ["validate", str(tmp_path / "specs" / "digits-b16.json")])
    assert check.exit_code == 0, check.output


def _the_catalog_holds_the_sweep(uri: str, state: dict[str, Any]) -> None:
    """The sweep's run, its points nested under it, each point's runs under the point."""
    pytest.importorskip("mlflow.tracking", reason="the catalog needs repro[mlflow]")
    from repro.catalog.store import Catalog
    from repro.catalog.where import Tracking

    runs = Catalog(Tracking(uri=uri, source="--track")).runs("ort-digits")
    by_kind: dict[str, list[Any]] = {}
    for run in runs:
        by_kind.setdefault(run.tags["repro.kind"], []).append(run)
    (sweep,) = by_kind["sweep"]
    points = {p.run_id: p for p in by_kind["point"]}
    assert len(points) == len(state["points"])
    assert all(p.tags["mlflow.parentRunId"] == sweep.run_id for p in points.values())
    assert {r.tags["mlflow.parentRunId"] for r in by_kind["run"]} == set(points)
    assert sorted(p.params["workload.batch_size"] for p in points.values()) == ["1", "16"]


def test_the_server_qps_search_on_the_real_harness(root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            str(root / "specs" / "ort-digits.json"),
            "--param",
            "workload.batch_size=1",
            "--objective",
            "max:Server.qps",
            "--qps-runs",
            "3",
            "--min-duration-ms",
            "300",
            "--id",
            "qps",
            "--json",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 0, result.output
    (point,) = json.loads(result.stdout)["points"]
    search = point["server_qps"]
    assert search["runs"] == len(search["tried"]) <= 3
    # each try is a real LoadGen Server run, judged by LoadGen's own validity
    assert all(t["target_qps"] > 0 for t in search["tried"])
    valid = [t["target_qps"] for t in search["tried"] if t["valid"]]
    assert search["valid_qps"] == (max(valid) if valid else None)


def _fake_sbatch(folder: Path) -> Path:
    """An `sbatch` that answers as Slurm's does when no controller runs."""
    folder.mkdir()
    sbatch = folder / "sbatch"
    sbatch.write_text(
        "#!/bin/sh\n"
        "echo 'sbatch: error: Batch job submission failed: Unable to contact slurm controller "
        "(connect failure)' >&2\n"
        "exit 1\n"
    )
    sbatch.chmod(0o755)
    return folder


def test_a_sweep_on_slurm_without_a_controller_fails_and_keeps_nothing(
    root: Path, tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    bin_dir = _fake_sbatch(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            str(root / "specs" / "ort-digits.json"),
            "--param",
            "workload.batch_size=8,32",
            "--objective",
            "max:Offline.throughput",
            "--on",
            "slurm",
            "--id",
            "noctl",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(shared_cache),
        ],
    )
    assert result.exit_code == 3, result.output
    assert "sbatch cannot reach Slurm: Batch job submission failed" in result.stderr
    assert "no point ran and no sweep was kept" in result.stderr
    # nor the folders made for it (results/ort-digits/sweeps/ stayed, empty)
    assert not (tmp_path / "results").exists()


def test_a_sweep_on_slurm_without_sbatch_is_refused_before_its_folder_exists(
    root: Path, tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            str(root / "specs" / "ort-digits.json"),
            "--param",
            "workload.batch_size=8,32",
            "--on",
            "slurm",
            "--env",
            "native",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(shared_cache),
        ],
    )
    assert result.exit_code == 3, result.output
    assert "`sbatch` is not on PATH" in result.stderr
    assert not (tmp_path / "results").exists()
