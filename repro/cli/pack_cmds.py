"""`repro pack`, `repro unpack`, `repro verify`: portable experiment packages."""

from __future__ import annotations

import json
from pathlib import Path

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.options import cache_dir_option, json_option
from repro.cli.progress import note
from repro.errors import UsageError
from repro.replay.worker_end import stopped_by_signals


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The package: NAME.repro.tar, .repro.tar.gz, .repro.tar.xz or .repro.tar.zst.",
)
@click.option("--with-artifacts", is_flag=True, help="Every artifact's bytes, by sha256.")
@click.option(
    "--with-wheels", is_flag=True, help="The Python lock's wheels (a venv builds offline)."
)
@click.option("--with-image", is_flag=True, help="The spec's pinned Docker image (docker save).")
@click.option("--with-results", is_flag=True, help="The spec's other finished runs.")
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where --with-results finds results/<name>/.",
)
@click.option(
    "--sign",
    is_flag=True,
    help="Sign the package: a statement of every member's sha256, signed with --key.",
)
@click.option(
    "--key",
    "key_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The private key to sign with (implies --sign; default: "
    "~/.config/repro/keys/repro-signing.key).",
)
@cache_dir_option
@json_option
def pack(
    spec_path: Path,
    out: Path,
    with_artifacts: bool,
    with_wheels: bool,
    with_image: bool,
    with_results: bool,
    results_dir: Path,
    sign: bool,
    key_path: Path | None,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Write an experiment package: the spec and every file it names, its original results,
    and on request the artifacts, wheels, image and other runs; a manifest holds the sha256 of
    every member.

    The spec is kept byte for byte (its id and its original's stay valid): the files it names
    must be relative to it. Of a `path:` flake, only the flake goes in (the files git tracks,
    or flake.nix, flake.lock and what flake.nix names); files that look like credentials
    (.netrc, .env, keys) never do, and what was left out is said. With --sign, the package
    carries a signed statement of every member's sha256 (`repro verify PACKAGE --key PUB`
    then fails on any member it does not cover). `repro replay PACKAGE` replays from the
    package, offline when it carries what the replay needs.

    \b
    Example:
      repro pack specs/ort-digits.json -o ort-digits.repro.tar.zst --with-artifacts \\
        --with-wheels --sign
      repro replay ort-digits.repro.tar.zst --env venv
    """
    from repro.packaging.pack import PackOptions, is_package
    from repro.packaging.pack import pack as write
    from repro.validate import require_valid

    if not is_package(out):
        raise UsageError(
            f"--output {out}: a package is named NAME.repro.tar[.gz|.xz|.zst]",
            hint=f"e.g. -o {out.name.split('.')[0] or 'experiment'}.repro.tar.zst",
        )
    spec = require_valid(spec_path)
    signer = None
    if sign or key_path is not None:
        from repro.attest.keys import PRIVATE, default_key_dir, load_signer

        key = key_path or default_key_dir() / PRIVATE
        if not key.is_file():
            raise UsageError(f"--key {key}: no such key file", hint="make one with `repro keygen`")
        signer = load_signer(key)
    with stopped_by_signals():
        manifest = write(
            spec,
            spec_path,
            out,
            PackOptions(with_artifacts, with_wheels, with_image, with_results),
            cache=ArtifactCache(cache_dir),
            results_dir=results_dir,
            report=note,
            signer=signer,
        )
    size = out.stat().st_size
    if as_json:
        click.echo(manifest.model_dump_json(by_alias=True, indent=2))
        return
    roles: dict[str, int] = {}
    for m in manifest.members:
        roles[m.role] = roles.get(m.role, 0) + 1
    listing = ", ".join(f"{n} {role}" for role, n in sorted(roles.items()))
    click.echo(f"wrote {out} ({size / 2**20:.1f} MiB): {len(manifest.members)} files ({listing})")


@click.command()
@click.argument("package", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A new folder to unpack into (default: the package's name without its ending).",
)
@json_option
def unpack(package: Path, target: Path | None, as_json: bool) -> None:
    """Unpack a package safely and check every file against its manifest.

    Refused, with nothing written: absolute or '..' names, links, devices, sparse or duplicate
    members, files not in the manifest (or missing from the archive), a size or sha256 that
    differs from the manifest's, more than 32 GiB in all.

    \b
    Example:
      repro unpack ort-digits.repro.tar.zst -o ort-digits-pkg
    """
    from repro.packaging.pack import PACKAGE_ENDINGS
    from repro.packaging.pack import unpack as extract

    if target is None:
        name = package.name
        for ending in PACKAGE_ENDINGS:
            name = name.removesuffix(ending)
        target = package.parent / (name or "package")
    with stopped_by_signals():
        manifest = extract(package, target)
    if as_json:
        click.echo(json.dumps({"folder": str(target), **manifest.model_dump(by_alias=True)}))
        return
    click.echo(
        f"unpacked {len(manifest.members)} files into {target}, every sha256 checked; "
        f"spec: {target / manifest.spec}"
    )
