"""Approximate query processing: SQL subset, box integrals, engine vs DuckDB's exact answers."""

from __future__ import annotations

import math
import re
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from parzen.aqp import CorruptSynopsis, Engine, StaleSynopsisWarning, UnsupportedQuery
from parzen.aqp.estimate import CONTINUOUS, DISCRETE, INTEGER, ColumnModel
from parzen.aqp.sql import Range, parse, read_only_sql, to_sql

N = 20_000


def _locked_down():
    """An in-memory database that cannot read files: what ``exact=True`` on a given connection needs."""
    return duckdb.connect(":memory:", config={"enable_external_access": False})


def _table(con, n=N, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "x": rng.normal(10.0, 3.0, n),  # continuous, any sign
        "w": rng.gamma(2.0, 2.0, n),  # continuous, non-negative: reflected at 0
        "k": rng.poisson(400.0, n),  # integer with many values: KDE + continuity correction
        "m": rng.integers(1, 13, n),  # integer with 12 values: discrete
        "g": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
        "y": rng.normal(0.0, 1.0, n),
    })
    frame["y"] = frame["y"] + 0.5 * frame["x"]  # correlated with x
    frame.loc[rng.random(n) < 0.05, "y"] = np.nan  # NULLs
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT x, w, CAST(k AS INTEGER) AS k, CAST(m AS INTEGER) AS m, g, y FROM frame")
    con.unregister("frame")


@pytest.fixture(scope="module")
def engine():
    con = _locked_down()
    _table(con)
    e = Engine(con)
    e.build("t", group_by=["g"], sample=N // 2, seed=1)
    return e


# --- SQL subset -------------------------------------------------------------------------------


def test_parse_shapes_and_names():
    q = parse("SELECT g, COUNT(*), SUM(x) AS total, AVG(y) FROM t WHERE x BETWEEN 1 AND 2 AND 5 > k "
              "AND k >= -3 AND g IN ('a', 'b') AND m = 4 GROUP BY g")
    assert q.table == "t" and q.group_by == ("g",)
    assert [a if isinstance(a, str) else a.name for a in q.select] == ["g", "count_star()", "total", "avg(y)"]
    assert q.ranges["x"] == Range("x", 1.0, 2.0)
    assert q.ranges["k"] == Range("k", -3.0, 5.0, True, False)
    assert q.ranges["m"] == Range("m", 4.0, 4.0)
    assert q.members["g"] == frozenset({"a", "b"})


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) FROM t WHERE x BETWEEN -1.5 AND 2e3",
        "SELECT SUM(x2) FROM t WHERE x2 > .5 AND 7 >= x2 AND g = '12'",
        'SELECT AVG("col 1") AS "a 2" FROM t WHERE "col 1" < 3 AND g IN (\'4\', \'5\') -- 6',
        "SELECT COUNT(*) FROM t WHERE g = $$8$$ AND x >= 9",
        "SELECT COUNT(*) FROM t WHERE x > :given",
        'SELECT "g", COUNT("x") AS "n", AVG("y") FROM "t" WHERE "x" BETWEEN 1 AND 2 AND 3 < "k" GROUP BY "g"',
        'SELECT "g" AS "g", SUM("a""b") FROM "t" WHERE "a""b" >= 2 AND "g" IN (\'x\', \'y\') GROUP BY "g"',
        'SELECT COUNT(*) FROM "t" WHERE "x" IN ("a", 1)',
        'SELECT COUNT(*) FROM "t" WHERE "x" > "y"',
        'SELECT COUNT(*) FROM "t" WHERE "x" > 1 ORDER BY "x"',
        'SELECT "t"."x", COUNT(*) FROM "t" GROUP BY "t"."x"',
        'SELECT AVG("x") FROM "t" WHERE "g" = \'"k"\' AND "x" > 0',
    ],
)
def test_number_templates_parse_like_the_text(sql):
    """Queries that differ in their numbers and quoted column names share a cached template
    parse: same result (or error) as the text parsed as it is (comments, quoted digits, quoted
    names in text, aliases, qualified names and the user's own placeholders included)."""
    from parzen.aqp.sql import _query, _tree

    try:
        expected = _query(_tree(sql), [])
    except UnsupportedQuery as err:
        with pytest.raises(UnsupportedQuery, match=re.escape(str(err))):
            parse(sql)
        return
    assert parse(sql) == expected


def test_queries_differing_in_quoted_names_share_a_template():
    from parzen.aqp.sql import _template_tree

    before = _template_tree.cache_info()
    first = parse('SELECT AVG("col_a") AS v FROM "tab" WHERE "col_b" BETWEEN 1 AND 2')
    second = parse('SELECT AVG("col_c") AS v FROM "tab" WHERE "col_d" BETWEEN 3 AND 4')
    after = _template_tree.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)
    assert second.aggregates[0].column == "col_c" and second.ranges == {"col_d": Range("col_d", 3.0, 4.0)}
    assert first.aggregates[0].column == "col_a" and set(first.ranges) == {"col_b"}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT g, COUNT(*) FROM t WHERE g = 'a' GROUP BY g",
        "SELECT SUM(x) FROM t WHERE g IN ('a', 'b', 'c') AND h <> 'z'",
        "SELECT SUM(x) FROM t WHERE g LIKE 'a%' AND d >= DATE '1994-01-01' AND d < DATE '1995-01-01'",
        "SELECT SUM(x) FROM t WHERE d BETWEEN DATE '1994-01-01' AND DATE '1994-12-31' AND x > 2.5",
        "SELECT COUNT(*) FROM t WHERE g = 'a' OR (h = 'b' AND x < 3)",
        "SELECT COUNT(*) FROM t WHERE g NOT IN ('a', 'b') AND g > 'a'",
        "SELECT COUNT(*) FROM t, u WHERE tk = uk AND u.g = 'a' AND t.x < 4",
        "SELECT COUNT(*) FROM t WHERE strftime(d, '%Y') = '1994'",  # a function's text: no template
        "SELECT COUNT(*) FROM t WHERE g = 'it''s'",  # a quote inside a text: no template
        "SELECT COUNT(*) FROM t WHERE d > DATE '1994-01-01' + INTERVAL '1' DAY",
        "SELECT SUM('a') FROM t WHERE g = 'b'",
        "SELECT MODE(x) FROM t WHERE g = 'a'",
    ],
)
def test_text_templates_parse_like_the_text(sql):
    """A query's quoted texts are holes of its template, filled into a copy of the template's tree: the same
    query (or error) as the text parsed as it is, the template's tree parsed anew or shared."""
    from parzen.aqp.sql import _query, _template_tree, _tree

    try:
        expected = _query(_tree(sql), [])
    except UnsupportedQuery as err:
        for _ in range(2):
            parse.cache_clear()
            with pytest.raises(UnsupportedQuery, match=re.escape(str(err))):
                parse(sql)
        return
    _template_tree.cache_clear()
    for _ in range(2):  # the template parsed, then shared
        parse.cache_clear()
        assert parse(sql) == expected


