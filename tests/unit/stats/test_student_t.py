"""The t quantiles the report uses, against scipy's (scipy stays out of the report's path)."""

from __future__ import annotations

import math

import pytest

from repro.stats.student_t import t_cdf, t_ppf

stats = pytest.importorskip("scipy.stats", reason="scipy is the reference to check against")

DFS = [*range(1, 41), 57, 99, 100, 101, 500, 1999, 2000, 2001, 50_000]
PS = [1e-6, 0.025, 0.2, 0.5, 0.6, 0.8, 0.9, 0.95, 0.975, 0.99, 0.9995]


@pytest.mark.parametrize("df", DFS)
def test_quantiles_match_scipy(df: int) -> None:
    for p in PS:
        assert t_ppf(p, df) == pytest.approx(float(stats.t.ppf(p, df)), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 30, 1000])
def test_cdf_matches_scipy_and_inverts_the_quantile(df: int) -> None:
    for t in (-40.0, -2.0, -0.1, 0.0, 0.5, 2.1, 40.0):
        assert t_cdf(t, df) == pytest.approx(float(stats.t.cdf(t, df)), abs=1e-12)
    assert t_cdf(t_ppf(0.975, df), df) == pytest.approx(0.975, abs=1e-12)


@pytest.mark.parametrize(("p", "df"), [(0.0, 3), (1.0, 3), (math.nan, 3), (0.9, 0), (0.9, 2.5)])
def test_rejects_what_has_no_quantile(p: float, df: float) -> None:
    with pytest.raises(ValueError, match="must"):
        t_ppf(p, df)  # type: ignore[arg-type]
