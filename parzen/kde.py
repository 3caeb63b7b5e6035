"""The kernel density estimator, scikit-learn style.

f(x) = sum_i w_i K_H(x - X_i),  K_H(u) = |H|^-1/2 K(H^-1/2 u)
(Andrzejewski et al., paper 000 in docs/statistics.md, eq. 6)

with weights w_i summing to one (1/n when unweighted) and K a radial kernel of
identity covariance (``parzen.kernels``), so H is the covariance of each bump.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import ClassVar

import numpy as np
from scipy import linalg, special

from ._params import Parameters
from ._threads import single_threaded_blas
from ._validate import as_data, as_queries, check_spd, check_weights, choose
from .backends import resolve_backend
from .bandwidth.convention import bandwidth_matrix
from .bandwidth.distribution import plugin_cdf
from .bandwidth.method import choose_method
from .bandwidth.registry import AUTO, SELECTORS, default_selector, select
from .bandwidth.weight_kind import WEIGHT_KINDS, check_weight_kind, sample_size
from .binned.chunked import checked_moments, chunked_density
from .binned.density import FLOOR, BinnedDensity, binned_cost_wins, density_at_nodes, density_on_grid
from .binned.grid import GridSpec, linear_bin
from .binned.source import ChunkedData, as_chunked
from .boundary import Reflection
from .distribution import mixture_cdf, mixture_cdf_pdf_1d, quantile_1d
from .kernels import KERNELS, get_kernel


class KDE(Parameters):
    """Kernel density estimator with data-driven bandwidths.

    The parameters are keyword-only and stored as given; all work happens in :meth:`fit`.

    Parameters
    ----------
    bandwidth : str, float or array_like, default "auto"
        A name of :data:`parzen.bandwidth.SELECTORS` ("plugin", "lscv_h", "lscv_H", "lscv_diag",
        "scott", "silverman", "normal_scale", "isj") calls that selector; "auto" is "plugin" for 1-D
        data and "normal_scale" for d > 1 (:func:`parzen.bandwidth.default_selector`).  A float
        h means H = h^2 I (h in data units); a length-d vector means H = diag(h^2); a d x d
        matrix is H.
    kernel : str, default "gaussian"
        One of ``parzen.kernels.KERNELS``; every kernel has identity covariance, so H
        (and a bandwidth chosen for the Gaussian) means the same for all of them.
    backend : str or parzen.backends.KDEBackend, default "auto"
        Backend of the pair sums and of evaluation: "numpy", "cpu", "gpu", an instance, or "auto"
        (the fastest for the work, chosen at each selection and evaluation).
    dtype : None or numpy float type
        Compute precision of the backend (None: the backend's default).
    progress : bool, default False
        Show progress bars while selecting the bandwidth.
    method : {"auto", "exact", "binned"}, default "auto"
        How :meth:`pdf` and :meth:`score_samples` evaluate: "exact" sums over every data point;
        "binned" interpolates the binned estimate on a grid built at :meth:`fit`
        (:func:`parzen.binned.density_on_grid`; d <= 4); "auto" decides at fit: binned for the
        Gaussian kernel, d <= 4, n >= 50 000 and where the grid costs less than exact evaluation
        at n points (:func:`parzen.binned.density.binned_cost_wins`), exact otherwise.  The
        binned estimate is binned and convolved on ``backend`` (the gpu: a Triton kernel and
        ``torch.fft``), in float64 whatever ``dtype``.
    grid_size : None, int or sequence of int
        Nodes per axis of the binned grid (None: chosen from ``tolerance``).
    tolerance : float, default 1e-4
        Relative error of the binned density sought where it is at least 1e-3 of its maximum
        (measured for the Gaussian kernel; ``docs/algorithms.md``, "Binned estimation: KDE
        evaluation", gives the compact kernels' errors).
    cdf_bandwidth : "auto", "density", float or array_like, default "auto"
        The bandwidth of :meth:`cdf` and :meth:`quantile` (a distribution function is best
        estimated with less smoothing than the density, h of order n^(-1/3)): "auto" is
        :func:`parzen.bandwidth.plugin_cdf` (``ks::kcde``'s choice) for unweighted 1-D data and
        the density's H otherwise; "density" is the density's H; numbers as for ``bandwidth``.
    boundary : None or (low, high), default None
        Edges of a bounded 1-D variable (either may be None): :meth:`pdf`, :meth:`score_samples`,
        :meth:`cdf`, :meth:`quantile` and :meth:`sample` are those of the estimate reflected in
        them (:mod:`parzen.boundary`; 0 density outside), so that no mass leaks past an edge.
        The bandwidth is selected as without edges.
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights given to :meth:`fit` are (:mod:`parzen.bandwidth.weight_kind`;
        docs/statistics.md, "Weighted data"), passed on to the selector: probability weights of
        any scale (n is Kish's effective size (sum w)^2 / sum w^2), or frequency weights, whole
        counts of each row's copies (n = sum w: every selector then gives the bandwidth of the
        replicated data).  The estimate itself is the same for both: sum_i w_i K_H(x - X_i) with w
        normalised to sum 1.

    Attributes
    ----------
    H_ : ndarray of shape (d, d)
        The bandwidth matrix, the covariance of each kernel bump.
    bandwidth_ : float or ndarray
        The bandwidth in data units: what the selector returned (a float h for 1-D data, the
        matrix H otherwise; :mod:`parzen.bandwidth.convention`), or the numeric bandwidth given.
    n_features_in_, n_samples_ : int
        Columns and rows of the fitted data.
    feature_names_in_ : ndarray of str
        The column names.
    weights_ : ndarray of shape (n,) or None
        The weights, normalised to sum to one (None for data served in chunks).
    method_ : str
        "exact" or "binned": how this fit evaluates.
    grid_size_ : tuple of int or None
        The binned grid's nodes per axis (None for exact).
    cdf_bandwidth_ : float or ndarray
        The bandwidth of :meth:`cdf` (h in 1-D, else H), set by the first call of :meth:`cdf` or
        :meth:`quantile`.
    """

    _parameter_constraints: ClassVar[dict[str, tuple[str, ...]]] = {
        "kernel": tuple(KERNELS),
        "bandwidth": (AUTO, *SELECTORS),
        "method": ("auto", "exact", "binned"),
        "weight_kind": WEIGHT_KINDS,
    }

    def __init__(
        self,
        *,
        bandwidth=AUTO,
        kernel: str = "gaussian",
        backend: str = "auto",
        dtype=None,
        progress: bool = False,
        method: str = "auto",
        grid_size=None,
        tolerance: float = 1e-4,
        cdf_bandwidth="auto",
        boundary=None,
        weight_kind: str = "probability",
    ):
        self.bandwidth = bandwidth
        self.kernel = kernel
        self.backend = backend
        self.dtype = dtype
        self.progress = progress
        self.method = method
        self.grid_size = grid_size
        self.tolerance = tolerance
        self.cdf_bandwidth = cdf_bandwidth
        self.boundary = boundary
        self.weight_kind = weight_kind

    def __sklearn_tags__(self):
        """scikit-learn's tags (read by scikit-learn only, which is imported here, not by parzen):
        a density estimator of 2-D numeric input (1-D input is one column here), no target."""
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type="density_estimator", target_tags=TargetTags(required=False), input_tags=InputTags())

    # -- fitting --------------------------------------------------------------------------
    def fit(self, X, y=None, *, weights=None) -> KDE:
        """Choose the bandwidth and store the sample.

        Parameters
        ----------
        X : array_like of shape (n,) or (n, d), or ChunkedData
            The sample (NumPy, pandas or polars), or data served in chunks
            (:class:`parzen.binned.ParquetData`, :class:`parzen.binned.DuckDBData`, ...; d <= 4):
            then the bandwidth comes from the selector's passes over the chunks, the estimate is
            binned (``method_`` "binned"; ``method="exact"`` raises) from a pass for the grid
            and one for the counts, and the rows are not kept: :meth:`score_samples` is the log
            of the binned density everywhere, :meth:`sample` raises, ``weights_`` is None.
        y : None
            Ignored (scikit-learn API).
        weights : array_like of shape (n,), optional
            Non-negative weights of the rows, of ``weight_kind``; every selector but "isj" takes
            them (:data:`parzen.bandwidth.SELECTORS`, ``weighted``), and so does a numeric
            bandwidth.  Data served in chunks carry theirs as a column.

        Returns
        -------
        KDE
            ``self``, fitted.

        Raises
        ------
        ValueError
            If a parameter or the data are invalid, or the selector does not support the data's
            dimension or weights; or the weights are invalid (negative, not finite, another
            length, all zero; with ``weight_kind="frequency"`` not whole numbers or summing to 1
            or less).
        """
        choose(self.kernel, self._parameter_constraints["kernel"], what="kernel")
        check_weight_kind(self.weight_kind)
        choose(self.method, self._parameter_constraints["method"], what="method")
        self.__dict__.pop("cdf_bandwidth_", None)  # chosen again, from these data, by the next cdf()
        self.__dict__.pop("_prepared_sums", None)  # the sums over the former rows
        resolve_backend(self.backend, self.dtype)  # fail early on a bad backend or dtype
        named = isinstance(self.bandwidth, str)
        if named:
            choose(self.bandwidth, self._parameter_constraints["bandwidth"], what="bandwidth")
        chunked = as_chunked(X)
        if chunked is not None:
            return self._fit_chunked(chunked, weights, named)
        data = as_data(X, min_rows=2 if named else 1)
        self._reflection = Reflection.of(self.boundary, data.d)
        if self._reflection is not None:
            self._reflection.check(data.values[:, 0])
        w = None if weights is None else check_weights(weights, data.n)
        if w is not None and self.weight_kind == "frequency":
            sample_size(w, "frequency")  # raises for counts that are not whole numbers, naming the fix
        self.bandwidth_, H = self._select(data, w) if named else _explicit_bandwidth(self.bandwidth, data.d)
        self.H_ = H
        self._chol = check_spd(H, what="the bandwidth matrix H")
        self._whitening = linalg.solve_triangular(self._chol, np.eye(data.d), lower=True)  # L^-1, d x d
        self.n_samples_, self.n_features_in_ = data.values.shape
        self.feature_names_in_ = np.asarray(data.columns, dtype=object)
        self.weights_ = np.full(data.n, 1.0 / data.n) if w is None else w / w.sum()
        self._data = data.values
        self._set_normalisation(data.d)
        self._Z = self._transform(data.values)
        self._source: ChunkedData | None = None
        self._fit_binned()
        return self

    def _set_normalisation(self, d: int) -> None:
        """The kernel's unit scale sigma_K and log c = log(c_d sigma_K^d / |H|^1/2), computed in
        logs: no over- or underflow of |H| (the density may still)."""
        kernel = get_kernel(self.kernel)
        self._scale = kernel.unit_scale(d)
        self._log_norm = math.log(kernel.norm_const(d)) + d * math.log(self._scale) - float(np.log(np.diag(self._chol)).sum())
        self._norm = math.exp(self._log_norm)

    def _fit_chunked(self, data: ChunkedData, weights, named: bool) -> KDE:
        """:meth:`fit` for data served in chunks: the bandwidth from the selector's passes, then
        the binned estimate from a pass for the grid and one for the counts; the rows are not kept."""
        if self.boundary is not None:
            raise ValueError(f"boundary= needs the rows in memory, and {data.description} is read in chunks; load the "
                             "column into an array (or a sample of it)")
        self._reflection = None
        if weights is not None:
            raise ValueError(f"weights= was given for {data.description}, which is read in chunks: serve the "
                             "weights as a column of the data instead (weights= of ParquetData, DuckDBData or ArrayChunks)")
        choose_method(self.method, n=0, d=data.d, exact_up_to=0, chunked=data.description, what="KDE")
        moments = checked_moments(data, min_rows=2 if named else 1, progress=self.progress)
        if named:
            name = default_selector(data.d) if self.bandwidth == AUTO else self.bandwidth
            self.bandwidth_ = select(name, data, backend=self.backend, dtype=self.dtype, progress=self.progress,
                                     weight_kind=self.weight_kind)
            H = bandwidth_matrix(self.bandwidth_, data.d)
        else:
            self.bandwidth_, H = _explicit_bandwidth(self.bandwidth, data.d)
        self.H_ = H
        self._chol = check_spd(H, what="the bandwidth matrix H")
        self._whitening = linalg.solve_triangular(self._chol, np.eye(data.d), lower=True)
        self._set_normalisation(data.d)
        self.n_samples_, self.n_features_in_ = moments.rows, data.d
        self.feature_names_in_ = np.asarray(data.columns, dtype=object)
        self.weights_ = None
        self._data = self._Z = np.empty((0, data.d))  # the rows are not kept
        self._source = data
        binned = chunked_density(data, moments, H, self.kernel, tolerance=self.tolerance, grid_size=self.grid_size,
                                 progress=self.progress)
        self._binned: BinnedDensity | None = binned
        self.method_ = "binned"
        self.grid_size_: tuple[int, ...] | None = binned.spec.sizes
        return self

    def _fit_binned(self) -> None:
        """Decide ``method_`` and, for binned, build the grid once (``grid_size_``)."""
        binned = self.method == "binned" or (
            self.method == "auto"
            and self.kernel == "gaussian"
            and binned_cost_wins(self._data, self.H_, tolerance=self.tolerance)
        )
        self._binned = (
            density_on_grid(self._data, self.H_, self.kernel, weights=self.weights_, tolerance=self.tolerance,
                            grid_size=self.grid_size, backend=self.backend)
            if binned
            else None
        )
        self.method_ = "binned" if binned else "exact"
        self.grid_size_ = None if self._binned is None else self._binned.spec.sizes

    def grid(self, grid_size=None, *, nodes=None):
        """The binned density on a grid covering the data and the kernel's reach, for plots, or
        on a given regular grid.

        Parameters
        ----------
        grid_size : None, int or sequence of int
            Nodes per axis (None: the fitted grid when ``method_`` is "binned", else the grid of
            ``grid_size`` or ``tolerance``).
        nodes : sequence of d array_like, optional
            A regular grid's coordinates on each axis (increasing, equally spaced; one array in
            1-D): the binned density at its nodes, within ``tolerance`` relative where it is at
            least 1e-3 of its maximum (:func:`parzen.binned.density_at_nodes`: no interpolation,
            so a coarser computation grid than :meth:`pdf` needs).  Excludes ``grid_size``.

        Returns
        -------
        nodes : tuple of ndarray
            The node coordinates on each axis.
        values : ndarray
            The density at the nodes, of shape (len(nodes[0]), ..., len(nodes[d-1])).

        Raises
        ------
        ValueError
            If the KDE is not fitted, d > 4 or the grid is too large.
        """
        self._check_fitted()
        if self._reflection is not None:
            raise ValueError("grid() is the estimate without edges; with boundary= evaluate pdf() at your nodes")
        if nodes is not None:
            if grid_size is not None:
                raise ValueError("pass grid_size= or nodes=, not both")
            if self._source is not None:
                raise ValueError("grid(nodes=) needs the rows in memory; this KDE was fitted on data served in "
                                 "chunks: call grid() (its own grid) or grid(grid_size=...)")
            values = density_at_nodes(self._data, self.H_, nodes, self.kernel, weights=self.weights_,
                                      tolerance=self.tolerance)
            d = self.n_features_in_
            axes = ([np.asarray(nodes, dtype=np.float64)] if d == 1 and np.ndim(nodes) == 1
                    else [np.asarray(a, dtype=np.float64) for a in nodes])
            return tuple(axes), values
        if self._source is not None and grid_size is not None:  # data served in chunks: bin them again
            binned = chunked_density(self._source, checked_moments(self._source), self.H_, self.kernel,
                                     tolerance=self.tolerance, grid_size=grid_size, progress=self.progress)
        elif self._binned is None or grid_size is not None:
            binned = density_on_grid(
                self._data,
                self.H_,
                self.kernel,
                weights=self.weights_,
                tolerance=self.tolerance,
                grid_size=self.grid_size if grid_size is None else grid_size,
                backend=self.backend,
            )
        else:
            binned = self._binned
        return binned.nodes, binned.values

    def _select(self, data, w):
        """(bandwidth_, H_): the named selector's answer in data units and its matrix."""
        name = default_selector(data.d) if self.bandwidth == AUTO else self.bandwidth
        # Data keeps the column names for error messages
        options = {} if w is None else {"weight_kind": self.weight_kind}
        result = select(name, data, weights=w, backend=self.backend, dtype=self.dtype, progress=self.progress, **options)
        return result, bandwidth_matrix(result, data.d)

    def _check_fitted(self) -> None:
        if not hasattr(self, "H_"):
            raise ValueError("this KDE is not fitted yet; call .fit(X) first")

    def _transform(self, points: np.ndarray) -> np.ndarray:
        """z = sigma_K L^-1 x, with L L^T = H and sigma_K the kernel's unit scale.

        L^-1 is kept from ``fit``: one (m, d) x (d, d) product per call, where a triangular
        solve with m right-hand sides cost 0.6 ms for m = 65536, d = 1.
        """
        return points @ (self._scale * self._whitening.T)

    # -- evaluation -------------------------------------------------------------------
    @single_threaded_blas
    def pdf(self, Q) -> np.ndarray:
        """Density at the query points; no points give an empty array.

        It underflows to 0 far from the data (below 1e-308); :meth:`score_samples` does not.
        When ``method_`` is "binned": the binned density interpolated from the grid built at
        :meth:`fit` (relative error at most ``tolerance`` where the density is at least 1e-3 of
        its maximum, for the Gaussian kernel; 0 outside the grid).

        Parameters
        ----------
        Q : array_like of shape (m, d), or (m,) for 1-D data
            The query points.

        Returns
        -------
        ndarray of shape (m,)
            f(q) for each query point (Andrzejewski et al., paper 000 in docs/statistics.md, eq. 6).
        """
        self._check_fitted()
        points = as_queries(Q, self.n_features_in_)
        reflection = self._reflection
        if reflection is None:
            return self._unbounded_pdf(points)
        q = points[:, 0]
        images = reflection.images(q)
        density = self._unbounded_pdf(images.reshape(-1, 1)).reshape(images.shape).sum(axis=0)
        return np.where(reflection.inside(q), density, 0.0)

    def _unbounded_pdf(self, points: np.ndarray) -> np.ndarray:
        """:meth:`pdf` without the boundary, at validated (m, d) points."""
        if self._binned is not None:
            return self._binned(points)
        Qz = self._transform(points)
        if Qz.shape[0] == 0:
            return np.empty(0)
        sums = self._prepared(self._evaluation_backend(Qz), log=False)(Qz)
        return self._norm * np.asarray(sums, dtype=np.float64)

    def _prepared(self, backend, *, log: bool):
        """``backend``'s kernel sums (or their logs) over the fitted rows as a function of the
        queries (``prepare_kernel_sum`` / ``prepare_log_kernel_sum``), made at the first
        evaluation on that backend and kept until the next :meth:`fit`: the GPU backend keeps the
        rows centred, padded and in device memory, so that each call moves only its queries."""
        kept = self.__dict__.setdefault("_prepared_sums", {})
        key = (id(backend), log, self.kernel, str(self.dtype))
        if key not in kept:  # the entry holds the backend, so its id is not reused while kept
            prepare = backend.prepare_log_kernel_sum if log else backend.prepare_kernel_sum
            kept[key] = (backend, prepare(self._Z, self.kernel, self.weights_, dtype=self.dtype))
        return kept[key][1]

    def __getstate__(self) -> dict:
        """Pickles and copies leave out the prepared sums (device memory; made again when needed)."""
        state = self.__dict__.copy()
        state.pop("_prepared_sums", None)
        return state

    @single_threaded_blas
    def score_samples(self, Q) -> np.ndarray:
        """Log density at the query points; no points give an empty array.

        log f(q) = log c + log sum_i w_i k(|z(q) - z_i|^2), c = c_d sigma_K^d |H|^-1/2, the sum's
        log by log-sum-exp (the backends' ``log_kernel_sum``): finite for the Gaussian at any
        distance (-7550.27 at 50 sd from 1000 N(0, 1) points, where the density underflows to
        0), -inf only where the density is truly 0 (beyond a compactly supported kernel's reach).
        When ``method_`` is "binned": the log of the interpolated binned density where it is at
        least 1e-3 of the grid's maximum (relative error ``tolerance``, absolute error of the log
        about the same), and the exact log-sum-exp at the other points, where the relative error
        of the binned density is not bounded.

        Parameters
        ----------
        Q : array_like of shape (m, d), or (m,) for 1-D data
            The query points.

        Returns
        -------
        ndarray of shape (m,)
            log f(q) for each query point.
        """
        self._check_fitted()
        points = as_queries(Q, self.n_features_in_)
        reflection = self._reflection
        if reflection is None:
            return self._unbounded_log_density(points)
        q = points[:, 0]
        images = reflection.images(q)
        logs = self._unbounded_log_density(images.reshape(-1, 1)).reshape(images.shape)
        return np.where(reflection.inside(q), np.logaddexp.reduce(logs, axis=0), -np.inf)

    def _unbounded_log_density(self, points: np.ndarray) -> np.ndarray:
        """:meth:`score_samples` without the boundary, at validated (m, d) points."""
        Qz = self._transform(points)
        if Qz.shape[0] == 0:
            return np.empty(0)
        if self._binned is None:
            return self._exact_log_density(Qz)
        density = self._binned(points)
        out = np.empty(len(density))
        tail = density < FLOOR * float(self._binned.values.max())
        if self._source is not None:  # data served in chunks: no rows for the tails
            tail[:] = False
        with np.errstate(divide="ignore"):
            out[~tail] = np.log(density[~tail])
        if tail.any():
            out[tail] = self._exact_log_density(Qz[tail])
        return out

    def _exact_log_density(self, Qz: np.ndarray) -> np.ndarray:
        logs = self._prepared(self._evaluation_backend(Qz), log=True)(Qz)
        return self._log_norm + np.asarray(logs, dtype=np.float64)

    def score(self, Q, y=None) -> float:
        """Total log-likelihood of the query points (0.0 for none).

        Parameters
        ----------
        Q : array_like of shape (m, d), or (m,) for 1-D data
            The query points.
        y : None
            Ignored (scikit-learn API).

        Returns
        -------
        float
            sum_q log f(q).
        """
        return float(self.score_samples(Q).sum())

    def _evaluation_backend(self, Qz: np.ndarray):
        return resolve_backend(self.backend, self.dtype, work=float(self._Z.shape[0]) * Qz.shape[0])

    # -- the distribution function ---------------------------------------------------------
    def _cdf_scales(self) -> np.ndarray:
        """(d,) the kernel's standard deviation on each axis for :meth:`cdf` (``cdf_bandwidth_``)."""
        self._check_fitted()
        if self._source is not None:
            raise ValueError("cdf() and quantile() sum over the rows, and this KDE was fitted on data read in chunks, "
                             "whose rows it does not keep; fit on an array (or a sample of the data)")
        if self.kernel != "gaussian":
            raise ValueError(f"cdf() and quantile() are those of the Gaussian kernel; this KDE has kernel={self.kernel!r}: "
                             "fit with kernel='gaussian'")
        if not hasattr(self, "cdf_bandwidth_"):
            choice = self.cdf_bandwidth
            if isinstance(choice, str):
                choose(choice, ("auto", "density"), what="cdf_bandwidth")
                uniform = bool(np.all(self.weights_ == self.weights_[0]))
                if choice == "auto" and self.n_features_in_ == 1 and uniform:
                    h = plugin_cdf(self._data[:, 0], backend=self.backend, dtype=self.dtype)
                    self.cdf_bandwidth_, self._cdf_H = h, np.array([[h * h]])
                else:
                    self.cdf_bandwidth_, self._cdf_H = self.bandwidth_, self.H_
            else:
                self.cdf_bandwidth_, self._cdf_H = _explicit_bandwidth(choice, self.n_features_in_)
        H = self._cdf_H
        if np.any(H[~np.eye(H.shape[0], dtype=bool)] != 0.0):
            raise ValueError("cdf() needs a diagonal bandwidth matrix (a product of normal distribution functions); "
                             "pass cdf_bandwidth= per-column bandwidths, or fit with bandwidth='lscv_diag' or a vector")
        return np.sqrt(np.diag(H))

    @single_threaded_blas
    def cdf(self, Q) -> np.ndarray:
        """The kernel distribution function at the query points: the estimate's mass below each.

        F(q) = sum_i w_i prod_k Phi((q_k - X_ik) / h_k) for the Gaussian kernel and a diagonal
        H = diag(h_k^2) of bandwidth ``cdf_bandwidth`` (Azzalini 1981; R's ``ks::kcde``;
        docs/statistics.md, "The kernel distribution function"), summed exactly over the rows in
        chunks of queries; when ``method_`` is "binned" and the data are 1-D, over their linear-
        binning counts on a grid of spacing h sqrt(tolerance / 0.0302), which bounds the absolute
        error of F by ``tolerance`` (:meth:`_cdf_support`).

        Parameters
        ----------
        Q : array_like of shape (m, d), or (m,) for 1-D data
            The query points.

        Returns
        -------
        ndarray of shape (m,)
            F(q), in [0, 1].

        Raises
        ------
        ValueError
            If the KDE is not fitted, was fitted on data read in chunks, its kernel is not
            Gaussian or the cdf's bandwidth matrix is not diagonal.
        """
        scales = self._cdf_scales()
        Q = as_queries(Q, self.n_features_in_)
        points, weights = self._cdf_support(scales)
        reflection = self._reflection
        if reflection is None:
            return mixture_cdf(points, weights, scales, Q)
        plus, minus = reflection.cdf_points(Q[:, 0])
        G = mixture_cdf(points, weights, scales, np.concatenate([plus, minus]).reshape(-1, 1)).reshape(4, -1)
        return np.clip(G[0] + G[1] - G[2] - G[3], 0.0, 1.0)

    def quantile(self, p) -> np.ndarray | float:
        """The quantiles of the kernel distribution function of 1-D data: x with F(x) = p.

        Bracketed Newton steps on :meth:`cdf` and its derivative (vectorised over p), to
        1e-12 of the data's spread.

        Parameters
        ----------
        p : float or array_like
            Probabilities in [0, 1] (0 and 1 give -inf and inf).

        Returns
        -------
        float or ndarray
            The quantiles, of p's shape.

        Raises
        ------
        ValueError
            If the data are not 1-D, p is outside [0, 1] or not finite, or as :meth:`cdf`.
        """
        h = float(self._cdf_scales()[0])
        if self.n_features_in_ != 1:
            raise ValueError(f"quantile() is for 1-D data; this KDE has {self.n_features_in_} columns")
        probs = np.asarray(p, dtype=np.float64)
        if not np.all((probs >= 0) & (probs <= 1)):
            raise ValueError("p must hold probabilities in [0, 1]")
        flat = probs.ravel()
        reflection = self._reflection
        low, high = (-np.inf, np.inf) if reflection is None else (reflection.low, reflection.high)
        out = np.where(flat <= 0, low, high)
        inner = (flat > 0) & (flat < 1)
        if inner.any():
            x = self._data[:, 0]
            points, weights = self._cdf_support(np.array([h]))
            reach = h * float(-special.ndtri(min(flat[inner].min(), 1 - flat[inner].max()) / 2)) + h
            out[inner] = quantile_1d(lambda q: self._cdf_pdf_1d(points[:, 0], weights, h, q), flat[inner],
                                     max(low, float(x.min()) - reach), min(high, float(x.max()) + reach),
                                     xtol=1e-12 * (float(x.max() - x.min()) + h))
        return out.reshape(probs.shape) if probs.ndim else float(out[0])

    def _cdf_support(self, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The points and weights :meth:`cdf` sums over: the rows, or for binned 1-D estimates the
        nodes of their linear-binning counts where that grid has fewer nodes than half the rows.

        Linear binning replaces Phi((q - x_i) / h) by its linear interpolant between the nodes
        around x_i, wrong by at most (delta^2 / 8) max |phi'| / h^2 = 0.0302 (delta / h)^2; the
        spacing delta = h sqrt(tolerance / 0.0302) keeps F within ``tolerance``.
        """
        if self.method_ != "binned" or self.n_features_in_ != 1:
            return self._data, self.weights_
        x = self._data[:, 0]
        low, high = float(x.min()), float(x.max())
        delta = float(scales[0]) * math.sqrt(self.tolerance / 0.0302)
        nodes = math.ceil((high - low) / delta) + 1
        if nodes < 2 or 2 * nodes > x.size:
            return self._data, self.weights_
        spec = GridSpec.covering(low, high, nodes)
        counts = linear_bin(x, spec, weights=self.weights_, backend="numpy").counts
        keep = counts > 0
        return spec.nodes(0)[keep, None], counts[keep] / counts.sum()

    def _cdf_pdf_1d(self, x: np.ndarray, w: np.ndarray, h: float, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F(q) and its derivative at bandwidth h for points x of weights w, reflected in the
        boundary if there is one."""
        reflection = self._reflection
        if reflection is None:
            return mixture_cdf_pdf_1d(x, w, h, q)
        plus, minus = reflection.cdf_points(q)
        G, _ = mixture_cdf_pdf_1d(x, w, h, np.concatenate([plus, minus]).ravel())
        images = reflection.images(q)
        _, f = mixture_cdf_pdf_1d(x, w, h, images.ravel())
        G = G.reshape(4, -1)
        return G[0] + G[1] - G[2] - G[3], f.reshape(images.shape).sum(axis=0)

    def sample(self, n_samples: int = 1, seed=None) -> np.ndarray:
        """Draw from the estimate: a data point (by weight) plus a kernel draw scaled by H.

        Parameters
        ----------
        n_samples : int, default 1
            How many points to draw (non-negative).
        seed : None, int or numpy.random.Generator
            Seed of the random numbers.

        Returns
        -------
        ndarray of shape (n_samples, d)
            The draws.

        Raises
        ------
        ValueError
            If the KDE is not fitted or ``n_samples`` is not a non-negative integer.
        """
        self._check_fitted()
        if self._source is not None:
            raise ValueError("this KDE was fitted on data read in chunks, whose rows it does not keep; "
                             "sample() draws from the rows: fit on an array (or a sample of the data) to draw")
        if int(n_samples) != n_samples or n_samples < 0:
            raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}")
        rng = np.random.default_rng(seed)
        draws = self._unbounded_draws(int(n_samples), rng)
        reflection = self._reflection
        if reflection is None:
            return draws
        draws = reflection.fold(draws)  # the images' mass, folded back inside
        lost = ~reflection.inside(draws[:, 0])  # beyond both edges: the mass f_R leaves out, drawn again
        while lost.any():
            draws[lost] = reflection.fold(self._unbounded_draws(int(lost.sum()), rng))
            lost = ~reflection.inside(draws[:, 0])
        return draws

    def _unbounded_draws(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws from the estimate without the boundary: a row by weight plus a kernel draw scaled by H."""
        idx = rng.choice(self.n_samples_, size=size, p=self.weights_)
        u = _radial_draws(get_kernel(self.kernel), self.n_features_in_, size, rng) / self._scale
        return self._data[idx] + u @ self._chol.T


def mean_log_likelihood(estimator: KDE, X, y=None) -> float:
    """The mean log density of held-out points, a scorer for scikit-learn's model selection.

    ``GridSearchCV(KDE(), {"bandwidth": [...]}, scoring=mean_log_likelihood)`` ranks bandwidths by
    the mean of :meth:`KDE.score_samples` over each held-out fold (likelihood cross-validation);
    the default scoring, :meth:`KDE.score`, is the fold's total, which ranks the same where the folds
    are equal in size.

    Parameters
    ----------
    estimator : KDE
        A fitted KDE.
    X : array_like of shape (m, d), or (m,) for 1-D data
        The held-out points (at least one).
    y : None
        Ignored (scikit-learn API).

    Returns
    -------
    float
        mean_q log f(q).

    Raises
    ------
    ValueError
        If X has no points, or as :meth:`KDE.score_samples`.
    """
    logs = estimator.score_samples(X)
    if logs.size == 0:
        raise ValueError("mean_log_likelihood needs at least one held-out point")
    return float(logs.mean())


def _explicit_bandwidth(value, d: int):
    """A user's numeric bandwidth: scalar h, a length-d vector of h_k, or H itself."""
    if isinstance(value, Real) and not isinstance(value, bool):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"a numeric bandwidth must be positive and finite, got {value!r}")
        return float(value), value * value * np.eye(d)  # type: ignore[operator]  # typeshed: Real * Real -> _ComplexLike
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 1 and arr.size == d:
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError("bandwidths per column must be positive and finite")
        return arr.copy(), np.diag(arr * arr)
    if arr.shape == (d, d):
        check_spd(arr, what="the bandwidth matrix")
        return arr.copy(), arr.copy()
    raise ValueError(
        f"bandwidth must be a name, a positive number, {d} per-column values or a {d} x {d} "
        f"matrix for {d}-column data; got an array of shape {arr.shape}"
    )


def _radial_draws(kernel, d: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Draws from the radial kernel K (before unit scaling).

    Gaussian: standard normal.  Bounded kernels: rejection from the unit ball, accepting
    u with probability k(|u|^2) <= 1.
    """
    if kernel.name == "gaussian":
        return rng.standard_normal((size, d))
    out = np.empty((0, d))
    while out.shape[0] < size:
        batch = 2 * (size - out.shape[0]) + 16
        direction = rng.standard_normal((batch, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        u = direction * rng.random((batch, 1)) ** (1.0 / d)
        keep = rng.random(batch) < kernel.profile((u * u).sum(axis=1))
        out = np.vstack([out, u[keep]])
    return out[:size]
