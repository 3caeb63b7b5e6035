"""Selectors and KDE on data served in chunks: the in-memory binned result, from every kind.

Tolerance 1e-12 relative: the chunks' moments add up by Chan et al.'s update and their counts by
sums in another order, so only rounding differs from the in-memory computation on the same grid.
"""

from functools import partial

import numpy as np
import pandas as pd
import pytest

import parzen.bandwidth as bw
from parzen.binned import ArrayChunks, DuckDBData, GridSpec, ParquetData, linear_bin
from parzen.binned.chunked import QUANTILE_INTERVALS, binned_quantiles, checked_moments
from parzen.binned.source import bin_chunk

RTOL = 1e-12


def _sample(n=6000, d=2, seed=11):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=(n // 2, d)), rng.normal(3.0, 0.5, size=(n - n // 2, d))])
    return X @ np.triu(np.full((d, d), 0.4)) * [1.0, 30.0][:d] + [5.0, -1e3][:d]


def _parquet(tmp_path, X, files=3):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    bounds = np.linspace(0, len(X), files + 1).astype(int)
    for k in range(files):
        part = X[bounds[k]: bounds[k + 1]]
        pq.write_table(pa.table({f"c{a}": part[:, a] for a in range(X.shape[1])}), tmp_path / f"part-{k}.parquet",
                       row_group_size=700)
    return tmp_path / "part-*.parquet"


def _duckdb(tmp_path, X):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    path = tmp_path / "data.duckdb"
    frame = pd.DataFrame({f"c{a}": X[:, a] for a in range(X.shape[1])})
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
    return path


KINDS = ["array", "parquet", "duckdb"]


def _chunked(kind, tmp_path, X):
    columns = [f"c{a}" for a in range(X.shape[1])]
    if kind == "array":
        return ArrayChunks(X, chunk_rows=777, columns=columns)
    if kind == "parquet":
        return ParquetData(_parquet(tmp_path, X), columns, batch_rows=1000)
    return DuckDBData(_duckdb(tmp_path, X), "t", columns, batch_rows=1000)


@pytest.mark.parametrize("kind", KINDS)
def test_chunked_moments_and_counts_equal_one_pass(kind, tmp_path):
    X = _sample()
    data = _chunked(kind, tmp_path, X)
    moments = checked_moments(data)
    assert moments.rows == len(X)
    np.testing.assert_allclose(moments.covariance, np.cov(X.T), rtol=RTOL)
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), (41, 23))
    counts = data.reduce(partial(bin_chunk, spec=spec))
    np.testing.assert_allclose(counts.counts, linear_bin(X, spec, backend="numpy").counts, rtol=0,
                               atol=RTOL * len(X))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("grid_size", [None, 801])
def test_plugin_equals_the_in_memory_binned_plugin(kind, grid_size, tmp_path):
    x = _sample(d=1)
    want = bw.plugin_stages(x, method="binned", grid_size=grid_size)
    got = bw.plugin_stages(_chunked(kind, tmp_path, x), grid_size=grid_size, progress=True)
    assert (got.method, got.grid_size) == ("binned", want.grid_size)
    for name in ("h", "sigma", "g1", "psi6", "g2", "psi4"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=RTOL), name


def test_plugin_refines_the_grid_over_the_chunks_as_in_memory():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(size=5000), rng.normal(40.0, 0.05, size=5000)])  # steep: a second binning
    want = bw.plugin_stages(x, method="binned", tolerance=1e-5)
    got = bw.plugin_stages(ArrayChunks(x, chunk_rows=999), tolerance=1e-5)
    assert got.grid_size == want.grid_size
    assert got.h == pytest.approx(want.h, rel=RTOL)


def test_minim_scale_uses_quartiles_within_one_grid_spacing():
    x = _sample(n=20_001, d=1)
    data = ArrayChunks(x, chunk_rows=4096)
    moments = checked_moments(data)
    spacing = np.ptp(x) / QUANTILE_INTERVALS
    probs = [0.0, 0.1, 0.25, 0.5, 0.75, 0.999, 1.0]
    got = binned_quantiles(data, moments, probs)
    assert np.all(np.abs(got - np.percentile(x, np.multiply(probs, 100))) <= spacing)
    want = bw.plugin_stages(x, scale="minim", method="binned")
    chunked = bw.plugin_stages(data, scale="minim")
    # sigma = min(sd, IQR / 1.349): the IQR is within two spacings
    assert abs(chunked.sigma - want.sigma) <= 2 * spacing / 1.349
    assert chunked.h == pytest.approx(want.h, rel=1e-4)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["normal_scale", "scott"])
