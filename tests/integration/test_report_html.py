"""report.html renders in headless Chromium (Debian's `chromium`), self-contained."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "b", throughput=[70, 71, 69], seed=2, threads=1)
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(tmp_path / "r"),
            "-o",
            str(tmp_path / "out"),
            "--format",
            "html",
        ],
    )
    assert result.exit_code == 1
    html = tmp_path / "out" / "report.html"
    assert "http://" not in html.read_text()
    assert "https://" not in html.read_text()
    assert CHROMIUM is not None
    base = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*base, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert "Reproducibility report: synthetic" in dom
    assert "✗ not reproduced" in dom
    assert dom.count("<svg") >= 3  # bars per scenario and the latency CDF
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1200,1600", html.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.stat().st_size > 10_000
