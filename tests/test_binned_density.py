"""Binned KDE evaluation (parzen.binned.density) against the exact float64 KDE (numpy backend)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parzen import KDE
from parzen.binned import density_at_nodes, density_on_grid
from parzen.binned.density import (
    ERROR_CONSTANT,
    FLOOR,
    MAX_GRID_NODES,
    binning_corrected,
    convolve_same,
    kernel_on_lags,
)
from parzen.binned.grid import linear_bin
from parzen.kernels import KERNELS

COMPACT_SMOOTH = ("epanechnikov", "triangular", "biweight", "cosine")


def exact_pdf(X, H, kernel, Q, weights=None):
    d = X.shape[1]
    bandwidth = float(np.sqrt(H[0, 0])) if d == 1 else H
    return KDE(bandwidth=bandwidth, kernel=kernel, backend="numpy", method="exact").fit(X, weights=weights).pdf(Q)


def queries(X, H, m, rng):
    reach = 4 * np.sqrt(np.diag(H))
    return rng.uniform(X.min(axis=0) - reach, X.max(axis=0) + reach, (m, X.shape[1]))


def relative_error(binned, exact):
    """Largest |binned - exact| / exact where exact >= FLOOR * max."""
    keep = exact >= FLOOR * exact.max()
    return float(np.max(np.abs(binned[keep] - exact[keep]) / exact[keep]))


@pytest.mark.parametrize("tolerance", [1e-3, 1e-4])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("n", [1, 300])
def test_gaussian_meets_tolerance(tolerance, d, n):
    """Gaussian: relative error <= tolerance where the density is >= 1e-3 of its maximum,
    including a single point (the worst case of the tolerance rule)."""
    if d == 2 and n > 1 and tolerance == 1e-4:
        pytest.skip("the 1e-4 grid of 300 2-D points exceeds 2^24 nodes (the single point runs)")
    rng = np.random.default_rng(d * 10 + n)
    X = rng.standard_normal((n, d))
    H = np.diag(rng.uniform(0.1, 0.4, d) ** 2)
    Q = queries(X, H, 4000, rng)
    binned = density_on_grid(X, H, "gaussian", tolerance=tolerance)(Q)
    assert relative_error(binned, exact_pdf(X, H, "gaussian", Q)) <= tolerance


@pytest.mark.parametrize("tolerance", [1e-3])
def test_gaussian_full_H_and_weights_2d(tolerance):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 2)) @ np.array([[1.0, 0.6], [0.0, 0.5]])
    w = rng.uniform(0.0, 2.0, 400)
    H = np.array([[0.09, 0.05], [0.05, 0.06]])
    Q = queries(X, H, 3000, rng)
    binned = density_on_grid(X, H, "gaussian", weights=w, tolerance=tolerance)(Q)
    assert relative_error(binned, exact_pdf(X, H, "gaussian", Q, weights=w)) <= tolerance


def test_gaussian_3d_and_4d_on_given_grids():
    """d = 3, 4 with grid_size: the grid is honoured, the error is within the rule's
    C sum (delta/h)^2 and falls as delta^2 (at least halves from 20 to 32 nodes per axis)."""
    rng = np.random.default_rng(7)
    for d in (3, 4):
        X = rng.standard_normal((200, d))
        H = 0.5**2 * np.eye(d)
        Q = queries(X, H, 500, rng)
        exact = exact_pdf(X, H, "gaussian", Q)
        errors = []
        for m in (20, 32):
            bd = density_on_grid(X, H, "gaussian", grid_size=m)
            assert bd.spec.sizes == (m,) * d
            errors.append(relative_error(bd(Q), exact))
            assert errors[-1] <= ERROR_CONSTANT * float(np.sum((bd.spec.spacing / 0.5) ** 2))
        assert errors[1] <= errors[0] / 2


@pytest.mark.parametrize("kernel", COMPACT_SMOOTH)
@pytest.mark.parametrize("d", [1, 2])
def test_compact_kernels_error_relative_to_maximum(kernel, d):
    """Continuous compact kernels: |binned - exact| <= tolerance * max f (the relative error
    is not bounded near the edge of the support, where the density vanishes)."""
    tolerance = 1e-3
    rng = np.random.default_rng(11)
    X = rng.standard_normal((2000, d))
    H = np.array([[0.16, 0.06], [0.06, 0.09]])[:d, :d]
    Q = queries(X, H, 3000, rng)
    binned = density_on_grid(X, H, kernel, tolerance=tolerance)(Q)
    exact = exact_pdf(X, H, kernel, Q)
    assert np.max(np.abs(binned - exact)) <= tolerance * exact.max()


@pytest.mark.parametrize("d", [1, 2])
def test_uniform_kernel_close_on_average(d):
    """Uniform: the exact estimate jumps at each X_i +- reach, so the comparison is in mean
    absolute error (<= 1e-3 of the maximum) and the largest error (<= 3e-2 of the maximum)."""
    rng = np.random.default_rng(13)
    X = rng.standard_normal((2000, d))
    H = 0.3**2 * np.eye(d)
    Q = queries(X, H, 3000, rng)
    binned = density_on_grid(X, H, "uniform", tolerance=1e-3)(Q)
    exact = exact_pdf(X, H, "uniform", Q)
    assert np.mean(np.abs(binned - exact)) <= 1e-3 * exact.max()
    assert np.max(np.abs(binned - exact)) <= 3e-2 * exact.max()


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_grid_integrates_to_one(kernel):
    X = np.random.default_rng(3).standard_normal((500, 2))
    bd = density_on_grid(X, 0.3**2 * np.eye(2), kernel, grid_size=200)
    assert bd.values.sum() * np.prod(bd.spec.spacing) == pytest.approx(1.0, abs=2e-3)


def test_kde_method_binned_wiring():
    rng = np.random.default_rng(17)
    X = rng.standard_normal((3000, 2))
    Q = rng.standard_normal((500, 2))
    exact = KDE(bandwidth=0.3, backend="numpy", method="exact").fit(X)
    binned = KDE(bandwidth=0.3, backend="numpy", method="binned", tolerance=1e-3).fit(X)
    assert exact.method_ == "exact" and exact.grid_size_ is None
    assert binned.method_ == "binned" and len(binned.grid_size_) == 2
    assert relative_error(binned.pdf(Q), exact.pdf(Q)) <= 1e-3
    # score_samples: log of the binned density in the body, exact log-sum-exp in the tails
    far = np.vstack([Q, [[30.0, 0.0]]])
    logs, exact_logs = binned.score_samples(far), exact.score_samples(far)
    assert np.isfinite(logs).all()
    assert logs[-1] == pytest.approx(exact_logs[-1], rel=1e-12)
    assert np.max(np.abs(logs - exact_logs)) <= 2e-3
    nodes, values = binned.grid()
    assert values.shape == binned.grid_size_ == tuple(len(a) for a in nodes)
    nodes, values = exact.grid(grid_size=(50, 60))
    assert values.shape == (50, 60)
    assert binned.pdf(np.empty((0, 2))).shape == binned.score_samples(np.empty((0, 2))).shape == (0,)


def test_grid_size_honoured_and_auto_small_n_is_exact():
    X = np.random.default_rng(19).standard_normal(1000)
    kde = KDE(bandwidth=0.2, method="binned", grid_size=777).fit(X)
    assert kde.grid_size_ == (777,)
    auto = KDE(bandwidth=0.2).fit(X)
    assert auto.method_ == "exact"


def test_auto_large_n_1d_is_binned():
    X = np.random.default_rng(23).standard_normal(60_000)
    kde = KDE(bandwidth=0.05, backend="numpy").fit(X)
    assert kde.method_ == "binned"
    Q = np.linspace(-3, 3, 200)
    exact = KDE(bandwidth=0.05, backend="numpy", method="exact").fit(X)
    assert relative_error(kde.pdf(Q), exact.pdf(Q)) <= 1e-4


def test_validation_errors():
    X = np.random.default_rng(29).standard_normal((100, 2))
    with pytest.raises(ValueError, match="method"):
        KDE(bandwidth=0.3, method="fft").fit(X)
    with pytest.raises(ValueError, match="tolerance"):
        KDE(bandwidth=0.3, method="binned", tolerance=2.0).fit(X)
    with pytest.raises(ValueError, match="grid_size"):
        KDE(bandwidth=0.3, method="binned", grid_size=1).fit(X)
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        KDE(bandwidth=0.3, method="binned").fit(np.zeros((10, 5)) + np.arange(5))
    with pytest.raises(ValueError, match=f"more than {MAX_GRID_NODES}.*larger tolerance"):
        KDE(bandwidth=0.01, method="binned", tolerance=1e-6).fit(X)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    h=st.floats(0.05, 2.0),
    seed=st.integers(0, 2**16),
    weighted=st.booleans(),
)
def test_property_1d_gaussian_within_tolerance(n, h, seed, weighted):
    """Any small weighted 1-D sample and bandwidth: the tolerance rule holds (tolerance 1e-3)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 1)) * rng.uniform(0.1, 5.0)
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    H = np.array([[h * h]])
    Q = queries(X, H, 2000, rng)
    binned = density_on_grid(X, H, "gaussian", weights=w, tolerance=1e-3)(Q)
    assert relative_error(binned, exact_pdf(X, H, "gaussian", Q, weights=w)) <= 1e-3


