"""The kernel distribution function (KDE.cdf), its quantiles and its plug-in bandwidth, against
R's ks 1.14 (tests/refdata/kcde_reference.json, made by tests/refdata/kcde_reference.R)."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from parzen import KDE
from parzen import bandwidth as bw
from parzen.bandwidth.distribution import plugin_cdf
from parzen.binned.source import ArrayChunks
from parzen.datasets import load

REFERENCE = json.loads((Path(__file__).parent / "refdata" / "kcde_reference.json").read_text())
COLUMNS = [(name, column) for name in ("faithful", "quakes") for column in REFERENCE[name]]


@pytest.mark.parametrize(("name", "column"), COLUMNS)
def test_plugin_cdf_is_ks_hpi_kcde(name, column):
    """Exact: ks::hpi.kcde(x, binned = FALSE) to 1e-10 (measured 4e-15); binned within 1e-4
    (measured 3.2e-5 on quakes.depth)."""
    x = load(name)[column].to_numpy(dtype=np.float64)
    ref = REFERENCE[name][column]
    assert plugin_cdf(x, method="exact", backend="numpy") == pytest.approx(ref["h"], rel=1e-10)
    assert plugin_cdf(x, method="binned") == pytest.approx(ref["h"], rel=1e-4)
    assert plugin_cdf(x, method="binned") == pytest.approx(ref["h_binned"], rel=1e-3)  # ks's own binning
    assert KDE().fit(x).quantile(0.5) == pytest.approx(KDE(cdf_bandwidth=plugin_cdf(x)).fit(x).quantile(0.5))


@pytest.mark.parametrize(("name", "column"), COLUMNS)
def test_cdf_is_the_kernel_distribution_function(name, column):
    """F(q) = mean(pnorm((q - x) / h)) from R to 1e-12; ks::kcde's grid value within 0.01 (a left
    Riemann sum of the density on 401 nodes)."""
    x = load(name)[column].to_numpy(dtype=np.float64)
    ref = REFERENCE[name][column]
    kde = KDE(cdf_bandwidth=ref["h"]).fit(x)
    np.testing.assert_allclose(kde.cdf(ref["points"]), ref["cdf"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(kde.cdf(ref["points"]), ref["kcde"], rtol=0, atol=0.01)
    assert kde.cdf_bandwidth_ == ref["h"]


def test_auto_cdf_bandwidth_is_plugin_cdf_and_is_chosen_again_at_each_fit():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=500), rng.normal(5.0, 3.0, size=400)
    kde = KDE().fit(x)
    kde.cdf([0.0])
    assert kde.cdf_bandwidth_ == plugin_cdf(x)
    kde.fit(y)
    kde.cdf([0.0])
    assert kde.cdf_bandwidth_ == plugin_cdf(y)
    dens = KDE(cdf_bandwidth="density").fit(y)
    dens.cdf([1.0])
    assert dens.cdf_bandwidth_ == dens.bandwidth_


def test_cdf_derivative_is_the_density():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(-2, 0.5, 300), rng.normal(1, 1.0, 300)])
    kde = KDE(bandwidth=0.3, cdf_bandwidth="density").fit(x)
    q = np.linspace(-4, 4, 17)
    step = 1e-5
    np.testing.assert_allclose((kde.cdf(q + step) - kde.cdf(q - step)) / (2 * step), kde.pdf(q), rtol=1e-6, atol=1e-9)
    # Far right every row's Phi is 1, so F is the sum of the weights 1/n: one within the few ulps
    # that the BLAS's summation order leaves (0.9999999999999994 with OpenBLAS 0.3.31).
    assert kde.cdf([-60.0])[0] == 0.0 and abs(kde.cdf([60.0])[0] - 1.0) <= 4 * np.finfo(float).eps


def test_cdf_in_two_dimensions_and_weighted_chunks():
    """Diagonal H: the weighted product of normal CDFs, over more pairs than one chunk holds."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 2))
    w = rng.random(3000)
    Q = rng.normal(size=(700, 2))  # 2.1e6 pairs: three chunks
    kde = KDE(bandwidth=[0.3, 0.5]).fit(X, weights=w)
    ref = np.array([np.sum(w * stats.norm.cdf((q[0] - X[:, 0]) / 0.3) * stats.norm.cdf((q[1] - X[:, 1]) / 0.5))
                    for q in Q]) / w.sum()
    np.testing.assert_allclose(kde.cdf(Q), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(kde.cdf_bandwidth_, [0.3, 0.5])


def test_quantile_inverts_the_cdf():
    rng = np.random.default_rng(4)
    x = rng.lognormal(size=800)
    kde = KDE().fit(x)
    p = np.array([[1e-6, 0.01, 0.25], [0.5, 0.9, 1 - 1e-9]])
    q = kde.quantile(p)
    assert q.shape == p.shape and np.all(np.diff(q.ravel()) > 0)
    np.testing.assert_allclose(kde.cdf(q.ravel()), p.ravel(), rtol=1e-9, atol=1e-13)
    assert kde.quantile(0.0) == -np.inf and kde.quantile(1.0) == np.inf
    assert isinstance(kde.quantile(0.5), float)


def test_cdf_and_quantile_errors():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(100, 2))
    with pytest.raises(ValueError, match="needs a diagonal bandwidth matrix"):
        KDE(bandwidth=[[1.0, 0.3], [0.3, 1.0]]).fit(X).cdf(X[:3])
    with pytest.raises(ValueError, match="quantile\\(\\) is for 1-D data"):
        KDE(bandwidth=[0.5, 0.5]).fit(X).quantile(0.5)
    with pytest.raises(ValueError, match="p must hold probabilities in \\[0, 1\\]"):
        KDE().fit(X[:, 0]).quantile([0.5, 1.5])
    with pytest.raises(ValueError, match="Gaussian kernel"):
        KDE(kernel="epanechnikov").fit(X[:, 0]).cdf([0.0])
    with pytest.raises(ValueError, match="unknown cdf_bandwidth 'plugin'; choose one of 'auto', 'density'"):
        KDE(cdf_bandwidth="plugin").fit(X[:, 0]).cdf([0.0])
    with pytest.raises(ValueError, match="not fitted"):
        KDE().cdf([0.0])
    with pytest.raises(ValueError, match="read in chunks"):
        KDE(bandwidth=0.5).fit(ArrayChunks(X[:, :1])).cdf([0.0])
    with pytest.raises(ValueError, match="univariate"):
        bw.plugin_cdf(X)


@pytest.mark.parametrize("boundary", [None, (0.0, None)])
def test_binned_cdf_is_within_tolerance_of_the_exact_one(boundary):
    """method_ "binned": F from the counts on a grid of spacing h sqrt(tolerance / 0.0302), within
    ``tolerance`` (absolute) of the sum over every row, and so are its quantiles' probabilities."""
    rng = np.random.default_rng(8)
    x = rng.gamma(2.0, size=60_000)
    w = rng.random(60_000)
    q = np.linspace(0.0, 12.0, 301)
    binned = KDE(bandwidth=0.3, method="binned", boundary=boundary, tolerance=1e-5).fit(x, weights=w)
    exact = KDE(bandwidth=0.3, method="exact", boundary=boundary).fit(x, weights=w)
    assert binned._cdf_support(np.array([binned.bandwidth_]))[0].shape[0] < 30_000  # summed over the nodes
    np.testing.assert_allclose(binned.cdf(q), exact.cdf(q), rtol=0, atol=1e-5)
    p = np.array([0.01, 0.5, 0.99])
    np.testing.assert_allclose(exact.cdf(binned.quantile(p)), p, rtol=0, atol=1e-5)
