"""`repro submission RUN...`: an MLPerf Inference submission tree by one round's rules, with the
runs the round fixes and a check of the tree; `repro submission --check DIR`: that check on any
tree, beside the official checkers' lists with `--official-checker PATH`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from repro.artifacts.cache import ArtifactCache
from repro.cli.options import cache_dir_option, env_option, json_option
from repro.cli.progress import TimedBar, note
from repro.errors import SpecError, UsageError


@click.command()
@click.argument("runs", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--round",
    "round_name",
    default=None,
    help="The MLPerf Inference round whose rules the tree follows (v5.0, v5.1, v6.0, "
    "v6.1). Default: the round of the installed LoadGen.",
)
@click.option(
    "--check",
    "check_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Check this tree (any submission tree) and write nothing.",
)
@click.option("--submitter", default=None, help="The submitting organization (a folder name).")
@click.option(
    "--division", type=click.Choice(["closed", "open"]), default="closed", show_default=True
)
@click.option(
    "--benchmark",
    default=None,
    help="The MLPerf benchmark the runs stand for (closed: the results folder's name; "
    "open: what model_mapping.json maps the spec's name to). Default: the spec's "
    "name (closed), the benchmark of the spec's task (open).",
)
@click.option(
    "--system-name", default=None, help="The system's name (default: from --system-json)."
)
@click.option(
    "--system-json",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The systems JSON fields only you know (status, system_type, storage, ...); see "
    "--template. Its fields override what the fingerprint says.",
)
@click.option("--template", is_flag=True, help="Print the fields --system-json must give.")
@click.option(
    "--output", "-o", "out", type=click.Path(file_okay=False, path_type=Path), default=None
)
@click.option("--force", is_flag=True, help="Replace the submission tree at -o DIR.")
@click.option(
    "--full-length",
    is_flag=True,
    help="Make the performance and compliance runs at MLPerf's length (600 s, "
    "mlperf.conf's query counts and sample count) where the runs are shorter.",
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
    help="The runs' spec, when its recorded path is not here (the runs made here need it).",
)
@click.option(
    "--official-checker",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A checkout of mlcommons/inference (or its tools/submission): "
    "run its checkers on the tree and show their lists beside repro's.",
)
@click.option(
    "--checker-python",
    default=None,
    help="The Python (with PyYAML) that runs the official checkers (default: this one).",
)
@env_option("the runs made for the submission run")
@cache_dir_option
@json_option
def submission(**kw: Any) -> None:
    """Write an MLPerf Inference submission tree from finished runs by one round's rules, make
    the runs the round fixes (its seeds; the compliance tests), and list every rule of the
    round's submission checker the tree breaks (exit 1 when any).

    A short run keeps the violations only a full-length run (--full-length) or the benchmark's
    data set can meet: they are marked. `repro import-mlperf OUT` reads the tree back.
    --check exits 0 (no violation), 1 (only those a short run keeps) or 2 (the tree breaks
    other rules: a missing file, a missing field, another round's seeds).

    \b
    Example:
      repro submission --template > system.json   # then fill it in
      repro submission results/ort-resnet50/<run> --round v6.0 --division open \\
        --submitter MyOrg --system-json system.json -o sub
      repro submission --check sub --round v6.0 --official-checker ../inference
    """
    from repro.mlperf.system_description import TEMPLATE_NAME, template

    if kw["template"]:
        click.echo(json.dumps({**template(), "system_name": TEMPLATE_NAME}, indent=2))
        return
    rules = _rules(kw["round_name"])
    if kw["check_dir"] is not None:
        if kw["runs"] or kw["out"] is not None:
            raise UsageError("--check DIR checks a tree: give no RUN and no -o")
        _report(kw, rules, kw["check_dir"], _check(kw["check_dir"], rules), {}, checking=True)
        return
    top, findings, extra = _write(kw, rules)
    _report(kw, rules, top, findings, extra)


def _rules(round_name: str | None) -> Any:
    from repro.mlperf.round_rules import default_round, round_rules

    if round_name is not None:
        return round_rules(round_name)
    name, said = default_round()
    note(said)
    return round_rules(name)


def _check(top: Path, rules: Any) -> Any:
    from repro.mlperf.submission_check import check_tree

    if not top.is_dir():
        raise UsageError(f"--check {top}: no such folder")
    return check_tree(top, rules)


def _given(kw: dict[str, Any]) -> dict[str, Any]:
    if kw["system_json"] is None:
        return {}
    from repro.jsonio import read_json

    loaded = read_json(kw["system_json"])
    if not isinstance(loaded, dict):
        raise SpecError(f"{kw['system_json']}: $: expected a JSON object")
    return loaded


def _check_spec(spec_path: Path, runs: tuple[Path, ...]) -> None:
    from repro.runs.store import load_run
    from repro.spec.io import load_spec, spec_id

    wanted = spec_id(load_spec(spec_path, check_id=False))
    for run in runs:
        if load_run(run).spec_id != wanted:
            raise UsageError(
                f"--spec {spec_path}: not the spec {run} ran (spec id {wanted[:12]})",
                hint="give the run's own spec",
            )


def _write(kw: dict[str, Any], rules: Any) -> tuple[Path, Any, dict[str, Any]]:
    from repro.mlperf.submission import Request, write_tree
    from repro.replay.submission_maker import SessionRunMaker

    runs, out = kw["runs"], kw["out"]
    if not runs or kw["submitter"] is None or out is None:
        raise UsageError("give RUN..., --submitter and -o DIR (or --check DIR, or --template)")
    if kw["spec_path"] is not None:
        _check_spec(kw["spec_path"], runs)
    from repro.mlperf.system_description import check_given
    from repro.runs.layout import component

    given = _given(kw)
    system = kw["system_name"] or given.get("system_name")
    if not system:
        raise UsageError("name the system: --system-name, or system_name in --system-json")
    if not kw["system_name"]:  # named by the file: its field is what a bad name is said of
        check_given(given, division=kw["division"], submitter=kw["submitter"], system=system)
        component(str(system), what=f"{kw['system_json']}: $.system_name")
    req = Request(
        division=kw["division"],
        submitter=kw["submitter"],
        system=str(system),
        rules=rules,
        given=given,
        benchmark=kw["benchmark"],
        full_length=kw["full_length"],
        compliance=kw["compliance"],
        force=kw["force"],
    )
    with SessionRunMaker(
        env_name=kw["env_name"],
        cache=ArtifactCache(kw["cache_dir"]),
        report=note,
        progress=TimedBar,
        spec_override=kw["spec_path"],
    ) as maker:
        sub = write_tree(list(runs), out, req, maker=maker, report=note)
    extra = {"root": str(sub.root), "made": sub.made, "notes": sub.notes}
    return out, sub.findings, extra


def _official(kw: dict[str, Any], rules: Any, top: Path) -> list[Any]:
    from repro.mlperf.official_checker import run_checker, tools_folder
    from repro.mlperf.submission_findings import CHECKER, CHECKER_OLD

    if kw["official_checker"] is None:
        return []
    tools = tools_folder(kw["official_checker"])
    python = kw["checker_python"] or sys.executable
    return [run_checker(c, tools, top, rules.name, python=python) for c in (CHECKER, CHECKER_OLD)]


def _report(
    kw: dict[str, Any],
    rules: Any,
    top: Path,
    findings: Any,
    extra: dict[str, Any],
    *,
    checking: bool = False,
) -> None:
    from repro.mlperf.official_checker import side_by_side

    runs = _official(kw, rules, top)
    rows = side_by_side(findings, runs) if runs else []
    if kw["as_json"]:
        doc = {
            "round": rules.name,
            "top": str(top),
            **extra,
            "violations": [v.as_dict() for v in findings.violations],
            "notes": findings.notes,
            "official": [r.as_dict() for r in runs],
            "side_by_side": [r.__dict__ for r in rows],
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        _print(top, findings, extra, runs, rows)
    own = [v for v in findings.violations if v.cause is None]
    if checking and own:
        click.secho(
            f"error: {top}: {len(own)} violation(s) no full-length run on the benchmark's data "
            f"set would fix ({', '.join(sorted({v.rule for v in own}))}): each above names its "
            "file and rule",
            err=True,
            fg="red",
        )
        raise click.exceptions.Exit(2)
    if findings.violations or any(r.errors or r.crash for r in runs):
        raise click.exceptions.Exit(1)


def _print(
    top: Path, findings: Any, extra: dict[str, Any], runs: list[Any], rows: list[Any]
) -> None:
    if "root" in extra:
        click.echo(f"wrote {extra['root']} (round {findings.round})")
    for made in extra.get("made", []):
        click.echo(f"  made: {made}")
    for text in [*extra.get("notes", []), *findings.notes]:
        click.echo(f"  note: {text}")
    for v in findings.violations:
        mark = {"length": " (needs a full-length run)", "data": " (needs the benchmark's data set)"}
        click.echo(f"  violation [{v.rule}]{mark.get(v.cause or '', '')}: {v.where}: {v.why}")
    click.echo(f"{len(findings.violations)} violation(s) of round {findings.round}'s checker rules")
    if not runs:
        return
    names = [r.checker for r in runs]
    click.echo(f"\nrepro's check and the official checkers on {top}, side by side:")
    click.echo(f"  {'repro':<6}" + "".join(f"{n:<12}" for n in names) + "rule at result")
    for row in rows:
        cells = ["yes" if row.repro else "-"] + ["yes" if row.checkers[n] else "-" for n in names]
        click.echo(
            f"  {cells[0]:<6}"
            + "".join(f"{c:<12}" for c in cells[1:])
            + f"{row.rule} at {row.where}: {row.text}"
        )
    for run in runs:
        state = (
            f"stopped: {run.crash}"
            if run.crash
            else ("submission looks OK" if run.looks_ok else f"{len(run.errors)} error(s)")
        )
        click.echo(f"  {run.checker}: {state}")
