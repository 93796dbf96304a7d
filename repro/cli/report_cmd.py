"""`repro report --compare ORIGINAL [REPLAY...]`: the reproducibility verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from repro.cli.options import track_option
from repro.cli.progress import note
from repro.errors import UsageError

if TYPE_CHECKING:
    from repro.reports.model import Report

FORMATS = ("md", "html", "json")


@click.command()
@click.option(
    "--compare",
    "original",
    required=True,
    type=click.Path(path_type=Path),
    help="The original: results/<name>/, a run dir, or any level of a published MLPerf tree.",
)
@click.argument("replays", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Report folder (default: reports/<name>/; with a published side "
    "reports/<benchmark>/<side>-vs-<side>/). With several pairs, DIR takes reports/'s place: "
    "DIR/<benchmark>/<side>-vs-<side>/, one folder per pair.",
)
@click.option(
    "--format",
    "formats",
    default="md,html,json",
    show_default=True,
    help="Comma-separated: md, html, json.",
)
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Take the tolerances from this spec.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on an inconclusive verdict too.")
@click.option(
    "--allow-different-specs",
    is_flag=True,
    help="Compare runs of different specs (a changed experiment) instead of refusing.",
)
@click.option(
    "--allow-different-benchmarks",
    is_flag=True,
    help="Compare a published result with one of another benchmark (published, or a repro "
    "run whose spec does not name it among its tags), for information only.",
)
@click.option(
    "--same-hardware",
    is_flag=True,
    help="The sides' servers ran on the same hardware: judge their speed (another harness's "
    "result records no hardware, so its speed is shown for information without this).",
)
@track_option
@click.option("--json", "as_json", is_flag=True, help="Print report.json to stdout.")
def report(
    original: Path,
    replays: tuple[Path, ...],
    output: Path | None,
    formats: str,
    spec_path: Path | None,
    strict: bool,
    allow_different_specs: bool,
    allow_different_benchmarks: bool,
    same_hardware: bool,
    as_json: bool,
) -> None:
    """Compare replays with the original: per scenario and metric, a verdict and its reason.

    Either side may be a repro run or any level of a published MLPerf tree (a round, division,
    submitter, system, benchmark, scenario or performance/run_k; LoadGen's logs or MLCommons
    endpoints' results): when a side holds several results, each is paired with the other
    side's result of the same benchmark (and system), one report per pair; what has no partner
    is listed. A side may also be another harness's served results (AIPerf's
    profile_export_aiperf.json or its folder, GuideLLM's JSON, vllm bench serve's JSON): each
    metric is compared on one definition, measured again from the requests where a side kept
    them, or left out with the reason.

    Exit 0 when everything is reproduced (or inconclusive, unless --strict), 1 when a metric
    is not reproduced, 2 on bad input.

    \b
    Example:
      repro report --compare results/ort-digits/
      repro report --compare results/ort-digits/original results/ort-digits/20261129T1715Z-3fa2c1
      repro report --compare v4.1/closed/Intel v5.0/closed/Intel
      repro report --compare results/served-tinyllm/ aiperf-artifacts/ --same-hardware
    """
    from repro.compare.build import build_report
    from repro.compare.inputs import report_folders, resolve_pairs, tolerances_for

    wanted = tuple(f.strip() for f in formats.split(",") if f.strip())
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise UsageError(f"--format {formats}: expected a comma-separated subset of {FORMATS}")
    pairing = resolve_pairs(
        original,
        list(replays),
        allow_different_specs=allow_different_specs,
        allow_different_benchmarks=allow_different_benchmarks,
    )
    results = []
    for orig, reps in pairing.pairs:
        tolerances, source = tolerances_for(orig, reps, spec_path=spec_path)
        result = build_report(
            orig,
            reps,
            tolerances=tolerances,
            strict=strict,
            tolerances_source=source,
            same_hardware=same_hardware,
        )
        # how the pair was chosen belongs in its report too
        results.append(result.model_copy(update={"notes": [*pairing.notes, *result.notes]}))
    if as_json:
        dumped = [r.model_dump(mode="json", by_alias=True) for r in results]
        click.echo(json.dumps(dumped[0] if len(dumped) == 1 else dumped, indent=2))
    codes = []
    folders = report_folders(pairing.pairs, output)
    for result, folder in zip(results, folders, strict=True):
        codes.append(write_report(result, output=folder, formats=wanted, quiet=as_json))
    for line in pairing.notes:
        note(line)
    for line in pairing.unmatched:
        note(line if line.startswith("not read: ") else f"not paired: {line}")
    raise click.exceptions.Exit(max(codes))


def write_report(
    result: Report, *, output: Path | None, formats: tuple[str, ...], quiet: bool
) -> int:
    """Write the report's files (reports/<name>/ unless `output`), print its summary unless
    `quiet`, and return the exit code its verdict calls for."""
    from repro.atomic import atomic_write_text
    from repro.outputs import written
    from repro.privacy import redact_text
    from repro.reports import html as html_report
    from repro.reports import markdown, text
    from repro.runs.layout import component

    out_dir = output or Path("reports") / component(
        result.spec_name, what=f"{result.original.path}: the spec name in the run record"
    )
    rendered = {
        "md": lambda: markdown.render(result),
        "html": lambda: html_report.render(result),
        "json": lambda: result.model_dump_json(indent=2, by_alias=True) + "\n",
    }
    for fmt in formats:
        atomic_write_text(out_dir / f"report.{fmt}", redact_text(rendered[fmt]()))
    if not quiet:
        click.echo(text.render(result), nl=False)
    note(f"report written to {out_dir}/report.{{{','.join(formats)}}}")
    if "json" not in formats and _tracking():
        # the catalog logs a report from its report.json: asked to log, it is written too
        atomic_write_text(out_dir / "report.json", redact_text(rendered["json"]()))
        note(f"{out_dir}/report.json written too: the catalog (--track) logs the report from it")
    if "json" in formats or _tracking():
        written.note("reports", out_dir)
    return result.exit_code()


def _tracking() -> bool:
    """Whether this command logs into the catalog (--track, $REPRO_TRACKING_URI or the
    project's config, and not off)."""
    from repro.catalog.where import resolve
    from repro.errors import ReproError
    from repro.outputs import TRACK_META

    ctx = click.get_current_context(silent=True)
    if ctx is None or TRACK_META not in ctx.meta:
        return False
    try:
        return resolve(ctx.meta[TRACK_META], Path.cwd()) is not None
    except ReproError:
        return True  # the catalog step says what is wrong with it
