"""Binned estimation for the matrix selectors :func:`parzen.bandwidth.plugin_H`,
:func:`parzen.bandwidth.plugin_diag` and :func:`parzen.bandwidth.scv_H` (d <= 4).

The selectors run the same pilots, optimiser and transformations as their exact forms; only the
functionals Psi_alpha(g) (and SCV's Gaussian pair means) come from linear-binning counts of the
pre-transformed data, by :class:`parzen.binned.derivative_sums.BinnedDerivativeSums`: the binned
double sum over the lags (Wand 1994; Wand & Jones 1995, appendix D; R ``ks``'s ``binned = TRUE``)
less the binning error's delta^2 term, so that the error is O((delta / g)^4), delta the node
spacing and g the pilot scale (docs/algorithms.md, "Binned plug-in and SCV matrices").

Grid from the tolerance.  Measured on faithful, quakes, normal and bimodal data, the corrected
Psi_4 vector erred by at most 0.65 (delta / g)^4, relative (:mod:`parzen.binned.derivative_sums`),
and H = argmin of the AMISE moves by about 2 / (d + 4) of that.  The grid is spaced

    delta = g (tolerance / C)^(1/4),   C = :data:`ERROR_CONSTANT` = 1,

on every axis of the pre-transformed data x* (sphered or scaled, so one spacing serves every
axis), with g the smallest pilot scale a run uses.  That g is known only once the pilots have run on
binned functionals, so the selector first runs on the functionals of the normal density with the
data's covariance (:class:`NormalFunctionals`, no pass over the data), and the first grid is spaced
for :data:`PRIOR_MARGIN` times the smallest scale that run used; where a scale on the data then
comes out smaller than 1/1.05 of that, the data are binned again on the finer grid and the selector
runs again (one more pass).  The bound stated: ||H_binned - H_exact||_F <= tolerance ||H_exact||_F, asserted
in tests/test_binned_matrix.py at tolerances 1e-2 to 1e-4 on the bundled data and generated data.

Capped grids.  The grid is capped at :data:`MAX_NODES` nodes (the FFTs of 1 + d grids of that
size, zero-padded): ``method="binned"`` then raises :class:`parzen.binned.lscv.GridTooLarge`;
``"auto"`` bins on the largest grid within the cap, and warns
(:class:`parzen.binned.lscv.CoarseGridWarning`) and records
(:attr:`parzen.bandwidth.method.MethodUsed.error_estimate`) the error reached, estimated from the
spacing and the smallest pilot scale actually used as

    estimated error = :data:`PSI_ERROR_CONSTANT` (2 / (d + 4)) (delta / g)^4,

the model above without the grid rule's margin.  Measured against the exact H (plugin_H,
plugin_diag and scv_H on quakes and generated 2- to 4-D data with the cap lowered; plugin_H at
n = 10^4 to 10^6, d = 3 and 4, and plugin_diag at n = 10^5, against the exact H of the GPU
backend: benchmarks/results/binned_plugin_H.md), the true error was 0.08 to 1.05 times the estimate:
near it for delta / g up to about 0.6, an overstatement beyond, where the error no longer grows
as (delta / g)^4.  Where the cap binds, d = 3 from about 3 10^4 rows and d = 4 from a few thousand
at the default tolerance, the exact pair sums (``method="exact"``) are the way to the tolerance.
A ``grid_size`` (nodes per axis) overrides the rule (no estimate is then made).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..binned.chunked import checked_moments, is_weighted
from ..binned.chunked import weighted_covariance as chunked_weighted_covariance
from ..binned.derivative_sums import BinnedDerivativeSums, DerivativeCounts
from ..binned.grid import GridSpec
from ..binned.lscv import CoarseGridWarning, GridTooLarge
from ..binned.plugin import check_tolerance as plugin_tolerance
from ..binned.source import Chunk, ChunkedData, Moments
from .functionals import gaussian_derivative_at_zero

#: The default relative (Frobenius) error of the binned H against the exact H.
DEFAULT_TOLERANCE = 1e-3
#: C in the rule delta = g (tolerance / C)^(1/4) (module docstring).
ERROR_CONSTANT = 1.0
#: The relative error of the corrected binned Psi_4 vector is at most this times (delta / g)^4
#: (measured, :mod:`parzen.binned.derivative_sums`); H moves by about 2 / (d + 4) of it.
PSI_ERROR_CONSTANT = 0.65
#: The most grid nodes the rule may ask for (4-D: 45 per axis; the FFTs of 1 + d zero-padded grids
#: of that size took about 10 s on the shared 2-core CPU).
MAX_NODES = 1 << 22
#: The fewest nodes per axis.
MIN_NODES = 8
#: A pilot this much smaller than the one the grid was spaced for has the data binned again.
REFINE_SLACK = 1.05
#: The first grid is spaced for this fraction of the smallest scale the selector uses on normal
#: data: on faithful, quakes, tempb and normal data the scales on the data came within it.
PRIOR_MARGIN = 0.9
#: ``method="auto"`` bins from this many rows on, per dimension d (below, exact).  Measured on the
#: shared 2-core CPU (default tolerance): d = 2, plugin_H exact 0.16 s and binned 0.15 s on tempb's
#: first 2000 rows, and at n = 10^4 exact 1.99 s against binned 0.25 s
#: (benchmarks/results/binned_plugin_H.md); d = 3, n = 10^4, exact 3.2 s against binned 20 s on the
#: capped 4M-node grid, so binned from 3 10^4 rows (exact about 29 s there, growing as n^2);
#: d = 4 takes d = 3's threshold (exact 0.38 s at n = 1500; not measured at scale).
AUTO_BINNED_FROM = {1: 2000, 2: 2000, 3: 30000, 4: 30000}


def check_tolerance(tolerance) -> float:
    """The tolerance on H as a float in (0, 0.1] (:func:`parzen.binned.plugin.check_tolerance`)."""
    return plugin_tolerance(tolerance, "H")


def spacing_ratio(tolerance: float) -> float:
    """delta / g for ``tolerance``: (tolerance / C)^(1/4) (module docstring)."""
    return (tolerance / ERROR_CONSTANT) ** 0.25


def estimated_error(ratio: float, d: int) -> float:
    """The expected relative (Frobenius) error of H at delta / g = ``ratio`` in d dimensions:
    :data:`PSI_ERROR_CONSTANT` (2 / (d + 4)) ratio^4 (module docstring, "Capped grids")."""
    return PSI_ERROR_CONSTANT * 2.0 / (d + 4) * ratio**4


class BinnedFunctionals:
    """Psi_alpha(g) and Gaussian pair means of pre-transformed data from binned counts, on a grid
    spaced for a tolerance (module docstring), re-binned when a pilot comes out smaller.

    Called as ``functionals(g, alphas)``, it is the drop-in for
    :func:`parzen.bandwidth.functionals.psi_hat` the selectors take.

    Parameters
    ----------
    bin_on : callable
        GridSpec -> :class:`DerivativeCounts` of the data on it (in memory: one binning; data
        served in chunks: one pass).
    lows, highs : numpy.ndarray
        (d,) the range of the pre-transformed rows.
    total : float
        The total weight binned (rows unweighted).
    tolerance : float
        Relative error allowed on H.
    grid_size : int or sequence of int, optional
        Nodes per axis, overriding the tolerance.
    shrink_to_fit : bool
        Where the tolerance's grid exceeds :data:`MAX_NODES`, bin on the largest grid within it
        and warn, rather than raise.
    what : str
        The selector, for the messages.
    """

    def __init__(self, bin_on: Callable[[GridSpec], DerivativeCounts], lows, highs, total: float, *,
                 tolerance: float, grid_size=None, shrink_to_fit: bool = False, what: str = "plugin_H") -> None:
        self.bin_on, self.total, self.what = bin_on, float(total), what
        margin = 1e-9 * np.maximum(np.asarray(highs) - np.asarray(lows), 1.0)
        self.lows, self.highs = np.asarray(lows) - margin, np.asarray(highs) + margin
        self.tolerance, self.shrink_to_fit = tolerance, shrink_to_fit
        self.grid_size = None if grid_size is None else self._given_sizes(grid_size)
        self.capped, self.wanted = False, ""
        self.error_estimate: float | None = None
        self.planned_for = math.inf
        self.smallest = math.inf
        self.sums: BinnedDerivativeSums | None = None

    def _given_sizes(self, grid_size) -> tuple[int, ...]:
        d = self.lows.size
        requested = np.atleast_1d(np.asarray(grid_size))
        if requested.ndim != 1 or requested.size not in (1, d) or np.any(requested < 2) or np.any(requested != np.round(requested)):
            raise ValueError(f"grid_size must be an integer >= 2 or {d} such integers, got {grid_size!r}")
        return tuple(int(v) for v in np.broadcast_to(requested, (d,)))

    @property
    def sizes(self) -> tuple[int, ...]:
        """Nodes per axis of the current grid."""
        assert self.sums is not None
        return self.sums.spec.sizes

    def plan(self, g: float) -> None:
        """Bin the data on the grid for the pilot scale ``g`` (or on ``grid_size``)."""
        extent = self.highs - self.lows
        if self.grid_size is not None:
            sizes = self.grid_size
        else:
            delta = g * spacing_ratio(self.tolerance)
            sizes = tuple(max(MIN_NODES, math.ceil(r / delta) + 1) for r in extent)
            nodes = float(np.prod(sizes, dtype=np.float64))
            if nodes > MAX_NODES:
                shown = " x ".join(map(str, sizes))
                if not self.shrink_to_fit:
                    raise GridTooLarge(
                        f"binned {self.what}: tolerance {self.tolerance:g} needs a grid of {shown} nodes, more than "
                        f"{MAX_NODES:.3g}; pass a larger tolerance or a smaller grid_size, or method='exact'")
                shrink = (MAX_NODES / nodes) ** (1.0 / len(sizes))
                sizes = tuple(max(MIN_NODES, int(m * shrink)) for m in sizes)
                self.capped, self.wanted = True, shown
        self.planned_for = g
        self.sums = BinnedDerivativeSums(self.bin_on(GridSpec.covering(self.lows, self.highs, sizes)), self.total)

    def __call__(self, g: float, alphas: np.ndarray) -> np.ndarray:
        """Binned Psi_alpha(g), as :func:`parzen.bandwidth.functionals.psi_hat` (pairs i = j included)."""
        assert self.sums is not None
        self.smallest = min(self.smallest, g)
        return self.sums.psi(g, alphas)

    def gaussian_mean(self, sigma: np.ndarray) -> float:
        """Binned sum_{i,j} v_i v_j phi_Sigma(y_i - y_j) (SCV's Q(Sigma))."""
        assert self.sums is not None
        self.smallest = min(self.smallest, math.sqrt(float(np.linalg.eigvalsh(sigma)[0])))
        return self.sums.gaussian_double_sum(sigma)

    def too_coarse(self) -> bool:
        """Whether a scale used was smaller than the grid was spaced for (module docstring)."""
        return self.grid_size is None and not self.capped and self.smallest * REFINE_SLACK < self.planned_for

    def run(self, sigma: np.ndarray, n: float, compute: Callable[[Any], np.ndarray]) -> np.ndarray:
        """``compute(self)`` on the grid for the smallest scale the selector uses on normal data of
        covariance ``sigma`` and size ``n`` (:class:`NormalFunctionals`) times :data:`PRIOR_MARGIN`, and again on a
        finer grid where a scale used was smaller still (at most one re-binning: the pilots move
        little with the grid)."""
        prior = NormalFunctionals(sigma, n)
        compute(prior)
        self.plan(PRIOR_MARGIN * prior.smallest)
        result = compute(self)
        if self.too_coarse():
            self.plan(self.smallest)
            self.smallest = math.inf
            result = compute(self)
        if self.capped:
            self._warn_capped()
        return result

    def _warn_capped(self) -> None:
        """Record and warn the error reached on a capped grid: :func:`estimated_error` at the
        largest spacing over the smallest scale used."""
        assert self.sums is not None
        ratio = float(np.max(self.sums.spacing)) / self.smallest
        self.error_estimate = estimated_error(ratio, self.lows.size)
        warnings.warn(
            f"binned {self.what}: tolerance {self.tolerance:g} needs a grid of {self.wanted} nodes, more than the "
            f"{MAX_NODES:.3g} allowed; binned on {' x '.join(map(str, self.sizes))} (spacing {ratio:.2g} pilot scales): "
            f"H errs by up to about {self.error_estimate:.2g} relative (recorded as error_estimate, see "
            "parzen.bandwidth.recording); for the tolerance pass method='exact' (O(n^2) pair sums; backend='gpu' "
            "where there is one), or a larger tolerance=",
            CoarseGridWarning, stacklevel=5)


class NormalFunctionals:
    """The functionals of the normal density N(0, Sigma) smoothed by the pilot, with the smallest
    scale asked for: the selector run on them tells which scales it will use on the data.

    Psi_alpha(g) of n rows of N(0, Sigma) estimated with G = g^2 I, the pairs i = j included, has
    expectation (1 - 1/n) D^alpha phi_{2 Sigma + g^2 I}(0) + (1/n) D^alpha phi_{g^2 I}(0), and
    Q(Sigma') likewise with phi_{2 Sigma + Sigma'} and phi_{Sigma'}
    (:func:`parzen.bandwidth.functionals.gaussian_derivative_at_zero`).

    Parameters
    ----------
    sigma : numpy.ndarray
        (d, d) the covariance of the pre-transformed data.
    n : float
        The sample size.
    """

    def __init__(self, sigma: np.ndarray, n: float) -> None:
        self.sigma = np.asarray(sigma, dtype=np.float64)
        self.n = float(n)
        self.smallest = math.inf

    def _expected(self, alphas: np.ndarray, kernel: np.ndarray) -> np.ndarray:
        pairs = gaussian_derivative_at_zero(alphas, 2.0 * self.sigma + kernel)
        return (1.0 - 1.0 / self.n) * pairs + gaussian_derivative_at_zero(alphas, kernel) / self.n

    def __call__(self, g: float, alphas: np.ndarray) -> np.ndarray:
        """The expected Psi_hat_alpha(g) for each multi-index (class docstring)."""
        self.smallest = min(self.smallest, g)
        return self._expected(alphas, g * g * np.eye(len(self.sigma)))

    def gaussian_mean(self, sigma: np.ndarray) -> float:
        """The expected Q(Sigma) (class docstring)."""
        self.smallest = min(self.smallest, math.sqrt(float(np.linalg.eigvalsh(sigma)[0])))
        return float(self._expected(np.zeros((1, len(sigma)), dtype=np.int64), np.asarray(sigma, dtype=np.float64))[0])


def in_memory(Y: np.ndarray, weights: np.ndarray | None, **options) -> BinnedFunctionals:
    """:class:`BinnedFunctionals` of pre-transformed rows in memory (with their positive weights)."""
    total = float(len(Y)) if weights is None else float(np.sum(weights))
    lows, highs = Y.min(axis=0), Y.max(axis=0)
    return BinnedFunctionals(lambda spec: DerivativeCounts.of(Y, spec, weights), lows, highs, total, **options)


class ChunkedTransform:
    """Pre-transformed rows of data served in chunks: y = (x - mean) R^-1, R the covariance's
    symmetric root (sphered) or its diagonal of standard deviations (scaled), as
    :class:`parzen.bandwidth.plugin_matrix.PreTransformed` does in memory.

    Parameters
    ----------
    data : ChunkedData
        The data (a weights column is taken as ``weight_kind`` says).
    how : {"sphere", "scale"}
    weight_kind : {"probability", "frequency"}
    """

    def __init__(self, data: ChunkedData, how: str, weight_kind: str) -> None:
        from .plugin_matrix import symmetric_root  # plugin_matrix imports this module

        self.data = data
        d = data.d
        moments = checked_moments(data, min_rows=d + 2)
        self.weights = None  # the weights stay in the chunks: only the binned functionals read the rows
        if is_weighted(moments):
            if weight_kind == "frequency":
                sigma, n = moments.covariance, float(moments.weight)
            else:
                sigma, n = chunked_weighted_covariance(data, moments)
        else:
            sigma, n = moments.covariance, float(moments.rows)
        self.total = float(moments.weight)
        self.n = n
        self.root = symmetric_root(sigma) if how == "sphere" else np.diag(np.sqrt(np.diag(sigma)))
        self.inverse = np.linalg.inv(self.root)
        self.sigma_star = self.inverse @ sigma @ self.inverse.T
        self.mean = moments.mean
        framed = data.reduce(partial(_framed_moments, mean=self.mean, inverse=self.inverse), what="range after transforming")
        self.lows, self.highs = framed.lows, framed.highs

    def back(self, H_star: np.ndarray) -> np.ndarray:
        """R H* R: the matrix in data units."""
        return self.root @ H_star @ self.root

    def functionals(self, **options) -> BinnedFunctionals:
        """:class:`BinnedFunctionals` binning the chunks (one pass per grid)."""
        def bin_on(spec: GridSpec) -> DerivativeCounts:
            return self.data.reduce(partial(_chunk_counts, spec=spec, mean=self.mean, inverse=self.inverse), what="binning")

        return BinnedFunctionals(bin_on, self.lows, self.highs, self.total, **options)


def _framed_moments(chunk: Chunk, *, mean: np.ndarray, inverse: np.ndarray) -> Moments:
    """The :class:`Moments` (for the range) of one chunk's transformed rows."""
    return Moments.of(Chunk((chunk.values - mean) @ inverse, null_rows=chunk.null_rows))


def _chunk_counts(chunk: Chunk, *, spec: GridSpec, mean: np.ndarray, inverse: np.ndarray) -> DerivativeCounts:
    """One chunk's :class:`DerivativeCounts` (a summary for :meth:`ChunkedData.reduce`)."""
    return DerivativeCounts.of((chunk.values - mean) @ inverse, spec, chunk.weights)
