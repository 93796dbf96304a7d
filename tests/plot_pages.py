"""Every HTML page with a plot, built from small made-up data: report.html (its replay-vs-
original bars, latency CDF and layer-profile bars), a sweep, a recommendation and the fronts
page of `repro model fit`. The unit tests read their SVG; the Chromium test renders them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repro.compare.build import build_report
from repro.compare.inputs import resolve_inputs
from repro.mlperf.hardware_fronts import front_members, recovery
from repro.profiles.diff import diff_profiles
from repro.profiles.model import LayerRow, Profile
from repro.reports import fronts, pareto, sweep
from repro.reports import html as report_html
from repro.reports.model import ProfileSection
from repro.spec.models import Tolerances
from tests.helpers import make_run

#: a name as a published tree may spell it: markup, and a formula if mathtext were on
HOSTILE = "x<img src=x onerror=alert(1)>$\\alpha^2$"


def report_page(tmp_path: Path, *, profile: bool = True) -> str:
    """report.html of a replay at 70 % of the original's throughput, with a profile diff
    (unless `profile` is False)."""
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[70, 71, 69], seed=2, threads=1)
    original, replays = resolve_inputs(tmp_path / "r" / "original", [tmp_path / "r" / "replay"])
    report = build_report(original, replays, tolerances=Tolerances())
    if not profile:
        return report_html.render(report.model_copy(update={"generated_utc": "GENERATED"}))
    layers = [(f"conv{i}", "conv", 100_000.0 + 1_000 * i) for i in range(6)]
    slower = [
        (n, k, ns * (2.0 if n == "conv3" else 0.9 if n == "conv1" else 1.0)) for n, k, ns in layers
    ]
    diff = diff_profiles(_profile(layers), _profile(slower))
    profile = ProfileSection(scenario="SingleStream", original=None, replay=None, diff=diff)
    return report_html.render(
        report.model_copy(update={"profile": profile, "generated_utc": "GENERATED"})
    )


def _profile(layers: list[tuple[str, str, float]]) -> Profile:
    n = 10
    rows = [
        LayerRow(
            name=name,
            op_type=kind.title(),
            kind=kind,
            position=i,
            calls=n,
            total_ns=int(ns * n),
            median_ns=int(ns),
            per_sample_ns=ns,
            share=0.0,
        )
        for i, (name, kind, ns) in enumerate(layers)
    ]
    layers_ns = sum(r.total_ns for r in rows)
    return Profile(
        backend="onnxruntime",
        profiler="test",
        scenario="SingleStream",
        queries=n,
        inferences=n,
        samples=n,
        inference_ns=layers_ns + 100_000,
        layers_ns=layers_ns,
        outside_ns=100_000,
        rows=rows,
    )


X, Y = "max:Offline.throughput", "min:SingleStream.latency_p90"


def sweep_state() -> dict[str, Any]:
    """Five points of every kind; point 2's latency interval reaches below 0."""

    def m(mean: float, lo: float, hi: float) -> dict[str, float]:
        return {"mean": mean, "lo": lo, "hi": hi, "n": 3}

    kinds = [
        ((1000, 950, 1050), (2e6, 1.8e6, 2.2e6), "front"),
        ((4000, 3900, 4100), (5e6, 4.7e6, 5.3e6), "front"),
        ((3800, 3000, 4600), (4.8e6, -1e6, 9e6), "tied"),
        ((900, 850, 950), (6e6, 5.5e6, 6.5e6), "dominated"),
        ((5000, 4800, 5200), (9e6, 8e6, 1e7), "excluded"),
    ]
    points = [
        {
            "index": i,
            "values": {"workload.batch_size": 2**i},
            "status": "complete",
            "front": kind,
            "metrics": {X: m(*x), Y: m(*y)},
            "measures": {},
        }
        for i, (x, y, kind) in enumerate(kinds)
    ]
    return {
        "id": "s",
        "spec_name": "ort-digits",
        "seed": 7,
        "repeat": 3,
        "points": points,
        "params": [{"path": "workload.batch_size"}],
        "objectives": [X, Y],
        "constraints": ["peak_rss<=1"],
    }


def sweep_page(tmp_path: Path) -> str:
    return sweep.page(sweep_state())


def recommend_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A front of three systems (one named HOSTILE) and two dominated ones; the throughput
    spans three decades, the cost one."""

    def row(system: str, throughput: float, cost: float) -> dict[str, Any]:
        return {
            "submitter": "S",
            "system": system,
            "benchmark": "resnet50",
            "scenario": "Offline",
            "unit": "samples/s",
            "throughput": throughput,
            "cost": cost,
        }

    front = pd.DataFrame(
        [
            row("big", 90_000.0, 300_000.0),
            row(HOSTILE, 20_000.0, 40_000.0),
            row("small", 150.0, 9_000.0),
        ]
    )
    dominated = pd.DataFrame([row("old", 10_000.0, 200_000.0), row("slow", 100.0, 20_000.0)])
    return front, dominated


def recommend_page(tmp_path: Path) -> str:
    front, dominated = recommend_frames()
    return pareto.page([("throughput", True), ("cost", False)], front, dominated, [], [])


def fronts_members() -> tuple[pd.DataFrame, list[Any]]:
    """Three folds of one (benchmark, scenario), predictions 20 % off, one row's far off."""
    rng = np.random.default_rng(0)
    n = 18
    t = pd.DataFrame(
        {
            "benchmark": "resnet50",
            "scenario": "Offline",
            "submitter": "S",
            "system": [f"sys{i}" for i in range(n)],
            "y": 10 ** rng.uniform(2, 5, n),
            "cost_usd": np.geomspace(1e3, 1e6, n)[rng.permutation(n)],
        }
    )
    predicted = t["y"].to_numpy() * rng.uniform(0.8, 1.2, n)
    predicted[4] *= 30  # a false member, most likely
    fold_of = np.arange(n) % 3
    members = front_members(t, predicted, fold_of, target="throughput", second="min:cost_usd")
    return members, recovery(members, folds=[1, 2, 3])


def fronts_page(tmp_path: Path) -> str:
    members, recovered = fronts_members()
    return fronts.page(
        members,
        recovered,
        target="throughput",
        target_unit="samples/s",
        second="min:cost_usd",
        second_unit="USD",
    )


#: each page, and the axis labels (text) its plots must show
PAGES: dict[str, tuple[Callable[[Path], str], tuple[str, ...]]] = {
    "report": (
        report_page,
        (
            "relative difference, replay / original - 1 (%)",
            "SUT-side latency per query (log scale)",
            "fraction of queries at or below",
            "change of time per sample, replay - original (µs)",
        ),
    ),
    "sweep": (
        sweep_page,
        ("max:Offline.throughput (per second)", "min:SingleStream.latency_p90 (ms)"),
    ),
    "recommend": (
        recommend_page,
        ("throughput, higher is better (samples/s, log scale)", "cost, lower is better (USD)"),
    ),
    "fronts": (
        fronts_page,
        ("cost_usd, lower is better (USD, log scale)", "throughput (samples/s, log scale)"),
    ),
}
