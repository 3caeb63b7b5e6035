"""CASE inside aggregates and arithmetic of aggregates (issue 19, items 2 and 3): the split into leaves,
answers against DuckDB's, the delta-method intervals and the refusals by name."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine
from parzen.aqp.case_aggregates import Leaf, split
from parzen.aqp.sql import Range, UnsupportedQuery

N = 20_000


@pytest.fixture(scope="module")
def engine():
    rng = np.random.default_rng(3)
    x = rng.normal(10.0, 3.0, N)
    frame = pd.DataFrame({
        "x": x, "w": rng.gamma(2.0, 2.0, N), "y": 0.5 * x + rng.normal(0.0, 1.0, N),
        "v": np.where(rng.random(N) < 0.2, np.nan, rng.normal(5.0, 1.0, N)),  # NULLs
        "g": rng.choice(["a", "b", "c"], N, p=[0.6, 0.3, 0.1]), "h": rng.choice(["p", "q", "r", "s"], N),
    })
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    e = Engine(con)
    e.build("t", group_by=["g"], sample=N // 4, seed=1)
    return e


def _both(engine, sql, keys=()):
    approx = engine.query(sql, with_error=True)
    exact = engine.query(sql, exact=True)
    if keys:
        exact = exact.sort_values(list(keys)).reset_index(drop=True)
    return approx, exact


def test_split_expands_case_branches_by_inclusion_exclusion():
    c = split("SELECT SUM(CASE WHEN a > 1 THEN x WHEN b = 'k' THEN 2 ELSE y END) AS s FROM t WHERE z < 3")
    assert set(c.leaves) == {Leaf("SUM(x)", ("a > 1",)), Leaf("COUNT(*)", ("b = 'k'",)),
                             Leaf("COUNT(*)", ("a > 1", "b = 'k'")), Leaf("SUM(y)", ()), Leaf("SUM(y)", ("a > 1",)),
                             Leaf("SUM(y)", ("b = 'k'",)), Leaf("SUM(y)", ("a > 1", "b = 'k'"))}
    first, _ = c.subqueries[0]
    assert [a.name for a in first.aggregates] == ["__parzen_rows", "__parzen_leaf_3"] and set(first.ranges) == {"z"}
    assert [(set(q.ranges), set(q.members)) for q, _ in c.subqueries[1:]] == [({"z", "a"}, set()), ({"z"}, {"b"}),
                                                                           ({"z", "a"}, {"b"})]
    assert all(q.ranges["z"] == Range("z", None, 3.0, True, False) for q, _ in c.subqueries)
    assert c.exact_sql == """SELECT SUM(CASE WHEN a > 1 THEN x WHEN b = 'k' THEN 2 ELSE y END) AS "s" FROM t WHERE z < 3"""
    assert c.tree.sql(dialect="duckdb") == ("SELECT SUM(CASE WHEN a > 1 THEN x WHEN b = 'k' THEN 2 ELSE y END) AS s "
                                            "FROM t WHERE z < 3")  # the sub-queries share its nodes, unchanged
    assert split("SELECT SUM(x) FROM t") is None
    assert split("SELECT SUM(x) - SUM(y) FROM t") is None  # the plain subset answers sums of aggregates


@pytest.mark.parametrize("sql, named", [
    ("SELECT SUM(CASE WHEN a > 1 THEN CASE WHEN b > 1 THEN 1 END ELSE 0 END) FROM t", "nested CASE"),
    ("SELECT SUM(CASE WHEN a = 1 THEN 1 WHEN a = 2 THEN 2 WHEN a = 3 THEN 3 WHEN a = 4 THEN 4 END) FROM t",
     "4 WHEN branches"),
    ("SELECT COUNT(CASE WHEN a > 1 THEN x * y END) FROM t", "COUNT of"),
    ("SELECT SUM(x * CASE WHEN a > 1 THEN 1 ELSE 0 END) FROM t", "a CASE inside an expression"),
    ("SELECT SUM(CASE a WHEN 1 THEN x END) FROM t", "simple CASE"),
    ("SELECT SUM(x) / MAX(y) FROM t", r"MAX\(y\) in"),
    ("SELECT SUM(x) / SUM(y) + x FROM t", "the column x"),
    ("SELECT h, SUM(CASE WHEN a > 1 THEN x ELSE 0 END) FROM t GROUP BY g", "the column h in SELECT without GROUP BY h"),
    ("SELECT g AS k, SUM(CASE WHEN a > 1 THEN x ELSE 0 END) FROM t GROUP BY g", "renaming the group column g AS k"),
])
def test_refused_by_name(sql, named):
    with pytest.raises(UnsupportedQuery, match=named):
        split(sql)


def test_case_on_strata_column_is_exact(engine):
    sql = ("SELECT h, SUM(CASE WHEN g IN ('a', 'b') THEN 1 ELSE 0 END) AS hi, "
           "SUM(CASE WHEN g = 'c' THEN w WHEN g = 'b' THEN 2 ELSE y END) AS mixed, "
           "COUNT(CASE WHEN g IN ('a', 'c') THEN v END) AS present, AVG(CASE WHEN g = 'b' THEN v END) AS mean_b "
           "FROM t GROUP BY h")
    approx, exact = _both(engine, sql, ["h"])
    assert list(approx["h"]) == list(exact["h"])
    for name in ("hi", "present"):
        np.testing.assert_allclose(approx[name], exact[name].astype(float), rtol=0.02)
    np.testing.assert_allclose(approx["mixed"], exact["mixed"], rtol=0.03)
    np.testing.assert_allclose(approx["mean_b"], exact["mean_b"], rtol=0.03)
    for name in ("hi", "mixed", "present", "mean_b"):
        assert (approx[f"{name} low"] <= exact[name]).all() and (exact[name] <= approx[f"{name} high"]).all()


def test_case_without_groups_is_exact_from_totals(engine):
    approx, exact = _both(engine, "SELECT SUM(CASE WHEN g = 'b' THEN w ELSE 0 END) AS s, "
                                  "COUNT(CASE WHEN g = 'b' THEN NULL ELSE 1 END) AS c FROM t")
    np.testing.assert_allclose(approx[["s", "c"]].to_numpy(), exact[["s", "c"]].to_numpy(dtype=float), rtol=1e-9)
    assert approx.attrs["form"] == "totals"
    np.testing.assert_allclose(approx["s high"] - approx["s low"], 0.0)


def test_ratio_of_case_sums_like_tpch_q14(engine):
    sql = ("SELECT 100.00 * SUM(CASE WHEN h = 'p' THEN w * (1 - y / 100) ELSE 0 END) / SUM(w * (1 - y / 100)) "
           "AS promo FROM t WHERE x BETWEEN 8 AND 12")
    approx, exact = _both(engine, sql)
    value, truth = float(approx["promo"].iloc[0]), float(exact["promo"].iloc[0])
    assert abs(value - truth) / truth < 0.05
    assert approx["promo low"].iloc[0] <= truth <= approx["promo high"].iloc[0]
    assert approx.attrs["form"] == "sample"


def test_ratio_interval_uses_the_covariance(engine):
    """SUM(w) / SUM(w) under a range is 1 with no sampling error: the covariance cancels the two
    sums' errors (the first-order bound |dg| h would not)."""
    frame = engine.query("SELECT SUM(w) / SUM(w) AS one, SUM(w) AS s FROM t WHERE x > 11", with_error=True)
    assert frame["one"].iloc[0] == pytest.approx(1.0)
    assert frame["one high"].iloc[0] - frame["one low"].iloc[0] < 1e-9
    assert frame["s high"].iloc[0] > frame["s low"].iloc[0]


