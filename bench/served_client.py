"""A served experiment's client, its own cost: repro's served SUT (LoadGen + aiohttp) beside the
clients users run, AIPerf and GuideLLM, against one minimal local streaming endpoint, in one
interleaved run.

    python bench/served_client.py --aiperf /tmp/clients-venv/bin/aiperf \
        --guidellm /tmp/guidellm-venv/bin/guidellm --rounds 5 --requests 512
    python bench/served_client.py --smoke      # CI: repro's client alone, one round of 32 and 256

The endpoint (`--endpoint PORT`, started by the benchmark, stopped by its PID) streams each
answer as `--tokens` SSE events of one token and a usage event, at once: nothing to wait for,
so what each client spends is its own. Every client sends the same `--requests` completions
requests (streamed, `--concurrency` at a time) of `--tokens` output tokens; a round runs the
three in a random order (the seed is printed), each at `--requests` and at 8 times as many. Every
client is measured the same way, as the operating system counts it: its whole process tree's
user+system seconds (the children reaped: `RUSAGE_CHILDREN` around it), start-up included.

- **CPU per request**: the marginal cost, (CPU at 8N - CPU at N) / 7N: what one more request
  costs the client, its start-up (imports, worker processes, the tokenizer) left out;
- **CPU per request of a run of 8N**: the whole run's CPU over its requests, start-up included;
- **requests/s**: requests over the client's own reckoning of the wall time (AIPerf's and
  GuideLLM's benchmark duration, LoadGen's).

The endpoint shares the 2 cores with the client: the rate is the client's and the endpoint's
together, the same endpoint for all three. Prints one line a round and client, and the table
of medians (CPU per request and the ratio to the cheapest of AIPerf and GuideLLM); asserts
nothing.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "served-tinyllm.json"
SMOKE = {"rounds": 1, "requests": 32}


# -- the endpoint --------------------------------------------------------------------------------


def serve(port: int, tokens: int) -> None:
    """A minimal OpenAI-compatible streaming endpoint on 127.0.0.1 (aiohttp's server)."""
    from aiohttp import web

    piece = b'data: {"id":"x","object":"text_completion","choices":[{"index":0,"text":"a"}]}\n\n'
    chat = (
        b'data: {"id":"x","object":"chat.completion.chunk",'
        b'"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    )
    usage = json.dumps({"choices": [], "usage": {"completion_tokens": tokens}}).encode()

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = int(body.get("max_tokens") or tokens)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        event = chat if request.path.endswith("chat/completions") else piece
        await resp.write(event * n + b"data: " + usage + b"\n\ndata: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_endpoint(tokens: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--endpoint", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):  # bounded: 20 s
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("the endpoint did not start")


# -- the clients ---------------------------------------------------------------------------------


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_repro(
    url: str, work: Path, requests: int, concurrency: int, tokens: int
) -> dict[str, float]:
    """repro's served SUT: `repro replay` of the reference spec with the endpoint as an
    external server, Offline, `requests` queries (its worker's CPU over LoadGen's run)."""
    spec = json.loads(SPEC.read_text())
    spec.pop("id", None)
    spec.pop("original", None)
    spec["server"] = {"engine": "external", "url": url + "/v1", "model_name": "stub"}
    spec["backend"]["options"]["max_connections"] = concurrency
    spec["workload"]["generation"]["max_new_tokens"] = tokens
    spec["workload"]["scenarios"] = [
        {
            "scenario": "Offline",
            "settings": {
                "min_duration_ms": 0,
                "min_query_count": requests,
                "offline_expected_qps": 1.0,  # one query of `requests` samples, at least
                "use_token_latencies": True,
            },
        }
    ]
    env = spec["environment"]
    env["python_lock"]["path"] = str(SPEC.parent / env["python_lock"]["path"])
    for key in ("spack_yaml", "spack_lock"):
        env["spack"][key]["path"] = str(SPEC.parent / env["spack"][key]["path"])
    path = work / "served-bench.json"
    path.write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "repro", "replay", str(path), "--env", "native"]
    cmd += ["-m", "performance", "-o", str(work / "results"), "--cache-dir", str(work / "cache")]
    before = children_cpu()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise RuntimeError(f"repro replay failed: {done.stderr[-1500:]}")
    [record] = list((work / "results").glob("*/*/run.json"))
    test = json.loads(record.read_text())["tests"][0]
    return {
        "cpu_s": cpu,
        "worker_loadgen_cpu_s": test["cpu"]["process_s"],  # the worker over LoadGen's run
        "requests_per_s": float(test["metrics"]["samples_per_second"]),
        "requests": test["metrics"]["sut_queries_completed"] or requests,
    }


def run_aiperf(
    exe: str, url: str, work: Path, requests: int, concurrency: int, tokens: int
) -> dict[str, float]:
    """AIPerf's `profile`: completions, streamed, `concurrency` at a time."""
    out = work / "aiperf"
    cmd = [
        exe,
        "profile",
        "--model",
        "stub",
        "--url",
        url,
        "--endpoint-type",
        "completions",
        "--streaming",
        "--request-count",
        str(requests),
        "--concurrency",
        str(concurrency),
        "--synthetic-input-tokens-mean",
        "8",
        "--output-tokens-mean",
        str(tokens),
        "--tokenizer",
        str(work / "tokenizer"),
        "--artifact-dir",
        str(out),
        "--ui-type",
        "none",
        "--random-seed",
        "0",
        "--use-server-token-count",
    ]
    before = children_cpu()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work)
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise RuntimeError(f"aiperf failed: {(done.stdout + done.stderr)[-1500:]}")
    [export] = list(out.rglob("profile_export_aiperf.json"))
    data = json.loads(export.read_text())
    rate = _aiperf_rate(data)
    return {"cpu_s": cpu, "requests_per_s": rate, "requests": requests}


