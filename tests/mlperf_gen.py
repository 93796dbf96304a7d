"""Synthetic published MLPerf Inference results, written as the rounds lay them out.

Each `Result` is one scenario of one benchmark of one system; `write_result` writes its
LoadGen summary and detail log (in the wording of the LoadGen version it names), its accuracy
file, its compliance tests and the system description. The patterns found in
whole published rounds (per-query vs per-sample MultiStream percentiles in LoadGen 2.x, Server
summaries rounded to two decimals, a `run_1_2` beside `run_1`, TEST01 that fails its
deterministic check and passes on accuracy, TEST06, AUC in percent or as a fraction, LLM
results with token latencies, power results (`Power`: the analyzer's `spl.txt` samples and the
run's power window in its detail log, for the ranging and the testing run, and the PTDaemon
logs' folder), are options of it. Made here from what the rounds'
files say, never copied from them; `bench/results_table.py` writes whole rounds with it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIO_FOLDER = {
    "Offline": "offline",
    "Server": "server",
    "SingleStream": "singlestream",
    "MultiStream": "multistream",
}


#: tokens per sample of a generated LLM result (its Offline samples/s = tokens/s / this)
LLM_TOKENS = 250
#: the time format of LoadGen's power_begin/power_end and of the analyzer's samples
POWER_TIME = "%m-%d-%Y %H:%M:%S.%f"


@dataclass
class Power:
    """A power result: the analyzer's samples around each run, one a second.

    Inside the testing run's window (power_begin + 0.5 s, + 1.5 s, ...) the samples cycle
    through `watts`; before and after it they read `idle_w` (which the checker leaves out);
    `zero_samples` more inside it read 0 (a dropout, left out too). The ranging run comes an
    hour earlier, its samples cycling through `ranging_watts` (`watts` where None).
    """

    watts: tuple[float, ...] = (150.0,)
    window_s: int = 600
    begin: str = "07-25-2024 10:00:00.000"
    idle_w: float = 40.0
    zero_samples: int = 0
    #: LoadGen's result_query_count (what SingleStream's and MultiStream's energy divides by)
    query_count: int | None = None
    ranging_watts: tuple[float, ...] | None = None
    volts: float = 230.0
    power_factor: float = 0.98
    #: a multi-channel analyzer's per-channel readings after the Mark (Krai's v2.1 lines:
    #: `,Ch1,Watts,..,Volts,..,Amps,..,PF,..` for 3 channels, ~400 bytes a line); the checker
    #: reads the total's Watts, before them
    channels: int = 0


@dataclass
class Result:
    """One published scenario result; the defaults make a valid v4.1 ResNet-50 Offline run."""

    round: str = "v4.1"
    division: str = "closed"
    submitter: str = "Acme"
    system: str = "box"
    benchmark: str = "resnet50"
    scenario: str = "Offline"
    folder: str | None = None
    loadgen: str = "4.1.0"
    #: the headline figure: samples/s (Offline, Server), latency ns (SingleStream,
    #: MultiStream), tokens/s for an LLM's Offline and Server
    value: float = 1000.0
    validity: str = "VALID"
    detail: bool = True
    runs: tuple[str, ...] = ("run_1",)
    #: what the summary's headline line states for Server: "completed" or "scheduled"
    server_headline: str = "completed"
    #: decimals the summary prints samples/s with (None: LoadGen 6's six significant digits)
    summary_decimals: int | None = None
    #: a MultiStream per-sample p99 the detail log states under the plain key (LoadGen 2.x)
    sample_p99_ns: float | None = None
    accuracy: str | None = "accuracy=76.456%, good=38228, total=50000\nhash=abc\n"
    accuracy_padding_bytes: int = 0
    #: bytes of other records in the detail log (a published one is ~40 KB)
    detail_padding_bytes: int = 0
    #: compliance test -> {"accuracy": text of verify_accuracy.txt, "performance": ...,
    #: "baseline": baseline_accuracy.txt, "compliance": compliance_accuracy.txt}
    compliance: dict[str, dict[str, str]] = field(default_factory=dict)
    #: TESTxx/ inside the scenario folder (v5.0 on), or compliance/ beside results/
    compliance_inside: bool = False
    llm: bool = False
    #: GPT-J's way (LoadGen 4.1 on): samples timed, tokens/s inferred from them and logged as
    #: `Tokens per second (inferred)` / `result_inferred_*tokens_per_second` (`value`: those)
    inferred: bool = False
    #: SingleStream's target percentile (99.9 for 3D-UNet and PointPainting)
    percentile: float = 90.0
    #: an LLM SingleStream run's early-stopping estimates of TTFT and TPOT (ns)
    ttft_estimate_ns: float = 400_000_000
    tpot_estimate_ns: float = 21_700_000
    #: the submitter's measurements/<system>/<benchmark>/<scenario>/ folder (README.md,
    #: user.conf, mlperf.conf, the system's implementation JSON), as every published result has
    measurements: bool = False
    system_json: dict[str, Any] | None = field(
        default_factory=lambda: {
            "system_name": "box",
            "host_processor_model_name": "Intel(R) Xeon(R) Platinum 8480+",
            "host_processors_per_node": "2",
            "accelerator_model_name": "NVIDIA H100-SXM-80GB",
            "accelerators_per_node": "8",
            "number_of_nodes": "1",
            "framework": "TensorRT 10.2",
            "status": "available",
            "system_type": "datacenter",
        }
    )
    samples: int = 660_000
    power: Power | None = None
    #: SingleStream's QPS with and without LoadGen's overhead (summary and detail log): what
    #: the checker infers an Offline result from, and v1.x's power checker counts queries by
    qps: tuple[float, float] | None = None

    def folder_name(self) -> str:
        return self.folder or SCENARIO_FOLDER[self.scenario]


def _fmt(value: float, decimals: int | None) -> str:
    return f"{value:.{decimals}f}" if decimals is not None else f"{value:g}"


def summary_text(r: Result) -> str:
    """mlperf_log_summary.txt in the wording of `r.loadgen`."""
    major = int(r.loadgen.split(".")[0])
    lines = ["=" * 48, "MLPerf Results Summary", "=" * 48, "SUT name : SUT"]
    lines += [f"Scenario : {r.scenario}", "Mode     : PerformanceOnly"]
    old = major < 4 or r.loadgen.startswith("4.0")
    ss_pct = f"{r.percentile:g}" if old else f"{r.percentile:.1f}"
    ms_pct = "99" if old else "99.0"
    tokens = r.llm or r.inferred
    samples = r.value / LLM_TOKENS if tokens else r.value  # an LLM's headline is tokens/s
    if r.scenario == "Offline":
        lines.append(f"Samples per second: {_fmt(samples, r.summary_decimals)}")
        if r.llm:
            lines.append(f"Tokens per second: {_fmt(r.value, r.summary_decimals)}")
    elif r.scenario == "Server":
        scheduled = _fmt(samples * 1.0004, r.summary_decimals)
        completed = _fmt(samples, r.summary_decimals)
        if r.llm:
            lines.append(f"Completed samples per second    : {completed}")
            lines.append(f"Completed tokens per second: {_fmt(r.value, r.summary_decimals)}")
        elif r.server_headline == "scheduled":
            lines += [f"Scheduled samples per second : {scheduled}"]
        else:
            lines += [f"Completed samples per second    : {completed}"]
    elif r.scenario == "SingleStream":
        lines.append(f"{ss_pct}th percentile latency (ns) : {int(r.value)}")
        if r.llm:
            lines.append(f"{ss_pct}th first token percentile latency (ns) : {int(r.value / 10)}")
    else:
        lines.append(f"{ms_pct}th percentile latency (ns) : {int(r.value)}")
    lines += [f"Result is : {r.validity}", "  Min duration satisfied : Yes"]
    lines += ["  Min queries satisfied : Yes", "  Early stopping satisfied: Yes"]
    if r.scenario in ("SingleStream", "MultiStream"):
        pct = ss_pct if r.scenario == "SingleStream" else ms_pct
        blocks = (
            [("TTFT ", r.ttft_estimate_ns), ("TPOT ", r.tpot_estimate_ns)]
            if r.llm
            else [("", r.value * 1.001)]
        )
        for name, estimate in blocks:
            lines += [f"{name}Early Stopping Result:", " * Processed at least 64 queries (6000)."]
            lines += [f" * Early stopping {pct}th percentile estimate: {int(estimate)}"]
    lines += ["", "=" * 48, "Additional Stats", "=" * 48]
    if r.qps is not None:
        lines.append(f"QPS w/ loadgen overhead         : {r.qps[0]:.2f}")
        lines.append(f"QPS w/o loadgen overhead        : {r.qps[1]:.2f}")
    if r.inferred:
        completed = "Completed tokens" if r.scenario == "Server" else "Tokens"
        lines.append(f"{completed} per second (inferred): {_fmt(r.value, r.summary_decimals)}")
    if r.scenario == "Server" and not r.llm:
        if r.server_headline == "scheduled":
            lines.append(f"Completed samples per second    : {_fmt(r.value, r.summary_decimals)}")
        else:
            lines.append(
                f"Scheduled samples per second : {_fmt(r.value * 1.0004, r.summary_decimals)}"
            )
    if r.llm:
        lines += [
            "Mean First Token latency (ns)                : 400000000",
            "99.00 percentile first token latency (ns)   : 900000000",
            "Mean Time per Output Token (ns)            : 20000000",
            "99.00 percentile time to output token (ns)   : 40000000",
        ]
    if r.scenario in ("SingleStream", "MultiStream"):
        base = r.value
        p90 = base if r.scenario == "SingleStream" else base * 0.95
        p99 = base if r.scenario == "MultiStream" else base * 1.2
        lines += ["Per-query latency:  " if r.scenario == "MultiStream" else ""]
        lines += [
            f"Min latency (ns)                : {int(base * 0.7)}",
            f"Max latency (ns)                : {int(base * 3)}",
            f"Mean latency (ns)               : {int(base * 0.85)}",
            f"50.00 percentile latency (ns)   : {int(base * 0.8)}",
            f"90.00 percentile latency (ns)   : {int(p90)}",
            f"99.00 percentile latency (ns)   : {int(p99)}",
        ]
    lines += ["", "=" * 48, "Test Parameters Used", "=" * 48]
    lines += ["samples_per_query : 8" if r.scenario == "MultiStream" else "samples_per_query : 1"]
    lines += ["target_qps : 1000"]
    if r.llm and r.scenario != "Offline":
        lines += ["ttft_latency (ns): 2000000000", "tpot_latency (ns): 200000000"]
    else:
        lines += ["target_latency (ns): 0"]
    lines += ["min_duration (ms): 600000", "min_query_count : 100"]
    lines += ["performance_sample_count : 1024", "", "No warnings encountered during test.", ""]
    lines += ["No errors encountered during test."]
    return "\n".join(lines) + "\n"


def _record(key: str, value: Any) -> str:
    doc = {
        "key": key,
        "value": value,
        "time_ms": 1.0,
        "namespace": "mlperf::logging",
        "event_type": "POINT_IN_TIME",
        "metadata": {"is_error": False, "is_warning": False},
    }
    return ":::MLLOG " + json.dumps(doc)


def _stamp(t: dt.datetime) -> str:
    """A time as LoadGen and PTDaemon write it: milliseconds, no zone."""
    return f"{t:%m-%d-%Y %H:%M:%S}.{t.microsecond // 1000:03d}"


def _begin(p: Power, *, ranging: bool) -> dt.datetime:
    start = dt.datetime.strptime(p.begin, POWER_TIME).replace(tzinfo=dt.timezone.utc)
    return start - dt.timedelta(hours=1) if ranging else start


def power_records(p: Power, *, ranging: bool = False) -> list[str]:
    """The detail log's records of a power run: its window and (where set) its query count."""
    begin = _begin(p, ranging=ranging)
    end = begin + dt.timedelta(seconds=p.window_s)
    recs = [_record("power_begin", _stamp(begin)), _record("power_end", _stamp(end))]
    if p.query_count is not None:
        recs.append(_record("result_query_count", p.query_count))
    return recs


