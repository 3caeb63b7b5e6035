"""Aggregates as integrals of a kernel density over a box.

Andrzejewski et al. (paper 000 in docs/statistics.md), section 2.1, and paper 002 there; the
formulas are in docs/statistics.md, "AQP: integrals of the density over boxes".

A synopsis holds a sample x_1..x_n of N rows and, per numeric column c, a Gaussian kernel of
bandwidth h_c (a product kernel: H diagonal).  The density of the table is
f(x) = n^-1 sum_i prod_c K_{h_c}(x_c - x_ic), so for a box B = prod_c [a_c, b_c]

    COUNT(*)  = N n^-1 sum_i p_i,              p_i = prod_c P_c(x_ic),
    SUM(y)    = N n^-1 sum_i m_y(x_iy) prod_{c != y} P_c(x_ic)   (y constrained),
              = N n^-1 sum_i y_i p_i                              (y not constrained),
    AVG(y)    = SUM(y) / COUNT(y),

in closed form: P_c(x) = Phi(beta) - Phi(alpha) and m(x) = x P_c(x) - h (phi(beta) - phi(alpha)),
alpha = (a - x)/h, beta = (b - x)/h (the first moment of a normal over [a, b]).

Columns are handled as a user expects (documented in docs/aqp.md):

- **discrete** columns (few values, or lumpy integers) get h = 0: the kernel is a point mass and
  P_c an indicator, so their predicates are exact on the sample;
- **integer** columns get the continuity correction: ``x <= 9`` integrates up to 9.5,
  ``x < 10`` too, and ``x BETWEEN 3 AND 5`` over [2.5, 5.5];
- **non-negative** columns are reflected at their lower edge L (0, or -0.5 for integers):
  K(t - x) + K(t - (2L - x)) on t >= L, so no mass leaks below 0 (Silverman 1986, 2.10);
- NULLs (NaN in the sample) never satisfy a predicate and are left out of SUM and COUNT(col).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from ._box import BoxQuery, box_masses, box_sums, box_terms, sorted_mass
from .sql import Range

if TYPE_CHECKING:
    from .strata import Layout

#: Kernel mass beyond this many bandwidths from a box (Phi(-6) = 1e-9 of a row) is left out.
_REACH = 6.0
#: Kinds of numeric columns (see the module docstring).
CONTINUOUS, INTEGER, DISCRETE = "continuous", "integer", "discrete"


@dataclass(frozen=True)
class ColumnModel:
    """How one numeric column is smoothed: its kind, bandwidth and reflection edge (or None)."""

    name: str
    kind: str
    bandwidth: float
    lower: float | None
    integer: bool = False  # all values are integers
    bandwidth_from: str = ""  # how the bandwidth was chosen (selector, rows it saw), for Engine.describe()
    minimum: float | None = None  # the table's MIN and MAX of the column at build time (None: all NULL, or a
    maximum: float | None = None  # synopsis built before they were kept); histogram queries' bins span them

    def interval(self, r: Range) -> tuple[float, float]:
        """[a, b] to integrate over for the predicate ``r`` (continuity correction, edge)."""
        low = -math.inf if r.low is None else r.low
        high = math.inf if r.high is None else r.high
        if not self.integer and self.kind == DISCRETE:  # point masses: a strict bound excludes its value
            low = low if r.low_inclusive else math.nextafter(low, math.inf)
            high = high if r.high_inclusive else math.nextafter(high, -math.inf)
        if self.integer:  # the integers k in the range, each owning [k - 1/2, k + 1/2]
            if math.isfinite(low):
                low = (math.ceil(low) if r.low_inclusive else math.floor(low) + 1) - 0.5
            if math.isfinite(high):
                high = (math.floor(high) if r.high_inclusive else math.ceil(high) - 1) + 0.5
        # a continuous density gives a point no mass: < and <= integrate alike
        if self.lower is not None:
            low = max(low, self.lower)
        return low, high

    def mass_and_moment(self, x: np.ndarray, a: float, b: float, scale=1.0) -> tuple[np.ndarray, np.ndarray]:
        """(P(x), m(x)): kernel mass in [a, b] and first moment, for each sample value x.

        ``scale`` (a number or one per row) multiplies the bandwidth (strata of fewer rows).
        """
        if b < a:
            zero = np.zeros_like(x)
            return zero, zero
        if self.bandwidth == 0.0:
            inside = ((x >= a) & (x <= b)).astype(np.float64)
            return inside, np.where(inside > 0, x, 0.0)
        # Only rows within _REACH bandwidths of an end need the normal integrals: deeper inside,
        # mass 1 and moment x; further out, 0 (the reflected kernel too, as a >= lower).
        scale = np.asarray(scale, dtype=np.float64)
        if scale.shape != x.shape:  # a writable array, as warm_up compiles for (not a broadcast view)
            scale = np.full(x.shape, float(scale))
        reflect = self.lower is not None
        return box_masses(np.asarray(x, dtype=np.float64), np.ascontiguousarray(scale), self.bandwidth, a, b,
                          self.lower if reflect else 0.0, reflect, _REACH)


#: Answers of :meth:`SampleView.marginal` a view keeps.
MARGINALS_KEPT = 4096


class SampleView:
    """Sampled rows of some columns (NaN = NULL) with lazily built sorted orders per column.

    :meth:`candidates` returns the rows whose kernel can reach a box, by binary search, so an
    estimate costs O(rows near the box) rather than O(sample).
    """

    def __init__(self, columns: dict[str, np.ndarray], *, weights: np.ndarray | None = None,
                 sort_now: bool = False) -> None:
        self.columns = columns
        self.size = next(iter(columns.values())).size if columns else 0
        self.weights = np.ones(self.size) if weights is None else np.asarray(weights, dtype=np.float64)
        self._sorted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._weights: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._repeats: dict[str, bool] = {}
        self._marginals: dict[tuple, float] = {}  # (model, a, b) -> marginal(model, a, b)
        if sort_now:  # pay the sorting when the synopsis is loaded, not in the first queries
            for column in columns:
                self._sort(column)
                self._sorted_weights(column)

    def _sort(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        if column not in self._sorted:
            values = self.columns[column]
            order = np.argsort(values, kind="stable")  # NaN sorts last and is never in range
            self._sorted[column] = (values[order], order)
        return self._sorted[column]

    def _sorted_weights(self, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The column's distinct values (NULLs left out), the weight of the rows holding each, and
        the cumulative weights (integer columns: one kernel integral per value, not per row)."""
        if column not in self._weights:
            values, order = self._sort(column)
            present = int(np.count_nonzero(~np.isnan(values)))
            # values are sorted: each run of equal ones starts where a value differs from its predecessor
            # (np.unique would sort them again, half of a synopsis's loading time)
            kept = values[:present]
            first = np.flatnonzero(np.r_[present > 0, kept[1:] != kept[:-1]])
            distinct = kept[first]
            w = np.add.reduceat(self.weights[order[:present]], first) if present else np.zeros(0)
            self._weights[column] = (np.ascontiguousarray(distinct), np.ascontiguousarray(w, dtype=np.float64),
                                     np.concatenate([[0.0], np.cumsum(w)]))
        return self._weights[column]

    def repeats(self, column: str) -> bool:
        """Whether the column's sampled values repeat, each at least twice on average (integers
        with few values): their kernel integrals are worth caching (:func:`box_sums`)."""
        if column not in self._repeats:
            distinct, _, _ = self._sorted_weights(column)
            present = int(np.count_nonzero(~np.isnan(self.columns[column])))
            self._repeats[column] = 2 * distinct.size <= present
        return self._repeats[column]

    def marginal(self, model: ColumnModel, a: float, b: float) -> float:
        """sum_i w_i P(x_i): the sample's (weighted) kernel mass in [a, b] of ``model``'s column
        (bandwidth factor 1), in O(log n + rows near the ends); the last :data:`MARGINALS_KEPT`
        answers are kept (histograms and brushes ask for the same bins again)."""
        if b < a:
            return 0.0
        key = (model, a, b)
        found = self._marginals.get(key)
        if found is not None:
            return found
        values, weights, cumulative = self._sorted_weights(model.name)
        reflect = model.lower is not None
        found = float(sorted_mass(values, weights, cumulative, a, b, model.bandwidth,
                                  model.lower if reflect else 0.0, reflect, _REACH))
        if len(self._marginals) >= MARGINALS_KEPT:
            self._marginals.clear()
        self._marginals[key] = found
        return found

    def candidates(self, column: str, a: float, b: float, reach: float) -> np.ndarray:
        values, order = self._sort(column)
        lo = np.searchsorted(values, a - reach, side="left")
        hi = np.searchsorted(values, b + reach, side="right")
        return order[lo:hi]


