"""The passes the selectors and :class:`parzen.KDE` make over data served in chunks.

Every pass is one :meth:`parzen.binned.source.ChunkedData.reduce` of a summary that adds over
chunks, so the same code serves an array in chunks, a Parquet dataset, a DuckDB table or a
cluster's partitions:

- :func:`checked_moments`: rows, total weight, range, mean and scatter (:class:`Moments`), with
  the checks :func:`parzen._validate.as_data` makes of an array (enough rows, no constant column);
- :func:`chunked_binner`: linear-binning counts on a grid given in the units the statistics
  work in (the data divided by powers of two, :func:`parzen._validate.standardised`), binned in the
  data's own units -- the same numbers, since dividing by 2^k rounds nothing;
- :func:`binned_quantiles`: quantiles from the counts on a fine grid, within one grid spacing;
- :func:`weight_squares`: sum of w^2 (Kish's effective sample size of weighted data);
- :func:`chunked_density`: the binned KDE (a pilot pass for the Gaussian's grid, then the counts);
- :func:`chunked_pair_weights`: binned LSCV's lag weights (counts and diagonal moments D(e),
  both additive, of the rows in the frame that spheres them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import linalg

from .._validate import power_of_two
from .density import BinnedDensity, density_from_counts, grid_over
from .grid import BinCounts, GridSpec, linear_bin
from .lscv import BinnedPairWeights, _diagonal_moments, pair_weights_grid
from .source import Chunk, ChunkedData, Moments, bin_chunk

#: Intervals of the grid :func:`binned_quantiles` bins on: quantiles within (max - min) / 2^16.
QUANTILE_INTERVALS = 1 << 16


def checked_moments(data: ChunkedData, *, min_rows: int = 2, progress: bool = False) -> Moments:
    """The data's :class:`Moments`, one pass, checked as an array would be.

    Parameters
    ----------
    data : ChunkedData
        The data.
    min_rows : int, default 2
        The fewest rows (without NULLs) accepted.
    progress : bool
        Show a progress bar over the rows.

    Returns
    -------
    Moments

    Raises
    ------
    ValueError
        For fewer than ``min_rows`` rows without NULLs, a total weight of zero, or a constant
        column (naming it).
    """
    moments = data.reduce(Moments.of, what="moments of", progress=progress)
    if moments.rows < min_rows:
        nulls = f" ({moments.null_rows} rows with a NULL left out)" if moments.null_rows else ""
        raise ValueError(f"{data.description} has {moments.rows} row(s) without NULLs{nulls}; "
                         f"this needs at least {min_rows}")
    if not moments.weight > 0:
        raise ValueError(f"the weights of {data.description} sum to zero: there is no density to estimate")
    flat = [c for c, low, high in zip(data.columns, moments.lows, moments.highs) if not high > low]
    if flat:
        raise ValueError(f"column(s) {', '.join(map(repr, flat))} of {data.description} are constant; "
                         "a density needs varying data: drop those columns")
    return moments


def is_weighted(moments: Moments) -> bool:
    """Whether the rows carry weights other than 1 (the total weight is not the row count)."""
    return moments.weight != moments.rows


def units_of(moments: Moments) -> np.ndarray:
    """(d,) the powers of two the statistics divide each column by: those of
    :func:`parzen._validate.standardised`, :func:`power_of_two` of max - min."""
    return power_of_two(moments.highs - moments.lows)


def chunked_binner(data: ChunkedData, units, *, backend="auto", progress: bool = False
                   ) -> Callable[[GridSpec], BinCounts]:
    """A function spec -> counts of the data divided by ``units``, one pass each call.

    The grid is scaled by ``units`` (powers of two) and the chunks binned in the data's units:
    each row's position in its cell, and so every count, is the same as for the divided data.

    Parameters
    ----------
    data : ChunkedData
        The data.
    units : array_like of shape (d,)
        Powers of two (:func:`units_of`).
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins each chunk.
    progress : bool
        Show a progress bar over each pass.

    Returns
    -------
    callable
        GridSpec (in the divided units) -> BinCounts on it.
    """
    scale = np.asarray(units, dtype=np.float64)

    def bin_on(spec: GridSpec) -> BinCounts:
        in_data_units = GridSpec(tuple((np.asarray(spec.lows) * scale).tolist()),
                                 tuple((np.asarray(spec.highs) * scale).tolist()), spec.sizes)
        counts = data.reduce(partial(bin_chunk, spec=in_data_units, backend=backend), what="binning", progress=progress)
        return BinCounts(spec, counts.counts)

    return bin_on


def binned_quantiles(data: ChunkedData, moments: Moments, probs, *, axis: int = 0, progress: bool = False
                     ) -> np.ndarray:
    """Quantiles of one column from its linear-binning counts: within one grid spacing.

    The column is binned on :data:`QUANTILE_INTERVALS` + 1 nodes g_k over [min, max], spacing
    delta.  Every row at or below g_k gives all its weight to nodes <= k and no row above
    g_{k+1} gives any, so the cumulative count C_k lies between F(g_k) and F(g_{k+1}), F the
    (weighted) count of rows at or below.  The node g_k where C first reaches the weight t of a
    quantile has F(g_{k-1}) < t <= F(g_{k+1}): the quantile lies within delta of g_k (up to the
    rounding of the counts' sums).  Unweighted, the quantile is NumPy's default ("linear"):
    order statistics j = floor(p (n - 1)) and j + 1 (t = j + 1, j + 2), interpolated as NumPy
    does, so the same bound holds; weighted, t = p W, the weighted empirical quantile.

    Parameters
    ----------
    data : ChunkedData
        The data.
    moments : Moments
        Its moments (:func:`checked_moments`).
    probs : array_like
        Probabilities in [0, 1].
    axis : int, default 0
        The column.
    progress : bool
        Show a progress bar over the pass.

    Returns
    -------
    numpy.ndarray
        The quantiles, each within (max - min) / QUANTILE_INTERVALS of the exact one.
    """
    lows = moments.lows.copy()
    highs = moments.highs.copy()
    sizes = np.full(data.d, 2)
    sizes[axis] = QUANTILE_INTERVALS + 1
    spec = GridSpec.covering(lows, highs, sizes)
    counts = data.reduce(partial(bin_chunk, spec=spec), what="quantiles of", progress=progress).counts
    other = tuple(a for a in range(data.d) if a != axis)
    cumulative = np.cumsum(counts.sum(axis=other) if other else counts)
    nodes = spec.nodes(axis)
    slack = 1e-9 * cumulative[-1]

    def node_reaching(target: float) -> float:
        return float(nodes[min(int(np.searchsorted(cumulative, target - slack)), nodes.size - 1)])

    out = []
    for p in np.atleast_1d(np.asarray(probs, dtype=np.float64)):
        if is_weighted(moments):
            out.append(node_reaching(p * moments.weight))
            continue
        position = p * (moments.rows - 1)
        j = math.floor(position)
        below, above = node_reaching(j + 1), node_reaching(min(j + 2, moments.rows))
        out.append(below + (position - j) * (above - below))
    return np.asarray(out)


def weight_squares(chunk: Chunk) -> float:
    """sum_i w_i^2 of one chunk (a summary for :meth:`ChunkedData.reduce`; rows count 1 unweighted).

    Parameters
    ----------
    chunk : Chunk
        The rows.

    Returns
    -------
    float
    """
    return float(len(chunk.values)) if chunk.weights is None else float(np.dot(chunk.weights, chunk.weights))


def weighted_covariance(data: ChunkedData, moments: Moments, *, progress: bool = False) -> tuple[np.ndarray, float]:
    """The covariance and the effective number of rows, as the rules of thumb take them.

    Unweighted: S / (n - 1) and n.  Weighted (one more pass, for sum w^2): NumPy's
    ``np.cov(aweights=w, ddof=1)`` = S / (W - sum w^2 / W) and Kish's effective sample size
    W^2 / sum w^2, as :func:`parzen.bandwidth.rules.normal_scale` computes them for an array.

    Parameters
    ----------
    data : ChunkedData
        The data.
    moments : Moments
        Its moments.
    progress : bool
        Show a progress bar over the pass.

    Returns
    -------
    covariance : numpy.ndarray
        (d, d).
    n : float
        The effective number of rows.
    """
    if not is_weighted(moments):
        return moments.covariance, float(moments.rows)
    squares = data.reduce(weight_squares, what="weights of", progress=progress)
    total = moments.weight
    return moments.scatter / (total - squares / total), total * total / squares


def chunked_density(data: ChunkedData, moments: Moments, H: np.ndarray, kernel: str = "gaussian", *,
                    tolerance: float = 1e-4, grid_size=None, progress: bool = False) -> BinnedDensity:
    """The binned density estimate of data served in chunks (:func:`parzen.binned.density_on_grid`).

    The grid covers the range from ``moments`` widened by the kernel's reach, its spacing chosen
    from ``tolerance`` as for an array (:func:`parzen.binned.density.grid_over`; the Gaussian's
    pilot estimate bins every row, one pass, where an array's bins at most
    :data:`parzen.binned.density.PILOT_SAMPLES` of them), then the rows are binned on it (one pass)
    and the counts convolved with the kernel.

    Parameters
    ----------
    data : ChunkedData
        The data.
    moments : Moments
        Their moments (:func:`checked_moments`).
    H : numpy.ndarray
        (d, d) bandwidth matrix.
    kernel : str, default "gaussian"
        One of ``parzen.kernels.KERNELS``.
    tolerance, grid_size
        As in :func:`parzen.binned.density_on_grid`.
    progress : bool
        Show a progress bar over each pass.

    Returns
    -------
    BinnedDensity

    Raises
    ------
    ValueError
        As :func:`parzen.binned.density_on_grid`.
    """
    def pilot_counts(spec: GridSpec) -> np.ndarray:
        return data.reduce(partial(bin_chunk, spec=spec), what="pilot binning", progress=progress).counts

    spec = grid_over(moments.lows, moments.highs, H, kernel, pilot_counts=pilot_counts, tolerance=tolerance,
                     grid_size=grid_size)
    bins = data.reduce(partial(bin_chunk, spec=spec), what="binning", progress=progress)
    return density_from_counts(bins, H, kernel, tolerance=tolerance)


@dataclass(frozen=True)
class PairWeightsPart:
    """Linear-binning counts and the diagonal moments D(e) of some rows: the additive parts of
    :class:`parzen.binned.lscv.BinnedPairWeights` (its module docstring: D(e) sums over rows)."""

    counts: np.ndarray
    diagonal: dict[tuple[int, ...], float]

    def __add__(self, other: PairWeightsPart) -> PairWeightsPart:
        """The parts of two disjoint sets of rows binned on one grid."""
        return PairWeightsPart(self.counts + other.counts,
                               {e: v + other.diagonal[e] for e, v in self.diagonal.items()})

    @classmethod
    def of(cls, chunk: Chunk, *, spec: GridSpec, units: np.ndarray, mean: np.ndarray, whiten: np.ndarray
           ) -> PairWeightsPart:
        """The parts of one chunk's rows y = W^-1 (x / units - mean), W = ``whiten`` (a summary
        for :meth:`ChunkedData.reduce`)."""
        Y = _framed(chunk, units, mean, whiten)
        return cls(linear_bin(Y, spec).counts, _diagonal_moments(Y, spec))


def _framed(chunk: Chunk, units: np.ndarray, mean: np.ndarray, whiten: np.ndarray) -> np.ndarray:
    """The rows W^-1 (x / units - mean), as the in-memory LSCV whitens the centred data."""
    return linalg.solve_triangular(whiten, (chunk.values / units - mean).T, lower=True).T


def _framed_moments(chunk: Chunk, *, units: np.ndarray, mean: np.ndarray, whiten: np.ndarray) -> Moments:
    """The :class:`Moments` (for the range) of one chunk's rows in the frame."""
    return Moments.of(Chunk(_framed(chunk, units, mean, whiten), null_rows=chunk.null_rows))