def spl_text(p: Power, *, ranging: bool = False, mark: str = "run") -> str:
    """The analyzer's samples of one run, as PTDaemon writes them: `Time,<time>,Watts,<W>,
    Volts,<V>,Amps,<A>,PF,<pf>,Mark,<mark>`, 5 s of idle before and after the window."""
    begin = _begin(p, ranging=ranging)
    watts = itertools.cycle(p.ranging_watts if ranging and p.ranging_watts else p.watts)
    samples: list[tuple[dt.datetime, float]] = []
    for k in range(-5, p.window_s + 5):
        t = begin + dt.timedelta(seconds=k + 0.5)
        samples.append((t, next(watts) if 0 <= k < p.window_s else p.idle_w))
    samples += [(begin + dt.timedelta(seconds=k + 0.25), 0.0) for k in range(p.zero_samples)]
    lines = [
        f"Time,{_stamp(t)},Watts,{w:.6f},Volts,{p.volts:.6f},"
        f"Amps,{w / p.volts / p.power_factor:.6f},PF,{p.power_factor:.6f},Mark,{mark}"
        + "".join(
            f",Ch{c},Watts,{w / p.channels:.6f},Volts,{p.volts:.6f},"
            f"Amps,{w / p.channels / p.volts / p.power_factor:.6f},PF,{p.power_factor:.6f}"
            for c in range(1, p.channels + 1)
        )
        for t, w in sorted(samples)
    ]
    return "\n".join(lines) + "\n"


