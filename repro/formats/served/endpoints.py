"""MLCommons endpoints' result folders (MLPerf Inference v6.1's served results): a scenario
folder holds `config.yaml` (the harness's config as run), `performance/result_summary.json`
(counts, duration, the TTFT, TPOT, latency and output-length rollups with percentiles and
histograms, qps, tps, run_config) and `accuracy/accuracy_results.json`; no LoadGen log.

Read as MLPerf's v6.1 checker reads them (its endpoints parser: a field of result_summary.json
first, then accuracy_results.json, then config.yaml): the Offline rate is the issued samples
over the duration, the online rate the summary's qps (over LoadGen's legacy window where the
run used it: the completed samples less one); the checker's error count is n_samples_failed.

Definitions (mlcommons/endpoints): TTFT from the request's start to the stream's first chunk;
TPOT is (completion - first chunk) / the tokens after the first chunk, counted by the
harness's tokenizer; tokens per second over the same window as qps.

repro writes the same layout for a served run (`write_result`): the figures are repro's, from
its requests one by one, and the summary says in `repro.definitions` what they mean (repro's
TPOT counts the server's tokens).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from repro.errors import SpecError
from repro.formats.served import definitions as d
from repro.formats.served.files import Fields, bad, inside, load_json, load_yaml, server_url
from repro.formats.served.requests import REQUESTS_FILE, Requests
from repro.runs.record import RunRecord
from repro.spec.types import ScenarioName

TOOL: Final = "MLCommons endpoints"
CONFIG_NAMES: Final = ("config.yaml", "config.yml")
SUMMARY: Final = Path("performance") / "result_summary.json"
ACCURACY: Final = Path("accuracy") / "accuracy_results.json"
#: the percentiles endpoints reports (its rollups' keys)
PERCENTILES: Final = (99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0)
HISTOGRAM_BUCKETS: Final = 30
#: the percentiles it gives an early-stopping estimate of (the checker's bounds read these)
EARLY_STOPPING: Final = (99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0)


def config_of(folder: Path) -> Path | None:
    return next((folder / n for n in CONFIG_NAMES if (folder / n).is_file()), None)


def is_endpoints_result(folder: Path) -> bool:
    """A scenario folder in endpoints' layout (its config and its performance summary)."""
    return (folder / SUMMARY).is_file() and config_of(folder) is not None


