"""Read a published MLPerf Inference result (v4.0 to v5.x trees) as a run record.

Accepted paths: `<division>/<submitter>/results/<system>/<benchmark>/` (all its scenarios) or
one scenario folder below it. The system description comes from
`<division>/<submitter>/systems/<system>.json`; LoadGen's logs from
`<scenario>/performance/run_<k>/`; accuracy from `<scenario>/accuracy/accuracy.txt`.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.formats.served.endpoints import is_endpoints_result
from repro.mlperf.accuracy_txt import out_of_range, primary_metric, read_accuracy_file
from repro.mlperf.compliance import COMPLIANCE_TEST as _COMPLIANCE_TEST
from repro.mlperf.compliance import describe, read_compliance, verdicts
from repro.mlperf.endpoints_result import (
    endpoints_record,
    endpoints_scenarios,
    published_record,
)
from repro.mlperf.power import TESTING_RUN, add_power, has_power, stray_power_folders
from repro.mlperf.rules import checker_metric, mlperf_model
from repro.runs import layout
from repro.runs.layout import DETAIL, SUMMARY
from repro.runs.loadgen_logs import Metrics, merge_logs, read_log, read_log_parts
from repro.runs.record import RunRecord, TestRecord
from repro.spec.types import SCENARIOS, ScenarioName
from repro.stats.speed_adjust import positive

#: the metric MLPerf reports for each scenario, and its unit
HEADLINE: dict[str, tuple[str, str]] = {
    "SingleStream": ("latency_p90_ns", "ns"),
    "MultiStream": ("latency_p99_ns", "ns"),
    "Server": ("samples_per_second", "samples/s"),
    "Offline": ("samples_per_second", "samples/s"),
}


#: what MLPerf reported before today's metric, where a summary's headline states it: Server's
#: scheduled rate (LoadGen up to 4.0; the completed rate since 4.1) and MultiStream's samples
#: per query (LoadGen 1.x: the streams sustained within the bound; a latency since 2.0)
LEGACY_HEADLINE: dict[str, tuple[str, str]] = {
    "Server": ("scheduled_samples_per_second", "samples/s"),
    "MultiStream": ("samples_per_query", "samples/query"),
}


def headline_metric(scenario: str, tests: list[TestRecord]) -> tuple[str, str]:
    """(metric, unit) MLPerf reports for a scenario: tokens/s for the Offline and Server runs of
    an LLM benchmark (every run given counted tokens); the legacy metric where a run's summary
    states it as its headline (a v4.0 Server result) and every run has it (a replay's LoadGen
    logs the scheduled rate too); else HEADLINE's."""
    if (
        scenario in ("Offline", "Server")
        and tests
        and all(t.metrics.get("tokens_per_second") is not None for t in tests)
    ):
        return "tokens_per_second", "tokens/s"
    legacy = LEGACY_HEADLINE.get(scenario)
    if (
        legacy is not None
        and any(t.metrics.get("mlperf_metric") == legacy[0] for t in tests)
        and all(t.metrics.get(legacy[0]) is not None for t in tests)
    ):
        return legacy
    return HEADLINE[scenario]


#: the folder of llama2-70b's Server runs under interactive latency bounds (read on its own)
INTERACTIVE = "interactive"
_SCENARIO_NAMES: dict[str, ScenarioName] = {s.lower(): s for s in SCENARIOS}
_RUN = re.compile(r"run_\d+")
#: an MLCommons endpoints result's summary (`<scenario>/performance/result_summary.json`)
ENDPOINTS_SUMMARY = "result_summary.json"


def _has_runs(folder: Path) -> bool:
    """A scenario folder: LoadGen summaries under performance/run_k/ (listed with scandir, not
    a glob: a round asks it of every folder of thousands of results)."""
    try:
        entries = os.scandir(folder / "performance")
    except OSError:  # no such folder, or not a folder
        return False
    with entries:
        return any(_RUN.fullmatch(e.name) and Path(e.path, SUMMARY).is_file() for e in entries)


def _is_scenario(folder: Path) -> bool:
    """A scenario folder: LoadGen's runs, or MLCommons endpoints' config and summary."""
    return _has_runs(folder) or is_endpoints_result(folder)


def _scenario_dirs(path: Path) -> list[Path]:
    if _is_scenario(path):
        return [path]
    return sorted(p for p in path.iterdir() if p.is_dir() and _is_scenario(p))


def _scenario_level(path: Path) -> Path:
    """`performance/run_k`, `performance/` or `accuracy/` stand for their scenario folder."""
    if _RUN.fullmatch(path.name) and path.parent.name == "performance":
        return path.parent.parent
    if path.name in ("performance", "accuracy") and _is_scenario(path.parent):
        return path.parent
    return path


