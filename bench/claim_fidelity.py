"""Whether `repro claim check` judges claims right, here and on "another machine", and how fast.

    python bench/claim_fidelity.py [--trials 20] [--machine-trials 20] [--reference]

1. The truth: a small, fast claim (the digits MLP of specs/ort-digits.json, Offline throughput
   at batch 32 over batch 8) measured in a long interleaved run (--truth-rounds rounds).
2. Fidelity: --trials true claims (bound 10 % looser than the truth: `>= truth / 1.1`) and as
   many false ones (10 % tighter: `>= truth x 1.1`), each checked by its own adaptive rounds
   (one `repro claim check` runs them one after another, each with its own drawn order);
   target: >= 95 % of true claims judged *holds*, >= 95 % of false ones *does not hold*.
3. Another machine: the same with every process pinned to one core (`taskset -c 0`; the
   workers inherit it), against the truth measured on that one core, and the two-core claims
   checked there too (their verdicts say whether the ratio itself moved).
4. With --reference: the wall time to a verdict of each claim of the reference specs
   (specs/ort-resnet50.json, specs/tvm-resnet50.json), one `repro claim check --claim` each,
   start-up included (target <= 60 s).

Prints a table; asserts nothing (these machines are noisy and shared). Runs go to a temporary
folder (--workdir to keep them).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repro.spec.io import parse_spec, rebase_paths, with_id, write_spec  # noqa: E402

#: the claim of the trials: batch 32 (the spec's) over batch 8, Offline; short tests
ROUNDS = {"min_duration_ms": 300, "min_query_count": 256, "max_rounds": 20, "max_time_s": 60.0}
BASELINE_BATCH = 8
#: LoadGen's Offline query is max(min_query_count, expected_qps x min_duration) samples: 66 k,
#: a few tenths of a second of either batch size (batch 1 over batch 32 would make one test 10x
#: the other's, and the short one all noise)
OFFLINE_QPS = 200000.0
LOOSER = 1.1
#: trials of each kind per `repro claim check` (the tally is printed after each)
CHUNK = 5


@dataclass(frozen=True)
class Checked:
    """One claim as `repro claim check --json` judged it."""

    id: str
    verdict: str
    value: float
    rounds: int
    elapsed_s: float
    #: candidate/baseline of each round
    ratios: tuple[float, ...] = ()


def digits_spec(folder: Path, claims: list[dict[str, Any]]) -> Path:
    """specs/ort-digits.json with `claims`, written into `folder` with its paths rebased."""
    data = json.loads((ROOT / "specs" / "ort-digits.json").read_text())
    rebase_paths(data, ROOT / "specs", folder)
    for sc in data["workload"]["scenarios"]:
        if sc["scenario"] == "Offline":
            sc["settings"]["offline_expected_qps"] = OFFLINE_QPS
    data.pop("id", None)
    data["claims"] = claims
    path = folder / f"digits-{len(list(folder.glob('digits-*.json')))}.json"
    write_spec(with_id(parse_spec(data, source="bench")), path)
    return path


def batch_claim(claim_id: str, bound: float, **rounds: Any) -> dict[str, Any]:
    return {
        "id": claim_id,
        "statement": f"batch 32 gives at least {bound:.3g}x the Offline throughput of batch "
        f"{BASELINE_BATCH}",
        "metric": "Offline.throughput",
        "baseline": {
            "label": f"batch {BASELINE_BATCH}",
            "overrides": {"workload.batch_size": BASELINE_BATCH},
        },
        "candidate": {"label": "batch 32"},
        "relation": ">=",
        "bound": round(bound, 4),
        "rounds": {**ROUNDS, **rounds},
    }


def check(
    spec: Path, work: Path, *, pin: list[str], env: str, only: tuple[str, ...] = ()
) -> tuple[list[Checked], float]:
    """`repro claim check --json` (under `pin`, e.g. taskset): the claims and the wall time."""
    argv = [*pin, sys.executable, "-m", "repro", "claim", "check", str(spec), "--json",
            "--env", env, "-o", str(work / "results"),
            "--report-dir", str(work / "reports")]  # fmt: skip
    for claim_id in only:
        argv += ["--claim", claim_id]
    t0 = time.monotonic()
    log = work / f"{spec.stem}.log"
    with log.open("a") as err:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                              check=False)  # fmt: skip
    wall = time.monotonic() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"`{' '.join(argv)}` failed ({done.returncode}); see {log}")
    rows = json.loads(done.stdout)["claims"]
    return [
        Checked(r["id"], r["verdict"], r["value"], r["rounds"], r["elapsed_s"],
                tuple(c / b for b, c in zip(r["baseline"], r["candidate"], strict=True)))
        for r in rows
    ], wall  # fmt: skip


def truth(work: Path, *, pin: list[str], env: str, rounds: int) -> float:
    """The claim's ratio: the geometric mean of `rounds` interleaved rounds. A claim stops
    once decided, so the rounds come from checks of a bound none can hold (each decided after
    its first pair of rounds)."""
    claim = batch_claim("truth", 1.0)
    claim.update(relation="<=", bound=1e-6)
    spec = digits_spec(work, [claim])
    ratios: list[float] = []
    while len(ratios) < rounds:
        found, _ = check(spec, work, pin=pin, env=env)
        ratios += found[0].ratios
    return math.exp(sum(map(math.log, ratios)) / len(ratios))


def fidelity(
    work: Path, truth_ratio: float, trials: int, *, pin: list[str], env: str
) -> tuple[list[Checked], list[Checked]]:
    """`trials` true and `trials` false claims about `truth_ratio`, checked in chunks of
    CHUNK of each (a true and a false claim alternate), the tally printed after each."""
    true: list[Checked] = []
    false: list[Checked] = []
    for start in range(0, trials, CHUNK):
        ids = range(start, min(start + CHUNK, trials))
        claims = [
            c
            for i in ids
            for c in (
                batch_claim(f"true-{i:02d}", truth_ratio / LOOSER),
                batch_claim(f"false-{i:02d}", truth_ratio * LOOSER),
            )
        ]
        found, _ = check(digits_spec(work, claims), work, pin=pin, env=env)
        true += [c for c in found if c.id.startswith("true")]
        false += [c for c in found if c.id.startswith("false")]
        print(f"    {len(true)} trial(s) of each: true {rate(true, 'holds')}; "
              f"false {rate(false, 'does not hold')}", flush=True)  # fmt: skip
    return true, false


def rate(rows: list[Checked], want: str) -> str:
    right = sum(c.verdict == want for c in rows)
    other = {v: sum(c.verdict == v for c in rows) for v in {c.verdict for c in rows} - {want}}
    extra = ", ".join(f"{n} {v}" for v, n in sorted(other.items()))
    return f"{right}/{len(rows)} ({right / max(len(rows), 1):.0%})" + (
        f"; {extra}" if extra else ""
    )


def time_line(rows: list[Checked]) -> str:
    times = sorted(c.elapsed_s for c in rows)
    rounds = sorted(c.rounds for c in rows)
    return (
        f"rounds median {rounds[len(rounds) // 2]} (max {rounds[-1]}); "
        f"time median {times[len(times) // 2]:.0f} s (max {times[-1]:.0f} s)"
    )


def section(label: str, work: Path, trials: int, *, pin: list[str], env: str, rounds: int) -> float:
    work.mkdir(parents=True, exist_ok=True)
    found = truth(work, pin=pin, env=env, rounds=rounds)
    ratio = f"batch 32 / batch {BASELINE_BATCH}, Offline, {rounds} rounds"
    print(f"\n{label}: truth ({ratio}) = {found:.3g}", flush=True)
    true, false = fidelity(work, found, trials, pin=pin, env=env)
    print(f"  true claims  (>= {found / LOOSER:.3g}) judged holds:         {rate(true, 'holds')}")
    print(f"    {time_line(true)}")
    print(f"  false claims (>= {found * LOOSER:.3g}) judged does not hold: "
          f"{rate(false, 'does not hold')}")  # fmt: skip
    print(f"    {time_line(false)}")
    values = sorted(c.value for c in true + false)
    print(f"  each claim's own estimate of the ratio: {values[0]:.3g} to {values[-1]:.3g} "
          f"(median {values[len(values) // 2]:.3g})")  # fmt: skip
    pooled = [r for c in true + false for r in c.ratios]
    after = math.exp(sum(map(math.log, pooled)) / len(pooled))
    print(f"  the ratio over the trials' own {len(pooled)} rounds: {after:.3g} "
          f"({after / found - 1:+.1%} from the truth measured before them)")  # fmt: skip
    sys.stdout.flush()
    return found


def reference(work: Path, env: str) -> None:
    """Time to a verdict of every claim of the reference specs, one command each."""
    work.mkdir(parents=True, exist_ok=True)
    print("\nreference specs: wall time to a verdict per claim (`repro claim check --claim`)")
    for name in ("ort-resnet50", "tvm-resnet50"):
        spec = ROOT / "specs" / f"{name}.json"
        ids = [c["id"] for c in json.loads(spec.read_text()).get("claims", [])]
        for claim_id in ids:
            found, wall = check(spec, work, pin=[], env=env, only=(claim_id,))
            c = found[0]
            print(f"  {name} {claim_id}: {c.verdict} ({c.value:.3g}) after {c.rounds} round(s): "
                  f"{wall:.0f} s wall, {c.elapsed_s:.0f} s of rounds", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="true and false claims each")
    parser.add_argument("--machine-trials", type=int, default=20,
                        help="the same on one core (0: skip)")  # fmt: skip
    parser.add_argument("--truth-rounds", type=int, default=12)
    parser.add_argument("--reference", action="store_true", help="time the reference claims")
    parser.add_argument("--env", default="native", help="repro's --env for the workers")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--skip-here", action="store_true", help="only the one-core section")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="claim-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        here = None
        if not args.skip_here:
            here = section("this machine (all cores)", work / "here", args.trials,
                           pin=[], env=args.env, rounds=args.truth_rounds)  # fmt: skip
        if args.machine_trials and shutil.which("taskset"):
            one = section("another machine (taskset -c 0: one core)", work / "one-core",
                          args.machine_trials, pin=["taskset", "-c", "0"], env=args.env,
                          rounds=args.truth_rounds)  # fmt: skip
            if here is not None:
                print(f"  the ratio itself moved {one / here - 1:+.1%} from all cores to one "
                      "core: a claim states a ratio of one machine; checked on another, it "
                      "holds where that machine's ratio lies within its bound")  # fmt: skip
        elif args.machine_trials:
            print("\nanother machine: skipped (no taskset on PATH)")
        if args.reference:
            reference(work / "reference", args.env)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nbench wall time: {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
