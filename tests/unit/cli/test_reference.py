"""The reference pages of every command and spec field are the code's own: current, and with
an entry for each (a command without help, a field without a description, fails)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from repro.cli.reference import commands_page, fields_page

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_committed_pages_are_current_and_complete() -> None:
    # in a fresh interpreter, as the docs build checks: a test that invokes a command directly
    # leaves click's cached help option on it without `-h` (the group's), and the page differs
    proc = subprocess.run(
        [sys.executable, "-m", "repro.cli.reference", "--check", str(DOCS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_command_without_help_is_missing_its_entry() -> None:
    @click.group()
    def root() -> None:
        """The root."""

    @root.command()
    def documented() -> None:
        """Does a thing."""

    @root.command()
    def silent() -> None:
        pass

    page, missing = commands_page(root)
    assert missing == ["repro silent"]
    assert "## repro documented" in page
    assert "Does a thing." in page


def test_a_field_without_a_description_is_missing_its_entry() -> None:
    schema = {
        "properties": {
            "name": {"type": "string", "description": "what it is called"},
            "size": {"type": "integer"},
            "kind": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
        },
        "$defs": {
            "A": {"description": "a", "properties": {"k": {"const": "a"}, "x": {"type": "string"}}},
            "B": {"description": "b", "properties": {"k": {"const": "b", "description": "b's"}}},
        },
    }
    page, missing = fields_page(schema)
    assert missing == ["$.kind.k (k: a)", "$.kind.x (k: a)", "$.size"]
    assert "| `$.kind.k` | `k: b` |" in page
