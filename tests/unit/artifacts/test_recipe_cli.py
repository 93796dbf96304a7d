"""`repro recipe run -o FILE` never replaces an existing file unless told to."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from repro.cli import cli


def test_an_existing_output_is_refused_without_force(tmp_path: Path) -> None:
    out = tmp_path / "digits.npz"
    out.write_bytes(b"someone's file")
    args = ["recipe", "run", "sklearn-digits", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "exists" in result.stderr
    assert "--force" in result.stderr
    assert out.read_bytes() == b"someone's file"
    result = CliRunner().invoke(cli, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() != b"someone's file"
    assert result.stdout.split()[1] == str(out)
