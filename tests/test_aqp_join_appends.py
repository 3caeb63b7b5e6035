"""Engine.refresh of join synopses (issue 19, items 1 and 4; parzen.aqp.appends, parzen.aqp.joins):
rows appended to the fact table alone are read joined with their dimensions and merged, giving the
exact parts and the sample of a rebuild; any change to a dimension (rows appended, deleted or
updated), or appended rows whose keys match nothing, rebuild, saying why.

A generated star schema with a snowflake arm: fact ``sales`` -> ``orders`` -> ``customer``, and
``sales`` -> ``product`` (50 rows: its key is a categorical column, with exact rows per key).
"""

from __future__ import annotations

import re
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, StaleSynopsisError, StaleSynopsisWarning, SynopsisRebuiltWarning
from parzen.aqp import appends as appends_module
from parzen.aqp import store as synopsis_store

FACT_ROWS = 20_000
KEYS = {"s_orderkey": "orders.o_orderkey", "s_productkey": "product.p_productkey",
        "orders.o_custkey": "customer.c_custkey"}
JOIN = ("FROM sales JOIN orders ON s_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey "
        "JOIN product ON s_productkey = p_productkey")


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _sales(rows, seed, orders=3_000, price_scale=30.0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"s_orderkey": rng.integers(0, orders, rows), "s_productkey": rng.integers(0, 50, rows),
                         "s_quantity": rng.integers(1, 51, rows), "s_price": rng.gamma(3.0, price_scale, rows),
                         "s_mode": rng.choice(["AIR", "MAIL", "SHIP", "RAIL"], rows, p=[0.4, 0.3, 0.2, 0.1])})


def _schema(con):
    rng = np.random.default_rng(0)
    con.execute("CREATE TABLE customer (c_custkey INTEGER, c_segment VARCHAR, c_balance DOUBLE)")
    _insert(con, "customer", pd.DataFrame({"c_custkey": np.arange(310),  # 300 to 309: no order's
                                           "c_segment": rng.choice(["AUTO", "BUILD", "FURN"], 310),
                                           "c_balance": rng.uniform(0.0, 1000.0, 310)}))
    con.execute("CREATE TABLE orders (o_orderkey INTEGER, o_custkey INTEGER, o_priority VARCHAR, o_total DOUBLE)")
    _insert(con, "orders", pd.DataFrame({"o_orderkey": np.arange(3_000), "o_custkey": rng.integers(0, 300, 3_000),
                                         "o_priority": rng.choice(["1-URGENT", "2-HIGH", "3-LOW"], 3_000),
                                         "o_total": rng.gamma(2.0, 500.0, 3_000)}))
    con.execute("CREATE TABLE product (p_productkey INTEGER, p_brand VARCHAR, p_weight DOUBLE)")
    _insert(con, "product", pd.DataFrame({"p_productkey": np.arange(50), "p_brand": [f"B{i % 7}" for i in range(50)],
                                          "p_weight": rng.uniform(1.0, 20.0, 50)}))
    con.execute("CREATE TABLE sales (s_orderkey INTEGER, s_productkey INTEGER, s_quantity INTEGER, s_price DOUBLE, "
                "s_mode VARCHAR)")
    _insert(con, "sales", _sales(FACT_ROWS, 1))


@pytest.fixture
def con():
    con = duckdb.connect(":memory:")
    _schema(con)
    return con


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)  # an incremental refresh must not rebuild
        return call(*args, **kwargs)


def _tables(categories):
    """Each exact table as {columns: {value combination: rows}} (codes decoded)."""
    return {t.columns: {tuple(categories.values[c][k] for c, k in zip(t.columns, codes)): n
                        for codes, n in zip(t.codes.tolist(), t.rows.tolist())} for t in categories.tables}


def _cells(cube, values):
    """Each exact aggregate table as {columns: {value combination: (rows, sums)}} (codes decoded)."""
    return {t.columns: {tuple(values[c][k] for c, k in zip(t.columns, codes)): (n, s)
                        for codes, n, s in zip(t.codes.tolist(), t.rows.tolist(), t.sums.tolist())}
            for t in cube.tables}


