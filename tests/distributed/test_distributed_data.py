"""DaskData: Dask collections summarised on the workers equal ArrayChunks on the same rows."""

from __future__ import annotations

import subprocess
import sys
from functools import partial

import numpy as np
import pytest

pytest.importorskip("distributed")

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
import pandas as pd

from parzen.binned.grid import GridSpec
from parzen.binned.source import ArrayChunks, Moments, as_chunked, bin_chunk
from parzen.distributed import DaskData, dask_client
from parzen.distributed.tree import tree_sum

RTOL = 1e-12


def assert_moments_equal(got: Moments, want: Moments) -> None:
    assert (got.rows, got.null_rows) == (want.rows, want.null_rows)
    np.testing.assert_allclose(got.weight, want.weight, rtol=RTOL)
    np.testing.assert_array_equal(got.lows, want.lows)
    np.testing.assert_array_equal(got.highs, want.highs)
    np.testing.assert_allclose(got.mean, want.mean, rtol=RTOL, atol=RTOL * np.abs(want.mean).max())
    np.testing.assert_allclose(got.scatter, want.scatter, rtol=RTOL, atol=RTOL * np.abs(want.scatter).max())


def sample(n: int = 20_003, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * [1.0, 3.0][:d] + [5.0, -2.0][:d], rng.uniform(0.0, 2.0, size=n)


@pytest.mark.parametrize("weighted", [False, True])
def test_array_moments_and_counts_equal_array_chunks_on_two_processes(processes, weighted):
    X, w = sample()
    w = w if weighted else None
    data = DaskData(da.from_array(X, chunks=(1_777, 1)), None if w is None else da.from_array(w, chunks=3_000), client=processes)
    want = ArrayChunks(X, w)
    assert data.columns == ("x0", "x1")
    assert "12 blocks" in data.description  # ceil(20003 / 1777) row blocks, columns joined
    assert_moments_equal(data.reduce(Moments.of), want.reduce(Moments.of))
    spec = GridSpec(tuple(X.min(axis=0)), tuple(X.max(axis=0)), (64, 64))
    got, ref = data.reduce(partial(bin_chunk, spec=spec)), want.reduce(partial(bin_chunk, spec=spec))
    np.testing.assert_allclose(got.counts, ref.counts, rtol=RTOL, atol=RTOL * ref.counts.max())


def test_dataframe_nan_rows_are_nulls_as_the_parquet_reader_counts_them(processes, tmp_path):
    X, w = sample(5_000)
    frame = pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "w": w, "label": "a"})
    frame.loc[[3, 10, 4_000], "x"] = np.nan
    frame.loc[[10, 20], "y"] = np.nan
    frame.loc[[30], "w"] = np.nan
    frame.to_parquet(tmp_path / "part.parquet", row_group_size=700)
    complete = frame.dropna(subset=["x", "y", "w"])
    data = DaskData(dd.read_parquet(tmp_path / "part.parquet", split_row_groups=True), weights="w", columns=["x", "y"], client=processes)
    assert data.columns == ("x", "y")
    got = data.reduce(Moments.of)
    want = ArrayChunks(complete[["x", "y"]].to_numpy(), complete["w"].to_numpy()).reduce(Moments.of)
    assert got.null_rows == 5 and got.rows == len(complete)
    assert_moments_equal(got, Moments(want.rows, 5, want.weight, want.lows, want.highs, want.mean, want.scatter))


def test_a_series_and_a_frame_without_columns_use_every_numeric_column(threads):
    X, _ = sample(1_000, d=1)
    frame = dd.from_pandas(pd.DataFrame({"v": X[:, 0]}), npartitions=3)
    for data in (DaskData(frame["v"], client=threads), DaskData(frame, client=threads)):
        assert data.columns == ("v",)
        assert_moments_equal(data.reduce(Moments.of), ArrayChunks(X).reduce(Moments.of))