def _is_repro_run(path: Path) -> bool:
    return layout.record_file(path).exists()


def find_results(path: Path) -> list[Path]:
    """The published results at or below `path`, at any level of a tree (a round, division,
    submitter, `results/`, system, benchmark, scenario, `performance/run_k`): benchmark
    folders, or the one scenario folder asked for. Compliance runs (TEST01...) and repro's own
    run directories are not results."""
    if not path.is_dir():
        return []
    path = _scenario_level(_absolute(path))
    if _is_repro_run(path) or _is_repro_run(path.parent):
        return []
    if _is_scenario(path) or _scenario_dirs(path):
        return [path]
    return sorted(set(_results_below(path)))


#: a submitter's folders beside `results/` that the checker never reads as results (a v5.1
#: submitter's documentation/ held a results-shaped copy: 3 rows without a division)
NOT_RESULTS = frozenset({"documentation", "code"})


def _results_below(path: Path) -> Iterator[Path]:
    """The benchmark folders below `path` as the walk meets them (one may come more than once)."""
    for summary in _summaries(path):
        run = summary.parent
        if summary.name == ENDPOINTS_SUMMARY and run.name == "performance":
            scenario = run.parent  # MLCommons endpoints: <scenario>/performance/<summary>
            if not is_endpoints_result(scenario):
                continue
        elif not _RUN.fullmatch(run.name) or run.parent.name != "performance":
            continue
        else:
            scenario = run.parent.parent
        bench = scenario.parent
        rel = bench.relative_to(path).parts
        if "compliance" in rel or any(_COMPLIANCE_TEST.fullmatch(p) for p in rel):
            continue
        if any(p in NOT_RESULTS for p in rel):
            continue  # a submitter's documentation/ or code/ may hold a results-shaped copy
        if any(p.startswith(".") for p in run.relative_to(path).parts):
            continue  # a hidden folder: an unfinished repro run (.<id>.partial), never a result
        if _COMPLIANCE_TEST.fullmatch(scenario.name) or _is_repro_run(bench):
            continue
        if not _where_the_checker_reads(bench, path):
            continue
        yield bench


#: how deep and how wide a search for published results goes: a round is 9 levels deep
#: (round/division/submitter/results/system/benchmark/scenario/performance/run_1) and the
#: largest (v2.1) about 60,000 folders; a bigger search is a mistaken path, not a tree
MAX_SEARCH_DEPTH = 12
MAX_SEARCH_FOLDERS = 400_000


def _summaries(path: Path) -> Iterator[Path]:
    """Every LoadGen summary below `path`, found by a bounded walk: hidden folders and
    compliance folders are not entered, links to folders are followed (a tree assembled from
    links is a tree) but never in a loop; a search that would go past the bounds is refused,
    saying how far it went (`repro report --compare /` must not walk the whole disk)."""
    if path == Path(path.anchor):
        raise SpecError(
            f"{path}: the root of the file system is not a published tree",
            hint="name the tree's folder (a round, a division, a submitter or a result)",
        )
    found = 0
    seen = 0
    top = str(path).count(os.sep)  # os.walk joins each folder's name to its parent's
    visited: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(path, followlinks=True):
        st = os.stat(folder)  # noqa: PTH116 (a round has ~60,000 folders: no Path for each)
        if (st.st_dev, st.st_ino) in visited:
            dirs.clear()
            continue
        visited.add((st.st_dev, st.st_ino))
        seen += 1
        if seen > MAX_SEARCH_FOLDERS:
            raise SpecError(
                f"{path}: searched {MAX_SEARCH_FOLDERS} folders for published results "
                f"(found {found} LoadGen summaries so far) without reaching the end: too "
                "large to be one tree",
                hint="name the tree's folder (a round, a division, a submitter or a result)",
            )
        if SUMMARY in files:
            found += 1
            yield Path(folder, SUMMARY)
        elif ENDPOINTS_SUMMARY in files:
            found += 1
            yield Path(folder, ENDPOINTS_SUMMARY)
        if folder.count(os.sep) - top >= MAX_SEARCH_DEPTH:
            dirs.clear()
            continue
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d != "compliance"
            and d not in NOT_RESULTS
            and not _COMPLIANCE_TEST.fullmatch(d)
        ]


