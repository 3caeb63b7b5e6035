"""Backend primitives: the reference against brute-force double loops, and every other
backend against the reference (one suite, parametrised over ``backends.available()``)."""

import numpy as np
import pytest

from parzen import backends
from parzen.backends.reference import NumpyBackend
from parzen.bandwidth import psi_functional
from parzen.kernels import KERNELS, gauss_derivative

OTHER_BACKENDS = [b for b in backends.available() if b != "numpy"]
SIZES = (2, 7, 33, 64)  # below, at and across the small tile size
#: The float64 reference with its own tiles: what every other backend is held to.
reference = NumpyBackend()


@pytest.fixture
def small_tiles():
    """The reference with tiles of 8, so that small inputs cross tile edges and diagonal tiles."""
    return NumpyBackend(tile=8)


def _pairs(n):
    return np.triu_indices(n, 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("order", [4, 6])
def test_reference_pair_sum_1d_is_the_double_sum(small_tiles, n, order):
    x = np.random.default_rng(n).normal(size=n)
    scales = np.array([0.3, 1.0, 2.5])
    i, j = _pairs(n)
    expected = [gauss_derivative(order, (x[i] - x[j]) / g).sum() for g in scales]
    np.testing.assert_allclose(small_tiles.pair_sum_1d(x, f"gauss_d{order}", scales), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("d", [1, 3, 16])
def test_reference_pair_sum_sq_is_the_double_sum(small_tiles, n, d):
    Y = np.random.default_rng(n + d).normal(size=(n, d)) + 5.0  # an offset the sums must not see
    h = np.array([0.2, 0.7, 1.0, 3.0])
    i, j = _pairs(n)
    s = ((Y[i] - Y[j]) ** 2).sum(axis=1)
    expected = np.stack([[np.exp(-s / (4 * hk * hk)).sum(), np.exp(-s / (2 * hk * hk)).sum()] for hk in h])
    np.testing.assert_allclose(small_tiles.pair_sum_sq(Y, "lscv", h), expected, rtol=1e-12, atol=1e-300)


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
    np.testing.assert_allclose(small_tiles.kernel_sum(Z, Q, kind, w), expected, rtol=1e-12, atol=1e-15)


def _direct_log_sum(Z, Q, kind, w):
    """log sum_i w_i k(|q - z_i|^2) by SciPy's logsumexp over all terms at once (float64)."""
    from scipy.special import logsumexp

    s = ((Q[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
    with np.errstate(divide="ignore"):
        log_k = -0.5 * s if kind == "gaussian" else np.log(KERNELS[kind].profile(s))
        log_w = np.zeros(len(Z)) if w is None else np.log(w)
    return logsumexp(log_k + log_w, axis=1)


@pytest.mark.parametrize("kind", sorted(KERNELS))
@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_reference_log_kernel_sum_is_the_direct_log_sum(small_tiles, kind, d, weighted):
    """Near the data the log of kernel_sum; 60 units away (where the Gaussian sum underflows
    to 0) still the float64 log-sum-exp, and -inf for the compactly supported kernels."""
    rng = np.random.default_rng(d)
    Z = rng.normal(size=(37, d))
    Q = np.vstack([rng.normal(size=(19, d)), rng.normal(size=(5, d)) + 60.0])
    w = rng.random(37) if weighted else None
    if weighted:
        w[::4] = 0.0  # zero weights add no term
    got = small_tiles.log_kernel_sum(Z, Q, kind, w)
    expected = _direct_log_sum(Z, Q, kind, w)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(got[:19], np.log(small_tiles.kernel_sum(Z, Q[:19], kind, w)), rtol=1e-12, atol=1e-12)
    if kind == "gaussian":
        assert np.all(small_tiles.kernel_sum(Z, Q[19:], kind, w) == 0.0)  # the sum underflows
        assert np.all(np.isfinite(got)) and np.all(got[19:] < -1500.0)
    else:
        assert np.all(got[19:] == -np.inf)  # the density is 0 there


def test_unknown_kinds_are_named():
    with pytest.raises(ValueError, match="gauss_d<order>"):
        reference.pair_sum_1d(np.zeros(3), "k4", np.ones(1))
    with pytest.raises(ValueError, match="lscv"):
        reference.pair_sum_sq(np.zeros((3, 1)), "plugin", np.ones(1))
    with pytest.raises(ValueError, match="unknown kernel"):
        reference.kernel_sum(np.zeros((3, 1)), np.zeros((1, 1)), "box")
    with pytest.raises(ValueError, match="unknown kernel"):
        reference.log_kernel_sum(np.zeros((3, 1)), np.zeros((1, 1)), "box")


def test_registry():
    assert "numpy" in backends.available()
    assert isinstance(backends.resolve_backend("auto"), backends.KDEBackend)
    assert isinstance(backends.resolve_backend("numpy"), NumpyBackend)
    assert backends.resolve_backend("numpy") is backends.resolve_backend("numpy")  # one shared default
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        backends.resolve_backend("cuda")
    with pytest.raises(ValueError, match="float32"):
        backends.resolve_backend("numpy", dtype=np.float32)


# --- every other backend against the reference ------------------------------------------

def _small_backend(name):
    """A new instance of backend ``name`` with tiles and blocks shrunk so that small inputs cross
    tile edges (and the GPU's many-scale LSCV sum is split into column groups, which its default
    does not do, and its data into chunks of 40 rows)."""
    if name == "numpy":
        return NumpyBackend(tile=8)
    if name == "cpu":
        from parzen.backends.cpu import CpuBackend, CpuTiles

        return CpuBackend(CpuTiles(tile_1d=8, tile_sq=8, query_block=4, data_block=16))
    from parzen.backends.gpu import GpuBackend, GpuTiles

    return GpuBackend(
        GpuTiles(tile_1d=8, tile_sq=8, query_block=4, data_block=16, chunk_rows=40, scales_per_pass=2, groups_sq=2)
    )


#: (backend, dtype) pairs: every other backend in every precision it offers.
CASES = [
    pytest.param(name, dt, id=f"{name}-{dt}")
    for name in OTHER_BACKENDS
    for dt in backends.backend_class(name).dtypes
]
AGREE_SIZES = (2, 3, 7, 17, 100, 1025)  # odd sizes that do not fill a tile
#: float64 results equal the reference to 1e-10; float32 to 1e-5 of the sum of |terms|.
RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-5}
#: Per term: float32 drops terms below its smallest normal number (~1e-38; exp(-87)).
TERM_ATOL = {np.dtype(np.float64): 1e-300, np.dtype(np.float32): 1e-35}


@pytest.fixture(params=[False, True], ids=["default-tiles", "small-tiles"])
def tiles(request):
    """Run each test with the backend's own tiles and with tiles of 8 (edges everywhere): a
    function from a backend's name to the instance to test."""
    if request.param:
        return _small_backend
    return backends.resolve_backend


#: Largest data size the tests use under the Triton interpreter (its kernels run at Python speed).
INTERPRETED_MAX_N = 130


def _rows(backend, n):
    """n, or fewer rows for a backend whose tests run slowly (the Triton interpreter)."""
    slow = backend == "gpu" and backends.backend_class("gpu").interpreted
    return min(n, INTERPRETED_MAX_N) if slow else n


def _skip_large(backend, n):
    if _rows(backend, n) < n:
        pytest.skip(f"{backend} runs interpreted here: sizes above {_rows(backend, n)} only on a real device")


def _data(n, d, offset=0.0):
    rng = np.random.default_rng(1000 * n + d)
    if d == 1:
        return rng.normal(size=n) * 2.0 + offset
    return rng.normal(size=(n, d)) @ np.triu(np.full((d, d), 0.3)) + rng.normal(size=(n, d)) + offset


def _abs_pair_sum(x, order, g):
    """sum_{i<j} |phi^(r)((x_i - x_j)/g)|: the scale of the rounding error of the signed sum."""
    i, j = _pairs(x.size)
    return np.abs(gauss_derivative(order, (x[i] - x[j]) / g)).sum()


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("n", AGREE_SIZES)
@pytest.mark.parametrize("order", [0, 2, 4, 6, 8])
def test_pair_sum_1d_agrees(tiles, backend, dtype, n, order):
    _skip_large(backend, n)
    x = _data(n, 1, offset=1e3)  # far from 0: float32 must centre before casting
    scales = np.array([0.15, 0.6, 2.0])
    got = tiles(backend).pair_sum_1d(x, f"gauss_d{order}", scales, dtype=dtype)
    expected = reference.pair_sum_1d(x, f"gauss_d{order}", scales)
    bound = [_abs_pair_sum(x, order, g) for g in scales]
    dtype = np.dtype(dtype)
    tolerance = RTOL[dtype] * np.array(bound) + TERM_ATOL[dtype] * n * n
    np.testing.assert_array_less(np.abs(got - expected), tolerance)


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("n", AGREE_SIZES)
@pytest.mark.parametrize("d", [1, 2, 5, 16, 17])
@pytest.mark.parametrize("h", [[0.35, 0.7, 1.0, 3.0], [0.7]], ids=["4-scales", "1-scale"])
def test_pair_sum_sq_agrees(tiles, backend, dtype, n, d, h):
    """All terms are positive: plain relative error.  Scales keep every term above float32's
    smallest normal number, where the backends drop sub-normal terms.  One scale takes the GPU's
    Gram-form kernel; d = 17 needs two blocks of 16 coordinates there."""
    _skip_large(backend, n)
    Y = _data(n, d, offset=-50.0)
    h = np.array(h) * np.sqrt(d)
    got = tiles(backend).pair_sum_sq(Y, "lscv", h, dtype=dtype)
    np.testing.assert_allclose(got, reference.pair_sum_sq(Y, "lscv", h), rtol=RTOL[np.dtype(dtype)], atol=1e-300)


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
@pytest.mark.parametrize("n", [3, 17, 100, 1025])
@pytest.mark.parametrize("d", [1, 4, 16])
def test_whitened_pair_sum_sq_agrees(tiles, backend, dtype, n, d):
    """The prepared whitening (kept on the GPU across calls) = pair_sum_sq of host-whitened rows."""
    _skip_large(backend, n)
    Z = _data(n, d, offset=20.0).reshape(n, d)
    rng = np.random.default_rng(n * d)
    pair_sums = tiles(backend).prepare_whitened_pair_sum_sq(Z, "lscv", dtype=dtype)
    for _ in range(2):  # the same prepared data, two different factors
        M = np.tril(rng.normal(size=(d, d)) * 0.2) + np.diag(rng.uniform(0.5, 2.0, d))
        Y = np.linalg.solve(M, (Z - Z.mean(axis=0)).T).T
        got = pair_sums(M, np.array([1.0]))
        expected = reference.pair_sum_sq(Y, "lscv", np.array([1.0]))
        np.testing.assert_allclose(got, expected, rtol=RTOL[np.dtype(dtype or np.float64)], atol=1e-300)
    # the same factor again, now with a scale wider than the data (the pads must move out)
    wide = np.array([1.0, 500.0])
    np.testing.assert_allclose(
        pair_sums(M, wide), reference.pair_sum_sq(Y, "lscv", wide), rtol=RTOL[np.dtype(dtype or np.float64)], atol=1e-300
    )


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
@pytest.mark.parametrize("n", [17, 100, 1025])
def test_whitened_sums_repeat_and_share_buffers(tiles, backend, dtype, n):
    """Many calls (on a GPU: eager, then replays of captured CUDA graphs), a new M or new scales
    at each, interleaved with a second data set of the same size (the GPU shares device buffers
    by size: each function must still sum its own data)."""
    _skip_large(backend, n)
    d = 3
    rng = np.random.default_rng(n)
    first, second = _data(n, d, offset=5.0).reshape(n, d), _data(n, d, offset=-3.0).reshape(n, d)[::-1].copy()
    be = tiles(backend)
    sums_first = be.prepare_whitened_pair_sum_sq(first, "lscv", dtype=dtype)
    sums_second = be.prepare_whitened_pair_sum_sq(second, "lscv", dtype=dtype)
    rtol = RTOL[np.dtype(dtype or np.float64)]
    for call in range(6):
        M = np.tril(rng.normal(size=(d, d)) * 0.2) + np.diag(rng.uniform(0.5, 2.0, d))
        h = np.array([1.0]) if call % 2 else np.array([0.5, 1.0, 2.0]) * (1.0 + 0.1 * call)
        for Z, sums in ((first, sums_first), (second, sums_second)):
            Y = np.linalg.solve(M, (Z - Z.mean(axis=0)).T).T
            np.testing.assert_allclose(sums(M, h), reference.pair_sum_sq(Y, "lscv", h), rtol=rtol, atol=1e-300)
    for k in range(5):  # the same M again: the kept whitening, new scales
        h = np.array([0.7, 1.3]) * (1.0 + 0.05 * k)
        np.testing.assert_allclose(sums_second(M, h), reference.pair_sum_sq(Y, "lscv", h), rtol=rtol, atol=1e-300)


def _four_sums(pair_sum, n: int, g):
    """A chain as PLUGIN's: sums at g, at a scale computed from the first sum (0.7, carried on
    from it as g2 is from psi6), and at scales narrower and wider than the data's range."""
    first = pair_sum("gauss_d6", g)
    return first, pair_sum("gauss_d4", 0.7 + 0.0 * first), pair_sum("gauss_d6", 1.5), pair_sum("gauss_d2", 80.0 + 0 * n)


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
@pytest.mark.parametrize("n", [2, 17, 100, 1025])
def test_prepared_pair_sum_1d_agrees(tiles, backend, dtype, n):
    """The prepared 1-D sums (data kept sorted on the GPU across PLUGIN's stages) = the reference,
    for a chain of sums evaluated three times on new data and a new scale (on a GPU: eagerly,
    then captured as a CUDA graph, then replayed), the GPU's pads masked, not spaced."""
    _skip_large(backend, n)
    for call, g in enumerate((0.2, 0.22, 0.18)):
        x = _data(n, 1, offset=20.0 + call)
        pair_sums = tiles(backend).prepare_pair_sum_1d(x, dtype=dtype)
        got = pair_sums.evaluate(_four_sums, n, g)
        assert all(type(v) is float for v in got)
        for (order, scale), value in zip(((6, g), (4, 0.7), (6, 1.5), (2, 80.0)), got):
            expected = reference.pair_sum_1d(x, f"gauss_d{order}", np.array([scale]))[0]
            # signed terms cancel: float32 rounding scales with the sum of their sizes
            tolerance = RTOL[np.dtype(dtype or np.float64)] * _abs_pair_sum(x, order, scale) + 1e-12 * n * n
            assert abs(value - expected) <= tolerance, (order, scale, value, expected)


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("kind", sorted(KERNELS))
@pytest.mark.parametrize(
    ("n", "m", "d"), [(1, 1, 1), (17, 5, 1), (1025, 33, 1), (100, 7, 2), (333, 65, 5), (40, 3, 16), (70, 19, 6), (50, 20, 17)]
)  # d >= 6: the GPU's Gram form (16 and 32 coordinate rows)
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_sum_agrees(tiles, backend, dtype, kind, n, m, d, weighted):
    _skip_large(backend, n)
    rng = np.random.default_rng(n + m + d)
    Z = rng.normal(size=(n, d)) + 7.0
    Q = np.vstack([Z[: min(n, m)], rng.normal(size=(max(m - n, 0), d)) + 7.0])
    w = rng.random(n) if weighted else None
    got = tiles(backend).kernel_sum(Z, Q, kind, w, dtype=dtype)
    expected = reference.kernel_sum(Z, Q, kind, w)
    # compact kernels: a point on the support's edge may fall either side in float32
    scale = (np.ones(n) if w is None else w).sum()
    np.testing.assert_allclose(got, expected, rtol=RTOL[np.dtype(dtype)], atol=RTOL[np.dtype(dtype)] * scale)


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
@pytest.mark.parametrize("kind", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize(("n", "d"), [(100, 2), (70, 6), (50, 17)])  # d >= 6: the GPU's Gram form
@pytest.mark.parametrize("weighted", [False, True])
def test_prepared_kernel_sum_agrees(tiles, backend, dtype, kind, n, d, weighted):
    """prepare_kernel_sum's and prepare_log_kernel_sum's functions = the reference kernel_sum and
    log_kernel_sum, for three query sets on the same prepared data (the GPU keeps them on the device: one chunk, or chunks of 40 rows with the
    small tiles).  Queries sit on data points or between them, off any compact kernel's edge."""
    rng = np.random.default_rng(n + d)
    Z = rng.normal(size=(n, d)) + 7.0
    w = rng.random(n) if weighted else None
    sums = tiles(backend).prepare_kernel_sum(Z, kind, w, dtype=dtype)
    scale = (np.ones(n) if w is None else w).sum()
    rtol = RTOL[np.dtype(dtype)]
    logs = tiles(backend).prepare_log_kernel_sum(Z, kind, w, dtype=dtype)
    for m in (1, 19, 33):
        Q = np.vstack([Z[rng.integers(0, n, m)], 0.5 * (Z[: m // 2] + Z[1 : m // 2 + 1])])
        np.testing.assert_allclose(sums(Q), reference.kernel_sum(Z, Q, kind, w), rtol=rtol, atol=rtol * scale)
        np.testing.assert_allclose(logs(Q), reference.log_kernel_sum(Z, Q, kind, w), rtol=rtol, atol=rtol)


@pytest.mark.skipif("gpu" not in backends.available(), reason="the gpu backend is not available")
def test_gpu_prepared_kernel_sum_keeps_data_that_fit_and_streams_the_rest():
    """Data within ``resident_bytes`` stay on the device between calls; beyond it they are sent
    at each call, chunk by chunk, with the same sums."""
    from parzen.backends import gpu

    rng = np.random.default_rng(8)
    Z, Q = rng.normal(size=(90, 6)), rng.normal(size=(20, 6))
    kept = gpu.GpuBackend(gpu.GpuTiles(chunk_rows=40)).prepare_kernel_sum(Z, "gaussian", dtype=np.float32)
    streamed = gpu.GpuBackend(gpu.GpuTiles(chunk_rows=40, resident_bytes=1)).prepare_kernel_sum(Z, "gaussian", dtype=np.float32)
    assert len(list(kept.device_chunks())) == 3 and kept.device_chunks().__next__()[0] is kept.device_chunks().__next__()[0]
    assert streamed.device_chunks().__next__()[0] is not streamed.device_chunks().__next__()[0]
    np.testing.assert_array_equal(kept(Q), streamed(Q))
    np.testing.assert_allclose(kept(Q), reference.kernel_sum(Z, Q, "gaussian"), rtol=1e-5)
    with pytest.raises(ValueError, match="unknown kernel 'box'"):
        gpu.GpuBackend().prepare_kernel_sum(Z, "box")


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("kind", sorted(KERNELS))
@pytest.mark.parametrize(
    ("n", "m", "d"), [(1, 1, 1), (17, 5, 1), (1025, 33, 1), (100, 7, 2), (333, 65, 5), (40, 3, 16), (70, 19, 6), (50, 20, 17)]
)  # d >= 6: the GPU's Gram form (16 and 32 coordinate rows)
@pytest.mark.parametrize("weighted", [False, True])
def test_log_kernel_sum_agrees(tiles, backend, dtype, kind, n, m, d, weighted):
    """As kernel_sum's test, plus queries 40 units from the data, where the Gaussian sum
    underflows to 0 in float64 (s/2 > 745) and its log must still be the log-sum-exp; compact
    kernels give -inf there.  Queries near the data sit on data points, so that no compact
    kernel's sum hangs on a point at its support's edge (float32 may put it either side).
    Log densities: float32 within 1e-5 relative (1e-5 absolute near 0)."""
    _skip_large(backend, n)
    rng = np.random.default_rng(n + m + d)
    Z = rng.normal(size=(n, d)) + 7.0
    Q = np.vstack([Z[rng.integers(0, n, m)], Z[: min(n, 3)] + 40.0])
    w = rng.random(n) if weighted else None
    if weighted and n > 2:
        w[1::3] = 0.0  # zero weights add no term (their logs are -inf)
    got = tiles(backend).log_kernel_sum(Z, Q, kind, w, dtype=dtype)
    expected = reference.log_kernel_sum(Z, Q, kind, w)
    rtol = RTOL[np.dtype(dtype)]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)
    if kind == "gaussian":
        assert np.all(np.isfinite(got))
    else:
        assert np.all(got[m:] == -np.inf)


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
def test_log_kernel_sum_edge_cases(backend, dtype):
    """No queries: an empty array; every weight 0: -inf (no term); one point: log w - s/2."""
    be = backends.resolve_backend(backend)
    Z = np.array([[0.0], [1.0]])
    assert be.log_kernel_sum(Z, np.empty((0, 1)), "gaussian", dtype=dtype).shape == (0,)
    assert be.kernel_sum(Z, np.empty((0, 1)), "gaussian", dtype=dtype).shape == (0,)
    for kind in ("gaussian", "epanechnikov"):
        assert np.all(be.log_kernel_sum(Z, np.zeros((2, 1)), kind, np.zeros(2), dtype=dtype) == -np.inf)
    got = be.log_kernel_sum(Z[:1], np.array([[100.0]]), "gaussian", np.array([0.25]), dtype=dtype)
    np.testing.assert_allclose(got, [np.log(0.25) - 5000.0], rtol=RTOL[np.dtype(dtype or np.float64)])


@pytest.mark.parametrize(("backend", "dtype"), [*CASES, pytest.param("numpy", None, id="numpy")])
def test_kde_score_samples_far_from_the_data(backend, dtype):
    """Issue 15: KDE.score_samples 50 units from N(0, 1) data was -inf; now the log density,
    against an independent float64 log-sum-exp of the Gaussian terms."""
    from scipy.special import logsumexp

    from parzen import KDE

    x = np.random.default_rng(15).normal(size=_rows(backend, 1000))
    kde = KDE(backend=backend, dtype=dtype).fit(x)
    h = kde.bandwidth_
    q = np.array([50.0, -30.0, 0.3])
    expected = logsumexp(-0.5 * ((q[:, None] - x[None, :]) / h) ** 2, axis=1) - np.log(x.size * h * np.sqrt(2 * np.pi))
    got = kde.score_samples(q)
    np.testing.assert_allclose(got, expected, rtol=RTOL[np.dtype(dtype or np.float64)])
    assert got[0] < -1000.0 and kde.pdf(q[:1])[0] == 0.0  # the density underflows, its log does not


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_unknown_kinds_are_named_by_every_backend(backend):
    be = backends.resolve_backend(backend)
    with pytest.raises(ValueError, match="gauss_d"):
        be.pair_sum_1d(np.zeros(3), "k4", np.ones(1))
    with pytest.raises(ValueError, match="lscv"):
        be.pair_sum_sq(np.zeros((3, 1)), "plugin", np.ones(1))
    with pytest.raises(ValueError, match="unknown kernel"):
        be.kernel_sum(np.zeros((3, 1)), np.zeros((1, 1)), "box")
    with pytest.raises(ValueError, match="unknown kernel"):
        be.log_kernel_sum(np.zeros((3, 1)), np.zeros((1, 1)), "box")


# --- the statistics through every backend, on the bundled real data ------------------------


def _real(name, rows):
    from parzen.datasets import load

    return load(name).to_numpy()[:rows]


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize(("name", "column"), [("faithful", 0), ("faithful", 1), ("quakes", 3), ("tempb", 0)])
def test_plugin_agrees_on_real_data(backend, dtype, name, column):
    from parzen.bandwidth import plugin_stages

    x = _real(name, _rows(backend, 3000))[:, column]
    got = plugin_stages(x, backend=backend, dtype=dtype, method="exact")
    expected = plugin_stages(x, backend="numpy", method="exact")
    for key in ("h", "psi6", "psi4", "g2"):
        assert getattr(got, key) == pytest.approx(getattr(expected, key), rel=RTOL[np.dtype(dtype)]), key


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("name", ["faithful", "quakes", "tempb"])
def test_lscv_objectives_agree_on_real_data(backend, dtype, name):
    from parzen.bandwidth import lscv_H_objective, lscv_h_objective, normal_scale, reference_h0

    X = _real(name, _rows(backend, 800))
    h = reference_h0(*X.shape) * np.geomspace(0.25, 4, 9)
    rtol = RTOL[np.dtype(dtype)]
    np.testing.assert_allclose(
        lscv_h_objective(X, h, backend=backend, dtype=dtype), lscv_h_objective(X, h, backend="numpy"), rtol=rtol
    )
    H = normal_scale(X)
    assert lscv_H_objective(X, H, backend=backend, dtype=dtype) == pytest.approx(
        lscv_H_objective(X, H, backend="numpy"), rel=rtol
    )


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_lscv_selectors_agree_on_faithful(backend):
    """float64: the same minimiser, to the optimisers' tolerances (their objectives agree to ~1e-14)."""
    import warnings

    from parzen.bandwidth import lscv_H, lscv_h

    X = _real("faithful", _rows(backend, 272))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # faithful has ties
        h = lscv_h(X, backend=backend, dtype=np.float64)
        assert h == pytest.approx(lscv_h(X, backend="numpy"), rel=1e-6)
        H = lscv_H(X, backend=backend, dtype=np.float64)
        np.testing.assert_allclose(H, lscv_H(X, backend="numpy"), rtol=1e-6)


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("bandwidth", ["scalar", "diagonal", "full"])
def test_kde_pdf_agrees_on_real_data(backend, dtype, kernel, bandwidth):
    from parzen import KDE

    X = _real("quakes", _rows(backend, 1000))[:, :3]
    H = {"scalar": 4.0, "diagonal": np.array([0.5, 0.6, 30.0]),
         "full": np.array([[0.4, 0.1, 2.0], [0.1, 0.5, 1.0], [2.0, 1.0, 600.0]])}[bandwidth]
    Q = X[::7] + 0.05
    got = KDE(bandwidth=H, kernel=kernel, backend=backend, dtype=dtype).fit(X).pdf(Q)
    expected = KDE(bandwidth=H, kernel=kernel, backend="numpy").fit(X).pdf(Q)
    np.testing.assert_allclose(got, expected, rtol=RTOL[np.dtype(dtype)], atol=RTOL[np.dtype(dtype)] * expected.max())


@pytest.mark.skipif("gpu" not in backends.available(), reason="the gpu backend is not available")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_skips_only_column_blocks_whose_terms_underflow(dtype):
    """Three far-apart clusters: the sorted triangle drops the blocks between clusters, and
    the sum still equals the reference (those terms are exactly 0 in the compute type)."""
    from parzen.backends import gpu

    be = gpu.GpuBackend(gpu.GpuTiles(tile_1d=8))
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(size=40), rng.normal(size=40) + 300.0, rng.normal(size=40) - 300.0])
    rows = gpu._padded(x[:, None] - x.mean(), 8, 400.0, 10.0, gpu.torch_dtype(dtype)).sort(dim=1).values
    start, col_end = (b.cpu().numpy() for b in gpu._reachable_column_blocks(rows, rows, True, 50.0, 8))
    assert np.array_equal(start, np.arange(col_end.size))  # the triangle: from the diagonal block on
    assert np.any(col_end < rows.shape[1] // 8)  # some blocks are skipped
    assert np.all(col_end >= np.arange(col_end.size) + 1)  # never the diagonal block
    scales = np.array([0.5, 2.0])
    got = be.pair_sum_1d(x, "gauss_d4", scales, dtype=dtype)
    expected = reference.pair_sum_1d(x, "gauss_d4", scales)
    bound = [_abs_pair_sum(x, 4, g) for g in scales]
    np.testing.assert_array_less(np.abs(got - expected), RTOL[np.dtype(dtype)] * np.array(bound))


@pytest.mark.skipif(not OTHER_BACKENDS, reason="no backend besides the reference is available")
@pytest.mark.parametrize(("backend", "dtype"), CASES)
def test_psi_functional_agrees(backend, dtype):
    """Psi_r through a backend's prepared sums (a device number on the GPU) comes back a float
    equal to the reference's, within float32 rounding of the terms' sizes."""
    n, g = 100, 0.5
    x = _data(n, 1, offset=3.0)
    got = psi_functional(x, 6, g, backend=backend, dtype=dtype)
    expected = psi_functional(x, 6, g, backend="numpy")
    assert type(got) is float
    assert abs(got - expected) <= 2 * RTOL[np.dtype(dtype)] * _abs_pair_sum(x, 6, g) / (n * n * g**7) + 1e-15
