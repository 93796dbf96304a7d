"""The reference site (docs/, mkdocs.yml) builds with --strict and renders in headless Chromium."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HAS_MKDOCS = all(importlib.util.find_spec(m) is not None for m in ("mkdocs", "material"))

pytestmark = [
    pytest.mark.docs,
    pytest.mark.skipif(
        not HAS_MKDOCS,
        reason="mkdocs is not installed: `make docs` installs the repro[docs] extra",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as `make docs` builds it (a few seconds)."""
    out = tmp_path_factory.mktemp("site")
    config = ROOT / "mkdocs.yml"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr
    return out


def page_of(site: Path, doc: Path) -> Path:
    """Where MkDocs writes the page of docs/<name>.md (`use_directory_urls: false`)."""
    return site / f"{doc.stem}.html"


def test_every_page_of_docs_is_built(site: Path) -> None:
    docs = sorted((ROOT / "docs").glob("*.md"))
    assert len(docs) >= 10
    for doc in docs:
        assert page_of(site, doc).is_file(), doc


def test_the_site_fetches_nothing_from_the_network(site: Path) -> None:
    """It is read on machines without network access: no web fonts, scripts or styles from
    elsewhere (links to other sites are fine)."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "fonts.googleapis.com" not in text, page
        assert not re.search(r"<(?:script|link|img)[^>]+(?:src|href)=\"https?://", text), page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_page_renders_in_headless_chromium(site: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    page = site / "bring-your-own-model.html"
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
        [*base, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    assert re.search(r"<h1[^>]*>Bring your own model", dom)
    assert re.search(r"<h2[^>]*>3\. Capture the experiment", dom)
    assert "repro capture --name my-classifier" in dom
    # the nav: the primary navigation, with a link to other pages by their titles
    nav = dom[dom.index('<nav class="md-nav md-nav--primary"') :]
    for title, href in [("Getting started", "getting-started.html"), ("Verdicts", "verdicts.html")]:
        assert re.search(rf'href="{re.escape(href)}"[^>]*>\s*(?:<[^>]+>\s*)*{title}', nav), title
    # Material's script bundle ran (its focus-visible polyfill marks the root; the file has not)
    assert "js-focus-visible" in dom
    assert "js-focus-visible" not in page.read_text()
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.stat().st_size > 10_000