def test_ratio_with_group_by_returns_every_group(engine):
    sql = "SELECT g, h, SUM(y) / SUM(w) AS r, SUM(w) / COUNT(*) AS m FROM t WHERE x > 7 GROUP BY g, h"
    approx, exact = _both(engine, sql, ["g", "h"])
    assert len(approx) == len(exact) == 12
    merged = approx.merge(exact, on=["g", "h"], suffixes=("", " exact"))
    for name in ("r", "m"):
        assert ((merged[name] - merged[f"{name} exact"]).abs() / merged[f"{name} exact"].abs()).median() < 0.05
        inside = (merged[f"{name} low"] <= merged[f"{name} exact"]) & (merged[f"{name} exact"] <= merged[f"{name} high"])
        assert inside.mean() >= 0.75


def test_group_with_zero_case_total_is_returned(engine):
    approx, exact = _both(engine, "SELECT g, SUM(CASE WHEN g = 'a' THEN w ELSE 0 END) AS s FROM t WHERE x > 9 "
                                  "GROUP BY g", ["g"])
    assert list(approx["g"]) == ["a", "b", "c"]
    assert (approx["s"].iloc[1:] == 0.0).all() and (exact["s"].iloc[1:] == 0.0).all()


def test_exact_leaves_place_each_sub_querys_totals_among_the_first_ones_groups():
    """The exact tables' leaves: a sub-query's totals at the row of their group among the first sub-query's
    groups, 0 where it has none, NaN (a SUM over no row) as 0 and infinities as the largest floats, the same
    floats whether or not every sub-query has the first one's groups."""
    from types import SimpleNamespace

    from parzen.aqp.case_aggregates import LEAF
    from parzen.aqp.cube_answers import Totals
    from parzen.aqp.ratios import _exact_leaves

    rng = np.random.default_rng(2)
    groups = np.array([[0, 1], [0, 3], [2, 0], [4, 4]])
    for _ in range(200):
        totals, expected = [], {}
        for k in range(3):
            kept = np.sort(rng.choice(len(groups), size=int(rng.integers(0, len(groups) + 1)), replace=False)) \
                if k and rng.random() < 0.5 else np.arange(len(groups))
            value = rng.normal(size=kept.size) * 1e3
            value[rng.random(kept.size) < 0.2] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
            totals.append(Totals(groups[kept], {f"{LEAF}{k}": value}))
            want = np.zeros(len(groups))
            want[kept] = np.nan_to_num(value)
            expected[k] = want
        leaves = _exact_leaves(SimpleNamespace(subqueries=[(None, (k,)) for k in range(3)]), totals)
        for k, want in expected.items():
            assert leaves[k].tobytes() == want.tobytes()
            assert leaves[k] is not totals[k].totals[f"{LEAF}{k}"]


def test_ratio_coverage_over_random_ranges(engine):
    rng = np.random.default_rng(11)
    covered = 0
    trials = 40
    for _ in range(trials):
        low = float(rng.uniform(4.0, 11.0))
        high = low + float(rng.uniform(2.0, 6.0))
        sql = (f"SELECT SUM(CASE WHEN h IN ('p', 'q') THEN w ELSE 0 END) / SUM(w) AS share FROM t "
               f"WHERE x BETWEEN {low} AND {high}")
        approx, exact = _both(engine, sql)
        truth = float(exact["share"].iloc[0])
        covered += approx["share low"].iloc[0] <= truth <= approx["share high"].iloc[0]
    assert covered / trials >= 0.85


def test_max_rel_error_falls_back_to_exact(engine):
    sql = "SELECT h, SUM(y) / SUM(w) AS r FROM t WHERE x > 12 GROUP BY h"
    loose = engine.query(sql, max_rel_error=0.5)
    assert loose.attrs["form"] == "sample"
    tight = engine.query(sql, max_rel_error=1e-6)
    assert tight.attrs["form"] == "exact"
    exact = engine.query(sql, exact=True).sort_values("h").reset_index(drop=True)
    np.testing.assert_allclose(tight["r"], exact["r"])
    assert list(tight["h"]) == list(exact["h"])


def test_compare_and_prepare(engine):
    sql = "SELECT SUM(CASE WHEN h = 'q' THEN 1 ELSE 0 END) / COUNT(*) AS share FROM t WHERE x < 10"
    assert engine.prepare(sql) == 0.0
    compared = engine.compare(sql)
    assert compared["share rel. error"].iloc[0] < 0.05


def test_where_refusal_is_named_for_a_case_condition(engine):
    with pytest.raises(UnsupportedQuery, match="x IS NULL|IS NULL"):
        engine.query("SELECT SUM(CASE WHEN x IS NULL THEN 1 ELSE 0 END) / COUNT(*) FROM t")


