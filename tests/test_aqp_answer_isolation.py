"""Answers share no mutable pandas object: each answer's row and column Index is its own, so that naming
one (``df.index.name = ...``, ``df.columns.name = ...``, ``df.index.names = [...]``) renames no other
answer's, earlier or later, and writing into one answer's values changes no other answer, on every answer
path: one row, GROUP BY from the sample, domains, totals, the grid, regressions, the exact tables, ratios and
CASE, histograms, quantiles, COUNT(DISTINCT), MIN / MAX, ``exact=True`` and the contract's (``max_rel_error``)
answers from the synopsis, from the exact tables, from a drawn sample and DuckDB's fallback."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, contract, query_samples

N = 20_000


def _connection(frames: dict[str, pd.DataFrame]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config={"enable_external_access": False, "threads": 1})
    for name, frame in frames.items():
        con.register("frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    return con


@pytest.fixture(scope="module")
def plain():
    rng = np.random.default_rng(0)
    x = rng.normal(10.0, 3.0, N)
    con = _connection({"t": pd.DataFrame({
        "x": x, "w": rng.gamma(2.0, 2.0, N), "y": 0.5 * x + rng.normal(0.0, 1.0, N),
        "m": rng.integers(1, 13, N).astype(np.int32), "g": rng.choice(["a", "b", "c"], N, p=[0.6, 0.3, 0.1]),
        "h": rng.choice(["p", "q", "r"], N)})})
    e = Engine(con)
    # strata by g (h: domains), a regression of y on x, no exact tables (the star has them)
    e.build("t", group_by=["g"], sample=N // 4, seed=1, cube_bytes=0, regression=[("y", "x")])
    return e


STAR = ("FROM lineorder, dates, customer WHERE lo_orderdate = d_datekey AND lo_custkey = c_custkey")


@pytest.fixture(scope="module")
def star():
    """A fact table joined to dates (year) and customer (nation, region), with exact aggregate tables."""
    rng = np.random.default_rng(1)
    con = _connection({
        "dates": pd.DataFrame({"d_datekey": np.arange(60, dtype=np.int32), "d_year": 1992 + np.arange(60) // 20}),
        "customer": pd.DataFrame({"c_custkey": np.arange(40, dtype=np.int32),
                                  "c_nation": [f"N{k % 8}" for k in range(40)],
                                  "c_region": [f"R{k % 8 // 4}" for k in range(40)]}),
        "lineorder": pd.DataFrame({"lo_orderdate": rng.integers(0, 60, N).astype(np.int32),
                                   "lo_custkey": rng.integers(0, 40, N).astype(np.int32),
                                   "lo_revenue": rng.gamma(3.0, 100.0, N), "lo_cost": rng.gamma(2.0, 50.0, N)})})
    e = Engine(con)
    e.build("lineorder", columns=["lo_revenue", "lo_cost"], sample=2000, seed=3, grid=0,
            joins={"lo_orderdate": "dates.d_datekey", "lo_custkey": "customer.c_custkey"},
            cube=[["d_year", "c_nation"], ["c_region"]])
    return e


@pytest.fixture(scope="module")
def drawing():
    """A table large enough that the contract answers from a sample drawn at query time (with fewer blocks
    required of it than the engine's default, which needs a table of 1.3 M rows)."""
    rows = 200_000
    rng = np.random.default_rng(5)
    x = rng.normal(10.0, 3.0, rows)
    con = _connection({"t": pd.DataFrame({"x": x, "w": rng.gamma(2.0, 2.0, rows),
                                          "y": 0.5 * x + rng.normal(0.0, 1.0, rows)})})
    e = Engine(con)
    e.build("t", sample=2000, seed=2, grid=0)
    return e


# per case: the fixture, the form that answers, a text of one shape ({star}: STAR), its two literals, the options
CASES = {
    "one row from the sample": ("plain", "sample", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {} AND w < 5", (9, 8), {}),
    "one row with intervals": ("plain", "sample", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {} AND w < 5", (9, 8),
                               {"with_error": True}),
    "the grid": ("plain", "grid", "SELECT COUNT(*) FROM t WHERE x > {}", (9, 8), {"with_error": True}),
    "totals": ("plain", "totals", "SELECT COUNT(*), SUM(w) FROM t WHERE g = '{}'", ("a", "b"), {}),
    "group by from the sample": ("plain", "sample", "SELECT g, COUNT(*), SUM(w) FROM t WHERE x > {} GROUP BY g",
                                 (9, 8), {"with_error": True}),
    "domains by group": ("plain", "sample", "SELECT h, COUNT(*), SUM(w) FROM t WHERE x > {} GROUP BY h", (9, 8),
                         {"with_error": True}),
    "domain, one row": ("plain", "sample", "SELECT COUNT(*), SUM(w) FROM t WHERE h = 'p' AND x > {}", (9, 8),
                        {"with_error": True}),
    "regression": ("plain", "regression", "SELECT COUNT(*), SUM(y) FROM t WHERE x > {}", (9, 8),
                   {"method": "regression"}),
    "ratio and case, one row": ("plain", "sample", ("SELECT SUM(w) / SUM(x) AS r, SUM(CASE WHEN g = 'a' THEN w "
                                "ELSE 0 END) AS s FROM t WHERE x > {} AND w < 5"), (9, 8), {}),
    "ratio by group": ("plain", "sample", "SELECT g, SUM(w) / COUNT(*) AS r FROM t WHERE x > {} GROUP BY g", (9, 8),
                       {"with_error": True}),
    "histogram": ("plain", "sample", "SELECT FLOOR(x / 2) * 2 AS bin, COUNT(*) FROM t WHERE w > {} GROUP BY bin",
                  (1, 2), {}),
    "quantile": ("plain", "sample", "SELECT QUANTILE_CONT(x, 0.5) AS q FROM t WHERE w > {}", (1, 2),
                 {"with_error": True}),
    "count distinct": ("plain", "totals", "SELECT COUNT(DISTINCT m) AS dm FROM t WHERE g IN ('{}', 'c')", ("a", "b"),
                       {}),
    "count distinct by group": ("plain", "totals", ("SELECT g, COUNT(DISTINCT m) AS dm FROM t WHERE g IN ('{}', 'c') "
                                "GROUP BY g"), ("a", "b"), {"with_error": True}),
    "min and max": ("plain", "sample", "SELECT MIN(x), MAX(x) FROM t WHERE w > {}", (1, 2), {}),
    "min and max by group": ("plain", "sample", "SELECT g, MIN(x), MAX(x) FROM t WHERE w > {} GROUP BY g", (1, 2),
                             {}),
    "exact=True": ("plain", "exact", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {}", (9, 8), {"exact": True}),
    "exact=True by group": ("plain", "exact", "SELECT g, COUNT(*) FROM t WHERE x > {} GROUP BY g", (9, 8),
                            {"exact": True}),
    "contract, from the grid": ("plain", "grid", "SELECT COUNT(*) FROM t WHERE x > {}", (9, 8),
                                {"max_rel_error": 0.05}),
    "contract, from the sample": ("plain", "sample", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {}", (9, 8),
                                  {"max_rel_error": 0.05}),
    "contract, from the sample with intervals": ("plain", "sample", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {}",
                                                 (9, 8), {"max_rel_error": 0.05, "with_error": True}),
    "contract, by group from the sample": ("plain", "sample", ("SELECT g, COUNT(*), SUM(w) FROM t WHERE x > {} "
                                           "GROUP BY g"), (9, 8), {"max_rel_error": 0.2}),
    "contract, exact fallback": ("plain", "exact", "SELECT g, COUNT(*), SUM(w) FROM t WHERE x > {} GROUP BY g",
                                 (9, 8), {"max_rel_error": 1e-9}),
    "contract, exact fallback with intervals": ("plain", "exact", "SELECT COUNT(*), SUM(w) FROM t WHERE x > {}",
                                                (9, 8), {"max_rel_error": 1e-9, "with_error": True}),
    "exact tables": ("star", "exact table", ("SELECT d_year, c_nation, SUM(lo_revenue), COUNT(*) {star} "
                     "AND c_region = 'R{}' GROUP BY d_year, c_nation"), (0, 1), {}),
    "exact tables with intervals": ("star", "exact table", ("SELECT c_nation, SUM(lo_revenue) {star} "
                                    "AND c_region = 'R{}' GROUP BY c_nation"), (0, 1), {"with_error": True}),
    "exact tables, one row": ("star", "exact table", "SELECT SUM(lo_revenue), COUNT(*) {star} AND c_region = 'R{}'",
                              (0, 1), {"with_error": True}),
    "exact tables, ratio by group": ("star", "exact table", ("SELECT c_nation, SUM(lo_revenue) / SUM(lo_cost) AS r, "
                                     "SUM(CASE WHEN d_year = 1992 THEN lo_cost ELSE 0 END) AS c {star} "
                                     "AND c_region = 'R{}' GROUP BY c_nation"), (0, 1), {"with_error": True}),
    "exact tables, ratio": ("star", "exact table", ("SELECT SUM(lo_revenue) / SUM(lo_cost) AS r {star} "
                            "AND c_region = 'R{}'"), (0, 1), {}),
    "contract, exact tables": ("star", "exact table", ("SELECT c_nation, SUM(lo_revenue), COUNT(*) {star} "
                               "AND c_region = 'R{}' GROUP BY c_nation"), (0, 1), {"max_rel_error": 0.05}),
    "contract, exact tables with intervals": ("star", "exact table", ("SELECT c_nation, SUM(lo_revenue), COUNT(*) "
                                              "{star} AND c_region = 'R{}' GROUP BY c_nation"), (0, 1),
                                              {"max_rel_error": 0.05, "with_error": True}),
    "contract, drawn sample": ("drawing", query_samples.FORM, "SELECT SUM(w) AS s, AVG(y) AS a FROM t WHERE x > {}",
                               (9, 9.5), {"max_rel_error": 0.03}),
    "contract, drawn sample with intervals": ("drawing", query_samples.FORM, ("SELECT SUM(w) / SUM(y) AS r FROM t "
                                              "WHERE x > {}"), (9, 9.5), {"max_rel_error": 0.03, "with_error": True}),
}


def _written(frame: pd.DataFrame) -> None:
    """A value unlike any answer's written into every cell of ``frame``'s first row (the frame's own)."""
    for j in range(frame.shape[1]):
        kind = frame.dtypes.iloc[j].kind
        frame.iloc[0, j] = -1.5 if kind == "f" else -7 if kind in "iu" else "written" if kind in "OU" or \
            pd.api.types.is_string_dtype(frame.dtypes.iloc[j]) else frame.iloc[0, j]


def _no_names(frame: pd.DataFrame) -> bool:
    return frame.index.name is None and frame.columns.name is None and list(frame.index.names) == [None]


@pytest.mark.parametrize("case", CASES)
def test_an_answer_renamed_or_written_to_changes_no_other_answer(case, request, monkeypatch):
    fixture, form, template, literals, options = CASES[case]
    monkeypatch.setattr(query_samples, "MIN_BLOCKS", 2)
    engine = request.getfixturevalue(fixture)
    texts = [template.format(literal, star=STAR) for literal in literals]
    first = engine.query(texts[0], **options)
    assert first.attrs["form"] == form
    earlier = [engine.query(sql, **options) for sql in texts]  # the same text again, another of its shape
    kept = [frame.copy(deep=True) for frame in earlier]
    first.index.name, first.columns.name = "row", "aggregates"
    earlier[0].index.names, earlier[0].columns.names = ["position"], ["labels"]
    later = [engine.query(sql, **options) for sql in texts]
    assert (first.index.name, first.columns.name) == ("row", "aggregates")
    assert (earlier[0].index.names, earlier[0].columns.names) == (["position"], ["labels"])
    assert all(_no_names(frame) for frame in (earlier[1], *later))
    _written(first)
    _written(later[0])
    again = [engine.query(sql, **options) for sql in texts]
    pd.testing.assert_frame_equal(earlier[0].rename_axis(index=None, columns=None), kept[0])
    for frame, want in zip((earlier[1], later[1], *again), (kept[1], kept[1], *kept)):
        assert _no_names(frame)
        pd.testing.assert_frame_equal(frame, want)


def test_the_contract_reads_an_answers_labels_once_per_query_shape(plain, star, monkeypatch):
    """Each answer has its own index of labels, a view of one kept per query shape; the contract's facts read
    off the labels (contract._facts) are kept per array of labels, which the views share: a second answer of
    the shape, whatever its name, makes none."""
    sql = "SELECT COUNT(*), SUM(w) FROM t WHERE x > {} AND w < 5"
    tables = f"SELECT c_nation, SUM(lo_revenue), COUNT(*) {STAR} AND c_region = 'R{{}}' GROUP BY c_nation"
    for engine, template, literals in ((plain, sql, (9, 8)), (star, tables, (0, 1))):
        engine.query(template.format(literals[0]), max_rel_error=0.05)
        first = engine.query(template.format(literals[0]), max_rel_error=0.05, with_error=True)
        first.columns.name = "named"
        made = []
        monkeypatch.setattr(contract, "_FACTS", _Recorded(contract._FACTS, made))
        for literal in literals:
            assert contract.interval_names(engine.query(template.format(literal), with_error=True)) == \
                contract.interval_names(first)
            engine.query(template.format(literal), max_rel_error=0.05)
            engine.query(template.format(literal), max_rel_error=0.05, with_error=True)
        assert made == []
        monkeypatch.undo()


class _Recorded(dict):
    """A dict that records the keys set in it (a copy of ``kept``)."""

    def __init__(self, kept: dict, made: list) -> None:
        super().__init__(kept)
        self.made = made

    def __setitem__(self, key, value) -> None:
        self.made.append(key)
        super().__setitem__(key, value)
