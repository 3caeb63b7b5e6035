"""Multivariate plug-in bandwidth matrices: :func:`plugin_H` (full H) and :func:`plugin_diag` (diagonal H).

Both minimise the estimated AMISE (Wand & Jones 1995, eq. 4.10; Chacon & Duong 2010, eq. 3)

    PI(H) = (4 pi)^(-d/2) / (n |H|^1/2) + 1/4 vec(H)^T Psi_hat_4 vec(H),

Psi_hat_4 the d^2 x d^2 matrix of the estimated fourth-order functionals
(:mod:`parzen.bandwidth.functionals`), computed on pre-transformed data x* (sphered for the full
matrix, scaled for the diagonal one) and transformed back.  The pilots, the pre-transformations,
the start and the optimiser (BFGS over a square root of H) are those of R ``ks`` 1.14's ``Hpi``
and ``Hpi.diag`` with ``binned = FALSE`` and their defaults: two stages, the SAMSE pilot for d = 2
and the scalar pilot ("dscalar") otherwise (docs/departures.md, item 18).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy import optimize

from .._validate import Data, as_data, check_spd, check_variance, check_weights
from ..backends import resolve_backend
from ..binned.source import as_chunked
from . import binned_matrix
from .binned_matrix import DEFAULT_TOLERANCE, ChunkedTransform, check_tolerance
from .convention import from_matrix
from .functionals import dscalar_pilot, full_tensor, multi_indices, pairs_of, psi_hat, samse_pilot
from .method import choose_method, report
from .weight_kind import check_weight_kind, sample_size, weighted_covariance


class PreTransformed:
    """Data x* = x S^-1/2 (sphered) or x / sd (scaled), with the factor back to data units.

    Parameters
    ----------
    Y : numpy.ndarray
        (n, d) x*.
    root : numpy.ndarray
        (d, d) S^1/2 (symmetric square root by SVD, as R ``ks:::matrix.sqrt``) or diag(sd).
    weights : numpy.ndarray or None
        The positive weights of the rows kept (rows of weight 0 are left out), or None.
    n : float
        The rows, or with weights :func:`parzen.bandwidth.weight_kind.sample_size` (Kish's
        effective sample size (sum w)^2 / sum w^2 for probability weights, sum w for frequency
        weights).
    weight_kind : str
        "probability" or "frequency" (:mod:`parzen.bandwidth.weight_kind`): with the weights, what
        n and the covariances are.  The functionals' sums include the pairs i = j (as ``ks``), so
        frequency weights need no correction for the copies' pairs.
    """

    def __init__(self, data: Data, weights, how: str, weight_kind: str = "probability") -> None:
        X, w = data.values, None
        self.weight_kind = weight_kind
        if weights is not None:
            w = check_weights(weights, data.n)
            X, w = X[w > 0], w[w > 0]
            if len(X) < data.d + 2:
                raise ValueError(
                    f"only {len(X)} rows have a positive weight; a plug-in bandwidth matrix needs at least d + 2 = {data.d + 2}"
                )
        sigma = self.covariance(X, w)
        check_spd(sigma, what="the covariance matrix of X", columns=data.columns)
        if how == "sphere":
            self.root = symmetric_root(sigma)
        else:
            self.root = np.diag(np.sqrt(np.diag(sigma)))
        self.Y = X @ np.linalg.inv(self.root)
        self.weights = w
        self.n = float(len(X)) if w is None else sample_size(w, weight_kind)
        self.sigma_star = self.covariance(self.Y, w)

    def covariance(self, X: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """The (weighted) covariance of the rows of X, as the weights' kind defines it."""
        return np.atleast_2d(np.cov(X, rowvar=False)) if w is None else weighted_covariance(X, w, self.weight_kind)

    def back(self, H_star: np.ndarray) -> np.ndarray:
        """S^1/2 H* S^1/2: the matrix in data units."""
        return self.root @ H_star @ self.root


def symmetric_root(A: np.ndarray) -> np.ndarray:
    """The symmetric square root of a positive-definite matrix (by its eigendecomposition)."""
    values, vectors = np.linalg.eigh(A)
    return (vectors * np.sqrt(values)) @ vectors.T