def test_join_synopsis_ratio_and_case_counts():
    """TPC-H Q14 and Q12 shapes on a star schema: the CASE condition on a dimension's column."""
    rng = np.random.default_rng(8)
    n, keys = 30_000, 200
    fact = pd.DataFrame({"fk": rng.integers(0, keys, n), "x": rng.normal(5.0, 2.0, n), "w": rng.gamma(2.0, 3.0, n),
                         "mode": rng.choice(["air", "mail", "ship"], n)})
    dim = pd.DataFrame({"pk": np.arange(keys), "kind": rng.choice(["PROMO", "STANDARD", "SMALL"], keys),
                        "priority": rng.choice(["1-URGENT", "2-HIGH", "3-LOW"], keys)})
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    for name, frame in (("fact", fact), ("dim", dim)):
        con.register("frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    e = Engine(con)
    e.build("fact", columns=["x", "w"], joins={"fk": "dim.pk"}, sample=8_000, seed=4)
    q14 = ("SELECT 100.00 * SUM(CASE WHEN kind = 'PROMO' THEN w * (1 - x / 100) ELSE 0 END) / SUM(w * (1 - x / 100)) "
           "AS promo FROM fact, dim WHERE fk = pk AND x BETWEEN 3 AND 7")
    approx, exact = _both(e, q14)
    truth = float(exact["promo"].iloc[0])
    assert abs(float(approx["promo"].iloc[0]) - truth) / truth < 0.05
    assert approx["promo low"].iloc[0] <= truth <= approx["promo high"].iloc[0]
    q12 = ("SELECT mode, SUM(CASE WHEN priority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END) AS high, "
           "SUM(CASE WHEN priority IN ('1-URGENT', '2-HIGH') THEN 0 ELSE 1 END) AS low FROM fact JOIN dim ON fk = pk "
           "WHERE mode IN ('air', 'mail') AND x > 4 GROUP BY mode")
    approx, exact = _both(e, q12, ["mode"])
    assert list(approx["mode"]) == list(exact["mode"]) == ["air", "mail"]
    for name in ("high", "low"):
        np.testing.assert_allclose(approx[name], exact[name].astype(float), rtol=0.08)
        assert ((approx[f"{name} low"] <= exact[name]) & (exact[name] <= approx[f"{name} high"])).all()


def test_group_columns_selected_in_another_order(engine):
    sql = "SELECT h, g, SUM(y) / SUM(w) AS r FROM t WHERE x > 8 GROUP BY g, h"
    approx = engine.query(sql, with_error=True)
    assert list(approx.columns[:3]) == ["h", "g", "r"]
    exact = engine.query(sql, max_rel_error=1e-9)
    assert exact.attrs["form"] == "exact"
    assert list(exact.columns) == ["h", "g", "r"]
    assert list(zip(exact["g"], exact["h"])) == list(zip(approx["g"], approx["h"]))  # sorted by g, then h


def test_case_condition_with_not_over_a_range(engine):
    """NOT / OR in a CASE condition go through the WHERE's union of boxes; the interval is then the
    first-order sum of the totals' half widths (no per-row terms for a union)."""
    sql = "SELECT SUM(CASE WHEN NOT (x BETWEEN 8 AND 12) THEN w ELSE 0 END) / SUM(w) AS outside FROM t WHERE y > 3"
    approx, exact = _both(engine, sql)
    truth = float(exact["outside"].iloc[0])
    assert abs(float(approx["outside"].iloc[0]) - truth) / truth < 0.05
    assert approx["outside low"].iloc[0] <= truth <= approx["outside high"].iloc[0]


def test_unaliased_outputs_compare_and_fall_back(engine):
    sql = "SELECT g, SUM(w) / SUM(x) FROM t WHERE y > 4 GROUP BY g"
    compared = engine.compare(sql)
    assert (compared["SUM(w) / SUM(x) rel. error"] < 0.05).all()
    exact = engine.query(sql, max_rel_error=1e-9)
    assert exact.attrs["form"] == "exact" and list(exact.columns) == ["g", "SUM(w) / SUM(x)"]


def test_the_contract_answers_a_ratio_exactly_on_a_connection_with_file_access_as_it_does_other_queries():
    """max_rel_error's exact answer runs SQL that parzen wrote from its parse, for a CASE / ratio query
    as for a plain one (before: only the plain one answered on such a connection, the ratio raised);
    ``exact=True`` on user SQL still needs the connection without file access."""
    rng = np.random.default_rng(5)
    con = duckdb.connect(":memory:")  # external access on, as a connection a user passes may be
    con.execute("CREATE TABLE t AS SELECT * FROM (SELECT unnest($1) AS x, unnest($2) AS g)",
                [rng.normal(0.0, 1.0, 5000).tolist(), rng.choice(["a", "b"], 5000).tolist()])
    e = Engine(con)
    e.build("t", sample=500, seed=2)
    truth = con.execute("SELECT SUM(CASE WHEN g = 'a' THEN x ELSE 0 END) / SUM(x), SUM(x) FROM t WHERE x > 0").fetchone()
    ratio = e.query("SELECT SUM(CASE WHEN g = 'a' THEN x ELSE 0 END) / SUM(x) AS r FROM t WHERE x > 0",
                    max_rel_error=1e-12)
    plain = e.query("SELECT SUM(x) AS s FROM t WHERE x > 0", max_rel_error=1e-12)
    assert ratio.attrs["form"] == plain.attrs["form"] == "exact"
    assert ratio["r"].iloc[0] == pytest.approx(truth[0], rel=1e-12)
    assert plain["s"].iloc[0] == pytest.approx(truth[1], rel=1e-12)
    with pytest.raises(ValueError, match="external access"):
        e.query("SELECT SUM(x) FROM t", exact=True)


def test_sub_query_passes_give_the_floats_of_separate_passes(engine):
    """The answer at h and the bias runs at c h from shared passes (parzen.aqp.subquery_passes) are bit for
    bit those of the separate passes (answers / domains .approximate, then .bias_runs)."""
    from parzen.aqp import answers, domains
    from parzen.aqp.subquery_passes import SubqueryPasses

    composite = split("SELECT g, SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS s, COUNT(*) AS n FROM t "
                      "WHERE x BETWEEN 8 AND 12 GROUP BY g")
    subqueries = [engine._resolved(q) for q, _ in composite.subqueries]
    synopsis = engine.synopsis("t")
    layout = engine._layouts["t"]
    passes = SubqueryPasses(synopsis, layout, with_bias=True)
    paths = []
    for q in subqueries:
        path = domains if domains.needed(q, synopsis) else answers
        paths.append(path)
        frame, form = passes.answer(q, synopsis, 1.96)
        separate, separate_form = path.approximate(q, synopsis, layout, 1.96)
        assert form == separate_form
        pd.testing.assert_frame_equal(frame, separate, check_exact=True)
        for shared, own in zip(passes.runs(q, passes.scaled), path.bias_runs(q, passes.scaled, layout)):
            assert shared.keys() == own.keys()
            for name in own:
                np.testing.assert_array_equal(shared[name], own[name])
    assert paths == [answers, domains]  # both paths are exercised


def test_ratio_intervals_take_students_t_of_the_effective_degrees_of_freedom(engine, monkeypatch):
    """A ratio over a small domain (x beyond 2.3 sd: a few sampled rows per group) takes Student's t
    quantile at the variance estimate's effective degrees of freedom (parzen.aqp.tails), as every other
    sample interval does: few degrees of freedom, and an interval wider than the normal quantile's."""
    from parzen.aqp import ratios
    from parzen.aqp.tails import EXPANDED_FROM, t_quantiles

    sql = "SELECT g, SUM(w) / COUNT(*) AS m, SUM(y) / SUM(w) AS r FROM t WHERE x > 17 GROUP BY g"
    seen = []

    def recorded(z, df):
        seen.append(np.asarray(df, dtype=np.float64).copy())
        return t_quantiles(z, df)

    with monkeypatch.context() as patched:
        patched.setattr(ratios, "t_quantiles", recorded)
        with_t = engine.query(sql, with_error=True)
    assert seen and all(df.shape == (len(with_t),) for df in seen)
    assert min(float(df.min()) for df in seen) < EXPANDED_FROM  # a group of few rows: t well above z
    with monkeypatch.context() as patched:
        patched.setattr(ratios, "t_quantiles", lambda z, df: np.full(np.shape(df), float(z)))
        with_z = engine.query(sql, with_error=True)
    for name in ("m", "r"):
        wide = (with_t[f"{name} high"] - with_t[f"{name} low"]).to_numpy()
        narrow = (with_z[f"{name} high"] - with_z[f"{name} low"]).to_numpy()
        np.testing.assert_array_equal(with_t[name].to_numpy(), with_z[name].to_numpy())
        assert (wide >= narrow - 1e-12).all() and (wide > narrow * 1.01).any(), name


def test_a_case_query_is_split_once_per_text(engine):
    """The split of a CASE / ratio query is kept per SQL text, as its parse is (re-splitting re-parses and
    re-generates its sub-queries with sqlglot: milliseconds on every answer)."""
    from unittest import mock

    from parzen.aqp import case_aggregates
    from parzen.aqp import engine as engine_module

    sql = ("SELECT g, SUM(CASE WHEN x > 10 THEN w ELSE 0 END) / SUM(w) AS share FROM t "
           "WHERE y BETWEEN 2 AND 8 GROUP BY g")
    engine_module._composite_of.cache_clear()
    with mock.patch.object(case_aggregates, "composite_tree", wraps=case_aggregates.composite_tree) as parses, \
            mock.patch.object(case_aggregates, "split_refused", wraps=case_aggregates.split_refused) as splits:
        first, again = engine.query(sql), engine.query(sql)
    assert parses.call_count == 1 and splits.call_count == 1  # a text with CASE: parsed once, by the split
    pd.testing.assert_frame_equal(first, again)


@pytest.mark.parametrize("sql, composite", [
    ("SELECT SUM(showcase) FROM t WHERE case_id > 3", False),  # the letters only inside names: no CASE
    ("SELECT SUM(x) FROM t WHERE g = 'lowercase'", False),
    ("SELECT SUM(CASE WHEN x > 1 THEN w ELSE 0 END) FROM t", True),
    ("select sum(case when x > 1 then w else 0 end) from t", True),
    ("SELECT SUM(CASE(x > 1) WHEN TRUE THEN w END) FROM t", True),  # read for a CASE, refused by the split
])
def test_only_a_text_with_the_word_case_is_parsed_for_a_case_first(sql, composite):
    """A name or text that holds the letters "case" (``showcase``, ``case_id``) is not parsed as a possible CASE
    query before its plain parse (a second parse of the text); the word CASE, in any case, is."""
    from unittest import mock

    from parzen.aqp import case_aggregates
    from parzen.aqp import engine as engine_module

    engine_module._composite_of.cache_clear()
    with mock.patch.object(case_aggregates, "composite_tree", wraps=case_aggregates.composite_tree) as parses:
        try:
            engine_module._composite_of(sql)
        except UnsupportedQuery:
            assert composite
    assert parses.call_count == int(composite)


def _modes():
    """g: a, b, c; mode: TRUCK only in group b (so SUM(CASE WHEN mode = 'TRUCK' ...) is NULL in a and c)."""
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t AS SELECT CASE WHEN hash(i, 2) % 10 < 6 THEN 'a' WHEN hash(i, 2) % 10 < 9 THEN 'b' "
                "ELSE 'c' END AS g, CASE WHEN hash(i, 3) % 4 = 0 THEN 'AIR' ELSE 'SHIP' END AS mode, "
                "(hash(i, 4) % 1000) / 10.0 AS x FROM range(20000) r(i)")
    con.execute("UPDATE t SET mode = 'TRUCK' WHERE g = 'b' AND hash(rowid, 7) % 5 = 0")
    return con


