"""DATE and TIMESTAMP columns in builds from Parquet files and dask DataFrames (issue 19; parzen.aqp.dates,
parzen.aqp.partitions): modelled as days since 1970-01-01 as a DuckDB table's are, with the same exact
parts, typed answers, date predicates, and refresh after a file is added."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pa = pytest.importorskip("pyarrow")

from parzen.aqp import Engine, SynopsisRebuiltWarning
from parzen.aqp.partitions import frame_types, numeric_values

ROWS = 20_000
TEMPORAL = {"d": "date", "ts": "timestamp", "tz": "timestamp"}


def dated_frame(rows: int = ROWS, seed: int = 3, start: str = "2020-01-01") -> pd.DataFrame:
    """x: gamma; d: dates over two years (NULL every 50th row); ts: timestamps with microseconds;
    tz: the same instants with a time zone (+02:00); g: two groups."""
    rng = np.random.default_rng(seed)
    day0 = np.datetime64(start, "D")
    d = day0 + rng.integers(0, 730, rows).astype("timedelta64[D]")
    ts = d.astype("datetime64[us]") + rng.integers(0, 86_400_000_000, rows).astype("timedelta64[us]")
    frame = pd.DataFrame({
        "x": rng.gamma(2.0, 3.0, rows),
        "d": pd.array(pa.array(d.astype(object), type=pa.date32()), dtype=pd.ArrowDtype(pa.date32())),
        "ts": pd.Series(ts), "tz": pd.Series(ts).dt.tz_localize("UTC").dt.tz_convert("Etc/GMT-2"),
        "g": rng.choice(["a", "b"], rows, p=[0.7, 0.3]),
    })
    frame.loc[::50, "d"] = pd.NA
    return frame


def write_parts(frame: pd.DataFrame, folder, parts: int = 3, first: int = 0) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(frame) // parts)
    for k in range(parts):
        frame.iloc[k * size: (k + 1) * size].to_parquet(folder / f"part-{first + k}.parquet")
    return str(folder / "*.parquet")


def _reference(glob: str):
    con = duckdb.connect(":memory:")
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{glob}')")
    return con


def test_frame_types_and_values_of_dates_and_timestamps_are_duckdbs():
    """Arrow dates, pandas and Arrow timestamps (with and without a time zone) are DATE / TIMESTAMP,
    read as DuckDB's days: (d - 1970-01-01) and epoch_us / 86 400 000 000, NULL as NaN."""
    frame = dated_frame(rows=500)
    frame["ats"] = pd.array(pa.array(frame["ts"].to_numpy(), type=pa.timestamp("ns")), dtype=pd.ArrowDtype(
        pa.timestamp("ns")))
    frame["d64"] = pd.array(pa.array(frame["d"].array).cast(pa.date64()), dtype=pd.ArrowDtype(pa.date64()))
    types = frame_types(frame.dtypes)
    assert [types[c] for c in ("d", "ts", "tz", "ats", "d64", "g")] == \
        ["DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP", "DATE", "VARCHAR"]
    con = duckdb.connect()
    con.register("frame", frame[["d", "ts", "tz", "ats"]])
    want = con.execute("SELECT CAST((d - DATE '1970-01-01') AS DOUBLE), epoch_us(ts) / 86400000000.0, "
                       "epoch_us(tz) / 86400000000.0, epoch_us(ats) / 86400000000.0 FROM frame").fetchnumpy()
    for k, c in enumerate(("d", "ts", "tz", "ats")):
        expected = np.ma.filled(np.ma.asarray(list(want.values())[k], dtype=float), np.nan)
        np.testing.assert_array_equal(numeric_values(frame, c), expected, err_msg=c)
    np.testing.assert_array_equal(numeric_values(frame, "d64"), numeric_values(frame, "d"))
    assert np.isnan(numeric_values(frame, "d")[::50]).all()


