"""Fast and streamed linear binning: every backend and every stream equals the float64 reference.

Tolerance: counts within 1e-12 relative of the largest count (float64 on every path; only the
order of the additions differs), 2e-6 for the gpu backend's float32 positions.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parzen.backends import available, resolve_backend
from parzen.binned import GridSpec, linear_bin

RTOL = 1e-12


def _assert_same_counts(got, want, rtol=RTOL):
    assert got.spec == want.spec
    scale = np.abs(want.counts).max()
    np.testing.assert_allclose(got.counts, want.counts, rtol=0, atol=rtol * scale)
    assert got.total == pytest.approx(want.total, rel=rtol)


def _data(d, n=3000, seed=0):
    """Weighted rows whose box is the grid's, with rows on its corners, faces and inner nodes."""
    rng = np.random.default_rng(seed + d)
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1)
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), [13, 9, 7, 6][:d])
    nodes = np.stack([spec.nodes(a)[rng.integers(0, spec.sizes[a], 50)] for a in range(d)], axis=1)
    corners = np.array([spec.lows, spec.highs])
    X = np.concatenate([X, nodes, corners])
    return X, rng.uniform(0.0, 3.0, len(X)), spec


BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(name not in available(), reason=f"no {name} backend"))
            for name in ("cpu", "gpu")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_backend_binning_equals_the_reference(backend, d):
    X, w, spec = _data(d)
    want = linear_bin(X, spec, w, backend="numpy")
    _assert_same_counts(linear_bin(X, spec, w, backend=backend), want)
    _assert_same_counts(resolve_backend(backend).linear_bin(X, spec), linear_bin(X, spec, backend="numpy"))


@pytest.mark.skipif("gpu" not in available(), reason="no gpu backend")
@pytest.mark.parametrize("d", [1, 2])
def test_gpu_float32_binning_is_close_and_keeps_face_points(d):
    X, w, spec = _data(d)
    got = resolve_backend("gpu").linear_bin(X, spec, w, dtype=np.float32)
    _assert_same_counts(got, linear_bin(X, spec, w, backend="numpy"), rtol=2e-6)


@pytest.mark.skipif("gpu" not in available(), reason="no gpu backend")
@pytest.mark.parametrize("weighted", [False, True])
def test_gpu_binning_in_many_streamed_chunks_equals_one_pass(weighted):
    from parzen.backends.gpu import GpuBackend, GpuTiles

    X, w, spec = _data(2, n=700)
    w = w if weighted else None
    streamed = GpuBackend(GpuTiles(stream_bytes=1024, replica_bytes=2048)).linear_bin(X, spec, w)  # 64 rows a chunk
    _assert_same_counts(streamed, linear_bin(X, spec, w, backend="numpy"))


def test_numba_binning_in_many_chunks_equals_one_pass(monkeypatch):
    pytest.importorskip("numba")
    from parzen.binned import _numba_binning

    X, w, spec = _data(3, n=20_000)
    monkeypatch.setattr(_numba_binning, "MIN_CHUNK_ROWS", 1000)
    assert len(_numba_binning.chunk_starts(len(X), int(np.prod(spec.sizes)))) > 2
    _assert_same_counts(linear_bin(X, spec, w, backend="cpu"), linear_bin(X, spec, w, backend="numpy"))