@pytest.mark.parametrize("group_by", [None, ["s_mode"]])
def test_refresh_of_a_join_synopsis_has_the_exact_parts_and_sample_of_a_rebuild(con, group_by):
    """Fact rows appended (2 %, prices beyond the old grid): the refresh reads them joined with their
    dimensions; row count, totals (of dimension columns too), group rows, the categorical values and
    exact tables (dimension columns, the small dimension's key, pairs), the exact aggregate tables and
    their dependencies, C(t) at the grid points, fingerprint, rowid end equal a rebuild's; the sample
    is the rebuild's row for row."""
    engine = Engine(con)
    built = engine.build("sales", joins=KEYS, sample=2_000, group_by=group_by, grid=512, seed=3)
    _insert(con, "sales", _sales(400, 2, price_scale=60.0))
    assert engine.check("sales") == f"400 rows appended ({FACT_ROWS} at build, {FACT_ROWS + 400} now)"
    refreshed = _quiet(engine.refresh, "sales")
    assert refreshed.refreshed.startswith("400 appended rows added in")
    assert engine.check("sales") == ""
    assert refreshed.models["s_price"].maximum > built.models["s_price"].maximum
    rebuilt = engine.refresh("sales", full=True)
    assert rebuilt.refreshed == "rebuilt: full=True"
    assert refreshed.row_count == rebuilt.row_count == FACT_ROWS + 400
    assert (refreshed.fingerprint, refreshed.rowid_end) == (rebuilt.fingerprint, rebuilt.rowid_end)
    assert refreshed.fact_fingerprint == rebuilt.fact_fingerprint != 0
    assert refreshed.joins == rebuilt.joins and refreshed.dimension_rows == rebuilt.dimension_rows
    assert set(refreshed.totals) >= {"o_total", "c_balance", "p_weight"}
    for c, (count, total) in rebuilt.totals.items():
        assert refreshed.totals[c][0] == count and refreshed.totals[c][1] == pytest.approx(total, rel=1e-12), c
    assert [(g.key, g.rows, g.stop - g.start) for g in refreshed.groups] == \
        [(g.key, g.rows, g.stop - g.start) for g in rebuilt.groups]
    np.testing.assert_array_equal(refreshed.sample_keys, rebuilt.sample_keys)
    for c in rebuilt.sample:
        np.testing.assert_array_equal(refreshed.sample[c], rebuilt.sample[c])
    mine, theirs = refreshed.categories, rebuilt.categories
    assert mine.values == theirs.values
    assert {"o_priority", "c_segment", "p_brand", "s_productkey"} <= set(mine.values)
    for c in theirs.codes:
        np.testing.assert_array_equal(mine.codes[c], theirs.codes[c])
    ours, full = _tables(mine), _tables(theirs)
    shared = set(ours) & set(full)
    assert {("o_priority",), ("c_segment",), ("s_productkey",)} <= shared
    assert any(len(columns) == 2 for columns in shared)
    for columns in shared:
        assert ours[columns] == full[columns], columns
    for c, grid in refreshed.grids.items():
        if c in rebuilt.grids and np.array_equal(grid.points, rebuilt.grids[c].points):
            np.testing.assert_array_equal(grid.count, rebuilt.grids[c].count)
    # the exact aggregate tables (the default budget's choice at build, kept) add the appended rows as a rebuild
    assert built.cube is not None and refreshed.cube is not None and rebuilt.cube is not None
    assert [t.columns for t in refreshed.cube.tables] == [t.columns for t in built.cube.tables]
    assert (refreshed.cube.measures, refreshed.cube.nullable) == (rebuilt.cube.measures, rebuilt.cube.nullable)
    ours, full = _cells(refreshed.cube, mine.values), _cells(rebuilt.cube, theirs.values)
    assert set(ours) & set(full)
    for columns in set(ours) & set(full):
        assert set(ours[columns]) == set(full[columns]), columns
        for key, (rows, sums) in full[columns].items():
            assert ours[columns][key][0] == rows
            np.testing.assert_allclose(ours[columns][key][1], sums, rtol=1e-12)
    assert set(refreshed.cube.dependencies) == set(rebuilt.cube.dependencies)
    for pair, mapping in rebuilt.cube.dependencies.items():
        np.testing.assert_array_equal(refreshed.cube.dependencies[pair], mapping)
    price = refreshed.grids["s_price"]
    for k in [*range(0, price.points.size, 37), price.points.size - 1]:
        exact = con.execute("SELECT COUNT(*) FROM sales WHERE s_price <= ?", [float(price.points[k])]).fetchone()[0]
        assert price.count[k] == exact