@dataclass(frozen=True)
class EndpointsResult:
    """One scenario folder, read."""

    scenario: ScenarioName
    interactive: bool
    metrics: dict[str, Any]
    definitions: d.Definitions
    facts: dict[str, Any]
    accuracy: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def read_result(folder: Path) -> EndpointsResult:
    """The scenario folder's figures as the checker reads them; a summary of a run that did not
    complete, or a file that is not endpoints', is a SpecError naming file and field."""
    summary_path = inside(folder, folder / SUMMARY)
    config_path = config_of(folder)
    if config_path is None:
        raise SpecError(f"{folder}: no config.yaml", hint="an endpoints result keeps its config")
    config_path = inside(folder, config_path)
    raw_config = load_yaml(config_path, TOOL)
    config = Fields(config_path, raw_config if raw_config is not None else {}, tool=TOOL)
    s = Fields(summary_path, load_json(summary_path, TOOL), tool=TOOL)
    if s.flag("complete") is False or s.text("state") not in (None, "complete"):
        raise bad(
            summary_path,
            "$.complete",
            f"false (state {s.text('state')!r}): the run did not complete; its figures "
            "are partial and are not a result",
            TOOL,
        )
    issued = s.count("n_samples_issued")
    completed = s.count("n_samples_completed")
    failed = s.count_or_none("n_samples_failed") or 0
    duration_ns = s.num("duration_ns", zero=False)
    if completed > issued:
        raise bad(
            summary_path, "$.n_samples_completed", f"{completed} completed of {issued} issued", TOOL
        )
    kind = (config.text("type") or "").lower()
    folder_name = folder.name.lower()
    interactive = folder_name == "interactive"
    scenario: ScenarioName
    if folder_name == "singlestream":
        scenario = "SingleStream"
    elif kind == "offline" or folder_name == "offline":
        scenario = "Offline"
    elif kind in ("online", "server") or folder_name in ("server", "interactive"):
        scenario = "Server"
    else:
        raise bad(config_path, "$.type", f"{kind!r}: neither offline nor online", TOOL)
    legacy = s.num_or_none("legacy_loadgen_window_duration_ns")
    qps = s.num_or_none("qps")
    tps = s.num_or_none("tps")
    metrics: dict[str, Any] = {
        "scenario": scenario,
        "mode": "performance",
        "sut_queries_completed": completed,
        "query_count": issued,
        "num_errors": failed,
        "request_errors": failed,
        "duration_ns": duration_ns,
    }
    if scenario == "Offline":
        # the checker infers the Offline rate: the issued samples over the duration
        metrics["samples_per_second"] = issued / (duration_ns / 1e9)
    elif qps is not None:
        metrics["samples_per_second"] = qps
    else:
        metrics["samples_per_second"] = issued / (duration_ns / 1e9)
    if tps is not None:
        metrics["tokens_per_second"] = tps
    for name in ("ttft", "tpot", "latency"):
        metrics.update(_rollup(s, name))
    osl = s.child("output_sequence_lengths")
    if osl is not None and osl.has("avg"):
        metrics["mean_output_tokens"] = osl.num("avg")
    own = _own_definitions(s)
    window: d.RateFormula = "(n-1)/window" if (legacy and scenario != "Offline") else "n/window"
    defs = own or {
        "ttft": d.ttft("first-chunk"),
        "tpot": d.tpot("decode/(n-first)", "tokenizer"),
        "latency": d.latency("sent"),
        "request_rate": d.request_rate(window),
        "token_rate": d.token_rate("tokenizer"),
    }
    if scenario == "Offline" and not s.child("ttft"):
        defs.pop("ttft", None)
        defs.pop("tpot", None)
    model = config.child("model_params")
    endpoint = config.child("endpoint_config")
    urls = endpoint.items("endpoints") if endpoint is not None else []
    runtime = config.child("settings")
    facts = {
        "version": s.text("version"),
        "git_sha": s.text("git_sha"),
        "model": _basename(model.text("name")) if model is not None else None,
        "api": endpoint.text("api_type") if endpoint is not None else None,
        "server_url": server_url(urls[0]) if urls and isinstance(urls[0], str) else None,
        "servers": len(urls) or None,
        "streaming": (model.obj.get("streaming") if model is not None else None),
        "load_pattern": _load_pattern(s, runtime),
        "scheduler_random_seed": _seed(s, "scheduler_random_seed"),
        "dataloader_random_seed": _seed(s, "dataloader_random_seed"),
        "name": config.text("name"),
    }
    notes = []
    if own:
        notes.append(
            f"{summary_path.name}: written by repro (its `repro.definitions` say what "
            "its figures mean)"
        )
    return EndpointsResult(
        scenario=scenario,
        interactive=interactive,
        metrics=metrics,
        definitions=defs,
        facts={k: v for k, v in facts.items() if v is not None},
        accuracy=_accuracy(folder),
        notes=notes,
    )


def _rollup(s: Fields, name: str) -> dict[str, float]:
    r = s.child(name)
    if r is None or not r.obj:
        return {}
    out = {}
    mean = r.num_or_none("avg")
    if mean:
        out[f"{name}_mean_ns"] = mean
    for key, label in ((r.num_or_none("min"), "min"), (r.num_or_none("max"), "max")):
        if key:
            out[f"{name}_{label}_ns"] = key
    pct = r.child("percentiles")
    if pct is not None:
        for q, label in (("50.0", "p50"), ("90.0", "p90"), ("99.0", "p99")):
            value = pct.num_or_none(q) if pct.has(q) else pct.num_or_none(q.removesuffix(".0"))
            if value:
                out[f"{name}_{label}_ns"] = value
    early = r.child("early_stopping_percentiles")
    if early is not None:
        for q, label in (("50.0", "p50"), ("90.0", "p90"), ("99.0", "p99")):
            value = early.num_or_none(q)
            if value:
                out[f"{name}_early_stopping_{label}_ns"] = value
    return out


def _own_definitions(s: Fields) -> d.Definitions:
    mine = s.child("repro")
    return d.from_json(mine.obj.get("definitions")) if mine is not None else {}


def _load_pattern(s: Fields, settings: Fields | None) -> str | None:
    run_config = s.child("run_config")
    pattern = run_config.child("load_pattern") if run_config is not None else None
    if pattern is None and settings is not None:
        pattern = settings.child("load_pattern")
    if pattern is None:
        return None
    kind = pattern.text("type")
    qps = pattern.obj.get("target_qps")
    conc = pattern.obj.get("target_concurrency")
    return (
        kind + (f", {qps} requests/s" if qps else "") + (f", concurrency {conc}" if conc else "")
        if kind
        else None
    )