def test_density_on_grid_rejects_zero_weights_and_bad_tolerance():
    X = np.arange(5.0)
    with pytest.raises(ValueError, match="sum to zero"):
        density_on_grid(X, 1.0, weights=np.zeros(5))
    with pytest.raises(ValueError, match="tolerance"):
        density_on_grid(X, 1.0, tolerance=True)


def product_points(axes):
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))


@pytest.mark.parametrize("tolerance", [1e-3, 1e-4])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("n", [1, 300, 20_000])
def test_density_at_nodes_meets_tolerance(tolerance, d, n):
    """At the nodes of a given grid (narrower than the data on one side, wider on the other):
    relative error <= tolerance where the density is >= 1e-3 of its maximum, weighted."""
    if d == 2 and tolerance == 1e-4:
        pytest.skip("the 1e-4 computation grid of these 2-D samples exceeds 2^24 nodes")
    rng = np.random.default_rng(31 * d + n)
    X = rng.standard_normal((n, d)) * np.array([1.0, 0.7][:d])
    w = rng.uniform(0.2, 2.0, n)
    H = np.diag(rng.uniform(0.1, 0.4, d) ** 2) if n < 20_000 else 0.12**2 * np.eye(d)
    axes = [np.linspace(-2.5, 4.5, 90 + 7 * a) for a in range(d)]
    values = density_at_nodes(X, H, axes if d > 1 else axes[0], weights=w, tolerance=tolerance)
    assert values.shape == tuple(len(a) for a in axes)
    exact = exact_pdf(X, H, "gaussian", product_points(axes), weights=w)
    assert relative_error(values.ravel(), exact) <= tolerance


