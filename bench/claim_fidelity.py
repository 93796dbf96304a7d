"""Whether `repro claim check` judges claims right, here and on "another machine", and how fast.

    python bench/claim_fidelity.py [--trials 20] [--machine-trials 20] [--reference]
    python bench/claim_fidelity.py --smoke   # CI: 2 trials of 2 rounds, all cores and one

The claim: the digits MLP of specs/ort-digits.json, Offline throughput at batch 32 over batch 8
(0.2-0.7 s tests), `>=` a bound.

1. Trials: --trials runs of `repro claim check --fixed-rounds --max-rounds R` (R = --rounds),
   each recording R interleaved rounds (one test of each variant per round, in its own drawn
   order) and when each round ended.
2. The truth of each trial, measured interleaved with it: the ratio (geometric mean) over the
   rounds of the --window trials before it and the --window after it, its own excluded. A
   truth measured once before the trials drifts away from them (7 % seen here: a 12-round
   truth has a standard error of ~6 % on a loaded machine).
3. Each trial judged twice, as `repro claim check` judges a claim (the same estimate, verdict
   and stopping rule, `repro.stats.sequential.Stopping`, applied to its rounds in their order,
   the time cap on their recorded end times): a true claim (`>= truth / 1.1`, target: *holds* in
   >= 95 %) and a false one (`>= truth x 1.1`, target: *does not hold* in >= 95 %); under the
   claims' default cap (20 rounds, 60 s) and under the whole R rounds.
4. Another machine: the same with every process pinned to one core (`taskset -c 0`; the
   workers inherit it), against the truth on that one core.
5. With --reference: the wall time to a verdict of each claim of the reference specs
   (specs/ort-resnet50.json, specs/tvm-resnet50.json), one `repro claim check --claim` each,
   start-up included (target <= 60 s).

Prints a table; asserts nothing (these machines are noisy and shared). Runs go to a temporary
folder (--workdir to keep them).
"""

from __future__ import annotations

import argparse
import dataclasses
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

from repro.compare.claim_verdicts import estimate, verdict  # noqa: E402
from repro.spec.claims import Claim  # noqa: E402
from repro.spec.io import parse_spec, rebase_paths, with_id, write_spec  # noqa: E402
from repro.stats.sequential import Stopping  # noqa: E402

#: the claim of the trials: batch 32 (the spec's) over batch 8, Offline; short tests
ROUNDS = {"min_duration_ms": 300, "min_query_count": 256, "max_rounds": 20, "max_time_s": 60.0}
BASELINE_BATCH = 8
#: LoadGen's Offline query is max(min_query_count, expected_qps x min_duration) samples: 66 k,
#: a few tenths of a second of either batch size (batch 1 over batch 32 would make one test 10x
#: the other's, and the short one all noise)
OFFLINE_QPS = 200000.0
LOOSER = 1.1
#: the spec's tolerances.confidence (specs/ort-digits.json)
CONFIDENCE = 0.95
#: trials per `repro claim check` (the tally is printed after each)
CHUNK = 5
#: the claims' default cap (repro.spec.claims.ClaimRounds), under which trials are judged first
DEFAULT_CAP = Stopping(max_rounds=20, max_time_s=60.0)
#: --smoke: the same code on the smallest input (two trials make each one's truth); flags
#: given beside it still win
SMOKE = {"trials": 2, "machine_trials": 2, "rounds": 2, "window": 1}


@dataclass(frozen=True)
class Checked:
    """One claim's rounds as `repro claim check --json` reported them."""

    id: str
    verdict: str
    value: float
    rounds: int
    elapsed_s: float
    baseline: tuple[float, ...] = ()
    candidate: tuple[float, ...] = ()
    #: seconds from the first round's start to each round's end
    ends: tuple[float, ...] = ()

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(c / b for b, c in zip(self.baseline, self.candidate, strict=True))


@dataclass(frozen=True)
class Judged:
    """A trial's rounds judged as `repro claim check` would have judged them."""

    verdict: str
    rounds: int
    elapsed_s: float


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
    spec: Path,
    work: Path,
    *,
    pin: list[str],
    env: str,
    only: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
) -> tuple[list[Checked], float]:
    """`repro claim check --json` (under `pin`, e.g. taskset): the claims and the wall time."""
    argv = [
        *pin,
        sys.executable,
        "-m",
        "repro",
        "claim",
        "check",
        str(spec),
        "--json",
        "--env",
        env,
        "-o",
        str(work / "results"),
        "--report-dir",
        str(work / "reports"),
        *extra,
    ]
    for claim_id in only:
        argv += ["--claim", claim_id]
    t0 = time.monotonic()
    log = work / f"{spec.stem}.log"
    with log.open("a") as err:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT, check=False
        )
    wall = time.monotonic() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"`{' '.join(argv)}` failed ({done.returncode}); see {log}")
    rows = json.loads(done.stdout)["claims"]
    return [
        Checked(
            r["id"],
            r["verdict"],
            r["value"],
            r["rounds"],
            r["elapsed_s"],
            tuple(r["baseline"]),
            tuple(r["candidate"]),
            tuple(r.get("round_end_s", ())),
        )
        for r in rows
    ], wall


