"""Read LoadGen's own log files (LoadGen 4.0 to 6.0 wording) into one flat metrics dict.

Metric names (all optional, units in the name):
scenario, mode, validity, mlperf_metric (the metric the summary's headline states),
samples_per_second, scheduled_samples_per_second,
queries_per_second, latency_{min,max,mean}_ns, latency_p{50,90,95,97,99,99.9}_ns,
early_stopping_p{NN}_ns, min_duration_met, min_queries_met, early_stopping_met,
perf_constraints_met, samples_per_query, target_qps, target_latency_ns, ttft_latency_ns and
tpot_latency_ns (an LLM's Server bounds), use_token_latencies, query_count,
loadgen_version, num_errors, num_warnings, and the effective seeds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.runs.layout import DETAIL, SUMMARY

MetricValue = float | int | str | bool | None
Metrics = dict[str, MetricValue]

#: the largest LoadGen logs read: a summary is a few kB, a detail log tens of kB to a few MB
#: (an LLM's, with its warnings); a file beyond these is not LoadGen's, and reading it whole
#: would take the machine's memory (a 2 GB summary ended in a MemoryError)
MAX_SUMMARY_BYTES = 1 << 20
MAX_DETAIL_BYTES = 256 << 20


def read_log(path: Path) -> bytes:
    """A LoadGen log's bytes, at most its kind's size (a SpecError naming the file beyond)."""
    cap = MAX_SUMMARY_BYTES if path.name == SUMMARY else MAX_DETAIL_BYTES
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise SpecError(
            f"{path}: more than {cap >> 20} MiB, larger than any LoadGen {path.name}: not "
            "LoadGen's log, or a damaged one",
            hint="restore the file from the published tree",
        )
    return data


_MODES = {
    "PerformanceOnly": "performance",
    "AccuracyOnly": "accuracy",
    "SubmissionRun": "submission",
    "FindPeakPerformance": "find_peak",
}


def _pct_name(pct: str) -> str:
    """'90', '90.0', '90.00' -> 'p90'; '99.90' -> 'p99.9'."""
    value = float(pct)
    return f"p{value:g}"


def _number(text: str) -> float | int:
    """A number as LoadGen prints it; anything else is NaN (a damaged log), never an error
    here: whoever uses the figure says which file and field are damaged."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return math.nan


def _yes(text: str) -> bool:
    return text.strip().lower() in ("yes", "true", "1")


_SUMMARY_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^Scenario\s*:\s*(\S+)"), "scenario"),
    (re.compile(r"^Mode\s*:\s*(\S+)"), "mode"),
    (re.compile(r"^SUT name\s*:\s*(.+)$"), "sut_name"),
    (re.compile(r"^Result is\s*:\s*(\S+)"), "validity"),
    (re.compile(r"^Samples per second\s*:\s*(\S+)"), "samples_per_second"),
    (re.compile(r"^Completed samples per second\s*:\s*(\S+)"), "samples_per_second"),
    (re.compile(r"^Scheduled samples per second\s*:\s*(\S+)"), "scheduled_samples_per_second"),
    (re.compile(r"^QPS w/ loadgen overhead\s*:\s*(\S+)"), "queries_per_second"),
    (re.compile(r"^QPS w/o loadgen overhead\s*:\s*(\S+)"), "queries_per_second_without_overhead"),
    (re.compile(r"^Min latency \(ns\)\s*:\s*(\S+)"), "latency_min_ns"),
    (re.compile(r"^Max latency \(ns\)\s*:\s*(\S+)"), "latency_max_ns"),
    (re.compile(r"^Mean latency \(ns\)\s*:\s*(\S+)"), "latency_mean_ns"),
    (re.compile(r"^Min duration satisfied\s*:\s*(\S+)"), "min_duration_met"),
    (re.compile(r"^Min queries satisfied\s*:\s*(\S+)"), "min_queries_met"),
    (re.compile(r"^Early stopping satisfied\s*:\s*(\S+)"), "early_stopping_met"),
    (re.compile(r"^Performance constraints satisfied\s*:\s*(\S+)"), "perf_constraints_met"),
    (re.compile(r"^samples_per_query\s*:\s*(\S+)"), "samples_per_query"),
    # LoadGen 1.x's MultiStream headline: the streams a run sustained within its latency bound
    (re.compile(r"^Samples per query\s*:\s*(\S+)"), "samples_per_query"),
    (re.compile(r"^target_qps\s*:\s*(\S+)"), "target_qps"),
    (re.compile(r"^target_latency \(ns\)\s*:\s*(\S+)"), "target_latency_ns"),
    (re.compile(r"^ttft_latency \(ns\)\s*:\s*(\S+)"), "ttft_latency_ns"),
    (re.compile(r"^tpot_latency \(ns\)\s*:\s*(\S+)"), "tpot_latency_ns"),
    (re.compile(r"^performance_sample_count\s*:\s*(\S+)"), "performance_sample_count"),
    (re.compile(r"^qsl_rng_seed\s*:\s*(\S+)"), "qsl_rng_seed"),
    (re.compile(r"^sample_index_rng_seed\s*:\s*(\S+)"), "sample_index_rng_seed"),
    (re.compile(r"^schedule_rng_seed\s*:\s*(\S+)"), "schedule_rng_seed"),
    (re.compile(r"^min_duration \(ms\)\s*:\s*(\S+)"), "min_duration_ms"),
    (re.compile(r"^min_query_count\s*:\s*(\S+)"), "min_query_count"),
]
#: the patterns by the first word they match (each starts with a plain word): a summary line
#: is tried against the few that can match it, not all thirty
_BY_FIRST_WORD: dict[str, list[tuple[re.Pattern[str], str]]] = {}
for _pattern, _key in _SUMMARY_PATTERNS:
    _word = re.match(r"\^([\w/]+)", _pattern.pattern)
    _BY_FIRST_WORD.setdefault(_word.group(1) if _word else "", []).append((_pattern, _key))
