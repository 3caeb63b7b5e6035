"""Histogram queries (FLOOR(x / w) [* w] AS bin ... GROUP BY bin) against DuckDB's exact answers.

Tolerances (the table: 60 000 rows, a stratified sample of 12 000 in two groups):
- from the gridded form (x the only range column, no IN): bins of >= 1000 rows within 1 % of the
  exact count, every bin within 0.3 % of the table's rows; integer and discrete columns exactly
  (their bins end on grid points);
- from the sample (a predicate on another column): bins of >= 1000 rows within 6 % on COUNT and
  0.1 on AVG(y) (y ~ N(0, 1) above 0.5: its mean is 1.14).
"""

from __future__ import annotations

import math
from dataclasses import replace

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, UnsupportedQuery
from parzen.aqp.histogram import MAX_BINS, bin_edge, exact_sql, parse_histogram

ROWS = 60_000


@pytest.fixture(scope="module")
def engine():
    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, 10.0, ROWS)
    x[rng.random(ROWS) < 0.02] = np.nan  # NULLs: DuckDB's NULL bin, which the answers leave out
    frame = pd.DataFrame({
        "x": x, "y": rng.normal(0.0, 1.0, ROWS), "k": rng.integers(0, 50, ROWS),
        "d": rng.integers(0, 10, ROWS) / 10.0,  # 0.0, 0.1, ..., 0.9: FLOOR(d / 0.1) is 2 at d = 0.3
        "g": rng.choice(["a", "b"], ROWS),
    })
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    engine = Engine(con)
    engine.build("t", ["x", "y", "k", "d"], group_by=["g"], sample=12_000, grid=1024)
    yield engine
    con.close()


def exact(engine, sql: str, column: str) -> pd.DataFrame:
    """DuckDB's answer to ``sql`` without the NULL bin (rows whose ``column`` is NULL)."""
    text = sql.replace(" GROUP BY", f" {'AND' if 'WHERE' in sql else 'WHERE'} {column} IS NOT NULL GROUP BY")
    return engine.query(text, exact=True)


def joined(approx: pd.DataFrame, truth: pd.DataFrame, label: str) -> pd.DataFrame:
    """The exact answer's bins with the approximate values beside them; every exact bin is answered."""
    merged = truth.merge(approx, on=label, how="left", suffixes=(" exact", " approx"))
    assert not merged.filter(like=" approx").isna().any().any(), "a bin with rows in the table is missing"
    return merged


def test_one_column_histogram_comes_from_the_grid_and_matches_duckdb(engine):
    sql = "SELECT FLOOR(x / 10) * 10 AS bin, COUNT(*) FROM t GROUP BY bin ORDER BY bin"
    approx = engine.query(sql)
    assert approx.attrs["form"] == "grid"
    assert list(approx.columns) == ["bin", "count_star()"]
    assert approx["bin"].is_monotonic_increasing and (approx["bin"] % 10 == 0).all()
    truth = exact(engine, sql, "x")
    merged = joined(approx, truth, "bin")
    error = (merged["count_star() approx"] - merged["count_star() exact"]).abs()
    big = merged["count_star() exact"] >= 1000
    assert (error[big] / merged.loc[big, "count_star() exact"]).max() <= 0.01
    assert error.max() <= 0.003 * ROWS
    extra = approx[~approx["bin"].isin(truth["bin"])]  # bins between min and max that hold no row
    assert (extra["count_star()"] <= 0.003 * ROWS).all()


