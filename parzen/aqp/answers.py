"""An answer and its interval, from the box integrals of a synopsis and the calibration estimators.

One answer path (:func:`approximate`): the point answer is the same whether or not an interval is
asked for, and the interval is built around it.

- **totals**: no range on a numeric column: the groups' exact totals (an interval of width 0);
- **grid**: one range column, no GROUP BY or IN / =, every aggregate COUNT(*) or of that column:
  read off its gridded form (:mod:`parzen.aqp.grid`), C(b) - C(a) and S(b) - S(a);
- **sample**: the box integrals of the sample in one compiled pass (:func:`~parzen.aqp._box.box_sums`),
  stratified (COUNT and SUM: sum over strata g of rows_g / drawn_g times the rows' terms; AVG the
  ratio of the SUM and COUNT(col) totals), then calibrated to the table's exact margins
  (:func:`calibration_factor`, :mod:`parzen.aqp.calibration`).

The formulas are in docs/statistics.md ("AQP: integrals of the density over boxes") and
docs/algorithms.md ("Box integrals", "Calibration").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from . import calibration
from ._box import BoxQuery, box_sums
from ._cell_sums import cell_sums
from ._kept import kept, sharing
from .estimate import _REACH, Estimate, row_terms
from .sql import AggregateQuery, Range
from .strata import Layout, output_groups
from .synopsis import Synopsis
from .tails import effective_df_of_cells, t_quantiles

#: Per aggregate name, one value per answer row.
Values = dict[str, "np.ndarray | list[float]"]


def approximate(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None) -> tuple[pd.DataFrame, str]:
    """The approximate answer to ``query``, with intervals at ``z`` standard errors if ``z`` is given.

    Parameters
    ----------
    query : AggregateQuery
        A parsed query whose names are spelled as in the synopsis.
    synopsis : Synopsis
        The synopsis that answers it.
    layout : Layout
        Its strata (:meth:`Layout.of`).
    z : float or None
        The normal quantile of the intervals' confidence; None: no intervals.

    Returns
    -------
    frame : pandas.DataFrame
        One row per group key, one column per selected item (with ``<name> low`` / ``<name> high``
        after each aggregate when ``z`` is given), shaped like DuckDB's answer.
    form : str
        What answered: "totals", "grid" or "sample".

    Notes
    -----
    The interval is value +- z se, se the standard error of the plain stratified estimate
    (:func:`stratified_estimates`): sampling without replacement, finite-population corrected,
    added over strata, the delta method for AVG.  GROUP BY answers from the sample, raked per group
    (:func:`calibration_factor`), move each group by a share of every group's error, which that se
    does not describe (a small group, or one sampled whole, is moved by the large groups' errors):
    their interval spans the plain estimate p's as well, [min(value, p) - z se, max(value, p) + z se].  It covers the sampling error, not the smoothing
    bias (:meth:`parzen.aqp.Engine.query` widens it by the bias's estimate: :mod:`parzen.aqp.contract`).  Calibrating to exact margins removes the part of that error which the margins explain
    (Deville and Saerndal 1992; for COUNT(*) of one range, all of it), so the interval is
    conservative for calibrated and grid answers.
    """
    if query.boxes:
        from . import unions  # it builds on this module's forms
        return unions.approximate(query, synopsis, layout, z)
    if not all(a.plain for a in query.aggregates):
        from . import aggregates  # it builds on this module's forms
        return aggregates.approximate(query, synopsis, layout, z)
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    form, keys, output_of_stratum, values = _point_answers(query, synopsis, layout, ranges)
    return _answer_frame(query, synopsis, layout, z, ranges, form, keys, output_of_stratum, values), form


def approximate_with_bias_runs(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None,
                               scaled: list[Synopsis]) -> tuple[pd.DataFrame, str, list]:
    """:func:`approximate`'s answer and :func:`bias_runs`'s values from ``scaled`` at once: for
    COUNT / SUM / AVG of columns under AND-ed predicates, the box integrals at the synopsis's own
    bandwidths and at the scaled ones come from one pass of :func:`box_sums` (each bandwidth's sums
    bit for bit those of its own pass, :func:`calibrated_values_at`); other queries answer as the two
    functions do.

    Parameters
    ----------
    query : AggregateQuery
        A parsed query whose names are spelled as in the synopsis.
    synopsis : Synopsis
        The synopsis that answers it.
    layout : Layout
        Its strata.
    z : float or None
        The normal quantile of the intervals; None: none.
    scaled : list of Synopsis
        The synopsis with its bandwidths scaled (:func:`parzen.aqp.contract.with_bandwidths_scaled`).

    Returns
    -------
    frame : pandas.DataFrame
        As :func:`approximate`.
    form : str
        As :func:`approximate`.
    runs : list
        As :func:`bias_runs` of ``scaled``.
    """
    if query.boxes or not all(a.plain for a in query.aggregates):
        answer, form = approximate(query, synopsis, layout, z)
        return answer, form, bias_runs(query, scaled, layout)
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    form, keys, output_of_stratum, (values, *runs) = _point_answers_at(query, [synopsis, *scaled], layout, ranges)
    answer = _answer_frame(query, synopsis, layout, z, ranges, form, keys, output_of_stratum, values)
    return answer, form, _in_row_order(keys, runs)


def approximate_row(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None,
                    scaled: list[Synopsis] | None = None) -> tuple[Row, str, list | None]:
    """:func:`approximate`'s answer to a query without GROUP BY or OR as its :class:`Row` (the same floats),
    and with ``scaled`` :func:`bias_runs`'s values from them, as :func:`approximate_with_bias_runs` makes them.

    Parameters
    ----------
    query : AggregateQuery
        A parsed query without GROUP BY or boxes of OR, names spelled as in the synopsis.
    synopsis : Synopsis
        The synopsis that answers it.
    layout : Layout
        Its strata.
    z : float or None
        The normal quantile of the intervals; None: none.
    scaled : list of Synopsis, optional
        The synopsis with its bandwidths scaled (:func:`parzen.aqp.contract.with_bandwidths_scaled`).

    Returns
    -------
    row : Row
        :func:`approximate`'s frame's row, labels and ``attrs``.
    form : str
        As :func:`approximate`.
    runs : list or None
        As :func:`bias_runs` of ``scaled``; None without ``scaled``.
    """
    if query.group_by or query.boxes:
        raise ValueError("approximate_row answers a query without GROUP BY or OR")
    if not all(a.plain for a in query.aggregates):
        from . import aggregates  # it builds on this module's forms
        row, form = aggregates.approximate_row(query, synopsis, layout, z)
        return row, form, None if scaled is None else bias_runs(query, scaled, layout)
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    form, keys, output_of_stratum, (values, *runs) = _point_answers_at(query, [synopsis, *(scaled or [])], layout, ranges)
    value, low, high = _answer_columns(query, synopsis, layout, z, ranges, form, keys, output_of_stratum, values)
    return _answer_row(query, z, keys, value, low, high), form, None if scaled is None else _in_row_order(keys, runs)


def _answer_frame(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None, ranges: dict[str, Range],
                  form: str, keys: list[tuple], output_of_stratum: np.ndarray, values: Values) -> pd.DataFrame:
    """:func:`approximate`'s frame from the point answers ``values`` (and intervals at ``z``), its columns
    made as arrays (:func:`_answer_columns`), without an :class:`Estimate` per row but without GROUP BY."""
    value, low, high = _answer_columns(query, synopsis, layout, z, ranges, form, keys, output_of_stratum, values)
    if not query.group_by:
        return _answer_row(query, z, keys, value, low, high).frame()
    order = sorted(range(len(keys)), key=lambda g: _row_order(keys[g]))  # frame's row order
    columns: dict[str, object] = {}
    for item in query.select:
        if isinstance(item, str):
            position = query.group_by.index(item)
            columns[item] = [keys[g][position] for g in order]
            continue
        columns[item.name] = value[item.name][order]
        if z is not None:
            columns[f"{item.name} low"], columns[f"{item.name} high"] = low[item.name][order], high[item.name][order]
    return pd.DataFrame(columns)


def _answer_row(query: AggregateQuery, z: float | None, keys: list[tuple], value: dict[str, np.ndarray],
                low: dict[str, np.ndarray], high: dict[str, np.ndarray]) -> Row:
    """The answer without GROUP BY (one key) as its :class:`Row`, from :func:`_answer_columns`."""
    ((g, _),) = enumerate(keys)  # frame's check: one answer row
    return one_row(query, {name: Estimate(float(v[g]), float(low[name][g]), float(high[name][g]))
                           for name, v in value.items()}, z is not None)


def _answer_columns(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None,
                    ranges: dict[str, Range], form: str, keys: list[tuple], output_of_stratum: np.ndarray,
                    values: Values) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per aggregate, its values, low and high ends per answer row (NaN ends without ``z``) from the point
    answers ``values``: value -+ the half width, or where the interval spans the plain estimate p too
    [min(value, p) - half, max(value, p) + half] (p NaN: value -+ half)."""
    value = {name: np.asarray(v, dtype=np.float64) for name, v in values.items()}
    nothing = np.full(len(keys), math.nan)
    low, high = dict.fromkeys(value, nothing), dict.fromkeys(value, nothing)
    if z is not None and form == "sample" and query.group_by:  # raked per group: the interval spans the plain estimate's too
        degrees: dict[str, np.ndarray] = {}
        estimates = stratified_estimates(query, synopsis, layout, ranges, output_of_stratum, len(keys), degrees)
        for name, v in value.items():
            half = t_quantiles(z, degrees[name]) * estimates[name][1]
            plain = np.asarray(estimates[name][0], dtype=np.float64)
            spanned = ~np.isnan(plain)  # min(v, p) and max(v, p) as Python's: v unless p is beyond it
            low[name] = np.where(spanned & (plain < v), plain, v) - half
            high[name] = np.where(spanned & (plain > v), plain, v) + half
    elif z is not None:
        half_widths = _half_widths(query, synopsis, layout, ranges, output_of_stratum, len(keys), z)
        for name, v in value.items():
            low[name], high[name] = v - half_widths[name], v + half_widths[name]
    return value, low, high


def _half_widths(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                 output_of_stratum: np.ndarray, groups: int, z: float) -> Values:
    """Per aggregate, per answer row: the interval's half width, t se, t Student's quantile at the level
    of ``z`` for the variance's effective degrees of freedom (:mod:`parzen.aqp.tails`; 0 for exact totals)."""
    if not ranges:
        return {a.name: np.zeros(groups) for a in query.aggregates}
    degrees: dict[str, np.ndarray] = {}
    estimates = stratified_estimates(query, synopsis, layout, ranges, output_of_stratum, groups, degrees)
    return {name: t_quantiles(z, degrees[name]) * se for name, (_, se) in estimates.items()}


def _point_answers(query: AggregateQuery, synopsis: Synopsis, layout: Layout,
                   ranges: dict[str, Range]) -> tuple[str, list[tuple], np.ndarray, Values]:
    """The form that answers, the answer rows' keys, each stratum's answer row, and the values."""
    form, keys, output_of_stratum, (values,) = _point_answers_at(query, [synopsis], layout, ranges)
    return form, keys, output_of_stratum, values


def _point_answers_at(query: AggregateQuery, synopses: list[Synopsis], layout: Layout,
                      ranges: dict[str, Range]) -> tuple[str, list[tuple], np.ndarray, list[Values]]:
    """:func:`_point_answers` from synopses that differ in their bandwidths only: the values of each."""
    synopsis = synopses[0]
    if not ranges:
        keys, output_of_stratum = output_groups(query, synopsis, layout)
        return "totals", keys, output_of_stratum, [_exact_totals(query, layout, output_of_stratum, len(keys))
                                                   for _ in synopses]
    grid = _grid_for(query, synopsis)
    if grid is not None:
        return "grid", [()], layout.whole, [_grid_values(query, s, grid) for s in synopses]
    keys, output_of_stratum = output_groups(query, synopsis, layout)
    return "sample", keys, output_of_stratum, calibrated_values_at(query, synopses, layout, ranges, output_of_stratum,
                                                                   len(keys))


def answered_exactly(query: AggregateQuery, synopsis: Synopsis) -> bool:
    """Whether :func:`approximate` answers ``query`` from exact totals ("totals": no range on a modelled
    column) or from a column's grid ("grid", exact C and S at its points), not from the sample.

    Parameters
    ----------
    query : AggregateQuery
        A parsed query whose names are spelled as in the synopsis (one :func:`approximate` answers).
    synopsis : Synopsis
        The synopsis.

    Returns
    -------
    bool
    """
    return not any(c in synopsis.models for c in query.ranges) or _grid_for(query, synopsis) is not None


def _grid_for(query: AggregateQuery, synopsis: Synopsis):
    """The column grid that answers ``query`` alone, or None: one range column, no GROUP BY or
    IN/=, and every aggregate COUNT(*) or COUNT/SUM/AVG of that column."""
    if query.group_by or query.members or len(query.ranges) != 1:
        return None
    (column,) = query.ranges
    if column not in synopsis.grids or any(a.column not in (None, column) for a in query.aggregates):
        return None
    return synopsis.grids[column]


def _grid_values(query: AggregateQuery, synopsis: Synopsis, grid) -> Values:
    """COUNT = C(b) - C(a), SUM = S(b) - S(a), AVG = their ratio (see :mod:`parzen.aqp.grid`)."""
    ((column, predicate),) = query.ranges.items()
    rows, total = grid.box(*synopsis.models[column].interval(predicate))
    value = {"count": rows, "sum": total, "avg": total / rows if rows > 0 else math.nan}
    return {a.name: [value[a.func]] for a in query.aggregates}


def _exact_totals(query: AggregateQuery, layout: Layout, output_of_stratum: np.ndarray, groups: int) -> Values:
    """The answer rows' exact COUNT / SUM / AVG from the strata's totals (no numeric predicate)."""
    members = [np.flatnonzero(output_of_stratum == g) for g in range(groups)]
    values: Values = {}
    for a in query.aggregates:
        column = []
        for m in members:
            rows = float(sum(layout.rows[s] for s in m))
            count = sum(layout.totals[s][a.column][0] for s in m) if a.column is not None else rows
            total = sum(layout.totals[s][a.column][1] for s in m) if a.column is not None else math.nan
            column.append({"count": float(count), "sum": total}.get(a.func, total / count if count else math.nan))
        values[a.name] = np.array(column, dtype=np.float64)
    return values


def whole_table(query: AggregateQuery, output_of_stratum: np.ndarray) -> bool:
    """Whether ``query`` asks about the whole table (no GROUP BY, no group filtered out).

    Its answer is then a KDE of all n sampled rows, whose bandwidths were chosen for n rows, so the
    strata's wider kernels ((n / n_g)^(1/5), for answers per group) would only add bias; and the
    table's exact marginals (the grids) calibrate it.

    Parameters
    ----------
    query : AggregateQuery
        The query.
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1 (:func:`~parzen.aqp.strata.output_groups`).

    Returns
    -------
    bool
    """
    return not query.group_by and not query.members and bool((output_of_stratum >= 0).all())


def calibrated_values(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                      output_of_stratum: np.ndarray, groups: int) -> Values:
    """The stratified estimates from one compiled pass (:func:`box_sums`), calibrated.

    Parameters
    ----------
    query : AggregateQuery
        The query.
    synopsis : Synopsis
        Its synopsis (models, grids).
    layout : Layout
        The synopsis's strata.
    ranges : dict of str to Range
        The query's ranges on numeric columns (not empty).
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups : int
        The answer rows.

    Returns
    -------
    dict of str to numpy.ndarray
        Per aggregate, one value per answer row: COUNT and SUM times :func:`calibration_factor`,
        AVG the ratio of the SUM and COUNT(col) sums (which the factor would not change).
    """
    return calibrated_values_at(query, [synopsis], layout, ranges, output_of_stratum, groups)[0]


def calibrated_values_at(query: AggregateQuery, synopses: list[Synopsis], layout: Layout, ranges: dict[str, Range],
                         output_of_stratum: np.ndarray, groups: int) -> list[Values]:
    """:func:`calibrated_values` from each of synopses that differ in their bandwidths only (the
    bandwidths c h of :mod:`parzen.aqp.contract`'s bias term): their box integrals in one pass of
    :func:`box_sums` (k rows of bandwidths, the rows that the widest kernels reach) where their
    ranges come in the same order, each synopsis's values the floats of its own
    :func:`calibrated_values`.

    Parameters
    ----------
    query : AggregateQuery
        The query.
    synopses : list of Synopsis
        Its synopsis, with its bandwidths scaled (:func:`parzen.aqp.contract.with_bandwidths_scaled`).
    layout : Layout
        The synopsis's strata.
    ranges : dict of str to Range
        The query's ranges on numeric columns (not empty).
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups : int
        The answer rows.

    Returns
    -------
    list of dict of str to numpy.ndarray
        Per synopsis, :func:`calibrated_values`'s answer.
    """
    boxes = {c: synopses[0].models[c].interval(r) for c, r in ranges.items()}  # the bandwidth does not enter
    aggregated = list(dict.fromkeys(a.column for a in query.aggregates if a.column is not None))
    if any(b < a for a, b in boxes.values()):  # an empty box: every sum is 0
        return [_aggregate_values(query, np.zeros((groups, 1 + 2 * len(aggregated))), aggregated, 1.0)
                for _ in synopses]
    whole = whole_table(query, output_of_stratum)
    widest = 1.0 if whole or layout.row_scale is None else float(layout.row_scale.max(initial=1.0))
    founds = [{c: layout.view.candidates(c, a, b, _REACH * s.models[c].bandwidth * widest)
               for c, (a, b) in boxes.items()} for s in synopses]
    orders = [sorted(found, key=lambda c: found[c].size) for found in founds]  # the fewest rows near its box first
    scale = _NO_SCALE if whole else layout.scale_of_row

    def sums(synopsis: Synopsis, found: dict[str, np.ndarray], columns: list[str], aggregated: list[str]) -> np.ndarray:
        return box_sums(box_query(layout, synopsis, boxes, found, columns, aggregated, scale, output_of_stratum, groups))

    if len(synopses) > 1 and all(order == orders[0] for order in orders):
        order = orders[0]  # candidate sets widen with the bandwidth: the largest holds the others
        reached = {c: max((found[c] for found in founds), key=len) for c in order}
        fused = replace(box_query(layout, synopses[0], boxes, reached, order, aggregated, scale, output_of_stratum,
                                  groups),
                        bandwidths=np.array([[s.models[c].bandwidth for c in order] for s in synopses]))
        outs = list(box_sums(fused))
    else:
        outs = [sums(s, found, order, aggregated) for s, found, order in zip(synopses, founds, orders)]

    def calibrated(synopsis: Synopsis, found: dict[str, np.ndarray], order: list[str], out: np.ndarray) -> Values:
        factor = calibration_factor(query, synopsis, layout, boxes, order, out, output_of_stratum,
                                    lambda: sums(synopsis, found, order[:1], [])[:, 0])
        return _aggregate_values(query, out, aggregated, factor)

    return [calibrated(*run) for run in zip(synopses, founds, orders, outs)]


def box_query(layout: Layout, synopsis: Synopsis, boxes: dict[str, tuple[float, float]], found: dict[str, np.ndarray],
              order: list[str], aggregated: list[str], scale: np.ndarray, output_of_stratum: np.ndarray,
              groups: int) -> BoxQuery:
    """The :class:`~parzen.aqp._box.BoxQuery` of the ranges on the columns ``order``.

    Parameters
    ----------
    layout : Layout
        The synopsis's strata and its sample as one array.
    synopsis : Synopsis
        The synopsis (its column models).
    boxes : dict of str to (float, float)
        Per range column, the interval [a, b] to integrate over.
    found : dict of str to numpy.ndarray
        Per range column, the sampled rows its kernels can reach.
    order : list of str
        The range columns to integrate, in this order.
    aggregated : list of str
        The aggregated columns.
    scale : numpy.ndarray
        Per sampled row, the bandwidth factor; empty for 1.
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups : int
        The answer rows.

    Returns
    -------
    BoxQuery
    """
    models = synopsis.models
    return BoxQuery(
        rows=found[order[0]] if len(order) == 1 else np.concatenate([found[c] for c in order]),
        starts=np.cumsum([0] + [found[c].size for c in order]),
        data=layout.data,
        columns=np.array([layout.position[c] for c in order], dtype=np.intp),
        lows=np.array([boxes[c][0] for c in order]),
        highs=np.array([boxes[c][1] for c in order]),
        bandwidths=np.array([models[c].bandwidth for c in order]),
        lowers=np.array([0.0 if models[c].lower is None else models[c].lower for c in order]),
        reflects=np.array([models[c].lower is not None for c in order]),
        row_scale=scale,
        stratum_of_row=layout.stratum_of_row,
        output_of_stratum=output_of_stratum,
        weight_of_stratum=layout.weight,
        groups=groups,
        aggregated=np.array([layout.position[y] for y in aggregated], dtype=np.intp),
        constrained=np.array([order.index(y) if y in boxes else -1 for y in aggregated], dtype=np.intp),
        reach=_REACH,
        moments=np.array([c in aggregated for c in order]),
        repeats=np.array([layout.view.repeats(c) for c in order]),
    )


def calibration_factor(query: AggregateQuery, synopsis: Synopsis, layout: Layout, boxes: dict[str, tuple[float, float]],
                       order: list[str], out: np.ndarray, output_of_stratum: np.ndarray,
                       groups_in_first_box) -> float | np.ndarray:
    """The factor on COUNT and SUM that calibrates the sample's answer to the table's exact margins.

    The margins are those of the gridded form (Deville and Saerndal 1992, calibration estimators);
    c = ``order[0]`` is the range column with the fewest sampled rows near its box [a, b].

    - Whole-table queries (:func:`whole_table`): with M = the table's rows in [a, b] and
      X = sum_i w_i P_c(x_ic) the sample's estimate of M (:meth:`SampleView.marginal`), the ratio
      estimator M / X (:func:`~parzen.aqp.calibration.ratio_factor`): COUNT(*) of one range is M.
      With exactly two range columns the 2 x 2 table's raked cell over its sample value instead
      (:func:`~parzen.aqp.calibration.rake_2x2`: both margins), the raked cell shrunk towards the
      margins' product as far as the sample cannot tell the columns' dependence from noise
      (:func:`~parzen.aqp.calibration.shrink_to_independence`).
    - GROUP BY without IN / = filters: one factor per group, raking the groups' rows in c's box to
      M (:func:`~parzen.aqp.calibration.rake_groups`).
    - Otherwise (or c has no grid): 1.

    Parameters
    ----------
    query : AggregateQuery
        The query.
    synopsis : Synopsis
        Its synopsis (models, grids).
    layout : Layout
        The synopsis's strata.
    boxes : dict of str to (float, float)
        Per range column, its interval (none empty).
    order : list of str
        The range columns, the one with the fewest candidate rows first.
    out : numpy.ndarray
        :func:`box_sums` of all the ranges (column 0: the weighted sum of the masses' products).
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups_in_first_box : callable
        Returns the groups' weighted sample rows in c's box alone (called only when raking groups
        with more than one range).

    Returns
    -------
    float or numpy.ndarray
        One factor, or one per answer row.
    """
    first = order[0]
    if first not in synopsis.grids:
        return 1.0
    if whole_table(query, output_of_stratum):
        return _whole_table_factor(synopsis, layout, boxes, order, out)
    if query.group_by and not query.members and bool((output_of_stratum >= 0).all()):
        inside = out[:, 0] if len(order) == 1 else groups_in_first_box()
        rows = np.bincount(output_of_stratum, weights=layout.rows, minlength=out.shape[0])
        return calibration.rake_groups(inside, rows, synopsis.grids[first].box(*boxes[first])[0])
    return 1.0


def _whole_table_factor(synopsis: Synopsis, layout: Layout, boxes: dict[str, tuple[float, float]], order: list[str],
                        out: np.ndarray) -> float:
    """:func:`calibration_factor` of a whole-table query: the ratio M / X, or with two range columns
    with grids the raked and shrunk 2 x 2 cell over the sample's."""
    models, first = synopsis.models, order[0]
    sampled = out[0, 0] if len(order) == 1 else layout.view.marginal(models[first], *boxes[first])
    if sampled <= 0:
        return 1.0
    exact = synopsis.grids[first].box(*boxes[first])[0]
    if len(order) == 2 and (second := order[1]) in synopsis.grids and out[0, 0] > 0:
        table_rows = float(layout.rows.sum())
        column_target = synopsis.grids[second].box(*boxes[second])[0]
        raked = calibration.rake_2x2(out[0, 0], sampled, layout.view.marginal(models[second], *boxes[second]),
                                     table_rows, exact, column_target)
        if raked is not None:
            shrunk = calibration.shrink_to_independence(raked, table_rows, exact, column_target,
                                                        layout.effective_rows, float(layout.drawn.sum()) / table_rows)
            return shrunk / out[0, 0]
    return calibration.ratio_factor(exact, sampled)


def _aggregate_values(query: AggregateQuery, out: np.ndarray, aggregated: list[str], factor) -> Values:
    """Each aggregate from :func:`box_sums`'s columns: COUNT and SUM times ``factor``, AVG a ratio."""
    slot = {y: 1 + 2 * q for q, y in enumerate(aggregated)}
    values: Values = {}
    for a in query.aggregates:
        if a.column is None:
            values[a.name] = factor * out[:, 0]
        elif a.func == "avg":
            count, total = out[:, slot[a.column]], out[:, slot[a.column] + 1]
            with np.errstate(invalid="ignore", divide="ignore"):
                values[a.name] = np.where(count > 0, total / count, np.nan)
        else:
            values[a.name] = factor * out[:, slot[a.column] + (a.func == "sum")]
    return values


def stratified_estimates(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                         output_of_stratum: np.ndarray, groups: int,
                         degrees: dict[str, np.ndarray] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The plain stratified estimates (not calibrated) from the per-row terms, and their standard errors.

    COUNT and SUM: sum over strata g of rows_g / drawn_g times the rows' terms
    (:func:`~parzen.aqp.estimate.row_terms`); AVG: the ratio R of the SUM and COUNT(col) totals.
    Variances add over strata: rows_g^2 s_g^2 / drawn_g (1 - drawn_g / rows_g), s_g^2 the terms'
    variance in stratum g (sampling without replacement; for AVG, of the linearised terms
    num - R den, divided by the COUNT total: the delta method).  The values equal the
    uncalibrated :func:`calibrated_values` (another code path: the tests compare them).

    Parameters
    ----------
    query : AggregateQuery
        The query.
    synopsis : Synopsis
        Its synopsis.
    layout : Layout
        The synopsis's strata.
    ranges : dict of str to Range
        The query's ranges on numeric columns (not empty).
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    groups : int
        The answer rows.
    degrees : dict, optional
        Filled, per aggregate, with the effective degrees of freedom of each answer row's variance
        estimate (:func:`parzen.aqp.tails.effective_df`), whose Student t quantile the interval takes
        for z: a narrow box holds few sampled rows, whose variance a heavy-tailed column's rows
        understate.

    Returns
    -------
    dict of str to (numpy.ndarray, numpy.ndarray)
        Per aggregate: the estimates and their standard errors, one per answer row.

    Notes
    -----
    Within :func:`parzen.aqp._kept.shared_terms` (a ratio's sub-queries) the estimates of a query
    that filters no stratum out are kept with the layout for the next query with the same
    aggregates, ranges and answer rows (:mod:`parzen.aqp._kept`).
    """
    if not sharing() or not bool((output_of_stratum >= 0).all()):
        return _stratified_estimates(query, synopsis, layout, ranges, output_of_stratum, groups, degrees)
    models = synopsis.models
    key = ("stratified estimates", query.aggregates,
           whole_table(query, output_of_stratum), groups, output_of_stratum.tobytes(),
           tuple((c, r, models[c]) for c, r in ranges.items()))

    def make() -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray]]:
        made: dict[str, np.ndarray] = {}
        return _stratified_estimates(query, synopsis, layout, ranges, output_of_stratum, groups, made), made

    estimates, made = kept(layout, key, make, lambda _: groups)
    if degrees is not None:
        degrees.update(made)
    return dict(estimates)


def _stratified_estimates(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges: dict[str, Range],
                          output_of_stratum: np.ndarray, groups: int,
                          degrees: dict[str, np.ndarray] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`stratified_estimates`, made."""
    aggregated = {a.column for a in query.aggregates if a.column is not None}
    whole = whole_table(query, output_of_stratum)
    every = bool((output_of_stratum >= 0).all())  # no stratum filtered out: every candidate row kept, unmasked
    terms = row_terms(layout, synopsis.models, ranges, aggregated, row_scale=None if whole else layout.row_scale,
                      keep=None if every else (lambda rows: output_of_stratum[layout.stratum_of_row[rows]] >= 0))
    stratum = layout.stratum_of_row[terms.rows]
    group = output_of_stratum[stratum]
    weight = (layout.rows / layout.drawn)[stratum]

    def total(values):
        return np.bincount(group, weights=weight * values, minlength=groups)

    def standard_error(name, values):
        sums = _stratum_sums(values, stratum, len(layout.keys))  # read by both below
        if degrees is not None:
            degrees[name] = _stratified_df(values, stratum, layout, output_of_stratum, groups, sums)
        return np.sqrt(_stratified_variance(values, stratum, layout, output_of_stratum, groups, sums))

    estimates = {}
    for a in query.aggregates:
        if a.column is None:  # COUNT(*)
            estimates[a.name] = total(terms.count), standard_error(a.name, terms.count)
        elif a.func == "avg":
            num, den = terms.sum_y[a.column], terms.count_y[a.column]
            num_total, den_total = total(num), total(den)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(den_total > 0, num_total / den_total, np.nan)
                estimates[a.name] = ratio, standard_error(a.name, num - np.nan_to_num(ratio)[group] * den) / den_total
        else:
            values = terms.sum_y[a.column] if a.func == "sum" else terms.count_y[a.column]
            estimates[a.name] = total(values), standard_error(a.name, values)
    return estimates


def _stratum_sums(values, stratum, strata: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per stratum: the sums of ``values``, of their squares and of their fourth powers, and the rows
    whose value is not 0 (rows outside the candidates are 0), in one compiled pass
    (:func:`parzen.aqp._cell_sums.cell_sums`, ``np.bincount``'s floats)."""
    _, s1, s2, s4, carrying = cell_sums(np.ascontiguousarray(values, dtype=np.float64),
                                        np.ascontiguousarray(stratum, dtype=np.intp), strata)
    return s1, s2, s4, carrying


def _stratified_df(values, stratum, layout: Layout, output_of_stratum, groups: int, sums=None) -> np.ndarray:
    """Per answer row: the effective degrees of freedom of :func:`_stratified_variance` (the strata are
    its cells, the rows with a non-zero term those that carry it: :func:`parzen.aqp.tails.effective_df_of_cells`);
    ``sums``: :func:`_stratum_sums` of ``values``, made already (None: made here)."""
    s1, s2, s4, carrying = _stratum_sums(values, stratum, len(layout.keys)) if sums is None else sums
    n, rows = layout.drawn, layout.rows
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1), 0.0)
        contribution = np.nan_to_num(rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows))
    used = output_of_stratum >= 0  # each stratum feeds one answer row: the cells are the strata
    return effective_df_of_cells(output_of_stratum[used], groups, contribution[used], carrying[used], s2[used],
                                 s4[used])


def _stratified_variance(values, stratum, layout: Layout, output_of_stratum, groups: int, sums=None) -> np.ndarray:
    """Per answer row: the variance of the stratified total of ``values`` (sampling without replacement);
    ``sums``: :func:`_stratum_sums` of ``values``, made already (None: made here)."""
    s1, s2, _, _ = _stratum_sums(values, stratum, len(layout.keys)) if sums is None else sums
    n, rows = layout.drawn, layout.rows
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1), 0.0)
        contribution = rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows)
    contribution = np.where((n < 2) & (n < rows), np.inf, np.nan_to_num(contribution))
    used = output_of_stratum >= 0
    return np.bincount(output_of_stratum[used], weights=contribution[used], minlength=groups)


