"""`repro image`: a Docker image built from a spec."""

from __future__ import annotations

import json
from pathlib import Path

import click

from repro.cli.options import cache_dir_option, json_option
from repro.cli.progress import note


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--base",
    default=None,
    help="Base image with Python 3 and venv (default: local/debian:bookworm-py; docs/docker.md "
    "builds it from Debian's packages).",
)
@click.option(
    "--tag",
    default=None,
    help="Image name (default: repro/<name>:lock-<lock hash>-src-<repro hash>).",
)
@click.option(
    "--bake-artifacts",
    is_flag=True,
    help="Copy the artifacts into the image (default: mounted read-only at run time).",
)
@cache_dir_option
@json_option
def image(
    spec_path: Path,
    base: str | None,
    tag: str | None,
    bake_artifacts: bool,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Build a Docker image for SPEC: the base image, a venv installed from the spec's hashed
    Python lock (`pip install --require-hashes`, from wheels downloaded on the host, so the
    build runs without network) and repro itself.

    Prints the image's name, id and base; `repro capture --env-manager docker` pins them in a
    spec, and `repro replay --env docker` runs each worker in a container of it.

    \b
    Example:
      repro image specs/ort-digits.json
      repro replay specs/ort-digits.json --env docker
    """
    from repro.artifacts.cache import ArtifactCache
    from repro.artifacts.fetching import fetch_all
    from repro.containers.image import DEFAULT_BASE, check_reference
    from repro.environments.docker.manager import DockerManager
    from repro.errors import UsageError
    from repro.validate import require_valid

    if tag is not None:
        check_reference(tag, what="--tag")
    check_reference(base or DEFAULT_BASE, what="--base")
    if tag is not None and tag == (base or DEFAULT_BASE):
        raise UsageError(f"--tag {tag}: that is the base image's name; choose another")
    spec = require_valid(spec_path)
    artifacts: dict[str, Path] = {}
    if bake_artifacts:
        fetched = fetch_all(spec, spec_path, cache=ArtifactCache(cache_dir), progress=note)
        artifacts = {m.sha256: m.path for m in fetched.values()}
    built = DockerManager(note).build_for_spec(
        spec, spec_path, base=base, tag=tag, artifacts=artifacts
    )
    out = {
        "image": built.tag,
        "image_id": built.image_id,
        "base": built.base,
        "base_id": built.base_id,
        "baked_artifacts": list(built.baked),
    }
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"image {built.tag}\n  id   {built.image_id}\n  base {built.base} ({built.base_id})")
    if built.baked:
        click.echo(f"  artifacts inside: {', '.join(s[:12] for s in built.baked)}")
