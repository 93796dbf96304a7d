"""The profiled pass as a Chrome trace (JSON Object Format), for ui.perfetto.dev or
chrome://tracing: LoadGen's queries, the predict() calls inside them and the layers inside
those, each on its own track, on one clock."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from repro.profiles.build import assign
from repro.profiles.model import LayerCall, Span

#: a trace larger than this is cut (the table still counts every call); Perfetto opens it
MAX_EVENTS = 500_000

_TRACKS = {1: "LoadGen queries", 2: "predict()"}
#: the first layer track; one per thread the profiler saw (a parallel executor overlaps layers)
_LAYERS = 3


def chrome_trace(
    queries: Sequence[Span],
    inferences: Sequence[Span],
    calls: Sequence[LayerCall],
    *,
    backend: str,
    profiler: str,
) -> dict[str, Any]:
    """The trace document: times in microseconds from the first query."""
    spans = [*queries, *inferences]
    origin = min((s.start_ns for s in spans), default=min((c.start_ns for c in calls), default=0))
    pid = os.getpid()

    def us(ns: int) -> float:
        return round((ns - origin) / 1000, 3)

    threads = sorted({c.thread for c in calls})
    track = {t: _LAYERS + i for i, t in enumerate(threads)}
    tracks = dict(_TRACKS)
    for t, tid in track.items():
        tracks[tid] = "layers" if len(threads) == 1 else f"layers (thread {t})"
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"repro {backend}"}},
        *(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}}
            for tid, label in tracks.items()
        ),
    ]
    # whole inferences, in order, until the cap: a cut trace is the start of the pass, said so
    per_inference = assign(calls, inferences)
    kept_inferences = kept = 0
    for i, (span, inf_calls) in enumerate(zip(inferences, per_inference, strict=True)):
        if len(events) + 1 + len(inf_calls) + 1 > MAX_EVENTS:
            break
        events.append(
            _slice(
                "predict",
                "inference",
                pid,
                2,
                us(span.start_ns),
                span,
                {"samples": span.samples, "index": i},
            )
        )
        for c in inf_calls:
            events.append(
                {
                    "ph": "X",
                    "name": c.name,
                    "cat": c.kind,
                    "pid": pid,
                    "tid": track[c.thread],
                    "ts": us(c.start_ns),
                    "dur": round(c.dur_ns / 1000, 3),
                    "args": {"op_type": c.op_type},
                }
            )
        kept += len(inf_calls)
        kept_inferences += 1
    last = inferences[kept_inferences - 1].end_ns if kept_inferences else None
    for i, q in enumerate(queries):
        if last is not None and q.start_ns > last:
            break
        events.append(
            _slice(f"query {i}", "loadgen", pid, 1, us(q.start_ns), q, {"samples": q.samples})
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "producer": "repro profile",
            "profiler": profiler,
            "layer_calls": kept,
            "inferences": kept_inferences,
            "truncated": kept_inferences < len(inferences),
        },
    }


def _slice(
    name: str, cat: str, pid: int, tid: int, ts: float, span: Span, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": round((span.end_ns - span.start_ns) / 1000, 3),
        "args": args,
    }


def dumps(trace: dict[str, Any]) -> str:
    """Compact JSON (traces are large)."""
    return json.dumps(trace, separators=(",", ":")) + "\n"
