"""`repro submission RUN...`: an MLPerf Inference submission tree, with compliance runs and a
structural check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.progress import TimedBar, note
from repro.cli.spec_cmds import cache_dir_option, env_option, json_option
from repro.errors import SpecError, UsageError


@click.command()
@click.argument("runs", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--submitter", default=None, help="The submitting organization (a folder name).")
@click.option(
    "--division", type=click.Choice(["closed", "open"]), default="closed", show_default=True
)
@click.option(
    "--system-name", default=None, help="The system's name (default: from --system-json)."
)
@click.option(
    "--system-json",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The systems JSON fields only you know (status, system_type, sockets, ...); see "
    "--template. Its fields override what the fingerprint says.",
)
@click.option("--template", is_flag=True, help="Print the fields --system-json must give.")
@click.option(
    "--output", "-o", "out", type=click.Path(file_okay=False, path_type=Path), default=None
)
@click.option(
    "--compliance/--no-compliance",
    default=True,
    show_default=True,
    help="Run TEST01 and TEST04 (LoadGen's audit.config) for each scenario.",
)
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The runs' spec, when its recorded path is not here (compliance runs need it).",
)
@env_option("the compliance runs run")
@cache_dir_option
@json_option
def submission(
    runs: tuple[Path, ...],
    submitter: str | None,
    division: str,
    system_name: str | None,
    system_json: Path | None,
    template: bool,
    out: Path | None,
    compliance: bool,
    spec_path: Path | None,
    env_name: str,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Write an MLPerf Inference submission tree from finished runs, run the compliance tests,
    and list every rule of the submission checker the tree breaks (exit 1 when any).

    Short runs break the closed division's minimum duration and query counts: those violations
    are marked as needing a full-length run. `repro import-mlperf OUT` reads the tree back.

    \b
    Example:
      repro submission --template > system.json   # then fill it in
      repro submission results/ort-digits/<run> --submitter MyOrg --system-json system.json -o sub
    """
    from repro.mlperf.submission import compliance_runner, write_tree
    from repro.mlperf.submission import template as fields

    if template:
        click.echo(json.dumps({**fields(), "system_name": "your system's name"}, indent=2))
        return
    if not runs or submitter is None or out is None:
        raise UsageError("give RUN..., --submitter and -o DIR (or --template)")
    if spec_path is not None:
        from repro.runs.store import load_run
        from repro.spec.io import load_spec, spec_id

        wanted = spec_id(load_spec(spec_path, check_id=False))
        for run in runs:
            if load_run(run).spec_id != wanted:
                raise UsageError(
                    f"--spec {spec_path}: not the spec {run} ran (spec id {wanted[:12]})",
                    hint="give the run's own spec",
                )
    given: dict[str, Any] = {}
    if system_json is not None:
        from repro.jsonio import read_json

        loaded = read_json(system_json)
        if not isinstance(loaded, dict):
            raise SpecError(f"{system_json}: $: expected a JSON object")
        given = loaded
    system = system_name or given.get("system_name")
    if not system:
        raise UsageError("name the system: --system-name, or system_name in --system-json")
    cache = ArtifactCache(cache_dir)
    runner = (
        compliance_runner(
            env_name=env_name, cache=cache, report=note, progress=TimedBar, spec_override=spec_path
        )
        if compliance
        else None
    )
    sub = write_tree(
        list(runs), out, division=division, submitter=submitter, system=str(system),
        given=given, compliance=runner, report=note,
    )  # fmt: skip
    if as_json:
        click.echo(
            json.dumps(
                {
                    "root": str(sub.root),
                    "violations": [v.__dict__ for v in sub.violations],
                },
                indent=2,
            )
        )
    else:
        click.echo(f"wrote {sub.root}")
        for v in sub.violations:
            mark = " (needs a full-length run)" if v.needs_full_run else ""
            click.echo(f"  violation [{v.rule}]{mark}: {v.where}: {v.why}")
        click.echo(f"{len(sub.violations)} violation(s) of the submission checker's rules")
    if sub.violations:
        raise click.exceptions.Exit(1)