def test_integer_and_discrete_bins_are_exact_in_either_order(engine):
    sql = "SELECT COUNT(*), FLOOR(k / 5) * 5 AS b FROM t WHERE k BETWEEN 3 AND 27 GROUP BY b ORDER BY b DESC"
    approx = engine.query(sql)
    assert list(approx.columns) == ["count_star()", "b"] and approx["b"].is_monotonic_decreasing
    truth = engine.query(sql, exact=True)
    pd.testing.assert_frame_equal(approx.reset_index(drop=True), truth.astype({"count_star()": float}),
                                  check_exact=False, rtol=1e-9)
    # DuckDB divides in floating point: FLOOR(0.3 / 0.1) = 2, so d = 0.3 falls in bin 2 with 0.2
    sql = "SELECT FLOOR(d / 0.1) AS bin, COUNT(*) AS n FROM t GROUP BY bin ORDER BY bin"
    approx, truth = engine.query(sql), engine.query(sql, exact=True)
    assert approx["bin"].tolist() == truth["bin"].tolist()
    np.testing.assert_allclose(approx["n"], truth["n"], rtol=1e-9)


def test_bins_with_a_predicate_on_another_column_come_from_the_sample(engine):
    sql = "SELECT FLOOR(x / 10) AS bin, COUNT(*), AVG(y) FROM t WHERE y > 0.5 GROUP BY bin"
    approx = engine.query(sql)
    assert approx.attrs["form"] == "sample"
    merged = joined(approx, exact(engine, sql, "x"), "bin")
    big = merged["count_star() exact"] >= 1000
    count_error = (merged["count_star() approx"] / merged["count_star() exact"] - 1).abs()
    assert count_error[big].max() <= 0.06
    assert (merged["avg(y) approx"] - merged["avg(y) exact"]).abs()[big].max() <= 0.1


def test_intervals_surround_the_same_answers(engine):
    sql = "SELECT FLOOR(x / 20) * 20 AS bin, COUNT(*), SUM(y) FROM t WHERE g = 'a' GROUP BY bin"
    plain, with_error = engine.query(sql), engine.query(sql, with_error=True)
    assert list(with_error.columns) == ["bin", "count_star()", "count_star() low", "count_star() high",
                                        "sum(y)", "sum(y) low", "sum(y) high"]
    pd.testing.assert_frame_equal(plain, with_error[plain.columns])
    for name in ("count_star()", "sum(y)"):
        assert (with_error[f"{name} low"] <= with_error[name]).all()
        assert (with_error[name] <= with_error[f"{name} high"]).all()
    truth = exact(engine, sql, "x").merge(with_error, on="bin", suffixes=(" exact", ""))
    big = truth["count_star() exact"] >= 500
    inside = (truth["count_star() low"] <= truth["count_star() exact"]) & \
             (truth["count_star() exact"] <= truth["count_star() high"])
    assert inside[big].mean() >= 0.8  # 95 % intervals of the sampling error


def test_group_by_position_or_expression_and_compare(engine):
    forms = ["SELECT FLOOR(x / 25) * 25 AS bin, COUNT(*) FROM t GROUP BY 1 ORDER BY 1",
             "SELECT 25 * FLOOR(x / 25) AS bin, COUNT(*) FROM t GROUP BY 25 * FLOOR(x / 25) ORDER BY bin",
             "select floor(X / 25) * 25 as bin, count(*) from T group by BIN"]
    answers = [engine.query(sql) for sql in forms]
    for other in answers[1:]:
        pd.testing.assert_frame_equal(answers[0], other)
    compared = engine.compare(forms[0])
    assert {"bin", "count_star() approx", "count_star() exact", "count_star() rel. error"} <= set(compared.columns)
    assert not compared["bin"].isna().any()  # the exact side leaves the NULL bin out too
    assert compared.attrs["form"] == "grid"


def test_a_range_holding_no_value_gives_no_bins(engine):
    answer = engine.query("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t WHERE x > 1e9 GROUP BY bin", with_error=True)
    assert answer.empty and list(answer.columns) == ["bin", "count_star()", "count_star() low", "count_star() high"]


