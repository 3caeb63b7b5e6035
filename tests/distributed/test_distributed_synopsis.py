"""Engine.build from Parquet files and dask DataFrames on Dask workers (parzen.distributed.synopsis):
the same exact parts as a build from a DuckDB table of the same rows, exact answers over the files
and nothing else, staleness from the files, and builds that fail storing nothing."""

from __future__ import annotations

import os

import duckdb
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from parzen.aqp import Engine, UncheckedSynopsisWarning, UnsupportedQuery
from parzen.aqp.build import integral_factor
from parzen.aqp.engine import _parquet_connection
from parzen.aqp.partitions import ColumnScan, SampleDraw, TableScan

ROWS = 60_000
QUERIES = [
    "SELECT COUNT(*), SUM(x) FROM t WHERE x BETWEEN 2 AND 9",
    "SELECT AVG(x) FROM t WHERE k < 100",
    "SELECT g, COUNT(*), AVG(x) FROM t WHERE x > 3 GROUP BY g",
    "SELECT SUM(k) FROM t WHERE x < 4 AND k BETWEEN 50 AND 300",
]


def table_frame(rows: int = ROWS, seed: int = 1) -> pd.DataFrame:
    """x: gamma with NULLs every 97th row; k: integers 0..499; g: 3 groups of unequal size (and NULL);
    m: 5 values (a discrete column)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "x": rng.gamma(2.0, 3.0, rows), "k": rng.integers(0, 500, rows),
        "g": pd.array(rng.choice(["a", "b", "c"], rows, p=[0.7, 0.2, 0.1]), dtype="string"),
        "m": rng.integers(0, 5, rows).astype(float),
    })
    frame.loc[::97, "x"] = np.nan
    frame.loc[5::1001, "g"] = pd.NA
    return frame


def write_parts(frame: pd.DataFrame, folder, parts: int = 4) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(frame) // parts)
    for k in range(parts):
        frame.iloc[k * size: (k + 1) * size].to_parquet(folder / f"part-{k}.parquet")
    return str(folder / "*.parquet")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """(frame, Parquet glob, an engine with the synopsis of the frame loaded into DuckDB)."""
    frame = table_frame()
    glob = write_parts(frame, tmp_path_factory.mktemp("t"))
    con = duckdb.connect(":memory:")
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    reference = Engine(con)
    reference.build("t", group_by=["g"], sample=8_000)
    return frame, glob, reference


def test_a_parquet_build_has_the_exact_parts_of_the_database_build(data, processes):
    """Row count, per-column and per-group COUNT and SUM, the column kinds and PLUGIN's functionals
    of every row equal the build from DuckDB (sums to round-off); C(t) and S(t) at the grid's points
    equal DuckDB's exact COUNT and SUM of x <= t; each stratum drew its quota."""
    frame, glob, reference = data
    engine = Engine(":memory:")
    got = engine.build("t", source=glob, client=processes, group_by=["g"], sample=8_000)
    want = reference.synopsis("t")
    assert got.row_count == want.row_count == ROWS
    assert got.source["kind"] == "parquet" and len(got.source["files"]) == 4
    for column, (count, total) in want.totals.items():
        assert got.totals[column][0] == count and got.totals[column][1] == pytest.approx(total, rel=1e-12)
    assert [g.key for g in got.groups] == [g.key for g in want.groups] == [("a",), ("b",), ("c",), (None,)]
    for mine, theirs in zip(got.groups, want.groups):
        assert mine.rows == theirs.rows and mine.stop - mine.start == theirs.stop - theirs.start
        for column, (count, total) in theirs.totals.items():
            assert mine.totals[column][0] == count and mine.totals[column][1] == pytest.approx(total, rel=1e-12)
    for column, model in want.models.items():
        mine = got.models[column]
        assert (mine.kind, mine.lower, mine.integer) == (model.kind, model.lower, model.integer)
        if model.bandwidth:  # h for n sampled values from the same functionals: h n^(1/5) / integral_factor(n)
            n_got, n_want = (int(np.count_nonzero(~np.isnan(s.sample[column]))) for s in (got, want))
            assert mine.bandwidth * n_got ** 0.2 / integral_factor(n_got) == pytest.approx(
                model.bandwidth * n_want ** 0.2 / integral_factor(n_want), rel=1e-9)
    con = duckdb.connect()
    con.register("frame", frame)
    for column, grid in got.grids.items():
        points = grid.points[:: max(1, grid.points.size // 40)]
        rows = [con.execute(f"SELECT COUNT({column}), SUM({column}) FROM frame WHERE {column} <= ?", [float(t)]).fetchone()
                for t in points]
        np.testing.assert_array_equal(grid.count[:: max(1, grid.points.size // 40)], [r[0] for r in rows])
        np.testing.assert_allclose(grid.moment[:: max(1, grid.points.size // 40)], [r[1] or 0.0 for r in rows],
                                   rtol=1e-10, atol=1e-9)


def test_queries_are_as_accurate_as_from_the_database_build(data, processes):
    """Both synopses answer each query within 5 % (grouped averages on small strata included) and
    their median errors are within a factor of 3 of each other."""
    _, glob, reference = data
    engine = Engine(":memory:")
    engine.build("t", source=glob, client=processes, group_by=["g"], sample=8_000)
    errors = {"parquet": [], "duckdb": []}
    for sql in QUERIES:
        for name, e in (("parquet", engine), ("duckdb", reference)):
            compared = e.compare(sql)
            errors[name] += list(compared.filter(like="rel. error").to_numpy().ravel())
    for name, values in errors.items():
        assert np.nanmax(values) < 0.05, (name, values)
    assert np.nanmedian(errors["parquet"]) < 3 * np.nanmedian(errors["duckdb"]) + 1e-3


def test_exact_answers_read_the_parquet_files_and_no_other_file(data, processes, tmp_path):
    """exact=True on the table built from Parquet files runs in DuckDB over those files: the answers
    equal DuckDB's over the frame; a table function naming another file is refused before DuckDB, and
    the connection itself may read no other file (allowed_paths, external access off, locked)."""
    frame, glob, reference = data
    engine = Engine(tmp_path / "s.duckdb")
    engine.build("t", source=glob, client=processes, group_by=["g"], sample=2_000)
    for sql in ["SELECT COUNT(*), SUM(x) FROM t WHERE x > 3", "SELECT g, AVG(k) FROM t GROUP BY g ORDER BY g"]:
        pd.testing.assert_frame_equal(engine.query(sql, exact=True), reference.con.execute(sql).df(), check_dtype=False)
    for sql in ["SELECT COUNT(*) FROM read_parquet('/etc/passwd')", "SELECT COUNT(*) FROM t, read_csv('/etc/hosts')"]:
        with pytest.raises(ValueError, match="table function"):
            engine.query(sql, exact=True)
    with pytest.raises(UnsupportedQuery, match="over Parquet files read one table"):
        engine.query("SELECT COUNT(*) FROM t JOIN u ON t.k = u.k", exact=True)
    con = _parquet_connection("t", engine.synopsis("t").source["files"])
    other = tmp_path / "other.parquet"
    frame.head(10).to_parquet(other)
    for sql in [f"SELECT COUNT(*) FROM read_parquet('{other}')", "SET enable_external_access = true",
                f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'"]:
        with pytest.raises((duckdb.PermissionException, duckdb.InvalidInputException)):
            con.execute(sql)
    engine.con.close()
    again = Engine(tmp_path / "s.duckdb", read_only=True)  # stored, reloaded, answered both ways
    assert again.query("SELECT COUNT(*) FROM t", exact=True).iloc[0, 0] == ROWS
    assert again.query("SELECT COUNT(*) FROM t").attrs["form"] == "totals"
    again.con.close()
    with duckdb.connect(str(tmp_path / "s.duckdb")) as con:  # a table of that name in the database
        con.execute("CREATE TABLE t AS SELECT 1.0 AS x")
    mixed = Engine(tmp_path / "s.duckdb", read_only=True)
    assert mixed.query("SELECT COUNT(*) FROM t", exact=True).iloc[0, 0] == 1  # the database's own table answers


def test_staleness_follows_the_files_and_refresh_reads_them_again(processes, tmp_path):
    """A file added, rewritten or removed makes the synopsis stale (the engine says which); refresh
    rebuilds from the files matched now, on the client given."""
    frame = table_frame(8_000, seed=3)
    glob = write_parts(frame, tmp_path / "t", parts=2)
    engine = Engine(":memory:", on_stale="error")
    engine.build("t", source=glob, client=processes, sample=1_000)
    assert engine.check("t") == ""
    table_frame(1_000, seed=4).to_parquet(tmp_path / "t" / "part-9.parquet")
    assert engine.check("t") == "files changed: 1 added, 0 removed"
    with pytest.raises(ValueError, match="stale"):
        engine.query("SELECT COUNT(*) FROM t")
    refreshed = engine.refresh("t", client=processes)
    assert refreshed.row_count == 9_000 and engine.check("t") == ""
    assert engine.query("SELECT COUNT(*) FROM t").iloc[0, 0] == 9_000
    table_frame(500, seed=5).to_parquet(tmp_path / "t" / "part-9.parquet")
    stamp = os.stat(tmp_path / "t" / "part-9.parquet")
    os.utime(tmp_path / "t" / "part-9.parquet", ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    assert engine.check("t").startswith("file changed: ")
    for path in (tmp_path / "t").iterdir():
        path.unlink()
    assert engine.check("t").startswith("files gone")


def test_a_dask_dataframe_builds_alike_but_cannot_be_checked_or_answered_exactly(data, threads):
    """From a dask DataFrame: the same totals as from the files; a new engine warns that the synopsis
    cannot be checked; exact answers and refresh say what to do instead."""
    frame, _, reference = data
    con = duckdb.connect(":memory:")
    engine = Engine(con)
    got = engine.build("t", source=dd.from_pandas(frame, npartitions=5), client=threads, sample=4_000)
    assert got.totals["k"] == reference.synopsis("t").totals["k"] and got.source == {"kind": "dask DataFrame"}
    with pytest.raises(ValueError, match="dask DataFrame, which DuckDB cannot read"):
        engine.query("SELECT COUNT(*) FROM t", exact=True)
    with pytest.raises(ValueError, match="build it again|engine.build"):
        engine.refresh("t")
    with pytest.warns(UncheckedSynopsisWarning, match="cannot check"):
        Engine(con).query("SELECT COUNT(*) FROM t")


def test_the_same_seed_and_partitions_draw_the_same_sample_on_any_cluster(data, processes, threads):
    """Bottom-k keys come from (seed, partition): two workers in processes and one in threads draw the
    same sample; another seed draws another."""
    _, glob, _ = data
    one = Engine(":memory:").build("t", source=glob, client=processes, sample=3_000, grid=0)
    two = Engine(":memory:").build("t", source=glob, client=threads, sample=3_000, grid=0)
    other = Engine(":memory:").build("t", source=glob, client=threads, sample=3_000, grid=0, seed=7)
    for column in one.sample:
        np.testing.assert_array_equal(one.sample[column], two.sample[column])
    assert not np.array_equal(one.sample["k"], other.sample["k"])


def test_a_build_that_fails_stores_nothing_and_bad_options_are_named(data, threads):
    """An infinite value in one partition fails the build naming the column; the synopsis stored
    before stays; unknown columns, a client without a source and a wrong source type are refused."""
    frame, _, _ = data
    engine = Engine(":memory:")
    before = engine.build("t", source=dd.from_pandas(frame, npartitions=3), client=threads, sample=1_000, grid=0)
    broken = frame.copy()
    broken.loc[ROWS - 3, "x"] = np.inf
    with pytest.raises(ValueError, match="column 'x' of table 't' holds 1 non-finite"):
        engine.build("t", source=dd.from_pandas(broken, npartitions=3), client=threads, sample=2_000)
    with pytest.warns(UncheckedSynopsisWarning):
        stored = Engine(engine.con).synopsis("t")
    assert stored.requested_sample == before.requested_sample == 1_000
    with pytest.raises(ValueError, match="no column 'nope'"):
        engine.build("t", ["nope"], source=dd.from_pandas(frame, npartitions=2), client=threads)
    with pytest.raises(ValueError, match="client= reads a source="):
        engine.build("t", client=threads)
    with pytest.raises(TypeError, match="Parquet files .* or a dask DataFrame"):
        engine.build("t", source=frame, client=threads)
    with pytest.raises(FileNotFoundError):
        engine.build("t", source="/nonexistent/*.parquet", client=threads)


def test_part_summaries_add_to_the_whole_tables_summary():
    """The scans and draws of parts add to those of the whole table: counts, totals, MIN, MAX,
    distinct values up to the cap (then None), the standard deviation and the groups; the bottom-k
    of parts merged is the bottom-k of their keys together."""
    frame = table_frame(5_000, seed=8)
    halves = [frame.iloc[:2_000], frame.iloc[2_000:]]
    whole = TableScan.of(frame, ["x", "k", "m"], ("g",), cap=100)
    added = TableScan.of(halves[0], ["x", "k", "m"], ("g",), 100) + TableScan.of(halves[1], ["x", "k", "m"], ("g",), 100)
    assert added.rows == whole.rows == 5_000 and added.groups.keys() == whole.groups.keys()
    for column in ("x", "k", "m"):
        a, w = added.columns[column].statistics(), whole.columns[column].statistics()
        assert a[:4] == w[:4] and a[4] == pytest.approx(w[4], rel=1e-12)
        x = frame[column].dropna()
        assert w[:2] == (x.min(), x.max()) and w[4] == pytest.approx(x.std(), rel=1e-12)
    assert added.columns["m"].statistics()[2] == 5 and added.columns["k"].statistics()[2] == 101  # over the cap
    assert ColumnScan.of(np.array([1.0, 2.5, np.nan]), 10).statistics()[3] is False
    quotas = {key: 50 for key in whole.groups}
    draws = [SampleDraw.of(part, k, ["x", "k"], ("g",), quotas, seed=0) for k, part in enumerate(halves)]
    merged = draws[0] + draws[1]
    for key in quotas:
        keys = np.concatenate([d.keys.get(key, np.zeros(0)) for d in draws])
        np.testing.assert_array_equal(np.sort(merged.keys[key]), np.sort(keys)[:50])


def test_a_build_reads_the_rows_three_times(data, threads, monkeypatch):
    """The scan, the sample with PLUGIN's first binning, and the gridded form: no separate binning
    pass when the first grids suffice (as they do for these columns)."""
    from parzen.distributed import synopsis as built

    passes: list[str] = []
    run = built._Passes.__call__

    def recorded(self, what, *args, **options):
        passes.append(what)
        return run(self, what, *args, **options)

    monkeypatch.setattr(built._Passes, "__call__", recorded)
    _, glob, _ = data
    Engine(":memory:").build("t", source=glob, client=threads, sample=2_000)
    assert passes == ["scanning", "sampling and binning", "gridding"]


def test_summaries_and_sketches_of_the_parts_answer_as_the_database_builds_do(data, processes):
    """VAR, MIN/MAX and COUNT(DISTINCT) without a numeric predicate, per group too, answer from the
    parts' merged summaries and sketches as from the table build's (exact parts: to round-off; the
    HLL sketches of the same values alike)."""
    _, glob, reference = data
    engine = Engine(":memory:")
    engine.build("t", source=glob, client=processes, group_by=["g"], sample=4_000)
    for sql in ["SELECT MIN(x), MAX(k), VAR_SAMP(x), COUNT(DISTINCT k) FROM t",
                "SELECT g, MAX(x), STDDEV(k) FROM t GROUP BY g"]:
        got, want = engine.query(sql), reference.query(sql)
        pd.testing.assert_frame_equal(got.sort_values(list(got.columns[:1])).reset_index(drop=True),
                                      want.sort_values(list(want.columns[:1])).reset_index(drop=True), rtol=1e-9)