@pytest.mark.parametrize("backend", ["numpy", *BACKENDS])
@pytest.mark.parametrize("bad", [np.nan, 5.0, -1e-9])
def test_rows_outside_the_box_are_refused_by_every_backend(backend, bad):
    spec = GridSpec((0.0, 0.0), (1.0, 1.0), (5, 5))
    X = np.full((40_000, 2), 0.5)
    X[30_123, 1] = bad
    with pytest.raises(ValueError, match="row 30123 .* outside the grid's box"):
        linear_bin(X, spec, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_binning_checks_shapes(backend):
    spec = GridSpec((0.0,), (1.0,), (5,))
    with pytest.raises(ValueError, match="1 column"):
        linear_bin(np.zeros((3, 2)), spec, backend=backend)
    with pytest.raises(ValueError, match="one value per row"):
        linear_bin(np.zeros(3), spec, np.ones(4), backend=backend)


# --- streamed binning: Parquet datasets and DuckDB tables --------------------------------------

def _table(n=5000, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * [1.0, 3.0] + [0.0, 100.0]
    return X, rng.uniform(0.0, 2.0, n)


def _write_parquet(directory, X, w, files=3, row_group_size=400, nulls=None):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    columns = {"x": X[:, 0], "y": X[:, 1], "w": w}
    bounds = np.linspace(0, len(X), files + 1).astype(int)
    for k in range(files):
        part = slice(bounds[k], bounds[k + 1])
        arrays = {}
        for name, values in columns.items():
            mask = (nulls or {}).get(name, np.zeros(len(X), bool))[part]
            arrays[name] = pa.array(values[part], mask=mask)
        pq.write_table(pa.table(arrays), directory / f"part-{k}.parquet", row_group_size=row_group_size)
    return directory / "*.parquet"


@pytest.mark.parametrize("statistics", [True, False])
def test_parquet_in_batches_equals_one_pass(tmp_path, statistics, monkeypatch):
    from parzen.binned import stream

    X, w = _table()
    pattern = _write_parquet(tmp_path, X, w)
    if not statistics:  # the range then comes from a first pass over the batches
        monkeypatch.setattr(stream, "_parquet_statistics_range", lambda *args: (None, None))
    got = stream.bin_parquet(pattern, ["x", "y"], sizes=(33, 17), weights="w", batch_rows=250)
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), (33, 17))
    assert got.bins.spec == spec
    assert (got.rows, got.null_rows) == (len(X), 0)
    assert got.lows == tuple(X.min(axis=0)) and got.highs == tuple(X.max(axis=0))
    _assert_same_counts(got.bins, linear_bin(X, spec, w, backend="numpy"))


def test_parquet_with_a_given_grid_and_one_column(tmp_path):
    from parzen.binned.stream import bin_parquet

    X, w = _table()
    _write_parquet(tmp_path, X, w, files=1)
    spec = GridSpec((-10.0,), (10.0,), (41,))
    got = bin_parquet(tmp_path / "part-0.parquet", ["x"], spec=spec, batch_rows=1000, backend="numpy")
    _assert_same_counts(got.bins, linear_bin(X[:, 0], spec, backend="numpy"))
    assert bin_parquet(tmp_path, "x", spec=spec, progress=True).bins.total == pytest.approx(len(X), rel=1e-12)


def test_parquet_null_rows_are_skipped_and_counted(tmp_path):
    from parzen.binned.stream import bin_parquet

    X, w = _table()
    rng = np.random.default_rng(9)
    nulls = {"x": rng.uniform(size=len(X)) < 0.05, "w": rng.uniform(size=len(X)) < 0.05}
    nulls["w"][np.argmax(X[:, 1])] = True  # y's largest value is in a row that is not binned
    _write_parquet(tmp_path, X, w, nulls=nulls)
    kept = ~(nulls["x"] | nulls["w"])
    got = bin_parquet(tmp_path / "*.parquet", ["x", "y"], sizes=9, weights="w", batch_rows=300)
    assert (got.rows, got.null_rows) == (kept.sum(), (~kept).sum())
    unweighted = bin_parquet(tmp_path / "*.parquet", ["y"], sizes=9, batch_rows=300)
    assert (unweighted.rows, unweighted.null_rows) == (len(X), 0)
    spec = GridSpec.covering(X[kept].min(axis=0), X[kept].max(axis=0), 9)
    assert got.highs[1] < X[:, 1].max()
    _assert_same_counts(got.bins, linear_bin(X[kept], spec, w[kept], backend="numpy"))


def test_parquet_errors_name_the_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from parzen.binned.stream import bin_parquet

    pq.write_table(pa.table({"a": [1.0, np.inf, 2.0], "b": [1.0, 2.0, 3.0], "s": ["u", "v", "w"]}), tmp_path / "t.parquet")
    path = tmp_path / "t.parquet"
    with pytest.raises(ValueError, match=r"no column 'z' in the Parquet data; its columns: a, b, s"):
        bin_parquet(path, ["a", "z"], sizes=5)
    with pytest.raises(ValueError, match="'s' are not numeric"):
        bin_parquet(path, ["s"], sizes=5)
    with pytest.raises(ValueError, match="column 'a' holds non-finite values"):
        bin_parquet(path, ["b", "a"], sizes=5)
    with pytest.raises(ValueError, match="pass spec= .* or sizes="):
        bin_parquet(path, ["b"])
    with pytest.raises(ValueError, match="batch_rows must be a positive integer"):
        bin_parquet(path, ["b"], sizes=5, batch_rows=0)
    assert bin_parquet(path, "b", sizes=5).rows == 3  # one column by its name, not its letters
    with pytest.raises(FileNotFoundError, match="no Parquet file"):
        bin_parquet(tmp_path / "none-*.parquet", ["b"], sizes=5)