def _where_the_checker_reads(bench: Path, root: Path) -> bool:
    """A benchmark folder found below `root` is a result where the checker reads results: at
    `<submitter>/results/<system>/<benchmark>`. A results-shaped copy elsewhere (v1.0's
    closed/DellEMC/measurements/..., v1.1's stray bert-99.9/Server/Server/) is not; a folder
    of results with no `results/` level at all (results copied out of a tree) is read."""
    parts = _absolute_parts(bench)
    if "results" in parts:
        depth = len(parts) - 1 - parts[::-1].index("results")
        return len(parts) - depth - 1 == 2  # <system>/<benchmark>
    # no results/ above it: one beside it (within the walk) means a copy, not a result
    rel = bench.relative_to(root).parts
    ancestors = [root, *(root / Path(*rel[:k]) for k in range(1, len(rel)))]
    return not any((a / "results").is_dir() for a in ancestors)


def os_error_reason(result: Path, exc: OSError) -> str:
    """Why a result could not be read, naming its file (`.../mlperf_log_summary.txt: cannot be
    read: Permission denied`): a round's table or report lists it and goes on."""
    return f"{exc.filename or result}: cannot be read: {exc.strerror or exc}"


def is_mlperf_result(path: Path) -> bool:
    """True for any level of a published tree that holds at least one result: the walk stops
    at the first one (a whole round is not walked to answer it)."""
    if not path.is_dir():
        return False
    level = _scenario_level(_absolute(path))
    if _is_repro_run(level) or _is_repro_run(level.parent):
        return False
    if _is_scenario(level) or _scenario_dirs(level):
        return True
    return next(_results_below(level), None) is not None


#: the largest systems/<system>.json read (a description is a few kB)
_MAX_SYSTEM_BYTES = 16 << 20


def _system(path: Path) -> tuple[str, str, dict[str, Any], str | None]:
    """(submitter, system name, systems/<system>.json, what is wrong with that file) found
    above a benchmark folder; a missing or damaged description is said, never guessed."""
    parts = _absolute_parts(path)
    if "results" not in parts:
        return "unknown", path.name, {}, "not inside <submitter>/results/: no system description"
    i = len(parts) - 1 - parts[::-1].index("results")
    if i + 1 >= len(parts):
        return "unknown", path.name, {}, None
    system, submitter_dir = parts[i + 1], Path(*parts[:i])
    desc_path = submitter_dir / "systems" / f"{system}.json"
    if not desc_path.is_file():
        return submitter_dir.name, system, {}, f"{desc_path}: missing: the hardware is unknown"
    with desc_path.open("rb") as fh:
        data = fh.read(_MAX_SYSTEM_BYTES + 1)
    if len(data) > _MAX_SYSTEM_BYTES:
        problem = (
            f"{desc_path}: more than 16 MiB, not a system description: the hardware is unknown"
        )
        return submitter_dir.name, system, {}, problem
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        loaded = json.loads(data.decode("utf-8-sig", errors="replace"))
    except (json.JSONDecodeError, RecursionError):
        loaded = None
    if not isinstance(loaded, dict):
        problem = f"{desc_path}: not a JSON object: the hardware is unknown"
        return submitter_dir.name, system, {}, problem
    # a byte-order mark (an editor's) is no part of the JSON: read, and said
    note = f"{desc_path}: starts with a UTF-8 byte-order mark (read without it)" if bom else None
    return submitter_dir.name, system, loaded, note


#: a folder that names a round: `v4.1`, or a results repository's name ending in it
#: (`inference_results_v4.1`, `mlperf_inference_submissions_v5.0`); never a version inside
#: another name (`venv3.11`, `python-v3.10`)
_ROUND = re.compile(
    r"(?:.*(?:inference|results|submissions?)[\w.-]*[_-])?v(\d+\.\d+)(?:-(?:main|master))?",
    re.IGNORECASE,
)


def _absolute(path: Path) -> Path:
    """`path` absolute with `..` folded, its links kept: a tree reached through a link named
    for its round (`v5.1 -> /mnt/disk3/x`) keeps the round its name says."""
    return Path(os.path.normpath(path.absolute()))


def _absolute_parts(path: Path) -> tuple[str, ...]:
    """The parts of `path` made absolute with `..` folded: no system call for a path that is
    absolute already (a round has thousands), a resolved one otherwise."""
    return _normalized_parts(str(path)) if path.is_absolute() else path.resolve().parts


@functools.lru_cache(maxsize=8192)
def _normalized_parts(absolute: str) -> tuple[str, ...]:
    """An absolute path's parts with `..` folded (asked several times of each result)."""
    return Path(os.path.normpath(absolute)).parts


