"""Comparison dimensions of the exact aggregate tables (issue 19): ``cmp(a,b)``, the sign of a - b per row,
which answers a comparison of two columns (TPC-H Q12's dates, Q5's ``c_nationkey = s_nationkey``) exactly.

A generated TPC-H-like snowflake in DuckDB: ``lineitem`` -> ``orders`` -> ``customer`` -> ``nation`` and
``lineitem`` -> ``supplier`` (whose ``s_nationkey`` references nation too, a plain column here), with
three DATE columns of the fact (NULLs among the commit dates, and days where two dates are equal) and
an order date.  Answers from the tables are compared with DuckDB's exact answers, for every operator
in both orders of the columns; and :meth:`parzen.aqp.Engine.rebuild_tables` changes only the tables.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from frames import assert_answered_from_the_tables

from parzen.aqp import Engine
from parzen.aqp.cube_answers import FORM
from parzen.aqp.cube_comparisons import comparison_mask, parsed

ROWS = 8_000
KEYS = {"l_orderkey": "orders.o_orderkey", "orders.o_custkey": "customer.c_custkey",
        "customer.c_nationkey": "nation.n_nationkey", "l_suppkey": "supplier.s_suppkey"}
COLUMNS = ["l_quantity", "l_price", "l_shipdate", "l_commitdate", "l_receiptdate", "o_orderdate"]
VIEWS = [["l_mode", "o_orderdate@month", "cmp(l_commitdate,l_receiptdate)", "cmp(l_shipdate, l_commitdate)"],
         ["n_name", "cmp(c_nationkey,s_nationkey)"]]
OPERATORS = ["<", "<=", "=", "<>", ">", ">="]


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _schema(con, rows=ROWS, seed=4):
    rng = np.random.default_rng(seed)
    con.execute("CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name VARCHAR)")
    con.execute("INSERT INTO nation SELECT i, 'N' || i FROM range(4) r(i)")
    con.execute("CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_nationkey INTEGER)")
    con.execute("INSERT INTO customer SELECT i, i % 4 FROM range(200) r(i)")
    con.execute("CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_nationkey INTEGER)")
    con.execute("INSERT INTO supplier SELECT i, (i * 7) % 4 FROM range(40) r(i)")
    con.execute("CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER, o_orderdate DATE)")
    _insert(con, "orders", pd.DataFrame({"o_orderkey": np.arange(2000), "o_custkey": rng.integers(0, 200, 2000),
                                         "o_orderdate": (pd.Timestamp("1993-01-01")
                                                         + pd.to_timedelta(rng.integers(0, 700, 2000), "D")).date}))
    con.execute("CREATE TABLE lineitem (l_orderkey INTEGER, l_suppkey INTEGER, l_quantity INTEGER, l_price DOUBLE, "
                "l_mode VARCHAR, l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE)")
    ship = pd.Timestamp("1993-02-01") + pd.to_timedelta(rng.integers(0, 700, rows), "D")
    commit = pd.Series(ship + pd.to_timedelta(rng.integers(-6, 7, rows), "D"))
    commit[rng.random(rows) < 0.05] = pd.NaT
    _insert(con, "lineitem", pd.DataFrame({
        "l_orderkey": rng.integers(0, 2000, rows), "l_suppkey": rng.integers(0, 40, rows),
        "l_quantity": rng.integers(1, 51, rows), "l_price": rng.gamma(3.0, 30.0, rows),
        "l_mode": rng.choice(["MAIL", "SHIP", "AIR"], rows), "l_shipdate": ship.date, "l_commitdate": commit.dt.date,
        "l_receiptdate": (ship + pd.to_timedelta(rng.integers(0, 8, rows), "D")).date}))


def _engine(**build):
    con = duckdb.connect(":memory:")
    _schema(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("lineitem", COLUMNS, joins=KEYS, sample=1000, seed=5, grid=0, **build)
    return e


@pytest.fixture(scope="module")
def listed():
    return _engine(cube=VIEWS)


#: The group columns of the queries here, by which DuckDB's rows are sorted to compare them with an answer's.
GROUPS = ("l_mode", "n_name")


def _exactly(engine, sql):
    """DuckDB's answer, sorted as the engine's, after asserting that the engine answers alike from its exact
    tables."""
    return assert_answered_from_the_tables(engine, sql, GROUPS)


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("left,right", [("l_commitdate", "l_receiptdate"), ("l_receiptdate", "l_commitdate")])
def test_each_operator_in_either_order_is_answered_exactly(listed, op, left, right):
    sql = (f"SELECT l_mode, COUNT(*), SUM(l_price), AVG(l_quantity) FROM lineitem JOIN orders ON l_orderkey = o_orderkey "
           f"WHERE {left} {op} {right} AND o_orderdate >= DATE '1993-03-01' AND o_orderdate < DATE '1994-06-01' "
           "GROUP BY l_mode")
    exact = _exactly(listed, sql)
    assert (exact["count_star()"] > 0).all()


def test_q12_both_comparisons_and_its_case_counts_are_answered_exactly(listed):
    _exactly(listed, "SELECT l_mode, COUNT(*) FROM lineitem WHERE l_commitdate < l_receiptdate "
                     "AND l_shipdate < l_commitdate GROUP BY l_mode")
    _exactly(listed, "SELECT l_mode, SUM(CASE WHEN l_mode = 'MAIL' THEN 1 ELSE 0 END) AS mail, COUNT(*) FROM lineitem "
                     "WHERE l_commitdate < l_receiptdate AND l_commitdate > l_shipdate GROUP BY l_mode")


def test_the_equality_of_two_keys_of_one_dimension_is_answered_exactly(listed):
    """Q5's ``c_nationkey = s_nationkey`` (customer and supplier of one nation) and its negation."""
    for op in ("=", "<>"):
        _exactly(listed, "SELECT n_name, COUNT(*), SUM(l_price) FROM customer, orders, lineitem, supplier, nation "
                         "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey "
                         f"AND c_nationkey {op} s_nationkey AND c_nationkey = n_nationkey GROUP BY n_name")
    _exactly(listed, "SELECT n_name, COUNT(*) FROM customer, orders, lineitem, supplier, nation "
                     "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey "
                     "AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey GROUP BY n_name")