@pytest.mark.parametrize("kernel", COMPACT_SMOOTH)
def test_density_at_nodes_compact_kernels(kernel):
    rng = np.random.default_rng(37)
    X = rng.standard_normal((2000, 2))
    H = np.array([[0.16, 0.06], [0.06, 0.09]])
    axes = [np.linspace(-3, 3, 61), np.linspace(-2, 2, 41)]
    values = density_at_nodes(X, H, axes, kernel, tolerance=1e-3)
    exact = exact_pdf(X, H, kernel, product_points(axes))
    assert np.max(np.abs(values.ravel() - exact)) <= 1e-3 * exact.max()


def test_binning_correction_removes_the_second_order_bias():
    """The Gaussian's lags are corrected by -1/12 of their second differences, and at the nodes
    of a smooth estimate the corrected error is several times below the plain lags' (4x here,
    delta = 0.1 h; 7x in 1-D at n = 10^6)."""
    rng = np.random.default_rng(41)
    X = rng.standard_normal((50_000, 1))
    h = 0.1
    bd = density_on_grid(X, h * h, "gaussian", grid_size=1001)
    L = (len(kernel_on_lags("gaussian", np.array([[h * h]]), bd.spec, np.array([0.8]))) - 1) // 2
    lags = np.arange(-L, L + 1) * bd.spec.spacing[0]
    plain = np.exp(-0.5 * (lags / h) ** 2) / (h * np.sqrt(2 * np.pi))
    corrected = kernel_on_lags("gaussian", np.array([[h * h]]), bd.spec, np.array([0.8]))
    second = np.diff(np.pad(plain, 1), n=2)
    assert np.allclose(corrected, plain - second / 12, rtol=1e-12, atol=0)
    assert np.allclose(binning_corrected(plain), corrected, rtol=1e-12, atol=0)
    counts = linear_bin(X, bd.spec).counts
    exact = exact_pdf(X, np.array([[h * h]]), "gaussian", bd.nodes[0][:, None])
    plain_error = relative_error(convolve_same(counts, plain) / len(X), exact)
    assert relative_error(bd.values, exact) < plain_error / 3


