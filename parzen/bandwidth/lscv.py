"""Least-squares cross-validation: LSCV_h (scalar h, H = h^2 Sigma), LSCV_H (full H)
and the diagonal variant, with their criteria.

Andrzejewski et al. (paper 000 in docs/statistics.md), section 4.4, eqs. (24)-(36) and (43).
Following the papers, both sums of the criterion are normalised by n^-2; texts such as Wand &
Jones (1995) and R's ``ks`` use 1/(n(n-1)) for the leave-one-out term, so the minimisers differ
by O(1/n) (docs/departures.md, item 6).  Pair sums run on whitened data, y = L^-1 x with
L L^T = Sigma (or H), so each pair costs O(d) and every candidate h shares one pass
(docs/departures.md, item 7).  The selectors return the bandwidth in data units
(:mod:`parzen.bandwidth.convention`); :func:`lscv_h_factor` returns LSCV_h's multiplier of Sigma.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, optimize

from .._progress import progress_bar
from .._threads import single_threaded_blas
from .._validate import (
    Data,
    as_data,
    check_spd,
    check_variance,
    check_weights,
    covariance,
    covariance_factor,
    standardised,
    tied_columns,
    warn_if_repeated_rows,
    warn_if_tied,
)
from ..backends import resolve_backend
from ..binned.chunked import checked_moments, chunked_pair_weights, is_weighted, units_of
from ..binned.lscv import DEFAULT_TOLERANCE, BinnedPairWeights, bin_pair_weights
from ..binned.source import ChunkedData, Moments, as_chunked
from .convention import from_factor, from_matrix
from .method import choose_method, report
from .weight_kind import check_weight_kind, sample_size, tied_pairs, weighted_covariance


class LSCVWarning(UserWarning):
    """The LSCV search ended where its answer should not be trusted."""


class CostWarning(UserWarning):
    """A bandwidth search is predicted to run long (minutes or more); the message says how long
    and how to spend less."""


def _criterion(sums: np.ndarray, n: float, d: int, h: np.ndarray, sqrt_det: float) -> np.ndarray:
    """g = h^-d |S|^-1/2 [2 n^-2 sum_{i<j} T + n^-1 R(K)] from the two Gaussian pair sums.

    T = (4 pi)^(-d/2) e^(-s/(4h^2)) - 2 (2 pi)^(-d/2) e^(-s/(2h^2)) with s the squared
    whitened distance, R(K) = (4 pi)^(-d/2) (eqs. 24-27, 32-36, 40-43); S is Sigma for
    LSCV_h (then h is the scalar bandwidth) and H for LSCV_H (then h = 1).
    """
    c4 = (4.0 * math.pi) ** (-d / 2)
    c2 = (2.0 * math.pi) ** (-d / 2)
    pair_t = c4 * sums[..., 0] - 2.0 * c2 * sums[..., 1]
    return h ** (-d) / sqrt_det * (2.0 * pair_t / (n * n) + c4 / n)


def _whiten(values: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Rows y = L^-1 (x - mean), for the lower-triangular factor L."""
    centred = values - values.mean(axis=0)
    return linalg.solve_triangular(L, centred.T, lower=True, check_finite=False).T  # X was validated


#: ``method="auto"`` takes the binned pair sums from this many rows on, per dimension d <= 4 (exact
#: below and for d > 4).  Measured on the cpu backend (2 cores, shared), bimodal normal data, default
#: tolerance: lscv_h exact 0.23 s vs binned 0.22 s at n = 1000, d = 2, and 0.63 s vs 0.33 s at
#: n = 2000 (1-D: 0.19 s vs 0.017 s at n = 1000, 1.0 s vs 0.019 s at n = 2000); binned LSCV_H is
#: faster from n = 250 on, but exact stays exact where it costs well under a second.  In 3-D and 4-D
#: the grid cap makes the binned criterion coarser (docs/algorithms.md) and slower to set up:
#: lscv_h_factor at n = 2000 took 3.8 s binned vs 0.35 s exact (3-D, h 1.5e-3 apart) and 1.5 s vs
#: 0.16 s (4-D, 1.4e-2 apart); at n = 8000, 2.2 s vs 2.5 s (3-D, 5e-6 apart) and 1.9 s vs 2.5 s
#: (4-D, 1e-2 apart), so 3-D bins from 8000 rows and 4-D only from 32 000, where exact costs ~40 s.
AUTO_BINNED_FROM = {1: 2000, 2: 2000, 3: 8000, 4: 32000}


def lscv_method(method: str, n: int, d: int, *, chunked: str | None = None) -> str:
    """"exact" or "binned": what ``method`` means for LSCV on n rows of d columns.

    "auto" bins from :data:`AUTO_BINNED_FROM` [d] rows on for d <= 4 and is exact otherwise; data
    served in chunks are binned (:func:`parzen.bandwidth.method.choose_method`).

    Parameters
    ----------
    method : {"auto", "exact", "binned"}
        The caller's choice.
    n, d : int
        Rows and columns.
    chunked : str, optional
        The description of data served in chunks, None for data in memory.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For an unknown method, "binned" with d > 4, or "exact" for data served in chunks.
    """
    exact_up_to = AUTO_BINNED_FROM.get(d, AUTO_BINNED_FROM[1]) - 1  # d > 4: choose_method keeps it exact
    return choose_method(method, n=n, d=d, exact_up_to=exact_up_to, chunked=chunked, what="LSCV")


def _binned_pair_weights(method: str, n: int, d: int, Z: np.ndarray, **binning) -> BinnedPairWeights | None:
    """The binned lag weights of Z (:func:`parzen.binned.lscv.bin_pair_weights`) where
    ``method`` asks for them, else None.  Where the tolerance needs a grid beyond
    :data:`parzen.binned.lscv.MAX_LAGS`, "binned" raises and "auto" takes the largest grid
    within it, with a warning (from AUTO_BINNED_FROM[d] rows on the exact sums would cost more)."""
    if lscv_method(method, n, d) == "exact":
        return None
    return bin_pair_weights(Z, shrink_to_fit=method == "auto", **binning)


