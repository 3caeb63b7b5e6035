"""The compiled per-row passes of the AQP answers give NumPy's floats bit for bit."""

import numpy as np

from parzen.aqp._cell_sums import cell_sums, domain_cell_sums
from parzen.aqp._row_polynomials import polynomial_rows


def test_polynomial_rows_are_numpys_monomial_sums():
    """SUM(c0 x + c1 x y^2 + c2 y) with a range column's factor: the terms and validity of
    _SampleTerms.monomial's NumPy expression, NULLs (NaN) and infinities included."""
    rng = np.random.default_rng(3)
    data = rng.standard_normal((3, 500)) * 1e3
    data[0, rng.integers(0, 500, 40)] = np.nan
    data[1, rng.integers(0, 500, 40)] = np.nan
    data[1, 7], data[0, 9] = np.inf, -np.inf
    rows = np.sort(rng.choice(500, 300, replace=False)).astype(np.intp)
    mass = rng.random(rows.size)
    x, y = data[0][rows], data[1][rows]
    valid = np.ones(rows.size) * ~np.isnan(x) * ~np.isnan(y)
    coefficients = [1.5, -1.0, 0.25]
    monomials = [valid * mass * np.nan_to_num(x) ** 1,
                 valid * mass * (np.nan_to_num(x) - 0.0) ** 1 * (np.nan_to_num(y) - 0.0) ** 2,
                 valid * mass * np.nan_to_num(y) ** 1]
    expected = np.zeros(rows.size)
    for c, m in zip(coefficients, monomials):
        expected = expected + c * m
    with np.errstate(over="ignore", invalid="ignore"):
        terms, got_valid = polynomial_rows(rows, data, np.array([0, 1]), np.array(coefficients), mass[None, :],
                                           np.zeros(3, dtype=np.intp), np.array([0, 1, 2, 3]),
                                           np.array([0, 0, 1, 1]), np.array([1, 1, 2, 1]), np.array([0, 1, 3, 4]))
    np.testing.assert_array_equal(got_valid, valid)
    np.testing.assert_array_equal(terms, expected)


def test_cell_sums_are_bincounts():
    """Per cell: rows, sums of v, v^2, v^4 and rows with v != 0, as np.bincount adds them (same floats)."""
    rng = np.random.default_rng(4)
    values = rng.standard_t(3, 2000) * 1e5
    values[rng.integers(0, 2000, 200)] = 0.0
    stratum = rng.integers(0, 13, 2000).astype(np.intp)
    group = rng.integers(0, 5, 2000).astype(np.intp)
    rows, s1, s2, s4, carrying = cell_sums(values, stratum, 13)
    np.testing.assert_array_equal(rows, np.bincount(stratum, minlength=13))
    np.testing.assert_array_equal(s1, np.bincount(stratum, weights=values, minlength=13))
    np.testing.assert_array_equal(s2, np.bincount(stratum, weights=values * values, minlength=13))
    np.testing.assert_array_equal(s4, np.bincount(stratum, weights=(values * values) ** 2, minlength=13))
    np.testing.assert_array_equal(carrying, np.bincount(stratum, weights=values != 0.0, minlength=13))
    keep = stratum != 4  # a stratum without rows: its cells are left out
    ids, rows, s1, s2, s4 = domain_cell_sums(values[keep], stratum[keep], group[keep], 5, 65)
    cell = stratum[keep] * 5 + group[keep]
    present = np.flatnonzero(np.bincount(cell, minlength=65))
    np.testing.assert_array_equal(ids, present)
    np.testing.assert_array_equal(rows, np.bincount(cell, minlength=65)[present])
    np.testing.assert_array_equal(s1, np.bincount(cell, weights=values[keep], minlength=65)[present])
    np.testing.assert_array_equal(s4, np.bincount(cell, weights=(values[keep] * values[keep]) ** 2, minlength=65)[present])


