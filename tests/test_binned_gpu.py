"""The binned paths on the gpu backend against the float64 NumPy reference.

Without a GPU the Triton kernels run under the interpreter and ``torch.fft`` on CPU tensors
(conftest sets TRITON_INTERPRET=1), on small inputs.  Tolerances: binning computes positions
and shares in float64 from the rows as sent (float32 rows are exact in float64) and adds them by
float64 atomics, so counts equal the reference's to rounding (1e-12 of the largest count); the
FFTs are float64 on both sides (1e-12 of the largest value); PLUGIN's h then agrees to 1e-10.
"""

import numpy as np
import pytest

from parzen.backends import available
from parzen.backends.reference import NumpyBackend
from parzen.bandwidth import plugin_stages
from parzen.binned import GridSpec, density_on_grid, linear_bin

pytestmark = pytest.mark.skipif("gpu" not in available(), reason="no gpu backend")

RTOL = 1e-12


def _gpu(**tiles):
    from parzen.backends.gpu import GpuBackend, GpuTiles

    return GpuBackend(GpuTiles(**tiles))


def _close(got, want, rtol=RTOL):
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("weighted", [False, True])
def test_float32_rows_bin_as_the_reference_bins_them(d, weighted):
    rng = np.random.default_rng(d + 10 * weighted)
    X = (rng.standard_normal((400, d)) * np.arange(1, d + 1)).astype(np.float32)
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), [17, 9, 7, 5][:d])
    w = rng.uniform(0.0, 2.0, len(X)).astype(np.float32) if weighted else None
    got = _gpu(stream_bytes=256).linear_bin(X, spec, w)  # several streamed chunks
    want = linear_bin(X.astype(np.float64), spec, None if w is None else w.astype(np.float64), backend="numpy")
    assert got.spec == spec
    _close(got.counts, want.counts)
    assert got.total == pytest.approx(len(X) if w is None else float(w.astype(np.float64).sum()), rel=1e-12)


def test_one_grid_copy_and_many_give_the_same_counts():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 2))
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), (12, 10))
    one = _gpu(replica_bytes=8).linear_bin(X, spec).counts  # a single copy of the grid
    many = _gpu(replica_bytes=1 << 20).linear_bin(X, spec).counts
    _close(one, many)


def test_a_row_outside_the_box_in_a_later_chunk_is_named():
    x = np.linspace(0.0, 1.0, 300)
    x[250] = np.nan
    with pytest.raises(ValueError, match=r"row 250 \(\[nan\]\) lies outside the grid's box"):
        _gpu(stream_bytes=512).linear_bin(x, GridSpec((0.0,), (1.0,), (9,)))


def test_float32_binning_keeps_points_on_the_faces():
    spec = GridSpec((0.1,), (0.7,), (7,))
    got = _gpu().linear_bin(np.array([0.1, 0.4, 0.7], dtype=np.float32), spec, dtype=np.float32)
    assert got.total == pytest.approx(3.0, rel=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 3])
def test_column_summary_streamed_equals_the_host_summary(dtype, d):
    rng = np.random.default_rng(d)
    X = (rng.standard_normal((500, d)) * 1e3 + 5e3).astype(dtype)
    got = _gpu(stream_bytes=512).column_summary(X)
    want = NumpyBackend().column_summary(X)
    assert got.rows == want.rows == 500
    np.testing.assert_array_equal(got.lows, want.lows)
    np.testing.assert_array_equal(got.highs, want.highs)
    np.testing.assert_allclose(got.means, want.means, rtol=1e-13)
    np.testing.assert_allclose(got.sds, want.sds, rtol=1e-12)
    assert not _gpu().column_summary(np.array([1.0, np.inf, 2.0])).finite


@pytest.mark.parametrize("shapes", [((50,), (9,), (64,)), ((30, 20), (5, 7), (40, 27))])
def test_fft_convolve_by_torch_equals_scipy(shapes):
    a_shape, b_shape, padded = shapes
    rng = np.random.default_rng(len(a_shape))
    a, b = rng.random(a_shape), rng.random(b_shape)
    _close(_gpu().fft_convolve(a, b, padded), NumpyBackend().fft_convolve(a, b, padded))


@pytest.mark.parametrize("scale", ["sd", "minim"])
def test_binned_plugin_on_the_gpu_equals_the_reference(scale):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(-2, 0.5, 3000), rng.normal(2, 0.5, 3000)]).astype(np.float32)
    got = plugin_stages(x, scale=scale, backend="gpu", method="binned")
    want = plugin_stages(x.astype(np.float64), scale=scale, backend="numpy", method="binned")
    assert got.method == want.method == "binned"
    assert got.grid_size == want.grid_size
    for field in ("h", "sigma", "g1", "psi6", "g2", "psi4"):
        assert getattr(got, field) == pytest.approx(getattr(want, field), rel=1e-10), field


def test_binned_plugin_on_the_gpu_names_bad_input():
    x = np.linspace(0.0, 1.0, 50, dtype=np.float32)
    x[7] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite value"):
        plugin_stages(x, backend="gpu", method="binned")
    with pytest.raises(ValueError, match="zero variance"):
        plugin_stages(np.full(50, 3.0, dtype=np.float32), backend="gpu", method="binned")


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_binned_density_on_the_gpu_equals_the_reference(kernel):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((800, 2)).astype(np.float32)
    H = np.array([[0.09, 0.02], [0.02, 0.16]])
    got = density_on_grid(X, H, kernel, grid_size=(40, 33), backend="gpu")
    want = density_on_grid(X.astype(np.float64), H, kernel, grid_size=(40, 33), backend="numpy")
    assert got.spec == want.spec
    _close(got.values, want.values)