NULL_CASES = ("SELECT g, SUM(CASE WHEN mode = 'TRUCK' THEN x END) AS s, "
              "SUM(CASE WHEN mode = 'TRUCK' THEN x ELSE NULL END) AS s_else, "
              "SUM(CASE WHEN mode = 'TRUCK' THEN 2 END) AS two, SUM(CASE WHEN mode = 'TRUCK' THEN x ELSE 0 END) AS zero, "
              "COUNT(CASE WHEN mode = 'TRUCK' THEN x END) AS n, AVG(CASE WHEN mode = 'TRUCK' THEN x END) AS a "
              "FROM t GROUP BY g")


@pytest.mark.parametrize("options, form", [({"cube": [["g", "mode"]]}, "exact table"),
                                           ({"cube_bytes": 0, "group_by": ["g", "mode"]}, "totals")])
def test_sum_of_a_case_without_else_is_null_where_no_row_takes_a_branch_as_in_duckdb(options, form):
    """SUM(CASE WHEN c THEN x END) (and ELSE NULL) is NULL in a group without a row meeting c, as
    DuckDB's; COUNT(CASE ...) is 0 and SUM(CASE ... ELSE 0 END) is 0 there; answered exactly."""
    con = _modes()
    engine = Engine(con)
    engine.build("t", sample=2_000, grid=0, seed=1, **options)
    approx = engine.query(NULL_CASES, with_error=True)
    exact = con.execute(NULL_CASES + " ORDER BY g").df()
    assert approx.attrs["form"] == form and list(approx["g"]) == list(exact["g"]) == ["a", "b", "c"]
    for name in ("s", "s_else", "two", "a"):
        assert list(approx[name].isna()) == list(exact[name].isna()) == [True, False, True], name
        assert approx[[f"{name} low", f"{name} high"]].iloc[[0, 2]].isna().all().all()
        np.testing.assert_allclose(approx[name].iloc[1], exact[name].iloc[1], rtol=1e-12)
    for name in ("n", "zero"):
        np.testing.assert_allclose(approx[name].to_numpy(float), exact[name].to_numpy(float), rtol=1e-12)


def test_sum_of_a_case_without_else_from_the_sample_is_its_estimate():
    """From the sample (no exact table covers mode) the count of rows meeting c is an estimate, so a
    group without a sampled row meeting it gets the estimate 0 (DuckDB: NULL), documented."""
    con = _modes()
    engine = Engine(con)
    engine.build("t", sample=2_000, grid=0, seed=1, cube_bytes=0)
    approx = engine.query(NULL_CASES)
    exact = con.execute(NULL_CASES + " ORDER BY g").df()
    assert approx.attrs["form"] == "sample"
    assert list(approx["s"]) == [0.0, approx["s"].iloc[1], 0.0] and exact["s"].isna().tolist() == [True, False, True]
    assert abs(approx["s"].iloc[1] / exact["s"].iloc[1] - 1) < 0.2


def test_a_case_query_gets_the_plain_subsets_verdict_from_one_parse(engine):
    """A text with CASE is parsed once (case_aggregates.composite_tree) and the plain subset's verdict read
    from that tree: parse's error stands where parse raises one that is no refusal (an item before the
    CASE divides by 0), and a text whose CASE is no composite item goes through parse as before."""
    from parzen.aqp.case_aggregates import composite_tree, split_refused

    with pytest.raises(ValueError, match="divides by 0"):
        engine.query("SELECT SUM(w) / 0 AS a, SUM(CASE WHEN x > 10 THEN w ELSE 0 END) AS b FROM t")
    tree = composite_tree("SELECT SUM(CASE WHEN x > 10 THEN w ELSE 0 END) AS b FROM t")
    assert tree is not None and split_refused(tree) is not None
    assert composite_tree("SELECT COUNT(*) FROM t WHERE g = 'case'") is None  # "case" in a literal: parse answers it
    assert engine.query("SELECT COUNT(*) AS n FROM t WHERE g <> 'case'", with_error=True).attrs["form"] != "exact"


def test_texts_differing_in_quoted_texts_share_one_parse_from_the_second_on():
    """Texts that differ only in their quoted texts share their template's parse from the second on (the
    first is parsed as written, the second parses the template, the third none), and split as a parse of
    each text does; a text under INTERVAL or a function (read by the parser) keeps its own parse."""
    from unittest import mock

    from parzen.aqp import case_aggregates, text_templates

    def texts(values):
        return [(f"SELECT g, SUM(CASE WHEN h IN ('{a}', '{b}') THEN w ELSE 0 END) / SUM(w) AS s FROM t "
                 f"WHERE g <> '{c}' AND x BETWEEN 8 AND 12 GROUP BY g") for a, b, c in values]

    def splits(sqls):
        return [(c.select, c.leaves, c.subqueries, c.exact_sql) for c in map(split, sqls)]

    sqls = texts([("p", "q", "a"), ("r", "s", "b"), ("p", "", "c''d")])
    with mock.patch.object(text_templates, "cut", return_value=None):  # each parsed as written
        each = splits(sqls)
    case_aggregates._template.cache_clear()
    with mock.patch.object(case_aggregates._DUCKDB, "parse", wraps=case_aggregates._DUCKDB.parse) as parses:
        shared = splits(sqls[:2] + [sqls[0]])
    assert parses.call_count == 1
    assert shared == each[:2] + each[:1]
    assert splits(sqls[2:]) == each[2:]  # a quote inside a text: parsed as written
    for unusual in ("SELECT SUM(CASE WHEN d > DATE '1994-01-01' + INTERVAL '{}' THEN w ELSE 0 END) AS s FROM t",
                    "SELECT SUM(CASE WHEN strftime(d, '{}') = '1994' THEN w ELSE 0 END) AS s FROM t"):
        for value in ("1 day", "%Y", "2 month"):
            assert composite_tree_sql(unusual.format(value)) == composite_tree_sql(unusual.format(value), parsed=True)


def composite_tree_sql(sql, parsed=False):
    """The DuckDB text of :func:`parzen.aqp.case_aggregates.composite_tree` of ``sql``, or of its plain parse."""
    from parzen.aqp import case_aggregates

    tree = case_aggregates._DUCKDB.parse(sql)[0] if parsed else case_aggregates.composite_tree(sql)
    return tree.sql(dialect="duckdb")