def round_of(path: Path) -> str | None:
    """The round the tree's own folder names (`inference_results_v4.1` -> v4.1), if it does:
    the folders above `<division>/<submitter>/results/` (a system's name may hold versions)."""
    parts = _absolute_parts(path)
    if "results" in parts:
        parts = parts[: max(len(parts) - 1 - parts[::-1].index("results") - 2, 0)]
    for part in reversed(parts):
        if m := _ROUND.fullmatch(part):
            return f"v{m.group(1)}"
    return None


def division_of(path: Path) -> str | None:
    """The division folder above `<submitter>/results/` (closed, open, network)."""
    parts = _absolute_parts(path)
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        if i >= 2:
            return parts[i - 2]
    return None


def fingerprint_from_system(desc: dict[str, Any]) -> dict[str, Any]:
    """A partial fingerprint from an MLPerf system description (unknown stays None)."""

    def num(v: Any) -> int | None:
        try:
            n = int(str(v).split()[0])
        except (ValueError, IndexError):
            return None
        return n if n > 0 else None  # a count of sockets, cores or nodes is at least one

    def text(key: str) -> str | None:
        return _text(desc.get(key))

    per_node = num(desc.get("host_processors_per_node"))
    cores = num(desc.get("host_processor_core_count"))
    return {
        "schema": "repro.machine.fingerprint/v1",
        "hardware": {
            "cpu": {
                "model": text("host_processor_model_name"),
                "physical_cores": cores * per_node if cores and per_node else cores,
                "sockets": per_node,
            },
            "memory": text("host_memory_capacity"),
            "accelerators": text("accelerator_model_name"),
            "accelerators_per_node": num(desc.get("accelerators_per_node")),
            "nodes": num(desc.get("number_of_nodes")),
        },
        "os": {"release": text("operating_system")},
        "python": {},
        "packages": {},
        "native": {
            "framework": text("framework"),
            "software": text("other_software_stack"),
        },
        "variables": {},
    }


def _text(value: Any) -> str | None:
    """A system description's field as text: a number as written, a list joined by commas
    (a hand-edited file may hold `["H100", null]`), anything else (an object, true) unknown."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        items = [t for v in value if (t := _text(v))]
        return ", ".join(items) or None
    return None


#: LoadGen's effective settings (as read_logs names them) -> TestSettings names, per scenario
_SETTINGS: dict[str, dict[str, str]] = {
    "SingleStream": {},
    "MultiStream": {"samples_per_query": "multi_stream_samples_per_query"},
    "Server": {"target_qps": "server_target_qps", "target_latency_ns": "server_target_latency_ns"},
    "Offline": {"target_qps": "offline_expected_qps"},
}
SEED_KEYS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")


def effective_settings(scenario: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The TestSettings a published run ran with, from its logs (what the logs do not say is
    left out, never guessed)."""
    names = {"min_duration_ms": "min_duration_ms", "min_query_count": "min_query_count"}
    names.update(_SETTINGS.get(scenario, {}))
    out = {
        ours: metrics[theirs] for theirs, ours in names.items() if metrics.get(theirs) is not None
    }
    if scenario == "Server" and metrics.get("ttft_latency_ns") and metrics.get("tpot_latency_ns"):
        # an LLM's Server run is bounded by its token latencies; its sample bound is 0
        out.pop("server_target_latency_ns", None)
        out.update(
            use_token_latencies=True,
            ttft_latency=metrics["ttft_latency_ns"],
            tpot_latency=metrics["tpot_latency_ns"],
        )
    return out


#: how far a summary's figure may differ from the detail log's: the summary rounds (six
#: significant digits, `1.25507e+06`); an edited or mixed-up log differs by more
_LOGS_AGREE = 1e-3


def _check_logs(run: Path, scenario: str, summary: Metrics, detail: Metrics | None) -> None:
    """A published run's summary (and its detail log, where read) must say whether the run is
    VALID and give its MLPerf metric as a positive number, and the two logs must agree on both:
    a damaged, truncated or edited log is an error naming the files, never a silent NaN and
    never hidden by the other log."""
    legacy = LEGACY_HEADLINE.get(scenario)
    key = (
        legacy[0] if legacy and summary.get("mlperf_metric") == legacy[0] else HEADLINE[scenario][0]
    )
    for where, metrics in ((run / SUMMARY, summary), (run / DETAIL, detail)):
        if metrics is None:
            continue
        if where.name == SUMMARY and metrics.get("validity") not in ("VALID", "INVALID"):
            raise SpecError(
                f"{where}: no 'Result is : VALID' or 'INVALID' line: the log is truncated or "
                "damaged",
                hint="restore the file from the published tree",
            )
        if where.name == DETAIL and metrics.get("validity") not in ("VALID", "INVALID"):
            # an empty, truncated or random-bytes detail log: the checker reads the run's
            # validity and figures from it, so it is no run the summary alone can stand for
            raise SpecError(
                f"{where}: no result_validity record (VALID or INVALID): the detail log is "
                "empty, truncated or damaged",
                hint="restore the file from the published tree (LoadGen writes it with the "
                "summary)",
            )
        value = metrics.get(key)
        if where.name == DETAIL and value is None:
            continue  # a detail log may leave the figure to the summary
        if not positive(value):
            raise SpecError(
                f"{where}: {key} is {value!r}, not a positive number: the log is damaged",
                hint="restore the file from the published tree",
            )
    if detail is not None:
        _check_agree(run, summary, detail, ("validity", key))