def regression(query: AggregateQuery, synopsis: Synopsis) -> pd.DataFrame:
    """The answer from a regression y ~ x (``Engine.query(method="regression")``), as DBEst's.

    With C the gridded form of x and r(x) = E[y | x] (:mod:`parzen.aqp.regression`):
    COUNT(*) = C(b) - C(a), SUM(x) = S(b) - S(a), SUM(y) = p int_a^b r dC, COUNT(y) = p int_a^b dC
    (p the share of y not NULL), AVG their ratios (Ma and Triantafillou 2019, full citation in
    docs/statistics.md).

    Parameters
    ----------
    query : AggregateQuery
        The query: one range on x, no GROUP BY or IN (:func:`regression_column` says why not).
    synopsis : Synopsis
        The synopsis holding the regressions.

    Returns
    -------
    pandas.DataFrame
        One row, one column per aggregate.

    Raises
    ------
    ValueError
        The query is not one that the synopsis's regressions answer.
    """
    x = regression_column(query, synopsis)
    (predicate,) = query.ranges.values()
    a, b = synopsis.models[x].interval(predicate)
    grid = synopsis.grids[x]
    rows, sum_x = grid.box(a, b)
    integrals = {}  # y -> (int dC, int r dC) over [a, b]
    answers = {}
    for agg in query.aggregates:
        if agg.column in (None, x):
            value = {"count": rows, "sum": sum_x, "avg": sum_x / rows if rows > 0 else math.nan}[agg.func]
        else:
            r = synopsis.regressions[(agg.column, x)]
            if agg.column not in integrals:
                integrals[agg.column] = r.integrals(grid, a, b)
            mass, total = integrals[agg.column]
            value = {"count": r.present * mass, "sum": r.present * total,
                     "avg": total / mass if mass > 0 else math.nan}[agg.func]
        answers[agg.name] = Estimate(value)
    return frame(query, {(): answers}, False)