def record_trials(
    work: Path, trials: int, rounds: int, *, pin: list[str], env: str
) -> list[Checked]:
    """`trials` claims' rounds, `rounds` each, recorded by `repro claim check --fixed-rounds`
    (CHUNK claims per command; each its own drawn order)."""
    recorded: list[Checked] = []
    fixed = ("--fixed-rounds", "--max-rounds", str(rounds), "--max-time", "100000")
    for start in range(0, trials, CHUNK):
        claims = [
            batch_claim(f"trial-{i:02d}", 1.0) for i in range(start, min(start + CHUNK, trials))
        ]
        found, _ = check(digits_spec(work, claims), work, pin=pin, env=env, extra=fixed)
        recorded += found
        print(f"    {len(recorded)}/{trials} trial(s) recorded", flush=True)
    return recorded


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def truths(recorded: list[Checked], window: int) -> list[float]:
    """Each trial's truth: the ratio over the rounds of the `window` trials on either side of
    it (run just before and just after it), its own excluded."""
    out = []
    for i in range(len(recorded)):
        near = recorded[max(0, i - window) : i] + recorded[i + 1 : i + 1 + window]
        out.append(geomean([r for c in near for r in c.ratios]))
    return out


def judge_rounds(trial: Checked, relation: str, bound: float, cap: Stopping) -> Judged:
    """The verdict `repro claim check` reaches on these rounds, in their order, under `cap`
    (its looks, each at the confidence that keeps them together at the spec's)."""
    claim = Claim.model_validate(batch_claim("judged", bound) | {"relation": relation})
    each = cap.confidence(CONFIDENCE)
    found = None
    for k in range(1, min(len(trial.ratios), cap.max_rounds) + 1):
        found = estimate(
            claim, list(trial.baseline[:k]), list(trial.candidate[:k]), confidence=each
        )
        decided = verdict(claim, found, confidence=each).verdict != "inconclusive"
        if cap.reason(k, decided, trial.ends[k - 1]) is not None:
            break
    assert found is not None
    return Judged(verdict(claim, found, confidence=each).verdict, k, trial.ends[k - 1])


def rate(rows: list[Judged], want: str) -> str:
    right = sum(c.verdict == want for c in rows)
    other = {v: sum(c.verdict == v for c in rows) for v in {c.verdict for c in rows} - {want}}
    extra = ", ".join(f"{n} {v}" for v, n in sorted(other.items()))
    return f"{right}/{len(rows)} ({right / max(len(rows), 1):.0%})" + (
        f"; {extra}" if extra else ""
    )


def time_line(rows: list[Judged]) -> str:
    times = sorted(c.elapsed_s for c in rows)
    rounds = sorted(c.rounds for c in rows)
    return (
        f"rounds median {rounds[len(rounds) // 2]} (max {rounds[-1]}); "
        f"time median {times[len(times) // 2]:.0f} s (max {times[-1]:.0f} s)"
    )


def section(
    label: str, work: Path, trials: int, *, pin: list[str], env: str, rounds: int, window: int
) -> float:
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"\n{label}: {trials} trials of {rounds} rounds (batch 32 / batch {BASELINE_BATCH}, "
        "Offline)",
        flush=True,
    )
    recorded = record_trials(work, trials, rounds, pin=pin, env=env)
    saved = work / "trials.json"
    saved.write_text(json.dumps([dataclasses.asdict(c) for c in recorded]))
    print(f"  the recorded rounds: {saved} (`--judge {saved}` judges them again)")
    return judge_section(recorded, rounds=rounds, window=window)


