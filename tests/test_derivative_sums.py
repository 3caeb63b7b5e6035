"""parzen.binned.derivative_sums: the binned Psi_alpha(g) refuses what it cannot compute rightly (multi-indices
of different orders share one normalisation g^-(d + |alpha|); a negative index would read another entry of the
table; g <= 0), naming what is wrong, and gives the exact functional's value on what it takes."""

import numpy as np
import pytest

from parzen.backends.cpu import CpuBackend
from parzen.bandwidth import functionals as F
from parzen.binned.derivative_sums import BinnedDerivativeSums, DerivativeCounts
from parzen.binned.grid import GridSpec


@pytest.fixture(scope="module")
def sums():
    Y = np.random.default_rng(0).normal(size=(400, 2))
    spec = GridSpec.covering(Y.min(axis=0) - 1e-9, Y.max(axis=0) + 1e-9, (96, 96))
    return Y, BinnedDerivativeSums(DerivativeCounts.of(Y, spec), len(Y))


def test_each_order_alone_is_the_exact_functional(sums):
    Y, binned = sums
    for order in (4, 6):
        alphas = F.multi_indices(2, order)
        np.testing.assert_allclose(binned.psi(0.6, alphas), F.psi_hat(CpuBackend(), Y, 0.6, alphas), rtol=2e-3)


@pytest.mark.parametrize(("alphas", "g", "message"), [
    (np.vstack([F.multi_indices(2, 4), F.multi_indices(2, 6)]), 0.6, "one order.*4, 6"),
    (np.array([[-2, 6]]), 0.6, "non-negative"),
    (F.multi_indices(2, 4), 0.0, "g must be a positive finite number"),
    (F.multi_indices(2, 4), np.nan, "g must be a positive finite number"),
    (np.array([[4, 0, 0]]), 0.6, "2 entries"),
])
def test_bad_multi_indices_and_scales_are_refused(sums, alphas, g, message):
    with pytest.raises(ValueError, match=message):
        sums[1].psi(g, alphas)


def test_the_gaussian_double_sum_is_the_exact_pair_mean_and_refuses_a_covariance_that_is_none(sums):
    from parzen.bandwidth.scv import gaussian_pair_mean

    Y, binned = sums
    sigma = np.array([[0.5, 0.1], [0.1, 0.3]])
    assert binned.gaussian_double_sum(sigma) == pytest.approx(gaussian_pair_mean(CpuBackend(), Y, sigma), rel=2e-3)
    for bad in (np.array([[-0.5, 0.0], [0.0, -0.3]]), np.array([[0.5, 0.6], [0.6, 0.5]]), np.eye(3)):
        with pytest.raises(ValueError, match="sigma must be a symmetric positive definite 2 x 2 matrix"):
            binned.gaussian_double_sum(bad)
