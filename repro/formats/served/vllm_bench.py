"""`vllm bench serve --save-result`'s JSON (one document a run; `--append-result` adds one per
run to the same file), with per-request arrays under `--save-detailed`.

Definitions (vLLM 0.33's `vllm/benchmarks`): TTFT from the request's start to the first chunk
with choices (a completions chunk whose text is empty counts; for chat, the first with content);
a request's latency ends at its last token chunk, so its TPOT, (latency - TTFT) /
(output tokens - 1), is (last token - first token) / (tokens - 1); tokens are the server's
`usage` (vLLM asks for it), its tokenizer's where a server sends none; ITL (per-chunk gaps) is
not a time per token and is not compared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import numpy as np

from repro.formats.served import definitions as d
from repro.formats.served.files import Fields, bad, json_documents
from repro.formats.served.requests import Requests
from repro.formats.served.toolrun import ToolRun

TOOL: Final = "vllm bench serve"
_PCT: Final = {"median": "p50", "p50": "p50", "p90": "p90", "p99": "p99", "mean": "mean"}


def is_vllm_bench(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and {"request_throughput", "completed", "duration"} <= set(doc)
        and ("model_id" in doc or "backend" in doc)
    )


def read_vllm_bench(path: Path, docs: list[Any] | None = None) -> list[ToolRun]:
    """Every run of a result file (one document each)."""
    docs = docs if docs is not None else json_documents(path, TOOL)
    many = len(docs) > 1
    return [
        _run(path, Fields(path, doc, f"$[{k}]" if many else "$", tool=TOOL))
        for k, doc in enumerate(docs)
    ]


def _run(path: Path, top: Fields) -> ToolRun:
    duration = top.num("duration", zero=False)
    completed = top.count("completed")
    failed = top.count_or_none("failed") or 0
    backend = top.text("backend") or top.text("endpoint_type") or ""
    chat = "chat" in backend
    scenario, load = _load(top)
    metrics: dict[str, Any] = {
        "samples_per_second": completed / duration,
        "sut_queries_completed": completed,
        "request_errors": failed,
    }
    total_out = top.num_or_none("total_output_tokens")
    if total_out is not None:
        metrics["tokens_per_second"] = total_out / duration
    for name, key in (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("latency", "e2el_ms")):
        for stat, suffix in _PCT.items():
            value = top.num_or_none(f"{stat}_{key}")
            if value:
                metrics[f"{name}_{suffix}_ns"] = value * 1e6
    defs: d.Definitions = {
        "request_rate": d.request_rate("n/window"),
        "latency": d.latency("last-token"),
        "token_rate": d.token_rate("server"),
        "ttft": d.ttft("first-content" if chat else "first-chunk"),
        "tpot": d.tpot("last-first/(n-1)", "server"),
    }
    requests = _requests(top)
    notes = (
        []
        if requests is not None
        else [f"{path.name}: saved without --save-detailed: the summary only (no requests)"]
    )
    facts = {
        "version": top.text("vllm_version"),
        "model": top.text("model_id"),
        "tokenizer": top.text("tokenizer_id"),
        "api": backend,
        "streaming": True,
        "started": top.text("date"),
        "label": top.text("label"),
        "num_prompts": top.obj.get("num_prompts"),
        "tokens_counted_by": "server",
    }
    return ToolRun(
        "vllm-bench",
        path,
        scenario,
        load,
        metrics,
        defs,
        requests,
        {k: v for k, v in facts.items() if v is not None},
        notes,
    )


def _load(top: Fields) -> tuple[Any, str]:
    rate = top.obj.get("request_rate")
    concurrency = top.obj.get("max_concurrency")
    if rate in ("inf", None) or rate == float("inf"):
        if concurrency:
            return "Offline", f"concurrency {concurrency}"
        return "Offline", "all at once"
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0:
        raise bad(top.path, f"{top.where}.request_rate", f"{rate!r} is not a request rate", TOOL)
    burst = top.obj.get("burstiness", 1.0)
    shape = "Poisson" if burst in (1, 1.0, None) else f"gamma (burstiness {burst})"
    return "Server", f"{shape}, {rate:g} requests/s" + (
        f", at most {concurrency} concurrent" if concurrency else ""
    )


def _requests(top: Fields) -> Requests | None:
    arrays = {k: top.items(k) for k in ("start_times", "ttfts", "latencies", "output_lens")}
    if not all(arrays.values()):
        return None
    n = len(arrays["latencies"])
    errors = top.items("errors") or [""] * n
    ok = [i for i, e in enumerate(errors) if not e]
    lens = arrays["output_lens"]
    # vLLM lists the output lengths of the completed requests only, in order
    if (
        {len(arrays[k]) for k in ("start_times", "ttfts", "latencies")} != {n}
        or len(errors) != n
        or len(lens) not in (n, len(ok))
    ):
        raise bad(top.path, top.where, "its per-request arrays differ in length", TOOL)
    length = dict(zip(ok, lens, strict=True)) if len(lens) == len(ok) else dict(enumerate(lens))
    try:
        start = np.asarray([float(arrays["start_times"][i]) for i in ok])
        ttft = np.asarray([float(arrays["ttfts"][i]) for i in ok])
        lat = np.asarray([float(arrays["latencies"][i]) for i in ok])
        tokens = np.asarray([int(length[i]) for i in ok], dtype=np.int64)
    except (TypeError, ValueError):
        raise bad(
            top.path, top.where, "a per-request array holds a value that is not a number", TOOL
        ) from None
    if len(lat) < 2 or not np.all(np.isfinite(lat)) or np.any(lat < 0) or np.any(ttft < 0):
        return None
    return Requests(
        start_ns=(start - start.min()) * 1e9,
        ttft_ns=ttft * 1e9,
        latency_ns=lat * 1e9,
        output_tokens=tokens,
        counter="server",
        last_token_ns=lat * 1e9,
    )