# "50.00 percentile latency (ns)   : 123" and the headline "90th percentile latency (ns) : 123"
_PCT_LINE = re.compile(r"^(\d+(?:\.\d+)?)(?:th)? percentile latency \(ns\)\s*:\s*(\S+)")
_ES_SECTION = re.compile(r"^(?:(TTFT|TPOT) )?Early Stopping Result:")
_ES_NEED = re.compile(r"^\* (?:(Need to process at least)|Only processed) (\d+) queries")
_ES_LINE = re.compile(r"Early stopping (\d+(?:\.\d+)?)(?:th)? percentile estimate\s*:\s*(\S+)")
# LLM benchmarks (LoadGen with token latencies): tokens/s, time to first token (TTFT) and time
# per output token (TPOT), "Min First Token latency (ns)", "99.00 percentile first token
# latency (ns)", "Mean Time per Output Token (ns)" (also "Time to Output Token"), ...
_TOKENS_LINE = re.compile(r"^(?:Completed )?tokens per second\s*:\s*(\S+)", re.IGNORECASE)
# GPT-J (LoadGen 4.1 on): tokens/s inferred from samples and a scaling factor
_INFERRED_LINE = re.compile(
    r"^(?:Completed )?tokens per second \(inferred\)\s*:\s*(\S+)", re.IGNORECASE
)
_TPS_LINE = re.compile(r"^TPS w/(o?) loadgen overhead\s*:\s*(\S+)")
_TTFT_PCT = re.compile(r"^(\d+(?:\.\d+)?) percentile first token latency \(ns\)\s*:\s*(\S+)")
_TPOT_PCT = re.compile(
    r"^(\d+(?:\.\d+)?) percentile time (?:to|per) output token \(ns\)\s*:\s*(\S+)"
)
_TTFT_STAT = re.compile(r"^(Min|Max|Mean) First Token latency \(ns\)\s*:\s*(\S+)")
_TPOT_STAT = re.compile(r"^(Min|Max|Mean) Time (?:to|per) Output Token \(ns\)\s*:\s*(\S+)")
_COUNT_LINE = re.compile(r"^(\d+) (warnings|ERROR)", re.IGNORECASE)
_BOOLEAN = {"min_duration_met", "min_queries_met", "early_stopping_met", "perf_constraints_met"}