def chunked_pair_weights(data: ChunkedData, moments: Moments, whiten: np.ndarray, frame: np.ndarray, *,
                         h_ref: float, tolerance: float, grid_size=None, shrink_to_fit: bool = False,
                         max_sd: float | None = None, progress: bool = False) -> BinnedPairWeights:
    """The binned LSCV lag weights of data served in chunks (:func:`parzen.binned.lscv.bin_pair_weights`).

    The rows are y = W^-1 (x / u - mean), u the powers of two of :func:`units_of` and W =
    ``whiten`` (the factor of the standardised data's covariance for LSCV_h, of the pre-whitening
    P for LSCV_H): their range comes from ``moments`` where W is diagonal (dividing by a positive
    number keeps the order, so the extremes map to the extremes exactly) and from one pass
    otherwise; where the rule's grid is finer than a pilot grid, one pass bins on the pilot grid for
    the error estimate that may coarsen it (:func:`parzen.binned.lscv.pair_weights_grid`); then
    one pass bins them and sums D(e) (:class:`PairWeightsPart`).

    Parameters
    ----------
    data : ChunkedData
        The data.
    moments : Moments
        Their moments.
    whiten : numpy.ndarray
        (d, d) lower-triangular W, in the units of the standardised data.
    frame : numpy.ndarray
        (d, d) the frame :class:`BinnedPairWeights` solves its M against (L for LSCV_h: W itself;
        the identity for LSCV_H, whose M are in the pre-whitened frame).
    h_ref, tolerance, grid_size, shrink_to_fit, max_sd
        As in :func:`parzen.binned.lscv.bin_pair_weights`.
    progress : bool
        Show a progress bar over each pass.

    Returns
    -------
    BinnedPairWeights
    """
    units = units_of(moments)
    mean = moments.mean / units
    options = {"units": units, "mean": mean, "whiten": whiten}
    if np.count_nonzero(whiten - np.diag(np.diag(whiten))) == 0:
        lows = (moments.lows / units - mean) / np.diag(whiten)
        highs = (moments.highs / units - mean) / np.diag(whiten)
    else:
        framed = data.reduce(partial(_framed_moments, **options), what="range in the frame of", progress=progress)
        lows, highs = framed.lows, framed.highs

    def pilot(spec: GridSpec) -> tuple[np.ndarray, dict]:  # one more pass, on the pilot grid
        part = data.reduce(partial(PairWeightsPart.of, spec=spec, **options), what="pilot binning", progress=progress)
        return part.counts, part.diagonal

    spec, max_lag = pair_weights_grid(lows, highs, h_ref=h_ref, tolerance=tolerance, grid_size=grid_size,
                                      shrink_to_fit=shrink_to_fit, max_sd=max_sd, pilot=pilot, rows=moments.rows)
    parts = data.reduce(partial(PairWeightsPart.of, spec=spec, **options), what="binning", progress=progress)
    return BinnedPairWeights(frame, spec, parts.counts, parts.diagonal, moments.rows, max_lag)
