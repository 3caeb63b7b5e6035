"""Exact aggregate tables (issue 19: SSB-style joins exact): build, selection, rollups, answers, fallback.

A generated star schema in DuckDB: fact ``lineorder`` -> ``dates`` (year-month -> year), ``customer``
(city -> nation -> region) and ``part`` (brand -> category), with a measure that has NULLs and an
integer categorical measure (``lo_discount``).  Answers from the tables are compared with DuckDB's.
"""

from __future__ import annotations

import io
import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from frames import assert_equals_exact, sorted_by, values_of

from parzen.aqp import Engine, UnsupportedQuery
from parzen.aqp.cube_answers import FORM
from parzen.aqp.cube_lattice import exact_dependencies, sample_dependencies, select_views
from parzen.aqp.sql import parse
from parzen.aqp.synopsis import Synopsis

JOINS = {"lo_orderdate": "dates.d_datekey", "lo_custkey": "customer.c_custkey", "lo_partkey": "part.p_partkey"}
FROM = ("FROM lineorder, dates, customer, part WHERE lo_orderdate = d_datekey AND lo_custkey = c_custkey "
        "AND lo_partkey = p_partkey")
VIEWS = [["d_year", "c_nation", "p_category"], ["d_yearmonthnum", "c_city"], ["d_year", "lo_discount", "c_region"],
         ["c_region", "d_year"], ["c_nation"]]  # the last two are rolled up from the first


def _insert(con, table, frame):
    con.register("frame_to_insert", frame)
    con.execute(f"INSERT INTO {table} SELECT * FROM frame_to_insert")
    con.unregister("frame_to_insert")