def test_rules_of_thumb_equal_the_in_memory_ones(kind, name, tmp_path):
    X = _sample()
    got = bw.select(name, _chunked(kind, tmp_path, X))
    np.testing.assert_allclose(got, bw.select(name, X), rtol=RTOL)


def test_weighted_rules_of_thumb_take_the_weights_column():
    X = _sample()
    w = np.random.default_rng(2).uniform(0.0, 3.0, len(X))
    for name in ("normal_scale", "scott"):
        np.testing.assert_allclose(bw.select(name, ArrayChunks(X, w, chunk_rows=500)), bw.select(name, X, weights=w),
                                   rtol=RTOL)
    got = bw.silverman(ArrayChunks(X[:, 0], w, chunk_rows=500))
    assert got == pytest.approx(bw.silverman(X[:, 0], weights=w), rel=1e-3)  # weighted quartiles, binned


def test_silverman_quartiles_are_binned_and_reported():
    x = _sample(d=1)
    got = bw.selection("silverman", ArrayChunks(x))
    assert (got.method, got.grid_size) == ("binned", (QUANTILE_INTERVALS + 1,))
    assert got.value == pytest.approx(bw.silverman(x), rel=2 * np.ptp(x) / QUANTILE_INTERVALS / 1.349 / np.std(x))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda data: bw.plugin(data, method="exact"), "method='exact' .* load it into memory .* method='binned'"),
        (lambda data: bw.plugin(ArrayChunks(np.c_[data.values, data.values])), "univariate"),
        (lambda data: bw.normal_scale(data, weights=np.ones(10)), "serve the weights as a column"),
        (lambda data: bw.plugin(ArrayChunks([1.0, 1.0, 1.0])), "'x0' of .* are constant"),
        (lambda data: bw.plugin(ArrayChunks([1.0])), "1 row"),
        (lambda data: bw.select("plugin", ArrayChunks(np.zeros((3, 2)) + [[0, 1], [1, 0], [2, 2]])), "univariate"),
    ],
)
def test_chunked_data_errors_say_how_to_fix(call, match):
    data = ArrayChunks(_sample(d=1), chunk_rows=1000)
    with pytest.raises(ValueError, match=match):
        call(data)


def test_selection_reports_the_method_and_logs_it(caplog):
    x = _sample(d=1)
    with caplog.at_level("INFO", logger="parzen.bandwidth"):
        exact = bw.selection("plugin", x[:100], backend="numpy")
        binned = bw.selection("plugin", x, backend="numpy")
        fixed = bw.selection("plugin", x, grid_size=501, backend="numpy")
    assert (exact.method, exact.grid_size, exact.n) == ("exact", None, 100)
    assert (binned.method, binned.tolerance, binned.n) == ("binned", 1e-4, len(x))
    assert binned.grid_size == (bw.plugin_stages(x, backend="numpy").grid_size,)
    assert (fixed.grid_size, fixed.tolerance) == ((501,), None)
    assert binned.value == bw.plugin(x, backend="numpy") and binned.seconds > 0
    assert "plugin: exact, n = 100" in caplog.text
    assert f"plugin: binned on a grid of {binned.grid_size[0]} nodes (tolerance 0.0001), n = {len(x)}" in caplog.text
    assert bw.selection("scott", x).method == "exact"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("bandwidth", "kernel", "grid_size"), [("auto", "gaussian", None), ("normal_scale", "epanechnikov", 101),
                                                                 (0.3, "gaussian", None)])
def test_kde_fit_equals_the_in_memory_binned_kde(kind, bandwidth, kernel, grid_size, tmp_path):
    from parzen import KDE

    X = _sample() / [1.0, 30.0]
    options = {"bandwidth": bandwidth, "kernel": kernel, "grid_size": grid_size, "tolerance": 1e-2}
    want = KDE(method="binned", **options).fit(X)
    got = KDE(**options).fit(_chunked(kind, tmp_path, X))
    assert (got.method_, got.grid_size_, got.n_samples_) == ("binned", want.grid_size_, len(X))
    np.testing.assert_allclose(got.H_, want.H_, rtol=RTOL)
    Q = _sample(n=500, seed=3) / [1.0, 30.0]
    np.testing.assert_allclose(got.pdf(Q), want.pdf(Q), rtol=1e-10, atol=1e-12 * want.pdf(Q).max())
    inside = want.pdf(Q) > 1e-3 * want.pdf(Q).max()
    np.testing.assert_allclose(got.score_samples(Q)[inside], want.score_samples(Q)[inside], rtol=0, atol=1e-10)
    _, values = got.grid(grid_size=(40, 30))
    np.testing.assert_allclose(values, want.grid(grid_size=(40, 30))[1], rtol=1e-10, atol=1e-14)


