"""The pair sums between two blocks of data (pair_sum_1d_between, pair_sum_sq_between) on every
backend (the gpu's under Triton's interpreter where there is no GPU), and the base class's host
version (by the union of the blocks), against direct sums."""

from __future__ import annotations

import numpy as np
import pytest

from parzen import backends
from parzen.backends import KDEBackend
from parzen.backends.reference import NumpyBackend
from parzen.kernels import gauss_derivative

RNG = np.random.default_rng(7)
X1, Y1 = RNG.normal(size=300), RNG.normal(0.5, 2.0, size=170)
X2, Y2 = RNG.normal(size=(300, 3)), RNG.normal(0.5, 1.5, size=(170, 3))
SCALES = np.array([0.05, 0.4, 2.0])


def direct_1d(kind: str) -> np.ndarray:
    diff = X1[:, None] - Y1[None, :]
    return np.array([gauss_derivative(int(kind[7:]), diff / g).sum() for g in SCALES])


def direct_sq() -> np.ndarray:
    s = ((X2[:, None, :] - Y2[None, :, :]) ** 2).sum(axis=2)
    return np.array([[np.exp(-s / (4 * h * h)).sum(), np.exp(-s / (2 * h * h)).sum()] for h in SCALES])


@pytest.mark.parametrize("name", backends.available())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_between_equals_the_direct_sum(name, dtype):
    be = backends.resolve_backend(name)
    if np.dtype(dtype) not in be.dtypes:
        pytest.skip(f"{name} does not compute in {dtype}")
    rtol = 1e-12 if dtype == "float64" else 1e-5
    interpreted = name == "gpu" and backends.backend_class("gpu").interpreted  # Triton's interpreter: slow
    for kind in ("gauss_d4",) if interpreted else ("gauss_d0", "gauss_d4", "gauss_d6"):
        want = direct_1d(kind)
        np.testing.assert_allclose(be.pair_sum_1d_between(X1, Y1, kind, SCALES, dtype=dtype), want, rtol=rtol, atol=rtol * np.abs(want).max())
    np.testing.assert_allclose(be.pair_sum_sq_between(X2, Y2, "lscv", SCALES, dtype=dtype), direct_sq(), rtol=rtol)


@pytest.mark.parametrize("name", backends.available())
def test_inside_plus_between_is_the_pair_sum_of_the_union(name):
    be = backends.resolve_backend(name)
    g, f64 = SCALES[1:2], "float64"
    union = be.pair_sum_1d(np.r_[X1, Y1], "gauss_d4", g, dtype=f64)
    inside = be.pair_sum_1d(X1, "gauss_d4", g, dtype=f64) + be.pair_sum_1d(Y1, "gauss_d4", g, dtype=f64)
    parts = inside + be.pair_sum_1d_between(X1, Y1, "gauss_d4", g, dtype=f64)
    np.testing.assert_allclose(parts, union, rtol=1e-12, atol=1e-12 * np.abs(union).max())
    assert be.pair_sum_1d_between(X1, Y1[:0], "gauss_d4", SCALES).tolist() == [0.0, 0.0, 0.0]
    assert be.pair_sum_sq_between(X2[:0], Y2, "lscv", SCALES).shape == (3, 2)
    with pytest.raises(ValueError, match="unknown pair_sum_sq kind"):
        be.pair_sum_sq_between(X2, Y2, "nope", SCALES)


def test_the_host_version_by_the_union_equals_the_direct_sum():
    be = NumpyBackend(tile=64)
    want = direct_1d("gauss_d4")
    got = KDEBackend.pair_sum_1d_between(be, X1, Y1, "gauss_d4", SCALES)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(KDEBackend.pair_sum_sq_between(be, X2, Y2, "lscv", SCALES), direct_sq(), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_gpu_skips_unreachable_pairs_of_sorted_blocks_exactly(dtype):
    """The gpu backend sorts both blocks of a rectangle and visits, per row block, only the band of
    column blocks within the kernel's reach (beyond it every term underflows to 0): on clusters far
    apart (most column blocks outside the band) and in shuffled order, its sums equal the direct
    ones, and so do the triangle's off-diagonal chunk pairs (chunks of 40 rows)."""
    if "gpu" not in backends.available():
        pytest.skip("no gpu backend (Triton) here")
    from parzen.backends.gpu import GpuBackend, GpuTiles

    be = GpuBackend(GpuTiles(tile_1d=8, chunk_rows=40))
    rng = np.random.default_rng(11)
    x = rng.permutation(np.r_[rng.normal(0.0, 0.2, 60), rng.normal(30.0, 0.2, 30), rng.normal(-20.0, 0.2, 20)])
    y = rng.permutation(np.r_[rng.normal(0.1, 0.2, 40), rng.normal(-20.0, 0.2, 30)])
    scales = np.array([0.05, 0.3])
    rtol = 1e-12 if dtype == "float64" else 1e-5
    want = np.array([gauss_derivative(4, (x[:, None] - y[None, :]) / g).sum() for g in scales])
    got = be.pair_sum_1d_between(x, y, "gauss_d4", scales, dtype=dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    inside = np.array([np.triu(gauss_derivative(4, (x[:, None] - x[None, :]) / g), 1).sum() for g in scales])
    np.testing.assert_allclose(be.pair_sum_1d(x, "gauss_d4", scales, dtype=dtype), inside, rtol=rtol,
                               atol=rtol * np.abs(inside).max())
    import torch

    from parzen.backends.gpu import DEVICE, _reachable_column_blocks

    rows, cols = (torch.tensor(np.sort(v)[None, : v.size // 8 * 8], device=DEVICE) for v in (x, y))
    start, end = (b.cpu().numpy() for b in _reachable_column_blocks(rows, cols, False, 3.0, 8, sorted_data=True))
    visited = int((end - start).clip(min=0).sum())
    assert 0 < visited < (rows.shape[1] // 8) * (cols.shape[1] // 8) // 2  # the band: under half the blocks
