"""Commands about specs and artifacts: schema, validate, fetch, recipe."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.recipes import RECIPES, get_recipe
from repro.atomic import atomic_path
from repro.cli.options import cache_dir_option, json_option
from repro.cli.params import parse_key_value
from repro.cli.progress import note, warn_if_stale
from repro.digests import sha256_file
from repro.errors import SpecError, UsageError
from repro.spec.io import write_spec
from repro.spec.schema import schema_text

F = TypeVar("F", bound=Callable[..., Any])


@click.command()
@click.option("--report", "of_report", is_flag=True, help="The schema of report.json instead.")
def schema(of_report: bool) -> None:
    """Print the JSON Schema of the experiment spec (repro.experiment/v1).

    \b
    Example:
      repro schema > experiment-v1.schema.json
      repro schema --report > report-v2.schema.json
    """
    from repro.reports.model import report_schema_text

    click.echo(report_schema_text() if of_report else schema_text(), nl=False)


@click.command()
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--fix-id", is_flag=True, help="Rewrite each spec's id to its current digest.")
@json_option
def validate(specs: tuple[Path, ...], fix_id: bool, as_json: bool) -> None:
    """Check specs against the schema and for semantic problems.

    Lock files must exist with their pinned hash, artifacts must name known recipes or
    existing files, and LoadGen settings must be ones LoadGen accepts. Where the model and the
    data set are at hand (a path artifact, or the artifact cache), the workload's input and
    output names and sample counts are checked against them too. Exit 2 on any error.

    \b
    Example:
      repro validate specs/*.json
    """
    from repro.attest.chain import SPEC_ATTESTATION_SUFFIX
    from repro.spec.io import load_spec, spec_id
    from repro.spec.paths import spec_file
    from repro.validate import check, check_contents, local_files

    report: list[dict[str, Any]] = []
    failed: list[SpecError] = []
    for path in specs:
        if path.name.endswith(SPEC_ATTESTATION_SUFFIX) and path.is_file():
            # `specs/*.json` also matches the attestations `repro attest` writes beside specs
            note(f"{path}: skipped: an attestation of a spec (`repro verify` checks it)")
            report.append({"spec": str(path), "skipped": "an attestation, not a spec"})
            continue
        try:
            spec = load_spec(path, check_id=not fix_id)
        except SpecError as exc:
            failed.append(exc)
            report.append({"spec": str(path), "valid": False, "errors": [exc.message]})
            if len(specs) > 1 and not as_json:
                click.echo(f"{path}: error: {exc.message}", err=True)
            continue
        real = spec_file(path)  # a link's target: its relative paths are from its folder
        problems = check(spec, real)
        problems += check_contents(spec, local_files(spec, real, ArtifactCache(None)))
        errors = [p for p in problems if p.severity == "error"]
        if fix_id and spec.id != spec_id(spec):
            if errors:  # a spec that does not validate keeps its id: nothing is written
                note(f"{path}: id not rewritten: the spec has {len(errors)} error(s) (below)")
            else:
                spec = write_spec(spec, real)
                note(f"{path}: id set to {spec.id}")
                warn_if_stale(real)
        for p in problems:
            if not as_json:
                click.echo(f"{path}: {p.severity}: {p.where}: {p.message}", err=True)
        if errors:
            failed.append(SpecError(f"{path}: {len(errors)} semantic error(s)"))
        report.append(
            {
                "spec": str(path),
                "valid": not errors,
                "id": spec_id(spec),
                "problems": [vars(p) for p in problems],
            }
        )
        if not errors and not as_json:
            click.echo(f"{path}: ok ({spec.name}, id {spec_id(spec)[:12]})")
    if as_json:
        click.echo(json.dumps(report, indent=2))
    if len(failed) == 1 and len(specs) == 1:
        raise failed[0]
    if failed:
        raise SpecError(f"{len(failed)} of {len(specs)} spec(s) invalid")


@click.command()
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@cache_dir_option
@json_option
def fetch(specs: tuple[Path, ...], cache_dir: Path | None, as_json: bool) -> None:
    """Materialize every artifact of the specs in the content-addressed cache.

    Each artifact is downloaded, copied or generated under a temporary name and verified by
    sha256 before it gets its final name. A mismatch is an error (exit 3).

    \b
    Example:
      repro fetch specs/ort-resnet50.json
    """
    from repro.artifacts.fetching import fetch_all
    from repro.validate import require_valid

    cache = ArtifactCache(cache_dir)
    out = []
    for path in specs:
        spec = require_valid(path)
        for m in fetch_all(spec, path, cache=cache, progress=note).values():
            out.append(
                {
                    "spec": str(path),
                    "artifact": m.name,
                    "sha256": m.sha256,
                    "size_bytes": m.size_bytes,
                    "path": str(m.path),
                    "origin": m.origin,
                }
            )
            if not as_json:
                click.echo(
                    f"{spec.name}: {m.name}: {m.sha256[:16]} {m.size_bytes} B ({m.origin}) {m.path}"
                )
    if as_json:
        click.echo(json.dumps(out, indent=2))


@click.group()
def recipe() -> None:
    """List and run the deterministic artifact recipes."""


@recipe.command("list")
@json_option
def recipe_list(as_json: bool) -> None:
    """List the registered recipes and their default parameters."""
    rows: list[dict[str, Any]] = [
        {
            "name": r.name,
            "defaults": dict(r.defaults),
            "media_type": r.media_type,
            "deterministic_across_cpus": r.deterministic_across_cpus,
            "description": r.description,
        }
        for r in RECIPES.values()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["defaults"].items())
        click.echo(f"{r['name']}: {r['description']}\n    params: {params}")


def _parse_param(text: str) -> tuple[str, int | float | str | bool]:
    key, value = parse_key_value(text, option="--param", example="NAME=VALUE")
    if not isinstance(value, int | float | str | bool):
        raise SpecError(f"--param {key}: expected a number, string or boolean")
    return key, value


@recipe.command("run")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
@click.option("--param", "params", multiple=True, help="NAME=VALUE, repeatable.")
@click.option("--force", is_flag=True, help="Replace the output file (or folder) if it exists.")
def recipe_run(name: str, output: Path, params: tuple[str, ...], force: bool) -> None:
    """Generate one artifact with a recipe and print its sha256 (a folder's: its digest, then
    each file's, as an artifact's `files` pins them).

    \b
    Example:
      repro recipe run digits-mlp -o artifacts/digits-mlp.onnx --force
      repro recipe run tiny-llama -o /tmp/tiny-llama
    """
    r = get_recipe(name)
    values = dict(_parse_param(p) for p in params)
    r.resolve(values, where="--param")
    if (output.exists() or output.is_symlink()) and not force:
        raise UsageError(
            f"-o {output}: exists: the recipe would overwrite it",
            hint="pass --force to replace it, or name another file",
        )
    if r.folder:
        _run_folder(r, output, values)
        return
    with atomic_path(output) as tmp:
        r.generate(tmp, values)
    click.echo(f"{sha256_file(output)}  {output}")


def _run_folder(r: Any, output: Path, values: dict[str, Any]) -> None:
    """A folder recipe into a new folder beside `output`, renamed into place when whole."""
    import shutil
    import tempfile

    from repro.digests import tree_digest, tree_files

    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        r.generate(work / "folder", values)
        if output.is_dir() and not output.is_symlink():
            shutil.rmtree(output)
        elif output.exists() or output.is_symlink():
            output.unlink()
        (work / "folder").replace(output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    files = tree_files(output)
    click.echo(f"{tree_digest(files)}  {output}/")
    click.echo(json.dumps({"files": files}, indent=2))


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="MetaSchedule trials per task.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Database file (default: artifacts/<name>-tuning-db.json).",
)
@cache_dir_option
def tune(spec_path: Path, trials: int, output: Path | None, cache_dir: Path | None) -> None:
    """Tune a TVM spec with MetaSchedule and pin the database in the spec as an artifact.

    Untuned TVM on a CPU is ~90x slower than onnxruntime: the database is part of the
    experiment. The spec gets artifacts.tuning_db (path + sha256) and a new id.

    \b
    Example:
      repro tune specs/tvm-resnet50.json --trials 8
    """
    from repro.backends.tvm.tuning import tune as run_tune
    from repro.validate import require_valid

    spec = require_valid(spec_path)
    out = output or Path("artifacts") / f"{spec.name}-tuning-db.json"
    new = run_tune(
        spec,
        spec_path,
        trials_per_task=trials,
        out_path=out,
        cache=ArtifactCache(cache_dir),
        report=note,
    )
    click.echo(f"{spec_path}: tuning database {out} pinned (spec id {new.id})")
