"""The per-layer table from a profiler's kernel calls and the pass's inferences."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from repro.errors import RunError
from repro.profiles.model import LayerCall, LayerRow, Overhead, Profile, Span

#: a call may start this much before its inference as the profilers round (onnxruntime: to 1 us)
SLACK_NS = 2_000


def assign(calls: Sequence[LayerCall], inferences: Sequence[Span]) -> list[list[LayerCall]]:
    """The calls of each inference, in order; calls outside every inference (warm-up, the
    unprofiled timing) are dropped."""
    starts = [s.start_ns for s in inferences]
    out: list[list[LayerCall]] = [[] for _ in inferences]
    for call in sorted(calls, key=lambda c: c.start_ns):
        i = bisect.bisect_right(starts, call.start_ns + SLACK_NS) - 1
        if i >= 0 and call.start_ns <= inferences[i].end_ns + SLACK_NS:
            out[i].append(call)
    return out


def _median(values: list[int]) -> int:
    return int(statistics.median(values))


def build_profile(
    calls: Sequence[LayerCall],
    inferences: Sequence[Span],
    *,
    backend: str,
    profiler: str,
    scenario: str,
    queries: int,
    overhead: Overhead | None = None,
    notes: Sequence[str] = (),
    **files: Any,
) -> Profile:
    """One row per layer of the profiled inferences.

    A layer is a name within one inference; a kernel called twice in one inference (TVM reuses
    a compiled function for identical layers) is two layers, `name` and `name#2`, in the order
    they ran, so that the table has the model's structure whatever the backend shares.
    """
    per_inference = assign(calls, inferences)
    times: dict[str, list[int]] = defaultdict(list)
    first: dict[str, tuple[int, LayerCall]] = {}
    for inf_calls in per_inference:
        seen: dict[str, int] = defaultdict(int)
        for pos, call in enumerate(inf_calls):
            seen[call.name] += 1
            name = call.name if seen[call.name] == 1 else f"{call.name}#{seen[call.name]}"
            times[name].append(call.dur_ns)
            first.setdefault(name, (pos, call))
    used = [s for s, c in zip(inferences, per_inference, strict=True) if c]
    if not used:
        raise RunError(
            f"the profiler ({profiler}) recorded no layer call inside the {len(inferences)} "
            "timed inferences",
            hint="the profiler's clock may not be the wall clock on this platform",
        )
    notes = list(notes)
    if inferences and len(used) < len(inferences):
        notes.append(
            f"the profiler recorded layers in {len(used)} of the {len(inferences)} timed "
            "inferences (onnxruntime keeps at most 1,000,000 events: fewer samples profile them "
            "all); the table covers those"
        )
    inference_ns = sum(s.end_ns - s.start_ns for s in used)
    samples = sum(s.samples for s in used)
    rows = [
        LayerRow(
            name=name,
            op_type=call.op_type,
            kind=call.kind,
            position=pos,
            out_elems=call.out_elems,
            calls=len(times[name]),
            total_ns=sum(times[name]),
            median_ns=_median(times[name]),
            per_sample_ns=sum(times[name]) / max(samples, 1),
            share=sum(times[name]) / inference_ns if inference_ns else 0.0,
        )
        for name, (pos, call) in sorted(first.items(), key=lambda kv: (kv[1][0], kv[0]))
    ]
    layers_ns = sum(r.total_ns for r in rows)
    return Profile(
        backend=backend,
        profiler=profiler,
        scenario=scenario,
        queries=queries,
        inferences=len(used),
        samples=samples,
        inference_ns=inference_ns,
        layers_ns=layers_ns,
        outside_ns=inference_ns - layers_ns,
        overhead=overhead,
        rows=rows,
        notes=notes,
        **files,
    )


def overhead_of(profiled: Sequence[Span], unprofiled: Sequence[Span], method: str) -> Overhead:
    """The profiler's cost per inference: median against median."""
    p = _median([s.end_ns - s.start_ns for s in profiled])
    u = _median([s.end_ns - s.start_ns for s in unprofiled])
    return Overhead(
        rel=p / u - 1 if u else None,
        profiled_median_ns=p,
        unprofiled_median_ns=u,
        inferences=min(len(profiled), len(unprofiled)),
        method=method,
    )