def regression_column(query: AggregateQuery, synopsis: Synopsis) -> str:
    """The range column x of a query that regressions y ~ x answer.

    Parameters
    ----------
    query : AggregateQuery
        The query.
    synopsis : Synopsis
        The synopsis and its regressions.

    Returns
    -------
    str
        x.

    Raises
    ------
    ValueError
        Saying why the regressions cannot answer the query.
    """
    have = ", ".join(r.name for r in synopsis.regressions.values())
    if not have:
        raise ValueError(f"method='regression': the synopsis of {synopsis.table!r} has no regressions; rebuild it "
                         f"with engine.build({synopsis.table!r}, regression=[(y, x), ...])")
    why = None
    extended = [a.name for a in query.aggregates if not a.plain]
    if extended:
        why = f"asks for {', '.join(extended)}, not COUNT/SUM/AVG of a column"
    elif query.group_by or query.members:
        why = "has GROUP BY or IN / = on a group column"
    elif len(query.ranges) != 1:
        why = f"has range predicates on {len(query.ranges)} columns, not one"
    elif next(iter(query.ranges)) not in synopsis.models:
        why = f"has its range on {next(iter(query.ranges))!r}, a group column"
    if why is None:
        (x,) = query.ranges
        missing = [a.column for a in query.aggregates if a.column not in (None, x)
                   and (a.column, x) not in synopsis.regressions]
        if not missing and any(on == x for _, on in synopsis.regressions):
            return x
        why = (f"aggregates {', '.join(dict.fromkeys(missing))}, which the synopsis has no regression on {x!r} for"
               if missing else f"has a range on {x!r}, which no regression is on")
    raise ValueError(f"method='regression' answers COUNT/SUM/AVG(y) WHERE one range on x, without GROUP BY or IN, "
                     f"for a regression y ~ x of the synopsis ({have}); this query {why}")


