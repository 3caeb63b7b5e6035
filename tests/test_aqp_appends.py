"""Engine.refresh after appends (issue 19, item 4; parzen.aqp.appends): the appended rows alone are
read and added, giving the exact parts and the sample a rebuild gives; deletes and updates are
detected and rebuild, saying why; Parquet files added are read alone."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, StaleSynopsisWarning, SynopsisRebuiltWarning
from parzen.aqp import appends as appends_module
from parzen.aqp.grid import kernel_cumulative

ROWS = 30_000


def _table(con, rows=ROWS, start=0, name="t"):
    """a: a continuous column (gamma-like, non-negative); k: integers 0..499; m: 6 values (discrete);
    g: groups x, y, z of unequal size; rowid order = i."""
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {name} (a DOUBLE, k INTEGER, m DOUBLE, g VARCHAR)")
    con.execute(
        f"INSERT INTO {name} SELECT -ln(1 - (hash(i, 1) % 1000003) / 1000003.0) * 2 + i / 50.0, "
        f"(hash(i, 2) % 500)::INTEGER, (hash(i, 3) % 6)::DOUBLE, "
        f"CASE WHEN hash(i, 4) % 10 < 6 THEN 'x' WHEN hash(i, 4) % 10 < 9 THEN 'y' ELSE 'z' END "
        f"FROM range({start}, {start + rows}) r(i)")


@pytest.fixture
def con():
    con = duckdb.connect(":memory:")
    _table(con)
    return con


def _exact_below(con, column, t):
    return con.execute(f"SELECT COUNT(*), COALESCE(SUM({column}), 0) FROM t WHERE {column} <= ?", [float(t)]).fetchall()[0]


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)  # an incremental refresh must not rebuild
        return call(*args, **kwargs)


@pytest.mark.parametrize("group_by", [None, ["g"]])
def test_refresh_after_an_append_has_the_exact_parts_and_sample_of_a_rebuild(con, group_by):
    """Totals, group rows and totals, summaries, fingerprint equal a rebuild's (counts exactly, sums to
    round-off); the sample is the rebuild's row for row (the same keys hash(rowid, seed) and quotas);
    C(t), S(t) at every grid point (those added beyond the old range too) equal DuckDB's COUNT, SUM."""
    engine = Engine(con)
    built = engine.build("t", sample=3_000, group_by=group_by, grid=1024, seed=4)  # k: every k + 1/2
    _table(con, rows=600, start=ROWS + 3_000)  # 2 %: a from 660, beyond the old grid; rows in every group
    con.execute("INSERT INTO t VALUES (5.0, 7, 2, 'w'), (6.0, 8, 3, 'w')")  # a new group
    assert engine.check("t") == f"602 rows appended ({ROWS} at build, {ROWS + 602} now)"
    refreshed = _quiet(engine.refresh, "t")
    assert refreshed.refreshed.startswith("602 appended rows added in")
    assert refreshed.full_build_rows == ROWS and engine.check("t") == ""
    assert refreshed.models["a"].maximum > built.models["a"].maximum  # beyond the old grid ...
    assert refreshed.grids["a"].points[-1] > built.grids["a"].points[-1]  # ... which grew points there
    for sql, tolerance in [("SELECT COUNT(*), SUM(k) FROM t WHERE k BETWEEN 100 AND 250", 1e-12),  # ends on points
                           ("SELECT COUNT(*) FROM t WHERE a > 312.5", 2e-3)]:  # interpolated between exact points
        answer = engine.query(sql)
        assert answer.attrs["form"] == "grid"
        np.testing.assert_allclose(answer.iloc[0].to_numpy(dtype=float), con.execute(sql).fetchall()[0], rtol=tolerance)
    rebuilt = engine.refresh("t", full=True)
    assert rebuilt.refreshed == "rebuilt: full=True"
    assert refreshed.row_count == rebuilt.row_count == ROWS + 602
    assert (refreshed.fingerprint, refreshed.rowid_end) == (rebuilt.fingerprint, rebuilt.rowid_end)
    for c, (count, total) in rebuilt.totals.items():
        assert refreshed.totals[c][0] == count and refreshed.totals[c][1] == pytest.approx(total, rel=1e-12)
    assert [(g.key, g.rows, g.stop - g.start) for g in refreshed.groups] == \
        [(g.key, g.rows, g.stop - g.start) for g in rebuilt.groups]
    for mine, theirs in zip(refreshed.groups, rebuilt.groups):
        assert {c: n for c, (n, _) in mine.totals.items()} == {c: n for c, (n, _) in theirs.totals.items()}
    np.testing.assert_array_equal(refreshed.sample_keys, rebuilt.sample_keys)
    for c in rebuilt.sample:
        np.testing.assert_array_equal(refreshed.sample[c], rebuilt.sample[c])
    assert refreshed.summary.keys == rebuilt.summary.keys
    np.testing.assert_array_equal(refreshed.summary.count, rebuilt.summary.count)
    np.testing.assert_array_equal(refreshed.summary.low, rebuilt.summary.low)
    np.testing.assert_array_equal(refreshed.summary.high, rebuilt.summary.high)
    np.testing.assert_allclose(refreshed.summary.m2, rebuilt.summary.m2, rtol=1e-9)
    if group_by is None:  # the default tables group by k, a numeric dimension (parzen.aqp.cube_dimensions)
        assert "k" in refreshed.cube.dimensions
        ours = _cells(refreshed.cube, _with_dimensions(refreshed))
        full = _cells(rebuilt.cube, _with_dimensions(rebuilt))
        shared = set(ours) & set(full)
        assert any("k" in columns for columns in shared)
        for columns in shared:
            assert ours[columns].keys() == full[columns].keys(), columns
            for key, (rows, sums, counts) in full[columns].items():
                assert ours[columns][key][0] == rows and ours[columns][key][2] == counts
                np.testing.assert_allclose(ours[columns][key][1], sums, rtol=1e-12)
    for c, m in refreshed.models.items():
        assert (m.kind, m.lower, m.integer, m.minimum, m.maximum) == \
            (rebuilt.models[c].kind, rebuilt.models[c].lower, rebuilt.models[c].integer, rebuilt.models[c].minimum,
             rebuilt.models[c].maximum)
        assert m.bandwidth == pytest.approx(rebuilt.models[c].bandwidth, rel=0.05)  # kept, not re-selected
    _, weights, scale = refreshed.strata()
    for c, grid in refreshed.grids.items():
        if not grid.steps:  # c(t), updated from the kernels that left and joined: as recomputed, to 1 %
            recomputed = kernel_cumulative(refreshed.models[c], refreshed.sample[c], weights, scale, grid.points)[2]
            assert np.abs(grid.density - recomputed).max() < 0.01 * recomputed.max(), c
        for k in [*range(0, grid.points.size, 7), grid.points.size - 1]:
            count, total = _exact_below(con, c, grid.points[k])
            assert grid.count[k] == count and grid.moment[k] == pytest.approx(total, rel=1e-12, abs=1e-9), (c, k)


