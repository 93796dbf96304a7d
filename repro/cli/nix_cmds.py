"""`repro prefetch`: the hashes Nix wants for a file, a tree or a URL."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click

from repro.cli.options import json_option
from repro.errors import SpecError


@click.command()
@click.argument("target")
@json_option
def prefetch(target: str, as_json: bool) -> None:
    """Print the hashes Nix wants for PATH or URL, so it enters a flake as a fixed output.

    For a file: its flat sha256 (fetchurl's `hash`) and its NAR hash (`narHash`, as
    `nix hash path` prints it); for a directory: its NAR hash. A URL is downloaded first.

    \b
    Example:
      repro prefetch artifacts/digits-mlp.onnx
      repro prefetch https://zenodo.org/record/4735647/files/resnet50_v1.onnx
    """
    from repro.artifacts.fetch import download
    from repro.formats.nix.nar import flat_hash, nar_hash

    with tempfile.TemporaryDirectory() as tmp:
        if target.startswith(("http://", "https://", "file://")):
            path = Path(tmp) / "download"
            download(target, path)
        else:
            path = _local_path(target)
        out: dict[str, object] = {"target": target, "nar": nar_hash(path)}
        if path.is_file() and not path.is_symlink():
            out["flat"] = flat_hash(path)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    nar = out["nar"]
    assert isinstance(nar, dict)
    if "flat" in out:
        flat = out["flat"]
        assert isinstance(flat, dict)
        click.echo(f"fetchurl hash (flat): {flat['sri']}")
        click.echo(f"  nix32 {flat['nix32']}  hex {flat['hex']}")
    click.echo(f"narHash (NAR):        {nar['sri']}")
    click.echo(f"  nix32 {nar['nix32']}  hex {nar['hex']}  nar size {nar['nar_size']}")


def _local_path(target: str) -> Path:
    """The path to hash; one that is missing or cannot be looked at is a SpecError naming it."""
    if not target:
        raise SpecError("prefetch: PATH is empty", hint="give a file, a directory or a URL")
    path = Path(target)
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise SpecError(
            f"{target}: no such file or directory", hint="check the path, or give a URL"
        ) from None
    except OSError as exc:
        raise SpecError(
            f"{target}: cannot look at it ({exc.strerror or type(exc).__name__})",
            hint="make it and the folders above it readable by this user",
        ) from None
    return path
