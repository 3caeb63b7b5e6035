"""Student t quantiles of the effective degrees of freedom of a stratified variance (parzen.aqp.tails)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from parzen.aqp.tails import effective_df, t_quantiles


@pytest.mark.parametrize("z", [1.645, 1.96, 2.576])
def test_t_quantiles_equal_scipys_on_both_sides_of_the_expansion(z):
    df = np.array([0.5, 1.0, 2.5, 10.0, 29.9, 30.0, 31.0, 200.0, 1e7])
    expected = stats.t.ppf(stats.norm.cdf(z), df)
    np.testing.assert_allclose(t_quantiles(z, df), expected, rtol=2e-7)
    assert t_quantiles(z, np.array([np.inf, 0.0]))[0] == z == t_quantiles(z, np.array([0.0]))[0]


def _cells(groups):
    """effective_df's inputs for one stratum per answer row: V, m, sum v^2, sum v^4 per cell."""
    v = [np.asarray(g, dtype=np.float64) for g in groups]
    square = np.array([[np.sum(x * x) for x in v]])
    return (square / 10.0, np.array([[x.size for x in v]]), square, np.array([[np.sum(x**4) for x in v]]))


def test_effective_df_is_2m_over_the_borrowed_kurtosis():
    rng = np.random.default_rng(0)
    normal = [rng.standard_normal(50_000), rng.standard_normal(30)]
    df = effective_df(*_cells(normal))
    assert df[0] == pytest.approx(2 * 50_000 / 3.0, rel=0.03) and df[1] == pytest.approx(2 * 30 / 3.0, rel=0.03)
    heavy = [rng.standard_t(3, 50_000), rng.standard_normal(30)]  # the small cell borrows the large one's tail
    assert effective_df(*_cells(heavy))[1] < 0.5 * df[1]
    one = [a[:, :1] for a in _cells(normal)]
    two = effective_df(*(np.vstack([a, a]) for a in one))
    assert two[0] == pytest.approx(2 * effective_df(*one)[0], rel=1e-9)  # Satterthwaite: equal strata add their df
    assert np.isinf(effective_df(np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1))))[0]


def test_t_intervals_of_small_heavy_tailed_domains_cover_where_normal_ones_do_not():
    """Means of 20 lognormal (sigma 1.2) values: the normal interval from their own variance covers about
    85 %; Student's t of 2 m / kappa, kappa borrowed from a large sample of the same shape, >= 93 %."""
    rng = np.random.default_rng(1)
    sigma, n, runs = 1.2, 20, 4000
    mean = np.exp(sigma**2 / 2)
    large = rng.lognormal(0.0, sigma, 200_000) - mean
    kappa = np.mean(large**4) / np.mean(large**2) ** 2
    samples = rng.lognormal(0.0, sigma, (runs, n))
    se = samples.std(axis=1, ddof=1) / np.sqrt(n)
    error = np.abs(samples.mean(axis=1) - mean)
    assert np.mean(error <= 1.96 * se) < 0.88
    q = t_quantiles(1.96, np.array([2 * n / kappa]))[0]
    assert np.mean(error <= q * se) >= 0.93


def test_a_sum_has_the_same_t_interval_with_other_aggregates_beside_it():
    """The plain aggregates of a query that also asks MIN / MAX / VAR (parzen.aqp.aggregates) take Student's t
    as a query of them alone does (parzen.aqp.answers), not z: an interval must not narrow because another
    aggregate was selected (heavy-tailed y, a narrow box of about 30 sampled rows)."""
    import duckdb
    import pandas as pd

    from parzen.aqp import Engine

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(0, 1000, 200_000), "y": rng.standard_t(2.5, 200_000) * 10})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    engine = Engine(con)
    engine.build("t", sample=20_000, grid=0)
    where = "WHERE x BETWEEN 100 AND 101.5"
    alone = engine.query(f"SELECT COUNT(*) AS n, SUM(y) AS s FROM t {where}", with_error=True)
    beside = engine.query(f"SELECT COUNT(*) AS n, SUM(y) AS s, MAX(y) AS m FROM t {where}", with_error=True)
    for name in ("n", "s"):
        for column in (name, f"{name} low", f"{name} high"):
            assert beside[column][0] == pytest.approx(alone[column][0], rel=1e-12), column


