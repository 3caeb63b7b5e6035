"""Exact aggregate tables that keep only the measures listed with them (``cube=[{"columns": [...],
"measures": [...]}]``, parzen.aqp.cubes): answers, bytes, the choice of a table, roll-ups, storage,
refresh after appends and the refusal of bad entries.

A generated star schema in DuckDB: fact ``lineorder`` -> ``dates`` (year-month -> year) and
``customer`` (city -> nation), three measures (``lo_tax`` with NULLs).  Answers from the tables are
compared with DuckDB's.
"""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from frames import assert_answered_from_the_tables

from parzen.aqp import Engine, SynopsisRebuiltWarning, cubes
from parzen.aqp.cube_answers import FORM
from parzen.aqp.synopsis import Synopsis

JOINS = {"lo_orderdate": "dates.d_datekey", "lo_custkey": "customer.c_custkey"}
FROM = "FROM lineorder, dates, customer WHERE lo_orderdate = d_datekey AND lo_custkey = c_custkey"
MEASURES = ["lo_revenue", "lo_cost", "lo_tax"]
REVENUE_BY_CITY = {"columns": ["d_year", "c_city"], "measures": ["lo_revenue"]}
ON_CITIES = f"{FROM} AND c_city IN ('C01', 'C07', 'C13')"


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _facts(rng, rows, null_cost=0.0):
    tax = rng.gamma(2.0, 3.0, rows)
    tax[rng.random(rows) < 0.1] = np.nan
    cost = rng.gamma(2.0, 50.0, rows)
    cost[rng.random(rows) < null_cost] = np.nan
    return pd.DataFrame({"lo_orderdate": rng.integers(0, 360, rows), "lo_custkey": rng.integers(0, 240, rows),
                         "lo_revenue": rng.gamma(3.0, 100.0, rows),
                         "lo_cost": pd.array(cost, dtype="Float64").fillna(pd.NA),
                         "lo_tax": pd.array(tax, dtype="Float64").fillna(pd.NA)})