def detail_text(r: Result, *, ranging: bool = False) -> str:
    """mlperf_log_detail.txt: the records a reader of published results takes."""
    recs = [
        _record("loadgen_version", f"{r.loadgen} @ abc"),
        _record("effective_scenario", r.scenario),
        _record("effective_test_mode", "PerformanceOnly"),
        _record("effective_min_duration_ms", 600000),
        _record("effective_min_query_count", 100),
        _record("effective_qsl_rng_seed", 1),
        _record("effective_sample_index_rng_seed", 2),
        _record("effective_schedule_rng_seed", 3),
        _record("effective_target_qps", 1000),
        _record("effective_target_latency_ns", 0 if r.llm or r.scenario != "Server" else 15e6),
        _record("result_validity", r.validity),
    ]
    if r.llm:
        recs.append(_record("requested_use_token_latencies", True))
        if r.scenario != "Offline":
            recs.append(_record("requested_server_ttft_latency", 2_000_000_000))
            recs.append(_record("requested_server_tpot_latency", 200_000_000))
    samples = r.value / LLM_TOKENS if r.llm or r.inferred else r.value
    if r.scenario == "Offline":
        recs.append(_record("result_samples_per_second", samples))
        if r.llm:
            recs.append(_record("result_tokens_per_second", r.value))
        if r.inferred:
            recs.append(_record("result_inferred_tokens_per_second", r.value))
    elif r.scenario == "Server":
        recs.append(_record("result_completed_samples_per_sec", samples))
        recs.append(_record("result_scheduled_samples_per_sec", samples * 1.0004))
        if r.llm:
            recs.append(_record("result_completed_tokens_per_second", r.value))
        if r.inferred:
            recs.append(_record("result_inferred_completed_tokens_per_second", r.value))
    elif r.scenario == "SingleStream":
        recs.append(_record(f"result_{r.percentile:.2f}_percentile_latency_ns", int(r.value)))
        estimate = r.tpot_estimate_ns if r.llm else r.value * 1.001
        recs.append(_record("early_stopping_latency_ss", int(estimate)))
    else:
        per_sample = r.sample_p99_ns
        if per_sample is None:  # LoadGen 4 on: per query, and the plain key the same figure
            recs.append(_record("result_99.00_percentile_per_query_latency_ns", int(r.value)))
            recs.append(_record("result_99.00_percentile_latency_ns", int(r.value)))
        else:  # LoadGen 2.x: the plain key is per sample
            recs.append(_record("result_99.00_percentile_per_query_latency_ns", int(r.value)))
            recs.append(_record("result_99.00_percentile_latency_ns", int(per_sample)))
        recs.append(_record("early_stopping_latency_ms", int(r.value * 1.001)))
    if r.qps is not None:
        recs.append(_record("result_qps_with_loadgen_overhead", r.qps[0]))
        recs.append(_record("result_qps_without_loadgen_overhead", r.qps[1]))
    line = _record("generic_message", "x" * 80)
    recs += [line] * (r.detail_padding_bytes // (len(line) + 1))
    if r.power is not None:
        recs += power_records(r.power, ranging=ranging)
    return "\n".join(recs) + "\n"


def _write_power(sdir: Path, r: Result, p: Power) -> None:
    """performance/ranging/ and run_1/'s samples, and power/ with the PTDaemon logs' files."""
    perf = sdir / "performance"
    session = f"{r.system}_{r.benchmark}_{r.scenario}".lower()
    for name, ranging in (("ranging", True), ("run_1", False)):
        run = perf / name
        run.mkdir(parents=True, exist_ok=True)
        (run / "mlperf_log_summary.txt").write_text(summary_text(r))
        (run / "mlperf_log_detail.txt").write_text(detail_text(r, ranging=ranging))
        mark = f"{session}_{'ranging' if ranging else 'testing'}"
        (run / "spl.txt").write_text(spl_text(p, ranging=ranging, mark=mark))
    power = perf / "power"
    power.mkdir(parents=True, exist_ok=True)
    phases = {
        mode: [
            [(_begin(p, ranging=mode == "ranging") + dt.timedelta(seconds=s)).timestamp(), 0]
            for s in (-10, -2, p.window_s + 2, p.window_s + 10)
        ]
        for mode in ("ranging", "testing")
    }
    descriptor = {
        "version": "1.11.1",
        "timezone": 0,
        "modules": {},
        "sources": {},
        "messages": [],
        "uuid": {
            "client": "00000000-0000-4000-8000-000000000001",
            "server": "00000000-0000-4000-8000-000000000002",
        },
        "session_name": session,
        "results": {},
        "phases": phases,
    }
    for side in ("client", "server"):
        (power / f"{side}.json").write_text(json.dumps(descriptor))
        (power / f"{side}.log").write_text(f"{p.begin} [INFO] {side}: session {session}\n")
    (power / "ptd_logs.txt").write_text(
        f"{p.begin}: Uncertainty checking for Yokogawa WT310 is activated\n"
        f"{p.begin}: Go with mark '{session}_ranging'\n{p.begin}: Completed test\n"
    )


def write_result(root: Path, r: Result) -> Path:
    """Write the result under `root` (`root/<division>/<submitter>/...`); its scenario folder."""
    sub = root / r.division / r.submitter
    sdir = sub / "results" / r.system / r.benchmark / r.folder_name()
    if r.power is not None:
        _write_power(sdir, r, r.power)
    for run_name in r.runs if r.power is None else ():
        run = sdir / "performance" / run_name
        run.mkdir(parents=True, exist_ok=True)
        (run / "mlperf_log_summary.txt").write_text(summary_text(r))
        if r.detail:
            (run / "mlperf_log_detail.txt").write_text(detail_text(r))
    if r.accuracy is not None:
        (sdir / "accuracy").mkdir(parents=True, exist_ok=True)
        text = _padding(r.accuracy_padding_bytes) + r.accuracy
        (sdir / "accuracy" / "accuracy.txt").write_text(text)
    for test, files in r.compliance.items():
        base = (
            sdir
            if r.compliance_inside
            else sub / "compliance" / r.system / r.benchmark / r.folder_name()
        )
        folder = base / test
        folder.mkdir(parents=True, exist_ok=True)
        for kind in ("accuracy", "performance"):
            if kind in files:
                (folder / f"verify_{kind}.txt").write_text(files[kind])
        for kind in ("baseline", "compliance"):
            if kind in files:
                (folder / "accuracy").mkdir(exist_ok=True)
                (folder / "accuracy" / f"{kind}_accuracy.txt").write_text(files[kind])
    if r.measurements:
        folder = sub / "measurements" / r.system / r.benchmark / r.folder_name()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(f"# {r.benchmark} {r.scenario}\n\n" + "Steps.\n" * 40)
        (folder / "user.conf").write_text(f"*.{r.scenario}.target_qps = {r.value:g}\n")
        (folder / "mlperf.conf").write_text("*.*.min_query_count = 100\n" * 60)
        (folder / f"{r.system}_{r.scenario}.json").write_text(
            json.dumps({"input_data_types": "int8", "weight_transformations": "none"})
        )
    if r.system_json is not None:
        (sub / "systems").mkdir(parents=True, exist_ok=True)
        desc = {**r.system_json, "system_name": r.system, "division": r.division}
        (sub / "systems" / f"{r.system}.json").write_text(json.dumps(desc))
    return sdir


def verify_performance(
    passed: bool | None, *, reference: float = 1000.0, test: float = 995.0
) -> str:
    """verify_performance.txt of TEST01/04/05; `passed` None: cut off before its verdict."""
    text = f"Verifying performance.\nreference score = {reference:g}\ntest score = {test:g}\n"
    return text + ("" if passed is None else "TEST PASS\n" if passed else "TEST FAIL\n")


def verify_accuracy_test01(passed: bool | None, *, mismatches: int = 3) -> str:
    """TEST01's verify_accuracy.txt: its deterministic check (outputs compared one by one)."""
    lines = [
        "Verifying accuracy. This might take a while...",
        "Reading accuracy mode results...",
        "Reading performance mode results...",
        "num_acc_log_entries = 10833",
        "num_acc_log_duplicate_keys = 0",
        "num_acc_log_data_mismatch = 0",
        "num_perf_log_entries = 4197",
        "num_perf_log_qsl_idx_match = 4197",
        f"num_perf_log_data_mismatch = {0 if passed else mismatches}",
        "num_missing_qsl_idxs = 0",
    ]
    if passed is not None:
        lines.append("TEST PASS" if passed else "TEST FAIL")
    return "\n".join(lines) + "\n\n"


def verify_accuracy_test06(
    first_token: str = "True",
    eos: str = "True",
    length: str | None = "True",
    *,
    complete: bool = True,
) -> str:
    """TEST06's verify_accuracy.txt (LLMs): three checks, no TEST PASS line."""
    lines = [f"First token check pass: {first_token}", f"EOS check pass: {eos}"]
    if length is not None:
        lines.append(f"Sample length check pass: {length}")
    if complete:
        lines.append("TEST06 verification complete")
    return "\n".join(lines) + "\n"


def bert_accuracy(f1: float, exact_match: float = 26.6) -> str:
    """bert's accuracy script output, as TEST01's baseline/compliance_accuracy.txt hold it."""
    return (
        f'{{"exact_match": {exact_match}, "f1": {f1}}}\nReading examples...\n'
        "Loading LoadGen logs...\nPost-processing predictions...\nEvaluating predictions...\n"
    )


def _padding(size: int) -> str:
    """Lines like the per-sample listing some accuracy scripts print before the figure."""
    line = "sample 0000001 label 123 prediction 123 ok\n"
    return line * (size // len(line)) if size > 0 else ""
