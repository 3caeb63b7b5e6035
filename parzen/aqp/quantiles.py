"""Quantiles (MEDIAN, QUANTILE_CONT, PERCENTILE_CONT ... WITHIN GROUP) from the kernel distribution function.

DuckDB's QUANTILE_CONT(x, p) of n non-NULL values interpolates between order statistics:
r = (n - 1) p, x_(floor r) + (r - floor r) (x_(ceil r) - x_(floor r)) (0-based).  Two routes:

- **the gridded form** (:func:`from_grid`; a whole-table query without predicates): the table's
  exact C(t) = rows with x <= t at the grid points.  The order statistic x_(j) is the t with
  C(t) = j + 1/2 on the grid's interpolant, rounded to an integer for integer columns (whose points
  k + 1/2 make it exact), and the first point with C >= j + 1 for step grids (discrete columns).
  The points where C crosses j + 1 bracket x_(j) for certain, which gives a guaranteed interval.
- **the sample** (:func:`from_sample`; predicates or GROUP BY): the t where the sample's kernel
  distribution function F(t) = sum_i w_i P_i(box) M_0(x_i; (-inf, t] within x's box) reaches p F(inf),
  by bisection (60 halvings of the rows' span; each step one compiled pass, :func:`weighted_cdf`).  Its standard error by the usual linearisation of an
  estimating equation: se(sum_i w_i (M_i(t) - p M_i(inf))) / F'(t), F' by a central difference
  (Serfling 1980, "Approximation Theorems of Mathematical Statistics", section 2.3).  The interval
  also spans Woodruff's, F's inverse at p -+ z se_p with se_p = se(sum_i w_i (M_i(t) - p M_i(inf))) /
  F(inf) (Woodruff 1952, "Confidence intervals for medians and other position measures", JASA 47,
  635-646), which holds where F is a step function (point masses: F'(t) is then no slope).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from ._box import row_box
from .grid import ColumnGrid


def from_grid(grid: ColumnGrid, rows: int, p: float, integer: bool) -> tuple[float, float, float]:
    """QUANTILE_CONT(x, p) of the ``rows`` non-NULL values from the exact C(t) of the gridded form.

    Parameters
    ----------
    grid : ColumnGrid
        The column's gridded form (C exact at its points).
    rows : int
        The column's non-NULL rows (its COUNT).
    p : float
        The fraction, in [0, 1].
    integer : bool
        The column holds integers (order statistics are rounded).

    Returns
    -------
    (float, float, float)
        The quantile and an interval that holds it for certain (the grid cells bracketing its order statistics).
    """
    if rows <= 0:
        return math.nan, math.nan, math.nan
    position = (rows - 1) * p
    below, above = math.floor(position), math.ceil(position)
    low_stat, high_stat = _order_statistic(grid, below, integer), _order_statistic(grid, above, integer)
    share = position - below
    return tuple(a + share * (b - a) for a, b in zip(low_stat, high_stat))  # type: ignore[return-value]


def _order_statistic(grid: ColumnGrid, j: int, integer: bool) -> tuple[float, float, float]:
    """x_(j) (0-based) and the grid points that bracket it: C(t_{k-1}) < j + 1 <= C(t_k)."""
    k = int(np.searchsorted(grid.count, j + 1, side="left"))
    k = min(k, grid.points.size - 1)
    upper = float(grid.points[k])
    lower = float(grid.points[k - 1]) if k > 0 else upper
    if grid.steps:
        return upper, lower, upper
    target = j + 0.5
    a, b = lower, upper
    for _ in range(60):  # C's interpolant crosses j + 1/2 inside the cell
        middle = 0.5 * (a + b)
        if grid.cumulative(middle)[0] < target:
            a = middle
        else:
            b = middle
    value = 0.5 * (a + b)
    if integer:
        value = float(round(value))
        lower, upper = math.floor(lower + 0.5), math.ceil(upper - 0.5)  # points k + 1/2 bracket integers
    return value, lower, upper


def from_sample(cdf, p: float, span: tuple[float, float], groups: int, integer: bool = False) -> np.ndarray:
    """Per answer row g, QUANTILE_CONT from the kernel distribution function F_g, by bisection.

    With N_g = F_g(inf) (the rows it estimates) and r = (N_g - 1) p, as DuckDB: the order statistic
    x_(j) is the t where F_g(t) = j + 1/2 (rounded for integer columns, as :func:`from_grid`), and
    the answer x_(floor r) + (r - floor r) (x_(ceil r) - x_(floor r)); for a column that is not
    integer, simply the t where F_g(t) = r + 1/2 (the two differ by a fraction of a row's spacing).

    Parameters
    ----------
    cdf : callable
        numpy.ndarray t (one per answer row) -> numpy.ndarray F_g(t_g).
    p : float
        The fraction.
    span : (float, float)
        Where every t lies (the rows' values +- the kernels' reach).
    groups : int
        Answer rows.
    integer : bool
        The column holds integers.

    Returns
    -------
    numpy.ndarray
        The quantile per answer row (NaN where F(inf) is 0).
    """
    total = cdf(np.full(groups, math.inf))
    position = np.maximum(total - 1.0, 0.0) * p

    def solve(target: np.ndarray) -> np.ndarray:
        low, high = np.full(groups, float(span[0])), np.full(groups, float(span[1]))
        for _ in range(60):
            middle = 0.5 * (low + high)
            below = cdf(middle) < target
            low, high = np.where(below, middle, low), np.where(below, high, middle)
        return 0.5 * (low + high)

    if integer:
        below, above = np.floor(position), np.ceil(position)
        first = np.round(solve(below + 0.5))
        second = first if np.array_equal(below, above) else np.round(solve(above + 0.5))
        value = first + (position - below) * (second - first)
    else:
        value = solve(position + 0.5)
    return np.where(total > 0, value, np.nan)


def kernel_cdf(model, x: np.ndarray, a: float, b: float, t: np.ndarray, scale) -> np.ndarray:
    """Per row: the mass of its kernel in [a, min(t, b)] (``t`` one per row; reflected at the column's
    lower edge as in :mod:`parzen.aqp.estimate`; NaN rows 0)."""
    upper = np.minimum(t, b)
    valid = ~np.isnan(x) & (upper >= a)
    if model.bandwidth == 0.0:
        return (valid & (x >= a) & (x <= upper)).astype(np.float64)
    h = model.bandwidth * np.asarray(scale, dtype=np.float64)
    centre = np.where(np.isnan(x), 0.0, x)
    mass = special.ndtr((upper - centre) / h) - special.ndtr((a - centre) / h)
    if model.lower is not None:
        mirrored = 2.0 * model.lower - centre
        mass = mass + special.ndtr((upper - mirrored) / h) - special.ndtr((a - mirrored) / h)
    return np.where(valid, mass, 0.0)


@njit(cache=True)
def weighted_cdf(x, weight, h, group, a, b, t, lower, reflect, reach, groups):
    """Per answer row g: sum over its rows i of weight_i times the mass of row i's kernel (bandwidth
    h_i, reflected at ``lower`` if ``reflect``) in [a, min(t_g, b)]: F_g(t_g) of :func:`from_sample`,
    compiled (the kernel integrals of :func:`parzen.aqp._box.row_box`: a tabulated Phi, rows beyond
    ``reach`` bandwidths of the ends skipped)."""
    out = np.zeros(groups)
    for i in range(x.size):
        g = group[i]
        upper = min(t[g], b)
        if weight[i] == 0.0 or upper < a:
            continue
        mass, _ = row_box(x[i], a, upper, h[i], lower, reflect, reach, False)
        out[g] += weight[i] * mass
    return out