@single_threaded_blas
def lscv_h_objective(
    X, h, *, backend: str = "auto", dtype=None, method: str = "exact", grid_size=None,
    tolerance: float = DEFAULT_TOLERANCE,
):
    """The LSCV_h criterion g(h) for H = h^2 Sigma (Andrzejewski et al., paper 000 in
    docs/statistics.md, eq. 43).

    All values of ``h`` are evaluated in one pass over the pairs.  Sigma is the sample
    covariance (ddof=1); h is the multiplier that :func:`lscv_h_factor` returns.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample.
    h : float or array_like of shape (k,)
        Positive finite multipliers of Sigma^1/2.
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).
    method : {"exact", "binned", "auto"}, default "exact"
        Exact pair sums (O(n^2)), or sums over linear-binning counts (d <= 4,
        :mod:`parzen.binned.lscv`); "auto" bins from :data:`AUTO_BINNED_FROM` rows on (on a
        coarser grid, with a warning, where the tolerance's grid is too large).  Exact by
        default: the criterion is the definition the selectors are held to (they default to
        "auto").
    grid_size : int or sequence of int, optional
        Binned: nodes per axis, overriding ``tolerance``.
    tolerance : float, default 1e-4
        Binned: the relative error allowed on g at every h given
        (:func:`parzen.binned.lscv.grid_sizes`).

    Returns
    -------
    float or ndarray of shape (k,)
        g(h): a float for a scalar ``h``, an array otherwise.

    Raises
    ------
    ValueError
        If ``h`` is not positive and finite, X is invalid, ``method`` is unknown, or binned
        with d > 4 or a grid too large.
    """
    data = as_data(X)
    h_arr = np.atleast_1d(np.asarray(h, dtype=np.float64))
    if h_arr.ndim != 1 or not np.all(np.isfinite(h_arr)) or np.any(h_arr <= 0):
        raise ValueError("h must be a positive finite scalar or 1-D array of them")
    _, L, centred = covariance_factor(data)
    binned = _binned_pair_weights(
        method, data.n, data.d, centred, h_ref=float(h_arr.min()), frame=L, tolerance=tolerance, grid_size=grid_size,
        max_sd=float(h_arr.max()),
    )
    if binned is not None:
        values = _criterion(binned.pair_sums(L, h_arr), data.n, data.d, h_arr, float(np.prod(np.diag(L))))
    else:
        values = _lscv_h_values(_whiten(data.values, L), h_arr, float(np.prod(np.diag(L))), backend, dtype)
    return float(values[0]) if np.ndim(h) == 0 else values


def _weighted_lscv_sample(X, weights, method: str, backend, dtype, weight_kind: str = "probability", *,
                          tolerance: float = DEFAULT_TOLERANCE, grid_size=None):
    """(n_e, d, Sigma, units, L, pair_sums, binned) of weighted data for LSCV_h, exact or binned.

    With w normalised to sum 1, the weighted criterion
    h^-d |S|^-1/2 [2 sum_{i<j} w_i w_j T + sum w_i^2 R(K)] is :func:`_criterion` with n = n_e and
    the pair sums n_e^2 [sum_{i<j} w_i w_j e^(-s/(4h^2)) + t] (and e^(-s/(2h^2))), summed by
    :meth:`parzen.backends.KDEBackend.pair_sum_hermite` (alpha = 0) on the rows scaled by
    1/(sqrt(2) h) and 1/h; Sigma is the weighted covariance.  n_e, Sigma and the tied pairs t
    (copies of one row, at distance 0) are those of :mod:`parzen.bandwidth.weight_kind`: Kish's
    effective size and t = 0 for probability weights, sum w for frequency weights.  Equal weights
    give the unweighted criterion; frequency weights that of the replicated data.

    Binned (``method="binned"``, or "auto" from :data:`AUTO_BINNED_FROM` rows on; ``binned`` is
    then the :class:`parzen.binned.lscv.BinnedPairWeights`, else None), the pair sums come from the
    counts of linear binning with the weights c (Wand & Jones 1995, appendix D), the diagonal
    D(e) weighted by c_i^2 (probability) or c_i (frequency: the copies' pairs binned as the
    replicated rows', so the binned criterion is theirs), times (n_e / sum c)^2."""
    data = as_data(X)
    w = check_weights(weights, data.n)
    data = Data(data.values[w > 0], data.columns)
    counts = w[w > 0]
    w = counts / counts.sum()
    if data.n < 2:
        raise ValueError("only one row has a positive weight; a weighted bandwidth needs at least 2 rows with positive weights")
    warn_if_repeated_rows(data, method="LSCV_h")
    check_variance(data, name="the rows with positive weights of X")
    data, units = standardised(data)
    sigma = weighted_covariance(data.values, counts, weight_kind)
    L = check_spd(sigma, what="the weighted covariance matrix of X", columns=data.columns)
    n_e = sample_size(counts, weight_kind)
    h0 = reference_h0(n_e, data.d)
    centred = data.values - w @ data.values
    binned = _binned_pair_weights(
        method, data.n, data.d, centred, h_ref=h0, frame=L, tolerance=tolerance, grid_size=grid_size, max_sd=4 * h0,
        weights=counts, diagonal_weights=counts if weight_kind == "frequency" else counts * counts,
    )
    if binned is not None:
        factor = (n_e / float(counts.sum())) ** 2

        def binned_sums(M: np.ndarray, h) -> np.ndarray:
            return factor * binned.pair_sums(M, np.atleast_1d(np.asarray(h, dtype=np.float64)))

        return n_e, data.d, sigma, units, L, binned_sums, binned
    Y = _whiten(data.values, L)
    tied = tied_pairs(counts, weight_kind)
    rows = _WeightedRows(w, n_e, tied, resolve_backend(backend, dtype, work=0.5 * data.n * data.n), dtype,
                         _diagonal_weights(w, n_e, weight_kind))

    def pair_sums(_L: np.ndarray, h) -> np.ndarray:
        return rows.lscv_sums(Y, h)

    return n_e, data.d, sigma, units, L, pair_sums, None


@dataclass(frozen=True)
class _WeightedRows:
    """The weights of the rows kept (w normalised to sum 1), their n and tied pairs
    (:mod:`parzen.bandwidth.weight_kind`), and the backend that sums their pairs."""

    w: np.ndarray
    n: float
    tied: float
    backend: Any  # a KDEBackend
    dtype: Any
    diagonal: np.ndarray  # the rows' weights in binned LSCV's D(e), in w's units: w^2, or w / N for frequency counts

    def lscv_sums(self, Y: np.ndarray, h) -> np.ndarray:
        """(len(h), 2): n^2 [sum_{i<j} w_i w_j e^(-s/(4h^2)) + t] and the same with e^(-s/(2h^2)),
        s = |y_i - y_j|^2 (:meth:`parzen.backends.KDEBackend.pair_sum_hermite`, alpha = 0, on the
        rows scaled by 1/(sqrt(2) h) and 1/h): the weighted form of the sums of :func:`_criterion`."""
        h = np.atleast_1d(np.asarray(h, dtype=np.float64))
        zero = np.zeros((1, Y.shape[1]), dtype=np.int64)
        be = self.backend
        sums = [
            [be.pair_sum_hermite(Y / (scale * hk), zero, self.w, dtype=self.dtype)[0] for scale in (math.sqrt(2.0), 1.0)]
            for hk in h
        ]
        return self.n * self.n * (np.array(sums) + self.tied)