def judge_section(recorded: list[Checked], *, rounds: int, window: int) -> float:
    """Each recorded trial judged as a true and as a false claim; the table."""
    truth = truths(recorded, window)
    pooled = geomean([r for c in recorded for r in c.ratios])
    half = len(recorded) // 2
    first, last = (
        geomean([r for c in part for r in c.ratios]) for part in (recorded[:half], recorded[half:])
    )
    print(
        f"  the ratio over all {sum(c.rounds for c in recorded)} rounds: {pooled:.3g} "
        f"(first half of the trials {first:.3g}, second half {last:.3g}); each trial's "
        f"truth (+-{window} trials) {min(truth):.3g} to {max(truth):.3g}"
    )
    per_trial = sorted(geomean(list(c.ratios)) for c in recorded)
    print(f"  each trial's own ratio: {per_trial[0]:.3g} to {per_trial[-1]:.3g}")
    logs = [math.log(r) - math.log(geomean(list(c.ratios))) for c in recorded for r in c.ratios]
    # each trial's own mean takes one degree of freedom; a trial may keep fewer rounds than it
    # ran (a round whose variants ran differently sized Offline queries is left out)
    freedom = len(logs) - len(recorded)
    if freedom > 0:
        sd = math.sqrt(sum(x * x for x in logs) / freedom)
        need = ((1.96 + 1.645) * sd / math.log(LOOSER)) ** 2
        print(
            f"  one round's log ratio varies by {sd:.3f} (sd within trials): a fixed test "
            f"tells a 10 % margin with 95 % power after ~{need:.0f} rounds"
        )
    else:
        print("  one round's log ratio: no sd within trials (no trial kept two rounds)")
    full = Stopping(max_rounds=rounds, max_time_s=math.inf)
    for name, cap in (
        (
            f"default cap ({DEFAULT_CAP.max_rounds} rounds, {DEFAULT_CAP.max_time_s:g} s)",
            DEFAULT_CAP,
        ),
        (f"cap of {rounds} rounds", full),
    ):
        true = [
            judge_rounds(c, ">=", t / LOOSER, cap) for c, t in zip(recorded, truth, strict=True)
        ]
        false = [
            judge_rounds(c, ">=", t * LOOSER, cap) for c, t in zip(recorded, truth, strict=True)
        ]
        print(f"  {name}:")
        print(f"    true claims  (>= truth / {LOOSER}) judged holds:         {rate(true, 'holds')}")
        print(f"      {time_line(true)}")
        print(
            f"    false claims (>= truth x {LOOSER}) judged does not hold: "
            f"{rate(false, 'does not hold')}"
        )
        print(f"      {time_line(false)}")
    sys.stdout.flush()
    return pooled


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
            print(
                f"  {name} {claim_id}: {c.verdict} ({c.value:.3g}) after {c.rounds} round(s): "
                f"{wall:.0f} s wall, {c.elapsed_s:.0f} s of rounds",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="true and false claims each")
    parser.add_argument(
        "--machine-trials", type=int, default=20, help="the same on one core (0: skip)"
    )
    parser.add_argument("--rounds", type=int, default=40, help="rounds each trial records")
    parser.add_argument(
        "--window", type=int, default=3, help="trials either side that make a trial's truth"
    )
    parser.add_argument("--reference", action="store_true", help="time the reference claims")
    parser.add_argument("--env", default="native", help="repro's --env for the workers")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--skip-here", action="store_true", help="only the one-core section")
    parser.add_argument(
        "--judge",
        type=Path,
        nargs="+",
        default=[],
        metavar="TRIALS",
        help="judge recorded trials (a section's trials.json) again, run nothing",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="CI: 2 trials of 2 rounds on all cores and on one"
    )
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
        if not args.reference:
            # one claim check of the reference ResNet-50 specs takes a minute or more
            print("smoke: the reference specs' claims left out (--reference adds them)")
    if args.judge:
        for path in args.judge:
            recorded = [
                Checked(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})
                for row in json.loads(path.read_text())
            ]
            print(f"\n{path}: {len(recorded)} recorded trials")
            judge_section(recorded, rounds=max(c.rounds for c in recorded), window=args.window)
        return
    work = args.workdir or Path(tempfile.mkdtemp(prefix="claim-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        here = None
        if not args.skip_here:
            here = section(
                "this machine (all cores)",
                work / "here",
                args.trials,
                pin=[],
                env=args.env,
                rounds=args.rounds,
                window=args.window,
            )
        if args.machine_trials and shutil.which("taskset"):
            one = section(
                "another machine (taskset -c 0: one core)",
                work / "one-core",
                args.machine_trials,
                pin=["taskset", "-c", "0"],
                env=args.env,
                rounds=args.rounds,
                window=args.window,
            )
            if here is not None:
                print(
                    f"  the ratio itself moved {one / here - 1:+.1%} from all cores to one "
                    "core: a claim states a ratio of one machine; checked on another, it "
                    "holds where that machine's ratio lies within its bound"
                )
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