def _seed(s: Fields, key: str) -> int | None:
    run_config = s.child("run_config")
    value = run_config.obj.get(key) if run_config is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _basename(name: str | None) -> str | None:
    """A model named by a path on the submitter's machine: its last part."""
    return name.rstrip("/").rsplit("/", 1)[-1] if name else None


def _accuracy(folder: Path) -> dict[str, Any] | None:
    path = folder / ACCURACY
    if not path.is_file():
        return None
    path = inside(folder, path)
    a = Fields(path, load_json(path, TOOL), tool=TOOL)
    value = a.num_or_none("average_accuracy")
    scores = a.items("accuracy_scores")
    metric = "accuracy"
    if scores and isinstance(scores[0], dict):
        first = Fields(path, scores[0], "$.accuracy_scores[0]", tool=TOOL)
        if first.flag("complete") is False:
            raise bad(
                path, "$.accuracy_scores[0].complete", "false: the scoring did not finish", TOOL
            )
        if value is None:
            value = first.num_or_none("score")
        metric = first.text("dataset_name") or metric
    if value is None:
        return None
    # the score as the scorer wrote it: a percentage for some (deepseek-r1: 81.4), a fraction
    # for others (qwen3-vl: 0.787)
    return {"metric": metric, "value": value, "unit": "", "higher_is_better": True}


# -- writing: repro's served run in endpoints' layout -----------------------------------------


def write_result(
    folder: Path,
    *,
    scenario: ScenarioName,
    requests: Requests,
    definitions: d.Definitions,
    duration_ns: float,
    issued: int,
    failed: int,
    config: dict[str, Any],
    run_config: dict[str, Any],
    version: str,
) -> None:
    """`folder/config.yaml` and `folder/performance/result_summary.json` in endpoints'
    schema, from repro's requests one by one (each file written under a temporary name, then
    renamed)."""
    import yaml

    n = len(requests)
    window_ns = requests.window_ns()
    tokens = requests.output_tokens.astype(np.float64)
    online = scenario != "Offline"
    legacy = window_ns if online else None
    span_s = (legacy if legacy else duration_ns) / 1e9
    qps = ((n - 1) if legacy else n) / span_s if span_s > 0 else None
    tps = float(tokens.sum()) / (window_ns / 1e9) if window_ns > 0 else None
    tpot = _tpot_values(requests, definitions)
    summary = {
        "version": version,
        "git_sha": None,
        "test_started_at": 0,
        "n_samples_issued": issued,
        "n_samples_completed": n,
        "n_samples_failed": failed,
        "duration_ns": int(duration_ns),
        "state": "complete",
        "complete": True,
        "ttft": _series(requests.ttft_ns),
        "tpot": _series(tpot) if tpot is not None else {},
        "latency": _series(requests.latency_ns),
        "output_sequence_lengths": _series(tokens),
        "legacy_loadgen_window_duration_ns": int(legacy) if legacy else None,
        "qps": qps,
        "tps": tps,
        "run_config": run_config,
        "repro": {
            "definitions": d.as_json(definitions),
            "note": "written by repro from its requests one by one: TTFT to the first chunk "
            "holding text, TPOT (latency - TTFT) / (tokens - 1) with the server's token count; "
            "an early-stopping percentile is the order statistic the percentile lies below "
            "with 99 % confidence",
        },
    }
    perf = folder / "performance"
    perf.mkdir(parents=True, exist_ok=True)
    _write(perf / "result_summary.json", json.dumps(summary, indent=2) + "\n")
    _write(folder / "config.yaml", yaml.safe_dump(config, sort_keys=False))


def _tpot_values(requests: Requests, defs: d.Definitions) -> np.ndarray | None:
    tpot = defs.get("tpot")
    if tpot is None or requests.missing(tpot) is not None:
        return None
    return requests.tpot_values(tpot)


def _series(values: np.ndarray) -> dict[str, Any]:
    """One of endpoints' rollups: total, min, max, median, avg, std_dev, the percentiles and a
    histogram of log-spaced buckets from min to max."""
    v = np.sort(np.asarray(values, dtype=np.float64)[np.isfinite(values)])
    if v.size == 0:
        return {}
    pct = {f"{q:.1f}": float(v[min(int(v.size * q / 100), v.size - 1)]) for q in PERCENTILES}
    lo, hi = float(v[0]), float(v[-1])
    if lo > 0 and hi > lo:
        edges = np.geomspace(lo, hi, HISTOGRAM_BUCKETS + 1)
    else:
        edges = np.linspace(lo, hi if hi > lo else lo + 1, HISTOGRAM_BUCKETS + 1)
    counts, _ = np.histogram(v, bins=edges)
    early = {f"{q:.1f}": x for q in EARLY_STOPPING if (x := _upper_bound(v, q / 100)) is not None}
    return {
        "total": float(v.sum()),
        "min": lo,
        "max": hi,
        "median": pct["50.0"],
        "avg": float(v.mean()),
        "std_dev": float(v.std(ddof=1)) if v.size > 1 else 0.0,
        "percentiles": pct,
        **({"early_stopping_percentiles": early} if early else {}),
        "histogram": {
            "buckets": [[float(a), float(b)] for a, b in itertools.pairwise(edges)],
            "counts": [int(c) for c in counts],
        },
    }