def test_queries_differing_in_quoted_texts_share_a_parse():
    """Three texts of one template (TPC-H Q5 asked for three regions): the template is parsed once; the first
    text gets its tree itself, the others a copy; each reads its own texts."""
    from unittest import mock

    from parzen.aqp import sql, text_templates

    text = ("SELECT n_name, SUM(x) FROM lineitem JOIN nation ON l_nationkey = n_nationkey WHERE r_name = '{}' "
            "AND o_orderdate >= DATE '{}' GROUP BY n_name")
    filled, itself = text_templates.Template.filled, []

    def spy(template, texts):
        tree = filled(template, texts)
        itself.append(tree is template.tree)
        return tree

    sql._template_tree.cache_clear()
    with mock.patch.object(sql._DUCKDB, "parse", wraps=sql._DUCKDB.parse) as parses, \
            mock.patch.object(text_templates.Template, "filled", spy):
        found = [parse(text.format(region, day)) for region, day in
                 (("ASIA", "1994-01-01"), ("AFRICA", "1995-01-01"), ("EUROPE", "1996-01-01"))]
    assert parses.call_count == 1 and itself == [True, False, False]
    template = sql._template_tree.cache_info()
    assert (template.misses, template.hits) == (1, 2)
    assert [set(q.members["r_name"]) for q in found] == [{"ASIA"}, {"AFRICA"}, {"EUROPE"}]
    assert [q.ranges["o_orderdate"].low for q in found] == [parse(f"SELECT SUM(x) FROM t WHERE o_orderdate >= DATE '{d}'")
                                                            .ranges["o_orderdate"].low for d in
                                                            ("1994-01-01", "1995-01-01", "1996-01-01")]


def test_a_templates_tree_itself_goes_to_one_caller_however_many_ask_at_once():
    """Threads filling one template at once: exactly one gets the parsed tree itself, and every tree holds its
    caller's texts."""
    import threading

    from parzen.aqp import sql, text_templates

    cut = text_templates.cut("SELECT COUNT(*) FROM t WHERE g = 'a' AND h IN ('b', 'c')")
    assert cut is not None
    tree = sql._DUCKDB.parse(cut[0])[0]
    _, _, holes = text_templates.read(tree, 3)
    assert holes is not None
    template = text_templates.Template(tree, holes)
    start, out = threading.Barrier(8), {}

    def fill(k):
        start.wait()
        out[k] = template.filled([f"g{k}", f"h{k}", f"i{k}"])

    threads = [threading.Thread(target=fill, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(t is tree for t in out.values()) == 1
    for k, filled in out.items():
        assert sorted(node.this for node in filled.find_all(sql.exp.Literal) if node.is_string) == [f"g{k}", f"h{k}", f"i{k}"]


def test_ranges_on_one_column_intersect():
    q = parse("SELECT COUNT(*) FROM t WHERE x > 1 AND x >= 1 AND x < 5 AND x <= 4")
    assert q.ranges["x"] == Range("x", 1.0, 4.0, False, True)


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("SELECT x FROM t", "the column x in SELECT without GROUP BY"),
        ("SELECT COUNT(*) FROM t WHERE x > 1 OR NOT g IN (1, 2)", "NOT / <> on"),  # NOT IN strings: string_predicates
        ("SELECT COUNT(*) FROM t LEFT JOIN u ON t.a = u.a", "LEFT JOIN"),
        ("SELECT MODE(x) FROM t", "MODE(x) in SELECT"),
        ("SELECT COUNT(*) FROM t WHERE x > y + 1", "compare columns with number literals"),  # x > y: row_predicates
        ("SELECT COUNT(*) FROM t WHERE abs(x) < 1", "ABS"),
        ("SELECT AVG(DISTINCT x) FROM t", "AVG(DISTINCT ...)"),
        ("SELECT COUNT(*) FROM t ORDER BY 1", "ORDER BY"),
        ("SELECT COUNT(*) FROM t LIMIT 1", "LIMIT"),
        ("SELECT COUNT(*) FROM t GROUP BY g HAVING COUNT(*) > 1", "HAVING"),
        ("SELECT COUNT(*) FROM (SELECT * FROM t)", "subquery"),
        ("WITH t AS (SELECT 1 AS x) SELECT COUNT(*) FROM t WHERE x > 0", "WITH"),
        ("DELETE FROM t", "not a SELECT"),
        ("SELECT COUNT(*) FROM t; DROP TABLE t", "2 statements"),
        ("SELECT SUM(*) FROM t", "SUM(*)"),
    ],
)
def test_unsupported_sql_names_the_construct(sql, construct):
    with pytest.raises(UnsupportedQuery, match="exact=True") as info:
        parse(sql)
    assert construct in str(info.value)


def test_to_sql_runs_in_duckdb_and_equals_the_query():
    con = duckdb.connect(":memory:")
    _table(con, n=500)
    sql = "SELECT g, COUNT(*) AS n, AVG(y) FROM t WHERE x BETWEEN 8 AND 12 AND k < 410 AND g IN ('a', 'c') GROUP BY g"
    ours = con.execute(to_sql(parse(sql))).df().sort_values("g").reset_index(drop=True)
    theirs = con.execute(sql).df().sort_values("g").reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "reads tables only"),
        ("DROP TABLE t", "one SELECT"),
        ("SELECT 1; SELECT 2", "one SELECT"),
        ("ATTACH 'other.db'", "one SELECT"),
        ("WITH a AS (DELETE FROM t RETURNING *) SELECT * FROM a", "DELETE is not allowed"),
    ],
)
def test_exact_path_runs_read_only_selects_only(sql, message):
    with pytest.raises(ValueError, match=message):
        read_only_sql(sql)


def test_exact_path_refuses_names_that_are_not_tables(engine):
    with pytest.raises(ValueError, match="no table 'x.csv'"):
        engine.query('SELECT * FROM "x.csv"', exact=True)


# --- box integrals ----------------------------------------------------------------------------


def test_integer_continuity_correction():
    model = ColumnModel("k", INTEGER, 1.0, None, integer=True)
    assert model.interval(Range("k", 3, 5)) == (2.5, 5.5)
    assert model.interval(Range("k", 3, 5, False, False)) == (3.5, 4.5)
    assert model.interval(Range("k", 2.5, 5.2)) == (2.5, 5.5)
    assert model.interval(Range("k", None, 9, True, False)) == (-math.inf, 8.5)


@pytest.mark.parametrize("lower", [None, 0.0])
@pytest.mark.parametrize(("a", "b"), [(-1.0, 2.0), (0.5, 0.7), (1.0, math.inf), (-math.inf, 0.3), (0.2, 20.0)])
def test_mass_and_moment_match_numerical_integration(lower, a, b):
    h = 0.4
    model = ColumnModel("w", CONTINUOUS, h, lower)
    x = np.array([0.05, 0.3, 1.2, 3.0, 5.0, 9.0])  # near the ends, far inside and far outside
    mass, moment = model.mass_and_moment(x, *model.interval(Range("w", None if a == -math.inf else a,
                                                                   None if b == math.inf else b)))
    for xi, m, mo in zip(x, mass, moment):
        def density(t, xi=xi):
            value = stats.norm.pdf(t, xi, h)
            return value + stats.norm.pdf(t, 2 * lower - xi, h) if lower is not None else value
        lo = a if lower is None else max(a, lower)
        assert m == pytest.approx(integrate.quad(density, lo, b)[0], abs=1e-9)
        assert mo == pytest.approx(integrate.quad(lambda t: t * density(t), lo, b)[0], abs=1e-8)


