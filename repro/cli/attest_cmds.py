"""`repro keygen`, `repro attest`, `repro verify`: signed in-toto statements of the chain
spec -> environment -> run -> report, and checking them (and packages)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from repro.cli.options import json_option
from repro.errors import EXIT_NEGATIVE, ArtifactError, UsageError


@click.command()
@click.option(
    "--output",
    "-o",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of the key pair (default: ~/.config/repro/keys).",
)
@click.option("--force", is_flag=True, help="Replace an existing key pair.")
def keygen(folder: Path | None, force: bool) -> None:
    """Make an ed25519 signing key pair for `repro attest` (the private key mode 0600; it is
    never written into a run, a report or a package).

    \b
    Example:
      repro keygen
      repro attest results/ort-digits/original --key ~/.config/repro/keys/repro-signing.key
    """
    from repro.attest.keys import default_key_dir, generate

    private, public = generate(folder or default_key_dir(), force=force)
    click.echo(f"private key: {private} (keep it; mode 0600)\npublic key:  {public} (share it)")


@click.command()
@click.argument("targets", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--key",
    "key_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The private key (default: ~/.config/repro/keys/repro-signing.key).",
)
def attest(targets: tuple[Path, ...], key_path: Path | None) -> None:
    """Sign an in-toto statement of a spec, a run or a report and write it beside it.

    A spec's lists its file, lock files and path artifacts; a run's is SLSA provenance (every
    file of the run, the spec id, artifact and lock digests it ran with, its environment); a
    report's lists its files and each side's run.json digest.

    \b
    Example:
      repro attest specs/ort-digits.json results/ort-digits/original results/ort-digits/<run>
      repro report --compare results/ort-digits/ && repro attest reports/ort-digits
    """
    from repro.attest.chain import write_attestation
    from repro.attest.keys import PRIVATE, default_key_dir, load_signer

    key = key_path or default_key_dir() / PRIVATE
    if not key.is_file():
        raise UsageError(f"--key {key}: no such key file", hint="make one with `repro keygen`")
    signer = load_signer(key)
    for target in targets:
        out = write_attestation(target, signer)
        click.echo(f"attested {target} -> {out}")


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option(
    "--key",
    "key_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The public key the attestations must be signed with (repro-signing.pub).",
)
@json_option
def verify(target: Path, key_path: Path | None, as_json: bool) -> None:
    """Check a package, a run, a report or a spec: every hash against the bytes on disk and,
    with --key, every attestation's signature along the chain spec -> run -> report; the first
    link that does not hold is named. Exit 0 verified, 1 not, 2 bad input.

    \b
    Example:
      repro verify reports/ort-digits --key repro-signing.pub
      repro verify ort-digits.repro.tar.zst --key repro-signing.pub
    """
    from repro.attest.chain import Link, verify_target
    from repro.attest.keys import load_public
    from repro.attest.package import verify_package
    from repro.packaging.pack import is_package
    from repro.packaging.pack import unpack as extract
    from repro.replay.worker_end import stopped_by_signals

    key = load_public(key_path) if key_path is not None else None
    links: list[Link]
    if is_package(target):
        with stopped_by_signals(), tempfile.TemporaryDirectory(prefix="repro-verify-") as tmp:
            root = Path(tmp) / "p"
            try:
                manifest = extract(target, root)
            except ArtifactError as exc:
                links = [Link("package", str(target), [exc.message])]
            else:
                links = verify_package(root, manifest, key)
                for link in links:  # name the packaged files, not a folder about to be deleted
                    link.where = _in_package(link.where, root, target)
                    link.problems = [_in_package(p, root, target) for p in link.problems]
    else:
        links = verify_target(target, key)
    _report(links, as_json)


def _in_package(text: str, root: Path, package: Path) -> str:
    """A text naming a file of the unpacked package, naming it inside the package instead."""
    return text.replace(f"{root}/", f"{package}:").replace(str(root), f"{package}:")


def _report(links: list[Any], as_json: bool) -> None:
    failed = [link for link in links if not link.ok]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "verified": not failed,
                    "links": [
                        {
                            "kind": x.kind,
                            "where": x.where,
                            "problems": x.problems,
                            "verified": x.verified if x.ok else [],
                        }
                        for x in links
                    ],
                },
                indent=2,
            )
        )
    else:
        for link in links:
            mark = "OK" if link.ok else "FAILED"
            click.echo(f"{mark:6} {link.kind:8} {link.where}")
            for problem in link.problems[:20]:
                click.echo(f"         {problem}")
            if link.ok:
                for fact in link.verified:
                    click.echo(f"         {fact}")
    if failed:
        first = failed[0]
        click.secho(
            f"error: not verified: the first link that does not hold is the {first.kind} "
            f"({first.where}): {first.problems[0]}",
            err=True,
            fg="red",
        )
        raise click.exceptions.Exit(EXIT_NEGATIVE)