@dataclass(frozen=True)
class Terms:
    """Per candidate row (``rows``, indices into the sample): the masses whose weighted sums give
    COUNT(*), COUNT(y) and SUM(y).  Rows not in ``rows`` contribute 0."""

    rows: np.ndarray
    count: np.ndarray  # p_i
    count_y: dict[str, np.ndarray]  # p_i [y_i not NULL], or for constrained y: mass in y's box
    sum_y: dict[str, np.ndarray]


def row_terms(layout: Layout, models: dict[str, ColumnModel], ranges: dict[str, Range], aggregated,
              *, row_scale: np.ndarray | None = None, keep=None) -> Terms:
    """The per-row terms of the estimators above for the predicates ``ranges`` (not empty), for the
    sampled rows that the kernels of the range with the fewest such rows reach.

    The terms of each row come from one compiled pass (:func:`~parzen.aqp._box.box_terms`): the product
    p of the ranges' kernel masses P_c, and per aggregated column y its COUNT(y) and SUM(y) terms (for
    a range column y its mass times the others', and its first moment m(x) times the others'; else
    p and y p, 0 where y is NULL), the floats of :meth:`ColumnModel.mass_and_moment` multiplied in
    the ranges' order.

    Parameters
    ----------
    layout : Layout
        The synopsis's strata: its sample's sorted orders (``view``) and the sample as one array.
    models : dict of str to ColumnModel
        The columns' kernels.
    ranges : dict of str to Range
        The query's ranges on modelled columns (not empty).
    aggregated : iterable of str
        The aggregated columns.
    row_scale : numpy.ndarray, optional
        Per sampled row, a factor on every bandwidth (None: 1).
    keep : callable, optional
        ``keep(rows)``: a mask choosing the candidate rows to use (rows of strata the query filters out
        are dropped).

    Returns
    -------
    Terms

    Raises
    ------
    ValueError
        ``ranges`` is empty.
    """
    view = layout.view
    boxes = {c: models[c].interval(r) for c, r in ranges.items()}
    widest = 1.0 if row_scale is None else float(row_scale.max(initial=1.0))
    rows: np.ndarray | None = None
    for c, (a, b) in boxes.items():
        found = view.candidates(c, a, b, _REACH * models[c].bandwidth * widest)
        rows = found if rows is None or found.size < rows.size else rows
    if rows is None:
        raise ValueError("row_terms needs at least one predicate (ranges is empty)")
    if keep is not None:
        rows = rows[keep(rows)]
    order = list(boxes)
    aggregated = list(dict.fromkeys(aggregated))
    p, count_y, sum_y = box_terms(
        np.ascontiguousarray(rows, dtype=np.intp), layout.data,
        np.array([layout.position[c] for c in order], dtype=np.intp),
        np.array([boxes[c][0] for c in order], dtype=np.float64), np.array([boxes[c][1] for c in order], dtype=np.float64),
        np.array([models[c].bandwidth for c in order], dtype=np.float64),
        np.array([0.0 if models[c].lower is None else models[c].lower for c in order], dtype=np.float64),
        np.array([models[c].lower is not None for c in order], dtype=np.bool_),
        _NO_SCALE if row_scale is None else np.ascontiguousarray(row_scale, dtype=np.float64), _REACH,
        np.array([layout.position[y] for y in aggregated], dtype=np.intp),
        np.array([order.index(y) if y in boxes else -1 for y in aggregated], dtype=np.intp),
        np.array([c in aggregated for c in order], dtype=np.bool_))
    return Terms(rows, p, {y: count_y[q] for q, y in enumerate(aggregated)},
                 {y: sum_y[q] for q, y in enumerate(aggregated)})