def test_a_1d_array_is_one_column(threads):
    x = sample(3_000, d=1)[0][:, 0]
    data = DaskData(da.from_array(x, chunks=500), columns=["x"], client=threads)
    assert data.columns == ("x",) and data.d == 1
    assert_moments_equal(data.reduce(Moments.of, what="moments of", progress=True), ArrayChunks(x).reduce(Moments.of))


def test_non_finite_values_raise_naming_the_column(threads):
    X, _ = sample(1_000)
    X[700, 1] = np.nan
    with pytest.raises(ValueError, match=r"column 'b' of the dask array holds non-finite"):
        DaskData(da.from_array(X, chunks=(300, 2)), columns=["a", "b"], client=threads).reduce(Moments.of)
    frame = pd.DataFrame({"x": X[:, 0]})
    frame.loc[5, "x"] = np.inf
    with pytest.raises(ValueError, match=r"column 'x' holds infinite values"):
        DaskData(dd.from_pandas(frame, npartitions=2), client=threads).reduce(Moments.of)


def test_negative_weights_raise(threads):
    X, w = sample(1_000)
    w[3] = -1.0
    with pytest.raises(ValueError, match="negative or non-finite weights"):
        DaskData(da.from_array(X, chunks=(300, 2)), w, client=threads).reduce(Moments.of)
    frame = dd.from_pandas(pd.DataFrame({"x": X[:, 0], "w": w}), npartitions=2)
    with pytest.raises(ValueError, match="column 'w' hold negative"):
        DaskData(frame, weights="w", client=threads).reduce(Moments.of)


def test_bad_inputs_raise_clear_errors():
    frame = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]}), npartitions=1)
    with pytest.raises(ValueError, match="no column 'z'"):
        DaskData(frame, columns=["z"])
    with pytest.raises(ValueError, match="column 's' is not numeric"):
        DaskData(frame)
    with pytest.raises(ValueError, match="name of its weight column"):
        DaskData(frame[["x"]], weights=np.ones(2))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        DaskData(da.zeros((4, 2, 2)))
    with pytest.raises(ValueError, match=r"one number per row \(4\)"):
        DaskData(da.zeros((4, 2)), np.ones(3))
    with pytest.raises(ValueError, match="3 column names for 2 columns"):
        DaskData(da.zeros((4, 2)), columns=["a", "b", "c"])
    with pytest.raises(TypeError, match="ArrayChunks"):
        DaskData(np.zeros(3))


def test_without_a_client_the_error_says_how_to_start_one():
    with pytest.raises(ValueError, match=r"no Dask client is running; start one: .*Client\(LocalCluster"):
        dask_client()
    with pytest.raises(ValueError, match="no Dask client is running"):
        DaskData(da.zeros(4)).reduce(Moments.of)


def test_as_chunked_takes_dask_collections_on_the_current_client(threads):
    X, _ = sample(2_000)
    data = as_chunked(da.from_array(X, chunks=(500, 2)))
    assert isinstance(data, DaskData)
    assert as_chunked(X) is None
    with threads.as_current():
        assert_moments_equal(data.reduce(Moments.of), ArrayChunks(X).reduce(Moments.of))


def test_as_chunked_does_not_import_dask():
    code = "import sys, numpy; from parzen.binned.source import as_chunked; assert as_chunked(numpy.zeros(3)) is None; assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_tree_sum_adds_in_groups_of_fan_in(threads):
    parts = threads.scatter(list(range(1, 101)))
    assert tree_sum(threads, parts, fan_in=3).result() == 5050
    with pytest.raises(ValueError, match="no partitions"):
        tree_sum(threads, [])
    with pytest.raises(ValueError, match="fan_in"):
        tree_sum(threads, parts, fan_in=1)


def test_without_dask_the_error_names_the_extra():
    code = (
        "import sys\nsys.modules['distributed'] = None\nimport parzen\n"
        "try:\n    import parzen.distributed\nexcept parzen.MissingExtraError as exc:\n    print(exc.package, exc.extra, exc)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.startswith("distributed dask ") and 'pip install "parzen[dask]"' in result.stdout