def psi4_matrix(sample, *, backend, dtype, follow_ks: bool = True, functionals=None) -> np.ndarray:
    """The d x d x d x d tensor Psi_hat_4 of ``ks``'s two-stage pilots on x*.

    d = 2: SAMSE (Chacon & Duong 2010, section 3.2): Psi_6 with the normal-scale g6, then Psi_4
    with g4 from it (:func:`samse_pilot`); otherwise the scalar pilot (:func:`dscalar_pilot`).

    Parameters
    ----------
    sample : PreTransformed or parzen.bandwidth.binned_matrix.ChunkedTransform
        x* (its rows are read only by the exact functionals).
    backend : KDEBackend
    dtype : None or dtype
    follow_ks : bool, default True
        As in :func:`samse_pilot`.
    functionals : callable, optional
        (g, alphas) -> Psi_alpha(g) estimates in place of the exact :func:`psi_hat` of x*: the
        binned ones (:class:`parzen.bandwidth.binned_matrix.BinnedFunctionals`).

    Returns
    -------
    numpy.ndarray
        shape (d, d, d, d).
    """
    n, sigma = sample.n, sample.sigma_star
    d = sigma.shape[0]
    psi = functionals if functionals is not None else exact_functionals(sample, backend, dtype)
    if d == 2:
        g6 = samse_pilot(sigma, n, 6)
        g4 = samse_pilot(sigma, n, 4, psi(g6, multi_indices(d, 6)), follow_ks=follow_ks)
    else:
        g4 = dscalar_pilot(backend, None, n, sigma=sigma, functionals=psi)
    return full_tensor(psi(g4, multi_indices(d, 4)), d, 4)


def exact_functionals(sample: PreTransformed, backend, dtype):
    """(g, alphas) -> :func:`psi_hat` of the sample's rows and weights: every pair, exactly."""
    return partial(psi_hat, backend, sample.Y, weights=sample.weights, dtype=dtype)


def amise(H: np.ndarray, psi4: np.ndarray, n: float) -> float:
    """PI(H) = (4 pi)^(-d/2) / (n |H|^1/2) + 1/4 sum_{abce} Psi4[a, b, c, e] H_ab H_ce."""
    d = H.shape[0]
    det = np.linalg.det(H)
    if not det > 0:
        return math.inf
    return (4 * np.pi) ** (-d / 2) / (n * math.sqrt(det)) + 0.25 * float(np.einsum("abce,ab,ce->", psi4, H, H))


def normal_scale_start(sample: PreTransformed) -> np.ndarray:
    """``ks::Hns`` of x*: (4 / (n (d + 2)))^(2/(d+4)) Sigma*."""
    d = sample.sigma_star.shape[0]
    return (4.0 / (sample.n * (d + 2))) ** (2.0 / (d + 4)) * sample.sigma_star


#: BFGS stops when the gradient of the objective, divided by its value at the start, is below this.
GRADIENT_TOLERANCE = 1e-6
#: Step of the central differences that estimate the gradient, relative to the largest entry of
#: the start: large enough that the
#: rounding of SCV's cancelling pair sums (about 1e-11 of its value) does not swamp them.
DIFFERENCE_STEP = 1e-5


def _bfgs(objective, theta0: np.ndarray) -> np.ndarray:
    """argmin of objective by BFGS from theta0 (central-difference gradients), the objective
    divided by its value there (the stopping rule then does not depend on its scale)."""
    scale = abs(objective(theta0)) or 1.0
    step = DIFFERENCE_STEP * float(np.max(np.abs(theta0)))

    def gradient(theta: np.ndarray) -> np.ndarray:
        shifts = step * np.eye(theta.size)
        return np.array([(objective(theta + e) - objective(theta - e)) / (2 * step * scale) for e in shifts])

    return optimize.minimize(lambda t: objective(t) / scale, theta0, method="BFGS", jac=gradient, options={"gtol": GRADIENT_TOLERANCE}).x


def minimise_full(objective, start: np.ndarray) -> np.ndarray:
    """argmin over symmetric A of objective(A A), by BFGS from A = start^1/2 (as ``ks``'s optim);
    returns H = A A."""
    d = start.shape[0]
    pairs = pairs_of(d)

    def matrix(theta: np.ndarray) -> np.ndarray:
        A = np.zeros((d, d))
        for value, (i, j) in zip(theta, pairs):
            A[i, j] = A[j, i] = value
        return A @ A

    root = symmetric_root(start)
    theta0 = np.array([root[i, j] for i, j in pairs])
    return matrix(_bfgs(lambda t: objective(matrix(t)), theta0))


def minimise_diagonal(objective, start: np.ndarray) -> np.ndarray:
    """argmin over diagonal A of objective(A^2), by BFGS from the square roots of start's diagonal."""
    theta0 = np.sqrt(np.diag(start))
    return np.diag(_bfgs(lambda t: objective(np.diag(t * t)), theta0) ** 2)


def _sample(X, weights, how: str, weight_kind: str = "probability") -> PreTransformed:
    weight_kind = check_weight_kind(weight_kind)
    data = as_data(X)
    if data.n < data.d + 2:
        raise ValueError(f"a plug-in bandwidth matrix needs at least d + 2 = {data.d + 2} rows for {data.d}-column X, got {data.n}")
    check_variance(data)
    return PreTransformed(data, weights, how, weight_kind)


