"""Integer codes as categorical columns and GROUP BY over three or more categorical columns
(issue 19, items 1 and 3(c)): answers from the synopsis against DuckDB's exact ones."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, UnsupportedQuery
from parzen.aqp.categories import discover


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def test_integer_codes_are_categorical_up_to_1000_values_unless_modelled():
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t AS SELECT 199000 + (i % 300) AS code, i % 300 AS measure, i % 1500 AS wide, "
                "i * 0.5 AS v FROM range(20000) r(i)")
    types = {"code": "BIGINT", "measure": "BIGINT", "wide": "BIGINT", "v": "DOUBLE"}
    assert discover(con, "t", types, [], modelled=["measure", "v"]) == ["code"]
    assert discover(con, "t", types, []) == ["code", "measure"]  # a column no density models: up to 1000 values


def _star(con, rows=30_000, seed=0):
    """A fact table with a date dimension (84 year-months coded 199201 ...), customers and suppliers."""
    rng = np.random.default_rng(seed)
    months = [100 * (1992 + m // 12) + m % 12 + 1 for m in range(84)]
    con.execute("CREATE TABLE dates (d_datekey INTEGER PRIMARY KEY, d_year BIGINT, d_yearmonthnum BIGINT)")
    _insert(con, "dates", pd.DataFrame({"d_datekey": np.arange(840), "d_year": [months[k // 10] // 100 for k in range(840)],
                                        "d_yearmonthnum": [months[k // 10] for k in range(840)]}))
    con.execute("CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_city VARCHAR, c_nation VARCHAR)")
    _insert(con, "customer", pd.DataFrame({"c_custkey": np.arange(300), "c_city": [f"C{k % 30:02d}" for k in range(300)],
                                           "c_nation": [f"N{k % 30 // 10}" for k in range(300)]}))
    con.execute("CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_city VARCHAR, s_nation VARCHAR)")
    _insert(con, "supplier", pd.DataFrame({"s_suppkey": np.arange(200), "s_city": [f"S{k % 20:02d}" for k in range(200)],
                                           "s_nation": [f"N{k % 20 // 10}" for k in range(200)]}))
    con.execute("CREATE TABLE lineorder (lo_orderdate INTEGER, lo_custkey INTEGER, lo_suppkey INTEGER, "
                "lo_quantity INTEGER, lo_revenue DOUBLE)")
    _insert(con, "lineorder", pd.DataFrame({
        "lo_orderdate": rng.integers(0, 840, rows), "lo_custkey": rng.integers(0, 300, rows),
        "lo_suppkey": rng.integers(0, 200, rows), "lo_quantity": rng.integers(1, 51, rows),
        "lo_revenue": rng.gamma(3.0, 100.0, rows)}))


JOINS = {"lo_orderdate": "dates.d_datekey", "lo_custkey": "customer.c_custkey", "lo_suppkey": "supplier.s_suppkey"}
FROM = ("FROM lineorder, dates, customer, supplier WHERE lo_orderdate = d_datekey AND lo_custkey = c_custkey "
        "AND lo_suppkey = s_suppkey")


@pytest.fixture(scope="module")
def star():
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("lineorder", columns=["lo_quantity", "lo_revenue"], joins=JOINS, sample=3000, seed=4)
    return e


def test_a_dimension_code_answers_equalities_and_ranges(star):
    for where in ("d_yearmonthnum = 199401", "d_yearmonthnum BETWEEN 199311 AND 199402", "d_yearmonthnum IN (199201, 199812)"):
        sql = f"SELECT COUNT(*) {FROM} AND {where}"
        assert star.query(sql).iloc[0, 0] == star.query(sql, exact=True).iloc[0, 0]  # exact: no numeric predicate
        sql = f"SELECT SUM(lo_revenue) {FROM} AND {where} AND lo_quantity < 25"
        approx, exact = star.query(sql, with_error=True), star.query(sql, exact=True).iloc[0, 0]
        assert approx.iloc[0, 1] <= exact <= approx.iloc[0, 2], (where, approx, exact)


@pytest.mark.parametrize(("where", "name"), [("AND d_nothing = 3", "d_nothing"),
                                            ("GROUP BY lo_revenue", "lo_revenue")])
def test_a_column_the_synopsis_cannot_read_so_is_refused_by_name(star, where, name):
    with pytest.raises(UnsupportedQuery, match=name):
        star.query(f"SELECT COUNT(*) {FROM} {where}")


THREE = ("SELECT c_city, s_city, d_year, COUNT(*), SUM(lo_revenue) {FROM} AND c_nation = 'N0' AND s_nation = 'N1' "
         "{extra}GROUP BY c_city, s_city, d_year").replace("{FROM}", FROM)


@pytest.fixture(scope="module")
def sparse():
    """The star schema with a sample of 400 rows of 30 000: most groups of three columns are unsampled."""
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("lineorder", columns=["lo_quantity", "lo_revenue"], joins=JOINS, sample=400, seed=1)
    return e


@pytest.mark.parametrize("extra", ["", "AND lo_quantity < 25 "])
def test_a_group_by_of_three_columns_returns_every_existing_group(sparse, extra):
    sql = THREE.replace("{extra}", extra)
    approx = sparse.query(sql, with_error=True)
    exact = sparse.query(sql, exact=True)
    keys = ["c_city", "s_city", "d_year"]
    assert approx.attrs["groups_listed"] == "superset"
    got = approx.set_index(keys)
    assert set(map(tuple, exact[keys].to_numpy().tolist())) <= set(got.index)  # every existing group
    assert len(got) == 10 * 10 * 7  # the candidates: cities of N0 x cities of N1 x years
    truth = exact.set_index(keys).reindex(got.index, fill_value=0)  # a candidate that does not exist: 0
    for name in ("count_star()", "sum(lo_revenue)"):
        low, high = got[f"{name} low"].to_numpy(float), got[f"{name} high"].to_numpy(float)
        inside = (low <= truth[name].to_numpy(float)) & (truth[name].to_numpy(float) <= high)
        assert inside.mean() >= 0.93, (name, inside.mean())


def test_unsampled_candidates_have_bounds_that_hold(sparse):
    sql = THREE.replace("{extra}", "")
    approx = sparse.query(sql, with_error=True).set_index(["c_city", "s_city", "d_year"])
    exact = sparse.query(sql, exact=True).set_index(["c_city", "s_city", "d_year"]).reindex(approx.index, fill_value=0)
    tables = sparse.synopsis("lineorder").categories
    sampled = set(zip(*(np.asarray(tables.values[c], dtype=object)[tables.codes[c]] for c in ("c_city", "s_city", "d_year"))))
    unsampled = [k for k in approx.index if k not in sampled]
    assert len(unsampled) > 300  # groups that no sampled row holds
    rule = math.log(1 - 0.95) / math.log1p(-400 / 30_000)  # more rows than this: sampled with chance >= 95 %
    assert (approx.loc[unsampled, "count_star() high"] <= rule + 1e-9).all()
    for k in unsampled:
        assert approx.loc[k, "count_star() low"] == 0 <= exact.loc[k, "count_star()"] <= approx.loc[k, "count_star() high"]
        assert approx.loc[k, "sum(lo_revenue) low"] <= exact.loc[k, "sum(lo_revenue)"] <= approx.loc[k, "sum(lo_revenue) high"]


def test_past_the_candidate_limit_the_list_is_the_sampled_groups_and_the_contract_answers_exactly(sparse, monkeypatch):
    from collections import OrderedDict

    from parzen.aqp import domains, group_candidates

    monkeypatch.setattr(group_candidates, "CANDIDATE_LIMIT", 50)
    monkeypatch.setattr(domains, "_SELECTIONS", OrderedDict())  # selections made under the real limit
    sql = THREE.replace("{extra}", "")
    approx = sparse.query(sql)
    assert approx.attrs["groups_listed"] == "sampled" and len(approx) < 10 * 10 * 7
    bounded = sparse.query(sql, max_rel_error=1e6)  # any width: only the incomplete list sends it to DuckDB
    assert bounded.attrs["form"] == "exact"
    assert len(bounded) == len(sparse.query(sql, exact=True))


def test_a_range_on_a_point_mass_column_calibrates_to_the_exact_pair_counts(star):
    """lo_quantity (50 integers) is modelled with h = 0 and categorical: its range filters by codes, so
    the pair table (d_yearmonthnum, lo_quantity) gives the domain's exact rows."""
    synopsis = star.synopsis("lineorder")
    assert synopsis.models["lo_quantity"].bandwidth == 0.0
    assert synopsis.categories.covering(["d_yearmonthnum", "lo_quantity"]) is not None
    for column, where in (("d_yearmonthnum", "d_yearmonthnum = 199401 AND lo_quantity < 25"),
                          ("d_year", "d_year IN (1993, 1995) AND lo_quantity BETWEEN 3 AND 7")):
        sql = f"SELECT COUNT(*) {FROM} AND {where}"
        assert star.query(sql).iloc[0, 0] == star.query(sql, exact=True).iloc[0, 0]
        sql = f"SELECT {column}, COUNT(*), AVG(lo_revenue) {FROM} AND {where} GROUP BY {column}"
        approx, exact = star.query(sql, with_error=True), star.query(sql, exact=True).sort_values(column)
        assert np.array_equal(approx["count_star()"].to_numpy(float), exact["count_star()"].to_numpy(float))
        assert (approx["avg(lo_revenue) low"].to_numpy() <= exact["avg(lo_revenue)"].to_numpy()).all()
        assert (exact["avg(lo_revenue)"].to_numpy() <= approx["avg(lo_revenue) high"].to_numpy()).all()