def test_density_at_nodes_validation_and_kde_grid_nodes():
    rng = np.random.default_rng(43)
    X = rng.standard_normal((500, 2))
    H = 0.3**2 * np.eye(2)
    with pytest.raises(ValueError, match="2 axis arrays"):
        density_at_nodes(X, H, [np.linspace(0, 1, 5)])
    with pytest.raises(ValueError, match="equally spaced"):
        density_at_nodes(X, H, [np.linspace(0, 1, 5), np.array([0.0, 0.1, 0.5])])
    with pytest.raises(ValueError, match="equally spaced"):
        density_at_nodes(X, H, [np.linspace(1, 0, 5), np.linspace(0, 1, 5)])
    with pytest.raises(ValueError, match="at least 2"):
        density_at_nodes(X, H, [np.array([0.0]), np.linspace(0, 1, 5)])
    kde = KDE(bandwidth=0.3, method="binned", tolerance=1e-3).fit(X)
    axes = [np.linspace(-2, 2, 21), np.linspace(-1, 1, 11)]
    nodes, values = kde.grid(nodes=axes)
    assert values.shape == (21, 11) and all(np.array_equal(a, b) for a, b in zip(nodes, axes))
    exact = KDE(bandwidth=0.3, backend="numpy", method="exact").fit(X).pdf(product_points(axes))
    assert relative_error(values.ravel(), exact) <= 1e-3
    with pytest.raises(ValueError, match="not both"):
        kde.grid(grid_size=10, nodes=axes)


@pytest.mark.parametrize("shape", [(50,), (30, 40), (8, 9, 10), (5, 6, 7, 8), (600, 500)])
def test_max_relative_second_differences_matches_numpy(shape):
    """The pilot's curvature pass (Numba) against slicing: max |f_{j+e_a} - 2 f_j + f_{j-e_a}| / f_j
    over interior nodes with f_j >= threshold, per axis."""
    from parzen.binned._numba_curvature import max_relative_second_differences

    f = np.abs(np.random.default_rng(len(shape)).standard_normal(shape))
    d, threshold = f.ndim, 0.3
    inner = tuple(slice(1, -1) for _ in range(d))
    body = f[inner] >= threshold
    expected = []
    for a in range(d):
        second = np.diff(f, n=2, axis=a)[tuple(slice(None) if b == a else slice(1, -1) for b in range(d))]
        expected.append(np.max(np.abs(second[body]) / f[inner][body]))
    np.testing.assert_allclose(max_relative_second_differences(f, threshold), expected, rtol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_separable_gaussian_convolution_equals_general(d):
    """Diagonal H: the transform from 1-D factors and the corrected lags' d-dimensional FFT agree
    to 1e-9 of the maximum (they differ only in the correction term one lag beyond the reach,
    e^-22 of the peak)."""
    from parzen.binned.density import kernel_convolution, kernel_reach

    rng = np.random.default_rng(d)
    X = rng.standard_normal((3000, d))
    H = np.diag(rng.uniform(0.1, 0.4, d) ** 2)
    reach = kernel_reach("gaussian", H, 1e-4)
    spec = density_on_grid(X, H, grid_size=[120, 90, 40][:d]).spec
    counts = linear_bin(X, spec).counts
    separable = kernel_convolution(counts, "gaussian", H, spec, reach)
    general = convolve_same(counts, kernel_on_lags("gaussian", H, spec, reach))
    assert np.max(np.abs(separable - general)) <= 1e-9 * general.max()