def test_refreshed_join_answers_match_duckdb(con):
    """After an append, answers of the refreshed join synopsis: counts by dimension columns exact (no
    numeric filter: the exact tables), filtered sums within 10 % and mostly inside their intervals."""
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=4_000, seed=5)
    _insert(con, "sales", _sales(400, 7))
    _quiet(engine.refresh, "sales")
    sql = f"SELECT c_segment, o_priority, COUNT(*) AS n {JOIN} GROUP BY c_segment, o_priority"
    approx = engine.query(sql)
    exact = con.execute(sql + " ORDER BY c_segment, o_priority").df()
    assert list(zip(approx["c_segment"], approx["o_priority"])) == list(zip(exact["c_segment"], exact["o_priority"]))
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    covered = total = 0
    for sql in [f"SELECT p_brand, SUM(s_price) AS v {JOIN} WHERE o_total > 600 GROUP BY p_brand",
                f"SELECT c_segment, COUNT(*) AS v {JOIN} WHERE s_price BETWEEN 50 AND 150 GROUP BY c_segment"]:
        approx = engine.query(sql, with_error=True)
        key = approx.columns[0]
        truth = con.execute(sql + f" ORDER BY {key}").df()
        assert list(approx[key]) == list(truth[key])
        a, e = approx["v"].to_numpy(float), truth["v"].to_numpy(float)
        assert np.max(np.abs(a / e - 1)) < 0.10, sql
        covered += int(((approx["v low"] <= e) & (e <= approx["v high"])).sum())
        total += e.size
    assert covered >= total - 2, (covered, total)


@pytest.mark.parametrize("prepared", [False, True])
def test_a_join_query_first_checks_the_synopsis_it_loads(con, prepared):
    """A join query loads the synopses of its tables to pick the one holding them all; the one that answers is
    checked before it answers, as for a one-table query (it was not, when the join query came first)."""
    Engine(con).build("sales", joins=KEYS, sample=1_000, grid=0)
    _insert(con, "sales", _sales(500, 9))
    sql = f"SELECT p_brand, COUNT(*) {JOIN} WHERE s_quantity > 10 GROUP BY p_brand"
    warn, refuse = Engine(con), Engine(con, on_stale="error")
    if prepared:
        for engine in (warn, refuse):
            engine.prepare(sql)
    with pytest.warns(StaleSynopsisWarning, match=r"500 rows appended .*engine.refresh\('sales'\)"):
        warn.query(sql)
    with pytest.raises(StaleSynopsisError, match="500 rows appended"):
        refuse.query(sql)
    refuse.refresh("sales")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleSynopsisWarning)
        assert refuse.query(sql)["count_star()"].sum() == pytest.approx(
            con.execute(f"SELECT COUNT(*) {JOIN} WHERE s_quantity > 10").fetchone()[0], rel=0.05)


@pytest.mark.parametrize("change, why", [
    ("INSERT INTO product SELECT 50 + i, 'B9', 3.0 FROM range(951) r(i)",
     ("dimension 'product' grew from 50 to 1001 rows, past the 1000 up to which its key s_productkey is a "
      "categorical column")),
    ("DELETE FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders)",
     "dimension 'customer' changed: 310 rows at build, 300 now"),
    ("UPDATE orders SET o_total = o_total + 1 WHERE o_orderkey NOT IN (SELECT s_orderkey FROM sales)",
     "dimension 'orders' changed: contents changed (same row count)"),
])
def test_a_dimension_change_rebuilds_saying_why(con, change, why):
    """Changes to a dimension other than new rows with new keys, even to rows no fact row references
    (the join view is the same), show in check and make refresh rebuild, with fact rows appended or
    not; so does a small dimension (a categorical key) growing past the categorical limit."""
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=1_000, grid=64)
    con.execute(change)
    assert engine.check("sales").startswith("dimension ")
    _insert(con, "sales", _sales(100, 4))
    with pytest.warns(SynopsisRebuiltWarning, match=re.escape(f"refresh rebuilt the synopsis of 'sales': {why}")):
        rebuilt = engine.refresh("sales")
    assert rebuilt.refreshed.startswith(f"rebuilt: {why}")
    assert rebuilt.row_count == FACT_ROWS + 100 and engine.check("sales") == ""


