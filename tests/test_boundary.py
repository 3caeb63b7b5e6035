"""Reflection at the edges of a bounded variable: KDE(boundary=(low, high))."""

import numpy as np
import pytest
from scipy import integrate, stats

from parzen import KDE
from parzen.binned.source import ArrayChunks

RNG = np.random.default_rng(11)
EXPONENTIAL = RNG.exponential(size=400)
BETA = RNG.beta(2.0, 5.0, size=500)
BOUNDS = [(0.0, None), (None, 1.0), (0.0, 1.0)]


def reflected_sum(x, h, low, high, q):
    """The explicit reflected sum: each kernel plus its mirror images in the finite edges."""
    centres = [x] + ([2 * low - x] if low is not None else []) + ([2 * high - x] if high is not None else [])
    total = sum(stats.norm.pdf((q[:, None] - c[None, :]) / h).mean(axis=1) / h for c in centres)
    inside = (q >= (low if low is not None else -np.inf)) & (q <= (high if high is not None else np.inf))
    return np.where(inside, total, 0.0)


@pytest.mark.parametrize("boundary", BOUNDS)
@pytest.mark.parametrize("method", ["exact", "binned"])
def test_density_is_the_reflected_sum(boundary, method):
    x = BETA
    kde = KDE(bandwidth=0.05, boundary=boundary, method=method).fit(x)
    q = np.linspace(-0.2, 1.2, 141)
    expected = reflected_sum(x, 0.05, *boundary, q)
    if method == "binned":  # within tolerance 1e-4 where the density is at least 1e-3 of its maximum
        q, expected = q[expected >= 1e-3 * expected.max()], expected[expected >= 1e-3 * expected.max()]
    rtol = 1e-4 if method == "binned" else 1e-12
    np.testing.assert_allclose(kde.pdf(q), expected, rtol=rtol, atol=1e-300)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(kde.score_samples(q), np.log(expected), rtol=0, atol=rtol)  # log: absolute


@pytest.mark.parametrize(("x", "boundary"), [(EXPONENTIAL, (0.0, None)), (BETA, (0.0, 1.0)), (1.0 - BETA, (None, 1.0))])
def test_density_integrates_to_one_over_the_bounds(x, boundary):
    kde = KDE(boundary=boundary).fit(x)
    low = boundary[0] if boundary[0] is not None else -np.inf
    high = boundary[1] if boundary[1] is not None else np.inf
    mass, _ = integrate.quad(lambda t: kde.pdf([t])[0], low, high, limit=200, epsabs=1e-11)
    assert mass == pytest.approx(1.0, abs=1e-8)
    assert kde.pdf([low - 1e-9 if np.isfinite(low) else high + 1e-9])[0] == 0.0


@pytest.mark.parametrize("boundary", BOUNDS)
def test_cdf_quantile_and_sample_are_the_reflected_estimates(boundary):
    x = BETA if boundary != (None, 1.0) else BETA - 0.5
    kde = KDE(boundary=boundary, cdf_bandwidth="density").fit(x)
    low = boundary[0] if boundary[0] is not None else -np.inf
    q = np.linspace(max(low, x.min() - 0.3), min(boundary[1] or np.inf, x.max() + 0.3), 9)
    mass = np.array([integrate.quad(lambda t: kde.pdf([t])[0], q[0], b, epsabs=1e-12)[0] for b in q])
    np.testing.assert_allclose(kde.cdf(q) - kde.cdf(q[:1]), mass, atol=1e-9)
    if boundary[0] is not None:
        assert kde.cdf([boundary[0]])[0] == 0.0 and kde.cdf([boundary[0] - 1.0])[0] == 0.0
    if boundary[1] is not None:
        assert kde.cdf([boundary[1]])[0] == pytest.approx(1.0, abs=1e-12) == kde.cdf([boundary[1] + 1.0])[0]
    p = np.array([0.001, 0.1, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(kde.cdf(kde.quantile(p)), p, atol=1e-12)
    assert kde.quantile(0.0) == (boundary[0] if boundary[0] is not None else -np.inf)
    draws = kde.sample(4000, seed=3)[:, 0]
    assert np.all(kde.pdf(draws) > 0)
    assert stats.kstest(draws, kde.cdf).pvalue > 0.01


def test_boundary_errors():
    with pytest.raises(ValueError, match=r"2 value\(s\) of X lie outside boundary=\(0, 1\), first 1.5 in row 1"):
        KDE(boundary=(0.0, 1.0)).fit([0.5, 1.5, 0.2, -0.1])
    with pytest.raises(ValueError, match="boundary must be None or a pair"):
        KDE(boundary=0.0).fit(BETA)
    with pytest.raises(ValueError, match="boundary must have low < high"):
        KDE(boundary=(1.0, 0.0)).fit(BETA)
    with pytest.raises(ValueError, match="boundary must hold numbers or None"):
        KDE(boundary=("a", None)).fit(BETA)
    with pytest.raises(ValueError, match="reflects 1-D data; these data have 2 columns"):
        KDE(boundary=(0.0, None)).fit(np.c_[BETA, BETA])
    with pytest.raises(ValueError, match="boundary= needs the rows in memory"):
        KDE(boundary=(0.0, None), bandwidth=0.1).fit(ArrayChunks(BETA[:, None]))
    with pytest.raises(ValueError, match="with boundary= evaluate pdf"):
        KDE(boundary=(0.0, None)).fit(BETA).grid()
