"""`repro spack`: pin a spec to its Spack environment, check manifests and locks, show a lock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from repro.cli.options import cache_dir_option, json_option
from repro.cli.progress import note
from repro.errors import SpecError


@click.group()
def spack() -> None:
    """Spack environments: pin a spec to one (pin), check them (check), read a lock (show)."""


def _manifest_for(spec_path: Path, manifest: Path | None) -> Path:
    from repro.spec.io import load_spec
    from repro.spec.paths import resolve_path
    from repro.spec.spack_pins import MANIFEST_NAME

    if manifest is not None:
        return manifest
    spec = load_spec(spec_path)
    if spec.environment.spack is not None:
        return resolve_path(spec.environment.spack.spack_yaml.path, spec_path.parent)
    return spec_path.parent.parent / "lockfiles" / spec.name / MANIFEST_NAME


@spack.command("pin")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--manifest",
    type=click.Path(path_type=Path),
    help="The spack.yaml (default: the one pinned, else lockfiles/<name>/spack.yaml).",
)
@click.option(
    "--concretize/--no-concretize",
    default=None,
    help="Run `spack -e DIR concretize` first (default: when Spack is here and no lock is).",
)
def spack_pin(spec_path: Path, manifest: Path | None, concretize: bool | None) -> None:
    """Record (or refresh) the spec's Spack pins: the spack.yaml, its spack.lock, the roots'
    DAG hashes and the key packages (llvm, onednn, apache-tvm, python, py-onnxruntime).

    The spec's id changes only when Spack is its captured manager.

    \b
    Example (where Spack is):
      spack -e lockfiles/tvm-resnet50 concretize
      repro spack pin specs/tvm-resnet50.json
    """
    from repro.backends.registry import spack_key_packages
    from repro.environments.spack.manager import SpackManager, pin_builtin_commit
    from repro.formats.spack.pins import keep_builtin_commit, pins_from_files
    from repro.spec.io import load_spec, parse_spec, spec_id, write_spec
    from repro.spec.spack_pins import LOCK_NAME

    target = _manifest_for(spec_path, manifest)
    if not target.is_file():
        raise SpecError(
            f"{target}: missing: the Spack environment to pin",
            hint="write one (lockfiles/ort-digits/spack.yaml is an example) or give --manifest",
        )
    have_spack = SpackManager.available()[0]
    if concretize is None:
        concretize = have_spack and not (target.parent / LOCK_NAME).is_file()
    if concretize:
        if not have_spack:
            raise SpecError("--concretize: `spack` is not on PATH", hint="install Spack first")
        note(f"concretizing {target} (spack -e {target.parent} concretize)")
        SpackManager(note).concretize(target.parent)
    spec = load_spec(spec_path)
    raw = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    pins_raw = pins_from_files(target, spec_path.parent, spack_key_packages())
    if have_spack:
        pin_builtin_commit(pins_raw, note)
    else:  # no Spack to ask: the commit pinned with this very lock still holds
        keep_builtin_commit(pins_raw, raw["environment"].get("spack"))
    raw["environment"]["spack"] = pins_raw
    before = spec_id(spec)
    written = write_spec(parse_spec(raw, source=str(spec_path)), spec_path)
    pins = written.environment.spack
    assert pins is not None
    locked = f"{pins.spack_lock.path} ({len(pins.roots)} roots)" if pins.spack_lock else "no lock"
    click.echo(f"{spec_path}: Spack pins from {pins.spack_yaml.path}, {locked}")
    for name, p in sorted(pins.packages.items()):
        click.echo(f"  {name:<22} {p.version} {p.variants or ''}".rstrip())
    if written.id != before:
        click.echo(f"the spec's id changed (Spack is its manager): {written.id}")


def _check_one(path: Path) -> list[str]:
    """Problems of one path: a spec, a spack.yaml, a spack.lock or a folder holding them."""
    from repro.formats.spack.lockfile import read_spack_lock
    from repro.formats.spack.manifest import check_consistency, read_manifest
    from repro.spec.spack_pins import LOCK_NAME, MANIFEST_NAME

    if not path.exists():
        raise SpecError(f"{path}: no such file or folder")
    if path.suffix == ".json" and path.name != LOCK_NAME:
        from repro.spec.io import load_spec
        from repro.validate import validate_file

        if load_spec(path, check_id=False).environment.spack is None:
            return ["$.environment.spack: the spec has no Spack pins (`repro spack pin`)"]
        _, found = validate_file(path)
        return [
            f"{p.where}: {p.message}"
            for p in found
            if p.where.startswith("$.environment") and p.severity == "error"
        ]
    if path.is_dir():
        manifest, lock = path / MANIFEST_NAME, path / LOCK_NAME
        if not manifest.exists() and not lock.exists():
            raise SpecError(f"{path}: no {MANIFEST_NAME} or {LOCK_NAME} in this folder")
    elif path.suffix in (".yaml", ".yml"):
        manifest, lock = path, path.parent / LOCK_NAME
    elif path.name.endswith(".lock"):
        manifest, lock = path.parent / MANIFEST_NAME, path
    else:
        raise SpecError(f"{path}: not a spec, a spack.yaml, a spack.lock or a folder")
    named = path if not path.is_dir() else None
    if named is not None and not named.is_file():
        raise SpecError(f"{named}: no such file" if not named.exists() else f"{named}: not a file")
    m = read_manifest(manifest) if manifest.exists() else None
    lk = read_spack_lock(lock) if lock.exists() else None
    problems: list[str] = []
    if m is not None:
        problems += [
            f"$.spack.repos.{r.name or r.path}: not pinned (a git repository needs a full, "
            "lower-case 40-hex `commit`)"
            for r in m.repos
            if not r.pinned
        ]
    if m is not None and lk is not None:
        result = check_consistency(m, [r.spec for r in lk.roots])
        if result.checked and not result.consistent:
            problems.append(
                f"{lock.name}'s roots are not the specs of {manifest.name}: only in the "
                f"manifest {list(result.only_in_manifest)}, only in the lock "
                f"{list(result.only_in_lock)}"
            )
        elif not result.checked:
            note(f"{manifest}: {result.note}")
    return problems


@spack.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def spack_check(paths: tuple[Path, ...]) -> None:
    """Check Spack environments: spack.yaml against Spack's schema rules, spack.lock readable,
    the lock's roots are the manifest's specs, repositories pinned; for a spec, its pins.

    Every path is checked; exit status 2 when any check fails.

    \b
    Example:
      repro spack check lockfiles/tvm-resnet50 specs/tvm-resnet50.json
    """
    failed = False
    for path in paths:
        try:
            problems = _check_one(path)
        except SpecError as exc:
            problems = [exc.message.removeprefix(f"{path}: ")]
        for p in problems:
            click.echo(f"{path}: {p}")
        if not problems:
            click.echo(f"{path}: ok")
        failed |= bool(problems)
    if failed:
        raise SpecError("Spack environment checks failed (listed above)")


@spack.command("show")
@click.argument("lock_path", metavar="LOCK", type=click.Path(path_type=Path))
@json_option
def spack_show(lock_path: Path, as_json: bool) -> None:
    """Summarize a spack.lock of any version (1-8): roots, DAG hashes, key packages.

    \b
    Example:
      repro spack show lockfiles/tvm-resnet50/spack.lock
    """
    from repro.backends.registry import spack_key_packages
    from repro.formats.spack.lockfile import read_spack_lock

    summary: dict[str, Any] = read_spack_lock(lock_path).summary(spack_key_packages())
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    spack_ = summary["spack"]
    click.echo(
        f"{lock_path}: lockfile v{summary['lockfile_version']}, {summary['packages']} "
        f"packages, Spack {spack_['version'] or 'unknown'}"
        + (f" ({spack_['commit'][:12]})" if spack_["commit"] else "")
    )
    click.echo("roots:")
    for r in summary["roots"]:
        click.echo(f"  {r['hash'][:7]}  {r['spec']}")
    if summary["key_packages"]:
        from repro.formats.spack.pins import package_text

        click.echo("key packages:")
        for name, p in summary["key_packages"].items():
            click.echo(f"  {name:<24} {package_text(p)}")


@spack.command("mirror")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The mirror folder (default: the artifact cache's spack-mirror/, where `repro replay "
    "--env spack` looks).",
)
@cache_dir_option
@json_option
def spack_mirror(spec_path: Path, out: Path | None, cache_dir: Path | None, as_json: bool) -> None:
    """A source mirror with exactly the sources the spec's spack.lock needs, fetched from PyPI
    and checked against the sha256 each Spack recipe pins, laid out as Spack reads a mirror.

    `repro replay --env spack` installs from it without the network (`--output` elsewhere:
    REPRO_SPACK_MIRROR=DIR); `repro pack --with-artifacts` of a Spack spec carries it.

    \b
    Example:
      repro spack mirror specs/ort-digits.json
      REPRO_SPACK_MIRROR=/media/usb/mirror repro replay specs/ort-digits.json --env spack
    """
    import tempfile

    from repro.artifacts.cache import ArtifactCache
    from repro.environments.spack.manager import SpackManager, pinned_environment
    from repro.environments.spack.mirror import make_mirror
    from repro.spec.io import load_spec

    spec = load_spec(spec_path)
    target = out or ArtifactCache(cache_dir).root / "spack-mirror"
    with tempfile.TemporaryDirectory(prefix="repro-spack-mirror-") as tmp:
        env_dir = pinned_environment(SpackManager(note), spec, spec_path, Path(tmp) / "env")
        fetched = make_mirror(env_dir, target, report=note)
    if as_json:
        click.echo(json.dumps({"mirror": str(target), "sources": [s.__dict__ for s in fetched]}))
        return
    click.echo(
        f"mirror {target}: {len(fetched)} source(s) checked against the spack.lock's recipes"
    )
