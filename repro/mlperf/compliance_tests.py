"""MLPerf's compliance tests as repro runs them: the audit.config LoadGen reads for each, and
the verification files the checkers read afterwards.

TEST01 samples responses into the accuracy log during a performance run (`verify_accuracy.txt`:
every sampled response equals the accuracy run's for the same sample); TEST04 issues one sample
again and again (a cache of results would make it much faster). `verify_performance.txt` holds
`TEST PASS` when the test run is VALID and its score is within 10 % of the result's (TEST01) or
not more than 10 % better (TEST04); 20 % for a SingleStream of at most 200 us or a MultiStream
of at most 1.6 ms, as the compliance scripts allow.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Final

from repro.mlperf.tree import headline_metric
from repro.runs.record import TestRecord

#: each test's audit.config, as MLPerf's compliance folders give them
AUDIT: Final = MappingProxyType(
    {
        "TEST01": "*.*.accuracy_log_rng_seed = 720381539243781796\n"
        "*.*.accuracy_log_sampling_target = 64\n",
        "TEST04": "*.*.performance_issue_unique = 0\n"
        "*.*.performance_issue_same = 1\n"
        "*.*.performance_issue_same_index = 3\n",
    }
)


def _headline(test: TestRecord) -> tuple[str, float | None, bool]:
    """(metric, value, higher is better) the checks compare: SingleStream's early stopping
    estimate where LoadGen gave one, else the scenario's MLPerf metric."""
    key, _ = headline_metric(test.scenario, [test])
    if test.scenario == "SingleStream" and test.metrics.get("early_stopping_p90_ns"):
        key = "early_stopping_p90_ns"
    value = test.metrics.get(key)
    return key, float(value) if isinstance(value, int | float) else None, not key.endswith("_ns")


def verify_performance(test_name: str, reference: TestRecord, test: TestRecord) -> str:
    """verify_performance.txt of a compliance test run against the result's run."""
    key, ref, higher = _headline(reference)
    _, got, _ = _headline(test)
    lines = ["Verifying performance.", f"reference score = {ref}", f"test score = {got}"]
    if test.metrics.validity != "VALID":
        return "\n".join([*lines, "the test run is not VALID", "TEST FAIL"]) + "\n"
    if ref is None or got is None or ref <= 0 or got <= 0:
        return "\n".join([*lines, f"{key} missing", "TEST FAIL"]) + "\n"
    short = (test.scenario == "SingleStream" and ref <= 200_000) or (
        test.scenario == "MultiStream" and ref <= 1_600_000
    )
    allowed = 0.2 if short and not higher else 0.1
    ratio = got / ref if higher else ref / got  # > 1: the test ran faster
    ok = 1 - allowed <= ratio <= 1 + allowed if test_name == "TEST01" else ratio <= 1 + allowed
    return "\n".join([*lines, "TEST PASS" if ok else "TEST FAIL"]) + "\n"


def _responses(log: Path) -> dict[int, str]:
    try:
        entries = json.loads(log.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(entries, list):
        return {}
    return {int(e["qsl_idx"]): str(e["data"]) for e in entries if isinstance(e, dict)}


def verify_accuracy(sampled_log: Path, accuracy_log: Path) -> str:
    """TEST01's verify_accuracy.txt: every response sampled during the performance run equals
    the accuracy run's response for the same sample."""
    sampled, reference = _responses(sampled_log), _responses(accuracy_log)
    lines = [
        "Reading accuracy mode results...",
        "Reading performance mode results...",
        f"{len(sampled)} sampled responses, {len(reference)} accuracy-mode responses",
    ]
    if not sampled or not reference:
        return "\n".join([*lines, "nothing to compare", "TEST FAIL"]) + "\n"
    differ = [i for i, data in sampled.items() if reference.get(i) != data]
    lines.append(f"{len(differ)} of {len(sampled)} differ")
    return "\n".join([*lines, "TEST FAIL" if differ else "TEST PASS"]) + "\n"