def test_add_scaled_and_terms_of_kept_are_numpys():
    """z += factor[group] * term, and the kept rows' terms read from rows in any order (kernels' candidate
    rows come sorted by value), as the NumPy expressions they replace."""
    from parzen.aqp._cell_sums import add_scaled, terms_of_kept

    rng = np.random.default_rng(5)
    z, term = rng.standard_normal(1000), rng.standard_normal(1000) * 1e4
    factor, group = rng.standard_normal(7), rng.integers(0, 7, 1000).astype(np.intp)
    expected = z.copy()
    expected += factor[group] * term
    add_scaled(z, factor, group, term)
    np.testing.assert_array_equal(z, expected)
    from parzen.aqp._cell_sums import add_scaled_kept

    mask = rng.random(1000) < 0.4
    term[3], term[5] = np.nan, -np.inf  # NaN or inf times 0.0 stays NaN, as in the product
    mask[3], mask[5] = False, False
    with np.errstate(invalid="ignore"):
        expected += factor[group] * (term * mask.astype(np.float64))
    add_scaled_kept(z, factor, group, term, mask)
    np.testing.assert_array_equal(z, expected)
    assert np.isnan(z[3]) and np.isnan(z[5])

    keep = rng.random(1000) < 0.3
    kept = np.flatnonzero(keep).astype(np.intp)
    rows = rng.permutation(1000)[:600].astype(np.intp)  # not ascending
    terms, masses, valid = rng.standard_normal(600), rng.random(600), (rng.random(600) < 0.9).astype(np.float64)
    inside = keep[rows]
    at = np.searchsorted(kept, rows[inside])
    want_terms, want_counts = np.zeros(kept.size), np.zeros(kept.size)
    want_terms[at], want_counts[at] = terms[inside], (masses * valid)[inside]
    got_terms, got_counts = terms_of_kept(rows, keep, kept, terms, masses, valid)
    np.testing.assert_array_equal(got_terms, want_terms)
    np.testing.assert_array_equal(got_counts, want_counts)


def test_sums_on_the_rows_where_z_may_not_be_zero_are_those_over_every_row():
    """z built on some rows only (add_scaled_rows / add_scaled_kept_rows: z is +0.0 on the others) and its
    per-stratum sums over those rows taken in ascending order as runs (stratum_sums_of_runs) are the floats
    of add_scaled / add_scaled_kept and domain_cell_sums over every row."""
    from parzen.aqp._cell_sums import (
        add_scaled,
        add_scaled_kept,
        add_scaled_kept_rows,
        add_scaled_rows,
        stratum_sums_of_runs,
    )

    rng = np.random.default_rng(6)
    n, strata = 3000, 9
    stratum = np.sort(rng.integers(0, strata, n)).astype(np.intp)  # runs, as Synopsis.strata has them
    stratum[stratum == 4] = 5  # a stratum without rows
    rows = np.flatnonzero(rng.random(n) < 0.45).astype(np.intp)
    first, second = np.zeros(n), np.zeros(n)
    first[rows], second[rows] = rng.standard_t(3, rows.size) * 1e3, rng.standard_normal(rows.size)
    second[rows[7]] = np.nan
    mask = rng.random(n) < 0.3
    z = np.zeros(n)
    add_scaled(z, np.array([-1.7]), np.zeros(n, dtype=np.intp), first)
    add_scaled_kept(z, np.array([0.3]), np.zeros(n, dtype=np.intp), second, mask)
    on_rows = np.zeros(rows.size)
    add_scaled_rows(on_rows, -1.7, first, rows)
    add_scaled_kept_rows(on_rows, 0.3, second, mask, rows)
    np.testing.assert_array_equal(on_rows, z[rows])
    assert (z[np.setdiff1d(np.arange(n), rows)] == 0.0).all()
    ids, counts, s1, s2, s4 = domain_cell_sums(z, stratum, np.zeros(n, dtype=np.intp), 1, strata)
    runs = np.searchsorted(rows, np.concatenate([[0], np.cumsum(np.bincount(stratum, minlength=strata))]))
    sums = stratum_sums_of_runs(on_rows, runs)
    np.testing.assert_array_equal(ids, np.flatnonzero(np.bincount(stratum, minlength=strata)))
    np.testing.assert_array_equal(counts, np.bincount(stratum)[ids])  # each stratum's rows: its drawn rows
    for got, want in zip(sums, (s1, s2, s4)):
        np.testing.assert_array_equal(got[ids], want)


