"""What repro's check of a submission tree finds: violations of the round's checker rules, each
with the checker's wording, the rule it breaks and which official checker flags it.

The two official checkers (mlcommons/inference `tools/submission`) do not flag the same things:
`checker` is `submission_checker.main` (the package), `checker_old` is the single-file
`submission_checker_old.py`. A violation says which of them flags it, so that repro's list can be
set beside either checker's. `cause` marks what the run's length or its data cause: `length`
(a full-length run meets it: the 600 s duration, the query counts, early stopping) and `data`
(the benchmark's data set meets it: ImageNet's 50,000 images rather than a spec's 64).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

Cause = Literal["length", "data"]
CHECKER: Final = "checker"
CHECKER_OLD: Final = "checker_old"
BOTH: Final = frozenset({CHECKER, CHECKER_OLD})
OLD: Final = frozenset({CHECKER_OLD})
NEW: Final = frozenset({CHECKER})

#: every rule repro checks -> the check of the official checkers that states it (`Class.method`
#: of submission_checker/checks/, or the function of submission_checker_old.py)
RULES: Final = MappingProxyType(
    {
        "layout.division": "check_results_dir: a folder at the top that is no division",
        "layout.files": "check_results_dir: files outside the division / submitter folders",
        "layout.names": "check_results_dir: git-unfriendly names, spaces, __pycache__",
        "layout.empty": "check_results_dir: empty directories",
        "layout.symlink": "check_results_dir: broken symbolic links",
        "layout.size": "check_results_dir: files over 50 MB",
        "layout.results": "Loader.load: a submitter's results/ folder",
        "layout.unused_system": "check_results_dir: systems with no results",
        "calibration": "check_results_dir: calibration.md (closed division, from v5.1)",
        "system.missing": "SystemCheck.missing_check; check_results_dir: no system_desc",
        "system.status": "SystemCheck.availability_check",
        "system.type": "SystemCheck.system_type_check",
        "system.field": "SystemCheck.required_fields_check: field missing",
        "system.empty": "SystemCheck.required_fields_check: requires a meaningful response",
        "system.submitter": "SystemCheck.submitter_check",
        "system.division": "SystemCheck.division_check",
        "system.network": "SystemCheck.network_check",
        "benchmark": "Loader.check_scenarios / Config.get_mlperf_model: a benchmark of the round",
        "benchmark.system_type": "check_results_dir: the benchmark runs on that system type",
        "scenarios.unknown": "PerformanceCheck.scenarios_check: unknown scenarios",
        "scenarios.missing": "PerformanceCheck.scenarios_check: required scenarios",
        "measurements.missing": "MeasurementsCheck.missing_check",
        "measurements.file": "MeasurementsCheck.required_files_check",
        "measurements.field": "MeasurementsCheck.required_fields_check",
        "code": "MeasurementsCheck.directory_exist_check; check_measurement_dir: code_dir",
        "accuracy.files": "check_results_dir: accuracy file list",
        "accuracy.result": "AccuracyCheck.accuracy_result_check: accuracy.txt and the target",
        "accuracy.hash": "AccuracyCheck.accuracy_result_check: the hash line",
        "accuracy.log": "AccuracyCheck.accuracy_json_check: present and truncated",
        "accuracy.loadgen_errors": "AccuracyCheck.loadgen_errors_check",
        "accuracy.dataset": "AccuracyCheck.dataset_check: the whole data set",
        "accuracy.sample_count": "check_accuracy_dir: accuracy_sample_count",
        "performance.missing": "PerformanceCheck.missing_check",
        "performance.files": "check_results_dir: performance file list",
        "performance.loadgen_errors": "check_performance_dir: LoadGen errors",
        "performance.validity": "check_performance_dir: Result is VALID",
        "performance.inferred": "PerformanceCheck.inferred_check",
        "performance_sample_count": "PerformanceCheck.performance_sample_count_check",
        "seeds": "PerformanceCheck.seeds_check",
        "early_stopping": "PerformanceCheck.latency_check: early stopping met",
        "latency": "PerformanceCheck.latency_check: target latency",
        "min_queries": "PerformanceCheck.min_query_count_check: query count",
        "min_samples_per_query": (
            "PerformanceCheck.min_query_count_check: Offline samples per query"
        ),
        "min_duration": "PerformanceCheck.min_duration_check",
        "compliance.missing": "ComplianceCheck.dir_exists_check",
        "compliance.performance": "ComplianceCheck.compliance_performance_check",
        "compliance.accuracy": "ComplianceCheck.accuracy_check",
    }
)


@dataclass(frozen=True)
class Violation:
    """One rule a tree breaks, at one place (`where`: a path under the tree's top)."""

    rule: str
    where: str
    why: str
    cause: Cause | None = None
    checkers: frozenset[str] = BOTH

    @property
    def needs_full_run(self) -> bool:
        return self.cause == "length"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "where": self.where,
            "why": self.why,
            "cause": self.cause,
            "needs_full_run": self.needs_full_run,
            "checkers": sorted(self.checkers),
            "checker_rule": RULES.get(self.rule),
        }


@dataclass
class Findings:
    """A check's result: the violations, and notes on what it did not judge and why."""

    round: str
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, rule: str, where: str, why: str, **kw: Any) -> None:
        assert rule in RULES, rule
        self.violations.append(Violation(rule, where, why, **kw))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def of(self, checker: str) -> list[Violation]:
        """The violations one official checker flags too."""
        return [v for v in self.violations if checker in v.checkers]