#: :func:`box_terms`'s "every bandwidth factor is 1".
_NO_SCALE = np.zeros(0)


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float = math.nan
    high: float = math.nan


def warm_up() -> None:
    """Compile the box integrals now (or load them from Numba's disk cache), not in a query
    (with the argument types queries pass: writable C-contiguous arrays)."""
    box_masses(np.zeros(1), np.ones(1), 1.0, 0.0, 1.0, 0.0, False, _REACH)
    one = np.zeros(1, dtype=np.intp)
    box_sums(BoxQuery(rows=one, starts=np.array([0, 1]), data=np.zeros((1, 1)), columns=one, lows=np.zeros(1),
                      highs=np.ones(1), bandwidths=np.ones(1), lowers=np.zeros(1), reflects=np.zeros(1, dtype=np.bool_),
                      row_scale=np.ones(1), stratum_of_row=one, output_of_stratum=one, weight_of_stratum=np.ones(1),
                      groups=1, aggregated=one, constrained=one - 1, reach=_REACH, moments=np.zeros(1, dtype=np.bool_),
                      repeats=np.ones(1, dtype=np.bool_)))
    sorted_mass(np.zeros(1), np.ones(1), np.zeros(2), 0.0, 1.0, 1.0, 0.0, True, _REACH)
    from ._cell_sums import (  # variances' sums
        add_scaled,
        add_scaled_kept,
        add_scaled_kept_rows,
        add_scaled_rows,
        cell_sums,
        domain_cell_sums,
        one_domain_cells,
        one_domain_df,
        stratum_sums_of_last_scaled,
        stratum_sums_of_runs,
        stratum_sums_of_two_scaled,
        terms_of_kept,
        weighted_total,
    )

    cell_sums(np.zeros(1), one, 1)
    domain_cell_sums(np.zeros(1), one, one, 1, 1)
    add_scaled(np.zeros(1), np.ones(1), one, np.ones(1))
    add_scaled_kept(np.zeros(1), np.ones(1), one, np.ones(1), np.ones(1, dtype=np.bool_))
    terms_of_kept(one, np.ones(1, dtype=np.bool_), one, np.ones(1), np.ones(1), np.ones(1))
    add_scaled_rows(np.zeros(1), 1.0, np.ones(1), one)
    add_scaled_kept_rows(np.zeros(1), 1.0, np.ones(1), np.ones(1, dtype=np.bool_), one)
    stratum_sums_of_runs(np.zeros(1), np.array([0, 1], dtype=np.intp))
    stratum_sums_of_last_scaled(np.zeros(1), 1.0, np.ones(1), np.ones(1, dtype=np.bool_), True, one,
                                np.array([0, 1], dtype=np.intp))
    stratum_sums_of_two_scaled(1.0, np.ones(1), np.ones(1, dtype=np.bool_), True, 1.0, np.ones(1),
                               np.ones(1, dtype=np.bool_), True, one, np.array([0, 1], dtype=np.intp))
    one_domain_cells(np.ones(1), np.ones(1), np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1))
    one_domain_df(np.zeros(1), np.ones(1), 1.0)
    weighted_total(np.ones(1), np.ones(1))
    from ._row_polynomials import polynomial_rows  # SUM / AVG of arithmetic of columns

    polynomial_rows(one, np.zeros((1, 1)), one, np.ones(1), np.ones((1, 1)), one, np.array([0, 1]), one, one + 1,
                    np.array([0, 1]))
    box_terms(one, np.zeros((1, 1)), one, np.zeros(1), np.ones(1), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.bool_),
              np.ones(1), _REACH, one, one - 1, np.zeros(1, dtype=np.bool_))
    from .quantiles import weighted_cdf  # quantiles imports this module (through grid)

    weighted_cdf(np.zeros(1), np.ones(1), np.ones(1), np.zeros(1, dtype=np.intp), 0.0, 1.0, np.ones(1), 0.0, True,
                 _REACH, 1)
    # the modules of SUM / AVG of arithmetic (TPC-H's revenue, SSB Q4's profit), imported by the answers on
    # first use: imported and run once now (from source, 13-19 ms, where no bytecode is written)
    importlib.import_module(".aggregates", __package__)
    from .kernel_moments import kernel_moment  # it imports this module

    kernel_moment(ColumnModel("warm", CONTINUOUS, 1.0, 0.0), np.zeros(1), 0.0, 1.0, 1.0, 2)


def z_value(confidence: float) -> float:
    """The normal quantile Phi^-1((1 + confidence) / 2) of a two-sided interval.

    From the standard library (:class:`statistics.NormalDist`, Wichura's algorithm AS 241, Applied
    Statistics 37, 1988, accurate to about 1e-16), so that answering needs no SciPy.

    Parameters
    ----------
    confidence : float
        In (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        A confidence outside (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)