def _diagonal_weights(w: np.ndarray, n: float, weight_kind: str) -> np.ndarray:
    """The rows' weights in binned LSCV's diagonal D(e) for weights w normalised to sum 1: w_i^2
    (probability: only i = j leaves), or w_i / N = c_i / N^2 (frequency: the pairs between a row's
    copies stay, as the replicated rows' do) -- :func:`parzen.binned.lscv.bin_pair_weights`."""
    return w / n if weight_kind == "frequency" else w * w


def _weighted_matrix_rows(X, weights, weight_kind: str, method: str, what: str, backend, dtype):
    """(standardised data of the rows with positive weights, units, weighted covariance, rows) for
    weighted LSCV_H and LSCV_diag.

    Raises ValueError for data read in chunks or fewer than d + 2 rows with positive weights."""
    if as_chunked(X) is not None:
        raise ValueError(f"weights= was given for data read in chunks; weighted {what} needs the rows in memory")
    data = as_data(X)
    w = check_weights(weights, data.n)
    data = Data(data.values[w > 0], data.columns)
    counts = w[w > 0]
    if data.n < data.d + 2:
        raise ValueError(f"{what} needs at least d + 2 = {data.d + 2} rows with positive weights, got {data.n}")
    warn_if_tied(data, method=what)
    check_variance(data, name="the rows with positive weights of X")
    data, units = standardised(data)
    sigma = weighted_covariance(data.values, counts, weight_kind)
    n = sample_size(counts, weight_kind)
    w = counts / counts.sum()
    rows = _WeightedRows(w, n, tied_pairs(counts, weight_kind), resolve_backend(backend, dtype, work=0.5 * data.n * data.n),
                         dtype, _diagonal_weights(w, n, weight_kind))
    return data, units, sigma, rows


def _lscv_h_values(Y: np.ndarray, h: np.ndarray, sqrt_det: float, backend, dtype) -> np.ndarray:
    n, d = Y.shape
    sums = resolve_backend(backend, dtype, work=0.5 * n * n * h.size).pair_sum_sq(Y, "lscv", h, dtype=dtype)
    return _criterion(np.asarray(sums), n, d, h, sqrt_det)