def _star(con, rows=20_000, seed=0):
    months = [100 * (1992 + m // 12) + m % 12 + 1 for m in range(36)]
    con.execute("CREATE TABLE dates (d_datekey INTEGER PRIMARY KEY, d_year BIGINT, d_yearmonthnum BIGINT)")
    _insert(con, "dates", pd.DataFrame({"d_datekey": np.arange(360), "d_year": [months[k // 10] // 100 for k in range(360)],
                                        "d_yearmonthnum": [months[k // 10] for k in range(360)]}))
    con.execute("CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_city VARCHAR, c_nation VARCHAR)")
    _insert(con, "customer", pd.DataFrame({"c_custkey": np.arange(240), "c_city": [f"C{k % 24:02d}" for k in range(240)],
                                           "c_nation": [f"N{k % 24 // 4}" for k in range(240)]}))
    con.execute("CREATE TABLE lineorder (lo_orderdate INTEGER, lo_custkey INTEGER, lo_revenue DOUBLE, "
                "lo_cost DOUBLE, lo_tax DOUBLE)")
    _insert(con, "lineorder", _facts(np.random.default_rng(seed), rows))


def _engine(cube, con=None):
    con = con or duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")  # exact=True runs SQL only then
    e = Engine(con)
    e.build("lineorder", columns=MEASURES, joins=JOINS, sample=2000, seed=3, grid=0, cube=cube)
    return e


def _table(engine, columns):
    synopsis = engine.synopsis("lineorder")
    return next(t for t in synopsis.cube.tables if set(t.columns) == set(columns))


def _same(engine, sql, keys=()):
    """Assert that ``sql`` is answered from the tables, as DuckDB answers it (sums of a few hundred rows: to
    1e-12)."""
    assert_answered_from_the_tables(engine, sql, keys, rtol=1e-12)


@pytest.fixture(scope="module")
def revenue_only():
    return _engine([REVENUE_BY_CITY])


def test_a_table_keeping_one_measure_answers_its_sums_exactly(revenue_only):
    table = _table(revenue_only, REVENUE_BY_CITY["columns"])
    assert table.measures == ("lo_revenue",) and table.nullable == ()
    assert table.sums.shape == (table.rows.size, 1) and table.counts.shape == (table.rows.size, 0)
    _same(revenue_only, f"SELECT d_year, SUM(lo_revenue), AVG(lo_revenue), COUNT(*) {ON_CITIES} GROUP BY d_year",
          ["d_year"])
    _same(revenue_only, f"SELECT c_nation, SUM(lo_revenue) {FROM} AND d_year = 1993 GROUP BY c_nation", ["c_nation"])
    _same(revenue_only, f"SELECT COUNT(*) {ON_CITIES} AND d_year >= 1993")


def test_a_table_keeping_one_measure_takes_its_bytes_only(revenue_only):
    """Per cell, 8 bytes for its measure's sum instead of 8 per measure and 8 per measure with NULLs
    (lo_tax): 2 x 2 bytes of codes + 8 rows + 8 = 20 bytes instead of 44."""
    every = _engine([REVENUE_BY_CITY["columns"]])
    mine, full = _table(revenue_only, REVENUE_BY_CITY["columns"]), _table(every, REVENUE_BY_CITY["columns"])
    assert full.measures == tuple(MEASURES) and full.nullable == ("lo_tax",)
    np.testing.assert_array_equal(mine.codes, full.codes)
    np.testing.assert_array_equal(mine.rows, full.rows)
    np.testing.assert_allclose(mine.sums[:, 0], full.sums[:, 0], rtol=1e-12)
    cells = mine.rows.size
    assert mine.nbytes == cells * 20 and full.nbytes == cells * 44
    assert revenue_only.synopsis("lineorder").cube.nbytes == every.synopsis("lineorder").cube.nbytes - cells * 24


@pytest.mark.parametrize("aggregates", [
    "SUM(lo_cost)", "AVG(lo_tax)", "COUNT(lo_tax)", "SUM(lo_revenue - lo_cost)", "SUM(lo_revenue), SUM(lo_cost)",
    "SUM(lo_revenue) / SUM(lo_cost)", "SUM(CASE WHEN c_city = 'C01' THEN lo_cost ELSE 0 END)",
])
def test_a_query_summing_a_measure_the_table_does_not_keep_is_not_answered_from_it(revenue_only, aggregates):
    answer = revenue_only.query(f"SELECT d_year, {aggregates} {ON_CITIES} GROUP BY d_year")
    assert answer.attrs["form"] != FORM


def test_case_and_ratios_of_the_kept_measure_are_answered_from_it(revenue_only):
    _same(revenue_only, f"SELECT d_year, SUM(CASE WHEN c_city = 'C01' THEN lo_revenue ELSE 0 END) AS one, "
                        f"SUM(lo_revenue) / COUNT(*) AS per_row {ON_CITIES} GROUP BY d_year", ["d_year"])


def test_another_table_that_keeps_the_measure_answers():
    """A query summing lo_cost skips the smaller table keeping lo_revenue only for one that keeps it."""
    e = _engine([REVENUE_BY_CITY, ["d_year", "c_city", "d_yearmonthnum"]])
    for sql in (f"SELECT d_year, SUM(lo_cost), AVG(lo_tax) {ON_CITIES} GROUP BY d_year",
                f"SELECT d_year, SUM(lo_revenue) {ON_CITIES} GROUP BY d_year"):
        _same(e, sql, ["d_year"])
    small, large = _table(e, REVENUE_BY_CITY["columns"]), _table(e, ["d_year", "c_city", "d_yearmonthnum"])
    cube = e.synopsis("lineorder").cube
    assert cube.covering(("d_year", "c_city"), frozenset({"lo_revenue"}))[0] is small
    assert cube.covering(("d_year", "c_city"), frozenset({"lo_revenue", "lo_cost"}))[0] is large
    assert cube.covering(("d_year", "c_city"))[0] is small


def test_a_table_is_rolled_up_only_from_one_keeping_its_measures(monkeypatch):
    """(d_year) keeps every measure: the (d_year, c_city) table of lo_revenue cannot give it, so both
    come from the one GROUPING SETS pass, summing every measure either keeps; (c_nation) of lo_revenue
    is rolled up from (d_year, c_city) (c_city -> c_nation)."""
    passes, rolled = [], []
    aggregate, roll = cubes._aggregate, cubes.rolled_up
    monkeypatch.setattr(cubes, "_aggregate", lambda con, table, views, values, measures, nullable, dimensions:
                        passes.append((views, list(measures), list(nullable))) or
                        aggregate(con, table, views, values, measures, nullable, dimensions))
    monkeypatch.setattr(cubes, "rolled_up", lambda parent, view, *args: rolled.append((parent.columns, view)) or
                        roll(parent, view, *args))
    e = _engine([REVENUE_BY_CITY, ["d_year"], {"columns": ["c_nation"], "measures": ["lo_revenue"]}])
    assert passes == [([("d_year", "c_city"), ("d_year",)], MEASURES, ["lo_tax"])]
    assert rolled == [(("d_year", "c_city"), ("c_nation",))]
    assert _table(e, ["d_year"]).measures == tuple(MEASURES)
    assert _table(e, ["c_nation"]).measures == ("lo_revenue",)
    _same(e, f"SELECT d_year, SUM(lo_cost), AVG(lo_tax) {FROM} GROUP BY d_year", ["d_year"])
    _same(e, f"SELECT c_nation, SUM(lo_revenue) {FROM} GROUP BY c_nation", ["c_nation"])


def test_the_one_pass_sums_only_the_measures_some_table_keeps(monkeypatch):
    passes = []
    aggregate = cubes._aggregate
    monkeypatch.setattr(cubes, "_aggregate", lambda con, table, views, values, measures, nullable, dimensions:
                        passes.append((list(measures), list(nullable))) or
                        aggregate(con, table, views, values, measures, nullable, dimensions))
    e = _engine([REVENUE_BY_CITY, {"columns": ["d_year", "c_nation"], "measures": ["lo_tax"]},
                 {"columns": ["d_yearmonthnum"], "measures": []}])
    assert passes == [(["lo_revenue", "lo_tax"], ["lo_tax"])]
    counts_only = _table(e, ["d_yearmonthnum"])
    assert counts_only.measures == () and counts_only.nbytes == counts_only.rows.size * (2 + 8)
    _same(e, f"SELECT d_yearmonthnum, COUNT(*) {FROM} AND d_year = 1993 GROUP BY d_yearmonthnum", ["d_yearmonthnum"])
    _same(e, f"SELECT c_nation, COUNT(lo_tax), SUM(lo_tax), AVG(lo_tax) {FROM} GROUP BY c_nation", ["c_nation"])


def test_a_set_listed_twice_keeps_the_measures_of_both():
    e = _engine([REVENUE_BY_CITY, {"columns": ["c_city", "d_year"], "measures": ["lo_tax"]}])
    assert len(e.synopsis("lineorder").cube.tables) == 1
    assert _table(e, REVENUE_BY_CITY["columns"]).measures == ("lo_revenue", "lo_tax")
    e = _engine([REVENUE_BY_CITY, ["c_city", "d_year"]])
    assert _table(e, REVENUE_BY_CITY["columns"]).measures == tuple(MEASURES)


def test_stored_and_loaded_the_tables_keep_their_measures(revenue_only):
    synopsis = revenue_only.synopsis("lineorder")
    assert synopsis.cube_views == [REVENUE_BY_CITY]
    assert synopsis.cube.meta()["table_measures"] == [["lo_revenue"]]
    again = Synopsis.from_bytes(synopsis.to_bytes())
    assert again.cube_views == [REVENUE_BY_CITY]
    mine, theirs = again.cube.tables[0], synopsis.cube.tables[0]
    assert (mine.measures, mine.nullable) == (theirs.measures, theirs.nullable)
    np.testing.assert_array_equal(mine.sums, theirs.sums)
    loaded = Engine(revenue_only.con)  # reads the stored synopsis
    sql = f"SELECT d_year, SUM(lo_revenue) {ON_CITIES} GROUP BY d_year"
    pd.testing.assert_frame_equal(loaded.query(sql), revenue_only.query(sql))
    assert loaded.query(f"SELECT d_year, SUM(lo_cost) {ON_CITIES} GROUP BY d_year").attrs["form"] != FORM


def test_tables_of_every_measure_are_stored_as_before():
    """No per-table list where every table keeps every measure: such a cube's meta is as it was, and a
    stored cube without one loads with every measure in each table."""
    e = _engine([["d_year", "c_city"]])
    cube = e.synopsis("lineorder").cube
    meta = cube.meta()
    assert "table_measures" not in meta and set(meta) == {"measures", "nullable", "tables", "dependencies",
                                                          "dimensions"}
    again = cubes.Cube.from_stored(meta, cube.arrays())
    assert again.tables[0].measures == tuple(MEASURES) and again.tables[0].nullable == ("lo_tax",)


def test_a_refresh_after_appends_keeps_each_tables_measures_and_stays_exact():
    """Appended rows, some with a NULL lo_cost (which had none): the incremental refresh adds them into
    the tables, each keeping its measures (the table of lo_cost now counts it, the one of no measure
    keeps rows only); a full refresh builds the same tables from the stored entries."""
    con = duckdb.connect(":memory:")
    cost_by_nation = {"columns": ["d_year", "c_nation"], "measures": ["lo_cost"]}
    rows_by_month = {"columns": ["d_yearmonthnum"], "measures": []}
    e = _engine([REVENUE_BY_CITY, cost_by_nation, rows_by_month], con)
    assert _table(e, cost_by_nation["columns"]).nullable == ()
    _insert(con, "lineorder", _facts(np.random.default_rng(7), 500, null_cost=0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)  # an incremental refresh, no rebuild
        refreshed = e.refresh("lineorder")
    assert refreshed.refreshed.startswith("500 appended rows added")
    assert refreshed.cube.nullable == ["lo_cost", "lo_tax"]
    revenue, cost, months = (_table(e, v["columns"]) for v in (REVENUE_BY_CITY, cost_by_nation, rows_by_month))
    assert (revenue.measures, revenue.nullable) == (("lo_revenue",), ())
    assert (cost.measures, cost.nullable) == (("lo_cost",), ("lo_cost",))
    assert (months.measures, months.sums.shape[1], months.counts.shape[1]) == ((), 0, 0)
    queries = [(f"SELECT d_year, SUM(lo_revenue), COUNT(*) {ON_CITIES} GROUP BY d_year", ["d_year"]),
               ((f"SELECT c_nation, SUM(lo_cost), COUNT(lo_cost), AVG(lo_cost) {FROM} AND d_year = 1994 "
                "GROUP BY c_nation"), ["c_nation"]),
               (f"SELECT d_yearmonthnum, COUNT(*) {FROM} GROUP BY d_yearmonthnum", ["d_yearmonthnum"])]
    for sql, keys in queries:
        _same(e, sql, keys)
    assert e.query(f"SELECT d_year, SUM(lo_tax) {FROM} GROUP BY d_year").attrs["form"] != FORM
    rebuilt = e.refresh("lineorder", full=True)
    assert rebuilt.cube_views == [REVENUE_BY_CITY, cost_by_nation, rows_by_month]
    for merged in (revenue, cost, months):
        full = _table(e, merged.columns)
        assert (full.measures, full.nullable) == (merged.measures, merged.nullable)
        np.testing.assert_array_equal(full.codes, merged.codes)
        np.testing.assert_array_equal(full.counts, merged.counts)
        np.testing.assert_allclose(full.sums, merged.sums, rtol=1e-12)
    for sql, keys in queries:
        _same(e, sql, keys)


def test_rebuild_tables_takes_the_dict_form(revenue_only):
    e = _engine([["d_year"]])
    rebuilt = e.rebuild_tables("lineorder", cube=[{"columns": ["d_year", "c_nation"], "measures": ["lo_tax"]}])
    assert [t.measures for t in rebuilt.cube.tables] == [("lo_tax",)]
    _same(e, f"SELECT c_nation, AVG(lo_tax) {FROM} AND d_year = 1994 GROUP BY c_nation", ["c_nation"])
    assert e.query(f"SELECT c_nation, SUM(lo_revenue) {FROM} GROUP BY c_nation").attrs["form"] != FORM


@pytest.mark.parametrize(("entry", "why"), [
    ({"columns": ["d_year"], "measure": ["lo_revenue"]}, r"has the keys 'measure', not 'columns' nor 'measures'"),
    ({"measures": ["lo_revenue"]}, r"has no 'columns'"),
    ({"columns": [], "measures": ["lo_revenue"]}, r"columns are no list of one or more names"),
    ({"columns": "d_year", "measures": ["lo_revenue"]}, r"columns are no list of one or more names"),
    ({"columns": ["d_year"], "measures": "lo_revenue"}, r"'measures' are no list of names"),
    ({"columns": ["d_year"], "measures": [3]}, r"'measures' are no list of names"),
    ({"columns": ["d_year"], "measures": ["lo_nothing"]},
     r"lists 'lo_nothing' among its measures, which is no measure of the synopsis.*'lo_revenue', 'lo_cost', 'lo_tax'"),
    ({"columns": ["d_year"], "measures": ["c_city"]},
     r"lists 'c_city' among its measures, which is a column the tables group by, not a measure"),
])
def test_a_bad_entry_is_refused_naming_the_problem(entry, why):
    with pytest.raises(ValueError, match=why):
        _engine([["d_year"], entry])


def test_a_bad_entry_is_refused_by_rebuild_tables(revenue_only):
    with pytest.raises(ValueError, match="lists 'lo_profit' among its measures, which is no measure"):
        revenue_only.rebuild_tables("lineorder", cube=[{"columns": ["d_year"], "measures": ["lo_profit"]}])
    with pytest.raises(ValueError, match="has the keys 'extra'"):
        revenue_only.rebuild_tables("lineorder", cube=[{"columns": ["d_year"], "measures": [], "extra": 1}])
    assert revenue_only.synopsis("lineorder").cube_views == [REVENUE_BY_CITY]  # unchanged


WORKLOAD = [f"SELECT d_year, SUM(lo_revenue) {ON_CITIES} GROUP BY d_year",
            f"SELECT c_nation, COUNT(*) {FROM} AND d_year = 1994 GROUP BY c_nation",
            f"SELECT d_yearmonthnum, AVG(lo_tax) {FROM} AND c_nation = 'N2' GROUP BY d_yearmonthnum"]


def test_tables_chosen_for_a_workload_keep_the_measures_of_the_queries_they_answer():
    """Each table chosen for the example queries keeps the measures of those it answers (lo_cost, which
    none sums, is kept by none); the tables are stored with their measures, so a full refresh makes
    the same ones."""
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    synopsis = e.build("lineorder", columns=MEASURES, joins=JOINS, sample=2000, seed=3, grid=0, workload=WORKLOAD,
                       cube_bytes=200_000)
    kept = {t.columns: t.measures for t in synopsis.cube.tables}
    assert kept == {("d_year", "c_nation"): (), ("d_year", "c_city"): ("lo_revenue",),
                    ("d_yearmonthnum", "c_nation"): ("lo_tax",)}  # the last answers the COUNT query too
    for sql in WORKLOAD:
        _same(e, sql, [sql.split()[1].rstrip(",")])
    assert e.query(f"SELECT d_year, SUM(lo_cost) {ON_CITIES} GROUP BY d_year").attrs["form"] != FORM
    assert synopsis.cube_views == synopsis.cube.listed() and any(isinstance(v, dict) for v in synopsis.cube_views)
    rebuilt = e.refresh("lineorder", full=True)
    assert {t.columns: t.measures for t in rebuilt.cube.tables} == kept


def test_the_workload_greedy_counts_the_bytes_of_the_measures_a_view_keeps():
    """Two queries, on a (summing nothing) and on b (summing x): with every measure (x and y) a table
    takes 2600 bytes and one fits 2900; keeping the measures its queries sum, 1000 and 1800: both fit."""
    from parzen.aqp.cube_workload import select_for_workload

    cardinality = {"a": 100, "b": 100}
    needs, summed = [("a",), ("b",)], [frozenset(), frozenset({"x"})]

    def size(columns, kept=None):
        return 2 * len(columns) + 8 + 8 * (2 if kept is None else len(kept))

    assert len(select_for_workload(needs, cardinality, [], 10_000, size, 2_900)) == 1
    assert sorted(select_for_workload(needs, cardinality, [], 10_000, size, 2_900, summed=summed)) == [("a",), ("b",)]
