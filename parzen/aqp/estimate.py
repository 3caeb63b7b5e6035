"""Aggregates as integrals of a kernel density over a box (paper 000 section 2.1; paper 002).

A synopsis holds a sample x_1..x_n of N rows and, per numeric column c, a Gaussian kernel of
bandwidth h_c (a product kernel: H diagonal).  The density of the table is
f(x) = n^-1 sum_i prod_c K_{h_c}(x_c - x_ic), so for a box B = prod_c [a_c, b_c]

    COUNT(*)  = N n^-1 sum_i p_i,              p_i = prod_c P_c(x_ic),
    SUM(y)    = N n^-1 sum_i m_y(x_iy) prod_{c != y} P_c(x_ic)   (y constrained),
              = N n^-1 sum_i y_i p_i                              (y not constrained),
    AVG(y)    = SUM(y) / COUNT(y),

in closed form: P_c(x) = Phi(beta) - Phi(alpha) and m(x) = x P_c(x) - h (phi(beta) - phi(alpha)),
alpha = (a - x)/h, beta = (b - x)/h (the first moment of a normal over [a, b]).

Columns are handled as a user expects (documented in the README):

- **discrete** columns (integers with few values) get h = 0: the kernel is a point mass and
  P_c an indicator, so their predicates are exact on the sample;
- **integer** columns get the continuity correction: ``x <= 9`` integrates up to 9.5,
  ``x < 10`` too, and ``x BETWEEN 3 AND 5`` over [2.5, 5.5];
- **non-negative** columns are reflected at their lower edge L (0, or -0.5 for integers):
  K(t - x) + K(t - (2L - x)) on t >= L, so no mass leaks below 0 (Silverman 1986, 2.10);
- NULLs (NaN in the sample) never satisfy a predicate and are left out of SUM and COUNT(col).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .sql import Range

#: Kernel mass beyond this many bandwidths from a box is below 1e-15 and is left out.
_REACH = 8.0
#: Kinds of numeric columns (see the module docstring).
CONTINUOUS, INTEGER, DISCRETE = "continuous", "integer", "discrete"


@dataclass(frozen=True)
class ColumnModel:
    """How one numeric column is smoothed: its kind, bandwidth and reflection edge (or None)."""

    name: str
    kind: str
    bandwidth: float
    lower: float | None

    def interval(self, r: Range) -> tuple[float, float]:
        """[a, b] to integrate over for the predicate ``r`` (continuity correction, edge)."""
        low = -math.inf if r.low is None else r.low
        high = math.inf if r.high is None else r.high
        if self.kind in (INTEGER, DISCRETE):  # the integers k in the range, each owning [k - 1/2, k + 1/2]
            if math.isfinite(low):
                low = (math.ceil(low) if r.low_inclusive else math.floor(low) + 1) - 0.5
            if math.isfinite(high):
                high = (math.floor(high) if r.high_inclusive else math.ceil(high) - 1) + 0.5
        # a continuous density gives a point no mass: < and <= integrate alike
        if self.lower is not None:
            low = max(low, self.lower)
        return low, high

    def mass_and_moment(self, x: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
        """(P(x), m(x)): kernel mass in [a, b] and first moment, for each sample value x."""
        if b < a:
            zero = np.zeros_like(x)
            return zero, zero
        if self.bandwidth == 0.0:
            inside = ((x >= a) & (x <= b)).astype(np.float64)
            return inside, np.where(inside > 0, x, 0.0)
        # Only rows within _REACH bandwidths of an end need the normal integrals: deeper inside,
        # mass 1 and moment x; further out, 0 (also for the reflected kernel, as a >= lower).
        reach = _REACH * self.bandwidth
        inner = (x >= a + reach) & (x <= b - reach)
        mass = inner.astype(np.float64)
        moment = np.where(inner, x, 0.0)
        edge = np.flatnonzero(~inner & (x > a - reach) & (x < b + reach))
        if edge.size:
            xe = x[edge]
            edge_mass, edge_moment = _normal_box(xe, a, b, self.bandwidth)
            if self.lower is not None:
                reflected_mass, reflected_moment = _normal_box(2.0 * self.lower - xe, a, b, self.bandwidth)
                edge_mass, edge_moment = edge_mass + reflected_mass, edge_moment + reflected_moment
            mass[edge], moment[edge] = edge_mass, edge_moment
        return mass, moment


def _normal_box(x: np.ndarray, a: float, b: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Mass and first moment of N(x, h^2) over [a, b] (either end may be infinite)."""
    alpha = (a - x) / h
    beta = (b - x) / h
    # Phi(beta) - Phi(alpha) without cancellation in the upper tail: use the symmetric form there
    upper = alpha > 0
    mass = np.where(upper, special.ndtr(-alpha) - special.ndtr(-beta), special.ndtr(beta) - special.ndtr(alpha))
    density = _phi(beta) - _phi(alpha)
    return mass, x * mass - h * density


