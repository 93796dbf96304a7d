"""The profiled pass as a Chrome trace (JSON Object Format), for ui.perfetto.dev or
chrome://tracing: LoadGen's queries, the predict() calls inside them and the layers inside
those, each on its own track, on one clock."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from repro.profiles.build import SLACK_NS
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
    for i, q in enumerate(queries):
        events.append(
            _slice(f"query {i}", "loadgen", pid, 1, us(q.start_ns), q, {"samples": q.samples})
        )
    for i, s in enumerate(inferences):
        events.append(
            _slice(
                "predict",
                "inference",
                pid,
                2,
                us(s.start_ns),
                s,
                {"samples": s.samples, "index": i},
            )
        )
    first, last = (inferences[0].start_ns, inferences[-1].end_ns) if inferences else (0, 0)
    kept = 0
    for c in calls:
        if not first - SLACK_NS <= c.start_ns <= last + SLACK_NS:
            continue
        if len(events) >= MAX_EVENTS:
            break
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
        kept += 1
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "repro profile", "profiler": profiler, "layer_calls": kept},
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