def frame(query: AggregateQuery, groups: dict, with_error: bool) -> pd.DataFrame:
    """The answer as a DataFrame shaped like DuckDB's.

    Parameters
    ----------
    query : AggregateQuery
        The query (its SELECT list names the columns).
    groups : dict of tuple to dict of str to Estimate
        Per group key, per aggregate name, the estimate.
    with_error : bool
        Whether to add ``<name> low`` / ``<name> high`` after each aggregate.

    Returns
    -------
    pandas.DataFrame
        One row per group key (sorted as DuckDB's ORDER BY would, NULLs last), one column per item.

    Raises
    ------
    ValueError
        A query without GROUP BY that selects a column.
    """
    if not query.group_by:
        ((_, answers),) = groups.items()
        return _one_row(query, answers, with_error)
    keys = sorted(groups, key=_row_order)
    columns: dict[str, list] = {}
    for item in query.select:
        if isinstance(item, str):
            position = query.group_by.index(item)
            columns[item] = [key[position] for key in keys]
            continue
        estimates = [groups[key][item.name] for key in keys]
        columns[item.name] = [e.value for e in estimates]
        if with_error:
            columns[f"{item.name} low"] = [e.low for e in estimates]
            columns[f"{item.name} high"] = [e.high for e in estimates]
    return pd.DataFrame(columns)