@pytest.fixture
def duck_table():
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    X, w = _table()
    rng = np.random.default_rng(4)
    null_y = rng.uniform(size=len(X)) < 0.03
    con = duckdb.connect()
    frame = pd.DataFrame({"id": np.arange(len(X)), "x": X[:, 0], "y": np.where(null_y, np.nan, X[:, 1]), "w": w})
    con.register("frame", frame)
    con.execute('CREATE TABLE "my data" AS SELECT id::INTEGER AS id, x AS "x ""col""", '
                "CASE WHEN isnan(y) THEN NULL ELSE y::REAL END AS y, w, 'a' AS label FROM frame")
    con.unregister("frame")
    y32 = X[:, 1].astype(np.float32).astype(np.float64)  # y is stored as REAL
    yield con, np.column_stack([X[:, 0], y32]), w, ~null_y
    con.close()


def test_duckdb_table_equals_the_reference(duck_table):
    from parzen.binned.stream import bin_duckdb

    con, X, w, kept = duck_table
    got = bin_duckdb(con, "my data", ['x "col"', "y"], sizes=(21, 15), weights="w", batch_rows=700)
    spec = GridSpec.covering(X[kept].min(axis=0), X[kept].max(axis=0), (21, 15))
    assert got.bins.spec == spec
    assert (got.rows, got.null_rows) == (kept.sum(), (~kept).sum())
    _assert_same_counts(got.bins, linear_bin(X[kept], spec, w[kept], backend="numpy"))
    one = bin_duckdb(con, "my data", "id", spec=GridSpec((0.0,), (5000.0,), (6,)))
    np.testing.assert_allclose(one.bins.counts, [500.5, 1000, 1000, 1000, 1000, 499.5], rtol=RTOL)  # ids 0..4999


def test_duckdb_database_file_is_opened_read_only(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    from parzen.binned.stream import bin_duckdb

    path = tmp_path / "db.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT i::DOUBLE / 10 AS v FROM range(101) r(i)")
    got = bin_duckdb(path, "t", ["v"], sizes=11, progress=True)
    assert got.bins.spec == GridSpec((0.0,), (10.0,), (11,))
    np.testing.assert_allclose(got.bins.counts, [5.5] + [10.0] * 9 + [5.5], rtol=RTOL)


@pytest.mark.parametrize(
    ("table", "columns", "message"),
    [
        ("my data", ["nope"], r"no column 'nope' in table 'my data'; its columns: id, x \"col\", y, w, label"),
        ("my data", ["label"], "'label' of 'my data' are not numeric"),
        ("my data", ["y", "y"], "columns repeat"),
        ("missing", ["y"], r"no table 'missing' in the database; its tables: my data"),
        # injection attempts: not names in the catalog, so never sent
        ('my data"; DROP TABLE "my data"; --', ["y"], "no table"),
        ("my data", ['y" FROM "my data"; DROP TABLE "my data"; --'], "no column"),
        ("my data", ["y), (SELECT 1"], "no column"),
        ("my data", ["x"], "no column 'x'"),
    ],
)
def test_duckdb_names_are_checked_against_the_catalog(duck_table, table, columns, message):
    from parzen.binned.stream import bin_duckdb

    con = duck_table[0]
    with pytest.raises(ValueError, match=message):
        bin_duckdb(con, table, columns, sizes=5)
    assert con.execute('SELECT COUNT(*) FROM "my data"').fetchall() == [(5000,)]