def _star(con, rows=20_000, seed=0):
    rng = np.random.default_rng(seed)
    months = [100 * (1992 + m // 12) + m % 12 + 1 for m in range(36)]
    con.execute("CREATE TABLE dates (d_datekey INTEGER PRIMARY KEY, d_year BIGINT, d_yearmonthnum BIGINT, "
                "d_week BIGINT)")
    _insert(con, "dates", pd.DataFrame({"d_datekey": np.arange(360), "d_year": [months[k // 10] // 100 for k in range(360)],
                                        "d_yearmonthnum": [months[k // 10] for k in range(360)],
                                        "d_week": [k % 7 for k in range(360)]}))
    con.execute("CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_city VARCHAR, c_nation VARCHAR, c_region VARCHAR)")
    _insert(con, "customer", pd.DataFrame({"c_custkey": np.arange(240), "c_city": [f"C{k % 24:02d}" for k in range(240)],
                                           "c_nation": [f"N{k % 24 // 4}" for k in range(240)],
                                           "c_region": [f"R{k % 24 // 12}" for k in range(240)]}))
    con.execute("CREATE TABLE part (p_partkey INTEGER PRIMARY KEY, p_brand VARCHAR, p_category VARCHAR)")
    _insert(con, "part", pd.DataFrame({"p_partkey": np.arange(100), "p_brand": [f"B{k % 20:02d}" for k in range(100)],
                                       "p_category": [f"K{k % 20 // 5}" for k in range(100)]}))
    con.execute("CREATE TABLE lineorder (lo_orderdate INTEGER, lo_custkey INTEGER, lo_partkey INTEGER, "
                "lo_discount INTEGER, lo_revenue DOUBLE, lo_cost DOUBLE, lo_tax DOUBLE)")
    tax = rng.gamma(2.0, 3.0, rows)
    tax[rng.random(rows) < 0.1] = np.nan
    _insert(con, "lineorder", pd.DataFrame({
        "lo_orderdate": rng.integers(0, 360, rows), "lo_custkey": rng.integers(0, 240, rows),
        "lo_partkey": rng.integers(0, 100, rows), "lo_discount": rng.integers(0, 11, rows),
        "lo_revenue": rng.gamma(3.0, 100.0, rows), "lo_cost": rng.gamma(2.0, 50.0, rows),
        "lo_tax": pd.array(tax, dtype="Float64").fillna(pd.NA)}))


def _engine(**build):
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("lineorder", columns=["lo_discount", "lo_revenue", "lo_cost", "lo_tax"], joins=JOINS, sample=2000,
            seed=3, grid=0, **build)
    return e


@pytest.fixture(scope="module")
def listed():
    return _engine(cube=VIEWS)


@pytest.fixture(scope="module")
def greedy():
    return _engine()


#: The group columns of the queries here, by which DuckDB's rows are sorted to compare them with an answer's.
GROUPS = ("d_year", "c_nation", "c_region", "c_city", "p_category", "lo_discount")


EXACT = [
    (f"SELECT d_year, c_nation, SUM(lo_revenue), COUNT(*), AVG(lo_cost) {FROM} AND p_category = 'K1' "
    "GROUP BY d_year, c_nation"),
    # rollups: region from nation, year from year-month; IN, ranges and LIKE on categorical columns
    (f"SELECT c_region, SUM(lo_revenue - lo_cost) {FROM} AND d_year BETWEEN 1992 AND 1993 "
    "AND p_category IN ('K0', 'K3') GROUP BY c_region"),
    (f"SELECT d_year, SUM(lo_revenue) - SUM(lo_cost) AS profit {FROM} AND c_city LIKE 'C1%' "
    "AND d_yearmonthnum >= 199306 GROUP BY d_year"),
    f"SELECT COUNT(*), SUM(lo_revenue) {FROM} AND (c_nation = 'N1' OR c_nation = 'N4') AND d_year = 1994",
    # a measure with NULLs: its COUNT, SUM and AVG
    f"SELECT c_nation, COUNT(lo_tax), SUM(lo_tax), AVG(lo_tax) {FROM} GROUP BY c_nation",
    # a measure times an integer categorical column, under a range on that column
    (f"SELECT d_year, SUM(lo_revenue * lo_discount) AS revenue {FROM} AND lo_discount BETWEEN 1 AND 3 "
    "AND c_region = 'R1' GROUP BY d_year"),
    f"SELECT c_region, SUM(lo_revenue * (1 - lo_discount)) {FROM} GROUP BY c_region",
    # no row passes: COUNT 0, SUM NULL
    f"SELECT COUNT(*), SUM(lo_revenue) {FROM} AND c_nation = 'N1' AND c_region = 'R1'",
]


@pytest.mark.parametrize("sql", EXACT)
def test_answers_from_the_tables_equal_duckdbs(listed, sql):
    approx = listed.query(sql, with_error=True)
    exact = listed.query(sql, exact=True)
    assert approx.attrs["form"] == FORM
    assert_equals_exact(approx, exact, GROUPS, intervals=True)
    values = values_of(approx)
    for name in values.columns:  # intervals of float64 round-off only, holding DuckDB's sums
        if f"{name} low" in approx:
            value = values[name].to_numpy(dtype=np.float64)
            low, high = approx[f"{name} low"].to_numpy(dtype=np.float64), approx[f"{name} high"].to_numpy(dtype=np.float64)
            finite = ~np.isnan(value)
            assert np.all(high[finite] - low[finite] <= 1e-9 * np.abs(value[finite]) + 1e-300)
            assert np.all((low[finite] <= value[finite]) & (value[finite] <= high[finite]))



@pytest.mark.parametrize("sql", [
    f"SELECT c_nation, p_category, SUM(lo_revenue) AS revenue, COUNT(*) {FROM} AND d_year = 1993 GROUP BY c_nation, p_category",
    f"SELECT d_year, c_region, SUM(lo_revenue) AS revenue {FROM} GROUP BY d_year, c_region",  # an integer group column
    f"SELECT c_nation, COUNT(*) {FROM} AND c_nation = 'N1' AND c_region = 'R1' GROUP BY c_nation",  # no group
])
def test_the_tables_answer_has_the_dtypes_and_intervals_of_a_frame_of_its_values(listed, sql):
    """The answer's columns are typed as a DataFrame of a dict of its values would type them (text as
    pandas' inferred text dtype, integers as their object values, labels as text), and its intervals
    are the value -+ the float64 round-off bound over the table's rows (contract.rounding_bound)."""
    from parzen.aqp.contract import rounding_bound

    approx = listed.query(sql, with_error=True)
    assert approx.attrs["form"] == FORM
    inferred = pd.DataFrame({c: approx[c] if pd.api.types.is_numeric_dtype(approx[c]) else approx[c].to_numpy(dtype=object)
                             for c in approx.columns})
    pd.testing.assert_frame_equal(approx, inferred, check_exact=True)
    assert approx.columns.dtype == pd.Index(["a"]).dtype and isinstance(approx.index, pd.RangeIndex)
    rows = listed.synopsis("lineorder").row_count
    for name in [c for c in approx.columns if f"{c} low" in approx.columns]:
        value = approx[name].to_numpy()
        np.testing.assert_array_equal(approx[f"{name} low"].to_numpy(), value - rounding_bound(value, rows))
        np.testing.assert_array_equal(approx[f"{name} high"].to_numpy(), value + rounding_bound(value, rows))


def _bounded_as_with_intervals(listed, sql: str) -> tuple[pd.DataFrame, list[str], float]:
    """Check ``query(sql, max_rel_error=0.05)`` against ``query(sql, with_error=True)``: its relative half width is
    the one read off the frame with intervals, and it is that frame less its intervals (from the tables) or, where
    the bound is not met (a NULL value: nothing bounds its error), DuckDB's.  The frame with intervals, its
    aggregates' names and that width."""
    from parzen.aqp import contract

    approx = listed.query(sql, with_error=True)
    names = contract.interval_names(approx)
    worst = contract.relative_half_width(approx, names)
    bounded = listed.query(sql, max_rel_error=0.05)
    assert bounded.attrs["relative_half_width"] == worst
    if worst <= 0.05:
        assert bounded.attrs["form"] == FORM
        pd.testing.assert_frame_equal(bounded, contract.without_intervals(approx, names), check_exact=True)
    else:
        assert bounded.attrs["form"] == "exact"
    return approx, names, worst


@pytest.mark.parametrize("sql", EXACT)
def test_the_contracts_answer_from_the_tables_is_checked_on_its_arrays_without_intervals(listed, sql):
    """With ``max_rel_error`` and no ``with_error``, the tables' answer is made without its intervals, and
    its relative half width read off the arrays is the one the frame with intervals has: the answer, its
    attrs and the check are those of the frame with intervals, which is then dropped."""
    from parzen.aqp import contract, cube_answers

    approx, names, worst = _bounded_as_with_intervals(listed, sql)
    query = listed._resolved(parse(sql))
    synopsis = listed.synopsis("lineorder")
    dropped = cube_answers.answer(query, synopsis.cube, synopsis.categories, True, synopsis.row_count,
                                  drop_intervals=True)
    pd.testing.assert_frame_equal(dropped, contract.without_intervals(approx, names), check_exact=True)
    assert dropped.attrs == {"relative_half_width": worst}



CASE_EXACT = [
    # TPC-H Q12's CASE counts: the CASE condition on a dimension's column selects cells
    (f"SELECT d_year, SUM(CASE WHEN c_nation IN ('N1', 'N2') THEN 1 ELSE 0 END) AS high, "
     f"SUM(CASE WHEN c_nation IN ('N1', 'N2') THEN 0 ELSE 1 END) AS low {FROM} AND p_category = 'K1' GROUP BY d_year"),
    # TPC-H Q14's ratio: a CASE sum of a measure times a categorical column over the plain sum
    (f"SELECT 100.00 * SUM(CASE WHEN d_year = 1993 THEN lo_revenue * (1 - lo_discount) ELSE 0 END) "
     f"/ SUM(lo_revenue * (1 - lo_discount)) AS promo {FROM} AND c_region = 'R0' AND lo_discount < 8"),
    # AVG of a CASE without ELSE (rolled up: year from year-month), LIKE in the condition
    f"SELECT d_year, AVG(CASE WHEN c_city LIKE 'C1%' THEN lo_revenue END) AS a {FROM} GROUP BY d_year",
    # SUM / COUNT, SUM / SUM of a measure with NULLs, a difference, two WHENs
    (f"SELECT c_region, SUM(lo_revenue) / COUNT(*) AS per_row, SUM(lo_tax) / SUM(lo_revenue) AS tax_share, "
     f"SUM(CASE WHEN d_year = 1992 THEN lo_revenue WHEN c_nation = 'N1' THEN lo_cost ELSE 0 END) "
     f"- SUM(lo_cost) AS d {FROM} AND p_category IN ('K0', 'K2') GROUP BY c_region"),
    # COUNT of a CASE, and a group whose CASE total is 0
    (f"SELECT c_nation, COUNT(CASE WHEN c_region = 'R1' THEN lo_tax END) AS n, "
     f"COUNT(*) - COUNT(CASE WHEN d_year > 1992 THEN 1 END) AS early {FROM} GROUP BY c_nation"),
]


@pytest.mark.parametrize("sql", CASE_EXACT)
def test_case_aggregates_and_ratios_from_the_tables_equal_duckdbs(listed, sql):
    """CASE inside aggregates and arithmetic of aggregates, every condition, filter and group on a
    table's columns: exact, with intervals of round-off only that hold DuckDB's answer."""
    approx = listed.query(sql, with_error=True)
    exact = listed.query(sql, exact=True)
    assert approx.attrs["form"] == FORM
    assert_equals_exact(approx, exact, GROUPS, intervals=True)
    values, exact = values_of(approx), sorted_by(exact, GROUPS)
    for name in [c for c in values.columns if c not in GROUPS]:
        value, want = values[name].to_numpy(dtype=np.float64), exact[name].to_numpy(dtype=np.float64)
        low, high = approx[f"{name} low"].to_numpy(dtype=np.float64), approx[f"{name} high"].to_numpy(dtype=np.float64)
        finite = ~np.isnan(value)
        assert np.all(high[finite] - low[finite] <= 1e-9 * np.abs(value[finite]) + 1e-6)
        assert np.all((low[finite] <= want[finite]) & (want[finite] <= high[finite]))


@pytest.mark.parametrize("sql", CASE_EXACT)
def test_the_contracts_case_answer_from_the_tables_is_checked_on_its_arrays_without_intervals(listed, sql, monkeypatch):
    """As the plain queries' test above, for CASE / ratio queries (:func:`parzen.aqp.ratios.exact` with
    ``drop_intervals``): the answer to ``max_rel_error`` without ``with_error`` is made without intervals, equal
    to the answer with intervals less them, its relative half width the one read off that frame."""
    from parzen.aqp import ratios

    made: list = []
    exact = ratios.exact
    monkeypatch.setattr(ratios, "exact", lambda *a, **k: made.append(a[-1] if len(a) > 6 else k.get("drop_intervals"))
                        or exact(*a, **k))
    approx, _, worst = _bounded_as_with_intervals(listed, sql)
    assert made == [False, True]  # with intervals, then the bounded answer made without them
    with_intervals = listed.query(sql, max_rel_error=0.05, with_error=True)
    assert made == [False, True, False]
    if worst <= 0.05:
        pd.testing.assert_frame_equal(with_intervals, approx, check_exact=True)


def test_the_sub_queries_sharing_their_cells_total_as_each_alone(listed, monkeypatch):
    """answer_each's sub-queries read the masks and passing cells they share once: every total is the same
    float64 array as the sub-query's own totals made alone (the same cells in the same order)."""
    from parzen.aqp import cube_answers

    seen, original, reused = [], cube_answers.answer_each, []
    monkeypatch.setattr(cube_answers, "answer_each", lambda *a: seen.append(a) or original(*a))
    narrowed = cube_answers._passing
    monkeypatch.setattr(cube_answers, "_passing", lambda cube, table, allowed, masks: reused.append(
        masks.get(("cells", id(table))) is not None) or narrowed(cube, table, allowed, masks))
    for sql in CASE_EXACT:
        listed.query(sql, with_error=True)
    assert len(seen) == len(CASE_EXACT) and any(reused)
    for queries, cube, categories in seen:
        _, together = original(queries, cube, categories)
        for query, totals in zip(queries, together):
            alone = cube_answers._totals(query, cube, categories)
            assert np.array_equal(alone.keys, totals.keys)
            for name, value in alone.totals.items():
                assert np.array_equal(value, totals.totals[name], equal_nan=True)


def _forget_every_cache() -> None:
    """Empty every lru_cache of parzen.aqp, as the workloads benchmark does before a first answer."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("parzen.aqp"):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def test_the_sub_queries_choose_a_table_once_per_list_of_columns(listed, monkeypatch):
    """A CASE query's sub-queries that read the same columns (its branches' conditions on one column) share
    the choice of the table and the count of the cells each shared filter admits."""
    from parzen.aqp import cubes

    chosen, counted = [], []
    covering, cells_per_code = cubes.Cube.covering, cubes.Cube.cells_per_code
    monkeypatch.setattr(cubes.Cube, "covering", lambda self, columns, measures=frozenset(): chosen.append(tuple(columns)) or
                        covering(self, columns, measures))
    monkeypatch.setattr(cubes.Cube, "cells_per_code", lambda self, table, column, size: counted.append(column) or
                        cells_per_code(self, table, column, size))
    _forget_every_cache()
    listed.query(CASE_EXACT[0], with_error=True)  # three sub-queries: the WHERE, and one per branch on c_nation
    assert len(chosen) == len(set(chosen)) == 2
    assert counted.count("p_category") == 1


@pytest.mark.skipif(int(pd.__version__.split(".")[0]) < 3,
                    reason="pandas 2 holds texts in object arrays: its answers' frames are made anew (a speed matter)")
def test_exact_case_answers_share_their_labels_and_group_texts(listed):
    """Two answers of the same columns and groups share their column labels and group texts (pandas 3's string
    arrays), kept with the tables (not emptied with the per-text caches)."""
    sql = CASE_EXACT[3]
    _forget_every_cache()
    first = listed.query(sql, with_error=True)
    _forget_every_cache()
    second = listed.query(sql, with_error=True)
    assert first.columns is not second.columns and first.columns.array is second.columns.array  # views of one
    assert first._get_column_array(0)._pa_array is second._get_column_array(0)._pa_array


def test_exact_case_answers_stay_apart(listed):
    """Writing into one answer changes no other answer of the same columns and groups, nor a later one, and a name
    set on one answer's labels is no other's."""
    sql = CASE_EXACT[3]
    _forget_every_cache()
    first = listed.query(sql, with_error=True)
    _forget_every_cache()
    second = listed.query(sql, with_error=True)
    want = second.copy()
    first.loc[0, "c_region"] = "written"
    first.iloc[0, 1] = -1.0
    pd.testing.assert_frame_equal(second, want)
    pd.testing.assert_frame_equal(listed.query(sql, with_error=True), want)
    for text in (sql, EXACT[0]):  # a name set on one answer's shared labels is not another answer's
        listed.query(text, with_error=True).columns.name = "named"
        assert listed.query(text, with_error=True).columns.name is None
        listed.query(text, max_rel_error=0.5).columns.name = "named"
        assert listed.query(text, max_rel_error=0.5).columns.name is None


@pytest.mark.parametrize("sql", [
    f"SELECT c_nation, COUNT(*), SUM(lo_revenue) {FROM} GROUP BY c_nation",
    f"SELECT c_nation, SUM(CASE WHEN d_year = 1993 THEN lo_revenue ELSE 0 END) AS early {FROM} GROUP BY c_nation",
])
def test_a_null_text_group_is_null_as_in_duckdbs_answer(sql):
    """The NULL group of a text column is NULL in the tables' answer, of DuckDB's dtype: on pandas 2 it was the
    text 'None' (``pd.array(values, dtype="str")`` makes NumPy texts there)."""
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("UPDATE customer SET c_nation = NULL WHERE c_custkey % 24 < 4")
    con.execute("SET enable_external_access = false")
    engine = Engine(con)
    engine.build("lineorder", columns=["lo_revenue"], joins=JOINS, sample=1000, seed=3, grid=0,
                 cube=[["c_nation", "d_year"]])
    answer = engine.query(sql)
    exact = sorted_by(engine.query(sql, exact=True), ["c_nation"])
    assert answer.attrs["form"] == FORM
    assert answer["c_nation"].isna().tolist() == exact["c_nation"].isna().tolist() == [False] * 5 + [True]
    assert answer["c_nation"].dtype == exact["c_nation"].dtype
    assert answer["c_nation"].iloc[:5].tolist() == exact["c_nation"].iloc[:5].tolist()
    for name in answer.columns[1:]:
        np.testing.assert_allclose(answer[name].to_numpy(float), exact[name].to_numpy(float), rtol=1e-12)


def test_a_tables_index_lists_each_codes_cells_in_order(listed):
    """Cube.index: the cells of code k are ``order[starts[k]:starts[k + 1]]``, in the table's order (the starts
    counted, not searched)."""
    synopsis = listed.synopsis("lineorder")
    cube, values = synopsis.cube, synopsis.cube.values_with(synopsis.categories.values)
    for table in cube.tables:
        for column in table.columns:
            codes = cube.column(table, column)
            order, starts = cube.index(table, column, len(values[column]))
            assert starts[0] == 0 and starts[-1] == codes.size and starts.size == len(values[column]) + 1
            for k in range(len(values[column])):
                np.testing.assert_array_equal(order[starts[k]:starts[k + 1]], np.flatnonzero(codes == k))


def test_a_case_condition_on_a_numeric_column_falls_through_to_the_synopsis(listed):
    sql = (f"SELECT c_region, SUM(CASE WHEN lo_cost > 100 THEN lo_revenue ELSE 0 END) / SUM(lo_revenue) AS share "
           f"{FROM} GROUP BY c_region")
    approx = listed.query(sql, with_error=True)
    exact = listed.query(sql, exact=True).sort_values("c_region").reset_index(drop=True)
    assert approx.attrs["form"] != FORM  # the sample's answer (2,000 rows), its interval holding DuckDB's
    np.testing.assert_allclose(approx["share"], exact["share"], rtol=0.15)
    assert ((approx["share low"] <= exact["share"]) & (exact["share"] <= approx["share high"])).all()

def test_every_table_holds_the_exact_rows_and_sums_of_its_cells(listed):
    synopsis = listed.synopsis("lineorder")
    values = synopsis.categories.values
    for table in synopsis.cube.tables:
        columns = ", ".join(table.columns)
        exact = listed.con.execute(f"SELECT {columns}, COUNT(*), SUM(lo_revenue), SUM(lo_tax), COUNT(lo_tax) {FROM} "
                                   f"GROUP BY {columns} ORDER BY {columns}").fetchall()
        assert table.rows.size == len(exact)
        for k, row in enumerate(exact):
            assert tuple(values[c][code] for c, code in zip(table.columns, table.codes[k])) == row[:len(table.columns)]
            width = len(table.columns)
            assert table.rows[k] == row[width]
            assert table.sums[k, synopsis.cube.measures.index("lo_revenue")] == pytest.approx(row[width + 1], rel=1e-12)
            assert table.sums[k, synopsis.cube.measures.index("lo_tax")] == pytest.approx(row[width + 2], rel=1e-12)
            assert table.counts[k, synopsis.cube.nullable.index("lo_tax")] == row[width + 3]


@pytest.mark.parametrize("sql", [
    f"SELECT c_nation, SUM(lo_revenue) {FROM} AND lo_cost > 100 GROUP BY c_nation",  # a numeric range
    f"SELECT p_brand, SUM(lo_revenue) {FROM} GROUP BY p_brand",  # no table holds the brand
    f"SELECT c_nation, MAX(lo_revenue) {FROM} GROUP BY c_nation",  # no MAX in the tables
    f"SELECT c_nation, SUM(lo_revenue * lo_cost) {FROM} GROUP BY c_nation",  # a product of two measures
    f"SELECT COUNT(*) {FROM} AND (c_nation = 'N1' OR d_year = 1993)",  # OR across columns
])
def test_other_queries_fall_through_to_the_synopsis(listed, sql):
    try:
        form = listed.query(sql).attrs["form"]
    except UnsupportedQuery:  # as before the tables: the present path refuses it
        return
    assert form != FORM


def test_the_greedy_choice_stays_within_its_budget_and_uses_the_hierarchies(greedy):
    synopsis = greedy.synopsis("lineorder")
    cube = synopsis.cube
    assert cube is not None and cube.tables
    assert cube.nbytes <= sum(a.nbytes for a in synopsis.sample.values()) + sum(
        a.nbytes for a in synopsis.categories.codes.values())
    assert {("c_city", "c_nation"), ("c_city", "c_region"), ("c_nation", "c_region"), ("p_brand", "p_category"),
            ("d_yearmonthnum", "d_year")} <= set(cube.dependencies)
    assert ("c_nation", "c_city") not in cube.dependencies and ("d_week", "d_year") not in cube.dependencies
    sql = f"SELECT d_year, c_region, SUM(lo_revenue) {FROM} AND p_category = 'K2' GROUP BY d_year, c_region"
    approx = greedy.query(sql)
    if approx.attrs["form"] == FORM:
        assert_equals_exact(approx, greedy.query(sql, exact=True), GROUPS)


@pytest.mark.parametrize("budget", [0, 2_000, 20_000])
def test_a_budget_is_respected(budget):
    cube = _engine(cube_bytes=budget).synopsis("lineorder").cube
    assert (cube is None) if budget == 0 else (cube is None or cube.nbytes <= budget)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="cube_bytes"):
        _engine(cube_bytes=-1)
    for bad in ("1MB", float("nan"), None.__class__):
        with pytest.raises(ValueError, match=r"cube_bytes must be a number of bytes >= 0"):
            _engine(cube_bytes=bad)
    with pytest.raises(ValueError, match="no categorical columns"):
        _engine(cube=[["d_year", "lo_revenue"]])


@pytest.mark.parametrize("cube", [["d_year", "c_nation"], "d_year", [["d_year", 3]], [[]]])
def test_a_cube_that_is_no_list_of_column_lists_is_refused_by_name(cube):
    with pytest.raises(ValueError, match=r"cube= takes a list of column lists.*\[\['d_year', 'c_nation'\]\]"):
        _engine(cube=cube)


def test_a_cube_on_a_table_without_categorical_columns_is_refused():
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t AS SELECT random() AS x, random() AS y FROM range(3000)")
    with pytest.raises(ValueError, match="'x' are no categorical columns of the synopsis, which has none"):
        Engine(con).build("t", sample=500, grid=0, cube=[["x"]])


def test_format_10_is_still_read_and_answers_without_tables(listed):
    synopsis = listed.synopsis("lineorder")
    with np.load(io.BytesIO(synopsis.to_bytes()), allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files if not k.startswith("cube/")}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    meta["format_version"] = 10
    for key in ("cube", "cube_bytes", "cube_views"):
        meta.pop(key, None)
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    old = Synopsis.from_bytes(buffer.getvalue())
    assert old.cube is None and old.build_options().get("cube") is None
    again = Synopsis.from_bytes(synopsis.to_bytes())
    assert [t.columns for t in again.cube.tables] == [t.columns for t in synopsis.cube.tables]
    assert again.build_options()["cube"] == VIEWS


def test_format_11_is_still_read_and_its_tables_keep_every_measure(listed):
    """A format-11 payload (before per-table measures: no "table_measures") loads with every measure on every
    table, and a synopsis written now is format 12, which a parzen that reads 11 only refuses."""
    synopsis = listed.synopsis("lineorder")
    with np.load(io.BytesIO(synopsis.to_bytes()), allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    assert meta["format_version"] == 12 and "table_measures" not in meta["cube"]
    meta["format_version"] = 11
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    old = Synopsis.from_bytes(buffer.getvalue())
    assert all(t.measures == tuple(synopsis.cube.measures) for t in old.cube.tables)
    for mine, theirs in zip(old.cube.tables, synopsis.cube.tables):
        np.testing.assert_array_equal(mine.sums, theirs.sums)


def test_a_merged_refresh_adds_the_appended_rows_to_the_tables_and_a_rebuild_makes_the_same():
    con = duckdb.connect(":memory:")
    _star(con)
    con.execute("SET enable_external_access = false")
    e = Engine(con)
    e.build("lineorder", columns=["lo_discount", "lo_revenue"], sample=2000, seed=3, grid=0,
            cube=[["lo_partkey", "lo_discount"]])
    sql = "SELECT lo_discount, SUM(lo_revenue) FROM lineorder WHERE lo_partkey IN (3, 5) GROUP BY lo_discount"
    assert e.query(sql).attrs["form"] == FORM
    con.execute("INSERT INTO lineorder SELECT * FROM lineorder LIMIT 50")
    refreshed = e.refresh("lineorder")
    assert refreshed.refreshed.startswith("50 appended rows added") and refreshed.cube is not None
    answer = e.query(sql)
    assert answer.attrs["form"] == FORM  # the tables hold the appended rows: still exact
    assert_equals_exact(answer, e.query(sql, exact=True), GROUPS)
    rebuilt = e.refresh("lineorder", full=True)
    assert [set(t.columns) for t in rebuilt.cube.tables] == [{"lo_discount", "lo_partkey"}]
    mine, theirs = refreshed.cube.tables[0], rebuilt.cube.tables[0]
    np.testing.assert_array_equal(mine.codes, theirs.codes)
    np.testing.assert_array_equal(mine.rows, theirs.rows)
    np.testing.assert_allclose(mine.sums, theirs.sums, rtol=1e-12)
    answer = e.query(sql)
    assert answer.attrs["form"] == FORM
    assert_equals_exact(answer, e.query(sql, exact=True), GROUPS)


def test_dependencies_are_exact_and_map_null_to_null():
    codes = {"city": np.array([0, 1, 2, 0]), "nation": np.array([0, 0, 1, 0]), "other": np.array([0, 1, 0, 0])}
    cardinality = {"city": 4, "nation": 3, "other": 2}
    assert set(sample_dependencies(codes, cardinality)) == {("city", "nation"), ("city", "other")}
    values = {"city": ["a", "b", "c", None], "nation": ["x", "y", None], "other": [0, 1]}
    found = {("city", "nation"): [(("a", "x"), 5), (("b", "x"), 2), (("c", "y"), 1), (("d", "y"), 1)],
             ("city", "other"): [(("a", 0), 5), (("a", 1), 1), (("b", 1), 2), (("c", 0), 1)]}
    maps = exact_dependencies(found, values)
    assert list(maps) == [("city", "nation")]
    np.testing.assert_array_equal(maps[("city", "nation")], [0, 0, 1, 2])


def test_the_greedy_picks_the_best_benefit_per_byte_first():
    cardinality = {"a": 2, "b": 3, "c": 50, "d": 100}
    chosen = select_views(["a", "b", "c", "d"], cardinality, [("d", "c")], rows=10_000, cell_bytes=lambda v: 10,
                          budget=10 * (6 + 100))
    everything = select_views(["a", "b", "c", "d"], cardinality, [("d", "c")], rows=10_000, cell_bytes=lambda v: 10,
                              budget=10**9)
    assert ("d",) in everything  # d rolls up to c: after (d,), (c,) is chosen only for its fewer cells (before)
    assert ("c",) not in everything or everything.index(("c",)) < everything.index(("d",))
    assert sum(np.prod([cardinality[c] for c in v]) for v in chosen) * 10 <= 10 * 106
    brute = {}
    for view in [("a",), ("b",), ("c",), ("d",), ("a", "b")]:
        covered = [v for v in [("a",), ("b",), ("c",), ("d",), ("a", "b")] if set(v) <= set(view) | (
            {"c"} if "d" in view else set())]
        cells = int(np.prod([cardinality[c] for c in view]))
        brute[view] = len(covered) * (10_000 - cells) / (10 * cells)
    assert max(brute, key=brute.get) == chosen[0]


def test_two_pairs_of_equivalent_columns_keep_one_column_of_each():
    # d_date <-> d_datekey and d_yearmonth <-> d_yearmonthnum (SSB): each pair is one level of the lattice
    cardinality = {"a": 10, "b": 10, "c": 5, "d": 5}
    dependencies = [("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")]
    chosen = select_views(["a", "b", "c", "d"], cardinality, dependencies, rows=1000, cell_bytes=lambda v: 16,
                          budget=10**6)
    assert chosen
    assert {c for v in chosen for c in v} <= {"a", "c"}  # the first of each pair (fewest values, then name)


@pytest.mark.parametrize("arrow", [True, False])
def test_the_appended_cells_read_as_columns_equal_the_build_pass(arrow, monkeypatch):
    """cubes.appended_cells reads the appended rows' cells as Arrow columns; they equal the build's
    row-by-row pass (_aggregate) with NULL values, numeric categorical columns, NULL and DECIMAL
    measures, a DATE dimension with NULLs and its months; a value Arrow gives in another form falls back to that pass."""
    from parzen.aqp import cube_dimensions, cubes

    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE r AS SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || (i % 5) END AS a, "
                "(i % 3)::INTEGER AS b, CASE WHEN i % 11 = 0 THEN NULL ELSE i * 0.5 END AS x, "
                "(i % 13)::DECIMAL(15, 2) AS y, CASE WHEN i % 17 = 0 THEN NULL ELSE DATE '2020-01-20' + (i % 90)::INTEGER "
                "END AS d FROM range(500) t(i)")
    values = {"a": ["v0", "v1", "v2", "v3", "v4", "v9", None], "b": [0, 1, 2, 5]}
    dimensions = cube_dimensions.find(con, "r", {"d": "DATE"}, ["d"], [])
    assert set(dimensions) == {"d", "d@month"} and dimensions["d@month"].values.size == 4
    views = [("a", "b"), ("b",), ("a",), ("a", "d"), ("b", "d@month")]
    expected = cubes._aggregate(con, "r", views, {**values, **{c: d.as_list() for c, d in dimensions.items()}},
                                ["x", "y"], ["x", "y"], dimensions)
    cube = cubes.Cube(["x", "y"], ["x"], [cubes.CubeTable(v, np.zeros((0, len(v)), np.int16), np.zeros(0, np.int64),
                                                          np.zeros((0, 2)), np.zeros((0, 1), np.int64), ("x", "y"),
                                                          ("x",)) for v in views],
                      cube_dimensions.dependencies(dimensions), dimensions)
    if not arrow:
        def missing(*args):
            raise LookupError("a value in another form")
        monkeypatch.setattr(cubes, "_codes_of", missing)
    found = cubes.appended_cells(con, "r", cube, values, dimensions).tables
    for mine, theirs in zip(found, expected):
        assert mine.columns == theirs.columns and mine.codes.dtype == theirs.codes.dtype
        np.testing.assert_array_equal(mine.codes, theirs.codes)
        np.testing.assert_array_equal(mine.rows, theirs.rows)
        np.testing.assert_array_equal(mine.counts, theirs.counts)
        np.testing.assert_allclose(mine.sums, theirs.sums, rtol=1e-15)
    assert np.isnan(found[2].sums[:, 0]).sum() == 0 and found[0].rows.sum() == 500
