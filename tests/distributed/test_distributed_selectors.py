"""Selectors and KDE.fit on Dask collections: the binned answers equal the in-memory binned ones."""

import numpy as np
import pytest

from parzen import KDE
from parzen import bandwidth as bw

da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0, 1, 40_000), rng.normal(4, 0.5, 20_000)])
    return x, np.c_[x, 0.5 * x + rng.normal(size=x.size)]


def test_dask_collections_are_binned_like_arrays(processes, sample):
    x, X = sample
    with processes.as_current():  # the selectors find the current client, as dask-ml's estimators do
        got = bw.selection("plugin", da.from_array(x, chunks=7_000))
        H = bw.lscv_H(da.from_array(X, chunks=(9_000, 2)), tolerance=1e-3)
        kde = KDE().fit(da.from_array(x, chunks=7_000))
    want = bw.selection("plugin", x, method="binned")
    assert (got.method, got.grid_size, got.n) == ("binned", want.grid_size, x.size)
    assert got.value == pytest.approx(want.value, rel=1e-12)
    np.testing.assert_allclose(H, bw.lscv_H(X, method="binned", tolerance=1e-3), rtol=1e-8)
    points = np.linspace(-2.0, 6.0, 9)
    assert kde.method_ == "binned"
    np.testing.assert_allclose(kde.pdf(points), KDE(method="binned").fit(x).pdf(points), rtol=1e-10)


def test_exact_on_a_dask_collection_says_how_to_fix_it(threads, sample):
    with threads.as_current(), pytest.raises(ValueError, match="load it into memory"):
        bw.plugin(da.from_array(sample[0], chunks=10_000), method="exact")
