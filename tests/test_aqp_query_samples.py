"""``query(sql, max_rel_error=...)``'s middle road (issue 19, item 3 (b)): a sample of the table drawn
when the query runs, sized from the synopsis's interval, its bound honoured, its SQL generated safely."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, query_samples
from parzen.aqp.sql import Aggregate, AggregateQuery, Range, parse, read_only_sql

N = 1_500_000


@pytest.fixture(scope="module")
def engine():
    rng = np.random.default_rng(5)
    x = rng.normal(10.0, 3.0, N)
    h = rng.choice(["p", "q", "r", "s"], N).astype(object)
    h[rng.random(N) < 2e-5] = "rare"  # about 30 rows: a drawn sample misses it or holds it in few blocks
    frame = pd.DataFrame({"x": x, "w": rng.gamma(2.0, 2.0, N), "y": 0.5 * x + rng.normal(0.0, 1.0, N),
                          "g": rng.choice(["a", "b", "c"], N, p=[0.6, 0.3, 0.1]), "h": h})
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    e = Engine(con)
    e.build("t", group_by=["g"], sample=5_000, seed=2, grid=0)
    return e


QUERIES = [
    "SELECT SUM(w) AS s, AVG(y) AS a FROM t WHERE x > 9",
    "SELECT g, SUM(w) AS s, COUNT(*) AS c FROM t WHERE x BETWEEN 5 AND 12 GROUP BY g",
    "SELECT SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS share FROM t WHERE x > 8",
    "SELECT SUM(w * y) AS m FROM t WHERE x < 12 AND y > 3",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_bound_is_honoured_and_form_says_which(engine, sql):
    bound = 0.02
    answer = engine.query(sql, max_rel_error=bound, with_error=True)
    exact = engine.query(sql, exact=True)
    names = [c for c in exact.columns if c not in ("g", "h")]
    assert answer.attrs["form"] in ("sample", "totals", query_samples.FORM, "exact")
    if "g" in exact.columns:
        exact = exact.sort_values("g").reset_index(drop=True)
        assert list(answer["g"]) == list(exact["g"])
    for name in names:
        value = answer[name].to_numpy(dtype=float)
        half = np.maximum(value - answer[f"{name} low"], answer[f"{name} high"] - value)
        assert (half <= bound * np.abs(value) + 1e-12).all()
        np.testing.assert_allclose(value, exact[name].to_numpy(dtype=float), rtol=3 * bound)


def test_some_answers_come_from_a_drawn_sample(engine):
    forms = [engine.query(sql, max_rel_error=0.02).attrs["form"] for sql in QUERIES]
    assert query_samples.FORM in forms
    drawn = engine.query(QUERIES[0], max_rel_error=0.02)
    if drawn.attrs["form"] == query_samples.FORM:
        assert 0.0 < drawn.attrs["sampled_fraction"] <= query_samples.MAX_FRACTION


def test_large_fraction_goes_to_exact(engine):
    answer = engine.query(QUERIES[0], max_rel_error=1e-4)
    assert answer.attrs["form"] == "exact"
    assert query_samples.fraction_needed(5_000, N, answer.attrs["relative_half_width"], 1e-4) > \
        query_samples.MAX_FRACTION


def test_every_group_is_returned(engine):
    sql = "SELECT h, SUM(w) AS s FROM t WHERE x > 6 GROUP BY h"
    answer = engine.query(sql, max_rel_error=0.05)
    exact = engine.query(sql, exact=True)
    assert sorted(answer["h"]) == sorted(exact["h"])
    assert "rare" in set(answer["h"])


def test_fraction_needed():
    assert query_samples.fraction_needed(10_000, 10_000_000, 0.04, 0.01) == pytest.approx(1.5 * 10_000 * 16 / 1e7)
    least = 2 * query_samples.MIN_BLOCKS * query_samples.BLOCK_ROWS / 10_000_000
    assert query_samples.fraction_needed(10_000, 10_000_000, 0.011, 0.01) == pytest.approx(least)
    assert query_samples.fraction_needed(10_000, 10_000_000, float("inf"), 0.01) == float("inf")
    # a bound so small that (r / e)^2 overflows: no fraction draws it (the exact answer), not OverflowError
    assert query_samples.fraction_needed(10_000, 10_000_000, 1e-8, 1e-300) == float("inf")
    assert query_samples.redrawn_fraction(0.01, 1e-8, 1e-300) == float("inf")


def test_plan_refuses_what_totals_do_not_give():
    assert query_samples.plan(parse("SELECT VAR_SAMP(x) FROM t WHERE y > 1")) is None
    assert query_samples.plan(parse("SELECT SUM(x) FROM t WHERE y > 1 OR y < -1")) is None
    queries, outputs = query_samples.plan(parse("SELECT AVG(x * y) AS a, SUM(x) - 2 * SUM(y) AS d FROM t"))
    assert [name for name, _ in outputs] == ["a", "d"]
    assert len(queries) == 1 and len(queries[0].aggregates) == 5  # SUM(xy), its rows, SUM(x), SUM(y), COUNT(*)


def test_generated_sql_is_one_read_only_select_of_the_table():
    table = 't"; DROP TABLE t; --'
    text = "x'); DROP TABLE t; --"
    query = AggregateQuery(table, ("g", Aggregate("sum", "w\"x", "__parzen_leaf_0")),
                           ranges={"x": Range("x", 1.0, 2.0)}, members={"g": frozenset({text})}, group_by=("g",))
    sql = query_samples.sampled_sql([query], 3.5)
    con = duckdb.connect(":memory:")
    statements = con.extract_statements(sql)
    assert len(statements) == 1 and statements[0].type == duckdb.StatementType.SELECT
    regenerated, tables = read_only_sql(sql)
    assert tables == {(table,)}
    assert "TABLESAMPLE SYSTEM (3.5 PERCENT) REPEATABLE" in regenerated
    assert "'x''); DROP TABLE t; --'" in sql and '"w""x"' in sql
    with pytest.raises(ValueError, match="percentage"):
        query_samples.sampled_sql([query], 0.0)


def test_drawn_answer_matches_the_estimator_on_the_whole_table(engine):
    """At 100 % every block is drawn: the ratio estimator is the table's exact total, with width 0."""
    planned = query_samples.plan(engine._resolved(parse(QUERIES[1])))
    frame, fewest = query_samples.answer(engine._run, planned, N, 100.0, 1.96)
    exact = engine.query(QUERIES[1], exact=True).set_index("g")
    frame = frame.set_index("g").loc[exact.index]
    np.testing.assert_allclose(frame["s"], exact["s"], rtol=1e-9)
    np.testing.assert_allclose(frame["s high"] - frame["s low"], 0.0, atol=1e-6)
    assert fewest > query_samples.MIN_BLOCKS


def test_redrawn_fraction_holds_the_design_effect():
    assert query_samples.redrawn_fraction(0.05, 0.03, 0.02) == pytest.approx(1.5 * 0.05 * 2.25)
    assert query_samples.redrawn_fraction(0.05, float("nan"), 0.02) == float("inf")