def test_a_parquet_build_models_dates_as_the_database_build_does(tmp_path, threads):
    """Temporal kinds, totals, MIN / MAX and the grids' exact C(t) equal the build from DuckDB of the
    same files; date predicates fold and answer near DuckDB's exact answers; MIN of a date is a date."""
    glob = write_parts(dated_frame(), tmp_path / "t")
    engine = Engine(":memory:")
    got = engine.build("t", source=glob, client=threads, columns=["x", "d", "ts", "tz"], sample=4_000)
    reference = _reference(glob)
    want = Engine(reference).build("t", columns=["x", "d", "ts", "tz"], sample=4_000)
    assert got.temporal == want.temporal == TEMPORAL
    for c, (count, total) in want.totals.items():
        assert got.totals[c][0] == count and got.totals[c][1] == pytest.approx(total, rel=1e-12), c
    for c, model in want.models.items():
        mine = got.models[c]
        assert (mine.kind, mine.integer, mine.minimum, mine.maximum) == \
            (model.kind, model.integer, model.minimum, model.maximum), c
    days = {"d": "CAST((d - DATE '1970-01-01') AS DOUBLE)", "ts": "epoch_us(ts) / 86400000000.0"}
    for c, read in days.items():  # the points hold sample quantiles (the samples differ); C(t) is exact
        grid = got.grids[c]
        for k in range(0, grid.points.size, 97):
            below = reference.execute(f"SELECT COUNT(*) FROM t WHERE {read} <= ?", [float(grid.points[k])]).fetchall()
            assert grid.count[k] == below[0][0], (c, k)
    for sql in ["SELECT COUNT(*) FROM t WHERE d BETWEEN DATE '2020-03-01' AND DATE '2020-06-30'",
                "SELECT COUNT(*), SUM(x) FROM t WHERE ts >= TIMESTAMP '2021-01-01 12:00:00' AND x < 5",
                "SELECT COUNT(*) FROM t WHERE d >= DATE '2020-02-01' + INTERVAL 3 MONTH AND tz < '2021-06-01'"]:
        approx = engine.query(sql).iloc[0].to_numpy(float)
        exact = np.array(reference.execute(sql).fetchall()[0], dtype=float)
        np.testing.assert_allclose(approx, exact, rtol=0.05, err_msg=sql)
    low = engine.query("SELECT MIN(d) AS low FROM t")["low"].iloc[0]
    assert pd.Timestamp(low).date() == reference.execute("SELECT MIN(d) FROM t").fetchall()[0][0]


def test_a_dask_dataframe_of_pandas_datetimes_models_them(threads):
    """pandas datetime64 columns (naive and with a time zone) of a dask DataFrame are timestamps."""
    frame = dated_frame(rows=6_000).drop(columns=["d"])
    engine = Engine(":memory:")
    got = engine.build("t", source=dd.from_pandas(frame, npartitions=3), client=threads, sample=2_000)
    assert got.temporal == {"ts": "timestamp", "tz": "timestamp"}
    con = duckdb.connect()
    con.register("frame", frame)
    count, total = con.execute("SELECT COUNT(ts), SUM(epoch_us(ts) / 86400000000.0) FROM frame").fetchall()[0]
    assert got.totals["ts"][0] == count and got.totals["ts"][1] == pytest.approx(total, rel=1e-12)
    assert got.totals["tz"] == got.totals["ts"]  # the same instants


def test_refresh_reads_an_added_files_dates_as_the_build_does(tmp_path, threads):
    folder = tmp_path / "t"
    glob = write_parts(dated_frame(), folder)
    engine = Engine(":memory:")
    engine.build("t", source=glob, client=threads, columns=["x", "d", "ts"], sample=2_000, grid=256)
    write_parts(dated_frame(rows=300, seed=8, start="2022-01-01"), folder, parts=1, first=9)  # beyond the old dates
    with _no_rebuild():
        refreshed = engine.refresh("t")
    assert refreshed.refreshed.startswith("300 appended rows added")
    reference = _reference(glob)
    count, total, high = reference.execute(
        "SELECT COUNT(d), SUM(CAST((d - DATE '1970-01-01') AS DOUBLE)), MAX(d) FROM t").fetchall()[0]
    assert refreshed.totals["d"][0] == count and refreshed.totals["d"][1] == pytest.approx(total, rel=1e-12)
    assert refreshed.models["d"].maximum == (high - dt.date(1970, 1, 1)).days
    grid = refreshed.grids["d"]
    for k in range(0, grid.points.size, 17):
        below = reference.execute("SELECT COUNT(*) FROM t WHERE CAST((d - DATE '1970-01-01') AS DOUBLE) <= ?",
                                  [float(grid.points[k])]).fetchall()[0][0]
        assert grid.count[k] == below


class _no_rebuild:
    """Turn a SynopsisRebuiltWarning into an error inside the block."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error", SynopsisRebuiltWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)