def _row_order(key: tuple) -> tuple:
    """The sort key of an answer row's group key: ascending as DuckDB's ORDER BY, NULLs last."""
    return tuple((v is None, str(v) if isinstance(v, str) else v) for v in key)


def bias_runs(query: AggregateQuery, synopses: list[Synopsis],
              layout: Layout) -> list[pd.DataFrame | dict[str, np.ndarray]]:
    """The values of :func:`approximate`'s answers without intervals from synopses that differ in
    their bandwidths only, for the bias term of :func:`parzen.aqp.contract.cover_bias`: per synopsis,
    per aggregate one array whose row i is the answer's row i, with no DataFrame built, and the box
    integrals of all in one pass (:func:`calibrated_values_at`).

    The answer rows' keys (:func:`~parzen.aqp.strata.output_groups`) and their order do not depend on
    the bandwidths, so the rows of these answers (the synopsis with its bandwidths scaled, same
    strata) are those of the answer at the synopsis's own; the values are the same floats as
    :func:`approximate`'s columns.  Queries of other forms (boxes of OR, aggregates other than
    COUNT / SUM / AVG) get :func:`approximate`'s DataFrames, which ``cover_bias`` aligns by key.

    Parameters
    ----------
    query : AggregateQuery
        A parsed query whose names are spelled as in the synopsis.
    synopses : list of Synopsis
        The synopsis with its bandwidths scaled (:func:`parzen.aqp.contract.with_bandwidths_scaled`).
    layout : Layout
        Its strata (:meth:`Layout.of`).

    Returns
    -------
    list of (dict of str to numpy.ndarray, or pandas.DataFrame)
        Per synopsis, per aggregate name, the values in the answer's row order; or the answer itself.
    """
    if query.boxes or not all(a.plain for a in query.aggregates):
        return [approximate(query, s, layout, None)[0] for s in synopses]
    ranges = {c: r for c, r in query.ranges.items() if c in synopses[0].models}
    _, keys, _, runs = _point_answers_at(query, synopses, layout, ranges)
    return _in_row_order(keys, runs)


