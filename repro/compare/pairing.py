"""Which tests of two interleaved runs pair, round by round, and at what confidence they are
judged.

A round pairs one test of each side. It is left out when the two tests ran different LoadGen
settings because of what repro changed on one side (an Offline query sized for the machine,
`repro.harness.sizing`): a resized test against an unresized one is another experiment, and in
recorded A/A rounds the resized side was always the faster (issue 43). Settings the two specs
differ in on purpose are the comparison itself and do not unpair a round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from repro.reports.model import MetricResult
from repro.runs.record import RunRecord, StoppingRecord, TestRecord
from repro.stats.sequential import MIN_ROUNDS


@dataclass(frozen=True)
class Pairs:
    """The rounds both sides ran with the same settings, and those left out with why."""

    #: (round, the baseline's test, the replay's test)
    rounds: list[tuple[int, TestRecord, TestRecord]] = field(default_factory=list)
    #: (round, why it was left out)
    left_out: list[tuple[int, str]] = field(default_factory=list)

    def note(self, scenario: str) -> str | None:
        """`Offline: 2 of 12 round(s) left out: ...`, or None when none was."""
        if not self.left_out:
            return None
        total = len(self.rounds) + len(self.left_out)
        shown = "; ".join(f"round {k}: {why}" for k, why in self.left_out[:3])
        more = f"; and {len(self.left_out) - 3} more" if len(self.left_out) > 3 else ""
        return (
            f"{scenario}: {len(self.left_out)} of {total} round(s) left out, their two tests "
            f"ran different LoadGen settings ({shown}{more}); the rest are judged"
        )


def effective(test: TestRecord, name: str) -> Any:
    """The value LoadGen ran a setting at: what repro changed it to, else the request's."""
    change = test.changed_settings.get(name)
    return change.used if change is not None else test.settings.get(name)


def setting_mismatch(base: TestRecord, rep: TestRecord) -> str | None:
    """How the two tests' changed settings differ (`name a vs b`), or None when they match
    (tests of two scenarios, a feasibility claim's, differ by design)."""
    if base.scenario != rep.scenario:
        return None
    names = sorted(set(base.changed_settings) | set(rep.changed_settings))
    differ = [
        f"{name} {_shown(effective(base, name))} (baseline) vs {_shown(effective(rep, name))} "
        "(replay)"
        for name in names
        if effective(base, name) != effective(rep, name)
    ]
    return ", ".join(differ) or None


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def pair_rounds(base: list[TestRecord], rep: list[TestRecord]) -> Pairs:
    """The rounds both sides ran (by `repeat`), each kept only when their settings match."""
    by_round = {t.repeat: t for t in base}
    pairs = Pairs()
    for r in sorted(rep, key=lambda t: t.repeat):
        b = by_round.get(r.repeat)
        if b is None:
            continue
        why = setting_mismatch(b, r)
        if why is None:
            pairs.rounds.append((r.repeat, b, r))
        else:
            pairs.left_out.append((r.repeat, why))
    return pairs


@dataclass(frozen=True)
class PairedRule:
    """How paired rounds are judged: at a look's confidence, never on fewer rounds than the
    rule's minimum (`repro.stats.sequential`)."""

    confidence: float
    min_rounds: int = MIN_ROUNDS
    #: what gives the rounds more: `--max-time` where the time cap stopped them, else
    #: `--max-rounds` (a message naming the other knob sends the user the wrong way)
    more: str = "--max-rounds"


def paired_rule(record: RunRecord, overall: float) -> PairedRule:
    """The rule the rounds ran under, as their run recorded it
    (`repro.replay.rounds.stopping_record`): each look's confidence and the rule's minimum; a
    record of before it is judged at `overall` with today's minimum."""
    stop = record.stopping or StoppingRecord()
    value, least = stop.look_confidence, stop.min_rounds
    confidence = float(value) if value is not None and 0.5 < value < 1 else overall
    if least is None or least < 1:
        least = MIN_ROUNDS
    return PairedRule(confidence, least, "--max-time" if time_capped_of(stop) else "--max-rounds")


