"""`repro import-mlperf TREE`: published MLPerf results as repro experiments."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli.options import json_option
from repro.cli.progress import note
from repro.errors import SpecError
from repro.spec.types import SCENARIOS


@click.command("import-mlperf")
@click.argument("tree", type=click.Path(path_type=Path))
@click.option("--submitter", help="Only this submitter's results (its folder name).")
@click.option("--system", help="Only this system's results (its folder name).")
@click.option("--benchmark", help="Only this benchmark's results (e.g. resnet50).")
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Choice(SCENARIOS, case_sensitive=False),
    help="Only these scenarios (repeatable).",
)
@click.option(
    "--base",
    "base_spec",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The spec whose model, data and backend replay the result (e.g. specs/ort-resnet50.json).",
)
@click.option(
    "--specs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("specs"),
    show_default=True,
    help="Where the specs go.",
)
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where the originals go (results/<name>/original/).",
)
@json_option
def import_mlperf(
    tree: Path,
    submitter: str | None,
    system: str | None,
    benchmark: str | None,
    scenarios: tuple[str, ...],
    base_spec: Path,
    specs_dir: Path,
    results_dir: Path,
    as_json: bool,
) -> None:
    """Import published MLPerf results (any level of a tree): per result, a spec that replays
    its LoadGen settings and seeds with the base spec's model, data and backend, and the result
    itself as that spec's original (its logs copied, run.json with the effective settings).

    \b
    Example:
      repro import-mlperf inference_results_v4.1/closed/Intel --benchmark resnet50 \\
          --base specs/ort-resnet50.json
      repro replay specs/mlperf-resnet50-intel-1-node-2s-emr-pytorch.json --env native
      repro report --compare results/mlperf-resnet50-intel-1-node-2s-emr-pytorch/
    """
    from repro.mlperf.importing import import_result, select

    if not tree.is_dir():
        raise SpecError(f"{tree}: no such directory")
    sources = select(tree, submitter=submitter, system=system, benchmark=benchmark)
    if not sources:
        wanted = ", ".join(
            f"{k} {v}"
            for k, v in (("submitter", submitter), ("system", system), ("benchmark", benchmark))
            if v
        )
        raise SpecError(
            f"{tree}: no published result" + (f" of {wanted}" if wanted else ""),
            hint="`repro results TREE` lists what the tree holds",
        )
    canonical = tuple(next(s for s in SCENARIOS if s.lower() == x.lower()) for x in scenarios)
    imported = []
    for source in sources:
        done = import_result(
            source, base_spec, specs_dir=specs_dir, results_dir=results_dir, scenarios=canonical
        )
        imported.append(done)
        if not as_json:
            click.echo(
                f"{done.name}: spec {done.spec_path}, original {done.original} "
                f"({', '.join(done.scenarios)})"
            )
        for warning in done.warnings:
            click.secho(f"warning: {done.name}: {warning}", err=True, fg="yellow")
    if as_json:
        import json

        click.echo(
            json.dumps(
                [
                    {
                        "name": d.name,
                        "source": str(d.source),
                        "spec": str(d.spec_path),
                        "original": str(d.original),
                        "scenarios": d.scenarios,
                        "warnings": list(d.warnings),
                    }
                    for d in imported
                ],
                indent=2,
            )
        )
    if len(imported) == 1:
        [done] = imported
        note(
            f"replay with `repro replay {done.spec_path}`, then "
            f"`repro report --compare {done.original.parent}/`"
        )
    else:
        note(
            f"replay each with `repro replay {specs_dir}/<name>.json`, then "
            f"`repro report --compare {results_dir}/<name>/` (the names above)"
        )