@pytest.mark.parametrize("sql", [
    "SELECT g, SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS s FROM t WHERE x BETWEEN 8 AND 12 GROUP BY g",
    "SELECT SUM(CASE WHEN a > 1 THEN x WHEN b = 'k' THEN 2 ELSE y END) AS s FROM t WHERE z < 3",
    ("SELECT g, COUNT(CASE WHEN h <> 'p' AND h <> 'q' THEN 1 END) AS n, AVG(CASE WHEN x > 9 THEN w END) AS m FROM t "
    "WHERE g IN ('a', 'b') OR y > 2 GROUP BY g"),
    ("SELECT l_shipmode, SUM(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) "
    "AS high FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_commitdate < l_receiptdate "
    "AND l_receiptdate >= DATE '1994-01-01' GROUP BY l_shipmode"),
    ("SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) "
    "/ SUM(l_extendedprice * (1 - l_discount)) AS promo FROM lineitem JOIN part ON l_partkey = p_partkey"),
    "SELECT SUM(CASE WHEN x > 1 THEN w END) AS s FROM t",
    # conditions read alone on the WHERE read once (sql.narrowed), and those converted whole
    ("SELECT l_shipmode, SUM(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) "
    "AS high, SUM(CASE WHEN o_orderpriority <> '1-URGENT' AND '2-HIGH' <> o_orderpriority THEN 1 ELSE 0 END) AS low "
    "FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') "
    "AND l_shipdate < l_commitdate AND l_receiptdate < DATE '1995-01-01' GROUP BY l_shipmode"),
    ("SELECT SUM(CASE WHEN l_shipdate = l_commitdate THEN 1 WHEN l_quantity <> 3 THEN 2 ELSE 0 END) AS s, "
    "COUNT(CASE WHEN YEAR(l_shipdate) = 1995 OR NOT l_tax > 1 THEN 1 END) AS n "
    "FROM lineitem JOIN orders ON l_orderkey = o_orderkey WHERE o_orderpriority <> '1-URGENT' AND l_quantity < 30"),
    "SELECT g, SUM(CASE WHEN x = y THEN w WHEN h <> 'p' THEN 1 ELSE 0 END) / SUM(w) AS s FROM t WHERE g <> 'c' GROUP BY g",
    "SELECT SUM(CASE WHEN t.x > 1 THEN w END) / COUNT(*) AS s FROM t WHERE x BETWEEN 1 AND 9",
])
def test_sub_queries_from_the_tree_are_the_parses_of_their_sql(sql):
    """The sub-queries built from the query's tree (sharing its nodes) are what parse() makes of their SQL
    text, ``SELECT <groups>, <leaves> FROM ... WHERE (<WHERE>) AND (<conditions>) GROUP BY ...``, and the
    query's tree is left as parsed."""
    from sqlglot import exp

    from parzen.aqp.case_aggregates import LEAF, ROWS
    from parzen.aqp.sql import parse

    composite = split(sql)
    before = composite.tree.sql(dialect="duckdb")
    for query, indices in composite.subqueries:
        text = composite.tree.copy()
        groups = [g.copy() for g in (text.args["group"].expressions if text.args.get("group") else [])]
        conditions = composite.leaves[indices[0]].conditions if indices else ()
        items = groups + ([exp.alias_(exp.Count(this=exp.Star()), ROWS, quoted=True)] if not conditions else [])
        items += [exp.alias_(exp.maybe_parse(composite.leaves[k].aggregate, dialect="duckdb"), f"{LEAF}{k}",
                             quoted=True) for k in indices]
        text.set("expressions", items)
        if conditions:
            where = text.args.get("where")
            parts = ([exp.paren(where.this)] if where is not None else []) + \
                [exp.paren(exp.maybe_parse(c, dialect="duckdb")) for c in conditions]
            text.set("where", exp.Where(this=exp.and_(*parts)))
        assert query == parse(text.sql(dialect="duckdb"))
    assert composite.tree.sql(dialect="duckdb") == before



def test_a_split_reads_the_where_shared_by_its_sub_queries_once():
    """The WHERE that every sub-query of a split shares is read once (sql.shared_clauses), each sub-query
    reading only its SELECT list and its conditions (sql.narrowed); parse() reads ``column <> 'text'``
    as a term of the conjunction, the box that the OR / NOT path makes of it."""
    from unittest import mock

    from parzen.aqp import sql

    text = ("SELECT g, SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) AS p, SUM(CASE WHEN h <> 'p' AND h <> 'q' THEN w "
            "ELSE 0 END) AS o FROM t WHERE x BETWEEN 8 AND 12 AND y < 3 AND g IN ('a', 'b') GROUP BY g")
    with mock.patch.object(sql, "_add_predicate", wraps=sql._add_predicate) as read:
        composite = split(text)
    assert len(composite.subqueries) == 3
    shown = [call.args[0].sql(dialect="duckdb") for call in read.call_args_list]
    assert shown.count("x BETWEEN 8 AND 12") == shown.count("y < 3") == shown.count("g IN ('a', 'b')") == 1
    assert shown.count("h = 'p'") == shown.count("h <> 'p'") == shown.count("h <> 'q'") == 1
    plain = "SELECT COUNT(*) FROM t WHERE x > 1 AND {} AND y < 2"
    assert sql.parse(plain.format("h <> 'p'")) == sql.parse(plain.format("NOT h = 'p'")) != \
        sql.parse(plain.format("h = 'p'"))


def test_a_leafs_aggregate_text_is_generated_once_per_node():
    """The ELSE branch's value is a leaf under every subset of the earlier conditions: its SUM's text is
    generated once (per node of the query), and COUNT(*)'s never (a constant); the leaves are as before."""
    from unittest import mock

    from parzen.aqp import case_aggregates

    text = "SELECT SUM(CASE WHEN a > 1 THEN 1 WHEN b = 'k' THEN 2 ELSE y END) AS s FROM t"
    with mock.patch.object(case_aggregates._DUCKDB, "generate", wraps=case_aggregates._DUCKDB.generate) as made:
        composite = split(text)
    generated = [call.args[0].sql(dialect="duckdb") for call in made.call_args_list]
    assert generated.count("SUM(y)") == 1 and "COUNT(*)" not in generated
    assert set(composite.leaves) == {Leaf("COUNT(*)", ("a > 1",)), Leaf("COUNT(*)", ("b = 'k'",)),
                                     Leaf("COUNT(*)", ("a > 1", "b = 'k'")), Leaf("SUM(y)", ()),
                                     Leaf("SUM(y)", ("a > 1",)), Leaf("SUM(y)", ("b = 'k'",)),
                                     Leaf("SUM(y)", ("a > 1", "b = 'k'"))}


def test_the_plain_subsets_refusal_of_a_split_query_writes_no_message():
    """split_refused reads the plain subset's verdict on the SELECT list and discards its refusal: the
    message, which quotes the item's SQL, is written only when read (str, repr, pickling), as before."""
    import pickle
    from unittest import mock

    from parzen.aqp import case_aggregates, sql

    for text in ("SELECT 100.00 * SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS r FROM t",
                 "SELECT g, SUM(CASE WHEN h = 'p' THEN 1 ELSE 0 END) AS n FROM t GROUP BY g"):
        with mock.patch.object(sql, "_shown", wraps=sql._shown) as shown:
            assert case_aggregates.split_refused(case_aggregates.composite_tree(text)) is not None
        assert shown.call_count == 0
    with pytest.raises(UnsupportedQuery) as refused:
        sql.parse("SELECT SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) AS s FROM t")
    message = ("CASE WHEN h = 'p' THEN w ELSE 0 END in SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) (SUM / AVG of "
               "columns and numbers joined by +, -, * and / by a number) is not supported by the approximate engine")
    assert str(refused.value).startswith(message) and refused.value.args == (refused.value.construct,)
    again = pickle.loads(pickle.dumps(refused.value))
    assert str(again) == str(refused.value) and repr(again) == repr(refused.value)


