"""One definition per compared metric: the sides of a served comparison measured alike.

Each side states what its TTFT, TPOT, latency and rates mean (`repro.formats.served.definitions`:
a repro run and a published LoadGen result mean LoadGen's; another harness's result its own).
Where the sides differ, the side that kept its requests one by one is measured again by the
other's definition (a repro served run keeps them, as do AIPerf's per-request export, GuideLLM's
request list and `vllm bench serve --save-detailed`); where neither can be, the metric is left
out, its reason naming both definitions and what was missing. A side whose record lacks a
family (LoadGen's Offline summary has no TTFT) is measured from its requests where it kept them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from repro.formats.served import definitions as d
from repro.formats.served.requests import REQUESTS_FILE, Requests
from repro.formats.served.toolrun import TOOLS
from repro.runs.facts import TestMetrics
from repro.runs.record import TestRecord
from repro.runs.store import LoadedRun

Side = LoadedRun


@dataclass(frozen=True)
class Aligned:
    """The sides with their metrics on one definition each, and what could not be."""

    orig: Side
    reps: list[Side]
    #: what was measured again, and how
    notes: list[str] = field(default_factory=list)
    #: (scenario, metric key) -> why it is left out
    left_out: dict[tuple[str, str], str] = field(default_factory=dict)


def align(orig: Side, reps: list[Side]) -> Aligned:
    """The sides measured alike, scenario by scenario (unchanged where they already are)."""
    if not _served(orig) and not any(_served(r) for r in reps):
        return Aligned(orig, reps)
    notes: list[str] = []
    left_out: dict[tuple[str, str], str] = {}
    scenarios = sorted({t.scenario for s in (orig, *reps) for t in s.record.tests})
    for scenario in scenarios:
        for family in d.KEYS:
            orig, reps = _family(scenario, family, orig, reps, notes, left_out)
    return Aligned(orig, reps, notes, left_out)


def _served(side: Side) -> bool:
    """A side of served-LLM figures: another harness's, or a run whose tests kept requests or
    state definitions (a repro served run, an endpoints result)."""
    return side.kind == "tool" or any(
        t.backend_facts().name in ("served", "endpoints") for t in side.record.tests
    )


def definitions_of(side: Side, scenario: str) -> d.Definitions:
    """What the side's figures of `scenario` mean: as its tests state them, else LoadGen's."""
    tests = side.record.performance(scenario)
    if not tests:
        return {}
    facts = tests[0].backend_facts()
    if facts.definitions is not None:
        return d.from_json(facts.definitions)
    counted = facts.tokens_counted_by
    return d.loadgen(scenario, "tokenizer" if counted == "tokenizer" else "server")


def name_of(side: Side) -> str:
    if side.kind == "tool":
        return TOOLS.get(str(side.record.environment.get("manager")), "the harness")
    if side.record.environment.get("format") == "endpoints":
        return "the endpoints result"
    return "the repro run" if side.kind == "repro" else "the published result"


def requests_of(side: Side, test: TestRecord) -> Requests | None:
    if side.kind == "repro":
        return Requests.load(side.test_path(test.dir, REQUESTS_FILE))
    kept = side.requests.get((test.scenario, test.repeat))
    return kept if isinstance(kept, Requests) else None


def _family(
    scenario: str,
    family: d.Family,
    orig: Side,
    reps: list[Side],
    notes: list[str],
    left_out: dict[tuple[str, str], str],
) -> tuple[Side, list[Side]]:
    sides = [orig, *reps]
    defs = [definitions_of(s, scenario).get(family) for s in sides]
    has = [_has_family(s, scenario, family) for s in sides]
    if not any(has):
        return orig, reps
    stated = [x for x, h in zip(defs, has, strict=True) if x is not None and h]
    figures = [_has_figures(s, scenario, family) for s in sides]
    alike = stated and all(
        x is not None and h and x.same(stated[0]) for x, h in zip(defs, has, strict=True)
    )
    if alike and all(f for f, h in zip(figures, has, strict=True) if h):
        return orig, reps  # one definition already, and every side has its figures
    # the target: the original's own, else the first stated one
    target = defs[0] if has[0] and defs[0] is not None else (stated[0] if stated else None)
    if target is None:
        return orig, reps
    out: list[Side] = []
    why: list[str] = []
    said_from = len(notes)
    for side, x, h, f in zip(sides, defs, has, figures, strict=True):
        if h and x is not None and x.same(target) and f:
            out.append(side)
            continue
        if not h:
            out.append(side)
            continue
        moved, reason = _measure_again(side, scenario, family, target)
        if moved is None:
            why.append(reason)
            out.append(side)
        else:
            out.append(moved)
            how = (
                "measured from its requests one by one (its summary has no figure of it)"
                if x is not None and x.same(target)
                else "measured again from its requests one by one"
            )
            notes.append(
                f"{scenario} {d.LABELS[family]}: {name_of(side)} {how}, as {target.describe()}"
            )
    if why:
        # one side could not be measured by the target: try the other way (the original by
        # the replay's definition) before leaving the metric out
        other = next(
            (x for s, x, h in zip(sides[1:], defs[1:], has[1:], strict=True) if h and x), None
        )
        if other is not None and target is defs[0] and len(reps) == 1:
            moved, reason = _measure_again(orig, scenario, family, other)
            if moved is None:
                why.append(reason)
            else:
                del notes[said_from:]  # the forward pass's measurements are not kept
                notes.append(
                    f"{scenario} {d.LABELS[family]}: {name_of(orig)} measured again from its "
                    f"requests one by one by {name_of(reps[0])}'s definition: {other.describe()}"
                )
                return moved, [reps[0]]
        said = "; ".join(
            f"{name_of(s)} measures it as {x.describe() if x else 'nothing it states'}"
            for s, x, h in zip(sides, defs, has, strict=True)
            if h
        )
        reason = f"{d.LABELS[family]} left out: {said}; {'; '.join(why)}"
        for key in d.KEYS[family]:
            left_out[(scenario, key)] = reason
        return orig, reps
    return out[0], out[1:]


def _has_family(side: Side, scenario: str, family: d.Family) -> bool:
    """Whether the side measured the family in `scenario` (its record has the figures, or its
    requests can give them)."""
    tests = side.record.performance(scenario)
    if not tests:
        return False
    return _has_figures(side, scenario, family) or all(
        requests_of(side, t) is not None for t in tests
    )


def _has_figures(side: Side, scenario: str, family: d.Family) -> bool:
    """Whether the side's record holds the family's figures for `scenario`."""
    return any(
        t.metrics.get(k) is not None
        for t in side.record.performance(scenario)
        for k in d.KEYS[family]
    )


def _measure_again(
    side: Side, scenario: str, family: d.Family, target: d.Definition
) -> tuple[Side | None, str]:
    """The side with the family's figures measured from its requests by `target`; (None,
    why) where it cannot be."""
    tests = side.record.performance(scenario)
    kept = {id(t): requests_of(side, t) for t in tests}
    missing = [t for t in tests if kept[id(t)] is None]
    if missing:
        return None, f"{name_of(side)} kept no requests one by one to measure it again"
    for t in tests:
        reqs = kept[id(t)]
        assert reqs is not None
        why = reqs.missing(target)
        if why is not None:
            return None, f"{name_of(side)} cannot be measured again: {why}"
    new_tests = []
    for t in side.record.tests:
        reqs = kept.get(id(t))
        if reqs is None or t.scenario != scenario or t.mode != "performance":
            new_tests.append(t)
            continue
        figures = {k: v for k, v in reqs.measure({family: target}).items() if v > 0}
        metrics = {k: v for k, v in t.metrics.items() if k not in d.KEYS[family]}
        metrics.update(figures)
        defs = {**definitions_of(side, scenario), family: target}
        backend = {**t.backend, "definitions": d.as_json(defs)}
        new_tests.append(t.model_copy(update={"metrics": TestMetrics(metrics), "backend": backend}))
    record = side.record.model_copy(update={"tests": new_tests})
    return replace(side, record=record), ""
