"""How the fixtures beside this file were made: each harness itself, run against the real
`transformers serve` (transformers 5.25, CPU) serving repro's tiny-llama recipe model, on
127.0.0.1. Kept as the tools wrote them (a subset of each tool's output folder: the files
repro reads); never edited.

    python tests/data/served-tools/make.py --model MODEL_DIR --serve-python PY \
        --aiperf AIPERF --guidellm GUIDELLM --vllm-path VLLM_SITE --out tests/data/served-tools

- MODEL_DIR: the tiny-llama model folder (`repro replay specs/served-tinyllm.json` builds it
  into the cache: ~/.cache/repro/trees/<sha>/);
- PY: a Python with `transformers[serving]` (runs the server and vLLM's benchmark);
- AIPERF, GUIDELLM: `aiperf` 0.13.0 and `guidellm` 0.8.1 from PyPI, each in its own venv;
- VLLM_SITE: vllm 0.33.0's wheel unpacked with `pip install --no-deps --target` (its
  `vllm.benchmarks.serve`, the code behind `vllm bench serve`, is run by PY through
  `add_cli_args` and `main`, as the CLI does; vLLM's engine is not needed for it).

Every tool sends 16 streamed completions requests, 4 at a time, of 8 prompt tokens and at most
32 output tokens, twice (two runs: the rounds of one side). `transformers serve` refuses
`ignore_eos` (a vLLM sampling field), so none sends it: GuideLLM's synthetic data has no output
length (it would add `ignore_eos`), its backend's `max_tokens` bounds the answers instead.
vLLM's completions requests carry `repetition_penalty`, which `transformers serve` refuses too:
its runs use the chat API (`--backend openai-chat`), whose stream starts with a role-only
chunk, and a custom data set of 16 short prompts (vLLM's random data set always sends
`ignore_eos`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REQUESTS, CONCURRENCY, ISL, OSL = 16, 4, 8, 32


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the server at {url} did not answer in {timeout_s} s")


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, **(env or {})}, timeout=900)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--serve-python", required=True)
    p.add_argument("--aiperf", required=True)
    p.add_argument("--guidellm", required=True)
    p.add_argument("--vllm-path", required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    model = str(a.model)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            a.serve_python,
            "-m",
            "transformers.cli.transformers",
            "serve",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--device",
            "cpu",
            "--dtype",
            "float32",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    try:
        wait_ready(url)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            # AIPerf: a two-run profile (profile_runs/run_0001, run_0002)
            run(
                [
                    a.aiperf,
                    "profile",
                    "--model",
                    model,
                    "--url",
                    url,
                    "--endpoint-type",
                    "completions",
                    "--streaming",
                    "--request-count",
                    str(REQUESTS),
                    "--concurrency",
                    str(CONCURRENCY),
                    "--synthetic-input-tokens-mean",
                    str(ISL),
                    "--output-tokens-mean",
                    str(OSL),
                    "--tokenizer",
                    model,
                    "--artifact-dir",
                    str(work / "aiperf"),
                    "--ui-type",
                    "none",
                    "--random-seed",
                    "0",
                    "--use-server-token-count",
                    "--num-profile-runs",
                    "2",
                    "--no-server-metrics",
                ]
            )
            # GuideLLM: two runs, one file each
            for k in (1, 2):
                run(
                    [
                        a.guidellm,
                        "run",
                        "--backend",
                        f"kind=openai_http,target={url},model={model},request_format=/v1/completions,"
                        f"max_tokens={OSL}",
                        "--profile",
                        f"kind=concurrent,streams={CONCURRENCY}",
                        "--constraint",
                        f"kind=max_requests,count={REQUESTS}",
                        "--data",
                        f"kind=synthetic_text,prompt_tokens={ISL}",
                        "--output",
                        f"kind=json,path={work / f'guidellm-{k}.json'}",
                        "--disable-progress",
                    ],
                    env=offline,
                )
            # vllm bench serve: two runs appended to one file, with the per-request arrays; its
            # random data set always asks for ignore_eos: a custom one of short prompts instead
            prompts = work / "prompts.jsonl"
            prompts.write_text(
                "".join(
                    json.dumps({"prompt": f"Write the number {k} in words and then count on"})
                    + "\n"
                    for k in range(REQUESTS)
                )
            )
            for _ in (1, 2):
                code = (
                    "import sys; from vllm.benchmarks.serve import add_cli_args, main; "
                    "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
                    "p = FlexibleArgumentParser(); add_cli_args(p); "
                    "main(p.parse_args(sys.argv[1:]))"
                )
                run(
                    [
                        a.serve_python,
                        "-c",
                        code,
                        "--backend",
                        "openai-chat",
                        "--base-url",
                        url,
                        "--endpoint",
                        "/v1/chat/completions",
                        "--model",
                        model,
                        "--tokenizer",
                        model,
                        "--dataset-name",
                        "custom",
                        "--dataset-path",
                        str(prompts),
                        "--custom-output-len",
                        str(OSL),
                        "--skip-chat-template",
                        "--num-prompts",
                        str(REQUESTS),
                        "--max-concurrency",
                        str(CONCURRENCY),
                        "--request-rate",
                        "inf",
                        "--seed",
                        "0",
                        "--save-result",
                        "--save-detailed",
                        "--append-result",
                        "--result-dir",
                        str(work),
                        "--result-filename",
                        "vllm-bench.json",
                        "--percentile-metrics",
                        "ttft,tpot,itl,e2el",
                        "--metric-percentiles",
                        "50,90,99",
                        "--disable-tqdm",
                    ],
                    env={**offline, "PYTHONPATH": a.vllm_path},
                )
            out = a.out
            for sub in ("guidellm", "vllm-bench"):
                (out / sub).mkdir(parents=True, exist_ok=True)
            for k in (1, 2):
                run_dir = work / "aiperf" / "profile_runs" / f"run_{k:04d}"
                keep = out / "aiperf" / "profile_runs" / f"run_{k:04d}"
                keep.mkdir(parents=True, exist_ok=True)
                for name in ("profile_export_aiperf.json", "profile_export.jsonl"):
                    shutil.copy2(run_dir / name, keep / name)
                shutil.copy2(work / f"guidellm-{k}.json", out / "guidellm" / f"run-{k}.json")
            shutil.copy2(work / "vllm-bench.json", out / "vllm-bench" / "vllm-bench.json")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
