from repro.stats.dominance import Estimate, interval_front


def test_the_interval_of_a_positive_measure_stays_positive_and_holds_the_mean() -> None:
    # two rounds of a throughput that moved threefold: a t-interval on the values goes below 0
    est = Estimate.of([100_000.0, 300_000.0])
    assert 0 < est.lo < est.mean < est.hi
    assert est.mean == 200_000.0


def test_equal_values_give_an_interval_of_one_point_about_the_mean() -> None:
    est = Estimate.of([0.1, 0.1, 0.1])
    assert est.lo <= est.mean <= est.hi
    assert est.hi - est.lo < 1e-12


def test_a_measure_that_crosses_zero_keeps_the_plain_interval() -> None:
    est = Estimate.of([-1.0, 1.0, 3.0])
    assert est.lo < -1.0
    assert est.hi > 3.0


def test_a_candidate_is_dominated_only_beyond_both_intervals() -> None:
    fast = [Estimate.of([10.0, 11.0, 10.5])]
    slow = [Estimate.of([5.0, 5.5, 5.2])]
    close = [Estimate.of([9.0, 12.0, 10.0])]
    out = interval_front({0: fast, 1: slow, 2: close}, [True])
    assert out[1] == "dominated"
    assert out[0] == "front"
    assert out[2] == "tied"