def prepared_sample(X, weights, how: str, weight_kind: str, method: str, what: str):
    """x* and the method: (PreTransformed, "exact" or "binned") for data in memory,
    (:class:`ChunkedTransform`, "binned") for data served in chunks.

    "auto" bins from :data:`parzen.bandwidth.binned_matrix.AUTO_BINNED_FROM` rows on (d <= 4;
    frequency weights count as the rows they stand for, so that they decide as the replicated data);
    data served in chunks are always binned (:func:`parzen.bandwidth.method.choose_method`).

    Raises
    ------
    ValueError
        As :func:`plugin_H`.
    """
    weight_kind = check_weight_kind(weight_kind)
    chunked = as_chunked(X)
    if chunked is not None:
        if weights is not None:
            raise ValueError(f"weights= was given for {chunked.description}, which is read in chunks; serve the weights "
                             f"as the chunks' weights column, or load the data into memory for weighted {what}")
        choose_method(method, n=0, d=chunked.d, exact_up_to=0, chunked=chunked.description, what=what)
        return ChunkedTransform(chunked, how, weight_kind), "binned"
    sample = _sample(X, weights, how, weight_kind)
    n, d = sample.Y.shape
    if weights is not None and weight_kind == "frequency":  # as the replicated rows would decide
        n = round(sample.n)
    exact_up_to = binned_matrix.AUTO_BINNED_FROM.get(d, 1 << 62) - 1
    return sample, choose_method(method, n=n, d=d, exact_up_to=exact_up_to, what=what)


def selected(sample, chosen: str, solve, *, what: str, tolerance: float, grid_size, method: str) -> np.ndarray:
    """solve(functionals) -> H* with the exact functionals (functionals None) or binned ones
    (:class:`parzen.bandwidth.binned_matrix.BinnedFunctionals`, the first grid spaced for the
    scales the selector uses on normal data), reported (:func:`parzen.bandwidth.method.report`)."""
    tolerance = check_tolerance(tolerance)
    if chosen == "binned":
        options = {"tolerance": tolerance, "grid_size": grid_size, "shrink_to_fit": method == "auto", "what": what}
        functionals = (sample.functionals(**options) if isinstance(sample, ChunkedTransform)
                       else binned_matrix.in_memory(sample.Y, sample.weights, **options))
        H_star = functionals.run(sample.sigma_star, sample.n, solve)
        report(what, "binned", n=round(sample.n), grid_size=functionals.sizes,
               tolerance=tolerance if grid_size is None else None, error_estimate=functionals.error_estimate)
        return H_star
    H_star = solve(None)
    report(what, "exact", n=round(sample.n))
    return H_star