def _check_agree(run: Path, summary: Metrics, detail: Metrics, keys: tuple[str, ...]) -> None:
    """The summary and the detail log of one run state the same validity and MLPerf metric
    (a figure as the summary rounds it: `0.50` samples/s agrees with the detail log's 0.4951)."""
    for key in keys:
        a, b = summary.get(key), detail.get(key)
        if a is None or b is None:
            continue
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
        if numbers and math.isclose(float(a), float(b), rel_tol=_LOGS_AGREE):
            continue
        if numbers and abs(float(a) - float(b)) <= _printed_half_unit(run / SUMMARY, float(a)):
            continue
        if not numbers and a == b:
            continue
        raise SpecError(
            f"{run}: {SUMMARY} and {DETAIL} disagree on {key}: the summary says {a!r}, the "
            f"detail log {b!r}: one of them was edited or comes from another run",
            hint="restore both files from the published tree (LoadGen writes them together)",
        )


def _printed_half_unit(summary: Path, value: float) -> float:
    """Half the last printed digit of `value` as the summary prints it (`0.50` -> 0.005,
    `1.25507e+06` -> 5): how far the exact figure may lie from what the summary shows."""
    printed = _printed(read_log(summary).decode(errors="replace"), value)
    return printed[1] if printed else 0.0


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _printed(text: str, value: float) -> tuple[str, float] | None:
    """(the token, half its last digit) of `value` as `text` prints it, if it does."""
    from decimal import Decimal, InvalidOperation

    for token in _NUMBER.findall(text):
        try:
            if float(token) != value:
                continue
            exponent = Decimal(token).as_tuple().exponent
        except (ValueError, InvalidOperation):
            continue
        if isinstance(exponent, int):
            return token, 0.5 * 10.0**exponent * (1 + 1e-9)
    return None


#: the figures a summary may print coarsely (LoadGen's Server lines: two decimals)
_RATES = ("samples_per_second", "scheduled_samples_per_second", "tokens_per_second")
#: a figure printed with decimals and this close to its exact value, at least, is taken as
#: printed (six significant digits; two decimals of a rate above 50/s); a coarser one (`0.50`
#: for 0.4951) is taken from the detail log, as the checker takes it. A figure printed without
#: decimals (`1500`) is a six-digit print that dropped its zeros: taken as printed.
_COARSE = 1e-4


def _coarse(summary_text: str, metrics: Metrics) -> bool:
    """Whether a rate the summary states is printed too coarsely to stand for the run's figure."""
    for key in _RATES:
        value = metrics.get(key)
        # a damaged figure (not a positive finite number) is left to `_check_logs` to name
        if isinstance(value, int | float) and positive(value):
            printed = _printed(summary_text, float(value))
            if printed and "." in printed[0] and printed[1] > _COARSE * float(value):
                return True
    return False


def _runs(sdir: Path) -> list[Path]:
    """A scenario folder's performance/run_k/ that hold a summary, by k (a `run_1_2` beside
    `run_1` is a copy the checker does not read: never taken for a run)."""
    performance = sdir / "performance"
    try:
        with os.scandir(performance) as entries:
            names = [
                e.name
                for e in entries
                if _RUN.fullmatch(e.name) and Path(e.path, SUMMARY).is_file()
            ]
    except OSError:  # no such folder, or not a folder
        return []
    return [performance / name for name in sorted(names, key=lambda n: int(n[4:]))]


_SCENARIO_LINE = re.compile(r"^Scenario\s*:\s*(\S+)", re.MULTILINE)


def _log_scenario(summary: bytes) -> ScenarioName | None:
    """The scenario a run's summary states (its `Scenario :` line, not a whole parse)."""
    m = _SCENARIO_LINE.search(summary.decode(errors="replace"))
    return _SCENARIO_NAMES.get(m.group(1).lower()) if m else None