@pytest.mark.parametrize("sql, named", [
    ("SELECT SUM(CASE WHEN SUM(a) > 1 THEN 1 WHEN b > 1 THEN CASE WHEN c THEN 1 END END) AS s FROM t",
     r"an aggregate in the CASE condition SUM\(a\) > 1"),
    ("SELECT SUM(CASE WHEN a > 1 THEN 1 WHEN SUM(b) > 1 THEN 2 ELSE CASE WHEN c THEN 1 END END) AS s FROM t",
     r"an aggregate in the CASE condition SUM\(b\) > 1"),
    ("SELECT SUM(CASE WHEN a > 1 THEN 1 WHEN b > 1 THEN MAX(y) ELSE CASE WHEN c THEN 1 END END) AS s FROM t",
     "a nested CASE in"),
    ("SELECT SUM(CASE WHEN (CASE WHEN b THEN 1 END) > 1 THEN 2 END) AS s FROM t", "a nested CASE in"),
    ("SELECT SUM(CASE WHEN a > 1 THEN SUM(x) ELSE 0 END) AS s FROM t", r"SUM\(x\) in SUM\(SUM\(x\)\)"),
])
def test_a_case_walked_once_for_nesting_is_refused_at_its_first_branch(sql, named):
    """A CASE is walked once for nested CASEs and aggregates; where it has one, the refusal names the first
    branch's (a CASE under WHEN or THEN, or an aggregate in its condition, before a CASE under ELSE); an
    aggregate under THEN is left to the reading of its leaf."""
    with pytest.raises(UnsupportedQuery, match=named):
        split(sql)


def test_a_split_looks_for_qualified_columns_on_the_walk_that_drops_token_positions():
    """split_refused walks the query's tree once to drop the parser's token positions (a copy of a node then
    costs a quarter) and to see whether a column is qualified, which the reading of the shared clauses
    (sql._joined) then does not walk the tree again for; a qualified column sends the query through the
    whole conversion, on a copy without the qualifiers, to the same sub-queries."""
    from unittest import mock

    from parzen.aqp import case_aggregates, sql

    plain = "SELECT g, SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS r FROM t WHERE x < 3 GROUP BY g"
    made = {}
    for text in (plain, plain.replace("WHERE x", "WHERE t.x")):
        tree = case_aggregates.composite_tree(text)
        with mock.patch.object(sql, "_joined", wraps=sql._joined) as joined:
            made[text] = case_aggregates.split_refused(tree)
        assert all(node._meta is None for node in tree.walk())
        assert [call.args[2:] for call in joined.call_args_list] == ([(False,)] if text == plain else [()] * 3)
    assert [[q for q, _ in composite.subqueries] for composite in made.values()] == \
        [[q for q, _ in made[plain].subqueries]] * 2


@pytest.mark.parametrize("term, read", [
    ("a > 1", "a > 1"), ("a = 'x' OR a = 'y'", "a IN ('x', 'y')"), ("a <> 'x'", "a <> 'x'"),
    ("'x' <> a", "'x' <> a"), ("a = 1 OR (a = 2 OR a = 3)", "a IN (1, 2, 3)"), ("a <> 3", None),
    ("NOT a = 'x'", None), ("YEAR(d) = 1994", None), ("a = 'x' OR b = 'y'", None), ("a <> 'x' OR a = 'y'", None),
])
def test_a_where_term_read_alone_after_one_walk(term, read):
    """sql._read_alone reads a term from one walk of it: kept as it is, made one IN from ORs of equalities
    on one column, or left (None) to the OR / NOT path: NOT, a date's part, ``<>`` other than ``column <>
    'text'`` as the whole term, or an OR left after the IN is made."""
    from sqlglot import exp

    from parzen.aqp import sql

    node = exp.maybe_parse(term, dialect="duckdb")
    terms = sql._read_alone([node], lambda n: sql._column(n, "WHERE") if sql._is_column(n) else None)
    assert (terms if terms is None else [t.sql(dialect="duckdb") for t in terms]) == (read if read is None else [read])
    if read == term:
        assert terms[0] is node  # read as it is, no copy


def test_resolving_text_tests_reads_the_synopsis_names_kept_on_it(engine):
    """resolve_query (every sub-query of a CASE / ratio query) reads the synopsis's casefolded names made once
    and kept on the synopsis; a synopsis whose columns are replaced gets them anew."""
    import copy

    from parzen.aqp.string_predicates import _folded_names

    synopsis = engine.synopsis("t")
    folded = _folded_names(synopsis)
    assert _folded_names(synopsis) is folded and folded["g"] == "g" and folded["x"] == "x" and "extra" not in folded
    replaced = copy.copy(synopsis)
    replaced.group_by = [*synopsis.group_by, "Extra"]
    assert _folded_names(replaced)["extra"] == "Extra" and "extra" not in _folded_names(synopsis)

def test_row_terms_filter_read_from_the_domain_selection_is_the_codes_test(engine):
    """_RowTerms' categorical filter: where the sub-query's domain selection tests the same codes (an IN
    list outside the synopsis's GROUP BY) it is read from the selection's rows; it holds exactly on the
    sampled rows whose value is listed, as the per-code test on the strata column gives it too."""
    from parzen.aqp import domains, ratios

    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    categories = synopsis.categories
    composite = split("SELECT SUM(CASE WHEN h IN ('p', 'r') THEN w ELSE 0 END) / SUM(w) AS s FROM t "
                      "WHERE x BETWEEN 8 AND 12")
    query = engine._resolved(composite.subqueries[1][0])
    assert list(query.members) == ["h"] and not query.group_by and domains.needed(query, synopsis)
    got = ratios._categorical_filter(query, synopsis, layout)
    values = np.asarray(categories.values["h"], dtype=object)[categories.codes["h"]]
    np.testing.assert_array_equal(got, np.isin(values, ["p", "r"]))
    assert got.dtype == bool
    on_strata = engine._resolved(split("SELECT SUM(CASE WHEN g = 'b' THEN w ELSE 0 END) / SUM(w) AS s FROM t")
                                 .subqueries[1][0])
    strata = np.array([key[0] for key in layout.keys], dtype=object)[layout.stratum_of_row]
    np.testing.assert_array_equal(ratios._categorical_filter(on_strata, synopsis, layout),
                                  strata == "b")


@pytest.mark.parametrize("group_by", ["", "g, "])
def test_round_off_widened_on_the_arrays_is_cover_rounding_of_the_frame(engine, group_by):
    """ratios.approximate with rounding_rows widens the intervals by the same floats as
    contract.cover_rounding widens its frame (what the engine did after it)."""
    from parzen.aqp import contract, ratios
    from parzen.aqp.subquery_passes import SubqueryPasses

    composite = split(f"SELECT {group_by}SUM(CASE WHEN h = 'p' THEN w ELSE 0 END) / SUM(w) AS s FROM t "
                      f"WHERE x BETWEEN 8 AND 12{' GROUP BY g' if group_by else ''}")
    subqueries = [engine._resolved(q) for q, _ in composite.subqueries]
    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    passes = SubqueryPasses(synopsis, layout, with_bias=False)
    plain, form = ratios.approximate(composite, subqueries, synopsis, layout, passes.answer, 1.96)
    assert form != "totals"
    widened, _ = ratios.approximate(composite, subqueries, synopsis, layout, passes.answer, 1.96,
                                    rounding_rows=10 ** 9)
    expected = contract.cover_rounding(plain.copy(), ["s"], 10 ** 9)
    pd.testing.assert_frame_equal(widened, expected, check_exact=True)
    assert (widened["s low"] < plain["s low"]).all() and (widened["s high"] > plain["s high"]).all()


