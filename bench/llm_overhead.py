"""The generative SUT's own cost per token: a plain decode loop vs repro's LoadGen SUT.

Both sides run the same model (specs/torch-tinylm.json: the tinylm recipe, 8 KV-cache slots,
one thread), the same prompts and the same `SlotDecoder` calls:

- plain: every `slots` prompts are prefilled into the slots, then decoded together step by
  step until each has max_new_tokens (no queue, no LoadGen, no responses), timed by a loop;
- SUT: the worker (`python -m repro.harness`) in Offline with use_token_latencies: LoadGen
  issues every query at once, the continuous batcher admits them into the slots between steps,
  each first token goes to FirstTokenComplete and each generation to QuerySamplesComplete with
  its token count; the figure is LoadGen's own "Tokens per second".

With all prompts issued at once and one max_new_tokens, continuous batching makes the same
decode steps as the plain loop, so tokens/s differ only by what the SUT adds: the overhead is
1 - SUT/plain. Each measurement runs in a fresh process, alternating which side goes first,
`--rounds` times (these machines are noisy: compare the ratios measured next to each other).
Target on the CPU: overhead <= 2 %.

    python bench/llm_overhead.py                      # 5 rounds of 4 s
    python bench/llm_overhead.py --rounds 7 --duration-ms 6000 --max-new-tokens 64
    python bench/llm_overhead.py --smoke              # CI: one 0.2 s round of 4 tokens
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repro.artifacts.cache import ArtifactCache  # noqa: E402
from repro.artifacts.fetching import fetch_all  # noqa: E402
from repro.harness.request import WorkerRequest  # noqa: E402
from repro.replay.settings import scenario_settings  # noqa: E402
from repro.runs import layout  # noqa: E402
from repro.runs.loadgen_logs import read_logs  # noqa: E402
from repro.runs.plan import ReplayPlan, loadgen_overrides  # noqa: E402
from repro.spec.io import load_spec  # noqa: E402
from repro.spec.models import GenerationSpec  # noqa: E402
from repro.stats.student_t import t_ppf  # noqa: E402

SPEC = ROOT / "specs" / "torch-tinylm.json"
#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"rounds": 1, "duration_ms": 200, "max_new_tokens": 4}


def plain_worker(request: Path, duration_s: float) -> None:
    """Inside a fresh process: the decoder alone, in static batches of `slots`; prints JSON."""
    from repro.harness.generation import load_generator, load_prompts, warm_up

    req = WorkerRequest.model_validate_json(request.read_text())
    assert req.generation is not None
    engine = load_generator(req)
    prompts = load_prompts(req, engine)[: req.performance_sample_count]
    warm_up(engine, prompts[0])
    dec, new = engine.decoder, req.generation.max_new_tokens
    slots = dec.slots
    tokens = np.zeros(slots, dtype=np.int64)
    positions = np.zeros(slots, dtype=np.int64)
    out = np.empty((slots, new), dtype=np.int32)
    done, k, inside = 0, 0, 0
    clock = time.perf_counter_ns
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < duration_s:
        batch = [prompts[(k + s) % len(prompts)] for s in range(slots)]
        k += slots
        for s, p in enumerate(batch):
            t = clock()
            out[s, 0] = tokens[s] = dec.prefill(s, p)
            inside += clock() - t
            positions[s] = len(p)
        for n in range(1, new):
            t = clock()
            step = dec.step(tokens, positions)
            inside += clock() - t
            out[:, n] = step
            tokens[:] = step
            positions += 1
        done += slots * new
    wall = time.perf_counter() - t0
    # the same clock calls around the same decoder calls as the SUT's batcher
    print(json.dumps({"tokens_per_second": done / wall, "in_decoder": inside / 1e9 / wall}))


def _request(
    out_dir: Path, duration_ms: int, cache: ArtifactCache, max_new: int, qps: float | None
) -> Path:
    spec = load_spec(SPEC)
    arts = fetch_all(spec, SPEC, cache=cache)
    changes: dict[str, float] = {"min_query_count": 1}
    if qps is not None:
        # LoadGen's Offline query holds 1.1 x duration x expected QPS samples: at the measured
        # rate both sides run about as long, so machine phases weigh on them alike
        changes["offline_expected_qps"] = qps
        # and a whole number of batches (LoadGen's query is at least min_query_count samples):
        # a last batch with idle slots would cost the SUT decode steps the plain loop never makes
        slots = spec.workload.batch_size  # the KV-cache slots
        changes["min_query_count"] = math.ceil(1.1 * qps * duration_ms / 1000 / slots + 1) * slots
    # the settings are a frozen model: the changes are checked again as a whole
    options = ReplayPlan(loadgen=loadgen_overrides(min_duration_ms=duration_ms))
    settings = scenario_settings(spec, "Offline", options).changed(changes)
    req = WorkerRequest.from_spec(
        spec,
        spec_id="bench",
        scenario="Offline",
        mode="performance",
        settings=settings,
        artifacts={name: m.path for name, m in arts.items()},
        cache_root=cache.root,
        output_dir=out_dir,
    )
    req = req.model_copy(update={"generation": GenerationSpec(max_new_tokens=max_new)})
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / layout.REQUEST_FILE
    path.write_text(req.model_dump_json())
    return path


def _sut(req: Path) -> tuple[float, float]:
    """LoadGen's tokens/s, and its ratio to the tokens/s inside the decoder in the same run
    (the SUT's own share of the run, free of the machine's phases)."""
    subprocess.run(
        [sys.executable, "-m", "repro.harness", str(req)],
        check=True,
        capture_output=True,
        cwd=req.parent,
    )
    tps = float(read_logs(req.parent)["tokens_per_second"])
    worker = json.loads((req.parent / layout.WORKER_RESULT).read_text())
    in_decoder = worker["tokens_completed"] / worker["backend"]["decode_s"]
    return tps, tps / in_decoder


def _plain(req: Path, duration_s: float) -> tuple[float, float]:
    """The plain loop's tokens/s, and the share of its run inside the decoder's calls."""
    out = subprocess.run(
        [sys.executable, __file__, "--plain-worker", str(req), str(duration_s)],
        check=True,
        capture_output=True,
        text=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return float(found["tokens_per_second"]), float(found["in_decoder"])


def _interval(values: list[float]) -> tuple[float, float]:
    """Mean and 95 % half-width (Student t) of a few ratios."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, float("nan")
    half = t_ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return mean, half