def _complete_scenarios(benchmark: Path) -> list[Path]:
    """A benchmark folder's scenario folders; one with a performance/ folder but no LoadGen
    summary under it is an error naming it (an incomplete result, never read as absent)."""
    found = []
    for d in sorted(p for p in benchmark.iterdir() if p.is_dir()):
        if _has_runs(d):
            found.append(d)
        elif (d / "performance").is_dir() and not is_endpoints_result(d):
            raise SpecError(
                f"{d / 'performance'}: no LoadGen summary (run_k/{SUMMARY}) can be read: "
                "the result is incomplete or unreadable",
                hint="restore the file from the published tree, or compare the other "
                "scenario folders one by one",
            )
    return found


def read_mlperf_result(path: Path, *, detail_logs: bool = True) -> RunRecord:
    """The published result as a RunRecord: one test per performance run, plus accuracy.

    The scenario is LoadGen's (its logs), not the folder's: edge submissions hold copies of the
    SingleStream run under `offline/` and `multistream/`; such a folder is read as what its log
    says, a copy of a run already read is skipped, and the record's notes say so.
    `detail_logs` False reads the summaries only (and LoadGen's version): fast, for tables;
    a run whose summary prints a rate too coarsely (`0.50` samples/s) has its detail log read.
    """
    path = _absolute(path)
    submitter, system, desc, problem = _system(path)
    loadgen = _has_runs(path) or any(_has_runs(d) for d in _dirs(path))
    if not loadgen and endpoints_scenarios(path):  # MLCommons endpoints: no LoadGen log
        return _endpoints(path, submitter, system, desc, problem)
    is_scenario = _has_runs(path)
    benchmark = path.parent.name if is_scenario else path.name
    if _COMPLIANCE_TEST.fullmatch(path.name):  # <benchmark>/<scenario>/TEST04: a compliance run
        benchmark = path.parent.parent.name
    if path.name.lower() == INTERACTIVE:
        benchmark += "-interactive"  # a result of its own, never one with the main Server's name
    tests: list[TestRecord] = []
    notes: list[str] = [problem] if problem else []
    # the benchmark as the round's checker names it (its aliases, the submitter's mapping)
    model = mlperf_model(round_of(path), benchmark, _model_mapping(path))
    if model != benchmark:
        notes.append(f"{benchmark}: the checker reads it as {model} (the round's rules for it)")
    seen: dict[str, tuple[Path, bytes]] = {}
    compliance: dict[str, dict[str, dict[str, str]]] = {}
    compliance_checks: dict[str, list[dict[str, Any]]] = {}
    runs_of = {d: _runs(d) for d in ([path] if is_scenario else _complete_scenarios(path))}
    # each scenario's first summary, read once: its scenario, and whether it is a copy
    heads = {d: read_log(runs[0] / SUMMARY) for d, runs in runs_of.items()}
    # a folder named after its log's scenario goes first: it is the original, not the copy
    logged = {d: _log_scenario(head) for d, head in heads.items()}
    ordered = sorted(
        logged, key=lambda d: (_SCENARIO_NAMES.get(d.name.lower()) != logged[d], d.name)
    )
    for sdir in ordered:
        if sdir.name.lower() == INTERACTIVE and sdir != path:
            notes.append(
                f"{sdir.name}/: Server runs under interactive latency bounds, a result of its "
                f"own: compare it as `repro report --compare {path.name}/{sdir.name} ...`"
            )
            continue
        runs = runs_of[sdir]
        copies = sorted(
            p.name
            for p in (sdir / "performance").glob("run_*")
            if p.is_dir() and not _RUN.fullmatch(p.name)
        )
        if copies:
            notes.append(
                f"{sdir.name}/performance/: {', '.join(copies)} not read (the checker reads "
                "run_<k> folders only)"
            )
        folder_scenario = _SCENARIO_NAMES.get(sdir.name.lower())
        found = logged[sdir] or folder_scenario
        if found is None:
            raise SpecError(
                f"{sdir}: neither the folder name nor LoadGen's log names a scenario "
                f"(expected one of {', '.join(SCENARIOS)})",
                hint="a published result keeps each scenario's runs in a folder of that name",
            )
        scenario: ScenarioName = found
        summary = heads[sdir]
        # an edge system's Offline result inferred from a SingleStream run (v1.x), as every
        # checker since v0.7 infers it: its QPS without LoadGen's overhead
        inferred = folder_scenario == "Offline" and scenario == "SingleStream"
        if inferred:
            notes.append(
                f"{sdir.name}/: a SingleStream run: the checker infers the Offline result from "
                "it (its QPS without LoadGen's overhead, in samples/s)"
            )
            scenario = "Offline"
        elif sdir.name.lower() == INTERACTIVE:
            notes.append(f"{sdir.name}/: {scenario} runs under interactive latency bounds")
        elif folder_scenario != scenario:
            notes.append(
                f"{sdir.name}/: the folder says {folder_scenario or 'nothing known'}, LoadGen's "
                f"log says {scenario}; read as {scenario}"
            )
        if scenario in seen:
            other, other_summary = seen[scenario]
            if other_summary != summary:
                raise SpecError(
                    f"{runs[0] / SUMMARY}: {sdir.name}/ holds a {scenario} run that differs from "
                    f"the one in {other.name}/: which is the {scenario} result?",
                    hint="a published result keeps one run per scenario, in the folder of its "
                    "scenario; fix the tree or compare the scenario folders one by one",
                )
            notes.append(
                f"{sdir.name}/ holds a byte-identical copy of the {scenario} run in "
                f"{other.name}/: not read twice"
            )
            continue
        seen[scenario] = (sdir, summary)
        unknown = False  # an inferred result whose figure is missing: the scenario is not read
        for k, run in enumerate(runs, start=1):
            head = summary if k == 1 else read_log(run / SUMMARY)
            summary_metrics, detail_metrics = read_log_parts(
                run, detail_log=detail_logs, summary_text=head
            )
            if not detail_logs and _coarse(head.decode(errors="replace"), summary_metrics):
                # a rate printed as `0.50`: the checker's figure is the detail log's (0.4951)
                summary_metrics, detail_metrics = read_log_parts(run, summary_text=head)
            _check_logs(
                run, "SingleStream" if inferred else scenario, summary_metrics, detail_metrics
            )
            metrics = merge_logs(summary_metrics, detail_metrics)
            if inferred:
                qps = metrics.get("queries_per_second_without_overhead")
                if not isinstance(qps, int | float) or not positive(qps):
                    notes.append(
                        f"{run.relative_to(path)}/{SUMMARY}: no 'QPS w/o loadgen overhead': the "
                        "Offline result the checker infers from this SingleStream run is unknown"
                    )
                    unknown = True
                    break
                metrics, detail_metrics = _inferred_offline(metrics, detail_metrics, float(qps))
            if detail_metrics is not None and detail_metrics.get("garbled_lines"):
                lines = detail_metrics["garbled_lines"]
                metrics["summary_only"] = True  # nothing certain to hold the summary to
                notes.append(
                    f"{run.relative_to(path)}/{DETAIL}: line(s) {lines} are not LoadGen "
                    "records (damaged or edited): not cross-checked"
                )
            if detail_logs and detail_metrics is None:
                # nothing to hold the summary to: an edited summary would read as any other
                metrics["summary_only"] = True
                detail = run / DETAIL
                state = (
                    "is not a regular file"
                    if detail.exists() or detail.is_symlink()
                    else "is missing"
                )
                notes.append(
                    f"{run.relative_to(path)}/{DETAIL} {state}: the summary alone, not "
                    "cross-checked (never ranked as a checked result)"
                )
            taken = checker_metric(round_of(path), model, scenario, metrics)
            if scenario == "Server" and taken.rule and k == 1:
                notes.append(taken.rule)
            if scenario == "Server" and taken.key != metrics.get("mlperf_metric"):
                metrics["mlperf_metric"] = taken.key  # the round's rule, not the headline's
            if run.name == TESTING_RUN and has_power(sdir):
                read = add_power(
                    sdir, scenario, taken.key, taken.unit, metrics, detail_metrics, round_of(path)
                )
                notes.append(f"{sdir.name}/: {read}")
            status = "valid" if metrics.get("validity") == "VALID" else "invalid"
            tests.append(
                TestRecord(
                    scenario=scenario,
                    mode="performance",
                    repeat=k,
                    dir=str(run.relative_to(path)),
                    status=status,
                    metrics=metrics,
                    settings=effective_settings(scenario, metrics),
                )
            )
        if unknown:
            continue
        acc_txt = sdir / "accuracy" / "accuracy.txt"
        if acc_txt.is_file():
            # the figure of the benchmark the checker reads it as (an open variant's F1)
            reading = read_accuracy_file(acc_txt, benchmark if primary_metric(benchmark) else model)
            hashed = _has_hash_line(acc_txt)
            why = out_of_range(reading) if reading is not None else None
            if reading is not None and (why or not math.isfinite(reading.value)):
                raise SpecError(
                    f"{acc_txt}: {why or f'{reading.metric} = {reading.value:g}'}: not a "
                    "possible figure",
                    hint="the accuracy file is damaged; the accuracy script prints e.g. "
                    "accuracy=76.456%",
                )
            if reading is not None:
                tests.append(
                    TestRecord(
                        scenario=scenario,
                        mode="accuracy",
                        dir=str(acc_txt.parent.relative_to(path)),
                        status="valid",
                        accuracy={
                            "metric": reading.metric,
                            "value": reading.value,
                            "unit": reading.unit,
                            "higher_is_better": reading.higher_is_better,
                            "values": reading.values,
                            # the accuracy log's sha256, which the checker requires
                            **({} if hashed else {"unhashed": True}),
                        },
                    )
                )
                if not hashed:
                    notes.append(
                        f"{acc_txt.relative_to(path)} has no hash= line: the checker fails "
                        "its accuracy check (the accuracy log it stands for is unverifiable): "
                        "not checked"
                    )
            else:
                notes.append(f"{acc_txt.relative_to(path)}: no accuracy figure could be read")
        division = division_of(path) or _text(desc.get("division"))
        if checks := read_compliance(
            sdir, round_name=round_of(path), benchmark=benchmark, division=division
        ):
            compliance[scenario] = verdicts(checks)
            compliance_checks[scenario] = [c.as_dict() for c in checks]
            notes.append(f"compliance, {scenario}: {describe(checks)}")
        if stray := stray_power_folders(sdir):
            notes.append(
                f"{sdir.name}/: {', '.join(stray)} not read (the checker reads a power result's "
                "logs in performance/power/, performance/ranging/ and performance/run_1/)"
            )
    return published_record(
        f"{submitter}/{system}/{benchmark}",
        benchmark,
        environment={
            **_published(path, submitter, system, desc),
            **({"mlperf_model": model} if model != benchmark else {}),
            **({"compliance": compliance} if compliance else {}),
            **({"compliance_checks": compliance_checks} if compliance_checks else {}),
        },
        fingerprint=fingerprint_from_system(desc),
        tests=tests,
        notes=notes,
    )


