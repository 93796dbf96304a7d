"""The README stays the front door: the two commands first, and links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_opens_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0] == "# repro"
    assert lines[2] == "```"
    assert lines[3].startswith("make demo    # ")
    assert lines[4].startswith("make test    # ")
    assert lines[5] == "```"


def test_the_readme_fits_a_screen_or_two() -> None:
    """The reference lives in docs/; the README keeps what a newcomer needs."""
    assert len((ROOT / "README.md").read_bytes()) < 8_000


def test_the_readme_says_what_a_package_signs_and_what_verify_checks() -> None:
    """Issue 29's last condition: the README itself, not only a page it links."""
    text = " ".join((ROOT / "README.md").read_text().split())
    section = text[text.index("## Packages") :]
    assert "--sign" in section
    assert "signs a statement of every member's sha256" in section
    assert "repro verify" in section
    assert "no signed statement covers" in section
    assert "contradicts the spec's pins" in section


@pytest.mark.parametrize(
    "name",
    [
        "README.md",
        "CONTRIBUTING.md",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
    ],
)
def test_relative_links_lead_to_files(name: str) -> None:
    """GitHub follows README's docs/*.md links as they are; MkDocs checks the site's own."""
    page = ROOT / name
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        assert (page.parent / target).exists(), f"{name}: {target}"