def test_a_new_dimension_row_repeating_a_key_rebuilds_and_the_rebuild_refuses_it(con):
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=1_000, grid=0)
    con.execute("INSERT INTO product VALUES (7, 'B9', 3.0)")
    why = "dimension 'product' got rows whose p_productkey repeats a key (1 duplicate value(s)): it is no longer a key"
    with pytest.warns(SynopsisRebuiltWarning, match=re.escape(why)), \
            pytest.raises(ValueError, match="p_productkey is not unique"):
        engine.refresh("sales")


def test_old_fact_rows_are_checked_on_the_fact_table_alone_and_their_changes_rebuild(con, monkeypatch):
    """The refresh checks the rows it read by the fact table's own fingerprint (its covered columns
    and foreign keys), not through the join; an update of a foreign key (the joined row changes)
    or of a fact column, or a delete, rebuilds."""
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=1_000, grid=0)
    _insert(con, "sales", _sales(60, 11))

    def joined_scan(*args):
        raise AssertionError("the old rows were read through the join")

    with monkeypatch.context() as patched:
        patched.setattr(appends_module, "table_changes", joined_scan)
        refreshed = _quiet(engine.refresh, "sales")
    assert refreshed.row_count == FACT_ROWS + 60 and engine.check("sales") == ""
    for change in ["UPDATE sales SET s_orderkey = (s_orderkey + 1) % 3000 WHERE rowid = 7",
                   "UPDATE sales SET s_quantity = s_quantity + 1 WHERE rowid = 8", "DELETE FROM sales WHERE rowid = 9"]:
        con.execute(change)
        _insert(con, "sales", _sales(10, 12))
        with pytest.warns(SynopsisRebuiltWarning, match="rebuilt the synopsis of 'sales': (contents|rows) changed"):
            engine.refresh("sales")


def test_appended_rows_without_a_match_rebuild_and_the_rebuild_refuses_them(con):
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=1_000, grid=0)
    con.execute("INSERT INTO sales VALUES (99999, 1, 3, 10.0, 'AIR')")
    with pytest.warns(SynopsisRebuiltWarning, match=r"1 appended row\(s\) of 'sales' have no match in orders"), \
            pytest.raises(ValueError, match=r"1 row\(s\) of 'sales' have no match in orders.o_orderkey"):
        engine.refresh("sales")


def test_appended_null_keys_into_a_small_dimension_are_counted_and_joins_drop_them(con):
    """NULL foreign keys among the appended rows: the refresh adds them to the edge's count and to the
    key's exact table, so a query joining the dimension drops them, as SQL does, exactly."""
    engine = Engine(con)
    engine.build("sales", joins=KEYS, sample=2_000, grid=0)
    con.execute("INSERT INTO sales VALUES (5, NULL, 3, 10.0, 'AIR'), (6, NULL, 4, 20.0, 'MAIL'), (7, 3, 5, 30.0, 'AIR')")
    refreshed = _quiet(engine.refresh, "sales")
    assert {e["parent"]: e["nulls"] for e in refreshed.joins} == {"orders": 0, "product": 2, "customer": 0}
    assert engine.query("SELECT COUNT(*) FROM sales").iloc[0, 0] == FACT_ROWS + 3
    joined = "FROM sales JOIN product ON s_productkey = p_productkey"
    assert engine.query(f"SELECT COUNT(*) {joined}").iloc[0, 0] == FACT_ROWS + 1
    sql = f"SELECT p_brand, COUNT(*) AS n {joined} GROUP BY p_brand"
    approx, exact = engine.query(sql), con.execute(sql + " ORDER BY p_brand").df()
    assert list(approx["p_brand"]) == list(exact["p_brand"])
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))


