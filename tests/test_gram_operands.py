"""The tensor-core Gram form's operands (parzen.backends._gram_operands) and its GPU sums
(issue 20, item 5): a(q) . b(z) is -|q - z|^2 up to the terms left out, float16 holds
every operand exactly, the large part E is exact in float32 whatever the order of its
additions, and the GPU's sums agree with the float64 reference on each path."""

import numpy as np
import pytest

from parzen import backends
from parzen.backends.reference import NumpyBackend

pytestmark = pytest.mark.skipif("gpu" not in backends.available(), reason="the gpu backend is not available")


def _operands(dims, n, m, spread, seed):
    import torch

    from parzen.backends import _gram_operands as ops

    rng = np.random.default_rng(seed)
    z = torch.from_numpy(rng.normal(size=(dims, n)) * spread)
    q = torch.from_numpy(rng.normal(size=(dims, m)) * spread)
    grid = ops.grid_step(float(torch.linalg.vector_norm(z, dim=0).max()) + 16.0)
    return z, q, grid, ops.data_operand(z, torch.ones(n, dtype=torch.bool), grid), ops.query_operand(q, grid)


@pytest.mark.parametrize("dims", [16, 32, 64])
@pytest.mark.parametrize("spread", [0.5, 4.0])
def test_product_is_the_exponent(dims, spread):
    """a(q) . b(z) in float64 = -|q - z|^2 within the left-out terms (omitted_bound)."""
    import torch

    from parzen.backends import _gram_operands as ops

    z, q, grid, za, qa = _operands(dims, 300, 40, spread, dims)
    assert za.dtype == qa.dtype == torch.float16
    assert za.shape == (ops.layout(dims).columns, 300) and qa.shape == (40, ops.layout(dims).columns)
    got = qa.double() @ za.double()
    expected = -((q.T[:, None, :] - z.T[None, :, :]) ** 2).sum(dim=2)
    assert torch.max(torch.abs(got - expected)) <= ops.omitted_bound(dims, grid) + 1e-9


@pytest.mark.parametrize("dims", [16, 32])
def test_large_part_is_exact_in_float32(dims):
    """E = -|q_hi - z_hi|^2 (the last two segments) is the same in float32 as in float64, with
    the additions in either order; and with C it is the exponent of the float16-exact parts."""
    import torch

    from parzen.backends import _gram_operands as ops

    *_, za, qa = _operands(dims, 200, 30, 3.0, 2)
    start = sum(ops.layout(dims).first)
    wide = qa[:, start:].double() @ za[start:].double()
    single = qa[:, start:].float() @ za[start:].float()
    reversed_order = qa[:, start:].float().flip(1) @ za[start:].float().flip(0)
    assert torch.equal(single.double(), wide) and torch.equal(reversed_order.double(), wide)


def test_pads_far_queries_and_reach():
    """Pads and zero weights have exponents of -32768 or less (terms exactly 0 in float32);
    queries far beyond the data stay finite in float16 with every exponent below -256; the form
    is usable only while the left-out terms stay within the limit."""
    import torch

    from parzen.backends import _gram_operands as ops

    dims = 16
    z = torch.zeros((dims, 8), dtype=torch.float64)
    z[0, :4] = torch.tensor([0.5, -1.0, 2.0, 0.0])
    kept = torch.tensor([True] * 4 + [False] * 4)
    grid = ops.grid_step(2.0 + 16.0)
    za = ops.data_operand(z, kept, grid)
    q = torch.zeros((dims, 3), dtype=torch.float64)
    q[0] = torch.tensor([0.0, 1e6, -3e4])
    q[5, 2] = 7.0
    qa = ops.query_operand(q, grid)
    assert torch.isfinite(qa.double()).all() and torch.isfinite(za.double()).all()
    e = (qa.double() @ za.double()).float()
    assert torch.all(e[:, 4:] <= ops.PAD_EXPONENT) and torch.all(torch.exp2(e[:, 4:]) == 0)
    assert torch.all(e[1:] < -256)
    assert ops.usable(dims, grid) and ops.usable(32, 2.0**-5) and not ops.usable(dims, 2.0**-4)


@pytest.mark.parametrize(("spread", "tensor_cores"), [(1.0, True), (40.0, False)])
@pytest.mark.parametrize("weights", ["none", "uniform", "zeros", "negative"])
def test_gpu_sums_take_each_path(monkeypatch, spread, tensor_cores, weights):
    """float32 Gaussian sums at d = 6 and 17: the tensor-core path (no weights or one weight for
    all: the kernel without weights, the sums scaled; weights per point, some zero or negative)
    agrees with the float64 reference within 1e-5 (of the sum of |w_i| where signs cancel); data
    spread beyond the operands' reach take the former kernel (the same sums as with the tensor
    cores off)."""
    from parzen.backends import gpu

    rng = np.random.default_rng(7)
    for d in (6, 17):
        Z = rng.normal(size=(70, d)) * spread
        Z[:3] *= 0.01
        Q = np.vstack([Z[:10] + 0.3 * rng.normal(size=(10, d)), Z[10:15]])
        w = {"none": None, "uniform": np.full(70, 1 / 70), "zeros": np.where(np.arange(70) % 4 == 0, 0.0, rng.random(70)),
             "negative": rng.random(70) - 0.1}[weights]
        sums = gpu.GpuBackend().prepare_kernel_sum(Z, "gaussian", w, dtype=np.float32)
        got = sums(Q)
        if tensor_cores:
            common = {"none": 1.0, "uniform": 1 / 70, "zeros": 0.0, "negative": 0.0}[weights]
            assert sums.layout is not None and sums.common_weight == common
            scale = np.abs(np.ones(70) if w is None else w).sum()
            np.testing.assert_allclose(got, NumpyBackend().kernel_sum(Z, Q, "gaussian", w), rtol=1e-5, atol=1e-6 * scale)
        else:
            assert sums.layout is None
            monkeypatch.setattr(gpu._DeviceKernelSum, "tensor_cores", False)
            np.testing.assert_array_equal(got, gpu.GpuBackend().prepare_kernel_sum(Z, "gaussian", w, dtype=np.float32)(Q))
            monkeypatch.undo()