def _token_metric(line: str) -> tuple[str, float | int] | None:
    """An LLM summary line: tokens/s, TTFT or TPOT (min, max, mean, percentiles)."""
    if "oken" not in line and not line.startswith("TPS"):
        return None  # every such line names a token (or TPS)
    if m := _TOKENS_LINE.match(line):
        return "tokens_per_second", _number(m.group(1))
    if m := _INFERRED_LINE.match(line):
        return "inferred_tokens_per_second", _number(m.group(1))
    if m := _TPS_LINE.match(line):
        key = "tokens_per_second_without_overhead" if m.group(1) else "tokens_per_second"
        return key, _number(m.group(2))
    for pct, stat, name in ((_TTFT_PCT, _TTFT_STAT, "ttft"), (_TPOT_PCT, _TPOT_STAT, "tpot")):
        if m := pct.match(line):
            return f"{name}_{_pct_name(m.group(1))}_ns", _number(m.group(2))
        if m := stat.match(line):
            return f"{name}_{m.group(1).lower()}_ns", _number(m.group(2))
    return None


#: the headline line of a summary (the one before "Result is") -> the metric it states:
#: what MLPerf reported for the run with that LoadGen (Server: the scheduled rate up to
#: LoadGen 4.0, the completed one since 4.1; MultiStream: samples per query in 1.x)
_HEADLINES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:Completed )?samples per second\s*:", re.IGNORECASE), "samples_per_second"),
    (re.compile(r"^Scheduled samples per second\s*:"), "scheduled_samples_per_second"),
    (re.compile(r"^Samples per query\s*:"), "samples_per_query"),
    (re.compile(r"^(?:Completed )?tokens per second\s*:", re.IGNORECASE), "tokens_per_second"),
]


def _headline(line: str) -> str | None:
    """The metric a summary's headline line states, if it is one this reader knows."""
    if m := _PCT_LINE.match(line):
        return f"latency_{_pct_name(m.group(1))}_ns"
    return next((key for pattern, key in _HEADLINES if pattern.match(line)), None)


_WARNINGS_LINE = re.compile(r"^(\d+) warnings? encountered")
_ERRORS_LINE = re.compile(r"^(\d+) ERRORS? encountered", re.IGNORECASE)
#: the patterns tried on every line, whatever its first word (none today)
_ANY_WORD = _BY_FIRST_WORD.get("", [])


def parse_summary_text(text: str) -> Metrics:
    """Metrics of an mlperf_log_summary.txt; `mlperf_metric` names the metric its headline
    states (`_HEADLINES`). Each line is tried against the patterns that can match it only (a
    round's table parses thousands of summaries)."""
    out: Metrics = {}
    section = ""  # an LLM run states early stopping for its TTFT and its TPOT apart
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if "validity" not in out and (headline := _headline(line)):
            out["mlperf_metric"] = headline
        if "arly " in line:  # "Early Stopping Result:", " * Early stopping 90th percentile"
            if m := _ES_SECTION.match(line):
                section = f"{m.group(1).lower()}_" if m.group(1) else ""
            if m := _ES_LINE.search(line):
                out[f"early_stopping_{section}{_pct_name(m.group(1))}_ns"] = _number(m.group(2))
                continue
        if line.startswith("* ") and "queries" in line and (m := _ES_NEED.match(line)):
            # why early stopping failed: " * Need to process at least 64 queries for ..."
            key = "early_stopping_queries_needed" if m.group(1) else "early_stopping_queries_done"
            out.setdefault(key, int(m.group(2)))
            continue
        digit = line[0].isdigit()
        if digit and (m := _PCT_LINE.match(line)):
            out[f"latency_{_pct_name(m.group(1))}_ns"] = _number(m.group(2))
            continue
        if token := _token_metric(line):
            out.setdefault(token[0], token[1])
            continue
        if line.startswith("No warnings"):
            out["num_warnings"] = 0
        elif line.startswith("No errors"):
            out["num_errors"] = 0
        elif digit and (m := _WARNINGS_LINE.match(line)):
            out["num_warnings"] = int(m.group(1))
        elif digit and (m := _ERRORS_LINE.match(line)):
            out["num_errors"] = int(m.group(1))
        first = line.split(" ", 1)[0].rstrip(":")
        for pattern, key in (*_BY_FIRST_WORD.get(first, ()), *_ANY_WORD):
            if (m := pattern.match(line)) and key not in out:
                value = m.group(1).strip()
                if key in _BOOLEAN:
                    out[key] = _yes(value)
                elif key in ("scenario", "validity", "sut_name"):
                    out[key] = value
                elif key == "mode":
                    out[key] = _MODES.get(value, value)
                else:
                    out[key] = _number(value)
                break
    return out