def test_a_join_synopsis_without_dimension_fingerprints_rebuilds_on_refresh(con):
    """One stored before dimensions' fingerprints were kept: check cannot judge its dimensions (it
    stays fresh), and a refresh after an append rebuilds, saying so; the rebuilt one keeps them."""
    engine = Engine(con)
    built = engine.build("sales", joins=KEYS, sample=1_000, grid=0)
    for e in built.joins:
        del e["fingerprint"]
    synopsis_store.save(con, built)
    engine = Engine(con)
    assert engine.check("sales") == ""
    _insert(con, "sales", _sales(50, 9))
    with pytest.warns(SynopsisRebuiltWarning, match="keeps no fingerprint of dimension 'orders'"):
        rebuilt = engine.refresh("sales")
    assert all("fingerprint" in e for e in rebuilt.joins)


def _grow_dimensions(con):
    """New rows with new keys in all three dimensions: customers 310-314 (a new segment), orders
    3000-3099 (of old and new customers), products 50-54 (a new brand); the old rows unchanged."""
    rng = np.random.default_rng(21)
    _insert(con, "customer", pd.DataFrame({"c_custkey": np.arange(310, 315), "c_segment": ["MACH"] * 5,
                                           "c_balance": rng.uniform(0.0, 1000.0, 5)}))
    _insert(con, "orders", pd.DataFrame({"o_orderkey": np.arange(3_000, 3_100),
                                         "o_custkey": rng.integers(250, 315, 100),
                                         "o_priority": rng.choice(["1-URGENT", "2-HIGH", "3-LOW"], 100),
                                         "o_total": rng.gamma(2.0, 500.0, 100)}))
    _insert(con, "product", pd.DataFrame({"p_productkey": np.arange(50, 55), "p_brand": ["B7"] * 5,
                                          "p_weight": rng.uniform(1.0, 20.0, 5)}))


def test_rows_appended_to_dimensions_refresh_incrementally_as_a_rebuild(con):
    """Dimensions that only got rows (new keys) keep the synopsis: a refresh without new fact rows
    brings the dimensions' rows and fingerprints up to date and answers as before; fact rows then
    appended that name the new rows (new customers, orders, products; a new segment and brand) are
    read joined with them, and the refreshed synopsis equals a rebuild: rows, totals, dimensions,
    categorical values and tables, aggregate tables, sample; COUNT by the new segment is exact."""
    engine = Engine(con)
    built = engine.build("sales", joins=KEYS, sample=2_000, grid=256, seed=3)
    _grow_dimensions(con)
    assert engine.check("sales").startswith("dimension ")
    grown = _quiet(engine.refresh, "sales")
    assert grown.refreshed.startswith("0 appended rows (dimension rows added: 100 to orders, 5 to product, "
                                      "5 to customer) added in")
    assert grown.dimension_rows == {"orders": 3_100, "product": 55, "customer": 315}
    assert engine.check("sales") == ""
    np.testing.assert_array_equal(grown.sample_keys, built.sample_keys)
    assert grown.categories.values == built.categories.values
    rng = np.random.default_rng(8)
    extra = _sales(500, 9)
    extra["s_orderkey"] = np.where(rng.random(500) < 0.5, rng.integers(3_000, 3_100, 500), extra["s_orderkey"])
    extra["s_productkey"] = np.where(rng.random(500) < 0.2, rng.integers(50, 55, 500), extra["s_productkey"])
    _insert(con, "sales", extra)
    refreshed = _quiet(engine.refresh, "sales")
    assert refreshed.refreshed.startswith("500 appended rows added in")
    assert "MACH" in refreshed.categories.values["c_segment"] and "B7" in refreshed.categories.values["p_brand"]
    sql = f"SELECT c_segment, COUNT(*) AS n, SUM(s_price) AS s {JOIN} GROUP BY c_segment"
    approx, exact = engine.query(sql), con.execute(sql + " ORDER BY c_segment").df()
    assert list(approx["c_segment"]) == list(exact["c_segment"])
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    rebuilt = engine.refresh("sales", full=True)
    assert refreshed.row_count == rebuilt.row_count == FACT_ROWS + 500
    assert refreshed.joins == rebuilt.joins and refreshed.dimension_rows == rebuilt.dimension_rows
    assert (refreshed.fingerprint, refreshed.fact_fingerprint) == (rebuilt.fingerprint, rebuilt.fact_fingerprint)
    for c, (count, total) in rebuilt.totals.items():
        assert refreshed.totals[c][0] == count and refreshed.totals[c][1] == pytest.approx(total, rel=1e-12), c
    np.testing.assert_array_equal(refreshed.sample_keys, rebuilt.sample_keys)
    mine, theirs = refreshed.categories, rebuilt.categories
    assert mine.values == theirs.values and _tables(mine) == _tables(theirs)
    ours, full = _cells(refreshed.cube, mine.values), _cells(rebuilt.cube, theirs.values)
    for columns in set(ours) & set(full):
        assert set(ours[columns]) == set(full[columns]), columns
        for key, (rows, sums) in full[columns].items():
            assert ours[columns][key][0] == rows
            np.testing.assert_allclose(ours[columns][key][1], sums, rtol=1e-12)