def _published(path: Path, submitter: str, system: str, desc: dict[str, Any]) -> dict[str, Any]:
    """What a published result's record says of where it comes from."""
    return {
        "manager": "published",
        "submitter": submitter,
        "system": system,
        "division": division_of(path) or _text(desc.get("division")),
        "round": round_of(path),
        "framework": _text(desc.get("framework")),
        "system_status": _text(desc.get("status")),  # available, preview, rdi
    }


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir()]
    except OSError:
        return []


def _endpoints(
    path: Path, submitter: str, system: str, desc: dict[str, Any], problem: str | None
) -> RunRecord:
    """A benchmark (or scenario) folder of MLCommons endpoints results."""
    benchmark = path.parent.name if is_endpoints_result(path) else path.name
    if path.name.lower() == INTERACTIVE:
        benchmark += "-interactive"  # a result of its own, as LoadGen's interactive runs are
    return endpoints_record(
        path,
        submitter=submitter,
        system=system,
        benchmark=benchmark,
        environment=_published(path, submitter, system, desc),
        fingerprint=fingerprint_from_system(desc),
        notes=[problem] if problem else [],
        round_name=round_of(path),
    )


def _inferred_offline(
    metrics: Metrics, detail: Metrics | None, qps: float
) -> tuple[Metrics, Metrics | None]:
    """The Offline figures the checker infers from a SingleStream run: samples/s its QPS
    without LoadGen's overhead (one sample a query), the Offline headline."""
    inferred: Metrics = {"samples_per_second": qps, "mlperf_metric": "samples_per_second"}
    return {**metrics, **inferred}, ({**detail, **inferred} if detail is not None else None)


def _model_mapping(path: Path) -> dict[str, Any] | None:
    """The submitter's `model_mapping.json` (`<division>/<submitter>/`), as the checker reads
    it: its own benchmark names -> the round's; None where there is none or it is not a JSON
    object of names."""
    parts = _absolute_parts(path)
    if "results" not in parts:
        return None
    i = len(parts) - 1 - parts[::-1].index("results")
    return _read_mapping(str(Path(*parts[:i]) / "model_mapping.json"))


@functools.lru_cache(maxsize=1024)
def _read_mapping(path: str) -> dict[str, Any] | None:
    """A submitter's mapping, read once per round (every result of the submitter asks)."""
    mapping = Path(path)
    try:
        if not mapping.is_file() or mapping.stat().st_size > 1 << 20:
            return None
        loaded = json.loads(mapping.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _has_hash_line(accuracy_txt: Path) -> bool:
    """Whether the accuracy file states its accuracy log's digest (`hash=...`), as the
    submission tooling writes it (on a line of its own, or after the figure)."""
    try:
        with accuracy_txt.open("rb") as fh:
            return b"hash=" in fh.read(1 << 20)
    except OSError:
        return False
