"""`repro claim add|list|measure|check`: state a spec's claims, measure them, check them here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from repro.cli.options import (
    cache_dir_option,
    env_option,
    json_option,
    loadgen_override,
    results_dir_option,
    track_option,
)
from repro.cli.params import Finite, parse_key_value
from repro.cli.progress import note, warn_if_stale
from repro.errors import SpecError, UsageError

if TYPE_CHECKING:
    from repro.replay.claim_rounds import Outcome
    from repro.reports.model import ClaimsCheck
    from repro.spec.models import ExperimentSpec

F = TypeVar("F", bound=Callable[..., Any])


#: rounds a check may lose while each variant's Offline query is sized (`claim add` counts them)
SIZING_ROUNDS = 2


@click.group()
def claim() -> None:
    """State, measure and check the relative results a spec claims (ratios, accuracy drops).

    A claim names two variants of the experiment (overrides of the spec), a metric and a bound
    on the candidate/baseline ratio (or the accuracy drop). `measure` records it with its
    evidence on this machine; `check` judges it here: holds, does not hold, or inconclusive.
    """


@claim.command("add")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("--id", "claim_id", required=True, help="The claim's id (lowercase, digits, -_.).")
@click.option("--statement", required=True, help="The claim in the words of its source.")
@click.option("--source", default=None, help="Where it is stated (a paper, a URL).")
@click.option(
    "--metric",
    required=True,
    help="<Scenario>.<metric> (throughput, latency_p50/p90/p99, Server.max_valid_qps) or accuracy.",
)
@click.option("--relation", required=True, type=click.Choice(["<=", ">="]))
@click.option("--bound", required=True, type=Finite(), help="The bound on the ratio (or drop).")
@click.option(
    "--quantity",
    type=click.Choice(["ratio", "drop"]),
    default="ratio",
    show_default=True,
    help="drop: accuracy baseline - candidate.",
)
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    help="path=value overriding the spec for the baseline (repeatable; none: the spec as it is).",
)
@click.option(
    "--candidate",
    "candidate",
    multiple=True,
    help="path=value overriding the spec for the candidate (repeatable).",
)
@click.option("--baseline-label", default=None, help="A name for the baseline in reports.")
@click.option("--candidate-label", default=None, help="A name for the candidate in reports.")
@loadgen_override("min_duration_ms", "Each check test's minimum duration (default 1000).")
@loadgen_override("min_query_count", "Each check test's minimum query count (default: the spec's).")
@click.option(
    "--max-rounds",
    type=click.IntRange(2, 1000),
    default=None,
    help="The cap on rounds of a check (default 10, the least a paired verdict can be "
    "reached within).",
)
@click.option(
    "--max-time",
    "max_time_s",
    type=Finite(min=1),
    default=None,
    help="The cap on seconds of a check (default 120).",
)
@click.option("--force", is_flag=True, help="Replace a claim with the same id.")
def add(spec_path: Path, **values: Any) -> None:
    """Add a claim to SPEC: checked (its variants are valid experiments that measure its
    metric) before the spec is rewritten; the spec's id does not change.

    \b
    Example:
      repro claim add specs/ort-resnet50.json --id threads-2-vs-1 \\
        --statement "2 intra-op threads give 1.9x the Offline throughput of 1" \\
        --metric Offline.throughput --relation '>=' --bound 1.7 \\
        --baseline backend.options.intra_op_threads=1 \\
        --candidate backend.options.intra_op_threads=2
    """
    from repro.stats.sequential import MIN_ROUNDS

    cap = values.get("max_rounds")
    if cap is not None and cap < MIN_ROUNDS + SIZING_ROUNDS:
        # a cap the rule can never decide within: accepted, it said "inconclusive" for ever
        raise UsageError(
            f"--max-rounds {cap}: a claim's check needs at least {MIN_ROUNDS + SIZING_ROUNDS} "
            f"rounds: the {MIN_ROUNDS} counted rounds a paired verdict needs, and up to "
            f"{SIZING_ROUNDS} left out while each variant's Offline query is sized for this "
            "machine",
            hint=f"give --max-rounds {MIN_ROUNDS + SIZING_ROUNDS} or more (the default is 10)",
        )
    from repro.spec.io import load_spec, parse_spec, write_spec
    from repro.validate import check

    spec = load_spec(spec_path)
    raw = _claim_json(values)
    claims = [c.model_dump(mode="json", exclude_none=True) for c in spec.claims or []]
    same = [i for i, c in enumerate(claims) if c["id"] == raw["id"]]
    if same and not values["force"]:
        raise UsageError(
            f"{spec_path}: $.claims[{same[0]}]: a claim {raw['id']!r} exists",
            hint="pass --force to replace it, or choose another --id",
        )
    claims = [c for c in claims if c["id"] != raw["id"]] + [raw]
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True) | {"claims": claims}
    updated = parse_spec(data, source=f"{spec_path} with the claim")
    ours = [
        p
        for p in check(updated, spec_path)
        if p.severity == "error" and p.where.startswith(f"$.claims[{len(claims) - 1}]")
    ]
    if ours:
        lines = "\n".join(f"  {p.where}: {p.message}" for p in ours)
        raise SpecError(f"{spec_path}: the claim {raw['id']!r} cannot be checked:\n{lines}")
    write_spec(updated, spec_path)
    note(
        f"{spec_path}: claim {raw['id']!r} added; measure it with "
        f"`repro claim measure {spec_path} --claim {raw['id']}`"
    )
    warn_if_stale(spec_path)


def _claim_json(values: dict[str, Any]) -> dict[str, Any]:
    """The claim as the spec holds it, from the options."""
    sides = {}
    for side in ("baseline", "candidate"):
        overrides: dict[str, Any] = {}
        for text in values[side]:
            path, value = parse_key_value(text, option=f"--{side}", example="path=value")
            if path in overrides:
                raise UsageError(
                    f"claim {values['claim_id']!r}: --{side} {text!r}: {path} is overridden "
                    f"twice ({overrides[path]!r} and {value!r}); give it once"
                )
            overrides[path] = value
        variant: dict[str, Any] = {"overrides": overrides}
        if values[f"{side}_label"]:
            variant["label"] = values[f"{side}_label"]
        sides[side] = variant
    rounds = {
        k: values[k]
        for k in ("min_duration_ms", "min_query_count", "max_rounds", "max_time_s")
        if values[k] is not None
    }
    raw: dict[str, Any] = {
        "id": values["claim_id"],
        "statement": values["statement"],
        "metric": values["metric"],
        "relation": values["relation"],
        "bound": values["bound"],
        "quantity": values["quantity"],
        **sides,
    }
    if values["source"]:
        raw["source"] = values["source"]
    if rounds:
        raw["rounds"] = rounds
    return raw


@claim.command("list")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@json_option
def list_claims(spec_path: Path, as_json: bool) -> None:
    """The claims SPEC states, with the evidence measured of each.

    \b
    Example:
      repro claim list specs/ort-resnet50.json
    """
    from repro.reports.fmt import claim_figure
    from repro.spec.io import load_spec

    spec = load_spec(spec_path)
    claims = spec.claims or []
    if as_json:
        click.echo(
            json.dumps([c.model_dump(mode="json", exclude_none=True) for c in claims], indent=2)
        )
        return
    if not claims:
        note(f"{spec_path}: no claims (add one with `repro claim add`)")
    for c in claims:
        ev = c.evidence
        quantity = "margin" if c.parsed_metric.is_feasibility else c.quantity
        found = (
            f"measured {claim_figure(quantity, ev.value, ev.ci)}: {ev.verdict} "
            f"({ev.rounds} round(s) on {ev.machine.cpu_model or 'an unknown CPU'})"
            if ev is not None
            else "not measured"
        )
        click.echo(f"{c.id}: {c.statement}\n  {c.bound_text()}; {found}")


def check_options(f: F) -> F:
    """The options `measure` and `check` share."""
    for option in reversed(
        (
            click.option("--claim", "only", multiple=True, help="Only this claim (repeatable)."),
            env_option(),
            results_dir_option,
            click.option(
                "--max-rounds",
                type=click.IntRange(2, 1000),
                default=None,
                help="Cap on rounds per claim (default: the claim's).",
            ),
            click.option(
                "--max-time",
                "max_time_s",
                type=Finite(min=1),
                default=None,
                help="Cap on seconds per claim (default: the claim's).",
            ),
            loadgen_override(
                "min_duration_ms", "Each test's minimum duration (default: the claim's)."
            ),
            click.option(
                "--fixed-rounds",
                is_flag=True,
                help="Run every round up to --max-rounds (or the time cap) and judge once at "
                "the end: a fixed-size test, no early stop.",
            ),
            click.option(
                "--order-seed",
                type=click.IntRange(0, 2**32 - 1),
                default=None,
                help="Seed of the random order of the rounds (default: drawn).",
            ),
            cache_dir_option,
            json_option,
        )
    ):
        f = option(f)
    return f


@claim.command("measure")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@check_options
def measure(spec_path: Path, as_json: bool, **values: Any) -> None:
    """Measure SPEC's claims on this machine and record the evidence in the spec.

    Each claim's variants run interleaved in paired rounds until decided (or the cap); the
    measured ratio with its interval, the rounds, the machine and its probes are written into
    the claim's `evidence` (the spec's id does not change).

    \b
    Example:
      repro claim measure specs/ort-resnet50.json --env native
    """
    from repro.replay.claim_evidence import with_evidence
    from repro.spec.io import write_spec

    spec, outcomes = _run(spec_path, values)
    updated = with_evidence(spec, outcomes)
    write_spec(updated, spec_path)
    check = _check_of(spec, outcomes, strict=False)
    _show(check, as_json)
    note(f"{spec_path}: evidence of {len(outcomes)} claim(s) written")
    warn_if_stale(spec_path)


@claim.command("check")
@track_option
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@check_options
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where claims.{md,json} go (default: reports/<name>/).",
)
@click.option("--strict", is_flag=True, help="Exit 1 when a claim is inconclusive too.")
def check(
    spec_path: Path, as_json: bool, report_dir: Path | None, strict: bool, **values: Any
) -> None:
    """Check SPEC's claims on this machine: each claim's variants interleaved until decided.

    Each claim holds (the interval of its ratio lies inside the bound), does not hold
    (outside), or is inconclusive (it straddles the bound at the cap); and its ratio matches
    the original's evidence within the metric's tolerance, or not. Exit 1 when a claim does
    not hold (--strict: or is inconclusive), else 0.

    \b
    Example:
      repro claim check specs/ort-resnet50.json --claim threads-2-vs-1
    """
    spec, outcomes = _run(spec_path, values)
    result = _check_of(spec, outcomes, strict=strict)
    folder = report_dir or Path("reports") / spec.name
    write_claims(result, folder)
    _show(result, as_json)
    warn_if_stale(folder)
    raise click.exceptions.Exit(result.exit_code())


def _run(spec_path: Path, values: dict[str, Any]) -> tuple[ExperimentSpec, list[Outcome]]:
    from repro.artifacts.cache import ArtifactCache
    from repro.cli.progress import TimedBar
    from repro.replay.claim_rounds import CheckOptions, check_claims, sessions
    from repro.runs.plan import ReplayPlan, RoundsPlan, loadgen_overrides
    from repro.validate import require_valid

    spec = require_valid(spec_path)
    plan = ReplayPlan(
        results_dir=values["results_dir"],
        env=values["env_name"],
        cache_dir=values["cache_dir"],
        loadgen=loadgen_overrides(min_duration_ms=values["min_duration_ms"]),
        rounds=RoundsPlan(
            max_rounds=values["max_rounds"],
            max_time_s=values["max_time_s"],
            order_seed=values["order_seed"],
        ),
    )
    opts = CheckOptions(plan=plan, only=values["only"], fixed_rounds=values["fixed_rounds"])
    cache = ArtifactCache(values["cache_dir"])
    factory = sessions(spec_path, report=note, progress=TimedBar, cache=cache)
    return spec, check_claims(spec, spec_path, factory=factory, opts=opts, report=note)


def _check_of(spec: ExperimentSpec, outcomes: list[Outcome], *, strict: bool) -> ClaimsCheck:
    from repro.replay.claim_evidence import claims_check

    return claims_check(spec, outcomes, strict=strict)


def write_claims(result: ClaimsCheck, folder: Path) -> None:
    """claims.md and claims.json in `folder`, each written whole."""
    from repro.atomic import atomic_write_text
    from repro.outputs import written
    from repro.privacy import redact_text
    from repro.reports.claims_page import render_markdown

    atomic_write_text(folder / "claims.md", redact_text(render_markdown(result)))
    atomic_write_text(
        folder / "claims.json", redact_text(result.model_dump_json(indent=2, by_alias=True)) + "\n"
    )
    note(f"claims written to {folder}/claims.{{md,json}}")
    written.note("claims", folder)


def _show(result: ClaimsCheck, as_json: bool) -> None:
    from repro.reports.claims_page import render_text

    if as_json:
        click.echo(result.model_dump_json(indent=2, by_alias=True))
    else:
        click.echo(render_text(result), nl=False)