def _in_row_order(keys: list[tuple], runs: list[Values]) -> list[dict[str, np.ndarray]]:
    """Each run's values as float arrays in the answer's row order (:func:`frame`'s)."""
    order = sorted(range(len(keys)), key=lambda g: _row_order(keys[g]))
    return [{name: np.asarray(v, dtype=np.float64)[order] for name, v in values.items()} for values in runs]


def _one_row(query: AggregateQuery, answers: dict[str, Estimate], with_error: bool) -> pd.DataFrame:
    """The answer without GROUP BY: one row of floats, one array, column names made once per query shape."""
    return one_row(query, answers, with_error).frame()


@dataclass(frozen=True, eq=False)  # compared by identity: == of its arrays has no single truth value
class Row:
    """An answer without GROUP BY as the floats its DataFrame is made of (:func:`frame`'s one row), for a
    caller that only reads them back (a ratio's sub-queries, :mod:`parzen.aqp.ratios`): no DataFrame and
    no column labels are made (a few tens of microseconds each) unless :meth:`frame` asks for them.

    Attributes
    ----------
    names : tuple of str
        The aggregates' names, in SELECT order.
    values : numpy.ndarray of float64, shape (1, columns)
        The row: per aggregate its value (and its low and high end when ``with_error``).
    with_error : bool
        Whether the row holds the intervals' ends.
    attrs : dict
        What the DataFrame's ``attrs`` hold.
    """

    names: tuple[str, ...]
    values: np.ndarray
    with_error: bool
    attrs: dict = field(default_factory=dict)

    def __len__(self) -> int:
        """Its rows: 1."""
        return len(self.values)

    @property
    def columns(self) -> tuple[str, ...]:
        """Its column labels, as the DataFrame's."""
        return _column_labels(self.names, self.with_error)

    def column(self, label: str) -> np.ndarray:
        """The column ``label`` (an aggregate's name, or it with " low" / " high"), one float64, read only.

        Parameters
        ----------
        label : str

        Returns
        -------
        numpy.ndarray of float64, shape (1,)
        """
        return self.values[:, self._position[label]]

    @functools.cached_property
    def _position(self) -> dict[str, int]:
        """Each column label's position in the row (the last of equal labels, as a frame's labels are looked up)."""
        return {label: j for j, label in enumerate(self.columns)}

    def frame(self) -> pd.DataFrame:
        """The answer's DataFrame (:func:`frame`'s), ``attrs`` included.

        Returns
        -------
        pandas.DataFrame
        """
        # pandas' default row index, new for each frame (as fast as a view of a kept RangeIndex(1))
        out = pd.DataFrame(self.values, columns=_column_index(self.names, self.with_error), copy=False)
        out.attrs.update(self.attrs)
        return out


