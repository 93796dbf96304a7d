"""repro's check of one result folder of a submission tree (`results/<system>/<benchmark>/
<scenario>/`): its measurements, accuracy run, performance run and compliance tests, by the
round's checker rules (`repro.mlperf.round_rules`), every rule judged (none skipped because
another failed, unlike the single-file checker, which stops at a folder's first failure).

The checkers read the detail logs' records (the first of each key) and count a record whose
metadata says `is_error` as a LoadGen error; so does this module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.mlperf.round_rules import (
    ACCURACY_FILES,
    EARLY_STOPPING,
    MAX_ACCURACY_LOG,
    MEASUREMENT_FIELDS,
    MEASUREMENT_FILES,
    MIN_DURATION_MS,
    OPTIONAL_FILES,
    PERFORMANCE_FILES,
    SEED_KEYS,
    BenchmarkRules,
)
from repro.mlperf.submission_findings import BOTH, NEW, OLD, Findings, Violation
from repro.mlperf.submission_tree import (
    ACCURACY_TXT,
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
    SubmissionTree,
)
from repro.runs import layout
from repro.runs.loadgen_logs import iter_detail_records

#: accuracy.txt's lines the checkers read (ACC_PATTERN["acc"] and the hash line)
_ACC = re.compile(r"^(?:\{\"accuracy|accuracy)[\": ]*=?\s*([\d\.]+).*")
_HASH = re.compile(r"^hash=([\w\d]+)$")
#: results a scenario may take from another one's run, on an edge system (inferred_check)
_INFERRED = {
    ("SingleStream", "MultiStream"),
    ("MultiStream", "Offline"),
    ("SingleStream", "Offline"),
}
_TEST01_FILES = ("mlperf_log_accuracy.json", "accuracy.txt")
_TEST01_FAILED_FILES = (*_TEST01_FILES, "baseline_accuracy.txt", "compliance_accuracy.txt")


@dataclass(frozen=True)
class Detail:
    """A detail log as the checkers read it: the first value of each key, the error records."""

    values: dict[str, Any]
    errors: list[str]

    def get(self, key: str) -> Any:
        return self.values.get(key)


def read_detail(path: Path) -> Detail | None:
    if not path.is_file():
        return None
    values: dict[str, Any] = {}
    errors: list[str] = []
    for rec in iter_detail_records(path.read_text(errors="replace")):
        key = str(rec.get("key", ""))
        values.setdefault(key, rec.get("value"))
        meta = rec.get("metadata")
        if isinstance(meta, dict) and meta.get("is_error"):
            errors.append(f"{key}: {rec.get('value')}")
    return Detail(values, errors)


@dataclass(frozen=True)
class Result:
    """One result folder and what the round knows of its benchmark."""

    tree: SubmissionTree
    top: Path
    system: str
    benchmark: str  # the folder's name
    scenario: str  # the folder's name (Offline, offline)
    fixed: str  # the scenario it stands for (Offline)
    rules: BenchmarkRules | None  # None: a benchmark whose numbers repro does not hold
    system_type: str | None

    @property
    def division(self) -> str:
        return self.tree.division

    @property
    def closed(self) -> bool:
        return self.division in ("closed", "network")

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.top).as_posix()
        except ValueError:
            return str(path)

    def folder(self) -> Path:
        return self.tree.result(self.system, self.benchmark, self.scenario)


def check_result(res: Result, found: Findings) -> None:
    """Every rule of one result folder."""
    check_measurements(res, found)
    check_accuracy(res, found)
    run = res.tree.performance(res.system, res.benchmark, res.scenario)
    check_performance(res, found, run)
    if res.closed:
        check_compliance(res, found)
    elif any(
        (p / "TEST01").is_dir() or (p / "TEST04").is_dir() for p, _ in _compliance_places(res)
    ):
        found.note(
            f"{res.division} division: the compliance tests are not judged (the checkers check "
            "them in the closed and network divisions only)"
        )


def _files_differ(folder: Path, wanted: tuple[str, ...], optional: set[str]) -> list[str]:
    have = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    return sorted((have ^ set(wanted)) - OPTIONAL_FILES - optional)


# --- measurements ------------------------------------------------------------------------


def check_measurements(res: Result, found: Findings) -> None:
    tree = res.tree
    own = tree.measurements(res.system, res.benchmark, res.scenario)
    places = [(own, BOTH if not tree.separate else NEW)]
    places += [(p, OLD) for p in tree.extra_places(res.system, res.benchmark, res.scenario)]
    for folder, checkers in places:
        _measurement_files(res, found, folder, checkers)
        if folder == own:
            mjson = tree.find_measurements_json(res.system, res.benchmark, res.scenario)
        else:
            mjson = (
                folder / "measurements.json" if (folder / "measurements.json").is_file() else None
            )
        _measurement_fields(res, found, folder, mjson, checkers)
    _code(res, found)


def _measurement_files(
    res: Result, found: Findings, folder: Path, checkers: frozenset[str]
) -> None:
    for name in MEASUREMENT_FILES:
        path = folder / name
        if not path.is_file():
            found.add("measurements.file", res.rel(folder), f"is missing {name}", checkers=checkers)
        elif path.stat().st_size == 0:
            found.add(
                "measurements.file", res.rel(folder), f"is having empty {name}", checkers=checkers
            )


def _measurement_fields(
    res: Result, found: Findings, folder: Path, mjson: Path | None, checkers: frozenset[str]
) -> None:
    if mjson is None:
        found.add(
            "measurements.missing",
            res.rel(folder),
            "measurements json file not found",
            checkers=checkers,
        )
        return
    try:
        doc = json.loads(mjson.read_text())
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        found.add("measurements.missing", res.rel(mjson), "not a JSON object", checkers=checkers)
        return
    for key in MEASUREMENT_FIELDS:
        if key not in doc:
            found.add(
                "measurements.field", res.rel(mjson), f"field {key} is missing", checkers=checkers
            )
        elif not doc[key]:
            found.add(
                "measurements.field",
                res.rel(mjson),
                f"field {key} is missing meaningful value",
                checkers=checkers,
            )


def _code(res: Result, found: Findings) -> None:
    tree = res.tree
    own = tree.root / tree.rules.layout.code
    if tree.rules.layout.code == "src":
        if not own.is_dir():
            found.add("code", res.rel(own), "src directory does not exist")
        return
    if not own.is_dir():
        found.add("code", res.rel(own), "src directory does not exist", checkers=NEW)
    if not (tree.root / "src").is_dir():
        found.add(
            "code",
            res.rel(tree.root / "src"),
            f"is missing code_dir src/{res.benchmark}",
            checkers=OLD,
        )


# --- accuracy ------------------------------------------------------------------------------


def check_accuracy(res: Result, found: Findings) -> None:
    acc = res.tree.accuracy(res.system, res.benchmark, res.scenario)
    where = res.rel(acc)
    text = acc / ACCURACY_TXT
    if not text.is_file():
        found.add("accuracy.result", where, "has no accuracy.txt")
    elif diff := _files_differ(acc, ACCURACY_FILES, set()):
        found.add("accuracy.files", where, f"has file list mismatch ({diff})", checkers=OLD)
    if text.is_file():
        _accuracy_text(res, found, text)
    log = acc / layout.ACCURACY_LOG
    if not log.is_file():
        found.add("accuracy.log", res.rel(log), "is missing")
    elif log.stat().st_size > MAX_ACCURACY_LOG:
        found.add(
            "accuracy.log",
            res.rel(log),
            f"is not truncated ({log.stat().st_size} bytes > {MAX_ACCURACY_LOG})",
        )
    detail = read_detail(acc / layout.DETAIL)
    if detail is None:
        found.add("accuracy.files", res.rel(acc / layout.DETAIL), "is missing")
        return
    if detail.errors:
        found.add(
            "accuracy.loadgen_errors",
            where,
            f"has loadgen errors, number of errors: {len(detail.errors)}: "
            + "; ".join(detail.errors)[:300],
        )
    _accuracy_counts(res, found, detail, where)


def _accuracy_text(res: Result, found: Findings, text: Path) -> None:
    lines = text.read_text(errors="replace").splitlines()
    value = next((float(m.group(1)) for ln in lines if (m := _ACC.match(ln))), None)
    if not any(_HASH.match(ln) for ln in lines):
        found.add("accuracy.hash", res.rel(text), "not hash value for accuracy.txt")
    if res.rules is None:
        return
    if value is None:
        found.add(
            "accuracy.result",
            res.rel(text),
            f"no {res.rules.accuracy_metric} figure the checker reads (accuracy=NN.NN%)",
            checkers=BOTH if res.closed else OLD,
        )
    elif res.closed and value < res.rules.accuracy_target:
        found.add(
            "accuracy.result",
            res.rel(text),
            f"accuracy not met: expected={res.rules.accuracy_target:f}, found={value}",
        )


def _accuracy_counts(res: Result, found: Findings, detail: Detail, where: str) -> None:
    rules = res.rules
    if rules is None:
        return
    total = detail.get("qsl_reported_total_count")
    effective = detail.get("effective_accuracy_sample_count")
    short_data = isinstance(total, int) and total < rules.dataset_size
    counted = effective if effective is not None else total
    if counted != rules.dataset_size:
        found.add(
            "accuracy.dataset",
            where,
            f"accurcy run does not cover all dataset, accuracy samples: {counted}, dataset "
            f"size: {rules.dataset_size}",
            cause="data" if short_data else None,
        )
    if isinstance(effective, int) and effective < rules.performance_sample_count:
        found.add(
            "accuracy.sample_count",
            where,
            f"accuracy_sample_count, found {effective}, needs to be >= "
            f"{rules.performance_sample_count}",
            cause="data" if short_data else None,
            checkers=OLD,
        )


# --- performance ---------------------------------------------------------------------------


def check_performance(res: Result, found: Findings, run: Path) -> None:
    """The rules of one performance run (the result's, or a compliance test's)."""
    where = res.rel(run)
    if not run.is_dir():
        found.add("performance.missing", where, "is missing")
        return
    if diff := _files_differ(run, PERFORMANCE_FILES, {layout.ACCURACY_LOG}):
        found.add("performance.files", where, f"has file list mismatch ({diff})", checkers=OLD)
    detail = read_detail(run / layout.DETAIL)
    if detail is None:
        found.add("performance.missing", where, "Performance log missing")
        return
    if detail.errors:
        found.add(
            "performance.loadgen_errors",
            where,
            f"has loadgen errors, number of errors: {len(detail.errors)}: "
            + "; ".join(detail.errors)[:300],
            checkers=OLD,
        )
    if detail.get("result_validity") != "VALID":
        found.add(
            "performance.validity",
            where,
            f"LoadGen says {detail.get('result_validity')} (the checker: has issues)",
            checkers=OLD,
        )
    _seeds(res, found, detail, where)
    scenario = str(detail.get("effective_scenario") or res.fixed)
    _inferred(res, found, scenario, where)
    _duration_and_counts(res, found, detail, scenario, where)
    if res.rules is not None:
        _benchmark_numbers(res, res.rules, found, detail, scenario, where)


def _seeds(res: Result, found: Findings, detail: Detail, where: str) -> None:
    for key in SEED_KEYS:
        want, got = res.tree.rules.seeds[key], detail.get(f"effective_{key}")
        if got != want:
            found.add(
                "seeds",
                where,
                f"{key} is wrong, expected={want}, found={got} (round {res.tree.rules.name}'s"
                " seeds: give `repro submission --round` the round, it runs with them)",
            )


def _inferred(res: Result, found: Findings, scenario: str, where: str) -> None:
    if scenario == res.fixed:
        return
    edge = "edge" in (res.system_type or "")
    if not edge or (scenario, res.fixed) not in _INFERRED:
        found.add(
            "performance.inferred",
            where,
            f"Result for scenario {res.fixed} can not be inferred from {scenario}",
        )


def _duration_and_counts(
    res: Result, found: Findings, detail: Detail, scenario: str, where: str
) -> None:
    duration = detail.get("effective_min_duration_ms")
    if not isinstance(duration, int | float) or duration < MIN_DURATION_MS:
        found.add(
            "min_duration",
            where,
            f"Test duration less than 600s in user config. expected={MIN_DURATION_MS}, "
            f"found={duration}",
            cause="length",
        )
    if scenario in EARLY_STOPPING and not detail.get("early_stopping_met"):
        found.add(
            "early_stopping",
            where,
            f"Early stopping condition was not met, msg={detail.get('early_stopping_result')}",
            cause="length",
        )


def _benchmark_numbers(
    res: Result, rules: BenchmarkRules, found: Findings, detail: Detail, scenario: str, where: str
) -> None:
    count = detail.get("effective_performance_sample_count")
    total = detail.get("qsl_reported_total_count")
    if not isinstance(count, int) or count < rules.performance_sample_count:
        small = isinstance(total, int) and total < rules.performance_sample_count
        found.add(
            "performance_sample_count",
            where,
            f"performance_sample_count, found {count}, needs to be >= "
            f"{rules.performance_sample_count}",
            cause="data" if small else None,
        )
    latency = detail.get("effective_target_latency_ns")
    bound = rules.server_latency_ns if scenario == "Server" else None
    if bound is not None and isinstance(latency, int | float) and latency > bound:
        found.add(
            "latency",
            where,
            f"Latency constraint with early stopping not met, expected={bound}, found={latency}",
        )
    queries = detail.get("effective_min_query_count")
    wanted = rules.min_queries.get(scenario)
    if scenario not in EARLY_STOPPING and wanted and isinstance(queries, int) and queries < wanted:
        found.add(
            "min_queries",
            where,
            f"Required minimum Query Count not met by user config, "
            f"Expected={wanted}, Found={queries}",
            cause="length",
        )
    per_query = detail.get("effective_samples_per_query")
    if (
        scenario == "Offline"
        and isinstance(per_query, int)
        and per_query < rules.offline_min_samples
    ):
        found.add(
            "min_samples_per_query",
            where,
            f"Required minimum samples per query not met by user config, "
            f"Expected={rules.offline_min_samples}, Found={per_query}",
            cause="length",
            checkers=BOTH if res.closed else OLD,
        )


# --- compliance ----------------------------------------------------------------------------


def _compliance_places(res: Result) -> list[tuple[Path, frozenset[str]]]:
    tree = res.tree
    own = tree.compliance(res.system, res.benchmark, res.scenario)
    if not tree.separate:
        return [(own, BOTH)]
    return [
        (own, NEW),
        *((p, OLD) for p in tree.extra_places(res.system, res.benchmark, res.scenario)),
    ]


def check_compliance(res: Result, found: Findings) -> None:
    if res.rules is None:
        found.note(
            f"{res.benchmark}: its compliance tests are not judged (repro holds the "
            "numbers of resnet only)"
        )
        return
    for folder, checkers in _compliance_places(res):
        for test in res.rules.compliance_tests:
            _compliance_test(res, found, folder / test, test, checkers)


def _compliance_test(
    res: Result, found: Findings, folder: Path, test: str, checkers: frozenset[str]
) -> None:
    where = res.rel(folder)
    if not folder.is_dir():
        found.add(
            "compliance.missing", where, f"Missing {test} in compliance dir", checkers=checkers
        )
        return
    verify = folder / VERIFY_PERFORMANCE
    if not verify.is_file():
        found.add("compliance.missing", res.rel(verify), "is missing", checkers=checkers)
    elif "TEST PASS" not in verify.read_text(errors="replace"):
        found.add(
            "compliance.performance",
            where,
            "Compliance test performance check failed (verify_performance.txt: TEST FAIL)",
            checkers=checkers,
        )
    run = folder / "performance" / "run_1"
    if not (run / layout.DETAIL).is_file():
        found.add(
            "compliance.missing", res.rel(run / layout.DETAIL), "is missing", checkers=checkers
        )
    else:
        sub = Findings(found.round)
        check_performance(res, sub, run)
        found.violations += [
            Violation(v.rule, v.where, v.why, v.cause, v.checkers & checkers)
            for v in sub.violations
        ]
    if test == "TEST01":
        _test01_accuracy(res, found, folder, checkers)


def _test01_accuracy(res: Result, found: Findings, folder: Path, checkers: frozenset[str]) -> None:
    verify = folder / VERIFY_ACCURACY
    if not verify.is_file():
        found.add("compliance.missing", res.rel(verify), "is missing", checkers=checkers)
        return
    passed = "TEST PASS" in (ln.strip() for ln in verify.read_text(errors="replace").splitlines())
    acc = folder / "accuracy"
    if not acc.is_dir():
        found.add(
            "compliance.accuracy", res.rel(folder), "has no accuracy directory", checkers=checkers
        )
        return
    wanted = _TEST01_FILES if passed else _TEST01_FAILED_FILES
    if diff := _files_differ(acc, wanted, set()):
        found.add(
            "compliance.accuracy",
            res.rel(acc),
            f"has file list mismatch ({diff})",
            checkers=checkers if not passed else checkers & OLD,
        )
    elif not passed and not _same_accuracy(acc, res.benchmark):
        found.add(
            "compliance.accuracy",
            res.rel(folder),
            "Compliance test accuracy check (non-deterministic mode) failed: the sampled "
            "responses differ from the accuracy run's and baseline_accuracy.txt and "
            "compliance_accuracy.txt differ by more than allowed",
            checkers=checkers,
        )


def _same_accuracy(acc: Path, benchmark: str) -> bool:
    """TEST01's second chance: the accuracy of the sampled responses within 1 % of the accuracy
    run's (0.1 % for a 99.9 % benchmark)."""

    def figure(name: str) -> float:
        lines = (acc / name).read_text(errors="replace").splitlines()
        return next((float(m.group(1)) for ln in lines if (m := _ACC.match(ln))), 0.0)

    baseline, compliance = figure("baseline_accuracy.txt"), figure("compliance_accuracy.txt")
    if baseline == 0 or compliance == 0:
        return False
    allowed = 0.1 if "99.9" in benchmark else 1.0
    return abs(1 - baseline / compliance) * 100 <= allowed