def test_a_synopsis_stored_without_dimension_rowid_ends_takes_the_build_row_counts(con):
    """A join synopsis stored before the dimensions' rowid ends were kept: their rows at build stand
    for them (rowids of tables without deletes), so a dimension that only got rows still refreshes."""
    engine = Engine(con)
    built = engine.build("sales", joins=KEYS, sample=1_000, grid=0)
    for e in built.joins:
        del e["rowid_end"]
    synopsis_store.save(con, built)
    engine = Engine(con)
    _grow_dimensions(con)
    refreshed = _quiet(engine.refresh, "sales")
    assert refreshed.dimension_rows == {"orders": 3_100, "product": 55, "customer": 315}
    assert {e["parent"]: e["rowid_end"] for e in refreshed.joins} == {"orders": 3_100, "product": 55, "customer": 315}


def test_a_numeric_dimension_of_a_joined_table_takes_new_values_as_a_rebuild(con):
    """A DATE column of a dimension table (orders.o_date, 200 days) and its months are numeric
    dimensions of the exact tables (parzen.aqp.cube_dimensions); new orders with a new date in a new
    month, and fact rows naming them and old orders, are read joined and added: the merged dimension,
    the tables' cells and the days -> months map equal a rebuild's."""
    con.execute("ALTER TABLE orders ADD COLUMN o_date DATE")
    con.execute("UPDATE orders SET o_date = DATE '2020-01-01' + (o_orderkey * 7 % 200)::INTEGER")
    engine = Engine(con)
    views = [["o_date", "s_mode"], ["o_date@month"], ["o_priority", "o_date@month"]]
    built = engine.build("sales", joins=KEYS, sample=2_000, grid=0, seed=3, cube=views)
    assert {"o_date", "o_date@month"} <= set(built.cube.dimensions)
    con.execute("INSERT INTO orders VALUES (3000, 5, '2-HIGH', 100.0, DATE '2021-03-03'), "
                "(3001, 6, '3-LOW', 80.0, DATE '2020-02-02')")
    extra = _sales(300, 9)
    extra.loc[:9, "s_orderkey"] = 3_000
    extra.loc[10:19, "s_orderkey"] = 3_001
    _insert(con, "sales", extra)
    refreshed = _quiet(engine.refresh, "sales")
    assert refreshed.refreshed.startswith("300 appended rows")
    days = refreshed.cube.dimensions["o_date"].values
    assert days.size == built.cube.dimensions["o_date"].values.size + 1  # 2020-02-02 is among the old days
    assert refreshed.cube.dimensions["o_date@month"].values.size == built.cube.dimensions["o_date@month"].values.size + 1
    rebuilt = engine.refresh("sales", full=True)
    for c, d in rebuilt.cube.dimensions.items():
        np.testing.assert_array_equal(refreshed.cube.dimensions[c].values, d.values)
    values = refreshed.cube.values_with(refreshed.categories.values)
    full_values = rebuilt.cube.values_with(rebuilt.categories.values)
    assert _cells(refreshed.cube, values).keys() == _cells(rebuilt.cube, full_values).keys()
    for columns, cells in _cells(rebuilt.cube, full_values).items():
        ours = _cells(refreshed.cube, values)[columns]
        assert set(ours) == set(cells), columns
        for key, (rows, sums) in cells.items():
            assert ours[key][0] == rows
            np.testing.assert_allclose(ours[key][1], sums, rtol=1e-12)
    for pair, mapping in rebuilt.cube.dependencies.items():
        np.testing.assert_array_equal(refreshed.cube.dependencies[pair], mapping)
    assert set(refreshed.cube.dependencies) == set(rebuilt.cube.dependencies) >= {("o_date", "o_date@month")}