def test_repeated_refreshes_keep_a_uniform_sample_with_the_quotas_of_a_rebuild(con):
    """After four appends, each stratum holds the rows of its smallest keys hash(rowid, seed) over the
    whole table (DuckDB's own ORDER BY), its quota as the build allots it; the appended rows' share
    of the sample is their share of the table (within 4 binomial standard deviations)."""
    engine = Engine(con)
    engine.build("t", sample=2_000, group_by=["g"], grid=0, seed=9)
    for step in range(4):
        _table(con, rows=1_500, start=ROWS + 1_500 * step)
        refreshed = _quiet(engine.refresh, "t")
    rows = ROWS + 6_000
    assert refreshed.row_count == rows and refreshed.full_build_rows == ROWS
    for g in refreshed.groups:
        quota = max(int(np.ceil(2_000 * g.rows / rows)), min(g.rows, 1_000))
        assert g.stop - g.start == quota
        smallest = con.execute("SELECT hash(rowid, 9) AS h FROM t WHERE g = ? ORDER BY h LIMIT ?",
                               [g.key[0], quota]).fetchnumpy()["h"]
        np.testing.assert_array_equal(np.sort(refreshed.sample_keys[g.start:g.stop]), smallest)
    big = refreshed.groups[0]
    share = np.mean(refreshed.sample["a"][big.start:big.stop] >= 600.0)  # rows i >= ROWS: a >= 600 always
    expected = con.execute("SELECT AVG((a >= 600)::INT) FROM t WHERE g = 'x'").fetchall()[0][0]
    n = big.stop - big.start
    assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / n)


