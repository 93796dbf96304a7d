"""Nothing private leaves the machine in a file: planted secrets and the home path never do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SECRETS = {
    "TF_TOKEN_app_terraform_io": "planted-terraform-token-1",
    "TF_VAR_db_password": "planted-tf-var-2",
    "NVIDIA_API_KEY": "planted-nvidia-key-3",
    "ORT_AUTH_HEADER": "planted-ort-auth-4",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret-5",
    "CUDA_PASSWORD": "planted-cuda-password-6",
    "OMP_SECRET_TOKEN": "planted-omp-token-7",
    "TF_CLI_CONFIG_FILE": "/planted/home/.terraformrc-8",
}


def _repro(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_planted_secrets_and_home_reach_no_file(root: Path, tmp_path: Path) -> None:
    home = tmp_path / "home-of-someone-private"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),  # the artifact cache defaults to ~/.cache/repro: paths under home
        "PYTHONPATH": str(root),
        "OMP_NUM_THREADS": "1",  # allow-listed: recorded
        **SECRETS,
    }
    results, reports = tmp_path / "results", tmp_path / "reports"
    replay = _repro(
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--scenario",
            "Offline",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(results),
            "--run-id",
            "planted",
        ],
        env,
        tmp_path,
    )
    assert replay.returncode == 0, replay.stderr
    report = _repro(
        [
            "report",
            "--compare",
            str(root / "results" / "ort-digits" / "original"),
            str(results / "ort-digits" / "planted"),
            "-o",
            str(reports),
        ],
        env,
        tmp_path,
    )
    assert report.returncode in (0, 1), report.stderr
    files = [p for p in [*results.rglob("*"), *reports.rglob("*")] if p.is_file()]
    assert len(files) > 10
    for path in files:
        data = path.read_bytes()
        for name, value in SECRETS.items():
            assert value.encode() not in data, f"{name} leaked into {path}"
        assert str(home).encode() not in data, f"the home path leaked into {path}"
    run_dir = results / "ort-digits" / "planted"
    run = (run_dir / "run.json").read_text()
    assert '"OMP_NUM_THREADS": "1"' in run
    assert "hostname" not in run
    request = (run_dir / "Offline" / "accuracy" / "request.json").read_text()
    assert "~/.cache/repro/sha256/" in request  # the cache under home is written as ~


def test_committed_originals_hold_no_home_path_or_unlisted_variable(root: Path) -> None:
    import json

    from repro.privacy import RESULT_VARIABLES

    for run in (root / "results").glob("*/original/run.json"):
        data = json.loads(run.read_text())
        assert set(data["fingerprint"]["variables"]) <= RESULT_VARIABLES, run
        assert "hostname" not in data["fingerprint"]["os"], run
    for path in (root / "results").rglob("*/original/**/*"):
        if path.is_file() and path.suffix in (".json", ".log"):
            assert "/root/" not in path.read_text(errors="replace"), path