def test_phi_table_matches_erfc():
    """The kernel integrals' Phi (a cubic Hermite table, for speed) is erfc's to 1e-12 everywhere."""
    from parzen.aqp._box import phi_table

    z = np.r_[np.linspace(-10.0, 10.0, 100_003), -8.5, 8.5, -np.inf, np.inf]
    exact = stats.norm.cdf(z)
    assert max(abs(phi_table(v) - e) for v, e in zip(z, exact)) < 1e-12
    assert math.isnan(phi_table(math.nan))


@pytest.mark.parametrize("scaled", [False, True])
def test_box_sums_match_the_rows_masses(scaled):
    """The compiled pass over the rows that every range reaches (an AND of candidate sets, which
    may be any supersets) equals per-row sums of :func:`row_box` over all rows: a point-mass,
    a repeating integer (cached integrals) and a reflected continuous column, NULLs, strata with
    widened kernels, one stratum filtered out, constrained and unconstrained aggregates."""
    from parzen.aqp._box import BoxQuery, box_sums, row_box

    rng = np.random.default_rng(5)
    n = 3000
    data = np.stack([
        rng.integers(0, 6, n).astype(float),  # point masses (h = 0)
        rng.integers(0, 40, n).astype(float),  # integers, each value ~75 times
        rng.exponential(3.0, n),  # continuous, reflected at 0
        rng.normal(10.0, 2.0, n),  # aggregated only
    ])
    data[1, rng.random(n) < 0.05] = np.nan
    data[3, rng.random(n) < 0.05] = np.nan
    columns = np.array([0, 1, 2])
    lows, highs = np.array([1.0, 9.5, 0.7]), np.array([4.0, 30.5, 5.0])
    bandwidths, lowers = np.array([0.0, 1.3, 0.4]), np.array([0.0, 0.0, 0.0])
    reflects = np.array([False, False, True])
    stratum_of_row = rng.integers(0, 3, n).astype(np.intp)
    output_of_stratum = np.array([0, -1, 1], dtype=np.intp)
    weight_of_stratum = np.array([2.0, 3.0, 5.0])
    row_scale = np.array([1.0, 1.2, 1.5])[stratum_of_row] if scaled else np.zeros(0)
    aggregated, constrained = np.array([3, 2], dtype=np.intp), np.array([-1, 2], dtype=np.intp)
    moments, repeats = np.array([False, False, True]), np.array([False, True, False])
    candidates = []
    for j in range(3):  # rows the kernels reach, plus random others
        x, reach = data[columns[j]], 6.0 * bandwidths[j] * (1.5 if scaled else 1.0)
        near = (x >= lows[j] - reach) & (x <= highs[j] + reach) | (rng.random(n) < 0.1)
        candidates.append(rng.permutation(np.flatnonzero(near)))
    rows = np.concatenate(candidates)
    starts = np.cumsum([0] + [c.size for c in candidates])
    out = box_sums(BoxQuery(rows=rows, starts=starts, data=data, columns=columns, lows=lows, highs=highs,
                            bandwidths=bandwidths, lowers=lowers, reflects=reflects, row_scale=row_scale,
                            stratum_of_row=stratum_of_row, output_of_stratum=output_of_stratum,
                            weight_of_stratum=weight_of_stratum, groups=2, aggregated=aggregated,
                            constrained=constrained, reach=6.0, moments=moments, repeats=repeats))
    expected = np.zeros((2, 5))
    for i in range(n):
        g = output_of_stratum[stratum_of_row[i]]
        if g < 0:
            continue
        s = row_scale[i] if scaled else 1.0
        masses = [row_box(data[c, i], lows[j], highs[j], bandwidths[j] * s, lowers[j], reflects[j], 6.0, True)
                  for j, c in enumerate(columns)]
        p = math.prod(m for m, _ in masses)
        w = weight_of_stratum[stratum_of_row[i]]
        expected[g, 0] += w * p
        if not math.isnan(data[3, i]):
            expected[g, 1:3] += w * p, w * p * data[3, i]
        expected[g, 3:5] += w * p, w * masses[2][1] * masses[0][0] * masses[1][0]
    assert expected[:, 0].min() > 100  # the boxes hold rows of both answer groups
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("scaled", [False, True])
def test_box_sums_of_several_bandwidths_in_one_pass_equal_each_pass(scaled):
    """k rows of bandwidths (h, sqrt 2 h, 0: the bias term's) over the rows the widest kernels
    reach give each row's sums of its own pass over its own candidates, bit for bit (a repeating
    integer column with cached integrals, a reflected one, NULLs, widened strata)."""
    from dataclasses import replace

    from parzen.aqp._box import BoxQuery, box_sums

    rng = np.random.default_rng(7)
    n = 4000
    data = np.stack([rng.integers(0, 40, n).astype(float), rng.exponential(3.0, n), rng.normal(10.0, 2.0, n)])
    data[0, rng.random(n) < 0.05] = np.nan
    lows, highs, bandwidths = np.array([9.5, 0.7]), np.array([30.5, 5.0]), np.array([1.3, 0.4])
    stratum_of_row = rng.integers(0, 3, n).astype(np.intp)
    row_scale = np.array([1.0, 1.2, 1.5])[stratum_of_row] if scaled else np.zeros(0)
    factors = [1.0, math.sqrt(2.0), 0.0]

    def query(factor):
        candidates = []
        for j in range(2):
            reach = 6.0 * bandwidths[j] * factor * (1.5 if scaled else 1.0)
            x = data[j]
            candidates.append(np.flatnonzero((x >= lows[j] - reach) & (x <= highs[j] + reach)))
        return BoxQuery(rows=np.concatenate(candidates), starts=np.cumsum([0] + [c.size for c in candidates]),
                        data=data, columns=np.array([0, 1]), lows=lows, highs=highs, bandwidths=bandwidths * factor,
                        lowers=np.zeros(2), reflects=np.array([False, True]), row_scale=row_scale,
                        stratum_of_row=stratum_of_row, output_of_stratum=np.array([0, -1, 1], dtype=np.intp),
                        weight_of_stratum=np.array([2.0, 3.0, 5.0]), groups=2,
                        aggregated=np.array([2, 1], dtype=np.intp), constrained=np.array([-1, 1], dtype=np.intp),
                        reach=6.0, moments=np.array([False, True]), repeats=np.array([True, False]))

    apart = [box_sums(query(f)) for f in factors]
    together = box_sums(replace(query(max(factors)), bandwidths=np.array([bandwidths * f for f in factors])))
    assert together.shape == (3, 2, 5) and apart[0][:, 0].min() > 100
    assert not np.array_equal(apart[0], apart[1])
    for f in range(3):
        np.testing.assert_array_equal(together[f], apart[f])


def test_discrete_fractions_honour_strict_bounds():
    """Point masses at 0.04, 0.05, 0.06 (a discount column): < and <= differ, no continuity correction."""
    model = ColumnModel("d", DISCRETE, 0.0, None, integer=False)
    x = np.array([0.04, 0.05, 0.06])
    assert model.mass_and_moment(x, *model.interval(Range("d", 0.04, 0.06)))[0].tolist() == [1, 1, 1]
    assert model.mass_and_moment(x, *model.interval(Range("d", 0.04, 0.06, False, False)))[0].tolist() == [0, 1, 0]