def _upper_bound(v: np.ndarray, q: float, confidence: float = 0.99) -> float | None:
    """The q-quantile's upper confidence bound from sorted values: the smallest order statistic
    the true quantile lies below with `confidence` (the count of values under the quantile is
    binomial), as early stopping reckons one; None with too few values for it."""
    from scipy.stats import binom

    k = int(binom.ppf(confidence, v.size, q)) + 1  # 1-based
    return float(v[k - 1]) if k <= v.size else None


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


#: where a served run keeps its results in endpoints' layout: <run>/endpoints/<Scenario>/
FOLDER: Final = "endpoints"


def write_run(run: Path, record: RunRecord, version: str) -> list[Path]:
    """A served run's results in endpoints' layout, one scenario folder per scenario it ran
    (`<run>/endpoints/<Scenario>/config.yaml` and `performance/result_summary.json`), from
    the first complete performance test of each and its requests one by one; the folders
    written (none for a run that is not served)."""
    written = []
    spec = record.spec or {}
    options = (spec.get("backend") or {}).get("options") or {}
    generation = (spec.get("workload") or {}).get("generation") or {}
    server = record.server
    for scenario in ("Offline", "Server", "SingleStream"):
        test = next(
            (t for t in record.performance(scenario) if t.status in ("valid", "invalid")), None
        )
        facts = test.backend_facts() if test is not None else None
        if test is None or facts is None or facts.name != "served":
            continue
        requests = Requests.load(run / test.dir / REQUESTS_FILE)
        if requests is None:
            continue
        m, st = test.metrics, test.settings
        online = scenario != "Offline"
        api = str(facts.api or options.get("api") or "completions")
        load_pattern: dict[str, Any] = {
            "type": "poisson" if online else "max_throughput",
            "target_qps": m.get("target_qps") if online else None,
            "target_concurrency": options.get("max_connections"),
        }
        seeds = {
            "scheduler_random_seed": m.get("schedule_rng_seed"),
            "dataloader_random_seed": m.get("sample_index_rng_seed"),
        }
        url = server_url(facts.server_url)
        config = {
            "name": f"{record.spec_name}-{scenario.lower()}",
            "version": version,
            "type": "online" if online else "offline",
            "benchmark_mode": "online" if online else "offline",
            "model_params": {
                "name": _basename(str(server.model_name)) if server and server.model_name else None,
                "temperature": options.get("temperature"),
                "max_new_tokens": generation.get("max_new_tokens"),
                "streaming": "on",
            },
            "settings": {
                "runtime": {
                    "min_duration_ms": st.get("min_duration_ms"),
                    "max_duration_ms": st.get("max_duration_ms"),
                    "n_samples_to_issue": m.get("sut_queries_completed"),
                    **seeds,
                },
                "load_pattern": load_pattern,
            },
            "endpoint_config": {
                "endpoints": [url] if url else [],
                "api_type": "openai_chat" if api == "chat" else "openai_completions",
            },
            "repro": {"run_id": record.run_id, "test": test.dir},
        }
        failed = facts.request_errors or 0
        folder = run / FOLDER / scenario
        write_result(
            folder,
            scenario=scenario,
            requests=requests,
            definitions=_repro_definitions(scenario, requests.counter),
            duration_ns=requests.window_ns(),
            issued=len(requests) + failed,
            failed=failed,
            config=config,
            run_config={"load_pattern": load_pattern, **seeds},
            version=version,
        )
        written.append(folder)
    return written


def _repro_definitions(scenario: str, counter: d.Counter) -> d.Definitions:
    """What a summary repro writes means: its requests timed from when each was sent."""
    window: d.RateFormula = "(n-1)/window" if scenario != "Offline" else "n/window"
    return {
        "ttft": d.ttft("first-content"),
        "tpot": d.tpot("decode/(n-1)", counter),
        "latency": d.latency("sent"),
        "request_rate": d.request_rate(window),
        "token_rate": d.token_rate(counter),
    }