def test_the_degrees_of_freedom_of_many_strata_and_groups_need_no_strata_by_groups_table():
    """A GROUP BY on the strata columns of a synopsis of thousands of strata: each stratum feeds one answer
    row, so the cells are the strata (not a strata x answer rows table: 10 000 strata would be 800 MB a
    table); the result equals effective_df's on the dense table."""
    import tracemalloc
    from types import SimpleNamespace

    from parzen.aqp.answers import _stratified_df

    rng = np.random.default_rng(5)
    strata = 3000
    drawn = rng.integers(1, 6, strata).astype(np.float64)
    layout = SimpleNamespace(keys=[None] * strata, drawn=drawn, rows=drawn * rng.integers(2, 50, strata))
    stratum = np.repeat(np.arange(strata), drawn.astype(np.intp))
    values = rng.standard_t(3, stratum.size) * (rng.random(stratum.size) < 0.7)
    output_of_stratum = rng.permutation(strata)  # one answer row per stratum, in another order
    output_of_stratum[::17] = -1  # strata the query leaves out
    tracemalloc.start()
    got = _stratified_df(values, stratum, layout, output_of_stratum, strata)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * strata * strata / 4  # far below one dense (strata, answer rows) table of float64
    small = 60
    keep = stratum < small
    sub = SimpleNamespace(keys=[None] * small, drawn=drawn[:small], rows=layout.rows[:small])
    out = output_of_stratum[:small] % 7  # several strata per answer row
    expected = _dense_df(values[keep], stratum[keep], sub, out, 7)
    np.testing.assert_allclose(_stratified_df(values[keep], stratum[keep], sub, out, 7), expected, rtol=1e-12)
    assert np.isfinite(got).any()


def _dense_df(values, stratum, layout, output_of_stratum, groups):
    """effective_df on the dense (strata, answer rows) table, as the cells are defined (the reference)."""
    strata = len(layout.keys)
    n, rows = layout.drawn, layout.rows
    s1 = np.bincount(stratum, weights=values, minlength=strata)
    s2 = np.bincount(stratum, weights=values * values, minlength=strata)
    s4 = np.bincount(stratum, weights=values**4, minlength=strata)
    carrying = np.bincount(stratum, weights=(values != 0.0).astype(np.float64), minlength=strata)
    var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / np.where(n > 1, n - 1, 1.0), 0.0)
    contribution = np.nan_to_num(rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows))
    grids = []
    for per_stratum in (contribution, carrying, s2, s4):
        grid = np.zeros((strata, groups))
        used = output_of_stratum >= 0
        grid[np.flatnonzero(used), output_of_stratum[used]] = per_stratum[used]
        grids.append(grid)
    return effective_df(*grids)


def test_domain_spread_reads_only_the_cells_that_hold_rows():
    """Domains (categorical GROUP BY outside the strata): the variance and degrees of freedom per domain from
    the (stratum, domain) cells that hold sampled rows, equal to the dense (strata, domains) tables' and
    without them (3 000 strata x 3 000 domains would be 72 MB a table)."""
    import tracemalloc
    from types import SimpleNamespace

    from parzen.aqp.domains import _domain_variance, domain_spread

    rng = np.random.default_rng(8)

    def case(strata, groups, rows):
        drawn = np.bincount(rng.integers(0, strata, rows), minlength=strata).astype(np.float64) + 1.0
        layout = SimpleNamespace(drawn=drawn, rows=drawn * rng.integers(1, 40, strata))
        stratum = np.repeat(np.arange(strata), drawn.astype(np.intp))
        keep = rng.random(stratum.size) < 0.8
        stratum = stratum[keep]
        return layout, stratum, rng.integers(0, groups, stratum.size), rng.standard_t(3, stratum.size)

    layout, stratum, group, values = case(40, 9, 3000)
    n, rows = layout.drawn[:, None], layout.rows[:, None]
    cell = stratum * 9 + group
    tables = [np.bincount(cell, weights=w, minlength=360).reshape(40, 9)
              for w in (values, values * values, np.ones_like(values), values**4)]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(tables[1] - tables[0] ** 2 / n, 0.0) / (n - 1), 0.0)
        dense = np.nan_to_num(rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows))
    variance, df = domain_spread(values, stratum, group, layout, 40, 9)
    np.testing.assert_allclose(variance, dense.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(_domain_variance(values, stratum, group, layout, 40, 9), dense.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(df, effective_df(dense, tables[2], tables[1], tables[3]), rtol=1e-12)

    layout, stratum, group, values = case(3000, 3000, 20_000)
    tracemalloc.start()
    domain_spread(values, stratum, group, layout, 3000, 3000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * 3000 * 3000 / 4


def test_t_quantile_of_one_answer_row_is_the_arrays():
    """t_quantiles of one degrees of freedom (one answer row: Python floats) is bit for bit its value in an
    array of several (NumPy's path): many rows, few (SciPy's inverse), at the expansion's edge, and inf, NaN,
    0 and negative degrees of freedom (z itself)."""
    from parzen.aqp.tails import EXPANDED_FROM

    for z in (1.959963984540054, 2.5758293035489004, 1.0):
        for d in (EXPANDED_FROM, np.nextafter(EXPANDED_FROM, 0.0), 30.5, 45.25, 1e3, 123456.7, 1e300, 3.5, 0.5,
                  np.inf, np.nan, 0.0, -2.0):
            one = t_quantiles(z, np.array([d]))
            several = t_quantiles(z, np.array([d, 7.0, np.inf]))
            assert one.shape == (1,) and one.dtype == np.float64
            np.testing.assert_array_equal(one, several[:1])