@single_threaded_blas
def lscv_H_objective(
    X, H, *, backend: str = "auto", dtype=None, method: str = "exact", grid_size=None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> float:
    """The LSCV_H criterion g(H) for a bandwidth matrix H (Andrzejewski et al., paper 000 in
    docs/statistics.md, eq. 32).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample.
    H : float or array_like of shape (d, d)
        A symmetric positive-definite bandwidth matrix in the data's units (a number for d = 1
        is H = [[H]], the variance h^2).
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).
    method, grid_size, tolerance
        As in :func:`lscv_h_objective`; binned, the data are binned in the frame that spheres
        them, and the tolerance holds at H (its smallest standard deviation sets the grid).

    Returns
    -------
    float
        g(H).

    Raises
    ------
    ValueError
        If H is not d x d or not positive definite, X is invalid, ``method`` is unknown, or
        binned with d > 4 or a grid too large.
    """
    data = as_data(X)
    H = np.atleast_2d(np.asarray(H, dtype=np.float64))
    if H.shape != (data.d, data.d):
        raise ValueError(f"H must be a {data.d} x {data.d} matrix for {data.d}-column X, got shape {H.shape}")
    L = check_spd(H, what="H")
    if lscv_method(method, data.n, data.d) == "binned":
        _, frame, centred = covariance_factor(data)
        B = linalg.solve_triangular(frame, L, lower=True)  # H's factor in the sphered frame
        variances = np.linalg.eigvalsh(B @ B.T)
        binned = _binned_pair_weights(
            method, data.n, data.d, centred, h_ref=float(np.sqrt(variances[0])), frame=frame, tolerance=tolerance,
            grid_size=grid_size, max_sd=float(np.sqrt(variances[-1])),
        )
        if binned is not None:
            return float(_criterion(binned.pair_sums(L, np.ones(1)), data.n, data.d, np.ones(1), float(np.prod(np.diag(L))))[0])
    return float(_lscv_h_values(_whiten(data.values, L), np.ones(1), float(np.prod(np.diag(L))), backend, dtype)[0])


def reference_h0(n: float, d: int) -> float:
    """Normal-reference scalar bandwidth for sphered data: (4 / ((d + 2) n))^(1/(d+4)).

    Centres the LSCV_h search range [h0/4, 4 h0] (paper 000 in docs/statistics.md, eqs. 28-29;
    docs/departures.md, item 4).

    Parameters
    ----------
    n : float
        Rows of the data (Kish's effective size for weighted data).
    d : int
        Columns.

    Returns
    -------
    float
        h0, a multiplier of Sigma^1/2 like :func:`lscv_h_factor`'s answer.
    """
    return (4.0 / ((d + 2) * n)) ** (1.0 / (d + 4))


@single_threaded_blas
def lscv_h_factor(
    X,
    *,
    weights=None,
    weight_kind: str = "probability",
    grid: int = 150,
    refine: bool = True,
    backend: str = "auto",
    dtype=None,
    progress: bool = False,
    method: str = "auto",
    grid_size=None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> float:
    """LSCV_h's multiplier: argmin g(h) over h in [h0/4, 4 h0], the bandwidth H = h^2 Sigma.

    h is relative to Sigma, the sample covariance: the same number for the data in any units or
    after any non-singular linear map.  :func:`lscv_h` gives the same bandwidth in data units.

    A linear grid of ``grid`` candidates (all evaluated in one pass over the pairs,
    paper 000 in docs/statistics.md, section 7.1), extended to [h0/16, h0/4] when the best
    candidate is h0/4 (docs/departures.md, item 11), then, if ``refine``, the best grid cell is
    refined (docs/departures.md, item 10) by nested grids:
    :data:`ZOOM` candidates across the best point's neighbours per pass, until they are
    :data:`ZOOM_TOL` h0 apart, and the vertex of the parabola through the last best three
    (error O(spacing^2)).  Like a golden-section search it only shrinks a bracket, but each
    shrink by 7 costs one pass over the pairs for all its candidates together (2 passes),
    where Brent's method would need some 20 sequential passes of one h each.  A minimum on the
    outer edge raises :class:`LSCVWarning`.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least 2 rows, finite, covariance positive definite).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows (in memory): the criterion
        h^-d |Sigma|^-1/2 [2 sum_{i<j} w_i w_j T + sum w_i^2 R(K)] with w normalised, Sigma the
        weighted covariance and n (in h0) Kish's effective sample size (sum w)^2 / sum w^2; equal
        weights give the unweighted answer.  Binned (``method="binned"``, or "auto" from
        :data:`AUTO_BINNED_FROM` rows on), from the weighted linear-binning counts
        (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights as
        above, or counts of each row's copies: then n = sum w, Sigma divides by sum w - 1 and the
        copies' pairs (at distance 0) enter the sum, so that the answer equals LSCV_h's on the
        replicated data.
    grid : int, default 150
        Candidates of the first grid over [h0/4, 4 h0] (at least 3).
    refine : bool, default True
        Refine the grid's best cell; False returns the grid's best candidate (the papers).
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).
    progress : bool, default False
        Show a progress bar over the grid.
    method : {"auto", "exact", "binned"}, default "auto"
        Exact pair sums (O(n^2)), or sums over linear-binning counts of the data (d <= 4,
        :mod:`parzen.binned.lscv`): the counts and their autocorrelation are computed once and
        every candidate h is a sum over grid lags.  "auto" bins from :data:`AUTO_BINNED_FROM`
        rows on (on a coarser grid, with a warning, where the tolerance's grid is too large).
    grid_size : int or sequence of int, optional
        Binned: nodes per axis, overriding ``tolerance``.
    tolerance : float, default 1e-4
        Binned: the relative error allowed on g(h) for h >= h0
        (:func:`parzen.binned.lscv.grid_sizes`).

    Returns
    -------
    float
        The multiplier h of H = h^2 Sigma.

    Raises
    ------
    ValueError
        If ``grid`` < 3, X is invalid, ``method`` is unknown, or binned with d > 4 or a grid
        too large; or the weights are invalid or come with data served in chunks.
    """
    return _lscv_h_search(X, grid, refine, backend, dtype, progress, method, grid_size, tolerance, weights, weight_kind)[0]


@dataclass(frozen=True)
class _ChunkedSample:
    """Data served in chunks as the LSCV selectors start from them: their moments, the powers of
    two u their columns are divided by (:func:`parzen._validate.standardised`) and the divided
    data's covariance Sigma."""

    source: ChunkedData
    moments: Moments
    units: np.ndarray
    sigma: np.ndarray

    @property
    def n(self) -> int:
        return self.moments.rows

    @property
    def d(self) -> int:
        return self.source.d


def _chunked_sample(data: ChunkedData, method: str, progress: bool) -> _ChunkedSample:
    """Moments of data served in chunks (one pass), checked: unweighted, method not "exact", d <= 4."""
    lscv_method(method, 0, data.d, chunked=data.description)
    moments = checked_moments(data, progress=progress)
    if is_weighted(moments):
        raise ValueError(f"LSCV is defined for unweighted data and {data.description} has weights; serve the "
                         "data without a weights column, or use normal_scale, scott or silverman")
    units = units_of(moments)
    return _ChunkedSample(data, moments, units, moments.covariance / np.outer(units, units))


def _report_lscv(selector: str, binned: BinnedPairWeights | None, n: int, tolerance: float | None) -> None:
    """:func:`parzen.bandwidth.method.report` of an LSCV search: exact, or binned on ``binned``'s grid."""
    if binned is None:
        report(selector, "exact", n=n)
    else:
        report(selector, "binned", n=n, grid_size=binned.sizes, tolerance=tolerance)


def _lscv_h_search(
    X, grid: int, refine: bool, backend, dtype, progress: bool, method: str = "auto", grid_size=None,
    tolerance: float = DEFAULT_TOLERANCE, weights=None, weight_kind: str = "probability",
) -> tuple[float, np.ndarray, np.ndarray]:
    """LSCV_h's multiplier h, with the standardised data's Sigma and the units that scale it back
    (:func:`parzen._validate.standardised`): what :func:`lscv_h_factor` and :func:`lscv_h` share."""
    if grid < 3:
        raise ValueError(f"grid must have at least 3 points, got {grid}")
    weight_kind = check_weight_kind(weight_kind)
    chunked = as_chunked(X)
    if weights is not None:
        if chunked is not None:
            raise ValueError(f"weights= was given for {chunked.description}, which is read in chunks; weighted LSCV_h "
                             "needs the rows in memory (or use normal_scale, scott or silverman with a weights column)")
        n, d, sigma, units, L, weighted_sums, binned = _weighted_lscv_sample(
            X, weights, method, backend, dtype, weight_kind, tolerance=tolerance, grid_size=grid_size)
        h0 = reference_h0(n, d)
    elif chunked is not None:  # binned from the moments' pass and a binning pass (and one for the range, d > 1)
        sample = _chunked_sample(chunked, method, progress)
        n, d, units, sigma = sample.n, sample.d, sample.units, sample.sigma
        L = check_spd(sigma, what=f"the covariance matrix of {chunked.description}", columns=chunked.columns)
        h0 = reference_h0(n, d)
        binned = chunked_pair_weights(
            chunked, sample.moments, L, L, h_ref=h0, tolerance=tolerance, grid_size=grid_size,
            shrink_to_fit=method == "auto", max_sd=4 * h0, progress=progress,
        )
    else:
        data = as_data(X)
        warn_if_repeated_rows(data, method="LSCV_h")
        data, units = standardised(data)  # h is relative to Sigma: the same for the data in any units
        sigma, L, centred = covariance_factor(data)
        n, d = data.n, data.d
        h0 = reference_h0(n, d)
        binned = _binned_pair_weights(  # binned in the frame that spheres the data
            method, n, d, centred, h_ref=h0, frame=L, tolerance=tolerance, grid_size=grid_size, max_sd=4 * h0
        )
    sqrt_det = float(np.prod(np.diag(L)))
    _report_lscv("lscv_h", binned, round(n), tolerance if grid_size is None else None)
    if weights is not None:
        pair_sums = weighted_sums
    elif binned is not None:
        pair_sums = binned.pair_sums
    else:
        # the grid and the refinement share the rows y = L^-1 (x - mean), whitened once where the
        # backend computes (on the GPU: the centred data go up once and are whitened there)
        be = resolve_backend(backend, dtype, work=0.5 * n * n * grid)
        pair_sums = be.prepare_whitened_pair_sum_sq(centred, "lscv", dtype=dtype)

    def g(h: np.ndarray) -> np.ndarray:
        return _criterion(np.asarray(pair_sums(L, h)), n, d, h, sqrt_det)

    candidates = np.linspace(h0 / 4, 4 * h0, grid)
    values = _grid_values(g, candidates, progress, f"LSCV_h: {grid} candidates, n={n}, d={d}")
    best = int(np.argmin(values))
    if best == 0:  # the minimum may lie below h0/4: search [h0/16, h0/4] too
        lower = np.linspace(h0 / 16, h0 / 4, grid)[:-1]
        candidates = np.concatenate([lower, candidates])
        values = np.concatenate([_grid_values(g, lower, progress, "LSCV_h: extending below h0/4"), values])
        best = int(np.argmin(values))
    if best in (0, candidates.size - 1):
        warnings.warn(
            f"the LSCV_h minimum lies at the edge of the search range "
            f"[{candidates[0]:.4g}, {candidates[-1]:.4g}] (h0 = {h0:.4g}); the criterion may have "
            "no interior minimum (tied or strongly clustered data)",
            LSCVWarning,
            stacklevel=3,
        )
        return float(candidates[best]), sigma, units
    if not refine:
        return float(candidates[best]), sigma, units
    return _refine(g, candidates[best - 1 : best + 2], ZOOM_TOL * h0), sigma, units


@single_threaded_blas
def lscv_h(
    X, *, weights=None, weight_kind: str = "probability", grid: int = 150, refine: bool = True, backend: str = "auto", dtype=None, progress: bool = False,
    method: str = "auto", grid_size=None, tolerance: float = DEFAULT_TOLERANCE,
) -> float | np.ndarray:
    """LSCV_h bandwidth in data units: the minimiser of :func:`lscv_h_factor`, h, as h * sd (1-D)
    or the matrix h^2 Sigma (d > 1).

    The search is over H = h^2 Sigma, Sigma the sample covariance (Andrzejewski et al., paper 000
    in docs/statistics.md, eqs. 24-29 and 43); see :func:`lscv_h_factor` for how the minimum is
    found and for the parameters.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least 2 rows, finite, covariance positive definite).
    weights, weight_kind, grid, refine, backend, dtype, progress, method, grid_size, tolerance
        As in :func:`lscv_h_factor`.

    Returns
    -------
    float or ndarray of shape (d, d)
        h * sd for 1-D data (the kernel's standard deviation), h^2 Sigma otherwise.

    Raises
    ------
    ValueError
        As :func:`lscv_h_factor`.
    """
    h, sigma, units = _lscv_h_search(
        X, grid, refine, backend, dtype, progress, method, grid_size, tolerance, weights, weight_kind
    )
    return from_factor(h, sigma * np.outer(units, units))  # Sigma without overflow at any scale, scaled back exactly


#: Candidates per refinement pass of LSCV_h (odd: the previous best is among them).
ZOOM = 15
#: The refinement stops when its candidates are this close, relative to h0 (two passes after a
#: grid of 150).  The final parabola is then within about spacing^2 |g'''/g''| ~ 1e-6 h0 of the
#: minimiser, finer than float32 sums resolve it: their relative noise of ~1e-7 in g moves the
#: argmin of a parabola by about sqrt(1e-7) ~ 3e-4 of its width.
ZOOM_TOL = 1e-3


def _refine(g, bracket: np.ndarray, tol: float) -> float:
    """argmin g inside ``bracket`` = (left, best, right): nested grids, then a parabola.

    Each pass evaluates :data:`ZOOM` points from left to right in one call of g and keeps the
    best one's neighbours as the next bracket.  The parabola's vertex through the final best
    and its neighbours (equal spacing delta) is best - delta (g+ - g-) / (2 (g+ - 2 g0 + g-)).
    """
    left, right = bracket[0], bracket[2]
    while True:
        points = np.linspace(left, right, ZOOM)
        values = g(points)
        best = int(np.clip(np.argmin(values), 1, ZOOM - 2))
        left, right = points[best - 1], points[best + 1]
        spacing = points[1] - points[0]
        if spacing <= tol:
            break
    below, centre, above = values[best - 1 : best + 2]
    curvature = above - 2.0 * centre + below
    if not curvature > 0:  # flat or concave at float rounding: the best point is the answer
        return float(points[best])
    step = -0.5 * spacing * (above - below) / curvature
    return float(points[best] + np.clip(step, -spacing, spacing))


def _grid_values(g, candidates: np.ndarray, progress: bool, label: str) -> np.ndarray:
    """g at every candidate: one pass over the pairs, or passes of 25 with a progress bar."""
    if not progress:
        return g(candidates)
    values = np.empty(candidates.size)
    with progress_bar(True, label, candidates.size) as bar:
        for idx in np.array_split(np.arange(candidates.size), max(1, candidates.size // 25)):
            values[idx] = g(candidates[idx])
            bar.advance(idx.size)
    return values


# --- LSCV over matrices --------------------------------------------------------------


def _unpack_lower(theta: np.ndarray, d: int, diagonal_only: bool) -> np.ndarray:
    """Log-Cholesky parametrisation: lower-triangular M with exp(theta) on its diagonal."""
    M = np.zeros((d, d))
    M[np.diag_indices(d)] = np.exp(theta[:d])
    if not diagonal_only:
        M[np.tril_indices(d, -1)] = theta[d:]
    return M


def _pack_lower(M: np.ndarray, diagonal_only: bool) -> np.ndarray:
    diag = np.log(np.diag(M))
    return diag if diagonal_only else np.concatenate([diag, M[np.tril_indices(M.shape[0], -1)]])


def _initial_simplex(theta: np.ndarray, d: int, step: float) -> np.ndarray:
    """theta and theta + step along each axis, off-diagonal steps scaled like M's diagonal.

    SciPy's default simplex moves a zero entry by only 0.00025, which stalls the search
    along the off-diagonal entries of a diagonal start.
    """
    steps = np.full(theta.size, step)
    steps[d:] *= float(np.exp(theta[:d].mean()))
    return np.vstack([theta, theta + np.diag(steps)])


#: Nelder-Mead's step sizes: it can stall, so it restarts from its answer with smaller simplices.
RESTART_STEPS = (0.25, 0.05, 0.01)
#: SciPy's iteration limit per restart, per parameter of the search.
ITERATIONS_PER_PARAMETER = 400
#: Evaluations of g(H) Nelder-Mead typically needs for p parameters, c p^k as (c, k): full H
#: (p = d(d+1)/2) 10 p^2.4, fitted to lscv_H on 100-200 normal rows for d = 2..8 (165, 590,
#: 1700, 6500, 5500-40 000, 68 000 evaluations); diagonal H (p = d) 30 p^1.65, fitted to
#: lscv_diag on 100 rows for d = 2..24 (98, 292, 1032, 3353, 5922) and d = 50 (~20 000).
EVALUATION_MODEL = {False: (10.0, 2.4), True: (30.0, 1.65)}
#: A search predicted to take longer than this (seconds) raises :class:`CostWarning` first.
COST_WARNING_SECONDS = 60.0
#: A diagonal entry of M (H's Cholesky factor in units of the data's) below this means H is
#: falling towards a singular matrix: the data are tied or clustered far below their spread.
SINGULAR_SCALE = 1e-8


class _Singular(Exception):
    """g(H) was asked for at an H that is singular to working precision."""


def _minimise_matrix(
    data: Data | _ChunkedSample, P: np.ndarray, start: np.ndarray, *, diagonal_only: bool, backend, dtype, progress, label,
    max_evaluations: int | None = None, method: str, pair_sum_method: str = "auto", grid_size=None,
    tolerance: float = DEFAULT_TOLERANCE, weighted: _WeightedRows | None = None,
) -> np.ndarray:
    """Minimise g(H) over H = P M M^T P^T, M lower triangular (diagonal if asked).

    ``weighted``: the rows' weights (exact sums, :meth:`_WeightedRows.lscv_sums` on the rows
    whitened by M on the host, and n its sample size; binned, the counts of linear binning with
    the weights and D(e) with :attr:`_WeightedRows.diagonal`, the sums times n^2).

    P pre-whitens the data (Z = P^-1 x), so the search is scale-free and starts near
    M = c I; Nelder-Mead on the log-Cholesky entries of M keeps H positive definite.
    g(H) = |P|^-1 g_Z(M M^T), so the constant |P| is left out of the search.  Before the search
    its cost is predicted (:func:`_warn_if_costly`); a search that drives H towards a singular
    matrix (tied data: g -> -inf) raises ValueError (:func:`_singular_error`).
    """
    n, d = data.n, data.d
    criterion_n: float = n if weighted is None else weighted.n  # the n of g(H)
    binned: BinnedPairWeights | None = None
    if weighted is not None:
        assert isinstance(data, Data)  # weighted rows are in memory
        Z = _whiten(data.values, P)
        binned = _binned_pair_weights(
            pair_sum_method, n, d, Z, h_ref=reference_h0(weighted.n, d), tolerance=tolerance, grid_size=grid_size,
            max_sd=2 * reference_h0(weighted.n, d), weights=weighted.w, diagonal_weights=weighted.diagonal,
        )
    elif isinstance(data, _ChunkedSample):  # the tolerance holds at kernel sd >= h0, the normal-scale start's
        binned = chunked_pair_weights(
            data.source, data.moments, P, np.eye(d), h_ref=reference_h0(n, d), tolerance=tolerance,
            grid_size=grid_size, shrink_to_fit=pair_sum_method == "auto", max_sd=2 * reference_h0(n, d),
            progress=progress,
        )
    else:
        Z = _whiten(data.values, P)
        binned = _binned_pair_weights(
            pair_sum_method, n, d, Z, h_ref=reference_h0(n, d), tolerance=tolerance, grid_size=grid_size,
            max_sd=2 * reference_h0(n, d),
        )
    _report_lscv("lscv_diag" if diagonal_only else "lscv_H", binned, round(criterion_n), tolerance if grid_size is None else None)
    computes_in = np.dtype(np.float64)
    if weighted is not None and binned is not None:
        weighted_binned, scale = binned, weighted.n * weighted.n

        def pair_sums(M: np.ndarray, h) -> np.ndarray:
            return scale * weighted_binned.pair_sums(M, h)
    elif weighted is not None:
        rows = weighted

        def pair_sums(M: np.ndarray, h) -> np.ndarray:
            return rows.lscv_sums(linalg.solve_triangular(M, Z.T, lower=True).T, h)

        computes_in = rows.backend.dtypes[0] if rows.dtype is None else np.dtype(rows.dtype)
    elif binned is not None:
        pair_sums = binned.pair_sums
    else:
        be = resolve_backend(backend, dtype, work=0.5 * n * n)
        pair_sums = be.prepare_whitened_pair_sum_sq(Z, "lscv", dtype=dtype)
        computes_in = be.dtypes[0] if dtype is None else np.dtype(dtype)  # the gpu's default is float32
    P_inv_start = linalg.solve_triangular(P, start, lower=True)
    Ms = linalg.cholesky(linalg.solve_triangular(P, P_inv_start.T, lower=True), lower=True)
    theta0 = _pack_lower(Ms, diagonal_only)

    def g_sphered(theta: np.ndarray) -> float:
        M = _unpack_lower(theta, d, diagonal_only)
        if not np.min(np.diag(M)) >= SINGULAR_SCALE:
            raise _Singular
        sums = pair_sums(M, np.ones(1))
        return float(_criterion(np.asarray(sums), criterion_n, d, np.ones(1), float(np.prod(np.diag(M))))[0])

    # float32 sums carry ~1e-7 relative noise: a tighter tolerance only makes Nelder-Mead chase it
    fatol = 1e-9 if computes_in == np.float64 else 1e-6
    try:
        theta = _nelder_mead(
            g_sphered, theta0, d, fatol, max_evaluations, progress, label,
            check_cost=lambda seconds: _warn_if_costly(label, d, diagonal_only, n, seconds, max_evaluations),
        )
    except _Singular:
        raise _singular_error(data, method) from None
    M = _unpack_lower(theta, d, diagonal_only)
    PM = P @ M
    H = PM @ PM.T
    return 0.5 * (H + H.T)


def _nelder_mead(g, theta0: np.ndarray, d: int, fatol: float, max_evaluations, progress, label: str, check_cost):
    """argmin g: Nelder-Mead restarted with the steps of :data:`RESTART_STEPS` while it improves,
    with at most ``max_evaluations`` evaluations of g in all (None: SciPy's iteration limit of
    :data:`ITERATIONS_PER_PARAMETER` per parameter and restart).  ``check_cost(seconds)`` gets
    the time of one evaluation before the search starts.  Warns (:class:`LSCVWarning`) when it
    stops without converging; the answer is then the best point found."""
    npar = theta0.size
    scale = abs(g(theta0))
    evaluations = 0

    def objective(theta: np.ndarray) -> float:
        nonlocal evaluations
        evaluations += 1
        return g(theta) / scale

    started = time.perf_counter()
    theta, fbest = theta0, objective(theta0)
    check_cost(time.perf_counter() - started)
    with progress_bar(progress, label) as bar:
        for step in RESTART_STEPS:
            budget = None if max_evaluations is None else max_evaluations - evaluations
            if budget is not None and budget <= 0:
                break
            result = optimize.minimize(
                objective,
                theta,
                method="Nelder-Mead",
                callback=_progress_callback(bar, scale, lambda: evaluations),
                options={
                    "initial_simplex": _initial_simplex(theta, d, step),
                    "xatol": 1e-4,
                    "fatol": fatol,
                    "maxiter": ITERATIONS_PER_PARAMETER * npar,
                    "maxfev": budget,
                    "adaptive": npar > 4,
                },
            )
            improved = fbest - result.fun
            if result.fun < fbest:
                theta, fbest = result.x, result.fun
            if improved <= fatol and step < RESTART_STEPS[0]:
                break
    if max_evaluations is not None and evaluations >= max_evaluations:
        warnings.warn(
            f"{label}: stopped after {evaluations} evaluations of g(H) (max_evaluations={max_evaluations}) "
            "without converging; H is the best found so far",
            LSCVWarning,
            stacklevel=5,
        )
    elif not result.success:
        warnings.warn(f"{label}: Nelder-Mead stopped early ({result.message})", LSCVWarning, stacklevel=5)
    return theta


def predicted_evaluations(d: int, *, diagonal: bool = False) -> int:
    """Evaluations of g(H) that Nelder-Mead typically needs for a d x d bandwidth matrix, full
    (lscv_H, d(d+1)/2 parameters) or ``diagonal`` (lscv_diag, d): :data:`EVALUATION_MODEL`.
    Full: 165 at d = 2, 68 000 at d = 8, 2.8e8 at d = 50; diagonal: 20 000 at d = 50.

    Parameters
    ----------
    d : int
        Columns of the data.
    diagonal : bool, default False
        For :func:`lscv_diag` (d parameters) rather than :func:`lscv_H` (d(d+1)/2).

    Returns
    -------
    int
        The typical number of evaluations of g(H).
    """
    factor, power = EVALUATION_MODEL[diagonal]
    return int(factor * _parameters(d, diagonal) ** power)


def _parameters(d: int, diagonal: bool) -> int:
    return d if diagonal else d * (d + 1) // 2


def _warn_if_costly(label: str, d: int, diagonal: bool, n: int, seconds: float, max_evaluations) -> None:
    """:class:`CostWarning` when the predicted evaluations times the measured time of one exceed
    :data:`COST_WARNING_SECONDS`: says what the search costs before it starts."""
    npar = _parameters(d, diagonal)
    typical = predicted_evaluations(d, diagonal=diagonal)
    limit = ITERATIONS_PER_PARAMETER * npar * len(RESTART_STEPS) if max_evaluations is None else max_evaluations
    expected = min(typical, limit)
    if expected * seconds <= COST_WARNING_SECONDS:
        return
    cap = f"max_evaluations stops it at {limit}" if max_evaluations is not None else (
        f"SciPy's iteration limit stops it after at least {limit:.3g}"
    )
    others = "lscv_h or normal_scale" if diagonal else f"lscv_diag ({d} parameters), lscv_h or normal_scale"
    warnings.warn(
        f"{label}: a search over {npar} parameters typically takes about {typical:.3g} evaluations of g(H) "
        f"({cap}); one evaluation ({n * (n - 1) // 2} pairs x {d} coordinates) took {1e3 * seconds:.3g} ms "
        f"here, so this may run {_duration(expected * seconds)}.  To spend less: cap it with max_evaluations=, "
        f"use {others}, or fewer columns",
        CostWarning,
        stacklevel=5,
    )


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"about {seconds / size:.3g} {unit}"
    return f"about {seconds:.3g} s"


def _singular_error(data: Data | _ChunkedSample, method: str) -> ValueError:
    """The error for a search that drove H towards a singular matrix (g -> -inf)."""
    tied = tied_columns(data) if isinstance(data, Data) else []  # rows served in chunks are not kept
    if tied:
        cause = (
            f"the data repeat values (column(s) {', '.join(map(repr, tied))}), and as H shrinks along them "
            "the pairs at distance 0 make g(H) fall without bound (docs/departures.md, item 8)"
        )
    else:
        cause = f"the data cluster at scales below {SINGULAR_SCALE:g} of their spread"
    return ValueError(
        f"{method}: the criterion has no minimum at a positive-definite H: {cause}.  Break the ties with "
        "jitter below the data's rounding (e.g. X + rng.uniform(-r/2, r/2, X.shape) for values rounded to r), "
        "or use lscv_h, plugin (1-D) or normal_scale"
    )


def _progress_callback(bar, scale: float, evaluations):
    """A Nelder-Mead callback advancing ``bar`` by one iteration, showing the best g(H) so far
    and the evaluations of g made (``evaluations()``)."""

    def callback(intermediate_result):  # SciPy passes the iterate's value under this name
        bar.advance(1, status=f"g = {scale * intermediate_result.fun:.6g}, {evaluations()} evaluations")

    return callback


def _matrix_start(data: Data | _ChunkedSample, start, sigma: np.ndarray, units: np.ndarray, n: float | None = None) -> np.ndarray:
    """The search's first H, in the units of the standardised data (``start`` is in the data's);
    ``n``: the sample size of the normal-scale start (default: the rows)."""
    if start is None:
        n = data.n if n is None else n
        factor = (4.0 / (data.d + 2)) ** (2.0 / (data.d + 4)) * n ** (-2.0 / (data.d + 4))
        return factor * sigma  # normal_scale(X), without validating X twice
    start = np.atleast_2d(np.asarray(start, dtype=np.float64))
    if start.shape != (data.d, data.d):
        raise ValueError(f"start must be a {data.d} x {data.d} matrix, got shape {start.shape}")
    check_spd(start, what="start")
    return start / np.outer(units, units)


@single_threaded_blas
def lscv_H(
    X, *, start=None, backend: str = "auto", dtype=None, progress: bool = False, max_evaluations: int | None = None,
    method: str = "auto", grid_size=None, tolerance: float = DEFAULT_TOLERANCE, weights=None,
    weight_kind: str = "probability",
) -> float | np.ndarray:
    """LSCV_H bandwidth matrix: argmin over positive-definite H of g(H) (Andrzejewski et al.,
    paper 000 in docs/statistics.md, eq. 32).

    Nelder-Mead over the log-Cholesky factor of Sigma^-1/2 H Sigma^-T/2 (d(d+1)/2 parameters,
    docs/departures.md, item 12), started from ``start`` or the normal-scale matrix (eq. 37
    corrected, docs/departures.md, item 3).  Needs d + 2
    rows.  Its cost grows fast with d: about 10 p^2.4 evaluations of g for p parameters, each
    over the n(n-1)/2 pairs (:func:`predicted_evaluations`); a search predicted to take over a
    minute warns first (:class:`CostWarning`), ``max_evaluations`` caps it (an
    :class:`LSCVWarning` says when that stopped it), ``progress`` shows the iterations.  Tied
    data, where g(H) falls without bound as H turns singular, raise ValueError.  Computed on
    the data divided by powers of two near each column's spread (exact; no overflow at any scale).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least d + 2 rows, finite, covariance positive definite).
    start : array_like of shape (d, d), optional
        The first H of the search, in the data's units (default: :func:`normal_scale`'s).
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).
    progress : bool, default False
        Show the optimiser's iterations.
    max_evaluations : int, optional
        At most this many evaluations of g(H) (at least 2).
    method : {"auto", "exact", "binned"}, default "auto"
        Exact pair sums (O(n^2) per evaluation), or sums over linear-binning counts (d <= 4,
        :mod:`parzen.binned.lscv`): the data, sphered, are binned once and each evaluation of
        g(H) is a sum over grid lags.  "auto" bins from :data:`AUTO_BINNED_FROM` rows on (on a
        coarser grid, with a warning, where the tolerance's grid is too large).
    grid_size : int or sequence of int, optional
        Binned: nodes per axis, overriding ``tolerance``.
    tolerance : float, default 1e-4
        Binned: the relative error allowed on g(H) at kernel standard deviations (in the
        sphered frame) of at least the normal reference h0 (:func:`reference_h0`,
        :func:`parzen.binned.lscv.grid_sizes`).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows (in memory): g(H) =
        |H|^-1/2 [2 sum_{i<j} w_i w_j T + sum w_i^2 R(K)] with w normalised (the form of
        :func:`lscv_h_factor`'s), Sigma (of the start and the search's frame) the weighted
        covariance and n (of the normal-scale start) the weights' sample size; binned from the
        weighted linear-binning counts (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`).  Frequency weights above 1 are
        repeated rows, where g(H) has no minimum (ValueError), as on the replicated data.

    Returns
    -------
    float or ndarray of shape (d, d)
        H in data units; for 1-D data the float h = sqrt(H) (the convention of
        :mod:`parzen.bandwidth.convention`).

    Raises
    ------
    ValueError
        If X has fewer than d + 2 rows, ``start``, ``max_evaluations`` or ``method`` is
        invalid, the search drives H towards a singular matrix (tied data), or binned with
        d > 4 or a grid too large.
    """
    weight_kind = check_weight_kind(weight_kind)
    if weights is not None:
        _check_budget(max_evaluations)
        rows_data, units, sigma, rows = _weighted_matrix_rows(X, weights, weight_kind, method, "LSCV_H", backend, dtype)
        P = check_spd(sigma, what="the weighted covariance matrix of X", columns=rows_data.columns)
        H = _minimise_matrix(
            rows_data, P, _matrix_start(rows_data, start, sigma, units, rows.n), diagonal_only=False, backend=backend,
            dtype=dtype, progress=progress, label=f"LSCV_H n={rows_data.n} d={rows_data.d} (weighted)",
            max_evaluations=max_evaluations, method="LSCV_H", weighted=rows,
            pair_sum_method=method, grid_size=grid_size, tolerance=tolerance,
        )
        return from_matrix(H * np.outer(units, units))
    chunked = as_chunked(X)
    data: Data | _ChunkedSample = as_data(X) if chunked is None else _chunked_sample(chunked, method, progress)
    if data.n < data.d + 2:
        raise ValueError(f"LSCV_H needs at least d + 2 = {data.d + 2} rows for {data.d}-column X, got {data.n}")
    _check_budget(max_evaluations)
    if isinstance(data, _ChunkedSample):
        units, sigma = data.units, data.sigma
        P = check_spd(sigma, what=f"the covariance matrix of {data.source.description}", columns=data.source.columns)
    else:
        warn_if_tied(data, method="LSCV_H")
        data, units = standardised(data)
        sigma, P, _ = covariance_factor(data)
    H = _minimise_matrix(
        data, P, _matrix_start(data, start, sigma, units), diagonal_only=False, backend=backend, dtype=dtype,
        progress=progress, label=f"LSCV_H n={data.n} d={data.d}", max_evaluations=max_evaluations, method="LSCV_H",
        pair_sum_method=method, grid_size=grid_size, tolerance=tolerance,
    )
    return from_matrix(H * np.outer(units, units))


@single_threaded_blas
def lscv_diag(
    X, *, start=None, backend: str = "auto", dtype=None, progress: bool = False, max_evaluations: int | None = None,
    method: str = "auto", grid_size=None, tolerance: float = DEFAULT_TOLERANCE, weights=None,
    weight_kind: str = "probability",
) -> float | np.ndarray:
    """LSCV over diagonal bandwidth matrices H = diag(h_1^2, ..., h_d^2) (``ks::Hlscv.diag``).

    Same criterion as :func:`lscv_H` (eq. 32); Nelder-Mead over log h_k (d parameters), started
    from the diagonal of the normal-scale matrix or ``start``; ``max_evaluations``, the cost
    warning and tied data as in :func:`lscv_H`.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least 2 rows, finite, covariance positive definite).
    start, backend, dtype, progress, max_evaluations, method, grid_size, tolerance, weights, weight_kind
        As in :func:`lscv_H` (only the diagonal of ``start`` is used; binned, the data are
        binned divided by their standard deviations).

    Returns
    -------
    float or ndarray of shape (d, d)
        The diagonal H in data units; for 1-D data the float h = sqrt(H).

    Raises
    ------
    ValueError
        As :func:`lscv_H`.
    """
    weight_kind = check_weight_kind(weight_kind)
    if weights is not None:
        _check_budget(max_evaluations)
        rows_data, units, sigma, rows = _weighted_matrix_rows(X, weights, weight_kind, method, "LSCV (diagonal)", backend, dtype)
        P = np.diag(np.sqrt(np.diag(sigma)))
        H = _minimise_matrix(
            rows_data, P, np.diag(np.diag(_matrix_start(rows_data, start, sigma, units, rows.n))), diagonal_only=True,
            backend=backend, dtype=dtype, progress=progress, label=f"LSCV diag n={rows_data.n} d={rows_data.d} (weighted)",
            max_evaluations=max_evaluations, method="LSCV (diagonal)", weighted=rows,
            pair_sum_method=method, grid_size=grid_size, tolerance=tolerance,
        )
        return from_matrix(H * np.outer(units, units))
    chunked = as_chunked(X)
    data: Data | _ChunkedSample = as_data(X) if chunked is None else _chunked_sample(chunked, method, progress)
    _check_budget(max_evaluations)
    if isinstance(data, _ChunkedSample):
        units, sigma = data.units, data.sigma
    else:
        warn_if_tied(data, method="LSCV (diagonal)")
        data, units = standardised(data)
        sigma = covariance(data)
    P = np.diag(np.sqrt(np.diag(sigma)))
    H0 = np.diag(np.diag(_matrix_start(data, start, sigma, units)))
    H = _minimise_matrix(
        data, P, H0, diagonal_only=True, backend=backend, dtype=dtype, progress=progress,
        label=f"LSCV diag n={data.n} d={data.d}", max_evaluations=max_evaluations, method="LSCV (diagonal)",
        pair_sum_method=method, grid_size=grid_size, tolerance=tolerance,
    )
    return from_matrix(H * np.outer(units, units))


def _check_budget(max_evaluations) -> None:
    if max_evaluations is not None and (
        isinstance(max_evaluations, bool) or int(max_evaluations) != max_evaluations or max_evaluations < 2
    ):
        raise ValueError(f"max_evaluations must be None or an integer of at least 2, got {max_evaluations!r}")
