"""What a KDE backend is: the pair-sum primitives, their prepare hooks and the compute types.

:class:`KDEBackend` is the interface every backend implements (``NumpyBackend``, the float64
definition of correct; ``CpuBackend``, Numba; ``GpuBackend``, Triton).  The statistics
(``parzen.bandwidth``, ``parzen.kde``) call only these methods, on an instance that
:func:`parzen.backends.resolve_backend` hands them.  The three pair sums are those of
Andrzejewski et al. (paper 000 in docs/statistics.md), section 5.1; docs/algorithms.md,
"The pair sums", gives their formulas and how each backend tiles them.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import fft, linalg

from .._validate import power_of_two
from ..kernels import KERNELS

if TYPE_CHECKING:
    from ..binned.grid import BinCounts, GridSpec


def check_kernel(kind: str) -> None:
    """Raise a ValueError naming the choices when ``kind`` is not a kernel of :data:`parzen.kernels.KERNELS`."""
    if kind not in KERNELS:
        raise ValueError(f"unknown kernel {kind!r}; choose one of {', '.join(map(repr, KERNELS))}")


@dataclass(frozen=True)
class ColumnSummary:
    """One pass over the rows of a sample: its size, range and (optionally) first two moments.

    Parameters
    ----------
    rows : int
        n.
    lows, highs : numpy.ndarray
        (d,) the smallest and largest value of each column (NaN or +-inf where a column holds one).
    means, sds : numpy.ndarray or None
        (d,) the column means and standard deviations (ddof = 1), or None when not asked for.
    """

    rows: int
    lows: np.ndarray
    highs: np.ndarray
    means: np.ndarray | None = None
    sds: np.ndarray | None = None

    @property
    def finite(self) -> bool:
        """Whether every value was finite (a NaN or infinity makes a low or high non-finite)."""
        return bool(np.isfinite(self.lows).all() and np.isfinite(self.highs).all())


class PairSums1D:
    """1-D pair sums over one data set, for the stages of one computation (PLUGIN's two).

    ``sum(kind, g)`` is sum_{i<j} f_kind((x_i - x_j) / g) for one scale g, as a number that
    arithmetic can continue from: a float here, a 0-d device tensor on the GPU, so that a scale
    computed from an earlier sum (PLUGIN's g2 from Psi_6) never waits for the device.
    :meth:`evaluate` runs a whole chain of such stages and returns its numbers as floats.

    Parameters
    ----------
    pair_sum : callable
        ``pair_sum(kind, g)``: the sum for one kind and one scale.
    """

    def __init__(self, pair_sum: Callable) -> None:
        self.sum = pair_sum

    def evaluate(self, chain: Callable, *args) -> tuple[float, ...]:
        """``chain(self.sum, *args)`` (a tuple of numbers computed from the sums by plain
        arithmetic), as floats.

        Backends may run it their own way: the GPU queues it without waiting and, from the
        second call of the same chain, integer arguments and data size, replays it as one CUDA
        graph (float arguments are its inputs).

        Parameters
        ----------
        chain : callable
            ``chain(pair_sum, *args)`` -> tuple of numbers.
        *args
            Its further arguments (ints and floats).

        Returns
        -------
        tuple of float
        """
        return tuple(float(v) for v in chain(self.sum, *args))


class KDEBackend(abc.ABC):
    """The primitives every KDE backend computes, each taking a keyword ``dtype`` (None: the
    first of :attr:`dtypes`).

    A subclass implements :attr:`name`, :attr:`dtypes` and the four sums; the two prepare hooks
    have host implementations here that a backend keeping data on a device overrides (the GPU).
    Backends are context managers: :meth:`close` releases what an instance holds (device
    buffers, CUDA graphs); the instance stays usable and builds them again when needed.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The registered name ("numpy", "cpu", "gpu")."""

    @property
    @abc.abstractmethod
    def dtypes(self) -> tuple[np.dtype, ...]:
        """The floating-point types this backend computes in, its default first."""

    @abc.abstractmethod
    def pair_sum_1d(self, x: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_{i<j} phi^(r)((x_i - x_j) / g), kind = "gauss_d<r>".

        The double sums of the PLUGIN functionals Psi_r (paper 000 in docs/statistics.md,
        eqs. 16 and 18; the diagonal term, which the caller adds: docs/departures.md, item 1).

        Parameters
        ----------
        x : ndarray of shape (n,)
            The data.
        kind : str
            ``"gauss_d<r>"``: the r-th derivative of the standard normal density.
        scales : ndarray of shape (k,)
            The scales g.
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        ndarray of shape (k,), float64
        """

    @abc.abstractmethod
    def pair_sum_sq(self, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """Sums over i < j of functions of s = |y_i - y_j|^2 for all parameters at once.

        kind "lscv": params are scales h; the result holds sum exp(-s / 4h^2) and
        sum exp(-s / 2h^2), the two Gaussian sums of the LSCV criteria (paper 000 in
        docs/statistics.md, eqs. 32 and 43, after whitening: docs/departures.md, item 7).

        Parameters
        ----------
        Y : ndarray of shape (n, d)
            Whitened rows.
        kind : str
            ``"lscv"``.
        params : ndarray of shape (k,)
            The scales h.
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        ndarray of shape (k, 2), float64
        """

    @abc.abstractmethod
    def kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        The KDE sum of paper 000 (docs/statistics.md), eq. 6; Z and Q are already whitened and
        scaled (the caller applies the constants).

        Parameters
        ----------
        Z : ndarray of shape (n, d)
            The data.
        Q : ndarray of shape (m, d)
            The queries.
        kind : str
            A kernel name of :data:`parzen.kernels.KERNELS`.
        weights : ndarray of shape (n,), optional
            w_i (None: all 1).
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        ndarray of shape (m,), float64

        Raises
        ------
        ValueError
            For an unknown kernel.
        """

    @abc.abstractmethod
    def log_kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: log sum_i w_i k(|q - z_i|^2), by log-sum-exp where the sum can
        underflow (the Gaussian far from the data; see docs/algorithms.md, "Log densities").

        Parameters
        ----------
        Z, Q, kind, weights, dtype
            As in :meth:`kernel_sum`.

        Returns
        -------
        ndarray of shape (m,), float64
            -inf exactly where every term is 0.
        """

    def prepare_kernel_sum(self, Z: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> Callable:
        """:meth:`kernel_sum` over fixed data as a function of the queries, for an estimate that
        is evaluated at many query sets (a fitted ``KDE`` keeps one).  Here: :meth:`kernel_sum`
        at each call; the GPU keeps the prepared data in its memory between calls.

        Parameters
        ----------
        Z, kind, weights, dtype
            As in :meth:`kernel_sum`.

        Returns
        -------
        callable
            ``sums(Q)``: :meth:`kernel_sum` (Z, Q, kind, weights) for (m, d) queries Q.

        Raises
        ------
        ValueError
            For an unknown kernel.
        """
        check_kernel(kind)
        Z = np.asarray(Z, dtype=np.float64)
        return lambda Q: self.kernel_sum(Z, Q, kind, weights, dtype=dtype)

    def prepare_log_kernel_sum(self, Z: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> Callable:
        """:meth:`log_kernel_sum` over fixed data as a function of the queries, as
        :meth:`prepare_kernel_sum` for the sums.  Here: :meth:`log_kernel_sum` at each call; the GPU
        keeps the Gaussian's prepared data in its memory between calls.

        Parameters
        ----------
        Z, kind, weights, dtype
            As in :meth:`kernel_sum`.

        Returns
        -------
        callable
            ``logs(Q)``: :meth:`log_kernel_sum` (Z, Q, kind, weights) for (m, d) queries Q.

        Raises
        ------
        ValueError
            For an unknown kernel.
        """
        check_kernel(kind)
        Z = np.asarray(Z, dtype=np.float64)
        return lambda Q: self.log_kernel_sum(Z, Q, kind, weights, dtype=dtype)

    def pair_sum_1d_between(self, x: np.ndarray, y: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_i sum_j phi^(r)((x_i - y_j) / g), the pairs between two blocks
        of data (kind = "gauss_d<r>").

        The off-diagonal blocks of :meth:`pair_sum_1d`'s triangle, for a caller that splits the
        pairs i < j of x u y into blocks (:mod:`parzen.distributed.blocks`): pair_sum_1d(x u y) =
        pair_sum_1d(x) + pair_sum_1d(y) + pair_sum_1d_between(x, y).  Here by that identity (each
        pair between the blocks summed once more in the union), for backends without their own;
        the numpy, cpu and gpu backends sum the rectangle of pairs itself.

        Parameters
        ----------
        x : ndarray of shape (n,)
            The rows of one block.
        y : ndarray of shape (m,)
            The rows of the other.
        kind, scales, dtype
            As in :meth:`pair_sum_1d`.

        Returns
        -------
        ndarray of shape (k,), float64
        """
        x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
        if not (x.size and y.size):
            return np.zeros(np.size(scales))
        union = self.pair_sum_1d(np.concatenate([x, y]), kind, scales, dtype=dtype)
        return union - self.pair_sum_1d(x, kind, scales, dtype=dtype) - self.pair_sum_1d(y, kind, scales, dtype=dtype)

    def pair_sum_sq_between(self, X: np.ndarray, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """The sums of :meth:`pair_sum_sq` over the pairs between two blocks of rows: every
        (x_i, y_j), s = |x_i - y_j|^2.

        pair_sum_sq(X u Y) = pair_sum_sq(X) + pair_sum_sq(Y) + pair_sum_sq_between(X, Y): here by
        that identity, for backends without their own; the numpy, cpu and gpu backends sum the
        rectangle of pairs itself.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The rows of one block (whitened).
        Y : ndarray of shape (m, d)
            The rows of the other.
        kind, params, dtype
            As in :meth:`pair_sum_sq`.

        Returns
        -------
        ndarray of shape (k, 2), float64
        """
        X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
        X, Y = (X[:, None] if X.ndim == 1 else X), (Y[:, None] if Y.ndim == 1 else Y)
        if not (len(X) and len(Y)):
            if kind != "lscv":
                raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the backends know 'lscv'")
            return np.zeros((np.size(params), 2))
        union = self.pair_sum_sq(np.concatenate([X, Y]), kind, params, dtype=dtype)
        return union - self.pair_sum_sq(X, kind, params, dtype=dtype) - self.pair_sum_sq(Y, kind, params, dtype=dtype)

    def pair_sum_hermite(self, Y: np.ndarray, alphas: np.ndarray, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
        """For each multi-index alpha: sum_{i<j} w_i w_j exp(-|u|^2 / 2) prod_k He_{alpha_k}(u_k),
        u = y_i - y_j, He_m the probabilists' Hermite polynomials.

        The pair sums of the multivariate density-derivative functionals Psi_alpha (Chacon &
        Duong 2010, eq. 5; docs/statistics.md, "Multivariate plug-in"): with a pilot G = g^2 I and
        y = x / g, the alpha-th partial derivative of phi_G at x_i - x_j is
        (2 pi)^(-d/2) g^(-d-|alpha|) (-1)^|alpha| exp(-|u|^2/2) prod_k He_{alpha_k}(u_k).  Only
        even |alpha| (the term is then symmetric in i, j); the caller adds the diagonal i = j and
        the constants (:mod:`parzen.bandwidth.functionals`).  Here in float64 NumPy over tiles of
        the pair triangle (never an n x n array), as :class:`parzen.backends.NumpyBackend`'s sums;
        the cpu backend sums it in Numba.

        Parameters
        ----------
        Y : ndarray of shape (n, d)
            Rows already divided by the pilot scale g.
        alphas : ndarray of shape (m, d)
            Non-negative integer multi-indices, each of even total order at most 8.
        weights : ndarray of shape (n,), optional
            w_i (None: all 1).
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        ndarray of shape (m,), float64

        Raises
        ------
        ValueError
            For a multi-index of odd or too high order, or one with another number of columns than Y.
        """
        Y, alphas = hermite_arguments(Y, alphas)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        tile = 512
        n = len(Y)
        out = np.zeros(len(alphas))
        for i0 in range(0, n, tile):
            rows = slice(i0, min(i0 + tile, n))
            for j0 in range(i0, n, tile):
                cols = slice(j0, min(j0 + tile, n))
                U = Y[rows, None, :] - Y[None, cols, :]
                keep = np.triu(np.ones(U.shape[:2], dtype=bool), 1) if i0 == j0 else np.ones(U.shape[:2], dtype=bool)
                U = U[keep]
                base = np.exp(-0.5 * (U * U).sum(axis=1))
                if w is not None:
                    base = base * (w[rows, None] * w[None, cols])[keep]
                table = hermite_table(U, int(alphas.max(initial=0)))
                for m, alpha in enumerate(alphas):
                    term = base.copy()
                    for k, a in enumerate(alpha):
                        if a:
                            term *= table[a, :, k]
                    out[m] += term.sum()
        return out

    def prepare_pair_sum_1d(self, x: np.ndarray, *, dtype=None) -> PairSums1D:
        """:class:`PairSums1D` over x, for a computation that sums over the same data at several
        scales (PLUGIN's two stages).  Here: :meth:`pair_sum_1d` at each call; the GPU keeps
        x sorted in its memory.

        Parameters
        ----------
        x : ndarray of shape (n,)
            The data.
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        PairSums1D
        """
        x = np.asarray(x, dtype=np.float64).ravel()
        return PairSums1D(lambda kind, g: float(self.pair_sum_1d(x, kind, np.array([float(g)]), dtype=dtype)[0]))

    def prepare_whitened_pair_sum_sq(self, Z: np.ndarray, kind: str, *, dtype=None) -> Callable:
        """A function (M, params) -> :meth:`pair_sum_sq` over the rows y = M^-1 z of Z.

        For an optimiser that evaluates the sums on the same data under many whitenings (LSCV_H's
        Nelder-Mead, some 1600 factors M).  Here the rows are whitened on the host, once per M
        (the last one is kept); the GPU keeps Z in its memory and whitens there.

        Parameters
        ----------
        Z : ndarray of shape (n, d)
            The data (the sums do not depend on their centre).
        kind : str
            As in :meth:`pair_sum_sq`.
        dtype : None or dtype
            Compute type (None: the backend's default).

        Returns
        -------
        callable
            ``sums(M, params)``, M lower triangular (d, d): an ndarray as :meth:`pair_sum_sq`'s.
        """
        Z = np.asarray(Z, dtype=np.float64)
        Z = Z.reshape(len(Z), -1)
        last: dict[str, np.ndarray] = {}  # the last M and its whitened rows Y

        def sums(M: np.ndarray, params) -> np.ndarray:
            if "M" not in last or not np.array_equal(M, last["M"]):
                last.update(M=np.array(M, dtype=np.float64), Y=linalg.solve_triangular(M, Z.T, lower=True).T)
            return self.pair_sum_sq(last["Y"], kind, params, dtype=dtype)

        return sums

    def linear_bin(self, X, spec: GridSpec, weights=None, *, dtype=None) -> BinCounts:
        """Linear binning of the rows of X onto ``spec`` (Wand 1994, section 2; see
        :func:`parzen.binned.grid.linear_bin`).  Here: the float64 NumPy reference; the cpu
        backend bins in parallel per-thread grids, the gpu backend by a Triton kernel of float64
        atomic adds, the rows streamed from host memory in chunks.

        Parameters
        ----------
        X : array_like of shape (n,) or (n, d)
            The data, finite, inside the grid's box.
        spec : GridSpec
            The grid (``spec.d`` = d, at most 4).
        weights : array_like of shape (n,), optional
            Non-negative weights (default 1 per row).
        dtype : None or dtype
            The type of the node positions and shares: float64 unless a backend offers float32
            (the gpu); the counts are always accumulated in float64.

        Returns
        -------
        BinCounts

        Raises
        ------
        ValueError
            If X has another number of columns than the grid, or a row lies outside its box.
        """
        from ..binned.grid import linear_bin  # parzen.binned's later modules import the backends

        return linear_bin(X, spec, weights, backend="numpy")

    def column_summary(self, X, *, moments: bool = True) -> ColumnSummary:
        """n, the column ranges and, with ``moments``, means and standard deviations (ddof = 1).

        What binned estimation reads before binning: the grid's range (and PLUGIN's scale,
        eq. 13 of paper 000 in docs/statistics.md).  Here in float64 NumPy, the standard
        deviation of each column divided by the power of two above its range (exact, and it
        neither overflows nor underflows: docs/departures.md, item 13) and scaled back; the gpu
        backend streams the rows through the device once.

        Parameters
        ----------
        X : array_like of shape (n,) or (n, d)
            The data (non-finite values show in ``lows`` / ``highs``).
        moments : bool, default True
            Also compute the means and standard deviations.

        Returns
        -------
        ColumnSummary
        """
        values = np.asarray(X, dtype=np.float64)
        values = values.reshape(len(values), -1)
        lows, highs = values.min(axis=0), values.max(axis=0)
        if not moments:
            return ColumnSummary(len(values), lows, highs)
        units = power_of_two(highs - lows)
        scaled = values / units
        return ColumnSummary(len(values), lows, highs, scaled.mean(axis=0) * units, np.std(scaled, axis=0, ddof=1) * units)

    def fft_convolve(self, a: np.ndarray, b: np.ndarray, shape) -> np.ndarray:
        """The circular convolution of ``a`` and ``b`` zero-padded to ``shape``, by real FFTs.

        irfftn(rfftn(a, shape) * rfftn(b, shape)): with shape_k >= a.shape_k + b.shape_k - 1 on
        every axis nothing wraps around, and it is the linear convolution.  The one FFT step of the
        binned estimates (Wand 1994, section 3; :mod:`parzen.binned.pair_sums`,
        :mod:`parzen.binned.density`): ``scipy.fft`` in float64 here (on all cores), ``torch.fft``
        on the device in float64 on the gpu backend.

        Parameters
        ----------
        a, b : numpy.ndarray
            Real arrays of the same number of dimensions.
        shape : sequence of int
            The padded shape (one length per axis).

        Returns
        -------
        numpy.ndarray
            float64 array of ``shape``.
        """
        axes = tuple(range(a.ndim))
        shape = tuple(int(s) for s in shape)
        product = fft.rfftn(a, shape, axes=axes, workers=-1) * fft.rfftn(b, shape, axes=axes, workers=-1)
        return fft.irfftn(product, shape, axes=axes, workers=-1)

    def close(self) -> None:
        """Release what this instance holds (nothing here; device buffers and graphs on the GPU)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def binning_rows(X, spec: GridSpec, weights=None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows and weights of a :meth:`KDEBackend.linear_bin` call as float64 arrays.

    Parameters
    ----------
    X, spec, weights
        As in :meth:`KDEBackend.linear_bin`.

    Returns
    -------
    values : numpy.ndarray
        (n, d) C-contiguous float64.
    weights : numpy.ndarray or None
        (n,) float64, or None (1 per row) when None is given.

    Raises
    ------
    ValueError
        If X has another number of columns than the grid or the weights another length.
    """
    values = np.asarray(X, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] != spec.d:
        raise ValueError(f"X must have {spec.d} column(s) for this grid, got shape {np.shape(X)}")
    if weights is None:
        return np.ascontiguousarray(values), None
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (len(values),):
        raise ValueError(f"weights must have one value per row ({len(values)}), got shape {w.shape}")
    return np.ascontiguousarray(values), w


#: Highest total order of a multi-index that :meth:`KDEBackend.pair_sum_hermite` sums.
MAX_HERMITE_ORDER = 8


def hermite_arguments(Y, alphas) -> tuple[np.ndarray, np.ndarray]:
    """The rows and multi-indices of a :meth:`KDEBackend.pair_sum_hermite` call, checked.

    Parameters
    ----------
    Y, alphas
        As in :meth:`KDEBackend.pair_sum_hermite`.

    Returns
    -------
    Y : numpy.ndarray
        (n, d) C-contiguous float64.
    alphas : numpy.ndarray
        (m, d) C-contiguous int64.

    Raises
    ------
    ValueError
        For a multi-index of odd or too high total order, a negative entry, or another number of columns than Y.
    """
    Y = np.asarray(Y, dtype=np.float64)
    Y = np.ascontiguousarray(Y.reshape(len(Y), -1))
    alphas = np.ascontiguousarray(np.atleast_2d(np.asarray(alphas, dtype=np.int64)))
    orders = alphas.sum(axis=1)
    if alphas.shape[1] != Y.shape[1] or np.any(alphas < 0) or np.any(orders % 2) or np.any(orders > MAX_HERMITE_ORDER):
        raise ValueError(
            f"alphas must be multi-indices of {Y.shape[1]} non-negative integers of even total order at most "
            f"{MAX_HERMITE_ORDER}; got {alphas.tolist()}"
        )
    return Y, alphas


def hermite_table(U: np.ndarray, order: int) -> np.ndarray:
    """He_0..He_order (probabilists' Hermite polynomials) at every entry of U, by the recurrence
    He_{m+1}(u) = u He_m(u) - m He_{m-1}(u).

    Parameters
    ----------
    U : numpy.ndarray
        Any shape.
    order : int
        The highest degree.

    Returns
    -------
    numpy.ndarray
        (order + 1, *U.shape).
    """
    table = np.empty((order + 1, *U.shape))
    table[0] = 1.0
    if order >= 1:
        table[1] = U
    for m in range(1, order):
        table[m + 1] = U * table[m] - m * table[m - 1]
    return table
