"""The gridded form of a synopsis: cumulative counts and sums of each column on a grid.

For a numeric column x the grid keeps at points t_0 < ... < t_{G-1}

    C(t) = rows of the table with x <= t,   S(t) = their SUM(x),      (exact: one pass over the table)
    c(t) = sum_i w_i K_i(t)                  (the synopsis's kernel density there, rows per unit),

with w_i = rows of the sampled row's stratum / rows drawn from it and K_i its kernel (Gaussian of
bandwidth h_i; reflected at the column's lower edge L when it has one, as in
:mod:`parzen.aqp.estimate`).  Between grid points C and S follow by cubic Hermite interpolation
with slopes c and t c (the density's shape between exact values), and

    COUNT(*) WHERE a <= x <= b = C(b) - C(a),   SUM(x) = S(b) - S(a),   AVG(x) = their ratio,

for [a, b] from :meth:`parzen.aqp.estimate.ColumnModel.interval` (continuity correction and the
reflection edge applied there).  Read off in microseconds; bytes (4 float64 per grid point and
column) do not depend on the table's size.  Where a query's ends are grid points the answer is
exact, and the points are chosen so that they mostly are:

- discrete columns (point masses) keep their distinct sampled values and the table's minimum and
  maximum (a step function);
- integer columns, whose ends are always k +- 1/2 (the continuity correction), get every k + 1/2
  from min - 1/2 to max + 1/2 when there are at most as many as grid points, else the points
  below rounded to the nearest k + 1/2;
- continuous columns: half evenly spaced over the table's range +- 6 bandwidths, half at weighted
  sample quantiles (dense where the data are), and L.

The kernel integrals of the sample at the points (:func:`column_grid`) are what C and S were
before the table's pass (:func:`table_cumulative`) replaced them; a synopsis built without the
table keeps them (the same integrals as the sample form).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ._box import _INV_SQRT_2PI, _phi_cdf
from .estimate import _REACH, ColumnModel

#: Boxes whose answers a ColumnGrid keeps (:meth:`ColumnGrid.box`).
BOXES_KEPT = 4096
#: Grid points per column unless the build asks otherwise.
GRID_POINTS = 2048


@dataclass(frozen=True)
class ColumnGrid:
    """C, S and c = C' at ``points`` (continuous columns) or C, S at distinct values (``steps``)."""

    points: np.ndarray
    count: np.ndarray
    moment: np.ndarray
    density: np.ndarray  # empty for a step function
    steps: bool
    _boxes: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # (a, b) -> box(a, b)

    def cumulative(self, t: float, *, below: bool = False) -> tuple[float, float]:
        """(C(t), S(t)); for a step function ``below`` excludes a value equal to t (C(t-))."""
        p = self.points
        if self.steps:
            k = int(np.searchsorted(p, t, side="left" if below else "right")) - 1
            return (0.0, 0.0) if k < 0 else (float(self.count[k]), float(self.moment[k]))
        if t <= p[0]:
            return float(self.count[0]), float(self.moment[0])
        if t >= p[-1]:
            return float(self.count[-1]), float(self.moment[-1])
        k = int(np.searchsorted(p, t, side="right")) - 1
        t0, t1 = p[k], p[k + 1]
        c0, c1 = self.density[k], self.density[k + 1]
        return (_hermite(t, t0, t1, self.count[k], self.count[k + 1], c0, c1),
                _hermite(t, t0, t1, self.moment[k], self.moment[k + 1], t0 * c0, t1 * c1))

    def slope(self, t: np.ndarray) -> np.ndarray:
        """C'(t) of the cubic Hermite interpolant :meth:`cumulative` uses, for t within the points
        (a quadratic on each cell; equal to ``density`` at the points)."""
        p = self.points
        k = np.clip(np.searchsorted(p, t, side="right") - 1, 0, p.size - 2)
        t0, t1 = p[k], p[k + 1]
        width = t1 - t0
        u = (t - t0) / width
        return ((6 * u * u - 6 * u) * (self.count[k] - self.count[k + 1]) / width
                + (3 * u * u - 4 * u + 1) * self.density[k] + (3 * u * u - 2 * u) * self.density[k + 1])

    def box(self, a: float, b: float) -> tuple[float, float]:
        """(rows, SUM(x)) with a <= x <= b; the last :data:`BOXES_KEPT` boxes asked for are kept, as
        histograms and brushes ask for the same bins again."""
        key = (a, b)
        found = self._boxes.get(key)
        if found is not None:
            return found
        if b < a:
            return 0.0, 0.0
        count_b, moment_b = self.cumulative(b)
        count_a, moment_a = self.cumulative(a, below=True)
        found = max(count_b - count_a, 0.0), moment_b - moment_a
        if len(self._boxes) >= BOXES_KEPT:
            self._boxes.clear()
        self._boxes[key] = found
        return found

    def boxes(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`box` of many boxes [a_k, b_k] at once, the same operations elementwise (so the same
        numbers), for histograms' bins.

        Parameters
        ----------
        a, b : numpy.ndarray
            The boxes' ends.

        Returns
        -------
        rows, total : numpy.ndarray
            Per box, its rows and SUM(x).
        """
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        count_b, moment_b = self._cumulatives(b, below=False)
        count_a, moment_a = self._cumulatives(a, below=True)
        empty = b < a
        rows = np.where(empty, 0.0, np.maximum(count_b - count_a, 0.0))
        return rows, np.where(empty, 0.0, moment_b - moment_a)

    def _cumulatives(self, t: np.ndarray, *, below: bool) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cumulative` at every t."""
        p = self.points
        if self.steps:
            k = np.searchsorted(p, t, side="left" if below else "right") - 1
            safe = np.maximum(k, 0)
            return np.where(k < 0, 0.0, self.count[safe]), np.where(k < 0, 0.0, self.moment[safe])
        k = np.clip(np.searchsorted(p, t, side="right") - 1, 0, p.size - 2)
        t0, t1 = p[k], p[k + 1]
        c0, c1 = self.density[k], self.density[k + 1]
        count = _hermite_array(t, t0, t1, self.count[k], self.count[k + 1], c0, c1)
        moment = _hermite_array(t, t0, t1, self.moment[k], self.moment[k + 1], t0 * c0, t1 * c1)
        low, high = t <= p[0], t >= p[-1]
        count = np.where(low, self.count[0], np.where(high, self.count[-1], count))
        moment = np.where(low, self.moment[0], np.where(high, self.moment[-1], moment))
        return count, moment

    def arrays(self) -> dict[str, np.ndarray]:
        return {"points": self.points, "count": self.count, "moment": self.moment, "density": self.density}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ColumnGrid:
        return cls(arrays["points"], arrays["count"], arrays["moment"], arrays["density"], arrays["density"].size == 0)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values())