def test_the_last_leaf_added_in_the_sums_pass_gives_the_sums_of_z():
    """stratum_sums_of_last_scaled (the last leaf of z added in the pass that sums z per stratum) gives the
    floats of add_scaled_rows / add_scaled_kept_rows of that leaf followed by stratum_sums_of_runs, with and
    without a categorical filter, NaN and -0.0 terms included."""
    from parzen.aqp._cell_sums import (
        add_scaled_kept_rows,
        add_scaled_rows,
        stratum_sums_of_last_scaled,
        stratum_sums_of_runs,
    )

    rng = np.random.default_rng(7)
    n, strata = 3000, 9
    stratum = np.sort(rng.integers(0, strata, n)).astype(np.intp)
    stratum[stratum == 4] = 5  # a stratum without rows
    rows = np.flatnonzero(rng.random(n) < 0.45).astype(np.intp)
    runs = np.searchsorted(rows, np.concatenate([[0], np.cumsum(np.bincount(stratum, minlength=strata))]))
    first, last = np.zeros(n), np.zeros(n)
    first[rows], last[rows] = rng.standard_t(3, rows.size) * 1e3, rng.standard_normal(rows.size) * 1e-3
    last[rows[7]], last[rows[11]], first[rows[11]] = np.nan, -0.0, 0.0
    mask = rng.random(n) < 0.3
    for keep in (None, mask):
        z = np.zeros(rows.size)
        add_scaled_rows(z, -1.7, first, rows)
        before = z.copy()
        got = stratum_sums_of_last_scaled(z, 0.3, last, np.zeros(0, dtype=bool) if keep is None else keep,
                                          keep is not None, rows, runs)
        np.testing.assert_array_equal(z, before)  # z is read only
        if keep is None:
            add_scaled_rows(z, 0.3, last, rows)
        else:
            add_scaled_kept_rows(z, 0.3, last, keep, rows)
        for g, w in zip(got, stratum_sums_of_runs(z, runs)):
            assert g.tobytes() == w.tobytes()