def _phi(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(-0.5 * np.square(z)) / math.sqrt(2.0 * math.pi)


class SampleView:
    """Sampled rows of some columns (NaN = NULL) with lazily built sorted orders per column.

    :meth:`candidates` returns the rows whose kernel can reach a box, by binary search, so an
    estimate costs O(rows near the box) rather than O(sample).
    """

    def __init__(self, columns: dict[str, np.ndarray], *, sort_now: bool = False) -> None:
        self.columns = columns
        self.size = next(iter(columns.values())).size if columns else 0
        self._sorted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if sort_now:  # pay the sorting when the synopsis is loaded, not in the first queries
            for column in columns:
                self._sort(column)

    def _sort(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        if column not in self._sorted:
            values = self.columns[column]
            order = np.argsort(values, kind="stable")  # NaN sorts last and is never in range
            self._sorted[column] = (values[order], order)
        return self._sorted[column]

    def candidates(self, column: str, a: float, b: float, reach: float) -> np.ndarray:
        values, order = self._sort(column)
        lo = np.searchsorted(values, a - reach, side="left")
        hi = np.searchsorted(values, b + reach, side="right")
        return order[lo:hi]


@dataclass(frozen=True)
class Terms:
    """Per candidate row: the masses whose sums over the sample give COUNT(*), COUNT(y), SUM(y).

    Rows outside ``rows`` contribute 0; ``n`` is the whole sample size.
    """

    n: int
    count: np.ndarray  # p_i
    count_y: dict[str, np.ndarray]  # p_i [y_i not NULL], or for constrained y: mass in y's box
    sum_y: dict[str, np.ndarray]


def row_terms(view: SampleView, models: dict[str, ColumnModel], ranges: dict[str, Range], aggregated: set[str]) -> Terms:
    """The per-row terms of the estimators above for the predicates ``ranges`` (not empty)."""
    boxes = {c: models[c].interval(r) for c, r in ranges.items()}
    rows = None
    for c, (a, b) in boxes.items():
        found = view.candidates(c, a, b, _REACH * models[c].bandwidth)
        rows = found if rows is None or found.size < rows.size else rows
    masses, moments = {}, {}
    for c, (a, b) in boxes.items():
        masses[c], moments[c] = models[c].mass_and_moment(view.columns[c][rows], a, b)
    p = np.ones(rows.size)
    for mass in masses.values():
        p = p * mass
    count_y, sum_y = {}, {}
    for y in aggregated:
        if y in ranges:
            others = np.ones(rows.size)
            for column, mass in masses.items():
                if column != y:
                    others = others * mass
            count_y[y] = masses[y] * others
            sum_y[y] = moments[y] * others
        else:
            values = view.columns[y][rows]
            valid = ~np.isnan(values)
            count_y[y] = np.where(valid, p, 0.0)
            sum_y[y] = np.where(valid, values, 0.0) * p
    return Terms(view.size, p, count_y, sum_y)


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float = math.nan
    high: float = math.nan


def scaled_mean(terms: np.ndarray, n: int, rows: int, z: float | None) -> Estimate:
    """rows * (sum(terms) / n), with a normal-theory interval (finite-population corrected) if z."""
    if n == 0:
        return Estimate(0.0, 0.0, 0.0)
    mean = float(terms.sum()) / n
    if z is None:
        return Estimate(rows * mean)
    se = math.sqrt(sum_variance(terms, n, rows)) / rows if rows else 0.0
    return Estimate(rows * mean, rows * mean - z * rows * se, rows * mean + z * rows * se)


def ratio(numerator: np.ndarray, denominator: np.ndarray, n: int, rows: int, z: float | None) -> Estimate:
    """sum(numerator) / sum(denominator) with a delta-method interval if z; NaN if no mass."""
    total = float(denominator.sum())
    if total <= 0.0:
        return Estimate(math.nan, math.nan, math.nan)
    r = float(numerator.sum()) / total
    if z is None:
        return Estimate(r)
    se = math.sqrt(sum_variance(numerator - r * denominator, n, rows)) / (rows * total / n)
    return Estimate(r, r - z * se, r + z * se)


def sum_variance(terms: np.ndarray, n: int, rows: int) -> float:
    """Variance of rows * mean(terms over n rows; absent rows are 0), sampling n of ``rows``."""
    if n < 2:
        return 0.0 if n == rows else math.inf
    total = float(terms.sum())
    variance = max(0.0, (float(np.dot(terms, terms)) - total * total / n) / (n - 1))
    return rows * rows * variance / n * max(0.0, 1.0 - n / rows)


def z_value(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return float(special.ndtri(0.5 + confidence / 2.0))