def test_discrete_columns_use_indicators():
    model = ColumnModel("m", DISCRETE, 0.0, None, integer=True)
    mass, moment = model.mass_and_moment(np.array([2.0, 3.0, 4.0, np.nan]), *model.interval(Range("m", 3, 4)))
    np.testing.assert_array_equal(mass, [0, 1, 1, 0])
    np.testing.assert_array_equal(moment, [0, 3, 4, 0])


# --- engine vs exact --------------------------------------------------------------------------


def test_column_kinds(engine):
    models = engine.synopsis("t").models
    assert (models["x"].kind, models["x"].lower) == (CONTINUOUS, None)
    assert (models["w"].kind, models["w"].lower) == (CONTINUOUS, 0.0)
    assert models["k"].kind == INTEGER and models["k"].bandwidth > 0
    assert models["m"].kind == DISCRETE and models["m"].bandwidth == 0


QUERIES = [
    "SELECT COUNT(*) FROM t WHERE x BETWEEN 8 AND 12",
    "SELECT COUNT(*), SUM(x), AVG(x) FROM t WHERE x > 11",
    "SELECT AVG(y), COUNT(y), SUM(y) FROM t WHERE x BETWEEN 5 AND 9",
    "SELECT COUNT(*), SUM(w) FROM t WHERE w < 3",
    "SELECT COUNT(*), AVG(x) FROM t WHERE k BETWEEN 390 AND 420",
    "SELECT COUNT(*) FROM t WHERE k < 400 AND x >= 9",
    "SELECT SUM(y) FROM t WHERE m BETWEEN 3 AND 6 AND w > 2",
    "SELECT COUNT(*), AVG(k) FROM t WHERE m = 7",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_close_to_exact(engine, sql):
    frame = engine.compare(sql)
    errors = frame[[c for c in frame.columns if c.endswith("rel. error")]].to_numpy()
    assert np.all(errors < 0.03), frame.T


def test_answer_shape_matches_duckdb(engine):
    sql = "SELECT g, COUNT(*) AS n, AVG(y) FROM t WHERE x > 9 GROUP BY g"
    approx = engine.query(sql)
    exact = engine.query(sql, exact=True).sort_values("g").reset_index(drop=True)
    assert list(approx.columns) == list(exact.columns) == ["g", "n", "avg(y)"]
    assert list(approx["g"]) == list(exact["g"])
    np.testing.assert_allclose(approx["n"], exact["n"], rtol=0.05)
    np.testing.assert_allclose(approx["avg(y)"], exact["avg(y)"], rtol=0.05)


def test_in_filters_and_group_marginals(engine):
    frame = engine.compare("SELECT COUNT(*), AVG(x) FROM t WHERE g IN ('b', 'c') AND w BETWEEN 1 AND 6")
    assert frame.filter(like="rel. error").to_numpy().max() < 0.03


def test_no_predicate_is_exact(engine):
    frame = engine.compare("SELECT COUNT(*), COUNT(y), SUM(y), AVG(w) FROM t")
    assert frame.filter(like="rel. error").to_numpy().max() < 1e-12
    grouped = engine.compare("SELECT g, COUNT(*), AVG(y) FROM t GROUP BY g")
    assert grouped.filter(like="rel. error").to_numpy().max() < 1e-12


def test_no_mass_below_zero_for_nonnegative_columns(engine):
    below = engine.query("SELECT COUNT(*) FROM t WHERE w < 0").iloc[0, 0]
    all_rows = engine.query("SELECT COUNT(*) FROM t WHERE w >= 0").iloc[0, 0]
    assert below == 0.0
    assert all_rows == pytest.approx(N, rel=1e-9)


def test_intervals_cover_the_exact_answers():
    """95 % intervals from 20 independent samples (seeds): most must contain the exact value.

    Independent samples, not many queries on one sample: one sample's error is shared by all
    its queries.  The sample is a tenth of the table, so smoothing bias is small beside it.
    """
    con = _locked_down()
    _table(con)
    sql = "SELECT COUNT(*), AVG(y) FROM t WHERE x BETWEEN 9 AND 12.5"
    exact = Engine(con).query(sql, exact=True)
    covered = total = 0
    for seed in range(20):
        engine = Engine(con)
        engine.build("t", columns=["x", "y"], sample=N // 10, seed=seed)
        approx = engine.query(sql, with_error=True)
        for name in ("count_star()", "avg(y)"):
            assert approx[f"{name} low"][0] < approx[name][0] < approx[f"{name} high"][0]
            covered += approx[f"{name} low"][0] <= exact[name][0] <= approx[f"{name} high"][0]
            total += 1
    assert covered / total >= 0.8


def test_group_by_any_categorical_column_but_not_a_continuous_one(engine):
    # m (12 integer values) is categorical though not in group_by: answered, every group (issue 19, item 1)
    approx, exact = engine.query("SELECT m, COUNT(*) FROM t GROUP BY m"), engine.query("SELECT m, COUNT(*) FROM t GROUP BY m", exact=True)
    assert list(approx["m"]) == sorted(exact["m"])
    assert np.array_equal(approx["count_star()"].to_numpy(), exact.sort_values("m")["count_star()"].to_numpy())
    with pytest.raises(UnsupportedQuery, match=r"group_by=\['x'"):
        engine.query("SELECT x, COUNT(*) FROM t GROUP BY x")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT COUNT(*) FROM nope", "no synopsis of table 'nope'"),
        ("SELECT AVG(z) FROM t", "models no numeric column 'z'"),
        ("SELECT COUNT(*) FROM t WHERE z > 1", "has no column 'z'"),
    ],
)
def test_query_errors(engine, sql, message):
    with pytest.raises(ValueError, match=message):
        engine.query(sql)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": "nope"}, "no table 'nope'"),
        ({"table": "t", "columns": ["z"]}, "has no column 'z'"),
        ({"table": "t", "columns": ["g"]}, "not numeric"),
        ({"table": "t", "bandwidth": "magic"}, "unknown bandwidth 'magic'"),
        ({"table": "t", "sample": 3}, "sample must be an integer >= 10"),
        ({"table": "t", "grid": 5}, "grid must be 0"),
    ],
)
def test_build_errors(kwargs, message):
    con = duckdb.connect(":memory:")
    _table(con, n=300)
    with pytest.raises(ValueError, match=message):
        Engine(con).build(**kwargs)


# --- persistence ------------------------------------------------------------------------------


def test_persisted_reloaded_stale_refreshed_and_corrupt(tmp_path):
    path = tmp_path / "db.duckdb"
    con = duckdb.connect(str(path))
    _table(con, n=2000)
    Engine(con).build("t", sample=500)
    sql = "SELECT COUNT(*) FROM t WHERE x > 10"
    first = Engine(con).query(sql).iloc[0, 0]  # a new engine reloads the stored synopsis
    listing = Engine(con).list()
    assert listing.loc[0, "table"] == "t" and not listing.loc[0, "stale"]
    assert listing.loc[0, "bytes"] > 500 * 6 * 8 // 2
    con.execute("INSERT INTO t SELECT * FROM t LIMIT 10")
    with pytest.warns(StaleSynopsisWarning, match=r"engine.refresh\('t'\)"):
        assert Engine(con).query(sql).iloc[0, 0] == first
    assert Engine(con).list().loc[0, "stale"]
    fresh = Engine(con)
    fresh.refresh("t")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleSynopsisWarning)
        Engine(con).query(sql)
    con.execute("UPDATE parzen_synopses SET payload = 'garbage'::BLOB")
    with pytest.raises(CorruptSynopsis, match="corrupt"):
        Engine(con).query(sql)