def test_bin_edges_follow_floating_point_division():
    rng = np.random.default_rng(2)
    for width in (0.1, 0.3, 7.0, 1e-3, 12.5):
        values = np.concatenate([rng.uniform(-50, 50, 2000), np.round(rng.uniform(-50, 50, 2000), 1)])
        for v in values:
            k = math.floor(v / width)
            assert bin_edge(k, width) <= v < bin_edge(k + 1, width)
    assert math.floor(0.3 / 0.1) == 2 and bin_edge(3, 0.1) > 0.3


def test_synopsis_keeps_each_columns_minimum_and_maximum(engine):
    synopsis = engine.synopsis("t")
    row = engine.con.execute("SELECT MIN(x), MAX(x), MIN(k), MAX(k), MIN(d), MAX(d) FROM t").fetchone()
    got = [getattr(synopsis.models[c], end) for c in ("x", "k", "d") for end in ("minimum", "maximum")]
    assert got == pytest.approx(list(row), rel=0, abs=0)
    reloaded = type(synopsis).from_bytes(synopsis.to_bytes())
    assert reloaded.models == synopsis.models


@pytest.mark.parametrize(("sql", "error", "match"), [
    ("SELECT FLOOR(x / 0) AS bin, COUNT(*) FROM t GROUP BY bin", ValueError, "positive number"),
    ("SELECT FLOOR(x / -5) AS bin, COUNT(*) FROM t GROUP BY bin", ValueError, "positive number"),
    ("SELECT FLOOR(x / y) AS bin, COUNT(*) FROM t GROUP BY bin", UnsupportedQuery, "number literal"),
    ("SELECT FLOOR(x / 10) * 5 AS bin, COUNT(*) FROM t GROUP BY bin", UnsupportedQuery, "both w"),
    ("SELECT FLOOR(x / 10), COUNT(*) FROM t GROUP BY FLOOR(x / 10)", UnsupportedQuery, "AS bin"),
    ("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t GROUP BY bin, g", UnsupportedQuery, "GROUP BY the bin only"),
    ("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t", UnsupportedQuery, "GROUP BY the bin only"),
    ("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t GROUP BY bin ORDER BY 2", UnsupportedQuery, "ORDER BY the bin"),
    ("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t GROUP BY bin LIMIT 3", UnsupportedQuery, "LIMIT"),
    ("SELECT FLOOR(x / 10) AS a, FLOOR(y) AS b, COUNT(*) FROM t GROUP BY a, b", UnsupportedQuery, "two FLOOR"),
    ("SELECT FLOOR(x / 10) AS bin FROM t GROUP BY bin", UnsupportedQuery, "without COUNT"),
    ("SELECT width_bucket(x, 0, 100, 10) AS bin, COUNT(*) FROM t GROUP BY bin", UnsupportedQuery, "FLOOR"),
    ("SELECT FLOOR(x / 1e-6) AS bin, COUNT(*) FROM t GROUP BY bin", ValueError, f"more than {MAX_BINS}"),
    ("SELECT FLOOR(z / 10) AS bin, COUNT(*) FROM t GROUP BY bin", ValueError, "no column 'z'"),
    ("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t WHERE x > 1 OR y > 1 GROUP BY bin", UnsupportedQuery, "OR"),
])
def test_bad_histogram_queries_say_what_is_wrong(engine, sql, error, match):
    with pytest.raises(error, match=match):
        engine.query(sql)


def test_regression_method_and_old_synopses_are_refused(engine):
    sql = "SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t GROUP BY bin"
    with pytest.raises(ValueError, match="method='density'"):
        engine.query(sql, method="regression")
    other = Engine(engine.con)
    synopsis = other.synopsis("t")
    synopsis.models["x"] = replace(synopsis.models["x"], minimum=None, maximum=None)  # as built before they were kept
    with pytest.raises(ValueError, match=r"engine.refresh\('t'\)"):
        other.query(sql)


def test_other_queries_are_not_histograms():
    assert parse_histogram("SELECT COUNT(*) FROM t WHERE x > 1") is None
    assert parse_histogram("SELECT COUNT(*) FROM floors WHERE x > 1") is None  # the word, not the function


