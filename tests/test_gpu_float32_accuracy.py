"""float32 GPU Gaussian KDE sums within 1e-5 of the float64 reference (issue 20, GPU target):
the tensor-core form from d = 2 to 64 (compact operands for small d), its log-sum-exp for
``score_samples`` (queries beyond the operands' reach on the former kernels), signed weights.
Under TRITON_INTERPRET=1 on CPU in CI."""

import numpy as np
import pytest

from parzen import backends
from parzen.backends.reference import NumpyBackend

pytestmark = pytest.mark.skipif("gpu" not in backends.available(), reason="the gpu backend is not available")


def _two_far_clusters(n, d, offset, seed):
    """Data in two clusters +-``offset`` bandwidths from their mean (so float32 rounding of the
    centred coordinates, about offset 2^-24, matters), and queries near the data."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[::2] += offset
    Z[1::2] -= offset
    return Z, Z[:20] + 0.5 * rng.normal(size=(20, d))


@pytest.mark.parametrize("d", [2, 4])
@pytest.mark.parametrize("weighted", [False, True])
def test_small_d_on_tensor_cores_within_1e_5(d, weighted):
    """d = 2 and 4 take the tensor-core form (32 and 48 columns): sums and log sums within 1e-5 of
    the float64 reference, and, 40 bandwidths from the mean, less than half the error of the
    direct kernel's float32 differences (the former path; 2e-6 and 4e-6 there)."""
    from parzen.backends import gpu

    Z, Q = _two_far_clusters(60, d, 40.0, d)
    w = np.random.default_rng(1).random(60) if weighted else None
    expected = NumpyBackend().kernel_sum(Z, Q, "gaussian", w)
    sums = gpu.GpuBackend().prepare_kernel_sum(Z, "gaussian", w, dtype=np.float32)
    assert sums.layout is not None and sums.layout.columns == {2: 32, 4: 48}[d]
    got = sums(Q)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    direct = gpu.GpuBackend(gpu.GpuTiles(tc_min_dim=6)).kernel_sum(Z, Q, "gaussian", w, dtype=np.float32)
    assert np.max(np.abs(got - expected) / expected) < 0.5 * np.max(np.abs(direct - expected) / expected)
    logs = gpu.GpuBackend().log_kernel_sum(Z, Q, "gaussian", w, dtype=np.float32)
    np.testing.assert_allclose(logs, np.log(expected), rtol=0, atol=1e-5)


@pytest.mark.parametrize("d", [6, 17])
@pytest.mark.parametrize("weights", ["none", "uniform", "varied"])
def test_tensor_core_log_sums_within_1e_5(d, weights):
    """score_samples' sums: the tensor-core log-sum-exp (log2 w added after the
    product) within 1e-5 absolute of the float64 log sums near the data; queries beyond the
    operands' reach go to the former kernel, within 1e-5 relative of their (large negative) logs."""
    from parzen.backends import gpu

    rng = np.random.default_rng(d)
    Z = rng.normal(size=(70, d)) * 1.5
    Q = np.vstack([Z[:12] + 0.3 * rng.normal(size=(12, d)), Z[:2] + 3.0])
    far = Z[:2] + 200.0
    w = {"none": None, "uniform": np.full(70, 0.25), "varied": rng.random(70) + 0.01}[weights]
    logs = gpu.GpuBackend().prepare_log_kernel_sum(Z, "gaussian", w, dtype=np.float32)
    assert logs.layout is not None
    np.testing.assert_allclose(logs(Q), NumpyBackend().log_kernel_sum(Z, Q, "gaussian", w), rtol=0, atol=1e-5)
    assert logs._far is None
    np.testing.assert_allclose(logs(far), NumpyBackend().log_kernel_sum(Z, far, "gaussian", w), rtol=1e-5)
    assert logs._far is not None and logs._far.layout is None


def test_tensor_core_log_sums_mixed_queries_and_zero_weights():
    """Near and far queries in one call come back in their order; zero weights are left out."""
    from parzen.backends import gpu

    rng = np.random.default_rng(11)
    Z = rng.normal(size=(50, 8))
    w = np.where(np.arange(50) % 3 == 0, 0.0, rng.random(50))
    Q = np.vstack([Z[:5], Z[:1] + 500.0, Z[5:8]])
    got = gpu.GpuBackend().prepare_log_kernel_sum(Z, "gaussian", w, dtype=np.float32)(Q)
    expected = NumpyBackend().log_kernel_sum(Z, Q, "gaussian", w)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_tensor_cores_at_64_coordinate_rows():
    """d = 40 (64 coordinate rows): sums and log sums on the tensor cores within 1e-5."""
    from parzen.backends import gpu

    rng = np.random.default_rng(40)
    Z = rng.normal(size=(40, 40)) * 0.6
    Q = Z[:6] + 0.2 * rng.normal(size=(6, 40))
    sums = gpu.GpuBackend().prepare_kernel_sum(Z, "gaussian", dtype=np.float32)
    assert sums.layout is not None and sums.dims == 64
    np.testing.assert_allclose(sums(Q), NumpyBackend().kernel_sum(Z, Q, "gaussian"), rtol=1e-5)
    logs = gpu.GpuBackend().log_kernel_sum(Z, Q, "gaussian", dtype=np.float32)
    np.testing.assert_allclose(logs, NumpyBackend().log_kernel_sum(Z, Q, "gaussian"), rtol=0, atol=1e-5)