def test_filters_matching_no_group(engine):
    frame = engine.query("SELECT COUNT(*), AVG(x) FROM t WHERE g = 'zzz' AND x > 1")
    assert frame["count_star()"].tolist() == [0.0] and np.isnan(frame["avg(x)"][0])


def test_sparse_keys_are_smoothed_and_lumpy_codes_are_not():
    """Keys with gaps (every 4th value) but more values than the sample can repeat stay a KDE;
    a few hundred widely spaced codes, each sampled many times, become point masses."""
    rng = np.random.default_rng(3)
    con = duckdb.connect(":memory:")
    frame = pd.DataFrame({"key": 4 * rng.integers(0, 1_000_000, 5000), "code": 10 * rng.integers(0, 200, 5000)})
    con.register("frame", frame)
    con.execute("CREATE TABLE k AS SELECT CAST(key AS BIGINT) AS key, CAST(code AS INTEGER) AS code FROM frame")
    models = Engine(con).build("k").models
    assert models["key"].kind == INTEGER
    assert models["code"].kind == DISCRETE


# --- the gridded form -------------------------------------------------------------------------

GRID_QUERIES = [
    "SELECT COUNT(*), SUM(x), AVG(x) FROM t WHERE x BETWEEN 8 AND 12",
    "SELECT COUNT(x), AVG(x) FROM t WHERE x > 11.3",
    "SELECT COUNT(*), SUM(w) FROM t WHERE w < 3",  # reflected at 0
    "SELECT SUM(w) FROM t WHERE w >= 0",
    "SELECT COUNT(*), AVG(k) FROM t WHERE k BETWEEN 390 AND 420",  # continuity correction
    "SELECT COUNT(*), SUM(k) FROM t WHERE k > 399.5 AND k < 410",
    "SELECT COUNT(*), AVG(m) FROM t WHERE m = 7",  # point masses
    "SELECT COUNT(*), SUM(m) FROM t WHERE m > 3 AND m <= 9",
    "SELECT COUNT(*) FROM t WHERE x < -100",
]