def test_kde_on_chunked_data_refuses_what_needs_the_rows():
    from parzen import KDE

    data = ArrayChunks(_sample(d=1))
    with pytest.raises(ValueError, match="method='exact' .* load it into memory"):
        KDE(method="exact").fit(data)
    with pytest.raises(ValueError, match="serve the weights as a column"):
        KDE().fit(data, weights=np.ones(3))
    kde = KDE().fit(data)
    assert kde.weights_ is None
    with pytest.raises(ValueError, match="does not keep; sample"):
        kde.sample(3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("d", [1, 2])
def test_lscv_h_equals_the_in_memory_binned_lscv_h(kind, d, tmp_path):
    X = _sample(n=3000, d=d)
    data = _chunked(kind, tmp_path, X)
    for grid_size in (None, 201):
        want = bw.selection("lscv_h", X, method="binned", grid_size=grid_size)
        got = bw.selection("lscv_h", data, grid_size=grid_size)
        assert (got.method, got.grid_size, got.tolerance) == ("binned", want.grid_size, want.tolerance)
        np.testing.assert_allclose(got.value, want.value, rtol=1e-10)
    assert bw.lscv_h_factor(data) == pytest.approx(bw.lscv_h_factor(X, method="binned"), rel=1e-10)


@pytest.mark.parametrize("kind", ["array", "parquet"])
@pytest.mark.parametrize("name", ["lscv_H", "lscv_diag"])
def test_lscv_matrices_equal_the_in_memory_binned_ones(kind, name, tmp_path):
    X = _sample(n=3000)
    got = bw.selection(name, _chunked(kind, tmp_path, X), tolerance=1e-3)
    want = bw.selection(name, X, method="binned", tolerance=1e-3)
    assert (got.method, got.grid_size) == ("binned", want.grid_size)
    np.testing.assert_allclose(got.value, want.value, rtol=1e-8)


def test_lscv_on_chunked_data_refuses_exact_and_weights():
    X = _sample(n=500)
    with pytest.raises(ValueError, match="method='exact' .* load it into memory"):
        bw.lscv_H(ArrayChunks(X), method="exact")
    with pytest.raises(ValueError, match="LSCV is defined for unweighted data"):
        bw.lscv_h(ArrayChunks(X, np.full(len(X), 2.0)))


class _PicklingChunks(ArrayChunks):
    """Chunks summarised as a cluster would: each summary function pickled and unpickled first."""

    def reduce(self, summarise, *, what="reading", progress=False):
        import pickle

        return super().reduce(pickle.loads(pickle.dumps(summarise)), what=what, progress=progress)


@pytest.mark.parametrize("call", [
    lambda data: bw.plugin(data.one, scale="minim"),
    lambda data: bw.normal_scale(data.two),
    lambda data: bw.lscv_h(data.two, grid_size=64),
    lambda data: bw.lscv_diag(data.two, tolerance=1e-3),
])
def test_every_summary_is_picklable_for_cluster_kinds(call):
    class Data:
        one = _PicklingChunks(_sample(n=2000, d=1), chunk_rows=500)
        two = _PicklingChunks(_sample(n=2000), chunk_rows=500)

    call(Data)


def test_kde_summaries_are_picklable_for_cluster_kinds():
    from parzen import KDE

    kde = KDE(bandwidth="silverman").fit(_PicklingChunks(_sample(n=2000, d=1), chunk_rows=500))
    assert kde.method_ == "binned"


def test_functions_that_need_the_rows_say_so():
    data = ArrayChunks(_sample(n=300, d=1))
    for call in (lambda: bw.lscv_h_objective(data, 0.5), lambda: bw.psi_functional(data, 4, 0.3)):
        with pytest.raises(ValueError, match="read in chunks, and this function needs its rows in memory"):
            call()
