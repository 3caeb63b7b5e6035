"""Aggregates beyond COUNT/SUM/AVG of a column: VAR/STDDEV, SUM/AVG of polynomials, sums of aggregates, MIN/MAX,
quantiles (:mod:`parzen.aqp.quantiles`), COUNT(DISTINCT) (:mod:`parzen.aqp.sketches`; exact for group columns).

:func:`approximate` answers a query with any of them (:attr:`parzen.aqp.sql.Aggregate.plain` is
False).  The plain aggregates, the plain parts of sums of aggregates and a COUNT(*) go through
:func:`parzen.aqp.answers.approximate`'s own forms (totals, grid, calibrated sample); the others
come from

- **the exact summaries** where the query has no range on a numeric column (IN / = on group
  columns allowed): the synopsis's per-group COUNT, mean, M2, MIN, MAX
  (:mod:`parzen.aqp.column_summary`, merged over the answer row's groups): VAR_POP = M2 / n,
  VAR_SAMP = M2 / (n - 1), STDDEV their roots, MIN and MAX; SUM / AVG of a polynomial of degree
  <= 1, or of squares c^2 (sum c^2 = M2 + n mean^2), of columns without NULLs in those groups from
  the totals;
- **the sample** otherwise: with w_i the row's weight (rows / drawn of its stratum), P_c(x_i) its
  kernel's mass in the box of range column c and M_k the kernel's k-th moment there
  (:mod:`parzen.aqp.kernel_moments`; a column without a range contributes its value's power),

      SUM(prod_c x_c^k_c)  = F sum_i w_i prod_{range c} M_{k_c}(x_ic) prod_{other c} x_ic^k_c,
      T_j(y)               = sum_i w_i M_j(y_i - s) prod_{c != y} P_c(x_ic)      (j = 0, 1, 2),
      VAR_POP(y)           = T_2 / T_0 - (T_1 / T_0)^2,   VAR_SAMP = VAR_POP T_0 / (T_0 - 1),

  F the answer's calibration factor (the calibrated COUNT(*) over the sample's own, i.e.
  :func:`parzen.aqp.answers.calibration_factor`), s the column's mean (no cancellation), M_2 with
  Jones's correction for the kernel's variance h^2; AVG of a polynomial the ratio of its SUM to the
  rows where none of its columns is NULL.  Standard errors by the delta method on the per-row terms
  (stratified, finite-population corrected: :func:`parzen.aqp.answers._stratified_variance`); COUNT,
  SUM and AVG of columns take Student's t of their variance's degrees of freedom for z
  (:mod:`parzen.aqp.tails`), as a query of them alone does;
- MIN / MAX under a range: the sample's extreme among its rows inside the box (the raw values,
  every range), which is a **bound**: the table's MIN is at most the sample's, and at least the
  larger of the group's exact MIN and the range's low end on that column (MAX alike).  The answer
  names such columns in ``df.attrs["bounds"]`` and ``with_error=True`` gives that guaranteed
  interval; no sampled row in the box: NaN (NULL), with the interval from the exact extremes.

Sums of aggregates (``SUM(a) - 2 * SUM(b)``) add up their parts' answers; their interval's half
width adds up the parts' (sd(X + Y) <= sd(X) + sd(Y): conservative).  docs/aqp.md, "More
aggregates", has the table of what answers each.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd

from . import answers, quantiles
from ._kept import kept
from ._row_polynomials import polynomial_rows
from .estimate import _REACH, Estimate
from .kernel_moments import kernel_moment
from .sql import Aggregate, AggregateQuery, Range, UnsupportedQuery
from .strata import Layout
from .synopsis import Synopsis

#: The hidden COUNT(*) every extended query asks :func:`parzen.aqp.answers.approximate`'s forms for.
_ROWS = Aggregate("count", None, "__parzen_rows")
_VARIANCES = ("var_samp", "var_pop", "stddev_samp", "stddev_pop")


def approximate(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None) -> tuple[pd.DataFrame, str]:
    """The answer to a query with aggregates beyond COUNT/SUM/AVG of a column (see the module).

    Parameters
    ----------
    query : AggregateQuery
        The query (names spelled as in the synopsis).
    synopsis : Synopsis
        Its synopsis (with its column summary).
    layout : Layout
        The synopsis's strata.
    z : float or None
        The intervals' normal quantile; None: no intervals.

    Returns
    -------
    frame : pandas.DataFrame
        Shaped like DuckDB's answer; ``attrs["bounds"]``: the names of the answers that are bounds
        (MIN / MAX under a range).
    form : str
        "totals" or "grid" when every answer came from exact totals, summaries or the grid;
        otherwise "sample".

    Raises
    ------
    UnsupportedQuery
        COUNT(DISTINCT) under a range, or a synopsis without the column summary or sketches an
        aggregate needs.
    """
    keys, rows, bounds, form = _estimates(query, synopsis, layout, z)
    result = answers.frame(query, dict(zip(keys, rows)), z is not None)
    result.attrs["bounds"] = bounds
    return result, form


def approximate_row(query: AggregateQuery, synopsis: Synopsis, layout: Layout,
                    z: float | None) -> tuple[answers.Row, str]:
    """:func:`approximate`'s answer to a query without GROUP BY as its :class:`parzen.aqp.answers.Row`
    (the same floats, labels and ``attrs``).

    Parameters
    ----------
    query : AggregateQuery
        The query without GROUP BY (names spelled as in the synopsis).
    synopsis : Synopsis
        Its synopsis.
    layout : Layout
        The synopsis's strata.
    z : float or None
        The intervals' normal quantile; None: no intervals.

    Returns
    -------
    row : parzen.aqp.answers.Row
    form : str
        As :func:`approximate`.
    """
    keys, rows, bounds, form = _estimates(query, synopsis, layout, z)
    ((_, estimates),) = dict(zip(keys, rows)).items()  # answers.frame's check: one answer row
    row = answers.one_row(query, estimates, z is not None)
    row.attrs["bounds"] = bounds
    return row, form


def _estimates(query: AggregateQuery, synopsis: Synopsis, layout: Layout,
               z: float | None) -> tuple[list[tuple], list[dict[str, Estimate]], list[str], str]:
    """:func:`approximate`'s work but the frame: the answer rows' keys, each row's estimates, the names
    of the answers that are bounds, and the form."""
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    parts: dict[Aggregate, Aggregate] = {}  # plain parts of sums of aggregates, under names of their own
    for a in query.aggregates:
        for _, part in a.parts:
            if part.plain and part not in parts:
                parts[part] = replace(part, name=f"__parzen_part_{len(parts)}")
    plain = [a for a in query.aggregates if a.plain]
    base = replace(query, select=tuple(dict.fromkeys([*plain, *parts.values(), _ROWS])))
    form, keys, output_of_stratum, values = answers._point_answers(base, synopsis, layout, ranges)
    # the plain aggregates' half widths: t se, as a query of them alone has them (parzen.aqp.tails)
    half_widths = answers._half_widths(base, synopsis, layout, ranges, output_of_stratum, len(keys), z) \
        if z is not None else {a.name: np.zeros(len(keys)) for a in base.aggregates}
    solver = _Solver(query, synopsis, layout, ranges, output_of_stratum, len(keys), values, half_widths, parts,
                     0.0 if z is None else z)
    rows: list[dict[str, Estimate]] = [{} for _ in keys]
    bounds = []
    for a in query.aggregates:
        value, low, high = solver.answer(a)
        if a.func in ("min", "max") and ranges:
            bounds.append(a.name)
        for g in range(len(keys)):
            rows[g][a.name] = Estimate(float(value[g])) if z is None else Estimate(float(value[g]), float(low[g]),
                                                                                 float(high[g]))
    return keys, rows, bounds, "sample" if solver.sampled else form


class _Solver:
    """Each aggregate's values and interval ends per answer row, from the base answers, the
    summaries or the sample (see the module)."""

    def __init__(self, query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                 output_of_stratum: np.ndarray, groups: int, values, half_widths, parts: dict[Aggregate, Aggregate],
                 z: float) -> None:
        self.query, self.synopsis, self.layout, self.ranges = query, synopsis, layout, ranges
        self.output_of_stratum, self.groups = output_of_stratum, groups
        self.values, self.half_widths, self.parts, self.z = values, half_widths, parts, z
        self.sampled = False

    def answer(self, a: Aggregate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(value, low, high) per answer row: value -+ the half width (a plain aggregate's t se as
        :func:`parzen.aqp.answers._half_widths` gives it; z se otherwise), or a guaranteed interval (MIN / MAX)."""
        value, half = self._value_and_error(a)
        if isinstance(half, tuple):  # a guaranteed interval (MIN / MAX)
            return value, half[0], half[1]
        return value, value - half, value + half

    def _value_and_error(self, a: Aggregate):
        if a.plain:
            name = self.parts.get(a, a).name
            return np.asarray(self.values[name], dtype=np.float64), np.asarray(self.half_widths[name], dtype=np.float64)
        if a.func == "combination":
            value, half = np.zeros(self.groups), np.zeros(self.groups)
            for k, part in a.parts:
                v, e = self._value_and_error(part)
                if isinstance(e, tuple):
                    e = np.maximum(v - e[0], e[1] - v)
                value, half = value + k * v, half + abs(k) * e
            return value, half
        if a.func in _VARIANCES:
            return self._variance(a)
        if a.func in ("min", "max"):
            return self._extreme(a)
        if a.polynomial:
            return self._polynomial(a)
        if a.func == "quantile":
            return self._quantile(a)
        if a.func == "count_distinct":
            return self._distinct(a)
        raise UnsupportedQuery(f"{a.name} in SELECT")

    # --- from the summaries -------------------------------------------------------------------

    def _summary(self, column: str) -> dict[str, np.ndarray]:
        if self.synopsis.summary is None:
            raise UnsupportedQuery(f"VAR/STDDEV, MIN/MAX and exact SUM of expressions on a synopsis without column "
                                   f"summaries (rebuild it: engine.refresh({self.synopsis.table!r}))")
        return self.synopsis.summary.rows(self.output_of_stratum, column, self.groups)

    # --- VAR / STDDEV -------------------------------------------------------------------------

    def _variance(self, a: Aggregate):
        column = a.column
        assert column is not None
        population = a.func.endswith("_pop")
        if not self.ranges:
            s = self._summary(column)
            n, m2 = s["count"], s["m2"]
            with np.errstate(invalid="ignore", divide="ignore"):
                variance = np.where(n > (0 if population else 1), m2 / (n if population else n - 1), np.nan)
            value = np.sqrt(variance) if a.func.startswith("stddev") else variance
            return value, np.zeros(self.groups)
        self.sampled = True
        sample = self._sample
        shift = self._mean(column)
        t = [sample.column_moment(column, j, shift) for j in range(3)]
        totals = [sample.total(term) for term in t]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = totals[1] / totals[0]
            var_pop = np.maximum(totals[2] / totals[0] - mean * mean, 0.0)
            linear = t[2] - 2.0 * mean[sample.group] * t[1] + (mean * mean - var_pop)[sample.group] * t[0]
            se = sample.standard_error(np.nan_to_num(linear)) / totals[0]
            factor = np.ones(self.groups) if population else np.where(totals[0] > 1, totals[0] / (totals[0] - 1), np.nan)
            variance = np.where(totals[0] > 0, var_pop * factor, np.nan)
            se = se * factor
            if a.func.startswith("stddev"):
                root = np.sqrt(variance)
                return root, self.z * np.where(root > 0, se / (2.0 * root), 0.0)
        return variance, self.z * se

    def _mean(self, column: str) -> float:
        count, total = self.synopsis.totals[column]
        return total / count if count else 0.0

    # --- MIN / MAX ----------------------------------------------------------------------------

    def _extreme(self, a: Aggregate):
        column = a.column
        assert column is not None
        s = self._summary(column)
        exact = s["low"] if a.func == "min" else s["high"]
        if not self.ranges:
            return exact, np.zeros(self.groups)
        self.sampled = True
        layout = self.layout
        values = layout.view.columns[column]
        inside = ~np.isnan(values) & (self.output_of_stratum[layout.stratum_of_row] >= 0)
        for c, predicate in self.ranges.items():
            inside &= _contains(predicate, layout.view.columns[c])
        rows = np.flatnonzero(inside)
        group = self.output_of_stratum[layout.stratum_of_row[rows]]
        found = np.full(self.groups, np.inf if a.func == "min" else -np.inf)
        (np.minimum if a.func == "min" else np.maximum).at(found, group, values[rows])
        found = np.where(np.isfinite(found), found, np.nan)
        r = self.ranges.get(column)
        if a.func == "min":
            edge = -np.inf if r is None or r.low is None else r.low
            low = np.maximum(s["low"], edge)
            high = np.where(np.isnan(found), s["high"] if r is None or r.high is None else np.minimum(s["high"], r.high),
                            found)
            return found, (low, high)
        edge = np.inf if r is None or r.high is None else r.high
        high = np.minimum(s["high"], edge)
        low = np.where(np.isnan(found), s["low"] if r is None or r.low is None else np.maximum(s["low"], r.low), found)
        return found, (low, high)

    # --- COUNT(DISTINCT) -----------------------------------------------------------------------

    def _distinct(self, a: Aggregate):
        """COUNT(DISTINCT col): exact for a group column (the answer row's group keys), else the union
        of the answer row's groups' HLL sketches (:mod:`parzen.aqp.sketches`), with their bounds."""
        column = a.column
        assert column is not None
        if column in self.synopsis.group_by:
            position = self.synopsis.group_by.index(column)
            seen: list[set] = [set() for _ in range(self.groups)]
            for stratum, key in enumerate(self.layout.keys):
                row = self.output_of_stratum[stratum]
                if row >= 0 and key[position] is not None and self.layout.rows[stratum] > 0:
                    seen[row].add(key[position])
            return np.array([float(len(values)) for values in seen]), np.zeros(self.groups)
        if self.ranges:
            raise UnsupportedQuery(f"{a.name} under a range on a numeric column (the distinct-count sketches hold "
                                   "whole groups: IN / = on group columns and GROUP BY only)")
        if self.synopsis.sketches is None:
            raise UnsupportedQuery(f"{a.name} on a synopsis without distinct-count sketches "
                                   f"(rebuild it: engine.refresh({self.synopsis.table!r}))")
        found = self.synopsis.sketches.distinct(self.output_of_stratum, column, self.groups)
        return found[:, 0], (found[:, 1], found[:, 2])

    # --- quantiles ----------------------------------------------------------------------------

    def _quantile(self, a: Aggregate):
        """QUANTILE_CONT from the exact C(t) of the grid (whole table, no predicate) or the sample's
        kernel distribution function (:mod:`parzen.aqp.quantiles`), whose interval joins the
        linearised one and Woodruff's (1952) inverse of F at p -+ z se_p."""
        column, p = a.column, a.parameter
        assert column is not None and p is not None
        model = self.synopsis.models[column]
        grid = self.synopsis.grids.get(column)
        whole = answers.whole_table(self.query, self.output_of_stratum)
        if not self.ranges and whole and grid is not None:
            exact = quantiles.from_grid(grid, self.synopsis.totals[column][0], p, model.integer)
            return np.array([exact[0]]), (np.array([exact[1]]), np.array([exact[2]]))
        self.sampled = True
        sample = self._sample
        x = sample.values(column)
        a_y, b_y = sample.boxes.get(column, model.interval(Range(column)))
        others = sample.p / np.where(sample.masses[column] > 0, sample.masses[column], 1.0) \
            if column in sample.boxes else sample.p
        weights = sample.weight * others

        # a new (writable) array: the argument types estimate.warm_up compiles weighted_cdf for
        bandwidths = np.full(x.shape, model.bandwidth) * np.asarray(sample.scale, dtype=np.float64)
        edge = 0.0 if model.lower is None else model.lower

        def cdf(t: np.ndarray) -> np.ndarray:
            return quantiles.weighted_cdf(x, weights, bandwidths, sample.group, a_y, b_y, np.ascontiguousarray(t),
                                          edge, model.lower is not None, _REACH, self.groups)

        present = x[~np.isnan(x)]
        reach = _REACH * model.bandwidth * float(np.max(sample.scale, initial=1.0))
        span = (float(present.min()) - reach, float(present.max()) + reach) if present.size else (0.0, 1.0)
        value = quantiles.from_sample(cdf, p, span, self.groups, model.integer)
        if self.z == 0.0:
            return value, np.zeros(self.groups)
        step = 1e-3 * (span[1] - span[0])
        slope = (cdf(value + step) - cdf(value - step)) / (2.0 * step)
        t_rows = np.nan_to_num(value)[sample.group]
        terms = quantiles.kernel_cdf(model, x, a_y, b_y, t_rows, sample.scale) \
            - p * quantiles.kernel_cdf(model, x, a_y, b_y, np.full(x.size, math.inf), sample.scale)
        total_se = sample.standard_error(others * terms)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = total_se / slope
            se_p = total_se / cdf(np.full(self.groups, math.inf))  # of F(t) / F(inf) at the answer
        rounding = 0.5 if model.integer else 0.0  # integer columns' order statistics are rounded
        half = self.z * np.nan_to_num(se, nan=np.inf)
        # Woodruff's interval: F's inverse at p -+ z se_p, which holds for point masses too (a step F)
        spread = np.nan_to_num(self.z * se_p, nan=1.0)
        low = quantiles.from_sample(cdf, np.clip(p - spread, 0.0, 1.0), span, self.groups, model.integer)
        high = quantiles.from_sample(cdf, np.clip(p + spread, 0.0, 1.0), span, self.groups, model.integer)
        return value, (np.fmin(value - half, low) - rounding, np.fmax(value + half, high) + rounding)

    # --- SUM / AVG of polynomials -------------------------------------------------------------

    def _polynomial(self, a: Aggregate):
        exact = self._exact_polynomial(a) if not self.ranges else None
        if exact is not None:
            return exact, np.zeros(self.groups)
        self.sampled = True
        sample = self._sample
        terms, valid = sample.polynomial(a)
        if a.func == "sum":
            factor = self._factor
            total, se = sample.polynomial_sums(a)
            return factor * total, self.z * factor * se
        total = sample.total(terms)
        rows = sample.p * valid
        count = sample.total(rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(count > 0, total / count, np.nan)
            se = sample.standard_error(terms - np.nan_to_num(ratio)[sample.group] * rows) / count
        return ratio, self.z * se

    def _exact_polynomial(self, a: Aggregate) -> np.ndarray | None:
        """SUM / AVG of a polynomial from the summaries (no range): degree <= 1 or squares of
        columns that have no NULL in the answer's groups; None otherwise."""
        rows = np.bincount(self.output_of_stratum[self.output_of_stratum >= 0],
                           weights=self.layout.rows[self.output_of_stratum >= 0], minlength=self.groups)
        total = np.zeros(self.groups)
        for k, monomial in a.polynomial:
            if len(set(monomial)) > 1:
                return None
            if not monomial:
                total += k * rows
                continue
            s = self._summary(monomial[0])
            if np.any(s["count"] != rows):
                return None
            moment = s["count"] * s["mean"] if len(monomial) == 1 else \
                s["m2"] + s["count"] * s["mean"] ** 2 if len(monomial) == 2 else None
            if moment is None:
                return None
            total += k * moment
        if a.func == "sum":
            return total
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(rows > 0, total / rows, np.nan)

    @functools.cached_property
    def _factor(self) -> np.ndarray:
        """The calibration factor per answer row: the base's COUNT(*) over the sample's own."""
        own = self._sample.mass_total
        calibrated = np.asarray(self.values[_ROWS.name], dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(own > 0, calibrated / own, 1.0)

    @functools.cached_property
    def _sample(self) -> _SampleTerms:
        return sample_terms(self.query, self.synopsis, self.layout, self.ranges, self.output_of_stratum, self.groups)


def sample_terms(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                 output_of_stratum: np.ndarray, groups: int) -> _SampleTerms:
    """The :class:`_SampleTerms` of ``query``'s ``ranges`` on ``synopsis``: made here, or within
    :func:`parzen.aqp._kept.shared_terms` the one made already for the same layout, ranges and
    kernels, answer rows and kernel widths (whether the query reads the whole table) (:mod:`parzen.aqp._kept`).

    Parameters
    ----------
    query : AggregateQuery
        The query (whether it reads the whole table: :func:`parzen.aqp.answers.whole_table`).
    synopsis : Synopsis
        Its synopsis (the range columns' kernels).
    layout : Layout
        The synopsis's strata.
    ranges : dict of str to Range
        The ranges on numeric columns.
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups : int
        The answer rows.

    Returns
    -------
    _SampleTerms
    """
    models = synopsis.models
    key = ("sample terms", answers.whole_table(query, output_of_stratum), groups,
           np.asarray(output_of_stratum).tobytes(), tuple((c, r, models[c]) for c, r in ranges.items()))
    return kept(layout, key, lambda: _SampleTerms(query, synopsis, layout, ranges, output_of_stratum, groups),
                lambda _: layout.view.size)  # arrays of its rows, and of every sampled row (polynomial_every_row)


def _contains(r: Range, x: np.ndarray) -> np.ndarray:
    """Whether each value satisfies the range (NaN: never)."""
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(x)
        if r.low is not None:
            ok &= (x >= r.low) if r.low_inclusive else (x > r.low)
        if r.high is not None:
            ok &= (x <= r.high) if r.high_inclusive else (x < r.high)
    return ok


class _SampleTerms:
    """The sampled rows that a query's kernels reach, their weights, answer rows and box masses."""

    def __init__(self, query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                 output_of_stratum: np.ndarray, groups: int, within: np.ndarray | None = None) -> None:
        models = synopsis.models
        whole = answers.whole_table(query, output_of_stratum)
        row_scale = None if whole else layout.row_scale
        widest = 1.0 if row_scale is None else float(row_scale.max(initial=1.0))
        self.boxes = {c: models[c].interval(r) for c, r in ranges.items()}
        rows = None  # every sampled row, ascending (made below only where no range narrows them)
        for c, (a, b) in self.boxes.items():
            found = layout.view.candidates(c, a, b, _REACH * models[c].bandwidth * widest)
            rows = found if found.size < (layout.view.size if rows is None else rows.size) else rows
        if within is not None:  # only the rows a caller keeps (the terms are per row: the same floats)
            rows = np.flatnonzero(within) if rows is None else rows[within[rows]]
        elif rows is None:
            rows = np.arange(layout.view.size)
        if not (output_of_stratum >= 0).all():
            rows = rows[output_of_stratum[layout.stratum_of_row[rows]] >= 0]
        self.rows, self.models, self.layout = rows, models, layout
        self._values: dict[str, np.ndarray] = {}
        self.output_of_stratum, self.groups = output_of_stratum, groups
        self.stratum = layout.stratum_of_row[rows]
        self.group = output_of_stratum[self.stratum]
        self.weight = (layout.rows / np.maximum(layout.drawn, 1.0))[self.stratum]
        self.scale = 1.0 if row_scale is None else row_scale[rows]
        self.masses = {c: kernel_moment(models[c], self.values(c), a, b, self.scale, 0) for c, (a, b) in self.boxes.items()}
        self.p = np.ones(rows.size)
        for mass in self.masses.values():
            self.p = self.p * mass
        self._polynomials: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._sums: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._every_row: dict[tuple, np.ndarray] = {}

    def values(self, column: str) -> np.ndarray:
        """The rows' values of ``column`` (read once; do not modify)."""
        if column not in self._values:
            self._values[column] = self.layout.view.columns[column][self.rows]
        return self._values[column]

    def valid(self, columns) -> np.ndarray:
        """1 where none of ``columns`` is NULL, else 0."""
        ok = np.ones(self.rows.size)
        for c in columns:
            ok = ok * ~np.isnan(self.values(c))
        return ok

    def polynomial(self, a: Aggregate) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the SUM term of ``a``'s polynomial, sum over its monomials of coefficient times
        :meth:`monomial` (0 where an input is NULL), and :meth:`valid` of its inputs; made once per
        polynomial (a ratio's leaves and their sub-queries' answers read the same terms)."""
        key = (a.polynomial, a.inputs)
        if key not in self._polynomials:
            compiled = self._compiled_polynomial(a)
            if compiled is not None:
                self._polynomials[key] = compiled
            else:
                valid = self.valid(a.inputs)
                terms = np.zeros(self.rows.size)
                for k, monomial in a.polynomial:
                    terms = terms + k * self.monomial(Counter(monomial), valid)
                self._polynomials[key] = terms, valid
        return self._polynomials[key]

    def _compiled_polynomial(self, a: Aggregate) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`polynomial` in one compiled pass over the sample's array
        (:func:`parzen.aqp._row_polynomials.polynomial_rows`, the same floats as :meth:`monomial`'s
        arrays), or None where it does not apply: a power above 2 of a column without a range, or a
        column not held as float64."""
        layout, columns = self.layout, self.layout.view.columns
        if any(c not in layout.position or columns[c].dtype != np.float64 for c in a.inputs):
            return None
        factors: dict[tuple[str, int], np.ndarray] = {}
        factor_of, factor_starts, free_columns, free_powers, free_starts = [], [0], [], [], [0]
        for _, monomial in a.polynomial:
            powers = Counter(monomial)
            for c, (low, high) in self.boxes.items():
                k = powers.get(c, 0)
                if (c, k) not in factors:
                    factors[(c, k)] = self.masses[c] if k == 0 else \
                        kernel_moment(self.models[c], self.values(c), low, high, self.scale, k, 0.0)
                factor_of.append(list(factors).index((c, k)))
            factor_starts.append(len(factor_of))
            for c, k in powers.items():
                if c not in self.boxes:
                    if k > 2:
                        return None
                    free_columns.append(layout.position[c])
                    free_powers.append(k)
            free_starts.append(len(free_columns))
        stacked = np.stack(list(factors.values())) if factors else np.zeros((0, self.rows.size))
        return polynomial_rows(np.ascontiguousarray(self.rows, dtype=np.intp), layout.data,
                               np.array([layout.position[c] for c in a.inputs], dtype=np.intp),
                               np.array([k for k, _ in a.polynomial], dtype=np.float64), stacked,
                               np.array(factor_of, dtype=np.intp), np.array(factor_starts, dtype=np.intp),
                               np.array(free_columns, dtype=np.intp), np.array(free_powers, dtype=np.intp),
                               np.array(free_starts, dtype=np.intp))

    def polynomial_sums(self, a: Aggregate) -> tuple[np.ndarray, np.ndarray]:
        """Per answer row: the :meth:`total` of ``a``'s :meth:`polynomial` terms and its
        :meth:`standard_error`, made once per polynomial."""
        key = (a.polynomial, a.inputs)
        if key not in self._sums:
            terms = self.polynomial(a)[0]
            self._sums[key] = self.total(terms), self.standard_error(terms)
        return self._sums[key]

    def polynomial_every_row(self, a: Aggregate) -> np.ndarray:
        """Per sampled row of the whole sample: ``a``'s :meth:`polynomial` term (0 for rows the kernels do
        not reach), made once per polynomial (do not modify)."""
        key = (a.polynomial, a.inputs)
        if key not in self._every_row:
            out = np.zeros(self.layout.view.size)
            out[self.rows] = self.polynomial(a)[0]
            self._every_row[key] = out
        return self._every_row[key]

    @functools.cached_property
    def ascending_rows(self) -> np.ndarray:
        """:attr:`rows` in ascending order (the row order of passes over the whole sample), made once
        (the terms are kept between queries, :func:`sample_terms`) by marking them, in O(sample)."""
        marked = np.zeros(self.layout.view.size, dtype=bool)
        marked[self.rows] = True
        return np.flatnonzero(marked)

    @functools.cached_property
    def mass_total(self) -> np.ndarray:
        """Per answer row: the :meth:`total` of the rows' masses (the sample's own COUNT(*))."""
        return self.total(self.p)

    def column_moment(self, column: str, power: int, shift: float) -> np.ndarray:
        """Per row: M_power of ``column`` about ``shift`` (its value's power without a range) times
        the other ranges' masses."""
        return self.monomial(Counter({column: power}), self.valid([column]), shift={column: shift})

    def monomial(self, powers: Counter, valid: np.ndarray, shift=None) -> np.ndarray:
        """Per row: prod over range columns c of M_{k_c}(x_c) times prod over the others of x_c^k_c,
        zero where ``valid`` is 0."""
        shift = shift or {}
        term = valid.astype(np.float64)
        for c, (a, b) in self.boxes.items():
            k = powers.get(c, 0)
            term = term * (self.masses[c] if k == 0 and c not in shift else
                           kernel_moment(self.models[c], self.values(c), a, b, self.scale, k, shift.get(c, 0.0)))
        for c, k in powers.items():
            if c not in self.boxes:
                term = term * (np.nan_to_num(self.values(c)) - shift.get(c, 0.0)) ** k
        return term

    def total(self, values: np.ndarray) -> np.ndarray:
        """Per answer row: the stratified total sum_i w_i values_i."""
        return np.bincount(self.group, weights=self.weight * values, minlength=self.groups)

    def standard_error(self, values: np.ndarray) -> np.ndarray:
        """Per answer row: the standard error of :meth:`total` (sampling without replacement, by stratum)."""
        return np.sqrt(answers._stratified_variance(values, self.stratum, self.layout, self.output_of_stratum,
                                                    self.groups))

