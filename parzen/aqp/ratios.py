"""Answers to arithmetic of aggregates (ratios above all) and CASE inside aggregates, with the delta method.

:mod:`parzen.aqp.case_aggregates` splits such a query into leaves L_1, ..., L_m, totals (COUNT(*),
COUNT(col), SUM of an expression) under the query's WHERE AND-ed with conditions, answered by
generated sub-queries through the engine's own forms (totals, grid, calibrated sample, domain
estimates), and an arithmetic expression g per output column.  The answer is g(L_hat) per group.

**The interval** is the delta method with the covariance of the leaves, which are estimated from
the same weighted sample (Cochran, W. G., *Sampling Techniques*, 3rd ed., Wiley 1977, chapter 6,
"Ratio estimators": the first-order variance of R_hat = Y_hat / X_hat; Woodruff, R. S., "A simple
method for approximating the variance of a complicated estimate", JASA 66(334), 1971, 411-414, for
any smooth g; full citations in docs/statistics.md, "Sources").  Each leaf is a stratified total of per-row terms t_{k,i} (the row's kernel mass in the
box, times the summed expression's kernel moment; 0 for rows its conditions exclude),
L_hat_k = sum_i w_i t_{k,i}, w_i = rows_s / drawn_s of the row's stratum s, so

    g(L_hat) - g(L) ~ sum_k (dg / dL_k) (L_hat_k - L_k) = sum_i w_i z_i - E,
    z_i = sum_k (dg / dL_k)(L_hat) t_{k,i},
    Var g(L_hat) ~ sum_s rows_s^2 (1 - drawn_s / rows_s) S^2_{s,d}(z) / drawn_s

(the stratified variance of the total of z over the answer row's domain d, as in
:mod:`parzen.aqp.domains`: S^2_{s,d} over all drawn rows of stratum s of z_i 1[i in d]).  For
R = Y / X this is Cochran's Var(R_hat) = Var(Y_hat - R X_hat) / X^2, whose covariance term makes a
ratio of two totals of the same rows (TPC-H Q14's promotion share) far narrower than the two
totals' own errors.  A leaf that the engine answers exactly (interval of width 0: exact totals) is
a constant there.  The interval is g +- t sd, t Student's quantile at the level of z with the
effective degrees of freedom of the variance estimate of z_i (Box's kurtosis correction and
Satterthwaite's rule, :mod:`parzen.aqp.tails`, as every other sample interval; t is z for many
rows, and wider where few sampled rows of a heavy-tailed column carry the answer); under GROUP BY
it also spans g at the plain (uncalibrated) totals, as :func:`parzen.aqp.answers.approximate` does for raked groups.  A WHERE
with OR / NOT, or a group without a sampled row, has no per-row terms here: its half width is
sum_k |dg / dL_k| h_k from the leaves' own half widths h_k (first order; sd(X + Y) <= sd(X) +
sd(Y), conservative).  :meth:`parzen.aqp.Engine.query` widens the result by the smoothing bias's
estimate of the whole expression (:func:`parzen.aqp.contract.cover_bias`), which is where the
leaves' bias enters.

The sub-queries' answers and the per-row terms t_{k,i} read one set of the sample's kernel terms per
set of ranges (:func:`parzen.aqp.aggregates.sample_terms`: masses, a polynomial's terms and sums), made
once and kept with the synopsis's strata for the next query of the same ranges (:mod:`parzen.aqp._kept`):
the queries of a family that differ in their CASE conditions or IN lists on categorical columns filter
the same terms.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ._cell_sums import (
    add_scaled,
    add_scaled_kept,
    add_scaled_kept_rows,
    add_scaled_rows,
    stratum_sums_of_last_scaled,
    stratum_sums_of_runs,
    stratum_sums_of_two_scaled,
)
from ._kept import shared_terms
from .aggregates import sample_terms
from .answers import Row, _column_index
from .case_aggregates import LEAF, ROWS, Composite, Expression
from .column_frames import frame_of
from .contract import RELATIVE_HALF_WIDTH, relative_half_width_of, rounding_bound
from .cube_answers import Totals
from .cube_answers import _column_index as _table_labels
from .cubes import Cube
from .domains import BOUNDED_GROUPS, domain_selection, domain_spread, domain_spread_of_cells, needed, stratum_runs
from .sql import AggregateQuery
from .strata import Layout
from .synopsis import Synopsis
from .tails import t_quantiles
from .value_index import member_mask

#: Answers one parsed sub-query from a synopsis: (frame, form), intervals at z when z is given (without
#: GROUP BY the frame may be its :class:`parzen.aqp.answers.Row`, the floats it would be made of).
Answerer = Callable[[AggregateQuery, Synopsis, "float | None"], "tuple[pd.DataFrame | Row, str]"]
#: Forms, most exact first: a composite answer names the least exact of its sub-queries'.
_FORMS = ("totals", "grid", "sample")

#: pandas' dtype of text (what a DataFrame infers from strings, NULL as NaN).
_TEXT = pd.StringDtype(na_value=np.nan)
#: :func:`parzen.aqp._cell_sums.stratum_sums_of_last_scaled`'s ``keep`` of a leaf without a categorical filter (not read).
_NO_KEEP = np.zeros(0, dtype=np.bool_)


def approximate(composite: Composite, subqueries: Sequence[AggregateQuery], synopsis: Synopsis, layout: Layout,
                answer: Answerer, z: float | None, placement: list | None = None,
                rounding_rows: int | None = None) -> tuple[pd.DataFrame, str]:
    """The answer to a :class:`~parzen.aqp.case_aggregates.Composite` query (see the module).

    Parameters
    ----------
    composite : Composite
        The split query.
    subqueries : sequence of AggregateQuery
        Its sub-queries parsed (and resolved to the synopsis's names), in ``composite.subqueries``'s order.
    synopsis : Synopsis
        The synopsis that answers them.
    layout : Layout
        Its strata.
    answer : callable
        Answers one sub-query (the engine's forms, without the bias term).
    z : float or None
        The intervals' normal quantile; None: none.
    placement : list, optional
        Filled with the answer's number of rows and, per sub-query, where each row of its answer goes
        among them (-1: none), for :func:`bias_runs`.
    rounding_rows : int, optional
        With ``z``: the table's rows, and the intervals of an answer not of the form "totals" are
        widened on both sides by :func:`parzen.aqp.contract.rounding_bound` of each value (what
        :func:`parzen.aqp.contract.cover_rounding` does to the frame, here on the arrays it is made of:
        the same floats).

    Returns
    -------
    frame : pandas.DataFrame
        One row per group of the query (those of its WHERE alone), the group columns and each output
        (with ``<name> low`` / ``<name> high`` when ``z`` is given).
    form : str
        The least exact form among the sub-queries' ("totals", "grid", "sample").
    """
    with shared_terms():  # the sub-queries' answers and the per-row terms share the sample's kernel terms
        return _approximate(composite, subqueries, synopsis, layout, answer, z, placement, rounding_rows)


def _approximate(composite: Composite, subqueries: Sequence[AggregateQuery], synopsis: Synopsis, layout: Layout,
                 answer: Answerer, z: float | None, placement: list | None,
                 rounding_rows: int | None) -> tuple[pd.DataFrame, str]:
    """:func:`approximate`'s work, within :func:`parzen.aqp._kept.shared_terms`."""
    frames, forms = zip(*(answer(q, synopsis, z) for q in subqueries))
    keys, leaf_values, leaf_half, bounded, placed = _leaf_table(composite, frames, z is not None)
    if placement is not None:
        placement[:] = [len(keys), placed]
    known = {k: np.full(len(keys), form == "totals") for (_, indices), form in zip(composite.subqueries, forms)
             for k in indices}  # exact leaves: a count of 0 there makes a SUM of a CASE NULL
    values, gradients = {}, {}
    for output in composite.outputs:
        values[output.name], gradients[output.name] = _evaluate(output.expression, leaf_values, known)
    low = high = None
    if z is not None:
        low, high = {}, {}
        exact = {k: half == 0.0 for k, half in leaf_half.items()}
        per_row = _RowTerms(composite, subqueries, synopsis, layout, keys) if not any(q.boxes for q in subqueries) \
            else None
        for output in composite.outputs:
            value, gradient = values[output.name], gradients[output.name]
            plain = value  # g at the plain totals: without GROUP BY the value itself
            if per_row is None:
                half = _first_order(gradient, leaf_half, len(keys))
            else:
                variance, df = per_row.variance(gradient, exact)
                half = t_quantiles(z, df) * np.sqrt(variance)
                if bounded.any():  # (np.where of no row would copy half as it is)
                    half = np.where(bounded, _first_order(gradient, leaf_half, len(keys)), half)
                if composite.group_by:
                    plain_values = {k: np.where(exact[k], leaf_values[k], per_row.total(k)) for k in leaf_values}
                    plain = _evaluate(output.expression, plain_values, known)[0]
                    plain = np.where(np.isnan(plain) | bounded, value, plain)
            with np.errstate(invalid="ignore"):  # (fmin / fmax of the value and itself: the value)
                low[output.name] = (value if plain is value else np.fmin(value, plain)) - half
                high[output.name] = (value if plain is value else np.fmax(value, plain)) + half
    form = max(forms, key=_FORMS.index)
    if rounding_rows is not None and low is not None and high is not None and form != "totals":
        for name, value in values.items():  # float64 round-off against DuckDB's own sums
            bound = rounding_bound(value, rounding_rows)
            low[name], high[name] = low[name] - bound, high[name] + bound
    return _frame(composite, keys, values, low, high), form



def exact(composite: Composite, groups: Sequence[Sequence], totals: Sequence[Totals], rows: int,
          with_error: bool, cube: Cube, drop_intervals: bool = False) -> pd.DataFrame:
    """The answer to a :class:`~parzen.aqp.case_aggregates.Composite` query from exact answers to its
    sub-queries (the exact aggregate tables', :func:`parzen.aqp.cube_answers.answer_each`): g(L) per group.

    The leaves L_k are exact totals up to float64 round-off, so the interval has no sampling or bias
    term; it holds the round-off of the leaves carried to the output to first order and that of the
    arithmetic itself:

        half = sum_k |dg / dL_k| 2 gamma_n |L_k| + 2 gamma_m |g|,

    2 gamma_n |L_k| the bound of :func:`parzen.aqp.contract.rounding_bound` on a total of n = ``rows``
    terms of one sign (between our sum and DuckDB's), m the nodes of g's expression (its operations, at
    least 1; Higham 2002,
    *Accuracy and Stability of Numerical Algorithms*, sections 3.1 and 4.2).  A difference of leaves,
    e.g. an ELSE branch COUNT(*) - COUNT under c, is bounded by the leaves' sizes, not the result's.

    Parameters
    ----------
    composite : Composite
        The split query.
    groups : sequence of sequences
        Per group column, its value per group of the first sub-query (no condition, so it has every
        group), as :func:`parzen.aqp.cube_answers.answer_each` gives them.
    totals : sequence of Totals
        The exact totals of its sub-queries, in ``composite.subqueries``'s order
        (:func:`parzen.aqp.cube_answers.answer_each`).
    rows : int
        The table's rows (the terms of each total).
    with_error : bool
        Whether to add ``<name> low`` / ``<name> high``.
    cube : Cube
        The exact aggregate tables that gave the totals (they keep the answers' column labels,
        :func:`parzen.aqp.cube_answers._column_index`).
    drop_intervals : bool
        With ``with_error``: the frame without ``<name> low`` / ``<name> high``, and the intervals' largest
        half width / |value| in ``attrs["relative_half_width"]`` (the error contract's check,
        :func:`parzen.aqp.contract.relative_half_width_of`, on the arrays: no frame of intervals is made).

    Returns
    -------
    pandas.DataFrame
        One row per group of the first sub-query, as :func:`approximate` shapes it.
    """
    leaf_values = _exact_leaves(composite, totals)
    size = len(totals[0].keys)
    leaf_bounds = {k: rounding_bound(v, rows) for k, v in leaf_values.items()}
    values: dict[str, np.ndarray] = {}
    low: dict[str, np.ndarray] | None = {} if with_error else None
    high: dict[str, np.ndarray] | None = {} if with_error else None
    known = {k: np.ones(size, dtype=bool) for k in leaf_values}
    for output in composite.outputs:
        value, gradient = _evaluate(output.expression, leaf_values, known)
        values[output.name] = value
        if low is None or high is None:
            continue
        with np.errstate(invalid="ignore"):
            half = sum((np.where(leaf_bounds[k] > 0.0, np.abs(d) * leaf_bounds[k], 0.0) for k, d in gradient.items()),
                       rounding_bound(value, _operations(output.expression)))
        low[output.name], high[output.name] = value - half, value + half
    if low is None or high is None or not drop_intervals:
        return _exact_frame(composite, groups, size, values, low, high, cube)
    frame = _exact_frame(composite, groups, size, values, None, None, cube)
    frame.attrs[RELATIVE_HALF_WIDTH] = relative_half_width_of(
        [a for name in values for a in (values[name], low[name], high[name])], size)
    return frame


def _exact_leaves(composite: Composite, totals: Sequence[Totals]) -> dict[int, np.ndarray]:
    """:func:`_leaf_table`'s leaf values from exact totals, over the first sub-query's groups: each
    sub-query's groups placed among them by their codes (rows sorted lexicographically by code in both),
    0 where it has none.  A sub-query with the first one's groups (every one where each CASE branch has
    rows in each group, as TPC-H Q12's) gives its totals as they are, without numbering the codes."""
    codes = totals[0].keys
    placements = _placements(totals) if any(not np.array_equal(t.keys, codes) for t in totals[1:]) else None
    values: dict[int, np.ndarray] = {}
    for j, (found, (_, indices)) in enumerate(zip(totals, composite.subqueries)):
        for k in indices:
            total = np.asarray(found.totals[f"{LEAF}{k}"], dtype=np.float64)
            if placements is None:
                values[k] = _finite(np.array(total))
                continue
            rows, placed = placements[j]
            v = np.zeros(len(codes))
            v[rows[placed]] = total[placed]
            values[k] = _finite(v)
    return values


def _finite(v: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(v)`` in place (SUM over no row: 0 in a sum of totals), read once where every value is
    finite (its own checks cost 10 us a call)."""
    return v if np.isfinite(v).all() else np.nan_to_num(v, copy=False)


def _placements(totals: Sequence[Totals]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per sub-query's totals, the row of each of its groups among the first sub-query's groups and
    whether it is there (:func:`_exact_leaves`)."""
    codes = totals[0].keys
    radix = np.max([t.keys.max(axis=0, initial=0) for t in totals], axis=0) + 1
    weights = np.cumprod(np.concatenate([[1], radix[:0:-1]]))[::-1]  # code j weighs the radices after it

    def numbered(k: np.ndarray) -> np.ndarray:  # each row's codes as one number, in the rows' order
        return k @ weights if radix.size else np.zeros(len(k), dtype=np.int64)

    numbers = numbered(codes)
    out = []
    for found in totals:
        mine = numbered(found.keys)
        rows = np.minimum(np.searchsorted(numbers, mine), max(len(numbers) - 1, 0))
        out.append((rows, numbers[rows] == mine if len(numbers) else np.zeros(len(mine), dtype=bool)))
    return out


def _operations(expression: Expression) -> int:
    """The nodes of ``expression`` (leaves, numbers and operations): a bound on its operations, at least 1."""
    if expression[0] in ("number", "leaf"):
        return 1
    return 1 + _operations(expression[1]) + _operations(expression[2])

def bias_runs(composite: Composite, subqueries: Sequence[AggregateQuery], placement: list, synopses: list[Synopsis],
              runs: Callable[[AggregateQuery, list[Synopsis]], list]) -> list[dict[str, np.ndarray]]:
    """The values of :func:`approximate`'s answers without intervals from synopses that differ in their
    bandwidths only (the bias term's, :func:`parzen.aqp.contract.cover_bias`): per synopsis, per output
    one array in the row order of the answer at the synopsis's own bandwidths, with no DataFrame built.

    Each sub-query's answers come from ``runs`` (all bandwidths at once: e.g.
    :func:`parzen.aqp.answers.bias_runs`, :func:`parzen.aqp.domains.bias_runs`), whose rows are those of
    its answer at the synopsis's own bandwidths (a sub-query's groups do not depend on them), so they
    go where ``placement`` (filled by :func:`approximate` at those bandwidths) puts them; the leaves and
    outputs are then computed as :func:`approximate` computes them: the same floats.

    Parameters
    ----------
    composite : Composite
        The split query.
    subqueries : sequence of AggregateQuery
        Its sub-queries, parsed and resolved, in ``composite.subqueries``'s order.
    placement : list
        As :func:`approximate` filled it.
    synopses : list of Synopsis
        The synopsis with its bandwidths scaled.
    runs : callable
        Per sub-query and list of synopses, per synopsis its answer's values (per aggregate an array
        in its answer's row order) or its answer.

    Returns
    -------
    list of dict of str to numpy.ndarray
        Per synopsis, per output name, its values.
    """
    groups, placed = placement
    answered = [runs(q, synopses) for q in subqueries]
    out = []
    for f in range(len(synopses)):
        leaf_values: dict[int, np.ndarray] = {}
        for rows_array, run, (_, indices) in zip(placed, answered, composite.subqueries):
            found = rows_array >= 0
            for k in indices:
                column = np.asarray(run[f][f"{LEAF}{k}"], dtype=np.float64)
                v = np.zeros(groups)
                v[rows_array[found]] = column[found]
                leaf_values[k] = np.nan_to_num(v)
        out.append({output.name: _evaluate(output.expression, leaf_values)[0] for output in composite.outputs})
    return out


def _leaf_table(composite: Composite, frames, with_error: bool):
    """The groups (those of the first sub-query, which has no condition), each leaf's value and half
    width per group (0 and 0 where its sub-query has no such group: no row), the groups that some
    sub-query answered without a sampled row (:data:`parzen.aqp.domains.BOUNDED_GROUPS`), and per
    sub-query where each row of its answer goes among the groups (-1: none).  ``frames`` are the
    sub-queries' answers: DataFrames, or without GROUP BY their :class:`parzen.aqp.answers.Row`."""
    group_by = list(composite.group_by)
    base = frames[0]
    if group_by:
        group_columns = [c for c in base.columns if c not in (ROWS, f"{ROWS} low", f"{ROWS} high")
                         and not str(c).startswith(LEAF)]
        keys = _row_keys(base, group_columns)
    else:
        keys = [()]
    position = {key: g for g, key in enumerate(keys)}
    values: dict[int, np.ndarray] = {}
    half: dict[int, np.ndarray] = {}
    bounded = np.zeros(len(keys), dtype=bool)
    placed = []
    for frame, (_, indices) in zip(frames, composite.subqueries):
        held = set(frame.attrs.get(BOUNDED_GROUPS, []))
        if group_by:
            columns = [c for c in frame.columns if not str(c).startswith(LEAF) and not str(c).startswith(ROWS)]
            rows = [position.get(key, -1) for key in _row_keys(frame, columns)]
            if held:
                for key in held:
                    if tuple(key) in position:
                        bounded[position[tuple(key)]] = True
        else:
            rows = [0] * len(frame)
            bounded[0] |= bool(held)
        rows_array = np.asarray(rows, dtype=np.intp)
        placed.append(rows_array)
        read = _float_columns(frame, bool(group_by))
        if not group_by and len(frame) == 1:  # its one row is group 0's
            for k in indices:
                values[k], half[k] = _one_row_leaf(read, f"{LEAF}{k}", with_error)
            continue
        found = rows_array >= 0
        for k in indices:
            name = f"{LEAF}{k}"
            v = np.zeros(len(keys))
            v[rows_array[found]] = read(name)[found]
            values[k] = v if np.isfinite(v).all() else np.nan_to_num(v)  # SUM over no row: 0 in a sum of totals
            h = np.zeros(len(keys))
            if with_error:
                column = read(name)[found]
                h[rows_array[found]] = np.fmax(column - read(f"{name} low")[found], read(f"{name} high")[found] - column)
            half[k] = h if np.isfinite(h).all() else np.nan_to_num(h, nan=np.inf)
    return keys, values, half, bounded, placed


def _one_row_leaf(read: Callable[[str], np.ndarray], name: str, with_error: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_leaf_table`'s value and half width of leaf ``name`` from its sub-query's one row (no GROUP BY;
    ``read``: :func:`_float_columns`): the floats of the general path, without its gathers and scatters
    (a dozen NumPy calls on arrays of one element: 10 us a sub-query less)."""
    value = np.array(read(name), dtype=np.float64)
    half = np.fmax(value - read(f"{name} low"), read(f"{name} high") - value) if with_error else np.zeros(1)
    return value if math.isfinite(value[0]) else np.nan_to_num(value), \
        half if math.isfinite(half[0]) else np.nan_to_num(half, nan=np.inf)


def _float_columns(frame: pd.DataFrame | Row, grouped: bool) -> Callable[[str], np.ndarray]:
    """Reads a column of ``frame`` as float64: from a :class:`parzen.aqp.answers.Row` as it holds them;
    without GROUP BY (every column a number) from the frame's values read once as one array, else column
    by column."""
    if isinstance(frame, Row):
        return frame.column
    if grouped:
        return lambda name: frame[name].to_numpy(dtype=np.float64)
    block = frame.to_numpy(dtype=np.float64)
    at = {name: j for j, name in enumerate(frame.columns)}
    return lambda name: block[:, at[name]]


def _row_keys(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """Per row of ``frame``, its values of ``columns`` as a tuple (read column by column: a DataFrame of
    the columns costs more than the rows of a few groups)."""
    return list(zip(*(frame[c].tolist() for c in columns))) if columns else [()] * len(frame)


def _evaluate(expression: Expression, leaves: dict[int, np.ndarray],
              known: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The expression's value per group and its gradient (leaf -> d value / d leaf), forward mode.
    ``("null_if_none", a, n)`` is a, NULL (NaN) in the groups where n is 0 and every leaf of n is
    exact there (``known``: leaf -> per group; None: none is, so a stays)."""
    with np.errstate(invalid="ignore", divide="ignore"):  # set once for the whole tree (5 us a node)
        return _evaluated(expression, leaves, known)


def _evaluated(expression: Expression, leaves: dict[int, np.ndarray],
               known: dict[int, np.ndarray] | None) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """:func:`_evaluate`'s recursion, within its ``np.errstate``."""
    kind = expression[0]
    size = len(next(iter(leaves.values()))) if leaves else 1
    if kind == "number":
        return np.full(size, expression[1]), {}
    if kind == "leaf":
        return leaves[expression[1]].astype(np.float64), {expression[1]: np.ones(size)}
    if kind == "null_if_none":
        value, slopes = _evaluated(expression[1], leaves, known)
        if known is None:
            return value, slopes
        count, counted = _evaluated(expression[2], leaves, known)
        none = (count == 0.0) & np.logical_and.reduce([known[k] for k in counted] + [np.ones(size, dtype=bool)])
        return np.where(none, np.nan, value), slopes
    (a, da), (b, db) = _evaluated(expression[1], leaves, known), _evaluated(expression[2], leaves, known)
    gradient: dict[int, np.ndarray] = {}

    def add(d: dict[int, np.ndarray], factor) -> None:
        for k, v in d.items():
            gradient[k] = gradient.get(k, 0.0) + factor * v

    if kind == "+":
        add(da, 1.0)
        add(db, 1.0)
        return a + b, gradient
    if kind == "-":
        add(da, 1.0)
        add(db, -1.0)
        return a - b, gradient
    if kind == "*":
        add(da, b)
        add(db, a)
        return a * b, gradient
    value = np.where(b != 0.0, a / np.where(b != 0.0, b, 1.0), np.nan)  # x / 0: NULL
    add(da, 1.0 / b)
    add(db, -a / (b * b))
    return value, gradient


class _RowTerms:
    """Per sampled row in an answer row: each leaf's term t_{k,i}, the row's answer row and its stratum
    (rows in no answer row are left out: they add nothing to a total or a domain variance)."""

    def __init__(self, composite: Composite, subqueries: Sequence[AggregateQuery], synopsis: Synopsis,
                 layout: Layout, keys: list[tuple]) -> None:
        self.synopsis, self.layout = synopsis, layout
        self.size = synopsis.sample_size
        grouped = composite.group_by and subqueries[0].group_by
        group = _row_groups(grouped, synopsis, layout, keys) if grouped else None  # None: every row in answer row 0
        inside = None if group is None or (group >= 0).all() else group >= 0  # None: every sampled row (no copy made)
        self._group = group if group is None or inside is None else group[inside]
        self.stratum = layout.stratum_of_row if inside is None else layout.stratum_of_row[inside]
        self.groups = len(keys)
        self.terms: dict[int, np.ndarray] = {}
        self.keeps: dict[int, np.ndarray | None] = {}  # per leaf: its rows' categorical filter (None: every row)
        self._totals: dict[int, np.ndarray] = {}
        samples: dict[tuple, object] = {}  # per set of ranges on the numeric columns, its rows and masses
        for query, (_, indices) in zip(subqueries, composite.subqueries):
            keep = _categorical_filter(query, synopsis, layout)
            smoothed = (not query.group_by and not query.members,  # answers.whole_table: the kernels' widths
                        *sorted((c, r) for c, r in query.ranges.items() if c in synopsis.models))
            if smoothed not in samples:  # CASE conditions on categorical columns: one kernel pass for all
                samples[smoothed] = _sample_terms(query, synopsis, layout)
            sample = samples[smoothed]
            for k in indices:
                aggregate = next(a for a in query.aggregates if a.name == f"{LEAF}{k}")
                term = _leaf_terms(aggregate, synopsis, sample)
                self.terms[k] = term if inside is None else term[inside]
                self.keeps[k] = keep if keep is None or inside is None else keep[inside]
        #: one answer row: the sampled rows, ascending, outside which every leaf's term is 0 (those its
        #: kernels reach), so z is 0 there too; None: every row (self.group's)
        self.support = _reached_rows(list(samples.values())) if group is None else None

    @functools.cached_property
    def group(self) -> np.ndarray:
        """Per row, its answer row (:func:`_row_groups`; without GROUP BY 0, made where it is read)."""
        return np.zeros(self.size, dtype=np.intp) if self._group is None else self._group

    @functools.cached_property
    def weight(self) -> np.ndarray:
        """Per row, its stratum's rows / drawn (read by :meth:`total` only: under GROUP BY)."""
        return self.layout.weight[self.stratum]

    def total(self, k: int) -> np.ndarray:
        """The plain stratified total of leaf k per answer row (made once per leaf)."""
        if k not in self._totals:
            keep = self.keeps[k]
            term = self.terms[k] if keep is None else self.terms[k] * keep
            self._totals[k] = np.bincount(self.group, weights=self.weight * term, minlength=self.groups)
        return self._totals[k]

    def variance(self, gradient: dict[int, np.ndarray],
                 exact: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Var of g per answer row: the domain variance of z_i = sum_k dg/dL_k t_{k,i} (exact leaves left
        out), and that estimate's effective degrees of freedom (:func:`parzen.aqp.domains.domain_spread`)."""
        if self.support is not None:
            return self._variance_on_support(gradient, exact)
        z = np.zeros(self.group.size)
        group = np.ascontiguousarray(self.group, dtype=np.intp)
        for k, d in gradient.items():
            factor = np.where(exact[k] | ~np.isfinite(d), 0.0, d)  # NaN and infinite slopes: 0
            factor = np.ascontiguousarray(factor, dtype=np.float64)
            keep = self.keeps[k]
            if keep is None:
                add_scaled(z, factor, group, self.terms[k])
            else:  # the term times 1.0 / 0.0, as the product would be
                add_scaled_kept(z, factor, group, self.terms[k], keep)
        return domain_spread(z, self.stratum, self.group, self.layout, len(self.layout.keys), self.groups)

    def _variance_on_support(self, gradient: dict[int, np.ndarray],
                             exact: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`variance` of one answer row from z on :attr:`support` only: the same floats (z is +0.0
        elsewhere, which adds nothing to a sum from +0.0), each stratum's rows its drawn rows (the strata
        are runs of the sample, ``Synopsis.strata``), in passes over the rows the kernels reach."""
        rows = self.support
        assert rows is not None
        layout = self.layout
        bounds = np.searchsorted(rows, stratum_runs(layout))
        leaves = [(_factor(d, exact[k]), self.terms[k], self.keeps[k]) for k, d in gradient.items()]
        if len(leaves) == 2:  # a ratio's: z made and summed in one pass, without its array
            (first_factor, first_term, first_keep), (factor, term, keep) = leaves
            s1, s2, s4 = stratum_sums_of_two_scaled(first_factor, first_term, _kept_mask(first_keep),
                                                    first_keep is not None, factor, term, _kept_mask(keep),
                                                    keep is not None, rows, bounds)
            return self._one_domain_spread(s1, s2, s4)
        z = np.zeros(rows.size)
        for factor, term, keep in leaves[:-1]:
            if keep is None:
                add_scaled_rows(z, factor, term, rows)
            else:  # the term times 1.0 / 0.0, as the product would be
                add_scaled_kept_rows(z, factor, term, keep, rows)
        if leaves:  # the last leaf added in the sums' pass (one pass less over the rows)
            factor, term, keep = leaves[-1]
            s1, s2, s4 = stratum_sums_of_last_scaled(z, factor, term, _kept_mask(keep), keep is not None, rows, bounds)
        else:  # no leaf: z is 0
            s1, s2, s4 = stratum_sums_of_runs(z, bounds)
        return self._one_domain_spread(s1, s2, s4)

    def _one_domain_spread(self, s1: np.ndarray, s2: np.ndarray, s4: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The variance and degrees of freedom of one answer row from its strata's sums of z, z^2 and z^4."""
        layout = self.layout
        held = np.flatnonzero(layout.drawn)  # the strata that hold sampled rows: the cells of one domain
        return domain_spread_of_cells((held, layout.drawn[held], s1[held], s2[held], s4[held]), layout, 1)


def _first_order(gradient: dict[int, np.ndarray], leaf_half: dict[int, np.ndarray], groups: int) -> np.ndarray:
    """The half width sum_k |dg / dL_k| h_k of the leaves' own half widths h_k (first order, :func:`approximate`)."""
    with np.errstate(invalid="ignore"):  # inf * 0 where an output is NULL (x / 0): NaN, as the output
        return sum((np.abs(d) * leaf_half[k] for k, d in gradient.items()), np.zeros(groups))


def _kept_mask(keep: np.ndarray | None) -> np.ndarray:
    """A leaf's categorical filter as the compiled sums read it (:data:`_NO_KEEP` where it has none: not read)."""
    return _NO_KEEP if keep is None else keep


def _factor(slope: np.ndarray, exact: np.ndarray) -> float:
    """A leaf's factor in z of one answer row (:meth:`_RowTerms.variance`): its slope, 0 where the leaf is
    exact or the slope NaN or infinite."""
    value = float(slope[0])  # (a float64 as it is: np.where's 0.0 / slope on one element, in Python)
    return 0.0 if exact[0] or not math.isfinite(value) else value


def _sample_terms(query: AggregateQuery, synopsis: Synopsis, layout: Layout):
    """The :class:`parzen.aqp.aggregates._SampleTerms` of ``query``'s ranges on the numeric columns, one
    answer row."""
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    return sample_terms(query, synopsis, layout, ranges, np.zeros(len(layout.keys), dtype=np.intp), 1)


def _reached_rows(samples: list) -> np.ndarray:
    """The sampled rows, ascending, that the kernels of any of ``samples`` (:func:`_sample_terms`) reach:
    every leaf's term is 0 on the others (one sample's rows where all reach the same ones, as the
    sub-queries of TPC-H Q14's ratio do, with kernels of other widths: their rows are found in the same
    order).  The samples' rows are compared as found, so that only the first one's are put in order
    (:attr:`parzen.aqp.aggregates._SampleTerms.ascending_rows`, an O(sample) pass, 100-200 us on SF10)."""
    first = samples[0]
    if all(s is first or np.array_equal(s.rows, first.rows) for s in samples[1:]):
        return first.ascending_rows
    marked = np.zeros(first.layout.view.size, dtype=bool)
    for sample in samples:
        marked[sample.rows] = True
    return np.flatnonzero(marked)


def _leaf_terms(aggregate, synopsis: Synopsis, sample) -> np.ndarray:
    """Per sampled row, the leaf's term: its kernel mass in its sub-query's box on the numeric columns
    (1 without a range), times the summed expression's kernel moments (``sample``, the sub-query's
    :func:`_sample_terms`), 0 where an aggregated column is NULL (COUNT(col), SUM)."""
    if aggregate.func == "count":
        term = sample.p if aggregate.column is None else sample.p * sample.valid([aggregate.column])
    elif aggregate.polynomial:
        return sample.polynomial_every_row(aggregate)
    else:
        term = sample.monomial(Counter({aggregate.column: 1}), sample.valid([aggregate.column]))
    out = np.zeros(synopsis.sample_size)
    out[sample.rows] = term
    return out


def _row_values(column: str, synopsis: Synopsis, layout: Layout) -> tuple[np.ndarray, list]:
    """Per sampled row the code of its value of the categorical ``column``, and the values by code."""
    if column in synopsis.group_by:
        position = synopsis.group_by.index(column)
        values: list = []
        index: dict = {}
        code_of_stratum = np.array([index.setdefault(key[position], len(index)) for key in layout.keys], dtype=np.intp)
        values = list(index)
        return code_of_stratum[layout.stratum_of_row], values
    categories = synopsis.categories
    assert categories is not None and column in categories.values
    return categories.codes[column], categories.values[column]  # small integers: they index as they are


def _categorical_filter(query: AggregateQuery, synopsis: Synopsis, layout: Layout) -> np.ndarray | None:
    """True for the sampled rows whose categorical values pass the query's IN / = and ranges on
    categorical columns (a leaf's term counts there, times 1.0, and is multiplied by 0.0 elsewhere);
    None where the query has none (every row passes: a product with 1.0 would change no term).  Where
    the sub-query was answered by domain estimation on the same tests (its
    :func:`parzen.aqp.domains.domain_selection`, kept, reads the same codes: no GROUP BY, no comparison
    of columns, no range filtered by codes, columns outside the synopsis's GROUP BY), it is that
    selection's mask (read only), without a pass over every row's codes."""
    columns = [*query.members, *(c for c in query.ranges if c not in synopsis.models)]
    if columns and not query.group_by and not query.compared and needed(query, synopsis) and \
            all(c not in synopsis.group_by for c in columns):
        selected = domain_selection(query, synopsis, layout)
        if not selected.discrete:
            return selected.keep
    keep = None  # the AND of each column's tests
    for column in dict.fromkeys(columns):
        codes, values = _row_values(column, synopsis, layout)
        allowed = np.ones(len(values), dtype=bool)
        if column in query.members:
            allowed &= member_mask(values, query.members[column])  # matches(v, literal) for every pair
        if column in query.ranges:
            r = query.ranges[column]
            allowed &= np.array([v is not None and not isinstance(v, str) and r.contains(float(v)) for v in values],
                                dtype=bool)
        passed = allowed[codes]
        keep = passed if keep is None else keep & passed
    return keep


def _row_groups(group_by, synopsis: Synopsis, layout: Layout, keys: list[tuple]) -> np.ndarray:
    """Per sampled row, the index of its answer row in ``keys`` (-1: none), read from its values of
    the GROUP BY columns (strata keys or categorical codes)."""
    if not group_by:
        return np.zeros(synopsis.sample_size, dtype=np.intp)
    combined = np.zeros(synopsis.sample_size, dtype=np.int64)
    tables = []
    for column in group_by:
        codes, values = _row_values(column, synopsis, layout)
        combined = combined * len(values) + codes
        tables.append(values)
    size = int(np.prod([len(values) for values in tables], dtype=np.float64))
    if size <= 4 * synopsis.sample_size:  # the codes present, by counting (no sort of the sample)
        dense = np.flatnonzero(np.bincount(combined, minlength=size))
        slot = np.zeros(size, dtype=np.intp)
        slot[dense] = np.arange(dense.size)
        present, inverse = dense, slot[combined]
    else:
        present, inverse = np.unique(combined, return_inverse=True)
    position = {key: g for g, key in enumerate(keys)}
    lookup = np.full(present.size, -1, dtype=np.intp)
    for u, code in enumerate(present.tolist()):
        decoded = []
        for values in reversed(tables):
            code, c = divmod(code, len(values))
            decoded.append(values[c])
        lookup[u] = position.get(tuple(reversed(decoded)), -1)
    return lookup[inverse.reshape(-1)]


def _frame(composite: Composite, keys: list[tuple], values, low, high) -> pd.DataFrame:
    """The answer in the query's SELECT order, one row per group key (without GROUP BY one row of
    floats made as one array, as :func:`parzen.aqp.answers.frame` makes it)."""
    if not composite.group_by and len(keys) == 1 and all(not isinstance(item, str) for item in composite.select):
        names = tuple(output.name for output in composite.outputs)
        row = [v for name in names for v in ((values[name][0],) if low is None or high is None
                                             else (values[name][0], low[name][0], high[name][0]))]
        return pd.DataFrame(np.array([row], dtype=np.float64), columns=_column_index(names, low is not None),
                            index=pd.RangeIndex(1), copy=False)
    columns: dict[str, object] = {}
    for item in composite.select:
        if isinstance(item, str):
            position = next(k for k, g in enumerate(composite.group_by) if g.casefold() == item.casefold())
            columns[item] = [key[position] for key in keys]
            continue
        columns[item.name] = values[item.name]
        if low is not None:
            columns[f"{item.name} low"] = low[item.name]
            columns[f"{item.name} high"] = high[item.name]
    return pd.DataFrame(columns, index=pd.RangeIndex(len(keys)))


def _exact_frame(composite: Composite, groups: Sequence[Sequence], size: int, values, low, high,
                 cube: Cube) -> pd.DataFrame:
    """:func:`_frame` of an exact answer, ``size`` rows: per group column (GROUP BY order) its values
    ``groups`` (:func:`parzen.aqp.cube_answers.answer_each`).  Where every group column is pandas' string
    array and every other a float64 array (the exact tables' text groups) the frame is made at once from
    them, as :func:`parzen.aqp.cube_answers.answer` makes its frames (the dtypes a DataFrame of a dict
    infers, without its checks), under the column labels ``cube`` keeps for these columns."""
    columns: dict[str, object] = {}
    for item in composite.select:
        if isinstance(item, str):
            position = next(k for k, g in enumerate(composite.group_by) if g.casefold() == item.casefold())
            columns[item] = groups[position]
            continue
        columns[item.name] = values[item.name]
        if low is not None:
            columns[f"{item.name} low"] = low[item.name]
            columns[f"{item.name} high"] = high[item.name]
    index = pd.RangeIndex(size)
    if all(isinstance(c, np.ndarray) and c.dtype == np.float64 and c.ndim == 1 or
           isinstance(c, pd.api.extensions.ExtensionArray) and c.dtype == _TEXT for c in columns.values()):
        return frame_of(list(columns.values()), _table_labels(cube, tuple(columns)), index)
    return pd.DataFrame(columns, index=index)

