"""Use case: compare replays with the original, metric by metric, with a verdict and its reason.

The report's types live in `repro.reports.model`, the verdict rules in `repro.stats.verdicts`; this
module lines the two sides up, computes the comparisons and assembles the report.
"""

from repro.compare.build import HEADLINE, build_report, decided, is_paired, undecided_scenarios
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