def test_a_refresh_reads_only_the_appended_rows(con, monkeypatch):
    """The rows read by the refresh are exactly the appended ones (their count and their keys)."""
    engine = Engine(con)
    engine.build("t", sample=1_000, grid=64)
    _table(con, rows=250, start=ROWS)
    seen = []
    real = appends_module.database_batches

    def spy(*args):
        for frame, keys in real(*args):
            seen.append(keys)
            yield frame, keys

    monkeypatch.setattr(appends_module, "database_batches", spy)
    _quiet(engine.refresh, "t")
    keys = np.concatenate(seen)
    expected = con.execute(f"SELECT hash(rowid, 0) AS h FROM t WHERE rowid >= {ROWS}").fetchnumpy()["h"]
    np.testing.assert_array_equal(np.sort(keys), np.sort(expected))


def test_unchanged_table_refresh_returns_the_stored_synopsis(con):
    engine = Engine(con)
    built = engine.build("t", sample=1_000, grid=0)
    assert _quiet(engine.refresh, "t") is built


@pytest.mark.parametrize("change, why", [
    ("DELETE FROM t WHERE k = 3", "rows changed: 30000 at build"),
    ("UPDATE t SET a = a + 1 WHERE k = 3", "contents changed (same row count)"),
    ("UPDATE t SET g = 'q' WHERE k = 3", "contents changed (same row count)"),
])
def test_deletes_and_updates_are_detected_and_rebuild_saying_why(con, change, why):
    """A delete or an update (also of a group column), alone or with appends, makes refresh rebuild,
    with a warning and ``refreshed`` naming the reason; check says the same."""
    engine = Engine(con)
    engine.build("t", sample=1_000, group_by=["g"], grid=64)
    con.execute(change)
    _table(con, rows=100, start=ROWS)
    assert engine.check("t").startswith("rows changed")  # rows added too: the count differs
    con.execute(f"DELETE FROM t WHERE rowid >= {ROWS}")  # back to the count at build
    if why.startswith("rows"):
        assert engine.check("t").startswith(why)
    else:
        assert engine.check("t") == why
    with pytest.warns(SynopsisRebuiltWarning, match=r"refresh rebuilt the synopsis of 't': "):
        rebuilt = engine.refresh("t")
    assert rebuilt.refreshed.startswith("rebuilt: ")
    assert rebuilt.row_count == con.execute("SELECT COUNT(*) FROM t").fetchall()[0][0]
    assert engine.check("t") == ""


@pytest.mark.parametrize("insert, why", [
    ("INSERT INTO t VALUES (1.5, 2, 1, 'x')", None),  # fits: no rebuild
    ("INSERT INTO t VALUES (-1.0, 2, 1, 'x')", "was non-negative at build"),
    ("INSERT INTO t VALUES (1.5, 2, 1.5, 'x')", "column 'm' held only integers at build and now has fractions"),
    ("INSERT INTO t VALUES (1e6, 2, 1, 'x')", "beyond its grid"),
])
def test_rows_that_do_not_fit_the_models_rebuild(con, insert, why):
    engine = Engine(con)
    engine.build("t", sample=1_000, grid=64)
    con.execute(insert)
    if why is None:
        _quiet(engine.refresh, "t")
    else:
        with pytest.warns(SynopsisRebuiltWarning, match=why):
            engine.refresh("t")


def test_appends_beyond_a_quarter_of_the_full_build_rebuild(con):
    """Bandwidths are kept while the rows appended since the last full build stay within 25 % of it."""
    con.execute("CREATE TABLE u AS SELECT a, k FROM t")
    engine = Engine(con)
    engine.build("u", sample=1_000, grid=0)
    con.execute(f"INSERT INTO u SELECT a, k FROM u LIMIT {ROWS // 5}")  # 20 %: added
    _quiet(engine.refresh, "u")
    con.execute(f"INSERT INTO u SELECT a, k FROM u LIMIT {ROWS // 10}")  # 30 % since the full build
    with pytest.warns(SynopsisRebuiltWarning, match="more than 25%: its bandwidths are selected again"):
        rebuilt = engine.refresh("u")
    assert rebuilt.full_build_rows == 0


def test_non_finite_appended_values_are_refused(con):
    engine = Engine(con)
    engine.build("t", sample=1_000, grid=0)
    con.execute("INSERT INTO t VALUES ('inf'::DOUBLE, 1, 1, 'x')")
    with pytest.raises(ValueError, match="column 'a' of table 't' holds 1 non-finite"):
        engine.refresh("t")


