"""ISJ: the improved Sheather-Jones bandwidth of Botev, Grotowski & Kroese (2010) for 1-D data.

Botev, Grotowski & Kroese, "Kernel density estimation via diffusion", Annals of Statistics 38(5),
2916-2957 (2010), section 3 and the authors' reference code: on the unit interval (the grid's
range [lo, hi] mapped to [0, 1]) the squared bandwidth t = h^2 / (hi - lo)^2 is the fixed point

    t = xi gamma_l(t),   l = 7,

where gamma_l (the paper's gamma^[l]) chains l - 1 plug-in steps without a normal reference.
With the data linearly binned on m grid nodes (counts c_k summing to one) and their type-II DCT
a_j = 2 sum_k c_k cos(pi j (2k + 1) / (2m)), the norms of the derivatives of the density
smoothed to time t are

    ||f^(s)||^2(t) = (1/2) pi^(2s) sum_{j >= 1} j^(2s) a_j^2 exp(-j^2 pi^2 t),

and, from s = l down to 2, each step turns the previous norm into the time of the next one:

    t_s = [2 c_s K_s / (N ||f^(s+1)||^2)]^(2 / (3 + 2s)),  c_s = (1 + 2^-(s + 1/2)) / 3,
    K_s = 1 * 3 * ... * (2s - 1) / sqrt(2 pi),

ending with xi gamma_l(t) = [2 N sqrt(pi) ||f''||^2(t_2)]^(-2/5), the AMISE-optimal time.  The
root is found by Brent's method on [0, b], b doubled from the authors' starting value
1e-11 + 0.01 (min(max(N, 50), 1050) - 50) / 1000 until the bracket holds a sign change; where b
reaches 1 (a bandwidth as wide as the grid) there is no fixed point and :func:`isj` says so.
h = sqrt(t*) (hi - lo).

The grid: ``grid_size`` nodes (default 1024, KDEpy's) over the data's range widened by
``padding`` times that range on each side (default 0.5, KDEpy's relative padding).  N: the number
of distinct values (``count="distinct"``, the authors' and KDEpy's code: discretised data then
do not drive t to the resolution of the rounding) or the number of rows (``count="rows"``, the
paper's N).  docs/departures.md, item 17, lists where this differs from KDEpy 1.1.12.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft, optimize

from .._validate import as_data, choose
from ..binned.chunked import checked_moments, chunked_binner, is_weighted
from ..binned.grid import GridSpec, linear_bin
from ..binned.source import ChunkedData, as_chunked
from .method import report

#: l, the number of stages of the fixed-point map (the paper's recommended 7: 5 plug-in steps).
STAGES = 7

#: What N counts: the distinct values (the authors' code) or the rows (the paper).
COUNTS = ("distinct", "rows")

#: The default number of grid nodes (KDEpy's; the authors' code uses 2^14).
DEFAULT_GRID_SIZE = 1024


def isj(x, *, grid_size: int = DEFAULT_GRID_SIZE, padding: float = 0.5, count: str = "distinct",
        progress: bool = False) -> float:
    """The improved Sheather-Jones bandwidth (Botev, Grotowski & Kroese 2010) of a 1-D sample.

    The fixed point t* of t = xi gamma_7(t) on the binned DCT of the data (module docstring;
    docs/statistics.md, "ISJ"), h = sqrt(t*) (hi - lo).  No normal reference enters, so it suits
    multimodal data; it is the bandwidth of a Gaussian kernel, in data units.

    Parameters
    ----------
    x : array_like of shape (n,) or (n, 1), or ChunkedData
        The univariate sample (NumPy, pandas or polars), or one unweighted column served in chunks
        (then ``count="rows"``: two passes, for the range and the counts).
    grid_size : int, default 1024
        Nodes of the grid the data are linearly binned on (at least 64).
    padding : float, default 0.5
        The grid covers [min - padding R, max + padding R], R = max - min (non-negative).
    count : {"distinct", "rows"}, default "distinct"
        N in the fixed-point equation: the number of distinct values (the authors' and KDEpy's
        code) or of rows (the paper).
    progress : bool, default False
        Show a progress bar over the passes of data served in chunks.

    Returns
    -------
    float
        h in data units.

    Raises
    ------
    ValueError
        If x is not one column of at least two distinct finite values, is served in chunks with
        ``count="distinct"`` or with weights, an option is invalid, or the fixed-point equation has no root below t = 1 (too few data:
        use ``plugin`` or ``silverman``).
    """
    if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)) or grid_size < 64:
        raise ValueError(f"grid_size must be an integer of at least 64, got {grid_size!r}")
    if not (isinstance(padding, (int, float)) and math.isfinite(padding) and padding >= 0):
        raise ValueError(f"padding must be a non-negative number (a fraction of the data's range), got {padding!r}")
    choose(count, COUNTS, what="count")
    chunked = as_chunked(x)
    if chunked is not None:
        rows, low, high, bin_on = _chunked_column(chunked, count, progress)
        n = rows
    else:
        data = as_data(x, name="x")
        if data.d != 1:
            raise ValueError(f"ISJ is univariate: x has {data.d} columns; select one column, or use lscv_H / "
                             "normal_scale for multivariate data")
        values = data.values[:, 0]
        rows, low, high = values.size, float(values.min()), float(values.max())
        n = len(np.unique(values)) if count == "distinct" else rows

        def bin_on(spec: GridSpec) -> np.ndarray:
            return linear_bin(values, spec, backend="numpy").counts
    if high <= low:
        raise ValueError("ISJ needs at least two distinct values, but every value of x is the same")
    span = high - low
    spec = GridSpec.covering(low - padding * span, high + padding * span, int(grid_size))
    counts = bin_on(spec)
    a = fft.dct(counts / counts.sum(), type=2)
    t = fixed_point_time(a[1:] ** 2, n)
    report("isj", "binned", n=rows, grid_size=int(grid_size))
    return math.sqrt(t) * (spec.highs[0] - spec.lows[0])


def _chunked_column(data: ChunkedData, count: str, progress: bool):
    """(rows, low, high, spec -> counts) of one unweighted column served in chunks: two passes."""
    if count == "distinct":
        raise ValueError(f"isj counts distinct values, which {data.description}, read in chunks, cannot give in one "
                         "pass; pass count='rows' (the paper's N), load the column into an array, or use "
                         "bandwidth='plugin'")
    if data.d != 1:
        raise ValueError(f"ISJ is univariate: {data.description} has {data.d} columns; select one column")
    moments = checked_moments(data, progress=progress)
    if is_weighted(moments):
        raise ValueError(f"isj is defined for unweighted data and {data.description} carries weights; use "
                         "bandwidth='scott', 'silverman' or 'normal_scale'")
    bin_on = chunked_binner(data, np.ones(1), progress=progress)
    return moments.rows, float(moments.lows[0]), float(moments.highs[0]), lambda spec: bin_on(spec).counts


def fixed_point_time(a2: np.ndarray, n: int) -> float:
    """t*, the root of t - xi gamma_7(t) on the unit interval (module docstring).

    Parameters
    ----------
    a2 : ndarray of shape (m - 1,)
        a_j^2, j = 1, ..., m - 1: the squared type-II DCT (scipy's unnormalised one) of counts
        summing to one on m grid nodes.
    n : int
        N of the fixed-point equation.

    Returns
    -------
    float
        t* = h^2 / (grid range)^2.

    Raises
    ------
    ValueError
        If no root is found below t = 1.
    """
    j2 = np.arange(1, a2.size + 1, dtype=np.float64) ** 2

    def excess(t: float) -> float:
        return t - _xi_gamma(t, j2, a2, n)

    clipped = min(max(n, 50), 1050)
    upper = 1e-11 + 0.01 * (clipped - 50) / 1000  # the authors' first bracket
    while not excess(upper) >= 0:
        upper *= 2.0
        if upper >= 1.0:
            raise ValueError(
                f"ISJ: the fixed-point equation t = xi gamma_7(t) has no root below t = 1 (N = {n}): the data "
                "are too few or too discrete for the method; use bandwidth='plugin' (Sheather-Jones, with a normal "
                "reference) or 'silverman'"
            )
    return float(optimize.brentq(excess, 0.0, upper))


def _xi_gamma(t: float, j2: np.ndarray, a2: np.ndarray, n: int) -> float:
    """xi gamma_7(t): the AMISE-optimal time from ||f^(7)||^2(t) through 5 plug-in steps."""
    norm = _derivative_norm(STAGES, t, j2, a2)
    for s in range(STAGES - 1, 1, -1):
        if not norm > 0:  # underflow far beyond the data's scale: no AMISE-optimal time there
            return math.inf
        k_s = math.prod(range(1, 2 * s, 2)) / math.sqrt(2.0 * math.pi)
        c_s = (1.0 + 0.5 ** (s + 0.5)) / 3.0
        time = (2.0 * c_s * k_s / (n * norm)) ** (2.0 / (3.0 + 2.0 * s))
        norm = _derivative_norm(s, time, j2, a2)
    if not norm > 0:
        return math.inf
    return float((2.0 * n * math.sqrt(math.pi) * norm) ** -0.4)


def _derivative_norm(s: int, t: float, j2: np.ndarray, a2: np.ndarray) -> float:
    """||f^(s)||^2 at time t: (1/2) pi^(2s) sum_j j^(2s) a_j^2 exp(-j^2 pi^2 t)."""
    return 0.5 * math.pi ** (2 * s) * float(np.sum(j2**s * a2 * np.exp(-j2 * (math.pi**2 * t))))