def iter_detail_records(
    text: str, keep: Callable[[str], bool] | None = None, *, garbled: list[int] | None = None
) -> list[dict[str, Any]]:
    """The `:::MLLOG {...}` records of a detail log; malformed lines are skipped (and their
    numbers added to `garbled`: a record line with no key, or a kept one that is not JSON).
    With `keep`, only the records whose key it keeps, each line's key found by a pattern before
    its JSON is parsed (a log of tens of thousands of records is read in a fraction of the
    time)."""
    records = []
    for n, line in enumerate(text.splitlines(), start=1):
        start = line.find(":::MLLOG ")
        if start < 0:
            continue
        if keep is not None:
            found = _KEY.search(line, start)
            if found is None:
                if garbled is not None:
                    garbled.append(n)
                continue
            if not keep(found.group(1)):
                continue
        try:
            record = json.loads(line[start + 9 :])
        except json.JSONDecodeError:
            if garbled is not None:
                garbled.append(n)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


_KEY = re.compile(r'"key":\s*"([^"]*)"')


_DETAIL_KEYS = {
    "effective_scenario": "scenario",
    "effective_test_mode": "mode",
    "sut_name": "sut_name",
    "result_validity": "validity",
    "result_samples_per_second": "samples_per_second",
    "result_completed_samples_per_sec": "samples_per_second",
    "result_scheduled_samples_per_sec": "scheduled_samples_per_second",
    "result_qps_with_loadgen_overhead": "queries_per_second",
    "result_qps_without_loadgen_overhead": "queries_per_second_without_overhead",
    "result_min_latency_ns": "latency_min_ns",
    "result_max_latency_ns": "latency_max_ns",
    "result_mean_latency_ns": "latency_mean_ns",
    "result_min_duration_met": "min_duration_met",
    "result_min_queries_met": "min_queries_met",
    "early_stopping_met": "early_stopping_met",
    "result_perf_constraints_met": "perf_constraints_met",
    "effective_samples_per_query": "samples_per_query",
    "effective_target_qps": "target_qps",
    "effective_target_latency_ns": "target_latency_ns",
    "requested_use_token_latencies": "use_token_latencies",
    "requested_server_ttft_latency": "ttft_latency_ns",
    "requested_server_tpot_latency": "tpot_latency_ns",
    "effective_performance_sample_count": "performance_sample_count",
    "effective_qsl_rng_seed": "qsl_rng_seed",
    "effective_sample_index_rng_seed": "sample_index_rng_seed",
    "effective_schedule_rng_seed": "schedule_rng_seed",
    "effective_min_duration_ms": "min_duration_ms",
    "effective_min_query_count": "min_query_count",
    "result_query_count": "query_count",
    "result_tokens_per_second": "tokens_per_second",
    "result_completed_tokens_per_second": "tokens_per_second",
    "result_inferred_tokens_per_second": "inferred_tokens_per_second",
    "result_inferred_completed_tokens_per_second": "inferred_tokens_per_second",
    "loadgen_version": "loadgen_version",
    "test_datetime": "test_datetime",
}
_DETAIL_PCT = re.compile(r"^result_(\d+(?:\.\d+)?)_percentile_(per_query_)?latency_ns$")


def _wanted(key: str) -> bool:
    """A detail record `parse_detail_text` reads (the rest, most of a log, is not parsed)."""
    return (
        key in _DETAIL_KEYS
        or key.startswith(("error", "warning", "early_stopping_latency_"))
        or _DETAIL_PCT.match(key) is not None
    )


