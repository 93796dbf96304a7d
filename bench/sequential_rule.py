"""The sequential rule of paired comparisons judged on recorded rounds: its error and its power.

    python bench/sequential_rule.py [--material tests/data/rounds/recorded.json]
                                    [--comparisons 4000]
    python bench/sequential_rule.py --smoke       # CI: 40 comparisons a row, one cap, seconds

Replays `repro.stats.simulate` on recorded A/A rounds of these machines (block-bootstrapped,
each block's sides swapped at random) and prints, per rule and round cap, the share of
comparisons judged *not reproduced* (all false: the same software on both sides) and
*reproduced*, and the share of a 10 % and a 20 % slowdown of every judged metric found:

- the rule (signed-rank interval, looks after MIN_ROUNDS, doubling, and the cap, Bonferroni);
- the same rule with its first look earlier (after 2, 4 or 6 rounds): why MIN_ROUNDS;
- the rule before issue 43 (a t interval after every pair from round 2, at the full
  confidence), and a t interval at the rule's looks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repro.stats.sequential import MIN_ROUNDS, Stopping, t_interval  # noqa: E402
from repro.stats.simulate import Trial, every_pair, simulate  # noqa: E402

#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"comparisons": 40, "caps": "16"}


def shift_of(material: list[Trial], slower: float) -> dict[str, float]:
    """Every judged metric `slower` worse: throughput down, latency up."""
    return {
        name: math.log(1 + slower) if "latency" in name else -math.log(1 + slower)
        for t in material
        for name in t.logs
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--material", type=Path, default=ROOT / "tests" / "data" / "rounds" / "recorded.json"
    )
    parser.add_argument("--comparisons", type=int, default=4000)
    parser.add_argument("--caps", default="16,32,40")
    parser.add_argument("--smoke", action="store_true", help="CI: 40 comparisons a row, one cap")
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    raw = json.loads(args.material.read_text())
    material = [Trial(t["logs"], t["tolerances"], t["load"]) for t in raw]
    n = args.comparisons
    print(
        f"{len(material)} recorded A/A trials, {sum(t.rounds for t in material)} rounds; "
        f"{n} synthetic comparisons a row"
    )
    rows = [
        "| rule | cap | false not reproduced (95 % upper) | reproduced | 10 % slower found "
        "| 20 % slower found |",
        "|---|---|---|---|---|---|",
    ]
    for cap in (int(c) for c in args.caps.split(",")):
        rules: list[tuple[str, dict[str, object]]] = [
            (f"signed-rank, looks from {MIN_ROUNDS} (the rule)", {"stopping": Stopping(cap)}),
            *(
                (f"signed-rank, looks from {m}", {"stopping": Stopping(cap, min_rounds=m)})
                for m in (2, 4, 6)
            ),
            (
                f"t interval, looks from {MIN_ROUNDS}",
                {"stopping": Stopping(cap), "rule": t_interval},
            ),
            (
                "t interval after every pair, 95 % (before)",
                {
                    "stopping": Stopping(cap, min_rounds=2),
                    "rule": t_interval,
                    "looks": every_pair(Stopping(cap, min_rounds=2)),
                    "confidence": 0.95,
                },
            ),
        ]
        for label, kw in rules:
            stopping = kw.pop("stopping")
            assert isinstance(stopping, Stopping)
            nr, rp = simulate(material, stopping, comparisons=n, seed=1, **kw)  # type: ignore[arg-type]
            found = [
                simulate(
                    material,
                    stopping,
                    comparisons=n // 4,
                    seed=2,
                    shift=shift_of(material, s),
                    **kw,
                )[0]  # type: ignore[arg-type]
                for s in (0.10, 0.20)
            ]
            rows.append(
                f"| {label} | {cap} | {100 * nr.value:.2f} % ({100 * nr.upper:.2f} %) | "
                f"{100 * rp.value:.1f} % | {100 * found[0].value:.0f} % | "
                f"{100 * found[1].value:.0f} % |"
            )
            print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
