"""A claim's variants as specs: the experiment with the variant's overrides applied, validated.

A variant is the spec's JSON with some fields set (`backend.options.intra_op_threads: 1`); a
scenario of `workload.scenarios` is named by its scenario (`workload.scenarios.Server.settings.
server_target_qps`). The variant keeps the spec's `original` (its reference predictions score
an agreement metric) and drops the claims (a variant states nothing); its id is its own.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

from repro.errors import SpecError
from repro.spec.claims import SIDES, Claim, Side
from repro.spec.io import parse_spec, spec_id, with_id
from repro.spec.models import ExperimentSpec


class VariantError(SpecError):
    """A claim's variant is not a valid experiment: `where` in the spec, and what is wrong."""

    def __init__(self, source: str, where: str, detail: str, *, hint: str | None = None) -> None:
        super().__init__(f"{source}: {where}: {detail}", hint=hint)
        self.where = where
        self.detail = detail


def claim_where(spec: ExperimentSpec, claim: Claim) -> str:
    """`$.claims[2] (claim 'threads')`: where a claim is in its spec, for messages."""
    index = next(i for i, c in enumerate(spec.claims or []) if c.id == claim.id)
    return f"$.claims[{index}] (claim {claim.id!r})"


#: the spec's sections that name the experiment, hold what ran before, or say how it is judged:
#: an override of one changes nothing a run does
NOT_RUN = (
    "schema",
    "id",
    "name",
    "description",
    "tags",
    "hardware",
    "original",
    "tolerances",
    "claims",
)


def inert_override(path: str, overridden: Collection[str], *, env_name: str | None) -> str | None:
    """Why setting `path` (beside the other `overridden` paths) cannot change what a run does,
    or None. `env_name`: the environment the runs realize (None: not known yet)."""
    keys = path.split(".")
    if keys[0] in NOT_RUN:
        return f"{keys[0]} names or judges the experiment; it does not change what runs"
    if (
        keys[0] == "artifacts"
        and len(keys) == 3
        and keys[2] in ("path", "url")
        and f"artifacts.{keys[1]}.sha256" not in overridden
    ):
        return (
            f"an artifact is its sha256: with artifacts.{keys[1]}.sha256 unchanged it names the "
            f"same bytes, which are verified by that hash and taken from the cache whatever the "
            f"{keys[2]} says; override artifacts.{keys[1]}.sha256 too (`sha256sum FILE`)"
        )
    if keys[0] == "environment" and env_name == "native":
        return (
            "--env native runs this interpreter's packages: the environment's fields are not "
            "realized (run with --env venv, nix, spack or docker, which build it)"
        )
    return None


def refuse_inert(
    overrides: Collection[str], *, env_name: str | None, where: str, hint: str | None = None
) -> None:
    """A SpecError naming the first override that cannot change what runs, and why."""
    for path in overrides:
        why = inert_override(path, overrides, env_name=env_name)
        if why is not None:
            raise SpecError(f"{where}[{path!r}]: changes nothing that runs: {why}", hint=hint)


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any], *, where: str) -> None:
    """Set each dotted path of `overrides` in the spec's JSON `data` (in place). A field along
    the path must exist; the last one may be new (an optional field the spec left out)."""
    for path, value in overrides.items():
        keys = path.split(".")
        node: Any = data
        for depth, key in enumerate(keys[:-1]):
            node = _step(node, key, keys[: depth + 1], where=f"{where}[{path!r}]")
        if not isinstance(node, dict):
            raise SpecError(f"{where}[{path!r}]: {'.'.join(keys[:-1])} is not an object")
        node[keys[-1]] = copy.deepcopy(value)


def _step(node: Any, key: str, done: list[str], *, where: str) -> Any:
    if isinstance(node, dict) and key in node:
        return node[key]
    if isinstance(node, list) and done[-2:-1] == ["scenarios"]:
        found = [s for s in node if isinstance(s, dict) and s.get("scenario") == key]
        if found:
            return found[0]
        names = [s.get("scenario") for s in node if isinstance(s, dict)]
        raise SpecError(f"{where}: the spec runs no {key} scenario (it has {names})")
    have = sorted(node) if isinstance(node, dict) else []
    raise SpecError(
        f"{where}: the spec has no {'.'.join(done)!r}"
        + (f" (there: {', '.join(have)})" if have else ""),
        hint="a variant overrides fields the spec has, by their dotted path; `repro schema` "
        "lists them",
    )


def variant_spec(spec: ExperimentSpec, claim: Claim, side: Side, *, source: str) -> ExperimentSpec:
    """The experiment of one side of a claim, validated, with its own id; a SpecError names the
    claim and the override that does not validate."""
    where = f"{claim_where(spec, claim)}.{side}.overrides"
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    for key in ("id", "claims"):
        data.pop(key, None)
    overrides = getattr(claim, side).overrides
    for path in overrides:  # an override that changes nothing: its own reason, said as such
        why = inert_override(path, overrides, env_name=None)
        if why is not None:
            raise VariantError(source, f"{where}[{path!r}]", f"changes nothing that runs: {why}")
    try:
        apply_overrides(data, overrides, where=where)
        return with_id(parse_spec(data, source="the variant"))
    except SpecError as exc:
        detail = exc.message.removeprefix(f"{where}").removeprefix("the variant: ")
        raise VariantError(
            source,
            where,
            f"the {side} variant does not validate: {detail.lstrip(': ')}",
            hint=exc.hint
            or "fix the variant's overrides in the spec (`repro claim add --force` rewrites it)",
        ) from None


def variant_specs(spec: ExperimentSpec, claim: Claim, *, source: str) -> dict[Side, ExperimentSpec]:
    """Both sides of a claim; two sides that are one experiment are an error, but for a
    feasibility claim (its sides run different scenarios of one experiment)."""
    sides = {side: variant_spec(spec, claim, side, source=source) for side in SIDES}
    same = spec_id(sides["baseline"]) == spec_id(sides["candidate"])
    if same and not claim.parsed_metric.is_feasibility:
        raise VariantError(
            source,
            f"{claim_where(spec, claim)}.candidate",
            f"the candidate and the baseline are the same experiment (spec id "
            f"{spec_id(sides['baseline'])[:12]}): a claim compares two variants",
            hint="give the candidate (or the baseline) the overrides that make it the other "
            "variant, e.g. backend.options.intra_op_threads=2",
        )
    return sides