def time_capped_of(stop: StoppingRecord) -> bool:
    """Whether the time cap stopped the rounds of a run's stopping record (`time_capped`; a
    record from before it was written says so only in its message)."""
    if stop.time_capped is not None:
        return stop.time_capped
    return "time cap" in (stop.stopped or "")


#: how far apart the two sides' shares of other work may be and still count as the same load:
#: the probes' own noise (a quiet machine's rounds read 0-3 % here; one round's reading of a
#: steady neighbour moves by a few per cent)
BUSY_NOISE = 0.05


@dataclass(frozen=True)
class BusyRounds:
    """The share of the machine's CPU time other work took during each side's tests of the
    paired rounds (the probes' `others_cpu_frac`), and which side, if any, was the busier."""

    baseline: list[float]
    replay: list[float]
    busier: Literal["baseline", "replay"] | None

    def describe(self) -> str:
        """`other work took 81 % beside the baseline, 66-78 % beside the replay`."""
        return (
            f"other work took {_span(self.baseline)} beside the baseline, "
            f"{_span(self.replay)} beside the replay"
        )


def _span(shares: list[float]) -> str:
    lo, hi = min(shares), max(shares)
    if round(100 * lo) == round(100 * hi):
        return f"{100 * lo:.0f} %"
    return f"{100 * lo:.0f}-{100 * hi:.0f} %"


def _share(test: TestRecord) -> float | None:
    value = (test.probe_after or {}).get("others_cpu_frac")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def busy_rounds(pairs: Pairs, *, busy: float) -> BusyRounds | None:
    """The two sides' shares of other work over the paired rounds, where the probes read them
    on both sides; the busier side is named when the shares differ by more than their noise
    (BUSY_NOISE, and twice the standard error of the rounds' differences) and it ran beside
    more than `busy` of the CPU time (`repro.compare.machine_sides.BUSY_FRACTION`)."""
    both = [
        (a, b)
        for _, tb, tr in pairs.rounds
        if (a := _share(tb)) is not None and (b := _share(tr)) is not None
    ]
    if not both:
        return None
    base, rep = [a for a, _ in both], [b for _, b in both]
    diff = [b - a for a, b in both]
    mean = sum(diff) / len(diff)
    se = (
        math.sqrt(sum((d - mean) ** 2 for d in diff) / (len(diff) - 1) / len(diff))
        if len(diff) > 1
        else math.inf
    )
    apart = abs(mean) > max(BUSY_NOISE, 2 * se)
    busier: Literal["baseline", "replay"] | None = None
    if apart and max(sum(base) / len(base), sum(rep) / len(rep)) > busy:
        busier = "replay" if mean > 0 else "baseline"
    return BusyRounds(base, rep, busier)


def with_busy_rounds(result: MetricResult, kind: str, busy: BusyRounds | None) -> MetricResult:
    """A paired speed row judged *not reproduced* whose slower side is the one that ran beside
    more other work: *inconclusive: machine busy*, with the shares in the reason (the load, not
    the software, may be why). A difference the other way, and *reproduced*, stand."""
    if busy is None or busy.busier is None or result.verdict != "not reproduced":
        return result
    if kind not in ("throughput", "latency", "cpu") or result.delta_rel is None:
        return result
    replay_slower = result.delta_rel < 0 if kind in ("throughput", "cpu") else result.delta_rel > 0
    slower = "replay" if replay_slower else "baseline"
    if slower != busy.busier:
        return result
    return result.model_copy(
        update={
            "verdict": "inconclusive: machine busy",
            "raw_verdict": result.raw_verdict or result.verdict,
            "reason": f"machine busy: the {slower} is the slower side and ran beside more "
            f"other work ({busy.describe()}), so the load may be why; {result.reason}; run it "
            "on a quieter machine, or with --duet",
        }
    )
