"""A dispatched replay across machines: each node's hardware and headline figures, and how its
hardware differs from the original's and from the other nodes'."""

from __future__ import annotations

import contextlib
import statistics
from collections import defaultdict

from repro.errors import SpecError
from repro.mlperf.tree import headline_metric
from repro.reports.model import DriftEntry, NodeSummary
from repro.runs import layout
from repro.runs.alignment import hardware_differences
from repro.runs.record import RunRecord
from repro.runs.store import LoadedRun, load_run
from repro.spec.types import SCENARIOS as _ORDER


def node_summaries(orig: LoadedRun, replay: LoadedRun) -> list[NodeSummary]:
    """One row per node the replay's parts ran on (none for a run that was not dispatched)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for part in replay.record.parts:
        if part.status in ("complete", "invalid"):  # a part without a run has no figures
            groups[part.node or f"part {part.index}"].append(part.index)
    out = []
    for node, indices in groups.items():
        parts = [p for p in replay.record.parts if p.index in indices]
        runs: list[RunRecord] = []
        for p in parts:
            folder = replay.path / p.dir
            if layout.record_file(folder).is_file():
                with contextlib.suppress(SpecError):  # a damaged part: no figures for it
                    runs.append(load_run(folder))
        fingerprint = runs[0].fingerprint if runs else {}
        cpu = runs[0].facts().hardware.cpu if runs else None
        tests = [t for t in replay.record.tests if t.part in indices]
        metrics: dict[str, float] = {}
        units: dict[str, str] = {}
        for scenario in _ORDER:
            perf = [
                t
                for t in tests
                if t.scenario == scenario
                and t.mode == "performance"
                and t.status in ("valid", "invalid")
            ]
            if not perf:
                continue
            key, unit = headline_metric(scenario, perf)
            values = [
                float(v) for t in perf if isinstance(v := t.metrics.get(key), int | float) and v > 0
            ]
            if values:
                metrics[f"{scenario} {key}"] = statistics.median(values)
                units[f"{scenario} {key}"] = unit
        out.append(
            NodeSummary(
                node=node,
                parts=indices,
                statuses=[p.status for p in parts],
                cpu_model=cpu.model if cpu else None,
                logical_cpus=cpu.logical_cpus if cpu else None,
                metrics=metrics,
                units=units,
                hardware_vs_original=hardware_differences(orig.record.fingerprint, fingerprint)
                if fingerprint
                else [],
            )
        )
    return out


def heterogeneous(nodes: list[NodeSummary]) -> bool:
    """The nodes are not all the same hardware (by what their fingerprints say)."""
    kinds = {(n.cpu_model, n.logical_cpus) for n in nodes if n.cpu_model is not None}
    return len(kinds) > 1


def node_drift(orig: LoadedRun, nodes: list[NodeSummary]) -> list[DriftEntry]:
    """The nodes' hardware, first in the drift, when they differ from each other."""
    if not heterogeneous(nodes):
        return []
    return [
        DriftEntry(
            group="hardware",
            key="nodes (a dispatched replay on different machines)",
            original=orig.record.facts().hardware.cpu.model,
            replay="; ".join(f"{n.node}: {n.cpu_model} x{n.logical_cpus}" for n in nodes),
            impact=100,
            level="high",
        )
    ]