def test_a_stale_verdict_is_lifted_by_an_incremental_refresh(con):
    engine = Engine(con, on_stale="error")
    engine.build("t", sample=1_000, grid=64)
    _table(con, rows=10, start=ROWS)
    assert engine.check("t").startswith("10 rows appended")
    engine.refresh("t")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleSynopsisWarning)
        assert engine.query("SELECT COUNT(*) FROM t").iloc[0, 0] == ROWS + 10
    assert Engine(con).synopsis("t").row_count == ROWS + 10  # stored


@pytest.mark.parametrize("group_by", [None, ["g"]])
def test_refresh_adds_the_categorical_columns_exact_tables_and_codes_as_a_rebuild(con, group_by):
    """The categorical column g (with the new value 'w') gets a rebuild's exact values and exact table,
    and the merged sample (a rebuild's, row for row) the rebuild's codes."""
    engine = Engine(con)
    engine.build("t", sample=3_000, group_by=group_by, seed=4)
    _table(con, rows=600, start=ROWS + 3_000)
    con.execute("INSERT INTO t VALUES (5.0, 7, 2, 'w'), (6.0, 8, 5, 'w')")  # a new value of g
    refreshed = _quiet(engine.refresh, "t")
    rebuilt = Engine(duckdb.connect(":memory:")).con  # the same table, built in full elsewhere
    rebuilt.register("source_t", con.execute("SELECT * FROM t ORDER BY rowid").df())
    rebuilt.execute("CREATE TABLE t AS SELECT * FROM source_t")
    full = Engine(rebuilt).build("t", sample=3_000, group_by=group_by, seed=4)
    mine, theirs = refreshed.categories, full.categories
    assert mine is not None and theirs is not None
    assert mine.values == theirs.values == {"g": ["w", "x", "y", "z"]}
    as_dict = {t.columns: dict(zip(map(tuple, t.codes.tolist()), t.rows.tolist())) for t in theirs.tables}
    assert {t.columns: dict(zip(map(tuple, t.codes.tolist()), t.rows.tolist())) for t in mine.tables} == as_dict
    assert sum(as_dict[("g",)].values()) == ROWS + 602
    np.testing.assert_array_equal(refreshed.sample["a"], full.sample["a"])  # the same rows, in the same order
    np.testing.assert_array_equal(mine.codes["g"], theirs.codes["g"])
    counts = dict(zip(*np.unique(np.array(mine.values["g"], dtype=object)[mine.codes["g"]], return_counts=True)))
    if group_by:  # the strata: each group's sampled rows carry its value
        assert {str(g.key[0]): g.stop - g.start for g in refreshed.groups} == counts
    answer = engine.query("SELECT g, COUNT(*) AS n FROM t GROUP BY g")  # exact: no numeric filter
    assert dict(zip(answer["g"], answer["n"])) == {"w": 2, **{g: n for (g,), n in zip(
        con.execute("SELECT g FROM t WHERE g <> 'w' GROUP BY g ORDER BY g").fetchall(),
        con.execute("SELECT COUNT(*) FROM t WHERE g <> 'w' GROUP BY g ORDER BY g").fetchnumpy()["count_star()"])}}


