"""Binned kernel density estimation: the density on a grid by FFT, anywhere by interpolation.

For data X_i with weights w_i (summing to W) and a bandwidth matrix H, the exact estimate is
f(x) = W^-1 sum_i w_i K_H(x - X_i), K_H(u) = |H|^-1/2 K(H^-1/2 u) (eq. 6 of Andrzejewski et al.,
paper 000 in docs/statistics.md).  The binned estimate (Wand 1994, "Fast computation of
multivariate kernel estimators", J. Comput. Graph. Statist. 3(4), 433-445, sections 2-3; Wand &
Jones 1995, *Kernel Smoothing*, appendix D; Fan & Marron 1994, "Fast implementations of
nonparametric curve estimators", J. Comput. Graph. Statist. 3(1), 35-56) is

    f~(g_j) = W^-1 sum_k c_k kappa_{j-k},      kappa_l = K_H(l * delta)

at the grid nodes g_j, with c_k the linear-binning counts (:func:`parzen.binned.grid.linear_bin`)
and kappa the kernel at the grid lags l = (l_1, ..., l_d), |l_a| <= L_a.  The sum is a discrete
convolution, computed by FFT (``scipy.fft``) with both arrays zero padded to the full length
m_a + 2 L_a so that nothing wraps around.  Between nodes, f~ is interpolated multilinearly, as
KDEpy's ``FFTKDE`` does in 1-D.

Choices, with the reasons:

* **Reach.**  The grid covers the data widened by the kernel's reach on each axis: the support
  radius (1/sigma_K in units of the kernel's standard deviation, ``Kernel.unit_scale``) for the
  bounded kernels, and tau standard deviations for the Gaussian with tau = sqrt(2 log(10 /
  (tolerance * FLOOR))), so that the mass cut off is below a tenth of the tolerance even where the
  density is FLOOR = 1e-3 of its maximum (tau = 6.07 for tolerance 1e-4).
* **Grid spacing from the tolerance.**  Linear binning and linear interpolation each err by
  at most delta_a^2 / 8 times the estimate's curvature along axis a (second-order Taylor terms,
  no mixed derivatives), so the relative error is about c sum_a delta_a^2 R_a with R_a the largest
  |d^2 f / dx_a^2| / f where f is at least FLOOR of its maximum.  For a single data point (the
  roughest estimate) R_a is (z^2 - 1) / h_a^2 at z^2 <= 2 log(1 / FLOOR), h_a = (H^-1)_aa^-1/2
  the kernel's standard deviation along axis a given the other coordinates: the worst case is
  C sum_a (delta_a / h_a)^2 with the measured :data:`ERROR_CONSTANT` C, and delta_a = h_a
  sqrt(tolerance / (C d)) meets the tolerance for any data (:func:`grid_spacing`; the rule for the
  compact kernels).  Large samples give smoother estimates: for the Gaussian, R_a is measured on a
  pilot estimate (spacing 0.2 h_a, of all rows up to 10^6, a random 10^6 of them beyond) and
  delta_a = sqrt(tolerance / (c_d d R_a)) with the measured :data:`CURVATURE_CONSTANTS` c_d, never
  finer than the worst case nor coarser than the pilot (``docs/algorithms.md``, "Binned
  estimation: KDE evaluation", has the measurements).
* **Binning bias (the Gaussian).**  The counts sample the data convolved with the binning's hat
  function Lambda, of variance delta_a^2 / 6 per axis, so f~ = f + sum_a (delta_a^2 / 12)
  d^2 f / dx_a^2 + O(delta^4) at the nodes of a smooth estimate.  The Gaussian's lags are
  corrected by the same term, kappa_l - (1/12) sum_a (kappa_{l+e_a} - 2 kappa_l + kappa_{l-e_a})
  (:func:`binning_corrected`), which leaves O(delta^4) plus a zero-mean term per point (one point
  at fraction t of its cell errs by (t(1 - t) / 2 - 1/12) delta^2 K'', at most 1/12 against
  the uncorrected 1/8).  Measured at n = 10^6 (2-D, bimodal, h = n^-1/6, 1023^2 nodes): 3.0e-4
  at the nodes against 8.0e-4 uncorrected, 9.9e-4 between them against 1.7e-3.  The compact
  kernels, not smooth at their edge (or at 0), are not corrected.
* **The uniform kernel.**  Its jump makes kappa_l = K_H(l delta) a first-order quadrature of the
  convolution (an O(delta / h) bias).  For it kappa_l is the kernel's average against the linear
  binning's hat function, kappa_l = int K_H(u) prod_a Lambda((u_a - l_a delta_a) / delta_a) du /
  prod_a delta_a with Lambda(t) = max(1 - |t|, 0) (a product-integration rule that is exact for
  densities linear on each cell), by a midpoint rule on each lag cell.  The other kernels are
  continuous, and their point values are second-order accurate.  The exact uniform-kernel
  estimate still jumps by w_i K_H(0) / W at each X_i +- reach; no interpolation follows those
  jumps, so its binned estimate is accurate for the smoothed density, not pointwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import fft, interpolate, linalg

from ..kernels import get_kernel
from ._numba_curvature import max_relative_second_differences
from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, column_range, linear_bin

#: Where the tolerance is promised: at points where the density is at least this fraction of its
#: maximum (relative errors grow without bound in the tails).
FLOOR = 1e-3
#: The pilot estimate's spacing in units of h_a, and the most rows it bins.
PILOT_STEP = 0.2
PILOT_SAMPLES = 1_000_000
#: The pilot's largest spacing in units of h_a for :func:`density_at_nodes`, where the pilot is
#: also the estimate when the rule needs no finer grid: finer than PILOT_STEP, as the rule asks
#: for 0.08 - 0.12 h_a in 2-D at tolerance 1e-3 (n = 10^6 bimodal: one pass instead of two).
NODE_PILOT_STEP = 0.1
#: The most grid nodes (all axes together) chosen from a tolerance.
MAX_GRID_NODES = 2**24
#: c_d in "relative error ~ c_d sum_a delta_a^2 R_a", R_a the pilot estimate's largest relative
#: curvature |d^2 f / dx_a^2| / f along axis a, for d = 1 .. 4, at points anywhere (interpolated).
#: Measured with the binning correction by ``benchmarks/binned_kde_constant.py``
#: (``benchmarks/results/binned_kde_constant.md``: bimodal samples n = 1 ... 10^6, two bandwidths,
#: tolerances 1e-3 and 1e-4): the rule needs c_1 >= 0.145 and c_2 >= 0.064 (the largest
#: curvatures along two axes rarely meet at one point); kept with a third more, and d = 3, 4 (not
#: measured) take the 1-D value, the largest.
CURVATURE_CONSTANTS = {1: 0.2, 2: 0.085, 3: 0.2, 4: 0.2}
#: The same at the nodes only (:func:`density_at_nodes`: binning error, no interpolation),
#: measured alike: c_1 >= 0.046, c_2 >= 0.030; kept with a third more, d = 3, 4 as in 1-D.
NODE_CURVATURE_CONSTANTS = {1: 0.065, 2: 0.04, 3: 0.065, 4: 0.065}
#: C in "largest relative error ~ C sum_a (delta_a / h_a)^2" for any data, the worst case (one
#: Gaussian bump, relative curvature up to z^2 - 1 = 2 log(1 / FLOOR) - 1 = 12.8 where it is at
#: least FLOOR of its peak): 0.35 * 12.8 = 4.5, measured for one or two points up to 2.66 without
#: the binning correction and 2.2 with it.
ERROR_CONSTANT = 4.5
#: Midpoints per axis and lag cell in the hat average of the uniform kernel (fewer in 3-D, 4-D).
_HAT_POINTS = 8


@dataclass(frozen=True)
class BinnedDensity:
    """A kernel density estimate on a regular grid, interpolated multilinearly between nodes.

    Parameters
    ----------
    spec : GridSpec
        The grid.
    values : numpy.ndarray
        Array of shape ``spec.sizes``: the binned density f~ at the nodes.
    """

    spec: GridSpec
    values: np.ndarray

    @property
    def nodes(self) -> tuple[np.ndarray, ...]:
        """The node coordinates, one array per axis."""
        return tuple(self.spec.nodes(a) for a in range(self.spec.d))

    def __call__(self, points) -> np.ndarray:
        """The density at arbitrary points by multilinear interpolation; 0 outside the grid.

        Parameters
        ----------
        points : array_like of shape (m, d), or (m,) in 1-D
            Where to evaluate.

        Returns
        -------
        numpy.ndarray
            (m,) interpolated values.
        """
        P = np.asarray(points, dtype=np.float64)
        if P.ndim == 1:
            P = P[:, None]
        if self.spec.d == 1:
            return np.interp(P[:, 0], self.nodes[0], self.values, left=0.0, right=0.0)
        interpolator = interpolate.RegularGridInterpolator(self.nodes, self.values, bounds_error=False, fill_value=0.0)
        return interpolator(P)


def gaussian_reach(tolerance: float) -> float:
    """tau, the Gaussian's reach in standard deviations: sqrt(2 log(10 / (tolerance * FLOOR))).

    Parameters
    ----------
    tolerance : float
        The requested relative error.

    Returns
    -------
    float
        tau (6.07 for tolerance 1e-4).
    """
    return math.sqrt(2.0 * math.log(10.0 / (tolerance * FLOOR)))


def kernel_reach(kernel: str, H: np.ndarray, tolerance: float) -> np.ndarray:
    """(d,) how far K_H reaches along each axis: r sqrt(H_aa), r = tau (Gaussian) or 1/sigma_K.

    Parameters
    ----------
    kernel : str
        The kernel's name.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    tolerance : float
        The requested relative error (sets tau for the Gaussian).

    Returns
    -------
    numpy.ndarray
        The half-width of the kernel's box on each axis, in data units.
    """
    k = get_kernel(kernel)
    d = H.shape[0]
    radius = gaussian_reach(tolerance) if k.name == "gaussian" else k.support / k.unit_scale(d)
    return radius * np.sqrt(np.diag(H))


def grid_spacing(H: np.ndarray, tolerance: float) -> np.ndarray:
    """(d,) the spacing delta_a = h_a sqrt(tolerance / (C d)), h_a = (H^-1)_aa^-1/2.

    Parameters
    ----------
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    tolerance : float
        The requested relative error where the density is at least FLOOR of its maximum.

    Returns
    -------
    numpy.ndarray
        The node spacing on each axis.
    """
    d = H.shape[0]
    conditional_sd = 1.0 / np.sqrt(np.diag(linalg.inv(H)))
    return conditional_sd * math.sqrt(tolerance / (ERROR_CONSTANT * d))


def grid_for(X: np.ndarray, H: np.ndarray, kernel: str, *, weights=None, tolerance: float = 1e-4, grid_size=None,
             data_range=None) -> GridSpec:
    """The grid of the binned estimate: the data's box widened by the kernel's reach.

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) data.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    kernel : str
        The kernel's name.
    weights : array_like of shape (n,), optional
        Non-negative weights (for the Gaussian's pilot estimate).
    tolerance : float, default 1e-4
        The relative error the grid is chosen for: :func:`grid_spacing`, and for the Gaussian
        the coarser spacing that the pilot estimate's curvature allows (module docstring).
    grid_size : None, int or sequence of int
        Nodes per axis, overriding the tolerance's choice.
    data_range : (lows, highs), optional
        The columns' smallest and largest values when already known (a backend's
        :meth:`~parzen.backends.KDEBackend.column_summary`); default: computed from X.

    Returns
    -------
    GridSpec

    Raises
    ------
    ValueError
        If the tolerance's grid would exceed :data:`MAX_GRID_NODES` nodes (the message names the
        fixes), or ``grid_size`` or ``tolerance`` is invalid.
    """
    lows, highs = column_range(X) if data_range is None else data_range
    pilot_counts, every_row = _pilot_binner(X, weights)
    return grid_over(lows, highs, H, kernel, pilot_counts=pilot_counts, every_row=every_row, tolerance=tolerance,
                     grid_size=grid_size)


def grid_over(lows, highs, H: np.ndarray, kernel: str, *, pilot_counts: Callable[[GridSpec], np.ndarray],
              every_row: bool = True, tolerance: float = 1e-4, grid_size=None) -> GridSpec:
    """:func:`grid_for` from the data's range and a function that bins (some of) them.

    Parameters
    ----------
    lows, highs : array_like of shape (d,)
        The data's smallest and largest values.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    kernel : str
        The kernel's name.
    pilot_counts : callable
        GridSpec -> linear-binning counts of the data (of at most :data:`PILOT_SAMPLES` rows of
        them, or all rows: data served in chunks bin all in one pass) for the Gaussian's pilot
        estimate; not called for the other kernels or a given ``grid_size``.
    every_row : bool, default True
        Whether ``pilot_counts`` bins every row.
    tolerance, grid_size
        As in :func:`grid_for`.

    Returns
    -------
    GridSpec

    Raises
    ------
    ValueError
        As :func:`grid_for`.
    """
    d = H.shape[0]
    _check_dimensions_and_tolerance(d, tolerance)
    reach = kernel_reach(kernel, H, tolerance)
    lows, highs = np.asarray(lows, dtype=np.float64) - reach, np.asarray(highs, dtype=np.float64) + reach
    if grid_size is not None:
        sizes = np.broadcast_to(np.asarray(grid_size), (d,))
        if sizes.dtype.kind not in "iu" or np.any(sizes < 2):
            raise ValueError(f"grid_size must be an integer >= 2 or {d} of them, got {grid_size!r}")
        return GridSpec.covering(lows, highs, sizes)
    spacing = _rule(pilot_counts, every_row, H, kernel, lows, highs, tolerance, False, None)[0]
    sizes = np.maximum(np.ceil((highs - lows) / spacing).astype(np.int64) + 1, 16)
    _check_grid_nodes(sizes, tolerance)
    return GridSpec.covering(lows, highs, sizes)


def _pilot_binner(X: np.ndarray, weights) -> tuple[Callable[[GridSpec], np.ndarray], bool]:
    """GridSpec -> the counts of at most PILOT_SAMPLES rows of X (a fixed random subset beyond),
    and whether those are every row."""
    n = X.shape[0]
    every_row = n <= PILOT_SAMPLES
    rows = slice(None) if every_row else np.random.default_rng(0).integers(0, n, PILOT_SAMPLES)

    def pilot_counts(spec: GridSpec) -> np.ndarray:
        return linear_bin(X[rows], spec, None if weights is None else np.asarray(weights)[rows]).counts

    return pilot_counts, every_row


def _check_dimensions_and_tolerance(d: int, tolerance: float) -> None:
    if d > MAX_DIMENSIONS:
        raise ValueError(f"binned estimation takes at most {MAX_DIMENSIONS} dimensions, not {d}; use method='exact'")
    if isinstance(tolerance, bool) or not (isinstance(tolerance, Real) and 0 < tolerance < 1):
        raise ValueError(f"tolerance must be a number in (0, 1), got {tolerance!r}")


def _check_grid_nodes(sizes: np.ndarray, tolerance: float) -> None:
    total = float(np.prod(np.asarray(sizes, dtype=np.float64)))
    if total > MAX_GRID_NODES:
        raise ValueError(
            f"tolerance={tolerance:g} needs a grid of {' x '.join(map(str, sizes))} = {total:.3g} nodes, more than "
            f"{MAX_GRID_NODES}; pass a larger tolerance, a smaller grid_size=, or method='exact'"
        )


def rule_spacing(X, H, kernel: str, lows, highs, *, weights=None, tolerance: float = 1e-4, at_nodes: bool = False) -> np.ndarray:
    """(d,) the spacing the tolerance needs: :func:`grid_spacing`, widened for the Gaussian
    from the curvature of a pilot estimate (module docstring).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) data.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    kernel : str
        The kernel's name.
    lows, highs : numpy.ndarray
        (d,) the grid's box (the data widened by the kernel's reach).
    weights : array_like of shape (n,), optional
        Non-negative weights.
    tolerance : float, default 1e-4
        The relative error sought where the density is at least FLOOR of its maximum.
    at_nodes : bool, default False
        Whether the density is wanted only at the grid's nodes (no interpolation error:
        :data:`NODE_CURVATURE_CONSTANTS` instead of :data:`CURVATURE_CONSTANTS`).

    Returns
    -------
    numpy.ndarray
        The node spacing on each axis.
    """
    pilot_counts, every_row = _pilot_binner(X, weights)
    return _rule(pilot_counts, every_row, H, kernel, lows, highs, tolerance, at_nodes, None)[0]


def _rule(pilot_counts, every_row, H, kernel, lows, highs, tolerance, at_nodes, pilot_spec):
    """(spacing, pilot): :func:`rule_spacing`, and the pilot estimate on ``pilot_spec`` (default:
    spacing PILOT_STEP h_a over [lows, highs]) where it is the binned estimate of all rows (the
    Gaussian, ``every_row``), else None."""
    spacing = grid_spacing(H, tolerance)
    if get_kernel(kernel).name != "gaussian":
        return spacing, None
    if pilot_spec is None:
        pilot_step = PILOT_STEP / np.sqrt(np.diag(linalg.inv(H)))  # PILOT_STEP h_a
        sizes = np.maximum(np.ceil((highs - lows) / pilot_step).astype(np.int64) + 1, 16)
        if float(np.prod(sizes.astype(np.float64))) > MAX_GRID_NODES:
            return spacing, None
        pilot_spec = GridSpec.covering(lows, highs, sizes)
    constant = (NODE_CURVATURE_CONSTANTS if at_nodes else CURVATURE_CONSTANTS)[H.shape[0]]
    return _curvature_spacing(pilot_counts(pilot_spec), every_row, H, pilot_spec, spacing, tolerance, constant)


def _curvature_spacing(counts, every_row, H, spec, worst_case, tolerance, constant):
    """The Gaussian's spacing from the curvature of a pilot estimate on ``spec`` (module
    docstring), and the pilot estimate where it is that of all rows (else None).

    delta_a = sqrt(tolerance / (c d R_a)) (c: ``constant``), R_a the largest |d^2 f / dx_a^2| / f
    where f >= FLOOR max f / 3 (queries between pilot nodes lie beyond FLOOR), from second
    differences of the binned estimate from ``counts`` (of at most PILOT_SAMPLES rows) on
    ``spec``; kept between the worst-case spacing (:func:`grid_spacing`) and the pilot's own.
    """
    d = H.shape[0]
    f = kernel_convolution(counts, "gaussian", H, spec, kernel_reach("gaussian", H, tolerance))
    if not f.max() > 0:  # the sub-sample drew only zero weights
        return worst_case, None
    # where f >= FLOOR max f / 3: a pilot step beyond the promise's region
    curvatures = max_relative_second_differences(f, FLOOR / 3 * f.max()) / spec.spacing**2
    spacing = np.empty(d)
    for a, curvature in enumerate(curvatures):
        spacing[a] = math.sqrt(tolerance / (constant * d * curvature)) if curvature > 0 else np.inf
    pilot = np.maximum(f / counts.sum(), 0.0) if every_row else None
    return np.clip(spacing, worst_case, spec.spacing), pilot


def kernel_on_lags(kernel: str, H: np.ndarray, spec: GridSpec, reach: np.ndarray) -> np.ndarray:
    """kappa: K_H at the lags l delta, |l_a| <= L_a = min(ceil(reach_a / delta_a), m_a - 1).

    For the uniform kernel, the hat-function average of K_H around each lag (module docstring).

    Parameters
    ----------
    kernel : str
        The kernel's name.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    spec : GridSpec
        The grid (its spacing and sizes).
    reach : numpy.ndarray
        (d,) the kernel's half-width per axis (:func:`kernel_reach`).

    Returns
    -------
    numpy.ndarray
        Array of shape (2 L_1 + 1, ..., 2 L_d + 1), the lag l at index l + L.
    """
    k = get_kernel(kernel)
    d = spec.d
    delta = spec.spacing
    half = np.minimum(np.ceil(reach / delta).astype(np.int64), np.asarray(spec.sizes) - 1)
    axes = [np.arange(-L, L + 1) * dl for L, dl in zip(half, delta)]
    chol = linalg.cholesky(H, lower=True)
    whitening = k.unit_scale(d) * linalg.solve_triangular(chol, np.eye(d), lower=True)
    norm = k.norm_const(d) * k.unit_scale(d) ** d / float(np.prod(np.diag(chol)))
    lags = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)  # (..., d)
    if k.name == "gaussian":
        z = lags @ whitening.T
        return binning_corrected(norm * k.profile(np.einsum("...a,...a->...", z, z)))
    if k.name != "uniform":
        z = lags @ whitening.T
        return norm * k.profile(np.einsum("...a,...a->...", z, z))
    q = max(2, min(_HAT_POINTS, int((2e7 / lags[..., 0].size) ** (1.0 / d))))
    t = (np.arange(2 * q) + 0.5) / q - 1.0  # midpoints of 2q cells on [-1, 1]
    out = np.zeros(lags.shape[:-1])
    total = 0.0
    for offset in np.stack(np.meshgrid(*[t] * d, indexing="ij"), axis=-1).reshape(-1, d):
        weight = float(np.prod(1.0 - np.abs(offset)))
        z = (lags + offset * delta) @ whitening.T
        out += weight * k.profile(np.einsum("...a,...a->...", z, z))
        total += weight
    return norm * out / total


def binning_corrected(kappa: np.ndarray) -> np.ndarray:
    """kappa_l - (1/12) sum_a (kappa_{l+e_a} - 2 kappa_l + kappa_{l-e_a}): linear binning's
    smoothing undone to second order (the Gaussian's lags; module docstring, "Binning bias").

    Parameters
    ----------
    kappa : numpy.ndarray
        The kernel at the lags, centred, 0 beyond its edges.

    Returns
    -------
    numpy.ndarray
        The corrected lags, of the same shape.
    """
    padded = np.pad(kappa, 1)
    out = kappa.copy()
    d = kappa.ndim
    inner = tuple(slice(1, -1) for _ in range(d))
    for a in range(d):
        before = tuple(slice(0, -2) if b == a else slice(1, -1) for b in range(d))
        after = tuple(slice(2, None) if b == a else slice(1, -1) for b in range(d))
        out -= (padded[after] - 2.0 * padded[inner] + padded[before]) / 12.0
    return out


def kernel_convolution(counts: np.ndarray, kernel: str, H: np.ndarray, spec: GridSpec, reach: np.ndarray,
                       backend="numpy") -> np.ndarray:
    """sum_k counts_k kappa_{j-k} at every node j, kappa = :func:`kernel_on_lags`.

    For the Gaussian with a diagonal H, kappa's transform is built from one 1-D transform per
    axis instead of a d-dimensional one: kappa = prod_a g_a (l_a) (g_a the 1-D Gaussian of
    variance H_aa at the lags) less the binning correction, and a second difference along axis a
    multiplies the transform by 2 cos(omega_a) - 2 = -4 sin^2(omega_a / 2), so the corrected
    transform is prod_a G_a(omega_a) (1 + (1/3) sum_a sin^2(omega_a / 2)) (zero padding keeps
    the circular differences linear).  Equal to the general path to rounding (tested); a third
    fewer d-dimensional FFTs.  On the gpu backend the general path runs (:func:`convolve_same`
    through ``torch.fft``).

    Parameters
    ----------
    counts : numpy.ndarray
        Array of shape ``spec.sizes``.
    kernel : str
        The kernel's name.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    spec : GridSpec
        The grid.
    reach : numpy.ndarray
        (d,) the kernel's half-width per axis (:func:`kernel_reach`).
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the FFTs.

    Returns
    -------
    numpy.ndarray
        Array of the shape of ``counts``.
    """
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    be = resolve_backend(backend)
    if get_kernel(kernel).name != "gaussian" or np.count_nonzero(H - np.diag(np.diag(H))) or be.name == "gpu":
        return convolve_same(counts, kernel_on_lags(kernel, H, spec, reach), be)
    d = spec.d
    half = np.minimum(np.ceil(reach / spec.spacing).astype(np.int64), np.asarray(spec.sizes) - 1)
    shape = [fft.next_fast_len(int(m + 2 * L), real=True) for m, L in zip(spec.sizes, half)]
    transform = np.ones([s // 2 + 1 if a == d - 1 else s for a, s in enumerate(shape)], dtype=complex)
    correction = np.ones(transform.shape)
    for a in range(d):
        lags = np.arange(-half[a], half[a] + 1) * spec.spacing[a]
        factor = np.exp(-0.5 * lags**2 / H[a, a]) / math.sqrt(2.0 * math.pi * H[a, a])
        along = fft.rfft(factor, shape[a]) if a == d - 1 else fft.fft(factor, shape[a])
        omega = 2.0 * math.pi * np.arange(len(along)) / shape[a]
        view = [1] * d
        view[a] = len(along)
        transform = transform * along.reshape(view)
        correction = correction + np.sin(omega / 2.0).reshape(view) ** 2 / 3.0
    axes = tuple(range(d))
    conv = fft.irfftn(fft.rfftn(counts, shape, axes=axes, workers=-1) * (transform * correction), shape, axes=axes, workers=-1)
    return conv[tuple(slice(L, L + m) for m, L in zip(spec.sizes, half))]


def convolve_same(counts: np.ndarray, kappa: np.ndarray, backend="numpy") -> np.ndarray:
    """sum_k counts_k kappa_{j-k} at every node j, by zero-padded real FFTs (no wrap-around), on
    ``backend`` (:meth:`parzen.backends.KDEBackend.fft_convolve`: ``scipy.fft`` on all cores on
    the host, 0.43 s against 1.04 s on one for a 2048^2 grid, 2 cores; ``torch.fft`` on the gpu).

    Parameters
    ----------
    counts : numpy.ndarray
        Array of shape (m_1, ..., m_d).
    kappa : numpy.ndarray
        Array of shape (2 L_1 + 1, ..., 2 L_d + 1), centred.
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the FFTs.

    Returns
    -------
    numpy.ndarray
        Array of the shape of ``counts``.
    """
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    full = [m + 2 * (k // 2) for m, k in zip(counts.shape, kappa.shape)]
    shape = [fft.next_fast_len(s, real=True) for s in full]
    conv = resolve_backend(backend).fft_convolve(counts, kappa, shape)
    return conv[tuple(slice(k // 2, k // 2 + m) for m, k in zip(counts.shape, kappa.shape))]


def density_on_grid(X, H, kernel: str = "gaussian", *, weights=None, tolerance: float = 1e-4, grid_size=None,
                    backend="auto") -> BinnedDensity:
    """The binned kernel density estimate on a grid covering the data and the kernel's reach.

    f~(g_j) = W^-1 sum_k c_k kappa_{j-k} (Wand 1994, section 3; Wand & Jones 1995, appendix D),
    c the linear-binning counts, kappa the kernel at the grid lags, by FFT.

    Parameters
    ----------
    X : array_like of shape (n, d) or (n,)
        The data, d <= 4.
    H : array_like of shape (d, d), or float (1-D: the variance h^2)
        The bandwidth matrix, symmetric positive definite.
    kernel : str, default "gaussian"
        One of ``parzen.kernels.KERNELS``.
    weights : array_like of shape (n,), optional
        Non-negative weights (normalised here).
    tolerance : float, default 1e-4
        The relative error sought where the density is at least FLOOR = 1e-3 of its maximum; sets
        the grid (:func:`grid_for`).
    grid_size : None, int or sequence of int
        Nodes per axis, overriding the tolerance.
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins the data and computes the FFTs (the gpu streams float32 or float64 rows from host
        memory: :meth:`parzen.backends.KDEBackend.linear_bin`).

    Returns
    -------
    BinnedDensity
        Its ``nodes`` and ``values`` are the grid and the density there (for plots); call it on
        points to interpolate.

    Raises
    ------
    ValueError
        For d > 4, an invalid tolerance or grid_size, weights summing to zero, or a grid beyond
        :data:`MAX_GRID_NODES`.
    """
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    values, H = _data_and_bandwidth(X, H, weights)
    be = resolve_backend(backend, work=float(len(values)) * 2 ** values.shape[1])
    summary = be.column_summary(values, moments=False)
    spec = grid_for(values, H, kernel, weights=weights, tolerance=tolerance, grid_size=grid_size,
                    data_range=(summary.lows, summary.highs))
    return BinnedDensity(spec, _binned_estimate(values, H, kernel, spec, weights, tolerance, be))


def density_at_nodes(X, H, nodes, kernel: str = "gaussian", *, weights=None, tolerance: float = 1e-4) -> np.ndarray:
    """The binned kernel density estimate at the nodes of a given regular grid (KDEpy
    ``FFTKDE.evaluate(grid)``'s case), without interpolation.

    The estimate is computed on the given grid refined r_a = ceil(Delta_a / delta_a) times
    (Delta_a the grid's spacing, delta_a the spacing the tolerance needs at nodes,
    :func:`rule_spacing` with ``at_nodes=True``) and extended by whole steps over the data and
    the kernel's reach, so that every given node is a node of the computation; the values there
    are read off, with no interpolation error (module docstring).  The Gaussian's pilot estimate
    is computed on the given grid refined to a spacing of at most NODE_PILOT_STEP h_a; where the rule
    needs no finer grid and the pilot holds every row, it is the estimate (one binning pass).

    Parameters
    ----------
    X : array_like of shape (n, d) or (n,)
        The data, d <= 4.
    H : array_like of shape (d, d), or float (1-D: the variance h^2)
        The bandwidth matrix, symmetric positive definite.
    nodes : sequence of d array_like, or one array_like in 1-D
        The grid's coordinates on each axis, increasing and equally spaced (at least 2 each).
    kernel : str, default "gaussian"
        One of ``parzen.kernels.KERNELS``.
    weights : array_like of shape (n,), optional
        Non-negative weights (normalised here).
    tolerance : float, default 1e-4
        The relative error sought where the density is at least FLOOR = 1e-3 of its maximum.

    Returns
    -------
    numpy.ndarray
        The density at the grid's nodes, of shape (len(nodes[0]), ..., len(nodes[d-1])).

    Raises
    ------
    ValueError
        For d > 4, an invalid tolerance, nodes that are not d increasing equally spaced axes,
        weights summing to zero, or a computation grid beyond :data:`MAX_GRID_NODES`.
    """
    values, H = _data_and_bandwidth(X, H, weights)
    d = values.shape[1]
    _check_dimensions_and_tolerance(d, tolerance)
    axes = _regular_axes(nodes, d)
    first = np.array([a[0] for a in axes])
    last = np.array([a[-1] for a in axes])
    counts = np.array([len(a) for a in axes])
    step = (last - first) / (counts - 1)
    reach = kernel_reach(kernel, H, tolerance)
    data_lows, data_highs = column_range(values)
    lows, highs = np.minimum(data_lows - reach, first), np.maximum(data_highs + reach, last)
    pilot_spec, pilot_refine = None, None
    if get_kernel(kernel).name == "gaussian":
        # the pilot on the given grid refined to a spacing of at most NODE_PILOT_STEP h_a (the
        # final grid is at least as fine): where the rule asks for no finer one, it is the estimate
        pilot_refine = np.maximum(np.ceil(step * np.sqrt(np.diag(linalg.inv(H))) / NODE_PILOT_STEP), 1).astype(np.int64)
        pilot_spec = _refined_grid(first, last, counts, pilot_refine, lows, highs)[0]
        _check_grid_nodes(np.asarray(pilot_spec.sizes), tolerance)
    pilot_counts, every_row = _pilot_binner(values, weights)
    spacing, pilot = _rule(pilot_counts, every_row, H, kernel, lows, highs, tolerance, True, pilot_spec)
    refine = np.maximum(np.ceil(step / spacing * (1 - 1e-12)), 1).astype(np.int64)
    spec, before = _refined_grid(first, last, counts, refine, lows, highs)
    if pilot is not None and pilot_refine is not None and np.array_equal(refine, pilot_refine):
        estimate = pilot
    else:
        _check_grid_nodes(np.asarray(spec.sizes), tolerance)
        estimate = _binned_estimate(values, H, kernel, spec, weights, tolerance)
    return estimate[tuple(slice(b, b + (m - 1) * r + 1, r) for b, m, r in zip(before, counts, refine))]


def _refined_grid(first, last, counts, refine, lows, highs) -> tuple[GridSpec, np.ndarray]:
    """The grid of nodes first + k step / refine (step = (last - first) / (counts - 1)) that
    covers [lows, highs], and how many of its nodes lie before ``first`` on each axis."""
    fine = (last - first) / (counts - 1) / refine
    before = np.ceil((first - lows) / fine).astype(np.int64)
    after = np.ceil((highs - last) / fine).astype(np.int64)
    sizes = before + (counts - 1) * refine + 1 + after
    return GridSpec(tuple(map(float, first - before * fine)), tuple(map(float, last + after * fine)), tuple(map(int, sizes))), before


def _regular_axes(nodes, d: int) -> list[np.ndarray]:
    """The d node arrays of a regular grid, checked: increasing, equally spaced, at least 2."""
    axes = [np.asarray(nodes, dtype=np.float64)] if d == 1 and np.ndim(nodes) == 1 else [np.asarray(a, dtype=np.float64) for a in nodes]
    if len(axes) != d:
        raise ValueError(f"nodes must give {d} axis arrays (one per column of X), got {len(axes)}")
    for a, axis in enumerate(axes):
        if axis.ndim != 1 or axis.size < 2 or not np.all(np.isfinite(axis)):
            raise ValueError(f"nodes[{a}] must be a 1-D array of at least 2 finite coordinates, got shape {axis.shape}")
        steps = np.diff(axis)
        step = (axis[-1] - axis[0]) / (axis.size - 1)
        if not (step > 0 and np.all(np.abs(steps - step) <= 1e-6 * step)):
            raise ValueError(
                f"nodes[{a}] must be increasing and equally spaced (e.g. numpy.linspace); "
                "for scattered points use density_on_grid(...)(points)"
            )
    return axes


def _data_and_bandwidth(X, H, weights) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) float data (float32 stays float32: the gpu sends it so) and (d, d) H; the weights
    must not sum to zero."""
    values = np.asarray(X)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if weights is not None and not np.sum(weights) > 0:
        raise ValueError("the weights sum to zero: there is no density to estimate")
    return values, np.atleast_2d(np.asarray(H, dtype=np.float64))


def _binned_estimate(values, H, kernel, spec, weights, tolerance, backend="numpy") -> np.ndarray:
    """f~ at the nodes of ``spec``: counts convolved with kappa by FFT, divided by W."""
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    be = resolve_backend(backend)
    return _estimate_from_counts(be.linear_bin(values, spec, weights).counts, H, kernel, spec, tolerance, be)


def _estimate_from_counts(counts, H, kernel, spec, tolerance, backend) -> np.ndarray:
    density = kernel_convolution(counts, kernel, H, spec, kernel_reach(kernel, H, tolerance), backend) / counts.sum()
    return np.maximum(density, 0.0)  # FFT round-off leaves ~1e-17 negatives


def density_from_counts(bins: BinCounts, H: np.ndarray, kernel: str = "gaussian", *, tolerance: float = 1e-4,
                        backend="numpy") -> BinnedDensity:
    """The binned estimate f~(g_j) = W^-1 sum_k c_k kappa_{j-k} from counts on a grid of :func:`grid_for`.

    Parameters
    ----------
    bins : BinCounts
        The data's linear-binning counts (of all rows: from memory or chunk by chunk).
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    kernel : str, default "gaussian"
        One of ``parzen.kernels.KERNELS``.
    tolerance : float, default 1e-4
        Sets the kernel's reach (:func:`kernel_reach`).
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who convolves (:func:`kernel_convolution`).

    Returns
    -------
    BinnedDensity
    """
    return BinnedDensity(bins.spec, _estimate_from_counts(bins.counts, H, kernel, bins.spec, tolerance, backend))


#: "auto" takes binned KDE evaluation only from this many samples: below it exact evaluation is
#: fast anyway (under a second for m = n on the cpu backend) and exact to the last digit.
AUTO_MIN_SAMPLES = 50_000
#: Measured on the project's 2-core CPU (``docs/algorithms.md``): seconds per exact kernel
#: evaluation (cpu backend), per grid node (FFT convolution) and per binned data point.
_EXACT_PAIR_SECONDS = 2e-9
_GRID_NODE_SECONDS = 1.7e-7
_BIN_POINT_SECONDS = 1.2e-7


def binned_cost_wins(X: np.ndarray, H: np.ndarray, *, tolerance: float) -> bool:
    """Whether "auto" should evaluate a KDE binned: d <= 4, n >= AUTO_MIN_SAMPLES, the
    tolerance's grid within MAX_GRID_NODES, and its cost below exact evaluation at n points.

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) data.
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    tolerance : float
        The requested relative error.

    Returns
    -------
    bool
        True where binned is expected to be faster (n^2 t_pair > nodes t_node + n t_bin).
    """
    n, d = X.shape
    if d > MAX_DIMENSIONS or n < AUTO_MIN_SAMPLES:
        return False
    reach = kernel_reach("gaussian", H, tolerance)
    data_lows, data_highs = column_range(X)
    nodes = float(np.prod((data_highs - data_lows + 2 * reach) / grid_spacing(H, tolerance) + 1))
    if nodes > MAX_GRID_NODES:
        return False
    return float(n) * n * _EXACT_PAIR_SECONDS > nodes * _GRID_NODE_SECONDS + n * _BIN_POINT_SECONDS