def test_a_comparison_no_table_holds_falls_to_the_sample(listed):
    answer = listed.query("SELECT COUNT(*) FROM lineitem WHERE l_shipdate < l_receiptdate")
    assert answer.attrs["form"] != FORM


def test_the_dimension_codes_nulls_and_is_stored(listed):
    cube = listed.synopsis("lineitem").cube
    d = cube.dimensions["cmp(l_commitdate,l_receiptdate)"]
    assert d.compares == ("l_commitdate", "l_receiptdate") and d.nulls and d.size == 4
    assert "cmp(l_shipdate,l_commitdate)" in cube.dimensions  # the listed spaces dropped
    assert not cube.dimensions["cmp(c_nationkey,s_nationkey)"].nulls
    name, mask = comparison_mask(cube.dimensions, "l_receiptdate", "<", "l_commitdate")
    assert name == "cmp(l_commitdate,l_receiptdate)" and list(mask) == [False, False, True, False]
    assert comparison_mask(cube.dimensions, "l_shipdate", "<", "l_receiptdate") is None
    again = Engine(listed.con).synopsis("lineitem").cube
    stored = again.dimensions["cmp(l_commitdate,l_receiptdate)"]
    assert (stored.compares, stored.nulls, list(stored.values)) == (d.compares, True, [-1.0, 0.0, 1.0])
    assert parsed("cmp( a , b )") == ("a", "b") and parsed("cmp(a)") is None and parsed("l_mode") is None


