"""The verdict statistics on seeded synthetic samples with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from repro.stats.histogram import LatencyHistogram
from repro.stats.significance import compare_accuracy, compare_percentile, compare_runs


def _normal(mean: float, sd: float, n: int, seed: int) -> list[float]:
    return list(np.random.Generator(np.random.PCG64(seed)).normal(mean, sd, n))


def test_same_distribution_with_many_runs_is_reproduced() -> None:
    c = compare_runs(_normal(100, 0.5, 8, 1), _normal(100, 0.5, 8, 2), tol=0.05)
    assert c.verdict == "reproduced"
    assert c.method == "bootstrap-runs"
    assert c.ci is not None
    assert -0.05 < c.ci[0] < 0 < c.ci[1] < 0.05


def test_a_20_percent_drop_is_not_reproduced() -> None:
    c = compare_runs(_normal(100, 0.5, 5, 1), _normal(80, 0.5, 5, 2), tol=0.05)
    assert c.verdict == "not reproduced"
    assert c.delta_rel == pytest.approx(-0.2, abs=0.01)
    assert "lower" in c.reason


def test_noisy_runs_are_inconclusive_with_a_detectable_difference() -> None:
    c = compare_runs(_normal(100, 10, 2, 3), _normal(103, 10, 2, 4), tol=0.05)
    assert c.verdict == "inconclusive"
    assert c.mde_rel is not None
    assert c.mde_rel > 0.05
    assert "could only detect" in c.reason


def test_one_run_each_is_a_labelled_point_comparison() -> None:
    near = compare_runs([100.0], [103.0], tol=0.05)
    far = compare_runs([100.0], [108.0], tol=0.05)
    assert (near.verdict, near.method, near.ci) == ("reproduced", "point", None)
    assert far.verdict == "not reproduced"
    assert "point comparison" in far.reason


def test_one_side_single_run_borrows_the_other_sides_noise() -> None:
    c = compare_runs(_normal(100, 0.3, 5, 5), [100.5], tol=0.05)
    assert c.method == "pooled-noise"
    assert c.verdict == "reproduced"


def test_histogram_percentiles_are_within_a_tenth_of_a_percent() -> None:
    lat = np.random.Generator(np.random.PCG64(7)).lognormal(np.log(2e6), 0.4, 200_000)
    h = LatencyHistogram.from_latencies(lat)
    for q in (50, 90, 99):
        assert h.percentile(q) == pytest.approx(np.percentile(lat, q), rel=1e-3)
    assert h.total == 200_000


def _hist(scale: float, seed: int) -> LatencyHistogram:
    rng = np.random.Generator(np.random.PCG64(seed))
    return LatencyHistogram.from_latencies(rng.lognormal(np.log(1e6 * scale), 0.2, 50_000))


def test_percentile_bootstrap_reproduced_and_not() -> None:
    same = compare_percentile(_hist(1.0, 1), _hist(1.0, 2), 90, tol=0.10)
    slower = compare_percentile(_hist(1.0, 1), _hist(1.3, 2), 90, tol=0.10)
    assert same.verdict == "reproduced"
    assert same.method == "bootstrap-queries"
    assert slower.verdict == "not reproduced"
    assert slower.delta_rel == pytest.approx(0.3, abs=0.02)


def test_accuracy_follows_mlperfs_99_percent_rule() -> None:
    assert compare_accuracy(0.97, 0.961, ratio=0.99).verdict == "reproduced"
    assert compare_accuracy(0.97, 0.95, ratio=0.99).verdict == "not reproduced"


def test_few_runs_use_a_pooled_t_interval_with_the_textbook_width() -> None:
    # relative sd 1 %, 3 runs a side: se = 0.01 * sqrt(2/3), t(0.975, df=4) = 2.7764
    c = compare_runs([100.0, 101.0, 99.0], [100.0, 101.0, 99.0], tol=0.05)
    assert c.method == "student-t"
    assert c.verdict == "reproduced"
    assert c.ci == pytest.approx((-0.022670, 0.022670), abs=1e-5)


def test_edge_of_tolerance_is_explained_as_such() -> None:
    c = compare_runs([100.0, 100.5, 99.5], [105.5, 106.0, 105.0], tol=0.05)
    assert c.verdict == "inconclusive"
    assert "edge" in c.reason