def test_a_wide_dependent_pair_is_kept_and_an_independent_one_of_that_product_is_not():
    from parzen.aqp.categories import PAIR_LIMIT, pair_order

    rng = np.random.default_rng(0)
    brand = rng.integers(0, 800, 20_000)
    sampled = {"brand": brand, "category": brand // 20, "colour": rng.integers(0, 40, 20_000)}
    values = {"brand": list(range(800)), "category": list(range(40)), "colour": list(range(40))}
    pairs = [("brand", "category"), ("brand", "colour"), ("category", "colour")]
    assert 800 * 40 > PAIR_LIMIT
    assert pair_order(pairs, values, sampled) == [("brand", "category"), ("category", "colour")]
    assert pair_order(pairs, values, None) == [("category", "colour")]


def test_garwood_factors_are_the_exact_poisson_limits_over_k():
    from scipy.stats import chi2

    from parzen.aqp.domains import garwood_factors

    k = np.array([1, 2, 5, 40])
    low, high = garwood_factors(k, 1.959963984540054)
    np.testing.assert_allclose(low, chi2.ppf(0.025, 2 * k) / 2 / k, rtol=1e-10)
    np.testing.assert_allclose(high, chi2.ppf(0.975, 2 * k + 2) / 2 / k, rtol=1e-10)
    assert abs(high[0] - 5.5716) < 1e-4 and abs(low[0] - 0.0253) < 1e-4


def test_groups_of_one_or_two_sampled_rows_are_covered(sparse):
    """Groups of ~40 rows, 1 in 75 sampled: the normal interval alone misses most groups of one row."""
    sql = ("SELECT c_city, d_year, SUM(lo_revenue), COUNT(*) " + FROM +
           " AND c_nation = 'N0' AND lo_quantity > 10 GROUP BY c_city, d_year")
    approx = sparse.query(sql, with_error=True).set_index(["c_city", "d_year"])
    exact = sparse.query(sql, exact=True).set_index(["c_city", "d_year"]).reindex(approx.index, fill_value=0)
    for name in ("sum(lo_revenue)", "count_star()"):
        inside = (approx[f"{name} low"] <= exact[name]) & (exact[name] <= approx[f"{name} high"])
        assert inside.mean() >= 0.93, (name, inside.mean())


def test_a_loaded_synopsis_answers_its_first_filter_without_building_value_indexes():
    """Loading a synopsis makes its categorical columns' value indexes and sort ranks (Categories.warm),
    so that the first query filtering or grouping by a column does not build them (they are made
    once per list of values: a later build would be another object)."""
    from unittest import mock

    from parzen.aqp import value_index

    con = duckdb.connect(":memory:")
    _star(con, rows=3000)
    con.execute("SET enable_external_access = false")
    Engine(con).build("lineorder", columns=["lo_quantity", "lo_revenue"], joins=JOINS, sample=500, seed=2)
    fresh = Engine(con)
    categories = fresh.synopsis("lineorder").categories
    ranks = {c: categories.sort_ranks(c) for c in categories.values}
    with mock.patch.object(value_index.ValueIndex, "of", side_effect=AssertionError("built in a query")):
        answer = fresh.query(f"SELECT c_nation, COUNT(*) {FROM} AND s_city = 'S03' AND lo_quantity < 25 GROUP BY c_nation")
    assert len(answer) == 3
    assert all(categories.sort_ranks(c) is ranks[c] for c in categories.values)
