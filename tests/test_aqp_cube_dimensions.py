"""Numeric dimensions of the exact aggregate tables (issue 19): DATE, integer and DECIMAL columns of
few values, whose ranges the tables answer exactly.

A generated star schema in DuckDB: fact ``sales`` -> ``store`` (city -> region), with a DATE column
(NULLs among it), a DECIMAL(15, 2) discount of 11 values (0.00 .. 0.10), an integer-valued DECIMAL
quantity of 50 values, an INTEGER of 200 values, a constant column and two DOUBLE measures (one with
NULLs).  Answers from the tables are compared with DuckDB's, at the ranges' boundaries too.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd
import pytest
from frames import assert_equals_exact

from parzen.aqp import Engine
from parzen.aqp.cube_answers import FORM
from parzen.aqp.cube_dimensions import NumericDimension, scale_of
from parzen.aqp.sql import Range
from parzen.aqp.synopsis import Synopsis

FROM = "FROM sales JOIN store ON s_store = st_key"
VIEWS = [["st_region", "s_date", "s_disc"], ["s_qty", "s_units", "s_disc"], ["st_city", "s_date"],
         ["st_city", "s_date@month", "s_disc"]]
COLUMNS = ["s_date", "s_disc", "s_qty", "s_units", "s_price", "s_tax"]
FIRST_DAY = dt.date(1995, 1, 1)


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _star(con, rows=12_000, seed=0):
    rng = np.random.default_rng(seed)
    con.execute("CREATE TABLE store (st_key INTEGER PRIMARY KEY, st_city VARCHAR, st_region VARCHAR)")
    _insert(con, "store", pd.DataFrame({"st_key": np.arange(30), "st_city": [f"C{k % 10}" for k in range(30)],
                                        "st_region": [f"R{k % 10 // 5}" for k in range(30)]}))
    con.execute("CREATE TABLE sales (s_store INTEGER, s_date DATE, s_disc DECIMAL(15, 2), s_qty DECIMAL(15, 2), "
                "s_units INTEGER, s_year INTEGER, s_price DOUBLE, s_tax DOUBLE)")
    days = pd.Series(pd.to_datetime(FIRST_DAY) + pd.to_timedelta(rng.integers(0, 400, rows), unit="D"))
    days[rng.random(rows) < 0.05] = pd.NaT
    tax = rng.gamma(2.0, 3.0, rows)
    tax[rng.random(rows) < 0.1] = np.nan
    _insert(con, "sales", pd.DataFrame({
        "s_store": rng.integers(0, 30, rows), "s_date": days.dt.date,
        "s_disc": rng.integers(0, 11, rows) / 100, "s_qty": rng.integers(1, 51, rows).astype(float),
        "s_units": rng.integers(0, 200, rows), "s_year": np.full(rows, 1995),
        "s_price": rng.gamma(3.0, 100.0, rows), "s_tax": pd.array(tax, dtype="Float64").fillna(pd.NA)}))


def _engine(**build):
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("sales", columns=COLUMNS, joins={"s_store": "store.st_key"}, sample=1500, seed=2, grid=0, **build)
    return e


@pytest.fixture(scope="module")
def listed():
    return _engine(cube=VIEWS)


#: The group columns of the queries here, by which DuckDB's rows are sorted to compare them with an answer's.
GROUPS = ("st_region", "st_city")


EXACT = [
    # date ranges: BETWEEN, a folded INTERVAL, boundaries at days that occur (and at the first and last)
    (f"SELECT st_region, COUNT(*), SUM(s_price) {FROM} WHERE s_date BETWEEN DATE '1995-02-01' AND DATE '1995-03-31' "
    "GROUP BY st_region"),
    (f"SELECT COUNT(*), SUM(s_price) {FROM} WHERE s_date >= DATE '1995-01-01' "
    "AND s_date < DATE '1995-01-01' + INTERVAL 3 MONTH"),
    f"SELECT COUNT(*) {FROM} WHERE s_date > DATE '1995-01-01' AND s_date <= DATE '1996-02-04'",
    f"SELECT COUNT(*) {FROM} WHERE s_date >= DATE '1995-01-01' AND s_date < DATE '1995-01-02'",
    f"SELECT COUNT(*) {FROM} WHERE s_date = DATE '1995-06-15'",
    f"SELECT COUNT(*) {FROM} WHERE s_date >= TIMESTAMP '1995-06-15 00:00:01' AND s_date <= DATE '1995-06-17'",
    # empty ranges: COUNT 0, SUM NULL
    f"SELECT COUNT(*), SUM(s_price) {FROM} WHERE s_date < DATE '1990-01-01'",
    f"SELECT COUNT(*), SUM(s_price) {FROM} WHERE s_disc > 0.05 AND s_disc < 0.06",
    # decimal boundaries, in the column's scale
    (f"SELECT st_region, SUM(s_price * (1 - s_disc)) {FROM} WHERE s_disc BETWEEN 0.05 AND 0.07 "
    "AND s_date >= DATE '1995-03-01' AND s_date < DATE '1995-04-01' GROUP BY st_region"),
    f"SELECT COUNT(*), SUM(s_price * s_disc) {FROM} WHERE s_disc > 0.05",
    f"SELECT COUNT(*) {FROM} WHERE s_disc >= 0.1",
    f"SELECT COUNT(*) {FROM} WHERE s_disc = 0.06",
    f"SELECT COUNT(*) {FROM} WHERE s_disc < 0.055",
    # integer-valued decimals and integers; a measure with NULLs; a numeric dimension as a measure
    f"SELECT COUNT(*), SUM(s_tax), AVG(s_tax), COUNT(s_tax) {FROM} WHERE s_qty < 25 AND s_units BETWEEN 10 AND 99",
    f"SELECT SUM(s_qty), AVG(s_price * s_disc) {FROM} WHERE s_qty BETWEEN 26 AND 35 AND s_disc <= 0.03",
    # NULL dates: outside every range, counted by COUNT(*) without one
    f"SELECT st_city, COUNT(*), COUNT(s_date) {FROM} WHERE st_region = 'R1' GROUP BY st_city",
    f"SELECT st_city, COUNT(*) {FROM} WHERE s_date <= DATE '1995-07-01' AND st_city IN ('C1', 'C7') GROUP BY st_city",
]


@pytest.mark.parametrize("sql", EXACT)
def test_ranges_on_numeric_dimensions_are_answered_exactly(listed, sql):
    approx = listed.query(sql, with_error=True)
    assert approx.attrs["form"] == FORM
    assert_equals_exact(approx, listed.query(sql, exact=True), GROUPS, intervals=True)


@pytest.mark.parametrize("sql", [
    f"SELECT COUNT(*) {FROM} WHERE s_price > 300",  # a DOUBLE column: no dimension
    f"SELECT st_region, COUNT(*) {FROM} WHERE s_qty < 10 GROUP BY st_region",  # no table holds region and quantity
    f"SELECT SUM(s_price) {FROM} WHERE s_units < 50 AND s_date < DATE '1995-05-01'",  # nor units and date
])
def test_a_range_no_table_holds_is_not_answered_from_the_tables(listed, sql):
    assert listed.query(sql).attrs["form"] != FORM


def test_the_tables_hold_the_exact_cells_of_dates_and_decimals(listed):
    synopsis = listed.synopsis("sales")
    cube = synopsis.cube
    assert set(cube.dimensions) == {"s_date", "s_date@month", "s_disc", "s_qty", "s_units"}
    assert cube.dimensions["s_date"].nulls and cube.dimensions["s_date"].temporal
    assert cube.dimensions["s_disc"].scale == 2 and cube.dimensions["s_disc"].values.size == 11
    values = cube.values_with(synopsis.categories.values)
    table = next(t for t in cube.tables if set(t.columns) == {"s_date", "st_city"})
    exact = listed.con.execute(f"SELECT s_date, st_city, COUNT(*), SUM(s_price) {FROM} GROUP BY ALL").fetchall()
    assert table.rows.size == len(exact)
    cells = {(values["s_date"][table.codes[k, table.columns.index("s_date")]],
              values["st_city"][table.codes[k, table.columns.index("st_city")]]): k for k in range(table.rows.size)}
    for day, city, rows, total in exact:
        k = cells[(None if day is None else float((day - dt.date(1970, 1, 1)).days), city)]
        assert table.rows[k] == rows
        assert table.sums[k, cube.measures.index("s_price")] == pytest.approx(total, rel=1e-12)


BY_MONTHS = [  # the month table (city, month, discount) is the only one holding city and discount
    (f"SELECT st_city, SUM(s_price * (1 - s_disc)) {FROM} WHERE s_date >= DATE '1995-03-01' "
     "AND s_date < DATE '1995-03-01' + INTERVAL 3 MONTH GROUP BY st_city"),
    f"SELECT st_city, COUNT(*) {FROM} WHERE s_date <= DATE '1995-05-31' AND s_disc < 0.02 GROUP BY st_city",
    f"SELECT COUNT(*), SUM(s_price) {FROM} WHERE s_date >= TIMESTAMP '1995-02-28 12:00:00' AND st_city = 'C3'",
    f"SELECT st_city, COUNT(*) {FROM} WHERE s_date > DATE '1996-01-31' AND s_disc = 0.04 GROUP BY st_city",
    # a month's range answered from a table on the days, through the days -> months map
    (f"SELECT st_region, COUNT(*), SUM(s_price * s_disc) {FROM} WHERE s_date >= DATE '1995-03-01' "
     "AND s_date < DATE '1995-04-01' GROUP BY st_region"),
]


@pytest.mark.parametrize("sql", BY_MONTHS)
def test_ranges_that_cut_no_month_are_answered_from_the_months(listed, sql):
    approx = listed.query(sql, with_error=True)
    assert approx.attrs["form"] == FORM
    assert_equals_exact(approx, listed.query(sql, exact=True), GROUPS, intervals=True)


@pytest.mark.parametrize("sql", [
    f"SELECT st_city, COUNT(*) {FROM} WHERE s_date >= DATE '1995-03-02' AND s_disc < 0.02 GROUP BY st_city",
    f"SELECT st_city, COUNT(*) {FROM} WHERE s_date < DATE '1995-05-31' AND s_disc < 0.02 GROUP BY st_city",
    f"SELECT COUNT(*) {FROM} WHERE s_date >= TIMESTAMP '1995-03-01 00:00:01' AND s_disc = 0.04 AND st_city = 'C3'",
])
def test_a_range_that_cuts_a_month_is_never_answered_from_the_months(listed, sql):
    assert listed.query(sql).attrs["form"] != FORM


def test_the_dimensions_are_stored_and_read_back(listed):
    synopsis = listed.synopsis("sales")
    again = Synopsis.from_bytes(synopsis.to_bytes())
    for column, dimension in synopsis.cube.dimensions.items():
        back = again.cube.dimensions[column]
        np.testing.assert_array_equal(back.values, dimension.values)
        assert back.meta() == dimension.meta() and (back.highs is None) == (dimension.highs is None)
    sql = BY_MONTHS[0]
    assert again.cube.dependencies.keys() == synopsis.cube.dependencies.keys()
    assert ("s_date", "s_date@month") in again.cube.dependencies
    assert listed.query(sql).attrs["form"] == FORM


def test_the_greedy_skips_constant_columns_and_keeps_within_its_budget():
    e = _engine()
    synopsis = e.synopsis("sales")
    cube = synopsis.cube
    assert cube is not None and cube.tables
    assert not any("s_year" in t.columns for t in cube.tables)  # one value: a table on it groups nothing
    budget = sum(a.nbytes for a in synopsis.sample.values()) + sum(a.nbytes for a in synopsis.categories.codes.values())
    assert cube.nbytes <= budget
    assert set(cube.dimensions) <= {c for t in cube.tables for c in t.columns}


def test_range_masks_compare_in_the_columns_scale():
    disc = NumericDimension(np.arange(11) / 100, nulls=True, scale=2, temporal=False)
    assert disc.size == 12
    np.testing.assert_array_equal(np.flatnonzero(disc.range_mask(Range("d", 0.06 - 0.01, 0.06 + 0.01))), [5, 6, 7])
    np.testing.assert_array_equal(np.flatnonzero(disc.range_mask(Range("d", 0.05, 0.07, False, False))), [6])
    np.testing.assert_array_equal(np.flatnonzero(disc.range_mask(Range("d", high=0.055))), [0, 1, 2, 3, 4, 5])
    assert not disc.range_mask(Range("d", 0.3)).any()
    days = NumericDimension(np.array([9131.0, 9132.0]), nulls=False, scale=0, temporal=True)
    np.testing.assert_array_equal(days.range_mask(Range("d", 9131.0 + 1e-11)), [False, True])  # a TIMESTAMP bound
    np.testing.assert_array_equal(days.codes([9132.0, 9131.0]), [1, 0])
    with pytest.raises(ValueError, match="changed"):
        days.codes([None])
    first = np.array([9131.0, 9162.0, 9190.0])  # 1995-01-01, 02-01, 03-01
    months = NumericDimension(first, nulls=False, scale=0, temporal=True, highs=first + [30, 27, 30], source="d")
    np.testing.assert_array_equal(months.range_mask(Range("d", 9162.0, 9189.0)), [False, True, False])
    np.testing.assert_array_equal(months.range_mask(Range("d", 9162.0, 9190.0, True, False)), [False, True, False])
    assert months.range_mask(Range("d", 9163.0)) is None and months.range_mask(Range("d", high=9189.5)) is not None
    assert months.range_mask(Range("d", high=9188.0)) is None
    assert scale_of("DECIMAL(15,2)") == 2 and scale_of("DATE") == 0 and scale_of("INTEGER") == 0
    assert scale_of("DOUBLE") is None and scale_of("TIMESTAMP") is None


def test_a_listed_view_of_a_column_of_many_values_is_refused():
    with pytest.raises(ValueError, match="no categorical columns"):
        _engine(cube=[["st_region", "s_price"]])


def test_only_exact_types_of_few_values_are_dimensions():
    from parzen.aqp.cube_dimensions import DATE_LIMIT, NUMBER_LIMIT, find

    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t AS SELECT CAST(i % 1500 AS INTEGER) AS day_keys, CAST(i % 5000 AS INTEGER) AS many, "
                "CAST(i % 1500 AS DECIMAL(9, 2)) AS many_dec, CAST(i % 7 AS BIGINT) AS few, "
                "DATE '2000-01-01' AS one_day, DATE '2000-01-01' + CAST(i % 40 AS INTEGER) AS days, "
                "CAST(i % 5000 AS DOUBLE) AS dbl, CAST((i % 3) / 10 AS DECIMAL(6, 3)) AS dec "
                "FROM range(20000) AS r(i)")
    types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_name = 't'").fetchall())
    found = find(con, "t", types, ["day_keys", "many", "many_dec", "few", "one_day", "days", "dbl", "dec"],
                 categorical=["few"])
    # an INTEGER of 1500 values (day keys, as TPC-DS's ss_sold_date_sk) is a dimension, one of 5000 is not;
    # a DECIMAL of 1500 values is not; 40 days: no month dimension (at most 62 days)
    assert set(found) == {"day_keys", "days", "dec"}
    assert NUMBER_LIMIT < 1500 <= DATE_LIMIT < 5000
    assert found["dec"].scale == scale_of(types["dec"]) and found["dec"].values.size == 3
    np.testing.assert_array_equal(found["days"].values, 10957 + np.arange(40))
    np.testing.assert_array_equal(found["day_keys"].values, np.arange(1500))