def test_exact_sql_runs_in_duckdb(engine):
    query = parse_histogram("SELECT FLOOR(x / 10) * 10 AS bin, AVG(y) AS m FROM t WHERE y > 0 GROUP BY bin")
    text = exact_sql(query)
    assert "IS NULL" in text and "ORDER BY" in text
    answer = engine.con.execute(text).df()
    assert list(answer.columns) == ["bin", "m"] and answer["bin"].is_monotonic_increasing


@pytest.mark.parametrize("sql", [
    "SELECT FLOOR(x / 10) * 10 AS bin, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY bin",
    "SELECT FLOOR(x / 5) * 5 AS bin, COUNT(*), AVG(y), SUM(x) FROM t WHERE y > 0.5 GROUP BY bin",
    "SELECT FLOOR(x / 7) AS bin, COUNT(*), SUM(y) FROM t WHERE y BETWEEN -1 AND 1 AND k < 20 AND x > 3 GROUP BY bin",
    "SELECT FLOOR(y / 0.25) * 0.25 AS bin, COUNT(*), AVG(x) FROM t WHERE g = 'a' AND x < 40 GROUP BY bin",
    "SELECT FLOOR(k / 3) * 3 AS bin, COUNT(*), SUM(k) FROM t WHERE x BETWEEN 10 AND 30 GROUP BY bin ORDER BY bin DESC",
    "SELECT FLOOR(d / 0.1) * 0.1 AS bin, COUNT(*) FROM t WHERE y < 0 AND g IN ('b') GROUP BY bin",
    "SELECT FLOOR(k / 0.5) * 0.5 AS bin, COUNT(*) FROM t WHERE y < 0 GROUP BY bin",
    "SELECT FLOOR(x / 10) * 10 AS bin, COUNT(*) FROM t WHERE y > 9 GROUP BY bin",
])
@pytest.mark.parametrize("z", [None, 1.96])
def test_one_pass_over_the_sample_equals_one_query_per_bin(engine, sql, z):
    from parzen.aqp import histogram

    binned = engine._resolved_histogram(parse_histogram(sql))
    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    fast, fast_form = histogram.answer(binned, synopsis, layout, z)
    slow, slow_form = histogram.answer(binned, synopsis, layout, z, one_pass=False)
    assert fast_form == slow_form
    assert list(fast.columns) == list(slow.columns)
    np.testing.assert_allclose(fast.to_numpy(float), slow.to_numpy(float), rtol=1e-12, atol=0.0, equal_nan=True)


def test_one_pass_leaves_other_aggregates_to_the_per_bin_path(engine):
    from parzen.aqp import histogram_pass

    sql = "SELECT FLOOR(x / 10) * 10 AS bin, MAX(y) FROM t WHERE y > 0 GROUP BY bin"
    binned = engine._resolved_histogram(parse_histogram(sql))
    boxes = [binned.base.ranges[binned.column]]
    assert histogram_pass.one_pass_answers(binned.base, binned.column, boxes, engine.synopsis("t"),
                                           engine._layouts["t"], None) is None
    assert len(engine.query(sql)) > 0


def test_density_is_the_samples_kernel_mass_per_bin(engine):
    from parzen.aqp import histogram

    sql = "SELECT FLOOR(x / 4) * 4 AS bin, COUNT(*) FROM t WHERE y BETWEEN -0.5 AND 1.5 GROUP BY bin"
    binned = engine._resolved_histogram(parse_histogram(sql))
    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    labels, masses = histogram.density(binned, synopsis, layout)
    assert np.array_equal(labels, histogram.bins(binned, synopsis) * 4)
    weights = layout.weight[layout.stratum_of_row]  # a whole-table query: every kernel at its bandwidth
    models = synopsis.models
    y_mass, _ = models["y"].mass_and_moment(synopsis.sample["y"], *models["y"].interval(binned.base.ranges["y"]))
    for label, mass, box in zip(labels, masses, histogram.bin_ranges(binned, labels / 4)):
        x_mass, _ = models["x"].mass_and_moment(synopsis.sample["x"], *models["x"].interval(box))
        assert mass == pytest.approx(float(np.sum(weights * x_mass * y_mass)), rel=1e-9, abs=1e-9), label
    assert masses.sum() == pytest.approx(float(np.sum(weights * y_mass * ~np.isnan(synopsis.sample["x"]))), rel=1e-6)


