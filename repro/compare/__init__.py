"""Use case: compare replays with the original, metric by metric, with a verdict and its reason.

The report's types live in `repro.reports.model`, the verdict rules in `repro.stats.verdicts`; this
module lines the two sides up, computes the comparisons and assembles the report.

The names below load their module when first used (PEP 562): a command that needs one part of
the comparison (`repro env show`: the drift, `compare.envdiff`) does not import the report's
builder and its statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro import lazy

if TYPE_CHECKING:
    from repro.compare.build import (
        HEADLINE,
        build_report,
        decided,
        is_paired,
        undecided_scenarios,
    )
    from repro.compare.inputs import (
        Pairing,
        benchmark_of,
        report_folders,
        resolve_inputs,
        resolve_pairs,
        side_label,
        tolerances_for,
    )
    from repro.compare.metrics import METRICS, compare_metric

#: each name's module
_HOME = {
    **dict.fromkeys(
        ("HEADLINE", "build_report", "decided", "is_paired", "undecided_scenarios"),
        "repro.compare.build",
    ),
    **dict.fromkeys(
        (
            "Pairing",
            "benchmark_of",
            "report_folders",
            "resolve_inputs",
            "resolve_pairs",
            "side_label",
            "tolerances_for",
        ),
        "repro.compare.inputs",
    ),
    **dict.fromkeys(("METRICS", "compare_metric"), "repro.compare.metrics"),
}

__all__ = [
    "HEADLINE",
    "METRICS",
    "Pairing",
    "benchmark_of",
    "build_report",
    "compare_metric",
    "decided",
    "is_paired",
    "report_folders",
    "resolve_inputs",
    "resolve_pairs",
    "side_label",
    "tolerances_for",
    "undecided_scenarios",
]

__getattr__ = lazy.names(__name__, _HOME)