@pytest.fixture(scope="module")
def sample_only(engine):
    """The same synopsis (same data, seed and sample) without grids nor exact tables (``k``, an integer of
    about 130 values, would be a numeric dimension of them): answers from the sample."""
    e = Engine(engine.con)
    e.build("t", group_by=["g"], sample=N // 2, seed=1, grid=0, cube_bytes=0)
    return e


#: Integer and discrete columns: every range ends on grid points (k +- 1/2, distinct values).
EXACT_GRID_QUERIES = GRID_QUERIES[4:]


@pytest.mark.parametrize("sql", GRID_QUERIES)
def test_grid_answers_match_the_table(engine, sql):
    """The grid holds the table's exact C and S at its points: integer and discrete ranges end on
    points and are exact; continuous ones interpolate between exact values (the points' spacing
    is ~1/2000 of the rows, so the interpolation adds < 1e-3)."""
    grid = engine.query(sql)
    assert grid.attrs["form"] == "grid"
    exact = engine.query(sql, exact=True)
    rtol = 1e-9 if sql in EXACT_GRID_QUERIES else 1e-3
    np.testing.assert_allclose(grid.to_numpy(float), exact.to_numpy(float), rtol=rtol, atol=1e-9)


def test_grid_points_hold_the_tables_cumulative_sums(engine):
    con = engine.con
    for column in ("x", "w", "k", "m"):
        grid = engine.synopsis("t").grids[column]
        for t in grid.points[:: max(1, grid.points.size // 7)]:
            count, total = con.execute(f"SELECT COUNT(*), COALESCE(SUM({column}), 0) FROM t WHERE {column} <= ?",
                                       [float(t)]).fetchone()
            assert (grid.count[grid.points == t][0], grid.moment[grid.points == t][0]) == pytest.approx(
                (count, total), rel=1e-12, abs=1e-6)
    k = engine.synopsis("t").grids["k"].points
    assert k[0] == -0.5 and np.all(k % 1 == 0.5) and np.all(np.diff(k[1:]) == 1.0)  # the edge L, every k + 1/2


def test_buckets_are_the_first_point_at_or_above():
    from parzen.aqp.grid import ColumnGrid, table_cumulative

    rng = np.random.default_rng(4)
    t = np.unique(np.r_[rng.normal(0, 1, 300), np.linspace(-4, 4, 300)])
    x = np.r_[rng.normal(0, 2, 50_000), t[::7], np.nextafter(t[::5], np.inf), np.nan, -9.0, 9.0]
    grid = ColumnGrid(t, np.zeros(t.size), np.zeros(t.size), np.ones(t.size), False)
    halves = [{"x": x[: x.size // 2]}, {"x": x[x.size // 2:]}]
    done = table_cumulative({"x": grid}, halves)["x"]
    present = x[~np.isnan(x)]
    np.testing.assert_array_equal(done.count, [(present <= p).sum() for p in t])
    np.testing.assert_allclose(done.moment, [present[present <= p].sum() for p in t], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*), AVG(y), SUM(y), COUNT(y) FROM t WHERE x BETWEEN 5 AND 9",
    "SELECT COUNT(*), SUM(x), AVG(w) FROM t WHERE k < 400 AND x >= 9 AND w BETWEEN 1 AND 6",
    "SELECT SUM(y), AVG(k) FROM t WHERE m BETWEEN 3 AND 6 AND k > 395",
    "SELECT g, COUNT(*), SUM(w), AVG(y) FROM t WHERE w < 3 GROUP BY g",
    "SELECT g, COUNT(*), SUM(y), AVG(x) FROM t WHERE w < 3 AND x BETWEEN 5 AND 9 GROUP BY g",
    "SELECT COUNT(*), SUM(k), AVG(w) FROM t WHERE g IN ('a', 'b') AND k > 395 AND x < 9 AND w > 1",
    "SELECT COUNT(*), AVG(x) FROM t WHERE g IN ('b', 'c') AND w BETWEEN 1 AND 6",
    "SELECT COUNT(*), SUM(w) FROM t WHERE w > 100",
    "SELECT COUNT(*) FROM t WHERE x > 9 AND x < 8",
])
def test_fused_sums_equal_the_per_row_terms(sample_only, sql):
    """Without grids nothing is calibrated: the compiled pass (:func:`box_sums`) gives the
    estimates of the per-row terms (:func:`stratified_estimates`, whose standard errors the
    intervals use)."""
    fused = sample_only.query(sql)
    reference = _plain(sample_only, sql)[list(fused.columns)]
    pd.testing.assert_frame_equal(fused, reference, check_exact=False, rtol=1e-10, atol=1e-9, check_dtype=False)


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*), SUM(y), AVG(w) FROM t WHERE x BETWEEN 5 AND 9",  # y, w unconstrained
    "SELECT g, COUNT(*), SUM(x), AVG(w) FROM t WHERE k < 400 AND x >= 9 AND w BETWEEN 1 AND 6 GROUP BY g",
    "SELECT SUM(y), AVG(k) FROM t WHERE m BETWEEN 3 AND 6 AND k > 395",  # a point-mass column m
    "SELECT COUNT(*), SUM(w) FROM t WHERE w < 0.5",  # reflected at w's lower edge
    "SELECT COUNT(*), SUM(x) FROM t WHERE x > 9 AND x < 8",  # an empty box
])
def test_the_compiled_row_terms_are_the_column_models_masses_multiplied(sample_only, sql):
    """:func:`row_terms` (one compiled pass, :func:`parzen.aqp._box.box_terms`) gives, bit for bit, each
    range column's :meth:`ColumnModel.mass_and_moment` multiplied in the ranges' order: p, and per
    aggregated column COUNT / SUM terms (a range column's mass / moment times the others' masses)."""
    from parzen.aqp.estimate import row_terms

    query = sample_only._resolved(parse(sql))
    synopsis, layout = sample_only.synopsis("t"), sample_only._layouts["t"]
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    aggregated = {a.column for a in query.aggregates if a.column is not None}
    terms = row_terms(layout, synopsis.models, ranges, aggregated, row_scale=layout.row_scale)
    scale = layout.row_scale[terms.rows]
    masses, moments = {}, {}
    for c, r in ranges.items():
        model = synopsis.models[c]
        masses[c], moments[c] = model.mass_and_moment(layout.view.columns[c][terms.rows], *model.interval(r), scale)
    p = np.ones(terms.rows.size)
    for mass in masses.values():
        p = p * mass
    np.testing.assert_array_equal(terms.count, p)
    for y in aggregated:
        if y in ranges:
            others = np.ones(terms.rows.size)
            for c, mass in masses.items():
                others = others * mass if c != y else others
            count, total = masses[y] * others, moments[y] * others
        else:
            values = layout.view.columns[y][terms.rows]
            count, total = np.where(np.isnan(values), 0.0, p), np.where(np.isnan(values), 0.0, values) * p
        np.testing.assert_array_equal(terms.count_y[y], count)
        np.testing.assert_array_equal(terms.sum_y[y], total)


def _plain(engine, sql):
    """The plain stratified estimates of ``sql`` (not calibrated), shaped as the engine's answer."""
    from parzen.aqp.answers import frame, stratified_estimates
    from parzen.aqp.estimate import Estimate
    from parzen.aqp.strata import output_groups

    query = engine._resolved(parse(sql))
    synopsis, layout = engine.synopsis(query.table), engine._layouts[query.table]
    keys, output_of_stratum = output_groups(query, synopsis, layout)
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    estimates = stratified_estimates(query, synopsis, layout, ranges, output_of_stratum, len(keys))
    return frame(query, {key: {name: Estimate(float(values[g])) for name, (values, _) in estimates.items()}
                         for g, key in enumerate(keys)}, False)


ONE_PATH_QUERIES = [
    "SELECT COUNT(*), SUM(y), AVG(y) FROM t WHERE x BETWEEN 9 AND 12.5",  # one range, calibrated
    "SELECT COUNT(*), SUM(x), AVG(x) FROM t WHERE x > 9",  # the gridded form
    "SELECT COUNT(*), SUM(y), AVG(w) FROM t WHERE x BETWEEN 8 AND 11 AND w BETWEEN 2 AND 5",  # raked, shrunk
    "SELECT COUNT(*), SUM(k), AVG(w) FROM t WHERE k > 395 AND x < 9 AND w > 1",  # three ranges
    "SELECT g, COUNT(*), SUM(y), AVG(y) FROM t WHERE k BETWEEN 395 AND 420 GROUP BY g",  # groups raked
    "SELECT g, COUNT(y), SUM(w) FROM t WHERE w < 3 AND x BETWEEN 5 AND 9 GROUP BY g",
    "SELECT COUNT(*), SUM(k), AVG(w) FROM t WHERE g IN ('a', 'b') AND k > 395 AND x < 9 AND w > 1",
    "SELECT g, COUNT(*), AVG(x) FROM t WHERE g = 'b' GROUP BY g",  # totals
    "SELECT COUNT(*), SUM(y) FROM t WHERE x > 9 AND x < 8",  # an empty box
]


@pytest.mark.parametrize("sql", ONE_PATH_QUERIES)
def test_an_interval_does_not_change_the_answer(engine, sql):
    """One answer path: with ``with_error=True`` the answer is the one given without it (same
    form, same values to 1e-12), and its interval lies around it."""
    answer = engine.query(sql)
    with_error = engine.query(sql, with_error=True)
    assert with_error.attrs["form"] == answer.attrs["form"]
    pd.testing.assert_frame_equal(with_error[list(answer.columns)], answer, check_exact=False, rtol=1e-12, atol=0.0)
    aggregates = [c for c in answer.columns if c != "g"]
    for name in aggregates:
        values = answer[name].to_numpy(float)
        low, high = with_error[f"{name} low"].to_numpy(float), with_error[f"{name} high"].to_numpy(float)
        finite = np.isfinite(values)
        assert (low[finite] <= values[finite]).all() and (values[finite] <= high[finite]).all()


def test_calibrated_counts_are_the_grids_and_sums_follow():
    """Whole-table answers from the sample are scaled to the table's exact rows in the box of
    their most selective range column: COUNT(*) of one range is exact, SUM(y) a ratio estimate.
    Over 12 samples the calibrated SUM(y) has a smaller mean squared error than the plain one."""
    con = _locked_down()
    _table(con)
    sql = "SELECT COUNT(*), SUM(y), AVG(y) FROM t WHERE k BETWEEN 390 AND 420"
    exact = Engine(con).query(sql, exact=True).iloc[0]
    squared = {"calibrated": 0.0, "plain": 0.0}
    for seed in range(12):
        engine = Engine(con)
        engine.build("t", columns=["k", "y"], sample=N // 20, seed=seed, cube_bytes=0)  # no exact table on k
        calibrated = engine.query(sql)
        plain = _plain(engine, sql)
        assert calibrated.attrs["form"] == "sample"
        assert calibrated["count_star()"][0] == pytest.approx(exact["count_star()"], rel=1e-12)
        assert calibrated["avg(y)"][0] == pytest.approx(plain["avg(y)"][0], rel=1e-10)  # a ratio already
        squared["calibrated"] += (calibrated["sum(y)"][0] - exact["sum(y)"]) ** 2
        squared["plain"] += (plain["sum(y)"][0] - exact["sum(y)"]) ** 2
    assert squared["calibrated"] < squared["plain"]


def test_group_answers_are_raked_to_the_box_and_the_groups():
    """GROUP BY answers share the exact margin of their range column: the groups' COUNT(*) add
    up to the table's rows in the box, and over 12 samples the raked COUNT(*) and SUM(y) of the
    groups have a smaller mean squared error than the plain stratified ones."""
    from parzen.aqp.calibration import rake_groups

    factors = rake_groups(np.array([30.0, 20.0, 10.0]), np.array([100.0, 50.0, 40.0]), 66.0)
    raked_in = factors * [30.0, 20.0, 10.0]
    assert raked_in.sum() == pytest.approx(66.0)
    assert rake_groups(np.array([30.0]), np.array([100.0]), 33.0) == pytest.approx([1.1])
    con = _locked_down()
    _table(con)
    sql = "SELECT g, COUNT(*), SUM(y), AVG(y) FROM t WHERE k BETWEEN 395 AND 420 GROUP BY g"
    exact = Engine(con).query(sql, exact=True).sort_values("g").reset_index(drop=True)
    total = Engine(con).query("SELECT COUNT(*) FROM t WHERE k BETWEEN 395 AND 420", exact=True).iloc[0, 0]
    squared = {"raked": 0.0, "plain": 0.0}
    for seed in range(12):
        engine = Engine(con)
        engine.build("t", columns=["k", "y"], group_by=["g"], sample=N // 20, seed=seed, cube_bytes=0)  # no exact table on k
        raked, plain = engine.query(sql), _plain(engine, sql)
        assert raked["count_star()"].sum() == pytest.approx(total, rel=1e-9)
        np.testing.assert_allclose(raked["avg(y)"], plain["avg(y)"], rtol=1e-10)  # a ratio already
        for name in ("count_star()", "sum(y)"):
            squared["raked"] += float(((raked[name] - exact[name]) ** 2).sum())
            squared["plain"] += float(((plain[name] - exact[name]) ** 2).sum())
    assert squared["raked"] < squared["plain"]


def test_raked_cell_shrinks_towards_independence_by_its_noise():
    """The raked 2 x 2 cell is R C / n when its departure from independence is within one
    standard error s, keeps (1 - s^2 / d^2) of a larger departure, and is left alone when a
    cell is empty."""
    from parzen.aqp.calibration import shrink_to_independence as _shrink_to_independence

    n, r, c, m, f = 1e6, 1e4, 1e5, 1e5, 0.1
    s = math.sqrt((1 - f) / (m * n * sum(1 / v for v in (1e3, r - 1e3, c - 1e3, n - r - c + 1e3))))
    assert _shrink_to_independence(1000.0, n, r, c, m, f) == 1000.0  # independent already
    assert _shrink_to_independence(1000.0 + 0.9 * s * n, n, r, c, m, f) == pytest.approx(1000.0)
    x = 1000.0 + 5 * s * n
    shrunk = _shrink_to_independence(x, n, r, c, m, f)
    assert 1000.0 < shrunk < x
    cells = (x, r - x, c - x, n - r - c + x)
    s2 = (1 - f) / (m * n * sum(1 / v for v in cells))
    assert shrunk == pytest.approx(1000.0 + (x - 1000.0) * (1 - s2 / ((x - 1000.0) / n) ** 2), rel=1e-12)
    assert _shrink_to_independence(4000.0, n, r, c, m, f) == pytest.approx(4000.0, rel=5e-3)  # clear dependence
    assert _shrink_to_independence(r, n, r, c, m, f) == r  # an empty cell: the raked value


@pytest.fixture(scope="module")
def one_percent_samples():
    """24 synopses (seeds 0-23) of 1 % samples of a 200 000-row ``t``: the sample's noise in a
    2 x 2 table is then ten times the table's own departure from independence.  (With 12, the mean
    squared errors' ratio of one query moved between 0.27 and 0.58 from one block of seeds to the next.)"""
    con = _locked_down()
    _table(con, n=200_000)
    engines = []
    for seed in range(24):
        engine = Engine(con)
        engine.build("t", columns=["x", "w", "k", "y"], sample=2_000, seed=seed)
        engines.append(engine)
    return engines


@pytest.mark.parametrize("where, independent", [
    ("x BETWEEN 8 AND 11 AND w BETWEEN 2 AND 5", True),
    ("k BETWEEN 390 AND 405 AND w < 3", True),
    ("x > 11 AND k < 395", True),
    ("x BETWEEN 8 AND 11 AND y BETWEEN 4 AND 6", False),  # y = x / 2 + noise
])
def test_two_range_counts_of_independent_columns_shrink_to_the_margins(one_percent_samples, monkeypatch, where,
                                                                      independent):
    """With two range columns the raked COUNT(*) is shrunk towards the product of the exact
    margins as far as the sample cannot tell the columns' dependence from noise: over 24 samples,
    independent columns' COUNT(*) has less than half the mean squared error of the raked one (and
    SUM(y), which keeps y's own sampling error, less), and dependent columns keep the raked
    answers (within 1 %)."""
    from parzen.aqp import calibration as module

    sql = f"SELECT COUNT(*), SUM(y) FROM t WHERE {where}"
    exact = one_percent_samples[0].query(sql, exact=True).iloc[0].to_numpy(float)
    squared = {"shrunk": np.zeros(2), "raked": np.zeros(2)}
    for engine in one_percent_samples:
        answer = engine.query(sql)
        assert answer.attrs["form"] == "sample"
        shrunk = answer.iloc[0].to_numpy(float)
        with monkeypatch.context() as patch:
            patch.setattr(module, "shrink_to_independence", lambda x, *args: x)
            raked = engine.query(sql).iloc[0].to_numpy(float)
        squared["shrunk"] += (shrunk - exact) ** 2
        squared["raked"] += (raked - exact) ** 2
        if not independent:
            np.testing.assert_allclose(shrunk, raked, rtol=0.01)
    if independent:
        assert squared["shrunk"][0] < 0.5 * squared["raked"][0]  # COUNT(*)
        assert squared["shrunk"][1] < squared["raked"][1]  # SUM(y): y's own sampling error stays


def test_queries_the_grid_cannot_answer_use_the_sample(engine):
    for sql in ("SELECT AVG(y) FROM t WHERE x > 9",  # another column's aggregate
                "SELECT COUNT(*) FROM t WHERE x > 9 AND w < 4",  # two range columns
                "SELECT g, COUNT(*) FROM t WHERE x > 9 GROUP BY g",
                "SELECT COUNT(*) FROM t WHERE x > 9 AND g = 'a'"):
        assert engine.query(sql).attrs["form"] == "sample", sql
    assert engine.query("SELECT COUNT(*) FROM t WHERE x > 9", with_error=True).attrs["form"] == "grid"
    assert engine.query("SELECT COUNT(*) FROM t").attrs["form"] == "totals"
    assert engine.query("SELECT COUNT(*) FROM t", exact=True).attrs["form"] == "exact"


def test_grid_bytes_do_not_grow_with_the_sample():
    con = duckdb.connect(":memory:")
    _table(con, n=N)
    sizes = [Engine(con).build("t", columns=["x", "w"], sample=s, grid=256).nbytes() for s in (1000, 10_000)]
    assert sizes[1]["sample"] == 10 * sizes[0]["sample"]
    assert sizes[0]["grid"] == sizes[1]["grid"] <= 2 * 4 * 8 * 257  # 2 columns x 4 arrays x (256 points + L)


def test_grids_survive_storage_and_refresh(tmp_path):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    _table(con, n=3000)
    built = Engine(con).build("t", columns=["x", "m"], sample=1000, grid=128)
    loaded = Engine(con).synopsis("t")
    for column, grid in built.grids.items():
        for name, values in grid.arrays().items():
            np.testing.assert_array_equal(values, loaded.grids[column].arrays()[name])
    assert loaded.grids["m"].steps and not loaded.grids["x"].steps
    Engine(con).refresh("t")
    assert Engine(con).synopsis("t").grids["x"].points.size == built.grids["x"].points.size
    assert Engine(con).list().loc[0, "grid bytes"] == built.nbytes()["grid"]


# --- regression synopses (y ~ x, DBEst's answers) ---------------------------------------------


def _regression_table(con, n=N, seed=3):
    """y = g(x) + noise with a known, non-linear g; m discrete; 5 % of y NULL."""
    rng = np.random.default_rng(seed)
    x = rng.gamma(4.0, 1.5, n)
    frame = pd.DataFrame({"x": x, "m": rng.integers(1, 13, n), "g": rng.choice(["a", "b"], n),
                          "y": _g(x) + rng.normal(0.0, 1.0, n)})
    frame["y"] = frame["y"] + 0.3 * frame["m"]
    frame.loc[rng.random(n) < 0.05, "y"] = np.nan
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE r AS SELECT x, CAST(m AS INTEGER) AS m, g, y FROM frame")
    con.unregister("frame")


def _g(x):
    return 20.0 + 4.0 * np.sin(x) + 0.2 * x * x


@pytest.fixture(scope="module")
def regressed():
    con = duckdb.connect(":memory:")
    _regression_table(con)
    e = Engine(con)
    e.build("r", sample=N // 2, seed=1, group_by=["g"], regression=[("y", "x"), ("y", "m")])
    return e


REGRESSION_QUERIES = [
    "SELECT AVG(y), SUM(y), COUNT(y), COUNT(*) FROM r WHERE x BETWEEN 2 AND 6",
    "SELECT SUM(y) AS s, AVG(x) FROM r WHERE x > 9.5",
    "SELECT AVG(y) FROM r WHERE x < 3",
    "SELECT SUM(y), AVG(y) FROM r WHERE m BETWEEN 3 AND 6",
]


@pytest.mark.parametrize("sql", REGRESSION_QUERIES)
def test_regression_answers_close_to_exact(regressed, sql):
    frame = regressed.compare(sql, method="regression")
    assert frame.attrs["form"] == "regression"
    errors = frame.filter(like="rel. error").to_numpy()
    assert np.all(errors < 0.02), frame.T  # seen: 0.8 % at most


def test_regression_follows_the_known_function(regressed):
    r = regressed.synopsis("r").regressions[("y", "x")]
    t = np.linspace(1.0, 12.0, 60)  # where the data are dense enough
    error = np.abs(r(t) - (_g(t) + 0.3 * 6.5))  # E[y | x] = g(x) + 0.3 E[m]
    assert r.level == 7 and error.mean() < 0.2 and error.max() < 0.8  # seen: 0.10, 0.53
    np.testing.assert_allclose(r(t), r.model().predict(t[:, None]), rtol=1e-12, atol=1e-9)  # r is piecewise linear
    assert r.present == pytest.approx(0.95, abs=0.01) and r.r2 > 0.8
    # its COUNT is the grid's (Simpson's rule is exact on C's cubic pieces)
    synopsis = regressed.synopsis("r")
    count, _ = r.integrals(synopsis.grids["x"], 2.0, 6.0)
    assert count == pytest.approx(synopsis.grids["x"].box(2.0, 6.0)[0], rel=1e-9)


def test_regression_is_asked_for_not_the_default(regressed):
    sql = "SELECT AVG(y) FROM r WHERE x BETWEEN 2 AND 6"
    assert regressed.query(sql).attrs["form"] == "sample"
    assert regressed.query(sql, method="regression").attrs["form"] == "regression"
    assert regressed.query("SELECT COUNT(*) FROM r WHERE x > 1", method="regression").iloc[0, 0] == pytest.approx(
        regressed.query("SELECT COUNT(*) FROM r WHERE x > 1").iloc[0, 0], rel=1e-9)


@pytest.mark.parametrize(
    ("sql", "kwargs", "message"),
    [
        ("SELECT g, AVG(y) FROM r WHERE x > 2 GROUP BY g", {}, "GROUP BY or IN"),
        ("SELECT AVG(y) FROM r WHERE x > 2 AND g = 'a'", {}, "GROUP BY or IN"),
        ("SELECT AVG(y) FROM r WHERE x > 2 AND m < 4", {}, "2 columns, not one"),
        ("SELECT AVG(y) FROM r", {}, "0 columns, not one"),
        ("SELECT AVG(m) FROM r WHERE x > 2", {}, "no regression on 'x' for"),
        ("SELECT COUNT(*) FROM r WHERE y > 2", {}, "which no regression is on"),
        ("SELECT AVG(y) FROM r WHERE x > 2", {"with_error": True}, "no intervals"),
        ("SELECT AVG(y) FROM r WHERE x > 2", {"exact": True}, "takes no method"),
        ("SELECT AVG(y) FROM r WHERE x > 2", {"method": "magic"}, "must be 'density' or 'regression'"),
    ],
)
def test_regression_query_errors(regressed, sql, kwargs, message):
    with pytest.raises(ValueError, match=message):
        regressed.query(sql, **{"method": "regression", **kwargs})


def test_regression_needs_one_built(engine):
    with pytest.raises(ValueError, match=r"has no regressions; rebuild it with engine.build\('t', regression="):
        engine.query("SELECT AVG(y) FROM t WHERE x > 9", method="regression")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"regression": [("y", "z")]}, "has no column 'z'"),
        ({"regression": [("g", "x")]}, "'g' is not a modelled numeric column"),
        ({"regression": [("y", "x")], "columns": ["x"]}, "'y' is not a modelled numeric column"),
        ({"regression": [("y", ("x", "m"))]}, "x must be one column name"),
        ({"regression": [("y", "y")]}, "must be different columns"),
        ({"regression": {"y": "x"}}, "list of \\(y, x\\) column-name pairs"),
        ({"regression": [("y", "x")], "grid": 0}, "grid > 0"),
    ],
)
def test_regression_build_errors(kwargs, message):
    con = duckdb.connect(":memory:")
    _regression_table(con, n=300)
    with pytest.raises(ValueError, match=message):
        Engine(con).build("r", **kwargs)