def test_one_domains_spread_is_the_numpy_expressions():
    """The variance and effective degrees of freedom of one domain (domain_spread_of_cells with groups=1,
    compiled: _cell_sums.one_domain_cells / one_domain_df) are the floats of the NumPy path
    (_variances_of_cells, np.bincount, tails.effective_df_of_cells): strata drawn whole or of one row, cells
    without a spread, huge terms whose contributions overflow, NaN and infinite sums, more than 8 shown
    cells (NumPy's pairwise sum of the kurtosis terms) and none."""
    from types import SimpleNamespace

    from parzen.aqp import domains
    from parzen.aqp.tails import effective_df_of_cells

    rng = np.random.default_rng(11)

    def numpy_path(sums, layout):
        group_of_cell, contribution, rows, square, fourth = domains._variances_of_cells(sums, layout, 1)
        return (np.bincount(group_of_cell, weights=contribution, minlength=1),
                effective_df_of_cells(group_of_cell, 1, contribution, rows, square, fourth))

    cases = 0
    for strata in (1, 3, 8, 21, 40, 300):
        for kind in ("plain", "edges", "none shown", "overflow"):
            drawn = rng.integers(1, 50, strata).astype(np.float64)
            drawn[rng.random(strata) < 0.2] = 1.0
            table_rows = drawn * rng.integers(1, 100, strata)
            whole = rng.random(strata) < 0.2
            table_rows[whole] = drawn[whole]  # strata drawn whole: no contribution
            ids = np.flatnonzero(rng.random(strata) < 0.8)
            rows = np.minimum(drawn[ids], rng.integers(0, 50, ids.size)).astype(np.float64)
            s1 = rng.normal(0.0, 1e3, ids.size) * rows
            s2 = s1 * s1 / np.maximum(rows, 1.0) + rng.gamma(1.0, 1e5, ids.size) * rows
            s4 = s2 * s2 * rng.uniform(1.0, 9.0, ids.size)
            if kind == "edges" and ids.size > 2:
                s2[0], s1[1], s4[2] = 0.0, np.nan, np.inf
            if kind == "none shown":
                s2[:] = 0.0
            with np.errstate(over="ignore"):
                if kind == "overflow":
                    s1, s2, s4 = s1 * 1e150, s2 * 1e300, s4 * 1e300
            layout = SimpleNamespace(drawn=drawn, rows=table_rows)
            sums = (ids, rows, s1, s2, s4)
            with np.errstate(all="ignore"):
                expected = numpy_path(sums, layout)
                got = domains._one_domain_spread_of_cells(sums, layout) if ids.size else \
                    domains.domain_spread_of_cells(sums, layout, 1)
            for a, b in zip(got, expected):
                assert a.dtype == b.dtype and a.shape == b.shape == (1,)
                np.testing.assert_array_equal(a, b)
                assert np.signbit(a) == np.signbit(b)
            cases += 1
    assert cases == 24
    nothing = (np.zeros(0, dtype=np.intp), *(np.zeros(0) for _ in range(4)))  # no cell: NumPy's integer zeros
    layout = SimpleNamespace(drawn=np.ones(2), rows=np.ones(2))
    for a, b in zip(domains.domain_spread_of_cells(nothing, layout, 1), numpy_path(nothing, layout)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_weighted_total_is_one_groups_bincount():
    """_cell_sums.weighted_total (a one-domain answer's total, domains._estimates) is np.bincount's sum of the
    rounded products of one group, bit for bit: NaN and infinite terms, -0.0, and large and tiny magnitudes."""
    from parzen.aqp._cell_sums import weighted_total

    rng = np.random.default_rng(5)
    for size in (1, 7, 8, 9, 1000, 16_764):
        weight = rng.uniform(1.0, 400.0, size)
        values = rng.standard_normal(size) * 10.0 ** rng.integers(-200, 200, size)
        for special in ((), (np.nan,), (np.inf,), (-0.0,)):
            v = values.copy()
            v[: len(special)] = special
            expected = np.bincount(np.zeros(size, dtype=np.intp), weights=weight * v, minlength=1)
            got = np.array([weighted_total(weight, v)])
            np.testing.assert_array_equal(got, expected)
            assert np.signbit(got) == np.signbit(expected)


def test_two_leaves_summed_in_one_pass_give_the_sums_of_z():
    """stratum_sums_of_two_scaled (a ratio's z of two leaves made and summed in one pass) gives the floats
    of add_scaled_rows / add_scaled_kept_rows of the first leaf onto zeros followed by
    stratum_sums_of_last_scaled of the second, with and without each leaf's categorical filter, NaN,
    infinite and -0.0 terms, factors 0.0 and -0.0, one row, and no row at all."""
    from parzen.aqp._cell_sums import (
        add_scaled_kept_rows,
        add_scaled_rows,
        stratum_sums_of_last_scaled,
        stratum_sums_of_two_scaled,
    )

    rng = np.random.default_rng(11)
    n, strata = 3000, 9
    stratum = np.sort(rng.integers(0, strata, n)).astype(np.intp)
    stratum[stratum == 4] = 5  # a stratum without rows
    starts = np.concatenate([[0], np.cumsum(np.bincount(stratum, minlength=strata))])
    first, last = np.zeros(n), np.zeros(n)
    every = np.arange(n)
    first[every], last[every] = rng.standard_t(3, n) * 1e3, rng.standard_normal(n) * 1e-3
    last[7], last[11], first[11], first[13], last[13] = np.nan, -0.0, -0.0, np.inf, -0.0
    masks = [None, rng.random(n) < 0.3, np.zeros(n, dtype=bool)]
    no_keep = np.zeros(0, dtype=bool)
    row_sets = [np.flatnonzero(rng.random(n) < 0.45).astype(np.intp), np.array([11], dtype=np.intp),
                np.array([13], dtype=np.intp), np.zeros(0, dtype=np.intp)]
    for rows in row_sets:
        runs = np.searchsorted(rows, starts)
        for first_keep in masks:
            for keep in masks:
                for first_factor, factor in ((-1.7, 0.3), (0.0, -0.0), (-0.0, 2.5), (1e300, 1e300)):
                    z = np.zeros(rows.size)
                    if first_keep is None:
                        add_scaled_rows(z, first_factor, first, rows)
                    else:
                        add_scaled_kept_rows(z, first_factor, first, first_keep, rows)
                    want = stratum_sums_of_last_scaled(z, factor, last, no_keep if keep is None else keep,
                                                       keep is not None, rows, runs)
                    got = stratum_sums_of_two_scaled(first_factor, first, no_keep if first_keep is None else first_keep,
                                                     first_keep is not None, factor, last,
                                                     no_keep if keep is None else keep, keep is not None, rows, runs)
                    for g, w in zip(got, want):
                        assert g.tobytes() == w.tobytes()
