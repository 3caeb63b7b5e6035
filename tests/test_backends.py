"""Backend primitives: the reference against brute-force double loops, and every other
backend against the reference (one suite, parametrised over ``backends.available()``)."""

import numpy as np
import pytest

from parzen import backends
from parzen.backends import reference
from parzen.kernels import KERNELS, gauss_derivative

OTHER_BACKENDS = [b for b in backends.available() if b != "numpy"]
SIZES = (2, 7, 33, 64)  # below, at and across the (patched) tile size


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 8 so that small inputs cross tile edges and diagonal tiles."""
    monkeypatch.setattr(reference, "TILE", 8)


def _pairs(n):
    return np.triu_indices(n, 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("order", [4, 6])
def test_reference_pair_sum_1d_is_the_double_sum(small_tiles, n, order):
    x = np.random.default_rng(n).normal(size=n)
    scales = np.array([0.3, 1.0, 2.5])
    i, j = _pairs(n)
    expected = [gauss_derivative(order, (x[i] - x[j]) / g).sum() for g in scales]
    np.testing.assert_allclose(reference.pair_sum_1d(x, f"gauss_d{order}", scales), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("d", [1, 3, 16])
def test_reference_pair_sum_sq_is_the_double_sum(small_tiles, n, d):
    Y = np.random.default_rng(n + d).normal(size=(n, d)) + 5.0  # an offset the sums must not see
    h = np.array([0.2, 0.7, 1.0, 3.0])
    i, j = _pairs(n)
    s = ((Y[i] - Y[j]) ** 2).sum(axis=1)
    expected = np.stack([[np.exp(-s / (4 * hk * hk)).sum(), np.exp(-s / (2 * hk * hk)).sum()] for hk in h])
    np.testing.assert_allclose(reference.pair_sum_sq(Y, "lscv", h), expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("kind", sorted(KERNELS))
@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_reference_kernel_sum_is_the_direct_sum(small_tiles, kind, d, weighted):
    rng = np.random.default_rng(d)
    Z, Q = rng.normal(size=(37, d)), rng.normal(size=(19, d))
    w = rng.random(37) if weighted else None
    s = ((Q[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
    k = KERNELS[kind].profile(s)
    expected = k.sum(axis=1) if w is None else k @ w
    np.testing.assert_allclose(reference.kernel_sum(Z, Q, kind, w), expected, rtol=1e-12, atol=1e-15)


def test_unknown_kinds_are_named():
    with pytest.raises(ValueError, match="gauss_d<order>"):
        reference.pair_sum_1d(np.zeros(3), "k4", np.ones(1))
    with pytest.raises(ValueError, match="lscv"):
        reference.pair_sum_sq(np.zeros((3, 1)), "plugin", np.ones(1))
    with pytest.raises(ValueError, match="unknown kernel"):
        reference.kernel_sum(np.zeros((3, 1)), np.zeros((1, 1)), "box")


def test_registry():
    assert "numpy" in backends.available()
    assert backends.get_backend("auto") is not None
    assert backends.get_backend("numpy") is reference
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        backends.get_backend("cuda")
    with pytest.raises(ValueError, match="float32"):
        backends.get_backend("numpy", dtype=np.float32)


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
@pytest.mark.parametrize("n", (3, 100, 1025))
def test_backend_agrees_with_reference(backend, n):
    be = backends.get_backend(backend)
    rng = np.random.default_rng(n)
    x, Y = rng.normal(size=n), rng.normal(size=(n, 4))
    for order in (4, 6):
        np.testing.assert_allclose(
            be.pair_sum_1d(x, f"gauss_d{order}", np.array([0.5, 2.0])),
            reference.pair_sum_1d(x, f"gauss_d{order}", np.array([0.5, 2.0])), rtol=1e-10)
    np.testing.assert_allclose(be.pair_sum_sq(Y, "lscv", np.array([0.3, 1.0])),
                               reference.pair_sum_sq(Y, "lscv", np.array([0.3, 1.0])), rtol=1e-10)
    for kind in KERNELS:
        np.testing.assert_allclose(be.kernel_sum(Y, Y[:50], kind), reference.kernel_sum(Y, Y[:50], kind), rtol=1e-10)