def plugin_H(
    X, *, weights=None, weight_kind: str = "probability", backend: str = "auto", dtype=None, follow_ks: bool = True,
    method: str = "auto", tolerance: float = DEFAULT_TOLERANCE, grid_size=None,
) -> float | np.ndarray:
    """Plug-in bandwidth matrix H (full): argmin of the estimated AMISE PI(H) (Duong & Hazelton
    2003; Chacon & Duong 2010, TEST 19, 375-398), as R ``ks::Hpi(x, binned = FALSE)``.

    On the sphered data x* = x S^-1/2: Psi_hat_4 by ``ks``'s default two-stage pilot (SAMSE for
    d = 2, the scalar pilot otherwise; :func:`psi4_matrix`), then BFGS over a symmetric square root
    of H from the normal-scale matrix, and H = S^1/2 H* S^1/2.  Exact: every functional is a sum
    over the n(n-1)/2 pairs (:meth:`parzen.backends.KDEBackend.pair_sum_hermite`), O(n^2) each.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least d + 2 rows, finite, covariance positive definite).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows (any positive scale): the functionals become the weighted
        sums sum_{i,j} w_i w_j D phi_G(x_i - x_j) / (sum w)^2, the covariance the weighted one, and n
        Kish's effective sample size (sum w)^2 / sum w^2, as for the weighted rules of thumb.
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights as
        above, or counts of each row's copies: then n = sum w and the covariance divides by
        sum w - 1, so that the answer equals the one on the replicated data.
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).
    follow_ks : bool, default True
        For d = 2, compute the second-stage pilot as ``ks`` 1.14 does (docs/departures.md,
        item 18); False follows the formula of Chacon & Duong (2010).
    method : {"auto", "exact", "binned"}, default "auto"
        "exact": every functional over every pair; "binned" (d <= 4): from linear-binning counts
        of x* with the binning error's delta^2 term taken out, as ``ks::Hpi(binned = TRUE)`` bins
        but on a grid chosen for ``tolerance`` (:mod:`parzen.bandwidth.binned_matrix`); "auto":
        exact below :data:`parzen.bandwidth.binned_matrix.AUTO_BINNED_FROM` rows, binned from
        there (on a coarser grid, with a warning, where the tolerance's grid would be too large).
        Data served in chunks (:class:`parzen.binned.ChunkedData`, e.g. a Parquet dataset or a
        DuckDB table; a weights column is read as ``weight_kind`` says) are always binned.
    tolerance : float, default 1e-3
        Binned: the relative (Frobenius) error allowed on H against the exact H on the same data;
        the grid spacing is g (tolerance / C)^(1/4), g the smallest pilot scale, C = 1
        (:data:`parzen.bandwidth.binned_matrix.ERROR_CONSTANT`, measured).
    grid_size : int or sequence of int, optional
        Binned: nodes per axis, overriding ``tolerance``.

    Returns
    -------
    float or ndarray of shape (d, d)
        H in data units; for 1-D data the float h = sqrt(H) (:mod:`parzen.bandwidth.convention`).

    Raises
    ------
    ValueError
        If X or the weights are invalid (fewer than d + 2 rows, non-finite values, a constant column,
        a singular covariance), or the weights are (negative or non-finite values, another number
        than rows, fewer than d + 2 positive ones); an unknown ``method``, "binned" with d > 4,
        "exact" for data served in chunks, a tolerance outside (0, 0.1] or a grid beyond
        :data:`parzen.bandwidth.binned_matrix.MAX_NODES` nodes with ``method="binned"``
        (:class:`parzen.binned.lscv.GridTooLarge`).
    """
    sample, chosen = prepared_sample(X, weights, "sphere", weight_kind, method, "plugin_H")
    be = resolve_backend(backend) if chosen == "exact" else None

    def solve(functionals) -> np.ndarray:
        psi4 = psi4_matrix(sample, backend=be, dtype=dtype, follow_ks=follow_ks, functionals=functionals)
        return minimise_full(lambda H: amise(H, psi4, sample.n), normal_scale_start(sample))

    H_star = selected(sample, chosen, solve, what="plugin_H", tolerance=tolerance, grid_size=grid_size, method=method)
    return from_matrix(sample.back(H_star))


def plugin_diag(
    X, *, weights=None, weight_kind: str = "probability", backend: str = "auto", dtype=None, follow_ks: bool = True,
    method: str = "auto", tolerance: float = DEFAULT_TOLERANCE, grid_size=None,
) -> float | np.ndarray:
    """Plug-in diagonal bandwidth matrix: argmin over diagonal H of the estimated AMISE PI(H)
    (Duong & Hazelton 2003; Chacon & Duong 2010), as R ``ks::Hpi.diag(x, binned = FALSE)``.

    On the scaled data x* = x / sd: Psi_hat_4 as :func:`plugin_H` computes it; for d = 2 the
    minimiser in closed form (Wand & Jones 1994, as ``ks``): h1 = (psi04^(3/4) R(K) /
    (psi40^(3/4) (sqrt(psi40 psi04) + psi22) n))^(1/6), h2 = (psi40 / psi04)^(1/4) h1; otherwise
    BFGS over the square roots of the diagonal from the normal-scale matrix.

    Parameters
    ----------
    X, weights, weight_kind, backend, dtype, follow_ks, method, tolerance, grid_size
        As in :func:`plugin_H`.

    Returns
    -------
    float or ndarray of shape (d, d)
        The diagonal H in data units (h for 1-D data).

    Raises
    ------
    ValueError
        As :func:`plugin_H`.
    """
    sample, chosen = prepared_sample(X, weights, "scale", weight_kind, method, "plugin_diag")
    be = resolve_backend(backend) if chosen == "exact" else None

    def solve(functionals) -> np.ndarray:
        psi4 = psi4_matrix(sample, backend=be, dtype=dtype, follow_ks=follow_ks, functionals=functionals)
        if psi4.shape[0] == 2:
            psi40, psi22, psi04 = psi4[0, 0, 0, 0], psi4[0, 0, 1, 1], psi4[1, 1, 1, 1]
            RK = 1.0 / (4 * np.pi)
            h1 = (psi04**0.75 * RK / (psi40**0.75 * (math.sqrt(psi40 * psi04) + psi22) * sample.n)) ** (1 / 6)
            h2 = (psi40 / psi04) ** 0.25 * h1
            return np.diag([h1 * h1, h2 * h2])
        return minimise_diagonal(lambda H: amise(H, psi4, sample.n), normal_scale_start(sample))

    H_star = selected(sample, chosen, solve, what="plugin_diag", tolerance=tolerance, grid_size=grid_size, method=method)
    return from_matrix(sample.back(H_star))
