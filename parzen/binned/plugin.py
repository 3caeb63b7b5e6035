"""Binned PLUGIN: both pilot stages (Psi_6, then Psi_4) from binned pair sums, on a grid sized
from a tolerance on h.

The stages are those of the exact PLUGIN (:mod:`parzen.bandwidth.plugin`; Andrzejewski et al.,
paper 000 in docs/statistics.md, eqs. 16-19, with docs/departures.md, item 1), with each
Psi_r(g) = S_r(g) / (n^2 g^(r+1)) from the binned double sum S_r of
:class:`parzen.binned.pair_sums.BinnedPairSums1D` -- the estimator of ``KernSmooth::dpik`` (Wand &
Jones 1995, section 3.6 and appendix D), on a grid chosen from the requested accuracy instead of
a fixed 401 points.

Grid size from the tolerance.  The relative binning error of S_r(g) is about
e_r = c (delta/g)^2 |S_{r+2}(g) / S_r(g)|, c = 1/6 for data spread over the cells and at most 1/4
(:mod:`parzen.binned.pair_sums`).  h = [R(K) / (mu_2^2 Psi_4(g_2) n)]^(1/5) and g_2 is proportional
to |Psi_6(g_1)|^(-1/7), so to first order

    |dh / h| <= (1/5) [e_4(g_2) + |D| e_6(g_1) / 7],   D = d log Psi_4(g) / d log g at g_2,

which :func:`predicted_relative_error` evaluates on the binned sums themselves (c = 1/4, D by a
central difference).  The first grid has spacing delta = sigma sqrt(tolerance / C) with
C = :data:`PRIOR_CONSTANT` = 10: the prediction is C (delta / sigma)^2 with C measured (on a 2001-node
grid, n = 20 000 or the whole data set) at 0.32 for normal data, 0.7-1 for Student t3, 2.2 for
two and 6.5 for three separated normal modes, 5-9 for uniform, exponential and lognormal data
(edges and steep tails), and 0.7-2.9 on every column of faithful, quakes and tempb.  Then the
prediction is checked on the binned sums, and where it exceeds the tolerance the data are binned
again on a grid refined by 1.1 sqrt(prediction / tolerance) -- a second pass over the data, which
the generous C avoids on all of those.  The realised error is then below the tolerance (asserted in
tests/test_binned_plugin.py at 1e-3, 1e-4 and 1e-5 on normal, bimodal and lognormal samples and
every column of the bundled real data sets).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..kernels import GAUSS_MU2, GAUSS_RK, gauss_derivative_at_zero
from .grid import BinCounts, GridSpec
from .pair_sums import BinnedPairSums1D

#: C in the first grid's rule |dh/h| ~ C (delta / sigma)^2 (module docstring).
PRIOR_CONSTANT = 10.0

#: The most grid nodes the tolerance rule may ask for.
MAX_GRID_SIZE = 1 << 20

#: The fewest grid nodes the tolerance rule gives.
MIN_GRID_SIZE = 64

#: Relative step of the central difference for D = d log Psi_4 / d log g.
_LOG_STEP = 1e-3


@dataclass(frozen=True)
class BinnedStages:
    """The binned pilot stages (in the units of the data they were computed on)."""

    psi6: float
    g2: float
    psi4: float
    h: float
    grid_size: int
    predicted_error: float  # the first-order bound on |h_binned / h_exact - 1|


def check_tolerance(tolerance, of: str = "h") -> float:
    """The tolerance as a float, checked to lie in (0, 0.1] (``of``: what it is the relative error on, for the
    message).

    Raises
    ------
    ValueError
        If it is not a number in (0, 0.1].
    """
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        raise ValueError(f"tolerance must be a number in (0, 0.1], got {tolerance!r}") from None
    if not (0.0 < value <= 0.1):
        raise ValueError(f"tolerance must be a number in (0, 0.1] (relative error on {of}), got {tolerance!r}")
    return value


def check_grid_size(grid_size) -> int | None:
    """None, or the grid size as an int in [2, MAX_GRID_SIZE].

    Raises
    ------
    ValueError
        If it is not an integer in that range.
    """
    if grid_size is None:
        return None
    if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)) or not (
        2 <= grid_size <= MAX_GRID_SIZE
    ):
        raise ValueError(f"grid_size must be None or an integer in [2, {MAX_GRID_SIZE}], got {grid_size!r}")
    return int(grid_size)


def prior_grid_size(span: float, sigma: float, tolerance: float) -> int:
    """The first grid's size: spacing sigma sqrt(tolerance / PRIOR_CONSTANT) over ``span``.

    Parameters
    ----------
    span : float
        max - min of the data.
    sigma : float
        PLUGIN's scale estimate.
    tolerance : float
        The requested relative error on h.

    Returns
    -------
    int
        Between :data:`MIN_GRID_SIZE` and :data:`MAX_GRID_SIZE`.
    """
    delta = sigma * math.sqrt(tolerance / PRIOR_CONSTANT)
    return int(min(MAX_GRID_SIZE, max(MIN_GRID_SIZE, math.ceil(span / delta) + 1)))


def predicted_relative_error(sums: BinnedPairSums1D, g1: float, g2: float) -> float:
    """(1/5) [e_4(g_2) + |D| e_6(g_1) / 7], the first-order bound on the relative binning error of h.

    Parameters
    ----------
    sums : BinnedPairSums1D
        The binned pair sums.
    g1, g2 : float
        The two pilot bandwidths.

    Returns
    -------
    float
        The predicted |h_binned / h_exact - 1| (module docstring).
    """
    e6 = float(sums.relative_binning_error(6, g1))
    e4 = float(sums.relative_binning_error(4, g2))
    low, high = sums.psi(4, np.array([g2 * (1 - _LOG_STEP), g2 * (1 + _LOG_STEP)]))
    slope = abs(math.log(abs(high / low)) / (math.log1p(_LOG_STEP) - math.log1p(-_LOG_STEP)))
    return 0.2 * (e4 + slope * e6 / 7.0)


def binned_pilot_stages(
    bin_on: Callable[[GridSpec], BinCounts], low: float, high: float, g1: float, sigma: float, *,
    tolerance: float, grid_size: int | None, backend="numpy", n: float | None = None
) -> BinnedStages:
    """PLUGIN's eqs. (16)-(19) on binned pair sums, the grid sized from ``tolerance``.

    Parameters
    ----------
    bin_on : callable
        GridSpec -> the sample's linear-binning counts on it: ``lambda spec: linear_bin(v, spec)``
        for a sample v in memory, one pass over the chunks for data served in chunks
        (:func:`parzen.binned.chunked.chunked_binner`).  Called once, and again for each refinement.
    low, high : float
        Its smallest and largest value (PLUGIN passes it scaled by powers of two).
    g1 : float
        The pilot bandwidth of Psi_6, eq. (15).
    sigma : float
        The scale estimate of eq. (13).
    tolerance : float
        The relative error wanted on h (the grid is refined until the prediction is below it).
    grid_size : int or None
        A fixed grid size (no refinement), or None to size it from ``tolerance``.
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the FFTs (:func:`parzen.binned.pair_sums.counts_autocorrelation`); the
        formulas are the same on all.
    n : float, optional
        The sample size of eqs. (17) and (19), as :func:`stages_from_counts` takes it.

    Returns
    -------
    BinnedStages
    """
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    be = resolve_backend(backend)
    size = grid_size if grid_size is not None else prior_grid_size(high - low, sigma, tolerance)
    while True:
        stages = stages_from_counts(bin_on(GridSpec.covering(low, high, size)), g1, backend=be, n=n)
        if grid_size is not None or stages.predicted_error <= tolerance:
            return stages
        refined = refined_grid_size(size, stages.predicted_error, tolerance, stacklevel=4)
        if refined is None:
            return stages
        size = refined


def stages_from_counts(binned: BinCounts, g1: float, *, backend="numpy", n: float | None = None) -> BinnedStages:
    """PLUGIN's eqs. (16)-(19) on the binned pair sums of 1-D linear-binning counts.

    psi6 = Psi_6(g1), g2 = [-2 K^(4)(0) / (mu_2 psi6 n)]^(1/7), psi4 = Psi_4(g2) and
    h = [R(K) / (mu_2^2 psi4 n)]^(1/5) (paper 000 in docs/statistics.md, eqs. 16-19; Wand & Jones
    1995, section 3.6), with each Psi_r from :meth:`parzen.binned.pair_sums.BinnedPairSums1D.psi`:
    the binned double sum over the counts' total squared, so that weighted counts give the
    weighted Psi_r = g^-(r+1) sum_{i,j} v_i v_j K^(r)((x_i - x_j)/g), v = w / sum w
    (docs/statistics.md, "Weighted data").

    Parameters
    ----------
    binned : BinCounts
        1-D linear-binning counts of the data (in the units of ``g1``), unweighted or weighted
        (:func:`parzen.binned.grid.linear_bin` with ``weights``); they may have been added up
        over chunks of the data (a table read in batches).
    g1 : float
        The pilot bandwidth of Psi_6, eq. (15).
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the FFTs (:func:`parzen.binned.pair_sums.counts_autocorrelation`).
    n : float, optional
        The sample size of eqs. (17) and (19): the counts' total when None (unweighted counts,
        or frequency weights); Kish's effective size for probability weights
        (:func:`parzen.bandwidth.weight_kind.sample_size`).

    Returns
    -------
    BinnedStages
        With the grid's size and :func:`predicted_relative_error`.
    """
    sums = BinnedPairSums1D(binned, backend)
    n = binned.total if n is None else n
    psi6 = float(sums.psi(6, g1))  # eq. (16)
    g2 = (-2.0 * gauss_derivative_at_zero(4) / (GAUSS_MU2 * psi6 * n)) ** (1 / 7)  # eq. (17)
    psi4 = float(sums.psi(4, g2))  # eq. (18)
    h = (GAUSS_RK / (GAUSS_MU2**2 * psi4 * n)) ** 0.2  # eq. (19)
    return BinnedStages(psi6, g2, psi4, h, binned.spec.sizes[0], predicted_relative_error(sums, g1, g2))


def refined_grid_size(size: int, predicted: float, tolerance: float, *, stacklevel: int = 2) -> int | None:
    """The next grid's size where a grid of ``size`` nodes predicts an error above ``tolerance``.

    The binning error falls as the square of the spacing, so the spacing is cut by
    1.1 sqrt(predicted / tolerance) (module docstring).

    Parameters
    ----------
    size : int
        The grid's nodes.
    predicted : float
        Its :func:`predicted_relative_error`, above ``tolerance``.
    tolerance : float
        The relative error wanted on h.
    stacklevel : int
        Of the warning, for the caller's caller.

    Returns
    -------
    int or None
        The refined size (at most :data:`MAX_GRID_SIZE`), or None, with a warning, where ``size``
        is that cap already.
    """
    if size >= MAX_GRID_SIZE:
        warnings.warn(
            f"binned PLUGIN: the grid is capped at {MAX_GRID_SIZE} nodes, where the predicted relative "
            f"error on h is {predicted:.2g} > tolerance {tolerance:g} (data with a long range for their "
            'spread); use method="exact" or a larger tolerance',
            stacklevel=stacklevel + 1,
        )
        return None
    return min(MAX_GRID_SIZE, math.ceil((size - 1) * 1.1 * math.sqrt(predicted / tolerance)) + 1)