def test_domain_polynomial_terms_within_shared_terms_are_those_made_alone(engine):
    """domains._polynomial_terms: a SUM's kept rows' terms read from the whole sample's (within
    shared_terms, a ratio's sub-query) are the floats made for the kept rows alone, and the domain
    answer is the same frame; AVG keeps its COUNT terms."""
    from parzen.aqp import _kept, domains
    from parzen.aqp.sql import parse

    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    query = engine._resolved(parse("SELECT SUM(w * (1 - x / 100)) AS s, AVG(w * y) AS a FROM t "
                                   "WHERE h IN ('p', 'q') AND x BETWEEN 8 AND 12"))
    assert domains.needed(query, synopsis)
    selected = domains.domain_selection(query, synopsis, layout)
    ranges = domains._smoothed_ranges(query, synopsis, selected)
    polynomials = [a for a in query.aggregates if a.polynomial]
    alone = domains._polynomial_terms(query, synopsis, layout, ranges, polynomials, selected.keep, selected.kept)
    with _kept.shared_terms():
        shared = domains._polynomial_terms(query, synopsis, layout, ranges, polynomials, selected.keep, selected.kept)
        shared_frame, _ = domains.approximate(query, synopsis, layout, 1.96)
    assert set(shared) == {"sum s", "sum a", "count a"} and set(alone) == {"sum s", "count s", "sum a", "count a"}
    for name, terms in shared.items():
        np.testing.assert_array_equal(terms, alone[name])
    assert np.count_nonzero(shared["sum s"]) > 100
    pd.testing.assert_frame_equal(shared_frame, domains.approximate(query, synopsis, layout, 1.96)[0], check_exact=True)


@pytest.mark.parametrize("listed", [("p",), ("p", "q", "r"), ("s", "q")])
def test_domain_selection_mask_is_its_rows(engine, listed):
    """A domain selection's mask (made on the way where the rows were marked or tested by masks) holds on
    exactly its admitted rows, the sampled rows whose value is listed."""
    from parzen.aqp import domains
    from parzen.aqp.sql import parse

    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    members = ", ".join(f"'{v}'" for v in listed)
    query = engine._resolved(parse(f"SELECT SUM(w * y) AS s FROM t WHERE h IN ({members}) AND x > 7.5"))
    selected = domains.domain_selection(query, synopsis, layout)
    categories = synopsis.categories
    want = np.isin(np.asarray(categories.values["h"], dtype=object)[categories.codes["h"]], list(listed))
    np.testing.assert_array_equal(selected.keep, want)
    np.testing.assert_array_equal(selected.kept, np.flatnonzero(want))


@pytest.mark.parametrize("sql", [
    ("SELECT SUM(CASE WHEN h IN ('p', 'r') THEN w * (1 - y / 100) ELSE 0 END) / SUM(w * (1 - y / 100)) AS s FROM t "
     "WHERE x BETWEEN 8 AND 12"),
    "SELECT 100.0 * SUM(CASE WHEN h = 'q' THEN w ELSE 0 END) / SUM(w) AS s, COUNT(*) AS n FROM t WHERE x < 9",
    "SELECT SUM(CASE WHEN x > 11 THEN w ELSE 0 END) / SUM(CASE WHEN x < 9 THEN v ELSE 0 END) AS s FROM t",
    "SELECT SUM(CASE WHEN h = 'q' THEN w ELSE 0 END) / SUM(w) AS s FROM t",
])
def test_ratio_variance_on_the_reached_rows_is_that_over_every_row(engine, sql):
    """_RowTerms.variance without GROUP BY sums z over the rows the kernels reach only (z is +0.0 elsewhere):
    the variance and degrees of freedom are the floats of the pass over every sampled row, with one set of
    kernel terms, with sub-queries whose kernels reach other rows (their union), and without ranges."""
    from parzen.aqp import _kept, ratios
    from parzen.aqp.subquery_passes import SubqueryPasses

    composite = split(sql)
    subqueries = [engine._resolved(q) for q, _ in composite.subqueries]
    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    np.testing.assert_array_equal(layout.drawn, np.bincount(layout.stratum_of_row, minlength=len(layout.keys)))
    captured = []
    with _kept.shared_terms():
        passes = SubqueryPasses(synopsis, layout, with_bias=False)
        frames = [passes.answer(q, synopsis, 1.96)[0] for q in subqueries]
        _, leaves, half, _, _ = ratios._leaf_table(composite, frames, True)
        rows = ratios._RowTerms(composite, subqueries, synopsis, layout, [()])
        assert rows.support is not None and np.all(np.diff(rows.support) > 0)
        exact = {k: h == 0.0 for k, h in half.items()}
        for output in composite.outputs:
            gradient = ratios._evaluate(output.expression, leaves)[1]
            on_support = rows.variance(gradient, exact)
            support, rows.support = rows.support, None
            everywhere = rows.variance(gradient, exact)
            rows.support = support
            captured.append(on_support[0])
            for a, b in zip(on_support, everywhere):
                np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))
    assert all(np.isfinite(v).all() and (v > 0).all() for v in captured)


def test_garwood_factors_are_made_only_for_domains_of_unknown_size(engine, monkeypatch):
    """A domain answer widens only the domains of unknown size by Garwood's factors: where every domain's
    rows are known (an IN list on a categorical column) none are computed (np.where of no widened domain keeps
    each end); a comparison of two columns (no exact domain size) computes them."""
    from parzen.aqp import domains
    from parzen.aqp.sql import parse

    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    known = engine._resolved(parse("SELECT SUM(w) AS s, COUNT(*) AS n FROM t WHERE h IN ('p', 'q') AND x > 8"))
    unknown = engine._resolved(parse("SELECT SUM(w) AS s FROM t WHERE h = 'p' AND x > y"))
    calls = []
    made = domains.garwood_factors
    monkeypatch.setattr(domains, "garwood_factors", lambda k, z: calls.append(k) or made(k, z))
    answer = domains.approximate(known, synopsis, layout, 1.96)[0]
    assert calls == [] and (answer["s low"] < answer["s"]).all()
    assert domains.domain_selection(known, synopsis, layout).known.all()
    domains.approximate(unknown, synopsis, layout, 1.96)
    assert len(calls) == 1


@pytest.mark.parametrize("where", ["h IN ('p', 'q') AND x > 8", "h = 's'", "h = 'p' AND x > y", "g = 'c' AND h = 'r'"])
def test_one_domain_spread_is_domain_spread(engine, where):
    """A domain answer of one domain sums each stratum over its run of the admitted rows (ascending): the
    variance and degrees of freedom are domain_spread's floats over each row's stratum and domain."""
    from parzen.aqp import domains
    from parzen.aqp.sql import parse

    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    query = engine._resolved(parse(f"SELECT SUM(w) AS s FROM t WHERE {where}"))
    selected = domains.domain_selection(query, synopsis, layout)
    assert selected.sizes == 1 and np.all(np.diff(selected.kept) > 0)
    values = np.random.default_rng(7).standard_t(3, selected.kept.size) * 1e3
    values[::5] = 0.0
    runs = domains.one_domain_spread(values, selected.kept, layout)
    spread = domains.domain_spread(values, selected.stratum, selected.group, layout, len(layout.keys), 1)
    for a, b in zip(runs, spread):
        np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("sql", [
    "SELECT SUM(CASE WHEN h = 'q' THEN w ELSE 0 END) / SUM(w) AS s FROM t WHERE x < 9",
    "SELECT SUM(CASE WHEN h = 'q' THEN w * y ELSE 0 END) / SUM(w * (1 - y)) AS s FROM t WHERE x < 9",
    "SELECT SUM(CASE WHEN x > 11 THEN w ELSE 0 END) / COUNT(*) AS s, AVG(v) AS a FROM t",
])
def test_sub_query_rows_hold_the_floats_of_their_frames(engine, sql):
    """Without GROUP BY, SubqueryPasses.answer gives a sub-query's answer as its answers.Row (no DataFrame made
    only to be read back): its frame is bit for bit the separate path's (answers / domains .approximate),
    attrs included, its columns read as that frame's, and its bias runs are those of the separate passes."""
    from parzen.aqp import answers, domains
    from parzen.aqp.subquery_passes import SubqueryPasses

    composite = split(sql)
    subqueries = [engine._resolved(q) for q, _ in composite.subqueries]
    synopsis, layout = engine.synopsis("t"), engine._layouts["t"]
    for with_bias in (True, False):
        passes = SubqueryPasses(synopsis, layout, with_bias=with_bias)
        for q in subqueries:
            path = domains if domains.needed(q, synopsis) else answers
            for z in (None, 1.96):
                row, form = passes.answer(q, synopsis, z)
                separate, separate_form = path.approximate(q, synopsis, layout, z)
                assert isinstance(row, answers.Row) and form == separate_form and len(row) == len(separate)
                pd.testing.assert_frame_equal(row.frame(), separate, check_exact=True)
                assert row.frame().attrs == separate.attrs
                for label in separate.columns:
                    np.testing.assert_array_equal(row.column(label), separate[label].to_numpy(dtype=np.float64))
            if with_bias:
                for shared, own in zip(passes.runs(q, passes.scaled), path.bias_runs(q, passes.scaled, layout)):
                    if isinstance(own, pd.DataFrame):
                        pd.testing.assert_frame_equal(shared, own, check_exact=True)
                        continue
                    assert shared.keys() == own.keys()
                    for name in own:
                        np.testing.assert_array_equal(shared[name], own[name])