def test_regressions_survive_storage_and_refresh(tmp_path, monkeypatch):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    _regression_table(con, n=3000)
    built = Engine(con).build("r", sample=1000, grid=128, regression=[("y", "x")])
    sql = "SELECT SUM(y), AVG(y) FROM r WHERE x BETWEEN 3 AND 7"
    loaded = Engine(con)
    stored = loaded.synopsis("r").regressions[("y", "x")]
    original = built.regressions[("y", "x")]
    np.testing.assert_array_equal(stored.coef, original.coef)
    assert stored.meta() == original.meta()
    pd.testing.assert_frame_equal(loaded.query(sql, method="regression"), Engine(con).query(sql, method="regression"))
    listing = Engine(con).list()
    assert listing.loc[0, "regressions"] == "y ~ x"
    assert original.level == 4  # ~950 rows fitted: 64 or more per knot interval
    assert listing.loc[0, "regression bytes"] == original.coef.nbytes == 8 * (2**4 - 1)
    Engine(con).refresh("r")
    assert list(Engine(con).synopsis("r").regressions) == [("y", "x")]
    # a synopsis stored by an older parzen than the readable formats is refused with the rebuild hint
    from parzen.aqp import synopsis as synopsis_module

    monkeypatch.setattr(synopsis_module, "FORMAT_VERSION", min(synopsis_module.READABLE_VERSIONS) - 1)
    Engine(con).build("r", sample=500, grid=64)
    monkeypatch.undo()
    with pytest.raises(CorruptSynopsis, match=r"has format \d+, this parzen reads [\d, ]+; rebuild it"):
        Engine(con).synopsis("r")