@pytest.mark.parametrize("view,named", [
    (["l_mode", "cmp(l_commitdate,l_nothing)"], "'l_nothing', no column"),
    (["cmp(l_mode,l_shipdate)"], "compares 'l_mode' (VARCHAR) with 'l_shipdate' (DATE)"),
    (["cmp(l_quantity,l_shipdate)"], "compares 'l_quantity' (INTEGER) with 'l_shipdate' (DATE)"),
    (["cmp(l_shipdate,l_shipdate)"], "with itself"),
])
def test_bad_comparisons_are_refused_by_name(listed, view, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        listed.rebuild_tables("lineitem", cube=[view])


def test_rebuild_tables_changes_only_the_tables():
    e = _engine(cube=[["l_mode"]])
    before = e.synopsis("lineitem")
    sql = "SELECT l_mode, COUNT(*) FROM lineitem WHERE l_commitdate <= l_receiptdate GROUP BY l_mode"
    assert e.query(sql).attrs["form"] != FORM
    after = e.rebuild_tables("lineitem", cube=[["l_mode", "cmp(l_commitdate,l_receiptdate)"]])
    assert [t.columns for t in after.cube.tables] == [("l_mode", "cmp(l_commitdate,l_receiptdate)")]
    assert after.cube_views == [["l_mode", "cmp(l_commitdate,l_receiptdate)"]]
    for c in before.sample:
        np.testing.assert_array_equal(after.sample[c], before.sample[c])
    assert (after.fingerprint, after.totals, after.build_seconds) == (before.fingerprint, before.totals,
                                                                      before.build_seconds)
    assert {c: m.bandwidth for c, m in after.models.items()} == {c: m.bandwidth for c, m in before.models.items()}
    fresh = Engine(e.con)  # stored: a new engine loads the new tables, and the synopsis is not stale
    assert fresh.check("lineitem") == ""
    _exactly(fresh, sql)
    assert fresh.synopsis("lineitem").build_options()["cube"] == [["l_mode", "cmp(l_commitdate,l_receiptdate)"]]
    kept = fresh.rebuild_tables("lineitem")  # neither cube nor cube_bytes: the synopsis's own
    assert [t.columns for t in kept.cube.tables] == [("l_mode", "cmp(l_commitdate,l_receiptdate)")]
    assert fresh.rebuild_tables("lineitem", cube_bytes=0).cube is None


def test_rebuild_tables_refuses_bad_input():
    e = _engine()
    with pytest.raises(ValueError, match="no synopsis|no stored|not stored"):
        e.rebuild_tables("orders", cube=[["l_mode"]])
    with pytest.raises(ValueError, match="cube_bytes must be"):
        e.rebuild_tables("lineitem", cube_bytes=-1)
    with pytest.raises(ValueError, match="cube= takes a list of column lists"):
        e.rebuild_tables("lineitem", cube=["l_mode"])
    with pytest.raises(ValueError, match="'l_nothing'"):
        e.rebuild_tables("lineitem", cube=[["l_nothing"]])
    e.con.execute("INSERT INTO lineitem SELECT * FROM lineitem LIMIT 5")
    with pytest.raises(ValueError, match="stale"):
        e.rebuild_tables("lineitem", cube=[["l_mode"]])


def test_appended_rows_are_added_to_the_comparison_tables():
    """A refresh after an append adds the new rows' cells (their signs read as the build reads them)."""
    e = _engine(cube=VIEWS)
    e.con.execute("INSERT INTO lineitem SELECT l_orderkey, l_suppkey, l_quantity, l_price, l_mode, l_shipdate, "
                  "l_receiptdate, l_commitdate FROM lineitem LIMIT 500")  # commit and receipt swapped
    assert "appended rows added" in e.refresh("lineitem").refreshed
    for op in ("<", "="):
        _exactly(e, f"SELECT l_mode, COUNT(*) FROM lineitem WHERE l_commitdate {op} l_receiptdate GROUP BY l_mode")


def test_the_default_choice_adds_the_date_comparisons_with_the_bytes_it_leaves(monkeypatch):
    """Without cube=, the greedy's choice is the same as without comparison dimensions, then goes on with
    the implied cmp(a,b) of the fact's DATE columns within the budget it left."""
    from parzen.aqp import cube_comparisons, cubes

    e = _engine()
    synopsis = e.synopsis("lineitem")
    tables = [t.columns for t in synopsis.cube.tables]
    monkeypatch.setattr(cube_comparisons, "implied", lambda *args: {})
    without = [t.columns for t in _engine().synopsis("lineitem").cube.tables]
    assert tables[:len(without)] == without
    added = tables[len(without):]
    assert added and all(any(c.startswith("cmp(") for c in t) for t in added)
    assert {d.compares for d in synopsis.cube.dimensions.values() if d.compares} <= {
        ("l_shipdate", "l_commitdate"), ("l_shipdate", "l_receiptdate"), ("l_commitdate", "l_receiptdate")}
    assert synopsis.cube.nbytes <= cubes.default_budget(synopsis.sample, synopsis.categories.codes)
    _exactly(e, "SELECT COUNT(*), SUM(l_price) FROM lineitem WHERE l_receiptdate > l_shipdate")


def test_a_comparison_of_a_double_with_an_integer_is_answered_exactly():
    e = _engine(cube=[["l_mode", "cmp(l_price,l_quantity)"]])
    for op in (">=", "<"):
        _exactly(e, f"SELECT l_mode, COUNT(*), SUM(l_price) FROM lineitem WHERE l_quantity {op} l_price GROUP BY l_mode")
