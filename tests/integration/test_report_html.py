"""report.html and every page with a plot render in headless Chromium (Debian's `chromium`),
self-contained, with the plots' labels drawn inside them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run
from tests.plot_pages import PAGES

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


#: run in the page once it is laid out: per plot its box, and each text element's box (the
#: browser's, after its fonts are chosen) with its words
MEASURE = """<script>
const box = r => [r.left, r.top, r.right, r.bottom];
document.body.dataset.plots = JSON.stringify([...document.querySelectorAll("svg.plot")].map(
  s => ({box: box(s.getBoundingClientRect()), texts: [...s.querySelectorAll("text")].map(
    t => ({text: t.textContent, box: box(t.getBoundingClientRect())}))})));
</script></body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_plot_renders_in_headless_chromium_with_its_labels_inside(
    name: str, tmp_path: Path
) -> None:
    """Chromium lays out every plot of the page: each has a size, each axis label is drawn
    (a box with width and height) inside its plot, and no two labels overlap."""
    assert CHROMIUM is not None
    build, labels = PAGES[name]
    page = tmp_path / f"{name}.html"
    page.write_text(build(tmp_path).replace("</body>", MEASURE))
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    found = re.search(r'data-plots="([^"]*)"', dom)
    assert found, dom[-2000:]
    plots = json.loads(unescape(found.group(1)))
    assert plots
    drawn = set()
    for plot in plots:
        left, top, right, bottom = plot["box"]
        assert right - left > 200
        assert bottom - top > 100
        texts = [t for t in plot["texts"] if t["text"].strip()]
        assert texts
        for t in texts:
            x0, y0, x1, y1 = t["box"]
            assert left - 1 <= x0 < x1 <= right + 1, t  # drawn, not cut off at an edge
            assert top - 1 <= y0 < y1 <= bottom + 1, t
            drawn.add(t["text"])
        if name in ("report", "sweep"):  # no names beside points: nothing may overlap
            assert _overlaps(texts) == []
    assert set(labels) <= drawn


FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _overlaps(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than a pixel each way."""
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a["box"], b["box"]
            if min(ax1, bx1) - max(ax0, bx0) > 1 and min(ay1, by1) - max(ay0, by0) > 1:
                out.append((a["text"], b["text"]))
    return out
