"""The one sequential rule of paired comparisons: its interval, its looks, and its error on
recorded rounds of these machines (a seeded simulation)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from repro.stats.sequential import (
    MIN_ROUNDS,
    Stopping,
    critical_rank,
    first_finite,
    signed_rank_interval,
    t_interval,
)
from repro.stats.simulate import Trial, block_bootstrap, every_pair, judge, simulate

RECORDED = Path(__file__).resolve().parents[2] / "data" / "rounds" / "recorded.json"


@pytest.mark.parametrize(
    ("n", "alpha_side", "critical"),
    # the Wilcoxon signed-rank table's critical values, two-sided 5 % and 1 %
    [
        (5, 0.025, -1),
        (6, 0.025, 0),
        (7, 0.025, 2),
        (8, 0.025, 3),
        (10, 0.025, 8),
        (20, 0.025, 52),
        (30, 0.025, 137),
        (8, 0.005, 0),
        (10, 0.005, 3),
        (20, 0.005, 37),
    ],
)
def test_the_critical_ranks_are_the_tables(n: int, alpha_side: float, critical: int) -> None:
    assert critical_rank(n, alpha_side) == critical


def test_the_normal_approximation_joins_the_exact_count() -> None:
    assert abs(critical_rank(61, 0.025) - critical_rank(60, 0.025) - 24) <= 2


def test_too_few_rounds_have_no_finite_interval() -> None:
    assert first_finite(0.95) == 6
    assert first_finite(1 - 0.05 / 4) == 8  # a look's share of four
    found = signed_rank_interval([0.01, 0.02, 0.0, 0.01, 0.02], 0.95)
    assert not found.finite
    assert found.relative()[1] == -1.0  # exp(-inf) - 1


def test_the_interval_is_the_walsh_averages_between_the_critical_ranks() -> None:
    x = [0.3, -0.1, 0.2, 0.05, 0.15, -0.2, 0.25, 0.1]
    walsh = sorted((a + b) / 2 for i, a in enumerate(x) for b in x[i:])
    found = signed_rank_interval(x, 0.95)
    assert found.lo == pytest.approx(walsh[3])  # c = 3 for n = 8 at 5 %
    assert found.hi == pytest.approx(walsh[-4])
    assert found.center == pytest.approx(float(np.median(walsh)))


@pytest.mark.parametrize("tails", ["normal", "cauchy", "spiky"])
def test_the_interval_holds_its_confidence_whatever_the_tails(tails: str) -> None:
    rng = np.random.Generator(np.random.PCG64(1))
    misses = 0
    trials = 2000
    for _ in range(trials):
        if tails == "normal":
            x = rng.normal(0, 0.1, 12)
        elif tails == "cauchy":
            x = 0.05 * rng.standard_cauchy(12)
        else:  # 8 % of rounds 0.4 off the rest, either way: SingleStream's tail here
            x = rng.normal(0, 0.02, 12) + rng.choice([-0.4, 0.4], 12) * (rng.random(12) < 0.08)
        found = signed_rank_interval(x, 0.95)
        misses += not (found.lo <= 0 <= found.hi)
    assert misses / trials <= 0.05 + 0.012  # 5 % and the simulation's own noise


def test_a_t_interval_on_spiky_rounds_does_not() -> None:
    """Two rounds that agree by chance give a t interval narrow by chance: the rule before."""
    rng = np.random.Generator(np.random.PCG64(2))
    wrong = 0
    for _ in range(2000):
        x = rng.normal(0, 0.02, 2) + rng.choice([-0.4, 0.4]) * (rng.random() < 0.08)
        found = t_interval(x, 0.95)
        wrong += not (found.lo <= 0 <= found.hi)
    assert wrong / 2000 > 0.05


def test_the_looks_start_at_the_minimum_and_double_to_the_cap() -> None:
    assert MIN_ROUNDS == 8
    assert Stopping(max_rounds=40).looks == (8, 16, 32, 40)
    assert Stopping(max_rounds=32).looks == (8, 16, 32)
    assert Stopping(max_rounds=40).confidence(0.95) == pytest.approx(0.9875)
    assert Stopping(max_rounds=6).looks == (6,)  # a cap below the minimum: one look, there
    assert Stopping(max_rounds=40, fixed=True).looks == (40,)
    assert Stopping(max_rounds=20, min_rounds=7).looks == (8, 16, 20)  # a whole pair first
    assert Stopping(max_rounds=6).too_few(0.95) == (
        "6 round(s) cannot decide: a paired verdict needs at least 8 rounds (--max-rounds 8 or "
        "more)"
    )
    assert Stopping(max_rounds=8).too_few(0.95) is None


def test_the_block_bootstrap_keeps_whole_pairs_and_every_metric_of_a_round() -> None:
    trial = Trial({"a": list(range(1, 11)), "b": [10 * x for x in range(1, 11)]}, {"a": 1, "b": 1})
    drawn = block_bootstrap(trial, 40, np.random.Generator(np.random.PCG64(0)))
    assert list(drawn["b"]) == [10 * x for x in drawn["a"]]
    for block in np.abs(drawn["a"]).reshape(10, 4):  # blocks start at a pair's first round
        assert int(block[0]) % 2 == 1
    signs = np.sign(drawn["a"]).reshape(10, 4)
    assert all(len(set(row)) == 1 for row in signs)  # a block's sides swap together
    assert {-1.0, 1.0} <= set(signs[:, 0])  # and some blocks are swapped


def test_judging_stops_a_metric_once_decided_and_any_not_reproduced_is_the_comparisons() -> None:
    logs = {"same": np.zeros(16), "slower": np.full(16, math.log(0.7))}
    found = judge(logs, {"same": 0.05, "slower": 0.05}, Stopping(max_rounds=16))
    assert found.verdicts == {"same": "reproduced", "slower": "not reproduced"}
    assert found.rounds == {"same": 8, "slower": 8}
    assert found.not_reproduced


def _recorded() -> list[Trial]:
    raw = json.loads(RECORDED.read_text())
    return [Trial(t["logs"], t["tolerances"], t["load"]) for t in raw]


def test_the_recorded_material_is_there_and_covers_loads() -> None:
    material = _recorded()
    assert len(material) >= 20
    loads = {t.load.split("@")[-1].split("/")[0] for t in material}
    assert {"0", "2", "4"} <= loads


def test_no_recorded_a_a_trial_is_not_reproduced_as_it_ran() -> None:
    """Each recorded A/A judged as it is, one look at its own length: the rule's real record
    on this machine, no bootstrap."""
    for trial in _recorded():
        n = trial.rounds
        logs = {k: np.asarray(v[:n]) for k, v in trial.logs.items()}
        found = judge(logs, trial.tolerances, Stopping(max_rounds=n, fixed=True))
        assert not found.not_reproduced, (trial.load, found.verdicts)


@pytest.mark.parametrize(
    "stopping",
    [
        Stopping(max_rounds=16),
        Stopping(max_rounds=40),
        Stopping(max_rounds=100),
        Stopping(max_rounds=8, fixed=True),
        Stopping(max_rounds=24, fixed=True),
    ],
    ids=["looks-16", "looks-40", "looks-100", "fixed-8", "fixed-24"],
)
def test_identical_software_is_called_not_reproduced_at_most_1_percent_of_the_time(
    stopping: Stopping,
) -> None:
    """The rule on recorded A/A rounds of this machine, block-bootstrapped (tails, drift and
    neighbours kept): false *not reproduced* per comparison (any metric) <= 1 %."""
    false, _ = simulate(_recorded(), stopping, comparisons=1500, seed=11)
    assert false.value <= 0.01, f"{false.hits}/{false.n} comparisons"


def test_the_simulation_catches_the_rule_it_replaced() -> None:
    """A t interval looked at after every pair from round 2 at the full confidence (the rule
    before issue 43) decides identical software wrongly more often than 1 %: the simulation
    can fail a rule."""
    stopping = Stopping(max_rounds=40, min_rounds=2)
    false, _ = simulate(
        _recorded(),
        stopping,
        comparisons=1500,
        seed=11,
        rule=t_interval,
        looks=every_pair(stopping),
        confidence=0.95,
    )
    assert false.value > 0.01, f"{false.hits}/{false.n} comparisons"


def test_a_real_change_is_found() -> None:
    """A 15 % slowdown of every judged metric, on the same recorded noise: found at the looks
    of a 40-round cap in most comparisons (the machine's noise bounds it: this is the floor)."""
    material = _recorded()
    shift = {
        name: math.log(0.85) if "latency" not in name else math.log(1 / 0.85)
        for t in material
        for name in t.logs
    }
    nr, _ = simulate(material, Stopping(max_rounds=40), comparisons=500, seed=3, shift=shift)
    assert nr.value >= 0.5


def test_an_undecided_metric_names_the_knob_that_stopped_its_rounds() -> None:
    """ "run more rounds (--max-rounds)" when the time cap had stopped the rounds."""
    from repro.compare.pairing import paired_rule
    from repro.runs.record import RunRecord
    from repro.stats.significance import compare_paired

    rng = np.random.default_rng(3)
    a = list(100 * np.exp(rng.normal(0, 0.1, 10)))
    b = list(100 * np.exp(rng.normal(0, 0.1, 10)))
    record = RunRecord.model_validate(
        {
            "run_id": "r",
            "spec_name": "s",
            "spec_id": "a" * 64,
            "spec_path": "",
            "status": "complete",
            "started_utc": "",
            "repro_version": "t",
            "stopping": {"stopped": "the time cap (150 s) was reached", "min_rounds": 8},
        }
    )
    rule = paired_rule(record, 0.95)
    assert rule.more == "--max-time"
    timed = compare_paired(a, b, tol=0.05, confidence=0.95, more=rule.more)
    assert timed.verdict == "inconclusive"
    assert "--max-time" in timed.reason
    assert "--max-rounds" not in timed.reason
    capped = compare_paired(a, b, tol=0.05, confidence=0.95)
    assert "run more rounds (--max-rounds)" in capped.reason