def _cities(con, rows, start, seed, name="c", city_count=40, null_price=False):
    """city (40 values) -> nation (8) -> region (3); mode (4 values); price (gamma, or with NULLs); qty 1..50."""
    rng = np.random.default_rng(seed)
    city = rng.integers(0, city_count, rows)
    frame = pd.DataFrame({"city": [f"C{k:02d}" for k in city], "nation": [f"N{k % 8}" for k in city],
                          "region": [f"R{k % 8 % 3}" for k in city],
                          "mode": rng.choice(["AIR", "MAIL", "SHIP", "RAIL"], rows),
                          "price": np.where(rng.random(rows) < 0.1, np.nan, rng.gamma(2.0, 50.0, rows))
                          if null_price else rng.gamma(2.0, 50.0, rows),
                          "qty": rng.integers(1, 51, rows)}, index=np.arange(start, start + rows))
    con.register("frame_to_insert", frame)
    con.execute(f"CREATE TABLE IF NOT EXISTS {name} AS SELECT * FROM frame_to_insert LIMIT 0")
    con.execute(f"INSERT INTO {name} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _cells(cube, values):
    """Each exact aggregate table as {columns: {value combination: (rows, sums, counts)}} (codes decoded)."""
    out = {}
    for t in cube.tables:
        out[t.columns] = {tuple(values[c][k] for c, k in zip(t.columns, codes)): (n, s, m) for codes, n, s, m in
                          zip(t.codes.tolist(), t.rows.tolist(), t.sums.tolist(), t.counts.tolist())}
    return out


def _dependencies(cube, values):
    return {pair: {values[pair[0]][k]: values[pair[1]][m] for k, m in enumerate(mapping.tolist())}
            for pair, mapping in cube.dependencies.items()}


def _assert_same_cube(mine, theirs, values_mine, values_theirs):
    assert (mine.measures, mine.nullable) == (theirs.measures, theirs.nullable)
    ours, full = _cells(mine, values_mine), _cells(theirs, values_theirs)
    assert set(ours) == set(full)
    for columns, cells in full.items():
        assert set(ours[columns]) == set(cells), columns
        for key, (rows, sums, counts) in cells.items():
            n, s, m = ours[columns][key]
            assert (n, m) == (rows, counts), (columns, key)
            np.testing.assert_allclose(s, sums, rtol=1e-12)
    assert _dependencies(mine, values_mine) == _dependencies(theirs, values_theirs)
    for t in mine.tables:  # code order, as a build stores its cells
        assert t.codes.dtype == np.int16
        assert np.all(np.diff(t.codes[:, 0].astype(np.int64)) >= 0)


@pytest.mark.parametrize("group_by", [None, ["mode"]])
def test_refresh_adds_the_appended_rows_into_the_exact_aggregate_tables_as_a_rebuild(group_by):
    """Exact aggregate tables (parzen.aqp.cubes; listed, with the dependencies city -> nation -> region)
    are additive: after appending 2 % with a new city, a new mode and the first NULL prices, the
    refreshed tables (cells, rows, sums, counts, codes, dependencies) equal a rebuild's, and answer
    COUNT / SUM / AVG by a rolled-up column exactly."""
    con = duckdb.connect(":memory:")
    _cities(con, 20_000, 0, 1)
    engine = Engine(con)
    views = [["city", "mode"], ["region"], ["nation", "mode"]]
    built = engine.build("c", sample=2_000, group_by=group_by, grid=256, seed=2, cube=views)
    assert built.cube is not None and ("city", "nation") in built.cube.dependencies and not built.cube.nullable
    _cities(con, 400, 20_000, 3, city_count=41, null_price=True)  # C40 -> N0 -> R0: a new city, the rule kept
    con.execute("INSERT INTO c VALUES ('C07', 'N7', 'R1', 'TRUCK', 12.5, 3)")  # a new mode
    refreshed = _quiet(engine.refresh, "c")
    assert refreshed.cube is not None and refreshed.cube.nullable == ["price"]
    assert "C40" in refreshed.categories.values["city"]
    sql = "SELECT region, COUNT(*) AS n, SUM(price) AS s, AVG(qty) AS q FROM c WHERE mode IN ('AIR', 'TRUCK') GROUP BY region"
    approx, exact = engine.query(sql), con.execute(sql + " ORDER BY region").df()
    assert approx.attrs["form"] == "exact table"
    assert list(approx["region"]) == list(exact["region"])
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    np.testing.assert_allclose(approx["s"].to_numpy(float), exact["s"].to_numpy(float), rtol=1e-12)
    np.testing.assert_allclose(approx["q"].to_numpy(float), exact["q"].to_numpy(float), rtol=1e-12)
    rebuilt = engine.refresh("c", full=True)
    assert refreshed.categories.values == rebuilt.categories.values
    _assert_same_cube(refreshed.cube, rebuilt.cube, refreshed.categories.values, rebuilt.categories.values)


def test_a_merge_without_the_appended_rows_cells_rebuilds_instead_of_dropping_the_tables():
    """appends.merged given the appended rows' summaries but not their combinations or cells (a path
    that reads the rows alone) says why it must rebuild, never returns the synopsis without its exact
    tables or with tables that miss the new rows."""
    from parzen.aqp.changes import table_changes

    con = duckdb.connect(":memory:")
    _cities(con, 5_000, 0, 1)
    built = Engine(con).build("c", sample=1_000, grid=0, seed=2, cube=[["city", "mode"]])
    assert built.cube is not None and built.categories is not None
    _cities(con, 100, 5_000, 3)
    changes = table_changes(con, built, None)
    appended = appends_module.AppendedRows.read(built, appends_module.database_batches(con, built, changes))
    out = appends_module.merged(built, appended)
    assert out.synopsis is None and "categorical values were not read" in out.why
    appended.combinations = {}  # combinations read (none), the tables' cells not
    out = appends_module.merged(built, appended)
    assert out.synopsis is None and "cells were not read" in out.why


def test_a_dependency_that_appended_rows_break_is_dropped_and_the_tables_stay_exact():
    """An appended row puts city C03 in another nation: city -> nation no longer holds, so the refresh
    drops it (as a rebuild finds), and nation is answered from a table that holds it, not rolled up."""
    con = duckdb.connect(":memory:")
    _cities(con, 20_000, 0, 1)
    engine = Engine(con)
    built = engine.build("c", sample=2_000, seed=2, grid=0, cube=[["city", "mode"], ["nation", "region"]])
    assert {("city", "nation"), ("city", "region"), ("nation", "region")} <= set(built.cube.dependencies)
    _cities(con, 300, 20_000, 5)
    con.execute("INSERT INTO c VALUES ('C03', 'N5', 'R2', 'AIR', 40.0, 3)")  # C03 was in N3 (R0); N5 stays in R2
    refreshed = _quiet(engine.refresh, "c")
    kept = set(refreshed.cube.dependencies)
    assert ("city", "nation") not in kept and ("city", "region") not in kept and ("nation", "region") in kept
    sql = "SELECT nation, COUNT(*) AS n, SUM(price) AS s FROM c GROUP BY nation"
    approx, exact = engine.query(sql), con.execute(sql + " ORDER BY nation").df()
    assert approx.attrs["form"] == "exact table"
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    rebuilt = engine.refresh("c", full=True)
    _assert_same_cube(refreshed.cube, rebuilt.cube, refreshed.categories.values, rebuilt.categories.values)


def _dated(con, rows, start):
    """day: 300 days from 2021-01-01 (10 months); qty: the even integers 0..398 (200 values, past a
    categorical integer's 64: a numeric dimension); disc: DECIMAL(8, 2), 13 values 0, 0.5, ..., 6; price; g: x, y."""
    con.execute("CREATE TABLE IF NOT EXISTS d (day DATE, qty INTEGER, disc DECIMAL(8, 2), price DOUBLE, g VARCHAR)")
    con.execute("INSERT INTO d SELECT DATE '2021-01-01' + (i % 300)::INTEGER, ((i * 7) % 200 * 2)::INTEGER, "
                "((i % 13) * 0.5)::DECIMAL(8, 2), -ln(1 - (hash(i, 1) % 1000003) / 1000003.0) * 20, "
                f"CASE WHEN i % 3 = 0 THEN 'x' ELSE 'y' END FROM range({start}, {start + rows}) t(i)")


def _with_dimensions(synopsis):
    """The values of every column the exact tables hold: categorical and numeric dimensions'."""
    return synopsis.cube.values_with(synopsis.categories.values)


def test_refresh_adds_appended_rows_with_new_numeric_dimension_values_as_a_rebuild():
    """Exact tables grouping by a DATE (days), its months, an integer and a DECIMAL column
    (parzen.aqp.cube_dimensions): appended rows with a new day in a new month, a new integer and a
    new decimal between old values, and the first NULLs of day and qty are added incrementally; the
    merged dimensions, cells (codes decoded), rows, sums and the days -> months map equal a rebuild's,
    and a range of months is answered exactly from the tables."""
    con = duckdb.connect(":memory:")
    _dated(con, 20_000, 0)
    engine = Engine(con)
    views = [["g", "day"], ["day@month"], ["qty", "g"], ["disc"], ["g", "day@month", "disc"]]
    built = engine.build("d", sample=2_000, grid=0, seed=5, cube=views)
    assert set(built.cube.dimensions) == {"day", "day@month", "qty", "disc"}
    assert built.cube.dimensions["qty"].values.size == 200 and not built.cube.dimensions["day"].nulls
    _dated(con, 300, 20_000)
    con.execute("INSERT INTO d VALUES (DATE '2022-02-14', 201, 2.25, 10.0, 'x'), (NULL, NULL, 3, 5.0, 'y'), "
                "(DATE '2021-03-05', 17, NULL, 2.5, 'z')")
    refreshed = _quiet(engine.refresh, "d")
    assert refreshed.refreshed.startswith("303 appended rows added in")
    merged = refreshed.cube.dimensions
    assert merged["day"].nulls and merged["qty"].nulls and merged["disc"].nulls
    assert 201.0 in merged["qty"].values and 17.0 in merged["qty"].values and 2.25 in merged["disc"].values
    assert merged["day@month"].values.size == 11  # February 2022 joined
    sql = ("SELECT g, COUNT(*) AS n, SUM(price) AS s FROM d WHERE day >= DATE '2021-03-01' AND day < DATE '2022-03-01' "
           "GROUP BY g")
    approx, exact = engine.query(sql), con.execute(sql + " ORDER BY g").df()
    assert approx.attrs["form"] == "exact table"
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    np.testing.assert_allclose(approx["s"].to_numpy(float), exact["s"].to_numpy(float), rtol=1e-12)
    rebuilt = engine.refresh("d", full=True)
    assert set(rebuilt.cube.dimensions) == set(merged)
    for c, d in rebuilt.cube.dimensions.items():
        np.testing.assert_array_equal(merged[c].values, d.values)
        assert (merged[c].nulls, merged[c].scale, merged[c].temporal, merged[c].source) == \
            (d.nulls, d.scale, d.temporal, d.source)
        if d.highs is not None:
            np.testing.assert_array_equal(merged[c].highs, d.highs)
    assert ("day", "day@month") in refreshed.cube.dependencies
    _assert_same_cube(refreshed.cube, rebuilt.cube, _with_dimensions(refreshed), _with_dimensions(rebuilt))


def test_a_numeric_dimension_passing_its_limit_rebuilds_saying_why(monkeypatch):
    """A refresh whose appended rows take a numeric dimension past its limit rebuilds (a build would
    not hold it at full resolution), and says which dimension."""
    from parzen.aqp import cube_dimensions

    con = duckdb.connect(":memory:")
    _dated(con, 20_000, 0)
    engine = Engine(con)
    monkeypatch.setattr(cube_dimensions, "DATE_LIMIT", 200)  # qty's 200 whole numbers: at the limit
    built = engine.build("d", sample=2_000, grid=0, seed=5)
    assert "qty" in built.cube.dimensions
    con.execute("INSERT INTO d VALUES (DATE '2021-02-01', 1, 3, 4.0, 'x')")  # a 201st value
    with pytest.warns(SynopsisRebuiltWarning, match="numeric dimension 'qty' of the exact tables now has 201 values"):
        rebuilt = engine.refresh("d")
    assert "qty" not in rebuilt.cube.dimensions and rebuilt.row_count == 20_001


@pytest.mark.parametrize("update", [None, "UPDATE t SET a = a + 1 WHERE rowid = 11"])
def test_table_changes_parts_equal_aggregates_of_the_rows_below_and_beyond_the_build(con, update):
    """table_changes reads the rows below the build's rowid end as the whole table less the appended rows:
    its counts, fingerprints and non-finite counts equal those of plain WHERE queries on either part, and an
    update of an old row shows in the old rows' fingerprint alone."""
    from parzen.aqp.build import fingerprint_columns, fingerprint_sql
    from parzen.aqp.changes import table_changes

    built = Engine(con).build("t", sample=1_000, group_by=["g"], grid=0)
    _table(con, rows=250, start=ROWS)
    con.execute("INSERT INTO t VALUES ('nan'::DOUBLE, 1, 2, 'x'), ('inf'::DOUBLE, 1, 2, 'y')")
    if update:
        con.execute(update)
    sums = fingerprint_sql(fingerprint_columns(built.models, built.group_by, built.categories.values))
    end = built.rowid_end
    below = con.execute(f"SELECT COUNT(*), {sums} FROM t WHERE rowid < {end}").fetchall()[0]
    beyond = con.execute(f"SELECT COUNT(*), {sums} FROM t WHERE rowid >= {end}").fetchall()[0]
    changes = table_changes(con, built, None)
    assert (changes.kept_rows, changes.kept_fingerprint) == below and below[0] == ROWS
    assert (changes.new_rows, changes.new_fingerprint) == (252, beyond[1])
    assert changes.rowid_end == end + 252 and changes.non_finite == {"a": 2, "m": 0}  # NaN, inf
    assert (changes.kept_fingerprint == built.fingerprint) is (update is None)
    assert changes.appended_only(built) is (update is None)