@pytest.mark.parametrize("value, low, high", [(3.5, 1.25, 6.0), (np.nan, 1.0, 2.0), (2.0, -np.inf, 3.0),
                                              (np.inf, 1.0, np.inf), (-0.0, -0.0, 0.0), (1.0, np.nan, np.nan)])
def test_leaf_table_of_one_row_answers_is_the_numpy_expressions(value, low, high):
    """Without GROUP BY, _leaf_table reads each leaf from its sub-query's one row (no gathers): its value and
    half width are the floats of the general path's NumPy expressions, NaN and infinities included (a SUM over
    no row: 0; a NaN half width: infinite)."""
    from parzen.aqp import ratios
    from parzen.aqp.answers import Row

    composite = split("SELECT SUM(CASE WHEN h = 'q' THEN w ELSE 0 END) / SUM(w) AS s FROM t WHERE x < 9")
    frames = []
    for j, (_, indices) in enumerate(composite.subqueries):
        names = tuple(f"__parzen_leaf_{k}" for k in indices)
        row = [f for k in indices for f in ((value, low, high) if k == 0 else (2.0 * j + 1.0, 0.5, 4.0))]
        frames.append(Row(names, np.array([row], dtype=np.float64), True))
    with np.errstate(invalid="ignore"):  # inf - inf, as the general path's subtraction warns
        keys, values, half, bounded, placed = ratios._leaf_table(composite, frames, True)
    assert keys == [()] and not bounded.any() and all(p.tolist() == [0] for p in placed)
    for frame, (_, indices) in zip(frames, composite.subqueries):
        for k in indices:
            v, lo, hi = (frame.column(f"__parzen_leaf_{k}{end}") for end in ("", " low", " high"))
            want_value = np.nan_to_num(v)
            with np.errstate(invalid="ignore"):
                want_half = np.nan_to_num(np.fmax(v - lo, hi - v), nan=np.inf)
            assert values[k].tobytes() == want_value.tobytes() and values[k].shape == (1,)
            assert half[k].tobytes() == want_half.tobytes() and half[k].shape == (1,)
    _, values, half, _, _ = ratios._leaf_table(composite, frames, False)
    assert all(h.tobytes() == np.zeros(1).tobytes() for h in half.values())


def test_reached_rows_put_in_order_once_where_the_sub_queries_reach_the_same_rows():
    """_reached_rows compares the samples' rows as found: where they are equal only the first sample's are put in
    order (an O(sample) pass each); else the union of every sample's rows, ascending."""
    from types import SimpleNamespace

    from parzen.aqp import ratios

    class Sample:
        def __init__(self, rows):
            self.rows, self.layout, self.ordered = np.asarray(rows), SimpleNamespace(view=np.zeros(10)), 0

        @property
        def ascending_rows(self):
            self.ordered += 1
            return np.sort(self.rows)

    same = [Sample([7, 2, 5]), Sample([7, 2, 5])]
    assert ratios._reached_rows(same).tolist() == [2, 5, 7] and [s.ordered for s in same] == [1, 0]
    other = [Sample([7, 2, 5]), Sample([2, 9])]
    assert ratios._reached_rows(other).tolist() == [2, 5, 7, 9]


def test_a_leafs_factor_is_the_numpy_expression():
    """ratios._factor (one answer row's factor in Python) is float(np.where(exact | ~np.isfinite(slope), 0.0,
    slope)[0]) bit for bit: NaN, infinite, signed zero, huge, tiny and exact slopes."""
    from parzen.aqp.ratios import _factor

    for slope in (1.5, -2.0, 0.0, -0.0, np.nan, np.inf, -np.inf, 1e308, -5e-324, 100.0 / 3.0):
        for exact in (False, True):
            s, e = np.array([slope]), np.array([exact])
            want = float(np.where(e | ~np.isfinite(s), 0.0, s)[0])
            got = _factor(s, e)
            assert type(got) is float and np.array([got]).tobytes() == np.array([want]).tobytes(), (slope, exact)


def test_an_interval_about_the_value_itself_is_fmin_and_fmax_of_the_value():
    """ratios.approximate's ends without GROUP BY are value -+ half, which are np.fmin(value, value) -+ half
    bit for bit (fmin / fmax of a value and itself: the value), NaN, infinities and signed zeros included."""
    value = np.array([1.5, -0.0, 0.0, np.nan, np.inf, -np.inf, 1e308, -5e-324])
    half = np.array([0.25, 0.0, -0.0, 1.0, np.inf, np.nan, 1e308, 0.0])
    with np.errstate(invalid="ignore", over="ignore"):
        assert (value - half).tobytes() == (np.fmin(value, value) - half).tobytes()
        assert (value + half).tobytes() == (np.fmax(value, value) + half).tobytes()


@pytest.mark.parametrize("text", [
    "p IN ('a', 'b', 'c')", "g = 'k' OR g = 'm'", "NOT (a > 1 AND b <= 2)", "a BETWEEN 1 AND 2", "s LIKE 'PROMO%'",
    "s NOT LIKE 'x%'", "s ILIKE '%y'", "a <> -3.5", "g NOT IN ('a')", "a IS NULL", "SUM(x * (1 - d))",
    "COUNT(*)", "COUNT(v)", "SUM(x / y)", "SUM(CAST(a AS DOUBLE))", "a IN (SELECT b FROM u)", "d >= DATE '1994-01-01'",
    "upper(s) = 'A'", "SUM(x) / SUM(y)", "a + b * c - d", "TRUE AND NULL IS NULL",
])
def test_generated_text_is_sqlglots_and_leaves_the_tree_unchanged(text):
    """The texts of CASE conditions and leaves (:func:`parzen.aqp.sql.generated`): as sqlglot generates them,
    with the copy skipped for trees of read-only nodes, and the query's tree unchanged either way."""
    from sqlglot import exp, parse_one

    from parzen.aqp.sql import generated

    tree = parse_one(f"SELECT {text} FROM t", read="duckdb")
    before = tree.copy()
    node = tree.expressions[0]
    assert generated(node) == node.sql(dialect="duckdb")
    assert tree == before and tree.sql(dialect="duckdb") == before.sql(dialect="duckdb")
    assert node.parent is tree  # still in its tree
    unowned = exp.Sum()  # a leaf's aggregate: a node over the tree's nodes that does not adopt them
    unowned.args["this"] = node
    assert generated(unowned) == f"SUM({node.sql(dialect='duckdb')})" and node.parent is tree and tree == before