def _aiperf_rate(data: dict[str, Any]) -> float:
    found = data.get("request_throughput")
    if isinstance(found, dict):
        return float(found.get("avg") or 0.0)
    records = data.get("records") or {}
    return float((records.get("request_throughput") or {}).get("avg") or 0.0)


def run_guidellm(
    exe: str, url: str, work: Path, requests: int, concurrency: int, tokens: int
) -> dict[str, float]:
    """GuideLLM's `run`: a concurrent profile of `concurrency` streams, synthetic prompts (its
    tokenizer: the model name is the tokenizer's folder; the endpoint serves any name)."""
    out = work / "guidellm.json"
    backend = f"kind=openai_http,target={url},model={work / 'tokenizer'},"
    backend += "request_format=/v1/completions"
    cmd = [exe, "run", "--backend", backend, "--profile", f"kind=concurrent,streams={concurrency}"]
    cmd += ["--constraint", f"kind=max_requests,count={requests}"]
    cmd += ["--data", f"kind=synthetic_text,prompt_tokens=8,output_tokens={tokens}"]
    cmd += ["--output", f"kind=json,path={out}", "--disable-progress"]
    before = children_cpu()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work, env=env)
    cpu = children_cpu() - before
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"guidellm failed: {(done.stdout + done.stderr)[-1500:]}")
    bench = json.loads(out.read_text())["benchmarks"][0]
    ok = bench["metrics"]["request_totals"]["successful"]
    return {"cpu_s": cpu, "requests_per_s": float(ok) / float(bench["duration"]), "requests": ok}


def tokenizer(work: Path) -> None:
    """The tiny Llama's tokenizer where AIPerf and GuideLLM read one (they make the prompts)."""
    from repro.artifacts.served_recipes import write_tiny_llama

    write_tiny_llama(
        work / "tokenizer",
        seed=0,
        vocab_size=512,
        hidden_size=64,
        layers=2,
        heads=4,
        kv_heads=2,
        context=256,
        new_tokens=32,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--aiperf", default=shutil.which("aiperf"), help="aiperf's executable")
    parser.add_argument("--guidellm", default=shutil.which("guidellm"), help="guidellm's")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--endpoint", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help=f"CI: repro alone, {SMOKE}")
    args = parser.parse_args()
    if args.endpoint is not None:
        serve(args.endpoint, args.tokens)
        return 0
    if args.smoke:
        args.rounds, args.requests = SMOKE["rounds"], SMOKE["requests"]
        args.aiperf = args.guidellm = None
    clients: dict[str, Any] = {"repro": run_repro}
    for name, exe, run in (
        ("aiperf", args.aiperf, run_aiperf),
        ("guidellm", args.guidellm, run_guidellm),
    ):
        if exe:
            clients[name] = functools.partial(run, exe)
        else:
            print(f"{name}: left out (no executable: --{name} PATH)")
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    print(
        f"{args.rounds} round(s) of {args.requests} requests, {args.concurrency} at a time, "
        f"{args.tokens} tokens each; order seed {seed}"
    )
    sizes = (args.requests, 8 * args.requests)
    found: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
    proc, url = start_endpoint(args.tokens)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            if len(clients) > 1:
                tokenizer(base)
            for k in range(args.rounds):
                runs = [(name, n) for name in clients for n in sizes]
                rng.shuffle(runs)
                got: dict[tuple[str, int], dict[str, float]] = {}
                for name, n in runs:
                    work = base / f"{name}-{k}-{n}"
                    work.mkdir()
                    if (base / "tokenizer").exists():
                        (work / "tokenizer").symlink_to(base / "tokenizer")
                    got[(name, n)] = clients[name](url, work, n, args.concurrency, args.tokens)
                for name in clients:
                    small, large = got[(name, sizes[0])], got[(name, sizes[1])]
                    row = {
                        "marginal_ms": 1e3
                        * (large["cpu_s"] - small["cpu_s"])
                        / (large["requests"] - small["requests"]),
                        "whole_ms": 1e3 * large["cpu_s"] / large["requests"],
                        "requests_per_s": large["requests_per_s"],
                    }
                    if "worker_loadgen_cpu_s" in large:
                        row["worker_ms"] = 1e3 * large["worker_loadgen_cpu_s"] / large["requests"]
                    found[name].append(row)
                    print(
                        f"  round {k + 1} {name:<9} {row['marginal_ms']:.3f} ms of CPU a request "
                        f"(whole run of {sizes[1]}: {row['whole_ms']:.3f} ms), "
                        f"{row['requests_per_s']:.1f} requests/s",
                        flush=True,
                    )
    finally:
        proc.kill()
        proc.wait()
    print(
        "\nclient     CPU per request   CPU per request of a   requests/s   marginal CPU vs\n"
        "           (marginal, median) run (start-up in)      (median)     the cheapest other"
    )
    medians = {n: statistics.median(r["marginal_ms"] for r in rows) for n, rows in found.items()}
    others = [m for n, m in medians.items() if n != "repro"]
    for name, rows in found.items():
        whole = statistics.median(r["whole_ms"] for r in rows)
        rate = statistics.median(r["requests_per_s"] for r in rows)
        ratio = f"{medians[name] / min(others):.2f}x" if others else "-"
        print(f"{name:<10} {medians[name]:>10.3f} ms {whole:>15.3f} ms {rate:>14.1f} {ratio:>14}")
    worker = [r["worker_ms"] for r in found.get("repro", []) if "worker_ms" in r]
    if worker:
        print(
            f"\nrepro's worker alone over LoadGen's run (the record's CPU time): "
            f"{statistics.median(worker):.3f} ms a request"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