def _overhead(label: str, ratios: list[float]) -> str:
    """`label: median, mean +/- half-width; overhead per token (1 - median)`."""
    mean, half = _interval(ratios)
    median = statistics.median(ratios)
    return (
        f"{label}: median {median:.4f}, mean {mean:.4f} +/- {half:.4f} (95 %); overhead per "
        f"token {100 * (1 - median):.2f} % (median; target <= 2 %)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration-ms", type=int, default=4000)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--plain-worker", nargs=2, metavar=("REQUEST", "SECONDS"))
    ap.add_argument("--smoke", action="store_true", help="CI: one 0.2 s round of 4 tokens")
    args = ap.parse_args()
    if args.plain_worker:
        plain_worker(Path(args.plain_worker[0]), float(args.plain_worker[1]))
        return 0
    if args.smoke:
        ap.set_defaults(**SMOKE)
        args = ap.parse_args()
        if importlib.util.find_spec("torch") is None:
            # repro[torch] is installed best effort (CI goes on without it): nothing to time
            print("smoke: left out: torch is not installed (pip install -e '.[torch]')")
            return 0
    cache = ArtifactCache()
    seconds = args.duration_ms / 1000
    with tempfile.TemporaryDirectory(prefix="repro-llm-bench-") as tmp:
        work = Path(tmp)
        calib = _request(work / "calibrate", args.duration_ms, cache, args.max_new_tokens, None)
        rate = _plain(calib, min(seconds, 2.0))[0] / args.max_new_tokens  # prompts per second
        ratios, in_run, plain_in, normalized = [], [], [], []
        print(f"torch-tinylm, Offline, max_new_tokens {args.max_new_tokens}, {seconds:g} s each")
        for r in range(args.rounds):
            req = _request(work / f"r{r}", args.duration_ms, cache, args.max_new_tokens, rate)
            if r % 2 == 0:  # alternate which goes first, so drift favours neither side
                (plain, p_in), (sut, inside) = _plain(req, seconds), _sut(req)
            else:
                (sut, inside), (plain, p_in) = _sut(req), _plain(req, seconds)
            ratios.append(sut / plain)
            in_run.append(inside)
            plain_in.append(p_in)
            normalized.append(inside / p_in)
            print(
                f"  round {r + 1}: plain {plain:,.0f} tokens/s, SUT (LoadGen) {sut:,.0f} "
                f"tokens/s, ratio {sut / plain:.4f}; inside the decoder: SUT {inside:.4f}, "
                f"plain {p_in:.4f} of the run; per decoder second, SUT/plain {inside / p_in:.4f}"
            )
    print(_overhead("SUT/plain tokens/s", ratios))
    print(
        f"in-run (same process, same queries): LoadGen tokens/s / tokens/s inside the decoder: "
        f"median {statistics.median(in_run):.4f}; the plain loop's tokens/s / its decoder's: "
        f"median {statistics.median(plain_in):.4f}"
    )
    print(
        _overhead(
            "per second inside the decoder (free of the machine's phases): SUT/plain tokens/s",
            normalized,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