def parse_detail_text(text: str) -> Metrics:
    """Metrics of an mlperf_log_detail.txt, with counts of its error_* and warning_* records."""
    out: Metrics = {}
    errors = warnings = 0
    messages: list[str] = []
    garbled: list[int] = []
    for rec in iter_detail_records(text, keep=_wanted, garbled=garbled):
        key = rec.get("key", "")
        value = rec.get("value")
        if key == "error_invalid_config" or key.startswith("error"):
            errors += 1
            messages.append(f"{key}: {value}")
            continue
        if key.startswith("warning"):
            warnings += 1
            continue
        if key in ("early_stopping_latency_ss", "early_stopping_latency_ms"):
            # LoadGen logs 0 when a run had too few queries for an early-stopping estimate
            if value != 0:
                name = "p90" if key.endswith("_ss") else "p99"
                out[f"early_stopping_{name}_ns"] = value
        elif m := _DETAIL_PCT.match(key):
            kind = "query" if m.group(2) else "sample"
            out[f"{kind}_latency_{_pct_name(m.group(1))}_ns"] = value
        elif key in _DETAIL_KEYS:
            name = _DETAIL_KEYS[key]
            if name == "mode" and isinstance(value, str):
                value = _MODES.get(value, value)
            out[name] = value
    _latency_percentiles(out)
    out["num_errors"] = errors
    out["num_warnings"] = warnings
    if garbled:  # a damaged or edited log: said, never read as if whole
        out["garbled_lines"] = ", ".join(map(str, garbled[:20]))
    if messages:
        out["errors"] = "; ".join(messages)[:2000]
    return out


def _latency_percentiles(out: Metrics) -> None:
    """`latency_pNN_ns` as the summary states it: per query where LoadGen logs per-query
    percentiles (MultiStream: a query is 8 samples, and MLPerf's metric is its latency; LoadGen
    2.x logged the per-sample figures under the plain key), else per sample. A MultiStream
    log's per-sample figures stay `sample_latency_pNN_ns` (never taken for the query's)."""
    multi = out.get("scenario") == "MultiStream"
    queries = {k[6:]: out.pop(k) for k in list(out) if k.startswith("query_latency_p")}
    samples = {k[7:]: out.pop(k) for k in list(out) if k.startswith("sample_latency_p")}
    for name, value in samples.items():
        if name in queries or multi:
            if queries.get(name) != value:  # LoadGen 6 logs the same figure twice: said once
                out[f"sample_{name}"] = value
        else:
            out[name] = value
    out.update(queries)


_VERSION = re.compile(r'"key":\s*"loadgen_version",\s*"value":\s*"([^"]*)"')


def loadgen_version(folder: Path) -> str | None:
    """LoadGen's version from the head of a detail log (its first records), without parsing
    the whole log."""
    try:
        with (folder / DETAIL).open("rb") as fh:
            head = fh.read(16384).decode(errors="replace")
    except OSError:
        return None
    m = _VERSION.search(head)
    return m.group(1) if m else None


def read_logs(folder: Path, *, detail_log: bool = True) -> Metrics:
    """Metrics of a LoadGen output folder: the detail log where present (unless `detail_log`
    is False: the summary alone, for tables of thousands of results), the summary filling in."""
    return merge_logs(*read_log_parts(folder, detail_log=detail_log))


def read_log_parts(
    folder: Path, *, detail_log: bool = True, summary_text: bytes | None = None
) -> tuple[Metrics, Metrics | None]:
    """The summary's metrics and the detail log's (None when absent or not read), each parsed
    once, for a caller that checks each file before merging them (`merge_logs`);
    `summary_text`: the summary's bytes where the caller has read them already."""
    summary, detail = folder / SUMMARY, folder / DETAIL
    if summary_text is None and summary.is_file():
        summary_text = read_log(summary)
    parsed = parse_summary_text(summary_text.decode(errors="replace")) if summary_text else {}
    if not detail_log:
        if version := loadgen_version(folder):
            parsed["loadgen_version"] = version
        return parsed, None
    if not detail.is_file():
        return parsed, None
    return parsed, parse_detail_text(read_log(detail).decode(errors="replace"))


def merge_logs(summary: Metrics, detail: Metrics | None) -> Metrics:
    """The detail log's figures over the summary's; samples/s from queries/s where missing."""
    out: Metrics = dict(summary)
    if detail is not None:
        out.update({k: v for k, v in detail.items() if v is not None})
    if out.get("samples_per_second") is None and out.get("queries_per_second") is not None:
        qps = float(out["queries_per_second"])  # type: ignore[arg-type]
        spq = out.get("samples_per_query") or 1
        out["samples_per_second"] = qps * float(spq)
    return out