def test_duckdb_non_finite_values_and_negative_weights_name_the_column(duck_table):
    from parzen.binned.stream import bin_duckdb

    con = duck_table[0]
    con.execute("UPDATE \"my data\" SET w = -1 WHERE id = 4321")
    with pytest.raises(ValueError, match="column 'w' holds negative weights"):
        bin_duckdb(con, "my data", ["y"], weights="w", sizes=5, batch_rows=1000)
    con.execute("UPDATE \"my data\" SET y = 'inf' WHERE id = 17")
    with pytest.raises(ValueError, match="column 'y' holds 1 non-finite"):
        bin_duckdb(con, "my data", ["y"], sizes=5)
    assert con.execute("SELECT 1").fetchall() == [(1,)]  # the connection is free again


def test_missing_extras_are_named(monkeypatch):
    from parzen import _extras
    from parzen.binned import stream

    monkeypatch.setattr(_extras, "installed", lambda package: package != "pyarrow")
    with pytest.raises(_extras.MissingExtraError, match=r'parzen\[parquet\]'):
        stream.bin_parquet("x.parquet", ["a"], sizes=5)
    with pytest.raises(_extras.MissingExtraError, match=r'parzen\[aqp\]'):
        stream.bin_duckdb(None, "t", ["a"], sizes=5)


def test_parquet_statistics_give_the_range_only_without_nulls(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ds = pytest.importorskip("pyarrow.dataset")
    from parzen.binned.stream import _parquet_statistics_range

    pq.write_table(pa.table({"x": [1.0, 5.0, 3.0, -2.0], "y": pa.array([1, 2, None, 4])}), tmp_path / "a.parquet",
                   row_group_size=2)
    dataset = ds.dataset(tmp_path, format="parquet")
    lows, highs = _parquet_statistics_range(dataset, ["x"], 1)
    assert (lows.tolist(), highs.tolist()) == ([-2.0], [5.0])
    assert _parquet_statistics_range(dataset, ["x", "y"], 1) == (None, None)


def test_small_batches_are_regrouped():
    pa = pytest.importorskip("pyarrow")
    from parzen.binned.stream import _regrouped

    batches = [pa.record_batch({"a": np.arange(k, k + 3.0)}) for k in range(0, 30, 3)]
    sizes = [b.num_rows for b in _regrouped(batches, 7)]
    assert sizes == [9, 9, 9, 3]
    joined = np.concatenate([b.column(0).to_numpy() for b in _regrouped(batches, 7)])
    np.testing.assert_array_equal(joined, np.arange(30.0))


@pytest.mark.skipif("cpu" not in available(), reason="no cpu backend")
@settings(max_examples=60, deadline=None)
@given(data=st.data(), d=st.integers(1, 4), n=st.integers(1, 60))
def test_numba_binning_equals_the_reference_on_any_data(data, d, n):
    values = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)
    X = np.array(data.draw(st.lists(st.tuples(*[values] * d), min_size=n, max_size=n)))
    w = np.array(data.draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n)))
    sizes = data.draw(st.tuples(*[st.integers(2, 7)] * d))
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), sizes)
    want = linear_bin(X, spec, w, backend="numpy")
    got = linear_bin(X, spec, w, backend="cpu")
    np.testing.assert_allclose(got.counts, want.counts, rtol=0, atol=RTOL * max(want.total, 1e-300))


def test_parquet_read_ahead_keeps_order_reports_errors_and_gives_back_the_threads(tmp_path):
    import numba

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from parzen.binned import ParquetData

    values = np.arange(1000.0)
    pq.write_table(pa.table({"x": values}), tmp_path / "a.parquet", row_group_size=100)
    threads = numba.get_num_threads()
    seen_threads = []

    def first_values(chunk):
        seen_threads.append(numba.get_num_threads())
        return [float(chunk.values[0, 0])]

    data = ParquetData(tmp_path / "a.parquet", "x", batch_rows=100)
    assert data.reduce(first_values) == values[::100].tolist()  # the batches in order, none lost
    assert set(seen_threads) == {max(1, threads - 1)}  # a core left to the reader meanwhile
    assert numba.get_num_threads() == threads
    bad = values.copy()
    bad[950] = np.nan  # in the last batch, read on the second thread
    pq.write_table(pa.table({"x": bad}), tmp_path / "a.parquet", row_group_size=100)
    with pytest.raises(ValueError, match="column 'x' holds non-finite values"):
        ParquetData(tmp_path / "a.parquet", "x", batch_rows=100).reduce(first_values)
    assert numba.get_num_threads() == threads