def test_density_without_other_predicates_is_the_grid_forms_histogram(engine):
    from parzen.aqp import histogram

    sql = "SELECT FLOOR(x / 2.5) * 2.5 AS bin, COUNT(*) AS n FROM t WHERE x < 60 GROUP BY bin"
    binned = engine._resolved_histogram(parse_histogram(sql))
    labels, masses = histogram.density(binned, engine.synopsis("t"), engine._layouts["t"])
    answer = engine.query(sql)
    assert answer.attrs["form"] == "grid"
    by_label = dict(zip(labels, masses))
    np.testing.assert_allclose([by_label[b] for b in answer["bin"]], answer["n"], rtol=1e-12)


def test_grid_boxes_are_kept_and_bounded(engine):
    from parzen.aqp import grid as grid_module

    grid = engine.synopsis("t").grids["x"]
    first = grid.box(3.0, 17.5)
    assert grid.box(3.0, 17.5) == first and (3.0, 17.5) in grid._boxes
    rows, total = grid.boxes(np.array([3.0]), np.array([17.5]))
    assert (rows[0], total[0]) == first
    for k in range(grid_module.BOXES_KEPT + 10):
        grid.box(float(k), float(k) + 0.5)
    assert len(grid._boxes) <= grid_module.BOXES_KEPT


def test_bin_edges_are_bin_edge_elementwise():
    from parzen.aqp.histogram import bin_edges

    ks = np.arange(-60.0, 60.0)
    for width in (0.1, 0.3, 1.0, 2.5, 1e-3, 7.0 / 3.0, 4000.0, 522.5, 1e-300):
        assert bin_edges(ks, width).tolist() == [bin_edge(k, width) for k in ks]
    far = np.array([-1e6, 3e5, 123456.0])
    assert bin_edges(far, 4000.0).tolist() == [bin_edge(k, 4000.0) for k in far]


@pytest.mark.parametrize("where", ["", "WHERE x > 10", "WHERE x >= 10 AND x < 35.5", "WHERE x BETWEEN 0.3 AND 20",
                                   "WHERE x < 40 AND y > 0"])
def test_bin_ranges_are_the_bins_within_the_querys_range(engine, where):
    from parzen.aqp import histogram
    from parzen.aqp.sql import Range

    binned = engine._resolved_histogram(parse_histogram(f"SELECT FLOOR(x / 2.5) * 2.5 AS b, COUNT(*) FROM t {where} "
                                                        "GROUP BY b"))
    ks = histogram.bins(binned, engine.synopsis("t"))
    own = binned.base.ranges["x"]
    assert histogram.bin_ranges(binned, ks) == [own.intersect(Range("x", bin_edge(k, 2.5), bin_edge(k + 1, 2.5),
                                                                    True, False)) for k in ks]


def test_marginals_are_kept_and_bounded(engine):
    from parzen.aqp import estimate

    view, model = engine._layouts["t"].view, engine.synopsis("t").models["x"]
    first = view.marginal(model, 3.0, 17.5)
    assert view.marginal(model, 3.0, 17.5) == first and (model, 3.0, 17.5) in view._marginals
    view._marginals.clear()
    assert view.marginal(model, 3.0, 17.5) == first  # computed again: the same
    for k in range(estimate.MARGINALS_KEPT + 10):
        view.marginal(model, float(k), float(k) + 0.5)
    assert len(view._marginals) <= estimate.MARGINALS_KEPT