def _hermite(t, t0, t1, y0, y1, d0, d1) -> float:
    """The cubic with values y0, y1 and slopes d0, d1 at t0, t1, at t."""
    width = t1 - t0
    u = (t - t0) / width
    u2, u3 = u * u, u * u * u
    return float((2 * u3 - 3 * u2 + 1) * y0 + (u3 - 2 * u2 + u) * width * d0
                 + (-2 * u3 + 3 * u2) * y1 + (u3 - u2) * width * d1)


def _hermite_array(t, t0, t1, y0, y1, d0, d1) -> np.ndarray:
    """:func:`_hermite` elementwise (the same operations in the same order)."""
    width = t1 - t0
    u = (t - t0) / width
    u2, u3 = u * u, u * u * u
    with np.errstate(invalid="ignore", over="ignore"):  # t outside the points: replaced by the caller
        return ((2 * u3 - 3 * u2 + 1) * y0 + (u3 - 2 * u2 + u) * width * d0
                + (-2 * u3 + 3 * u2) * y1 + (u3 - u2) * width * d1)


def column_grid(model: ColumnModel, values: np.ndarray, weights: np.ndarray, scale: np.ndarray,
                points: int = GRID_POINTS, span: tuple[float, float] | None = None) -> ColumnGrid:
    """The grid of one column from its sampled ``values`` (NaN = NULL), row ``weights`` and
    per-row bandwidth factors ``scale`` (strata of fewer rows have wider kernels); ``span``:
    the table's (min, max) of the column, which the points then cover (default: the sample's)."""
    present = ~np.isnan(values)
    x, w, s = values[present], weights[present], scale[present]
    order = np.argsort(x, kind="stable")
    x, w, s = x[order], w[order], s[order]
    low, high = (float(x[0]), float(x[-1])) if x.size else (0.0, 0.0)
    if span is not None and x.size:
        low, high = min(low, float(span[0])), max(high, float(span[1]))
    if model.bandwidth == 0.0 or x.size == 0:
        distinct, starts = np.unique(x, return_index=True)
        ends = np.r_[starts[1:], x.size] - 1
        grid = ColumnGrid(distinct, np.cumsum(w)[ends] if x.size else np.zeros(0),
                          np.cumsum(w * x)[ends] if x.size else np.zeros(0), np.zeros(0), True)
        if x.size and (low < distinct[0] or high > distinct[-1]):  # the table's ends: every row in a step
            t = np.unique(np.r_[low, distinct, high])
            k = np.searchsorted(distinct, t, side="right") - 1
            count = np.where(k >= 0, grid.count[np.maximum(k, 0)], 0.0)
            moment = np.where(k >= 0, grid.moment[np.maximum(k, 0)], 0.0)
            grid = ColumnGrid(t, count, moment, np.zeros(0), True)
        return grid
    reach = _REACH * model.bandwidth * float(s.max())
    extra = [] if model.lower is None else [model.lower]
    first, last = math.floor(low), math.ceil(high)
    if model.integer and last - first + 2 <= points:  # every k + 1/2: integer ranges end on points
        t = np.unique(np.concatenate([np.arange(first - 0.5, last + 1.0), extra]))
    else:
        uniform = np.linspace(low - reach, high + reach, points // 2)
        quantiles = np.interp(np.linspace(0.0, 1.0, points - points // 2), np.cumsum(w) / w.sum(), x)
        t = np.concatenate([uniform, quantiles])
        if model.integer:
            t = np.floor(t) + 0.5
        t = np.unique(np.concatenate([t, extra]))
    count, moment, density = kernel_cumulative(model, x, w, s, t)
    return ColumnGrid(t, count, moment, density, False)


def kernel_cumulative(model: ColumnModel, values: np.ndarray, weights: np.ndarray, scale: np.ndarray,
                      t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample's kernel integrals at the sorted points ``t``: sum_i w_i K_i(x <= t), the same with
    x, and the density sum_i w_i K_i(t), for sampled ``values`` (NaN = NULL), row ``weights`` and
    bandwidth factors ``scale`` (Gaussian kernels of bandwidth h scale_i, reflected at the model's
    lower edge when it has one: :mod:`parzen.aqp.estimate`).

    Parameters
    ----------
    model : ColumnModel
        The column's model (bandwidth, reflection edge).
    values, weights, scale : numpy.ndarray
        Per sampled row.
    t : numpy.ndarray
        Sorted points.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        C, S and c at ``t``.
    """
    present = ~np.isnan(values)
    reflect = model.lower is not None
    return _cumulative_integrals(values[present], weights[present], model.bandwidth * scale[present], t,
                                 model.lower if reflect else 0.0, reflect, _REACH)


@njit(cache=True)
def _cumulative_integrals(x, w, h, t, lower, reflect, reach):
    """C, S and c at the sorted points t for rows x (weights w, bandwidths h), in one pass.

    Each kernel touches only the points within ``reach`` bandwidths of its centre; points
    beyond take its whole mass and moment, added through a difference array.
    """
    g = t.size
    count = np.zeros(g)
    moment = np.zeros(g)
    density = np.zeros(g)
    whole_count = np.zeros(g + 1)
    whole_moment = np.zeros(g + 1)
    for i in range(x.size):
        for copy in range(2 if reflect else 1):
            centre = x[i] if copy == 0 else 2.0 * lower - x[i]
            r = reach * h[i]
            lo = np.searchsorted(t, centre - r)
            hi = np.searchsorted(t, centre + r, side="right")
            for k in range(lo, hi):
                z = (t[k] - centre) / h[i]
                pdf = math.exp(-0.5 * z * z) * _INV_SQRT_2PI
                mass = _phi_cdf(z)
                count[k] += w[i] * mass
                moment[k] += w[i] * (centre * mass - h[i] * pdf)
                density[k] += w[i] * pdf / h[i]
            whole_count[hi] += w[i]
            whole_moment[hi] += w[i] * centre
    return count + np.cumsum(whole_count)[:g], moment + np.cumsum(whole_moment)[:g], density


def column_grids(models: dict[str, ColumnModel], sample: dict[str, np.ndarray], weights: np.ndarray,
                 scale: np.ndarray, points: int = GRID_POINTS, spans=None) -> dict[str, ColumnGrid]:
    """The grid of every modelled column (see :func:`column_grid`; ``spans``: column -> table's (min, max))."""
    spans = spans or {}
    return {c: column_grid(m, sample[c], weights, scale, points, spans.get(c)) for c, m in models.items()}


def table_cumulative(grids: dict[str, ColumnGrid], batches) -> dict[str, ColumnGrid]:
    """The grids with C and S replaced by the table's exact values at their points.

    ``batches``: an iterable of dicts column -> float64 array (NaN = NULL) that together hold
    every row of the table once (DuckDB's record batches).  Each value is added to the bucket of
    the first point >= it (:class:`GridBuckets`); C and S at the points are then cumulative sums of
    the buckets.
    """
    buckets = GridBuckets.empty(grids)
    for batch in batches:
        buckets.add(grids, batch)
    return buckets.cumulated(grids)


@dataclass(frozen=True)
class GridBuckets:
    """Per column, the rows and their SUM(x) in each bucket of its grid's points: bucket k holds
    t_{k-1} < x <= t_k (bucket 0: x <= t_0; bucket G: x > t_{G-1}).

    A summary that adds over any split of the table's rows (record batches, Dask partitions):
    the counts exactly, the sums to float64 round-off.  C(t_k) and S(t_k) are the cumulative sums
    of buckets 0..k (:meth:`cumulated`).

    Parameters
    ----------
    count, total : dict
        Column -> (G + 1,) rows and SUM(x) per bucket.
    """

    count: dict[str, np.ndarray]
    total: dict[str, np.ndarray]

    @classmethod
    def empty(cls, grids: dict[str, ColumnGrid]) -> GridBuckets:
        """Zero buckets for ``grids``."""
        return cls({c: np.zeros(g.points.size + 1) for c, g in grids.items()},
                   {c: np.zeros(g.points.size + 1) for c, g in grids.items()})

    @classmethod
    def of(cls, grids: dict[str, ColumnGrid], batch: dict[str, np.ndarray]) -> GridBuckets:
        """The buckets of one batch (column -> float64 values, NaN = NULL) of the table's rows."""
        buckets = cls.empty(grids)
        buckets.add(grids, batch)
        return buckets

    def add(self, grids: dict[str, ColumnGrid], batch: dict[str, np.ndarray]) -> None:
        """Add the rows of ``batch`` (column -> float64 values, NaN = NULL) in place."""
        for column, grid in grids.items():
            t = grid.points
            cells = 4 * t.size
            width = (t[-1] - t[0]) / cells if t.size > 1 and t[-1] > t[0] else 1.0
            lookup = np.searchsorted(t, t[0] + width * np.arange(cells + 1), side="left")
            values = np.ascontiguousarray(batch[column], dtype=np.float64)
            _bucket_sums(values, t, lookup, 1.0 / width, self.count[column], self.total[column])

    def __add__(self, other: GridBuckets) -> GridBuckets:
        return GridBuckets({c: v + other.count[c] for c, v in self.count.items()},
                           {c: v + other.total[c] for c, v in self.total.items()})

    def cumulated(self, grids: dict[str, ColumnGrid]) -> dict[str, ColumnGrid]:
        """``grids`` with C and S at their points from these buckets (their density kept)."""
        return {c: ColumnGrid(g.points, np.cumsum(self.count[c])[:-1], np.cumsum(self.total[c])[:-1], g.density, g.steps)
                for c, g in grids.items()}


@njit(cache=True)
def _bucket_sums(x, t, lookup, inv_width, count, total):
    """count[k] += 1 and total[k] += x for each non-NaN x, k = the first index with t[k] >= x
    (t.size beyond the last point); ``lookup[u]``: that index for the start of cell u of a
    uniform division of [t_0, t_last], where the search for x starts."""
    g = t.size
    cells = lookup.size - 1
    for v in x:
        if math.isnan(v):
            continue
        if v <= t[0]:
            k = 0
        elif v > t[g - 1]:
            k = g
        else:
            u = min(int((v - t[0]) * inv_width), cells)
            k = lookup[u]
            while k > 0 and t[k - 1] >= v:  # rounding in the cell index: step back
                k -= 1
            while t[k] < v:
                k += 1
        count[k] += 1.0
        total[k] += v
