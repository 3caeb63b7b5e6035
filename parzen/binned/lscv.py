"""Binned LSCV pair sums: the two Gaussian sums of the LSCV criteria from linear-binning counts.

The exact criteria (:mod:`parzen.bandwidth.lscv`; docs/statistics.md, "LSCV") need, for whitened
rows y_i = B^-1 z_i and scales h,

    P_c(h) = sum_{i<j} exp(-|y_i - y_j|^2 / (c h^2)),  c = 4 and c = 2,

the unnormalised Gaussians of covariance 2 h^2 B B^T and h^2 B B^T at z_i - z_j.  Binned as in
Wand (1994, "Fast computation of multivariate kernel estimators", J. Comput. Graph. Statist.
3(4), 433-445) and Gramacki & Gramacki (2017, "FFT-based fast bandwidth selector for
multivariate kernel density estimation", Comput. Statist. Data Anal. 106, 27-45; arXiv
1511.07482), each point is replaced by its linear-binning weights w_ik on the 2^d nodes g_k of
its cell, so a sum over all ordered pairs (i, j), i = j included, becomes

    sum_{i,j} sum_{k,l} w_ik w_jl E(g_k - g_l) = sum_e a(e) E(e * delta),

with e the integer lag between two nodes, delta the grid spacing and a(e) = sum_k c_k c_{k+e} the
autocorrelation of the counts c_k = sum_i w_ik.  a is computed once per data set by FFT
(zero-padded to at least 2 m_a - 1 per axis, so there is no wrap-around) and reused for every
B and h an optimiser tries: each evaluation is a sum over the lags, no FFT.

The diagonal, handled exactly.  The i = j terms of the binned sum are not E(0) = 1 each: point i
contributes sum_{k,l} w_ik w_il E(g_k - g_l), where k and l are corners of its own cell, so
e = k - l lies in {-1, 0, 1}^d.  With f_ia the fractional position of point i in its cell along
axis a, the weights are products over axes, and

    binned diagonal = sum_{e in {-1,0,1}^d} D(e) E(e * delta),
    D(e) = sum_i prod_a m_{e_a}(f_ia),  m_0(f) = f^2 + (1 - f)^2,  m_{+1}(f) = m_{-1}(f) = f (1 - f).

D depends on the data only (3^d numbers, additive over chunks like the counts), so subtracting it
from a at the central lags removes the binned diagonal for every B and h:

    P_c(h) ~ (1/2) sum_e [a(e) - D(e)] E_c(e * delta).

The exact diagonal, n E(0) = n, is what the criteria already add (their n^-1 R(K) term), so the
binned P_c plugs into the exact criterion unchanged (same n^-2 normalisation,
docs/departures.md, item 6).  Linear binning keeps every point's weight and first moments, so
what is left is the O((delta / h)^2) error of the off-diagonal pairs.

Grid size (:func:`grid_sizes`): the relative error of the criterion at a kernel standard
deviation h (in the binning frame) was measured at up to 0.025 d (delta / h)^2 on normal data
(d = 1, 2, 3, n = 200 to 8000, h in [h0, 2 h0], h0 the normal reference) and up to 0.09 d
(delta / h)^2 on the bundled faithful and quakes data (h in [h0/2, 2 h0]; 0.105 d on quakes'
lat, long and depth); so the rule spaces the nodes delta = h_ref sqrt(tolerance / (c d)),
c = :data:`ERROR_PER_AXIS` = 0.12, with h_ref the smallest standard deviation at which
``tolerance`` must hold.  Below h_ref the error grows as (h_ref / h)^2.

The rule is pessimistic for large n: the error is about K(f) delta^2 with K set by the density's
curvature, not by h (1-D: 0.010 (delta/h)^2 at n = 200, 0.0025 at n = 8000; 2-D mixture,
n = 10^6: 0.0037 d).  So the data estimate their own error first
(:meth:`BinnedPairWeights.error_per_spacing_squared`): to leading order linear binning replaces
each pair's kernel value E by its multilinear interpolant at both ends, adding
(delta^2 / 2) sum_a [t_ia (1 - t_ia) + t_ja (1 - t_ja)] d^2 E / du_a^2 (t the fractional cell
positions; Wand 1994, section 3; Hall & Wand 1996, "On the accuracy of binned kernel density
estimators", J. Multivariate Anal. 56, 165-184).  Bounding t (1 - t) by 1/4 and summing the
two Gaussians' terms without their cancellation gives Lambda with relative error <= Lambda
delta^2; Lambda is computed on a pilot grid of spacing :data:`PILOT_SPACING` h_ref from the same
lag sums (the second derivatives of the Gaussians factor per axis), at h_ref and at the
largest expected h.  Measured on faithful, quakes (1-D, 2-D, 3-D), normal data (1-D to 3-D) and
a bimodal mixture, at h0/2, h0 and 2 h0 and grids of 16 to 128 nodes per axis (delta / h from
0.035 to 4), Lambda delta^2 was 1.7 to 100 times the true error (typically 2 to 5).  The
grid takes the spacing sqrt(tolerance / Lambda), never finer than the rule's and never coarser
than the pilot's (:data:`MAX_PILOT_LAGS` bounds the pilot: beyond it, 3-D and 4-D at large n,
the rule alone decides).  At n = 10^6 on the 2-D mixture that is 1143 x 1939 nodes instead of
the rule's 3204 x 5435, with a criterion error of 2.5e-5 (Richardson extrapolation over grids).

``grid_size`` overrides both.  The lag array has prod_a (2 m_a - 1) entries, capped at
:data:`MAX_LAGS`: in 3 and 4 dimensions tolerances of 1e-3 and below need more; :class:`GridTooLarge`
says so, or, with ``shrink_to_fit``, the largest grid within the cap is taken with a
:class:`CoarseGridWarning` that names the tolerance it reaches.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy import fft, linalg

from .grid import MAX_DIMENSIONS, GridSpec, linear_bin

#: The default tolerance: relative error of the criterion (and of the bandwidth) from binning.
DEFAULT_TOLERANCE = 1e-4
#: The binning error of the LSCV criterion, relative, is at most about ERROR_PER_AXIS * d *
#: (delta / h)^2 (module docstring: up to 0.025 per axis on normal data, 0.09-0.105 on faithful and quakes).
ERROR_PER_AXIS = 0.12
#: The largest lag array, prod_a (2 m_a - 1), a binned criterion may hold (its FFT is of this size).
MAX_LAGS = 2**25
#: Lags beyond this many standard deviations of the wider Gaussian are left out: exp(-tau^2/2)
#: = 1e-9, far below any tolerance.
TRUNCATION_SD = math.sqrt(2.0 * math.log(1e9))
#: Fewest nodes per axis of a grid chosen from the tolerance.
MIN_NODES = 16
#: The pilot grid that estimates the binning error (:func:`bin_pair_weights`) is spaced this
#: many h_ref: its estimate Lambda delta^2 stayed 1.7 to 100 times the measured error up to
#: delta / h = 2 (module docstring, "Grid size").
PILOT_SPACING = 0.5
#: The largest pilot lag array: beyond it (3-D and 4-D at large n) the rule alone sets the grid.
MAX_PILOT_LAGS = 2**22


class GridTooLarge(ValueError):
    """The grid a tolerance asks for would exceed :data:`MAX_LAGS` lags."""


class CoarseGridWarning(UserWarning):
    """The grid was capped at :data:`MAX_LAGS` lags: coarser than the tolerance asks."""


def grid_sizes(ranges, h_ref: float, tolerance: float = DEFAULT_TOLERANCE) -> tuple[int, ...]:
    """Nodes per axis for a binning error of about ``tolerance``, relative, on the LSCV criterion.

    delta = h_ref sqrt(tolerance / (c d)), c = :data:`ERROR_PER_AXIS` (module docstring), and
    at least :data:`MIN_NODES` nodes per axis.  The linear-binning error is O((delta / h)^2)
    (Wand 1994, section 3; Hall & Wand 1996, "On the accuracy of binned kernel density
    estimators", J. Multivariate Anal. 56, 165-184).

    Parameters
    ----------
    ranges : array_like of shape (d,)
        The data's extent along each axis of the binning frame.
    h_ref : float
        The smallest kernel standard deviation at which the tolerance must hold, in the frame.
    tolerance : float, default DEFAULT_TOLERANCE
        The relative error allowed (in (0, 1)).

    Returns
    -------
    tuple of int
        Nodes per axis.

    Raises
    ------
    ValueError
        If ``tolerance`` is not in (0, 1) or ``h_ref`` is not positive and finite.
    """
    if not 0.0 < tolerance < 1.0:
        raise ValueError(f"tolerance must lie in (0, 1), got {tolerance!r}")
    if not (h_ref > 0 and math.isfinite(h_ref)):
        raise ValueError(f"h_ref must be positive and finite, got {h_ref!r}")
    extent = np.atleast_1d(np.asarray(ranges, dtype=np.float64))
    delta = h_ref * math.sqrt(tolerance / (ERROR_PER_AXIS * extent.size))
    return tuple(max(MIN_NODES, math.ceil(r / delta) + 1) for r in extent)


class BinnedPairWeights:
    """The lag weights a(e) - D(e) of one data set: everything a binned LSCV criterion needs.

    The lags are held up to ``max_lag`` nodes per axis (the FFT is padded to m_a + max_lag_a,
    enough for those lags without wrap-around); an evaluation that needs longer lags computes
    them again from the counts, for at least twice the range.

    Parameters
    ----------
    frame : numpy.ndarray
        (d, d) lower-triangular F: the counts are of the rows F^-1 z.
    spec : GridSpec
        The grid, in the frame.
    counts : numpy.ndarray
        Linear-binning counts on ``spec``.
    diagonal : dict
        D(e) for e in {-1, 0, 1}^d (module docstring).
    n : float
        Rows binned; weighted, sum of the diagonal weights (the criterion's n^2 / n_e in the
        counts' units: :func:`bin_pair_weights`).
    max_lag : sequence of int
        Lags held per axis (at most m_a - 1).
    """

    def __init__(self, frame: np.ndarray, spec: GridSpec, counts: np.ndarray, diagonal: dict, n: float, max_lag) -> None:
        self.frame, self.spec, self.counts, self.diagonal, self.n = frame, spec, counts, diagonal, n
        self.spacing = spec.spacing
        self._hold_lags(max_lag)

    def _hold_lags(self, max_lag) -> None:
        """weights = a(e) - D(e) for |e_a| <= max_lag_a, lag 0 at index max_lag_a."""
        self.max_lag = tuple(int(min(m - 1, max(1, r))) for m, r in zip(self.spec.sizes, max_lag))
        weights = _autocorrelation(self.counts, self.max_lag)
        for e, value in self.diagonal.items():
            weights[tuple(c + k for c, k in zip(self.max_lag, e))] -= value
        self.weights = weights

    @property
    def sizes(self) -> tuple[int, ...]:
        """Nodes per axis of the grid."""
        return self.spec.sizes

    def _lag_box(self, sd: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """The weights a(e) - D(e) over the lags within :data:`TRUNCATION_SD` marginal standard
        deviations ``sd`` (per axis, frame units) and the lags' offsets e_a delta_a per axis."""
        half = np.minimum(np.asarray(self.sizes) - 1, np.ceil(TRUNCATION_SD * sd / self.spacing).astype(np.int64))
        if np.any(half > np.asarray(self.max_lag)):  # longer lags than held: compute them, with room to grow
            self._hold_lags(np.maximum(half, 2 * np.asarray(self.max_lag)))
        centre = np.asarray(self.max_lag)
        box = self.weights[tuple(slice(c - r, c + r + 1) for c, r in zip(centre, half))]
        return box, [np.arange(-r, r + 1) * delta for r, delta in zip(half, self.spacing)]

    def error_per_spacing_squared(self, scales) -> float:
        """Lambda: the binning error of the LSCV criterion, relative, is about Lambda delta^2 at
        node spacing delta (frame units), for the kernels h^2 I of the frame at ``scales``.

        The leading term of linear binning (module docstring, "Grid size"): each pair's kernel
        value E becomes its multilinear interpolant at both ends, which adds
        (delta^2 / 2) sum_a [t_ia (1 - t_ia) + t_ja (1 - t_ja)] d^2 E / du_a^2.  Bounding
        t (1 - t) by 1/4 and taking each Gaussian and axis without their cancellation,

            Lambda = max_h (1/4) sum_a [c_4 |L_4a| + 2 c_2 |L_2a|] / |c_4 P_4 - 2 c_2 P_2 + c_4 n / 2|,

        with L_ca = sum_{i<j} d^2 E_c / du_a^2 and P_c the binned pair sums of this grid
        (c_4 = (4 pi)^(-d/2), c_2 = (2 pi)^(-d/2); the denominator is the criterion's
        n^2 h^d g / 2, as in :func:`parzen.bandwidth.lscv._criterion`).

        Parameters
        ----------
        scales : array_like
            Kernel standard deviations h > 0, in frame units.

        Returns
        -------
        float
            Lambda; inf where the criterion is 0 at some scale.
        """
        h = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        d = len(self.sizes)
        c4, c2 = (4.0 * math.pi) ** (-d / 2), (2.0 * math.pi) ** (-d / 2)
        box, lags = self._lag_box(np.full(d, float(h.max()) * math.sqrt(2.0)))
        worst = 0.0
        for scale in h:
            error = criterion = 0.0
            for c, weight in ((4.0, c4), (2.0, -2.0 * c2)):
                variance = c * scale * scale / 2.0  # E_c(u) = exp(-u^2 / (2 variance)) per axis
                kernel = [np.exp(-0.5 * lag * lag / variance)[None, :] for lag in lags]
                curvature = [k * (lag * lag / variance - 1.0) / variance for k, lag in zip(kernel, lags)]
                criterion += weight * 0.5 * _contract(box, kernel)[0]
                for a in range(d):
                    factors = kernel[:a] + [curvature[a]] + kernel[a + 1:]
                    error += abs(weight) * abs(0.5 * _contract(box, factors)[0])
            criterion += c4 * self.n / 2.0
            worst = max(worst, 0.25 * error / abs(criterion) if criterion != 0.0 else math.inf)
        return worst

    def pair_sums(self, M: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Binned sum_{i<j} exp(-s_ij / 4h^2) and exp(-s_ij / 2h^2), s_ij = |M^-1 (z_i - z_j)|^2.

        The same quantity as ``parzen.backends`` ``prepare_whitened_pair_sum_sq(Z, "lscv")(M, h)``.
        Lags beyond :data:`TRUNCATION_SD` standard deviations of the wider Gaussian are left out
        (the box bounds the quadratic form, so each left-out term is below exp(-tau^2 / 2)).

        Parameters
        ----------
        M : numpy.ndarray
            (d, d) lower-triangular whitening factor in the data's frame.
        h : numpy.ndarray
            (k,) positive scales.

        Returns
        -------
        numpy.ndarray
            (k, 2) float64.
        """
        h = np.asarray(h, dtype=np.float64)
        B = linalg.solve_triangular(self.frame, np.asarray(M, dtype=np.float64), lower=True)
        d = B.shape[0]
        C = B @ B.T  # the kernel covariance per unit h^2, in the frame
        box, lags = self._lag_box(float(h.max()) * np.sqrt(2.0 * np.diag(C)))  # the wider Gaussian's sds
        half = [(n - 1) // 2 for n in box.shape]
        out = np.empty((h.size, 2))
        off_diagonal = np.abs(B[np.tril_indices(d, -1)]).max(initial=0.0)
        if off_diagonal <= 1e-12 * np.abs(np.diag(B)).min():  # separable: contract axis by axis
            for col, c in enumerate((4.0, 2.0)):
                factors = [
                    np.exp(-((lag / B[a, a]) ** 2)[None, :] / (c * h[:, None] ** 2)) for a, lag in enumerate(lags)
                ]
                out[:, col] = 0.5 * _contract(box, factors)
            return out
        # a(e) - D(e) and s(e) are even in e: sum over the lags with e_0 >= 0, those with e_0 > 0 twice
        box = box[half[0]:].copy()
        box[1:] *= 2.0
        lags[0] = lags[0][half[0]:]
        A = linalg.cho_solve((B, True), np.eye(d))  # (B B^T)^-1: s = u^T A u over the lag box
        s: np.ndarray = np.zeros(box.shape)
        for a in range(d):
            for b in range(a, d):
                term = A[a, a] * lags[a] ** 2 if a == b else 2.0 * A[a, b] * np.multiply.outer(lags[a], lags[b])
                shape = [1] * d
                shape[a] = lags[a].size
                if a != b:
                    shape[b] = lags[b].size
                s += term.reshape(shape)
        flat, s = box.reshape(-1), s.reshape(-1)
        for j, scale in enumerate(h):  # one scale at a time: memory of one lag box
            wide = np.exp(-s / (4.0 * scale * scale))
            out[j] = 0.5 * (wide @ flat), 0.5 * ((wide * wide) @ flat)  # exp(-s/2h^2) = exp(-s/4h^2)^2
        return out


def bin_pair_weights(Z, *, h_ref: float, frame=None, tolerance: float = DEFAULT_TOLERANCE,
                     grid_size=None, shrink_to_fit: bool = False, max_sd: float | None = None,
                     weights=None, diagonal_weights=None) -> BinnedPairWeights:
    """Bin the rows F^-1 z and compute the lag weights a(e) - D(e) (module docstring).

    Parameters
    ----------
    Z : array_like of shape (n, d)
        The data (d <= :data:`parzen.binned.grid.MAX_DIMENSIONS`).
    h_ref : float
        The smallest kernel standard deviation at which ``tolerance`` must hold, in the frame's
        units (:func:`grid_sizes`).
    frame : array_like of shape (d, d), optional
        Lower-triangular F; the rows are binned as F^-1 z (default the identity).  A frame that
        spheres the data gives the same binning error along every direction.
    tolerance : float, default DEFAULT_TOLERANCE
        Relative error allowed on the criterion at kernel standard deviations from h_ref to
        ``max_sd``: the grid is the rule's (:func:`grid_sizes`) or, where a pilot grid's error
        estimate allows, a coarser one (module docstring, "Grid size").
    grid_size : int or sequence of int, optional
        Nodes per axis, overriding the tolerance.
    shrink_to_fit : bool, default False
        Where the tolerance's grid exceeds :data:`MAX_LAGS` lags, take the largest grid of the
        same shape within it and warn (:class:`CoarseGridWarning`), rather than raise.
    max_sd : float, optional
        The largest kernel standard deviation h (frame units) expected: the lags are computed
        for it first (default: every lag).  Larger ones are computed when asked.
    weights : array_like of shape (n,), optional
        Weights c_i of the rows: the counts are sum_i c_i w_ik (linear binning with weights,
        Wand & Jones 1995, appendix D), so a(e) sums c_i c_j over the pairs of nodes.
    diagonal_weights : array_like of shape (n,), optional
        The weight of row i in D(e) (default ``weights``, or 1): c_i^2 takes out the i = j terms
        (:meth:`BinnedPairWeights.pair_sums` is then sum_{i<j} c_i c_j E); c_i leaves in the pairs
        between the c_i copies of a row that frequency weights stand for, binned as the replicated
        rows are, so that the sums equal the replicated data's.  Their sum is the n of the error
        estimate (the criterion's n^2 / n_e in the counts' units).

    Returns
    -------
    BinnedPairWeights

    Raises
    ------
    ValueError
        If d > MAX_DIMENSIONS; :class:`GridTooLarge` (a ValueError) if the lag array would
        exceed :data:`MAX_LAGS` entries.
    """
    Z = np.asarray(Z, dtype=np.float64)
    Z = Z.reshape(len(Z), -1)
    d = Z.shape[1]
    if d > MAX_DIMENSIONS:
        raise ValueError(f"binned LSCV takes at most {MAX_DIMENSIONS} dimensions, not {d}; use method='exact'")
    F = np.eye(d) if frame is None else np.asarray(frame, dtype=np.float64)
    Y = linalg.solve_triangular(F, Z.T, lower=True).T
    if diagonal_weights is None:
        diagonal_weights = weights
    rows = float(len(Y)) if diagonal_weights is None else float(np.sum(diagonal_weights))
    spec, _ = pair_weights_grid(Y.min(axis=0), Y.max(axis=0), h_ref=h_ref, tolerance=tolerance, grid_size=grid_size,
                                shrink_to_fit=shrink_to_fit, max_sd=max_sd, rows=rows,
                                pilot=lambda pilot_spec: (linear_bin(Y, pilot_spec, weights).counts,
                                                          _diagonal_moments(Y, pilot_spec, diagonal_weights)))
    return _binned_weights(Y, spec, F, max_sd, weights, diagonal_weights)


def pair_weights_grid(lows, highs, *, h_ref: float, tolerance: float = DEFAULT_TOLERANCE, grid_size=None,
                      shrink_to_fit: bool = False, max_sd: float | None = None,
                      pilot: Callable[[GridSpec], tuple[np.ndarray, dict]] | None = None,
                      rows: float = 0) -> tuple[GridSpec, list[int]]:
    """The grid of :func:`bin_pair_weights` for rows (in the frame) spanning [lows, highs], and the
    lags to hold: what the binning needs from the data besides their counts, so that data served
    in chunks can be binned on it too (:mod:`parzen.binned.chunked`).

    Parameters
    ----------
    lows, highs : array_like of shape (d,)
        The smallest and largest frame coordinates of the rows.
    h_ref, tolerance, grid_size, shrink_to_fit, max_sd
        As in :func:`bin_pair_weights`.
    pilot : callable, optional
        GridSpec -> (counts, diagonal moments D(e)) of the rows in the frame on it: a pilot grid's
        error estimate may then choose a coarser grid than the rule's (module docstring, "Grid
        size").  Without it the grid is the rule's.
    rows : float
        The number of rows, or the sum of the diagonal weights (needed with ``pilot``).

    Returns
    -------
    spec : GridSpec
        The grid (the rows' box widened by 1e-9 of its extent).
    max_lag : list of int
        Lags held per axis (:class:`BinnedPairWeights`).

    Raises
    ------
    ValueError
        As :func:`bin_pair_weights`.
    """
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    d = lows.size
    margin = 1e-9 * np.maximum(highs - lows, 1.0)  # so that rounding in the positions keeps every row inside
    lows, highs = lows - margin, highs + margin
    extent = highs - lows
    error_scale = None  # Lambda of the pilot grid, where one was binned
    if grid_size is None:
        sizes = grid_sizes(extent, h_ref, tolerance)
        if pilot is not None:
            sizes, error_scale = _sizes_from_estimate(pilot, rows, lows, highs, sizes, h_ref, max_sd, tolerance)
    else:
        requested = np.atleast_1d(np.asarray(grid_size))
        if requested.size not in (1, d) or requested.ndim != 1:
            raise ValueError(f"grid_size must be an integer or {d} integers, got {grid_size!r}")
        sizes = tuple(int(v) for v in np.broadcast_to(requested, (d,)))
    lags = int(np.prod([2 * m - 1 for m in sizes], dtype=np.float64))
    if lags > MAX_LAGS and shrink_to_fit and grid_size is None:
        shrink = (MAX_LAGS / lags) ** (1.0 / d)
        capped = tuple(max(2, int(m * shrink) - 1) for m in sizes)
        if error_scale is None:
            reached, by = tolerance * max((m - 1) / (c - 1) for m, c in zip(sizes, capped)) ** 2, "the grid rule"
        else:
            reached, by = error_scale * float(np.max(extent / (np.asarray(capped) - 1))) ** 2, "the error estimate"
        warnings.warn(
            f"binned LSCV: tolerance {tolerance:g} needs a grid of {' x '.join(map(str, sizes))} nodes, more than "
            f"the {MAX_LAGS:.3g} lags allowed; binning on {' x '.join(map(str, capped))} (about {reached:.2g} "
            f"relative by {by}); pass method='exact' for the exact criterion, or a larger tolerance=",
            CoarseGridWarning,
            stacklevel=3,
        )
        sizes, lags = capped, int(np.prod([2 * m - 1 for m in capped], dtype=np.float64))
    if lags > MAX_LAGS:
        raise GridTooLarge(
            f"binned LSCV would need a grid of {' x '.join(map(str, sizes))} nodes ({lags:.3g} lags, more than "
            f"{MAX_LAGS:.3g}) in {d} dimensions; pass a larger tolerance or a smaller grid_size, or use method='exact'"
        )
    spec = GridSpec.covering(lows, highs, sizes)
    return spec, _lags_for(spec, max_sd)


def _lags_for(spec: GridSpec, max_sd: float | None) -> list[int]:
    """The lags to hold per axis: every lag, or those within TRUNCATION_SD sqrt(2) max_sd."""
    if max_sd is None:
        return [m - 1 for m in spec.sizes]
    return np.ceil(TRUNCATION_SD * math.sqrt(2.0) * max_sd / spec.spacing).astype(np.int64).tolist()


def _binned_weights(Y: np.ndarray, spec: GridSpec, frame: np.ndarray, max_sd: float | None, weights=None,
                    diagonal_weights=None) -> BinnedPairWeights:
    """Bin the frame's rows Y on ``spec`` (with ``weights``): counts, diagonal moments (rows weighted
    by ``diagonal_weights``) and the lags for ``max_sd``."""
    counts = linear_bin(Y, spec, weights).counts
    rows = float(len(Y)) if diagonal_weights is None else float(np.sum(diagonal_weights))
    return BinnedPairWeights(frame, spec, counts, _diagonal_moments(Y, spec, diagonal_weights), rows,
                             _lags_for(spec, max_sd))


def _sizes_from_estimate(pilot: Callable[[GridSpec], tuple[np.ndarray, dict]], rows: float, lows, highs,
                         sizes: tuple[int, ...], h_ref: float, max_sd: float | None,
                         tolerance: float) -> tuple[tuple[int, ...], float | None]:
    """The grid the data's own error estimate asks for, between the pilot's and the rule's.

    A pilot grid of spacing :data:`PILOT_SPACING` h_ref gives Lambda
    (:meth:`BinnedPairWeights.error_per_spacing_squared`, at h_ref and ``max_sd``), and the
    spacing sqrt(tolerance / Lambda) meets ``tolerance`` by that estimate: the nodes per axis
    for it, no more than the rule's ``sizes`` and no fewer than the pilot's (module docstring,
    "Grid size").  Where the pilot would exceed :data:`MAX_PILOT_LAGS` lags, or is no coarser
    than ``sizes``, the rule's sizes are kept.

    Returns
    -------
    tuple
        The nodes per axis, and Lambda (None where no pilot was binned).
    """
    extent = highs - lows
    pilot_sizes = tuple(max(MIN_NODES, math.ceil(r / (PILOT_SPACING * h_ref)) + 1) for r in extent)
    if np.prod([2 * m - 1 for m in pilot_sizes], dtype=np.float64) > MAX_PILOT_LAGS or all(
        p >= m for p, m in zip(pilot_sizes, sizes)
    ):
        return sizes, None
    scales = [h_ref] if max_sd is None else [h_ref, max(h_ref, max_sd)]
    pilot_spec = GridSpec.covering(lows, highs, pilot_sizes)
    counts, diagonal = pilot(pilot_spec)
    weights = BinnedPairWeights(np.eye(pilot_spec.d), pilot_spec, counts, diagonal, rows, _lags_for(pilot_spec, max(scales)))
    error_scale = weights.error_per_spacing_squared(scales)
    if not (error_scale > 0.0 and math.isfinite(error_scale)):
        return sizes, None
    delta = math.sqrt(tolerance / error_scale)
    estimated = (max(MIN_NODES, math.ceil(r / delta) + 1) for r in extent)
    return tuple(min(m, max(e, p)) for m, e, p in zip(sizes, estimated, pilot_sizes)), error_scale


def _contract(box: np.ndarray, factors: list[np.ndarray]) -> np.ndarray:
    """sum_e box(e) prod_a factors_a[k, e_a] for each row k: a separable sum over the lag box."""
    total = np.tensordot(factors[0], box, axes=([1], [0]))  # (k, rest of the axes)
    for factor in factors[1:]:
        total = np.einsum("ki...,ki->k...", total, factor)
    return total


def _autocorrelation(counts: np.ndarray, max_lag) -> np.ndarray:
    """a(e) = sum_k c_k c_{k+e} for the lags |e_a| <= max_lag_a < m_a, lag 0 at index max_lag_a.

    By FFT, padded to p_a >= m_a + max_lag_a: the circular correlation at e adds a(e -+ p_a),
    zero for |e| <= max_lag_a since |e -+ p_a| >= m_a."""
    padded = [fft.next_fast_len(m + r, real=True) for m, r in zip(counts.shape, max_lag)]
    spectrum = fft.rfftn(counts, padded, workers=-1)
    power = spectrum.real * spectrum.real + spectrum.imag * spectrum.imag
    full = fft.irfftn(power, padded, workers=-1)  # a at lag e held at index e mod padded
    index = [np.arange(-r, r + 1) % p for r, p in zip(max_lag, padded)]
    return np.ascontiguousarray(full[np.ix_(*index)])


#: Rows per block of :func:`_diagonal_moments` (temporaries of 2^(d-1) columns stay small).
DIAGONAL_BLOCK_ROWS = 2**16


def _diagonal_moments(Y: np.ndarray, spec: GridSpec, weights=None) -> dict[tuple[int, ...], float]:
    """D(e) = sum_i u_i prod_a m_{e_a}(f_ia) for e in {-1, 0, 1}^d: the binned i = j terms, each
    row weighted by u_i (``weights``; default 1: see ``diagonal_weights`` of :func:`bin_pair_weights`).

    m_{+1} = m_{-1}, so D(e) depends only on which e_a are non-zero: the 2^d sums
    T(s) = sum_i prod_a G_a[i, s_a], G_a = [m_0(f_ia), m_1(f_ia)], s in {0, 1}^d.  T is the
    contraction of the rows' Khatri-Rao products: for each block of rows, the (rows, 2^(d-1))
    row-wise products over the first d - 1 axes times the last axis's (rows, 2) by one matrix
    product, in place of 3^d products over all rows."""
    sizes = np.asarray(spec.sizes)
    lows, spacing = np.asarray(spec.lows), np.asarray(spec.spacing)
    d = spec.d
    table = np.zeros((2,) * d)
    for start in range(0, len(Y), DIAGONAL_BLOCK_ROWS):
        positions = (Y[start:start + DIAGONAL_BLOCK_ROWS] - lows) / spacing
        f = positions - np.minimum(np.floor(positions), sizes - 2)  # as in linear_bin
        cross = f * (1.0 - f)
        G = np.stack([1.0 - 2.0 * cross, cross], axis=2)  # m_0 = f^2 + (1 - f)^2 = 1 - 2 f (1 - f)
        rows = G[:, 0, :] if weights is None else G[:, 0, :] * np.asarray(weights)[start:start + DIAGONAL_BLOCK_ROWS, None]
        for a in range(1, d - 1):
            rows = (rows[:, :, None] * G[:, a, None, :]).reshape(len(G), -1)
        table += (rows.T @ G[:, d - 1, :]).reshape(table.shape) if d > 1 else rows.sum(axis=0)
    return {e: float(table[tuple(abs(k) for k in e)]) for e in itertools.product((-1, 0, 1), repeat=d)}


def prepare_binned_pair_sums(
    Z, *, h_ref: float, frame=None, tolerance: float = DEFAULT_TOLERANCE, grid_size=None, shrink_to_fit: bool = False,
    max_sd: float | None = None,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A function (M, h) -> binned pair sums, as a backend's ``prepare_whitened_pair_sum_sq``.

    Parameters
    ----------
    Z, h_ref, frame, tolerance, grid_size, shrink_to_fit, max_sd
        As in :func:`bin_pair_weights`.

    Returns
    -------
    callable
        :meth:`BinnedPairWeights.pair_sums` of the binned data.
    """
    weights = bin_pair_weights(
        Z, h_ref=h_ref, frame=frame, tolerance=tolerance, grid_size=grid_size, shrink_to_fit=shrink_to_fit,
        max_sd=max_sd,
    )
    return weights.pair_sums