def one_row(query: AggregateQuery, answers: dict[str, Estimate], with_error: bool) -> Row:
    """:func:`frame`'s answer without GROUP BY as a :class:`Row`.

    Parameters
    ----------
    query : AggregateQuery
        The query (its SELECT list names the columns).
    answers : dict of str to Estimate
        Per aggregate name, the estimate.
    with_error : bool
        Whether to hold each aggregate's low and high end after its value.

    Returns
    -------
    Row

    Raises
    ------
    ValueError
        A query that selects a column.
    """
    aggregates = query.aggregates
    if len(aggregates) != len(query.select):
        raise ValueError("a query without GROUP BY selects aggregates only")
    values = []
    for agg in aggregates:
        e = answers[agg.name]
        values += [e.value, e.low, e.high] if with_error else [e.value]
    return Row(tuple(agg.name for agg in aggregates), np.array([values], dtype=np.float64), with_error)


#: The dtype of an Index of column names as pandas infers it (its text dtype from pandas 3, object before).
_LABELS = pd.Index(["label"]).dtype
#: :func:`box_sums`'s "every bandwidth factor is 1" (whole-table answers read no per-row factors).
_NO_SCALE = np.zeros(0)


def _column_index(names: tuple[str, ...], with_error: bool) -> pd.Index:
    """The answer's column names, an Index of its own: a view of the one :func:`_kept_column_index` keeps
    for the query shape (1 us), which shares its labels (immutable) but not its name, which the owner of an
    answer may set in place (``df.columns.name = ...``) without renaming the columns of other answers
    (``DataFrame.copy(deep=True)`` gives a copy's axes so)."""
    return _kept_column_index(names, with_error).view()


@functools.lru_cache(maxsize=1024)
def _kept_column_index(names: tuple[str, ...], with_error: bool) -> pd.Index:
    """The column names of the answers of one query shape, made once (:func:`_column_index` hands out
    views), of the dtype pandas gives labels it infers (given, not inferred again: half the time)."""
    return pd.Index(_column_labels(names, with_error), dtype=_LABELS)


def _column_labels(names: tuple[str, ...], with_error: bool) -> tuple[str, ...]:
    """The answer's column labels: each aggregate's name, and after it ``<name> low`` / ``<name> high``
    when ``with_error``."""
    return tuple(n for name in names for n in (name, f"{name} low", f"{name} high")) if with_error else names
