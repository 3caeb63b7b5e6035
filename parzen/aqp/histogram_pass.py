"""Every bin of a histogram query in one pass over the sample (the per-bin answers, without a query per bin).

:func:`parzen.aqp.histogram.answer` defines bin k's answer as that of the query with one more
range, x in [e_k, e_{k+1}) (:func:`parzen.aqp.answers.approximate`).  From the sample, that answer
is sum_i w_i p_i(k) (COUNT(*)), with p_i(k) = P_x,i(B_k) prod_{c != x} P_c,i the product of row i's
kernel masses over the query's ranges (docs/statistics.md, "AQP: integrals of the density over
boxes"), then calibrated per bin (:func:`parzen.aqp.answers.calibration_factor`).  Only the factor
P_x,i(B_k) depends on the bin, and a row's kernel (bandwidth h, mass beyond 6 h left out) reaches
only the bins within 6 h of it: so one pass visits each row that every other range reaches once,
computes prod_{c != x} P_c,i once, and adds w_i P_x,i(B_k) prod_{c != x} P_c,i to each bin its
kernel reaches, with P_x,i(B_k) the same compiled kernel integral
(:func:`parzen.aqp._box.row_box`: the normal CDF's differences at the bin's ends, reflected at the
column's lower edge) that bin k's own query computes.  The rows each bin counts are those its own
query visits (the rows within 6 h widest of its box, docs/algorithms.md "Box integrals"), each
bin's sums run over them in the same ascending order, and so the answers equal the per-bin ones
up to the order of the products' factors (about 1e-16 relative; the tests hold them to 1e-12).
The calibration, a few scalar operations per bin, reuses :func:`calibration_factor` as it is.

From the gridded form (x the only range column, no IN, every aggregate COUNT(*) or of x), bin k
is C(b_k) - C(a_k), read per bin as before (:func:`parzen.aqp.answers.approximate`'s grid form).
Intervals (``z``) add each bin's standard error as its own query computes it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from . import answers, calibration
from ._box import _CACHE_MAX, _reached_rows, row_box
from .estimate import _REACH
from .sql import AggregateQuery, Range
from .strata import Layout, output_groups
from .synopsis import Synopsis

#: Entries (a power of 2) of :func:`_binned_sums`'s direct-mapped cache of x's kernel integrals.
_CACHE = 8192


@dataclass(frozen=True)
class BinnedAnswer:
    """Per bin, the aggregates in the SELECT list's order (with ``low`` / ``high`` after each when
    intervals were asked for), and the form that answered ("grid" or "sample").

    Parameters
    ----------
    values : numpy.ndarray
        bins x (aggregates, or 3 per aggregate with intervals).
    form : str
        "grid" or "sample".
    """

    values: np.ndarray
    form: str
    masses: np.ndarray | None = None


def one_pass_answers(base: AggregateQuery, column: str, boxes: list[Range], synopsis: Synopsis, layout: Layout,
                     z: float | None, also: Sequence[Range] = ()) -> BinnedAnswer | None:
    """The answers of ``base`` with its range on ``column`` replaced by each of ``boxes`` (the bins'
    ranges, ascending and disjoint), as :func:`parzen.aqp.answers.approximate` gives them one by
    one; None when the query needs the per-bin path (an aggregate other than COUNT / SUM / AVG).

    Parameters
    ----------
    base : AggregateQuery
        The histogram's query without its bin, names spelled as in the synopsis.
    column : str
        The binned column x (a modelled numeric column).
    boxes : list of Range
        Per bin, the range on x (the query's own range on x intersected with the bin).
    synopsis : Synopsis
        The synopsis.
    layout : Layout
        Its strata.
    z : float or None
        The normal quantile of the intervals; None: no intervals.
    also : list of Range
        Other boxes on ``column`` (a density curve's finer bins, ascending and disjoint): where the
        answers come from the sample, the same pass gives their :func:`kernel_masses` too
        (``BinnedAnswer.masses``; None otherwise).

    Returns
    -------
    BinnedAnswer or None
    """
    if not all(a.plain for a in base.aggregates):
        return None
    if not boxes:
        return BinnedAnswer(np.zeros((0, len(base.aggregates) * (3 if z is not None else 1))), "none")
    models = synopsis.models
    names = [a.name for a in base.aggregates]
    # a bin's query differs from base only in its range on x: the same form, strata and calibration branch
    grid = answers._grid_for(base, synopsis)
    if grid is not None:
        point = _grid_values(base, column, boxes, synopsis, grid)
        output_of_stratum, form = layout.whole, "grid"
    else:
        _, output_of_stratum = output_groups(base, synopsis, layout)  # one answer row: no GROUP BY but the bin
        point, masses = _sample_values(base, column, boxes, synopsis, layout, output_of_stratum, names, also)
        form = "sample"
    if z is None:
        return BinnedAnswer(point, form, masses if grid is None and also else None)
    out = np.empty((len(boxes), 3 * len(names)))
    for k, box in enumerate(boxes):
        q = replace(base, ranges={**base.ranges, column: box})
        halves = answers._half_widths(q, synopsis, layout, {c: r for c, r in q.ranges.items() if c in models},
                                      output_of_stratum, 1, z)
        for j, name in enumerate(names):
            half = float(halves[name][0])
            out[k, 3 * j:3 * j + 3] = point[k, j], point[k, j] - half, point[k, j] + half
    return BinnedAnswer(out, form)


def _grid_values(base: AggregateQuery, column: str, boxes: list[Range], synopsis: Synopsis, grid) -> np.ndarray:
    """Per bin, the grid form's COUNT = C(b) - C(a), SUM = S(b) - S(a), AVG their ratio
    (:func:`parzen.aqp.answers.approximate`), every bin at once (:meth:`ColumnGrid.boxes`)."""
    model = synopsis.models[column]
    ends = np.array([model.interval(box) for box in boxes], dtype=np.float64).reshape(-1, 2)
    rows, total = grid.boxes(ends[:, 0], ends[:, 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(rows > 0, total / rows, np.nan)
    value = {"count": rows, "sum": total, "avg": mean}
    return np.stack([value[a.func] for a in base.aggregates], axis=1)


@dataclass(frozen=True)
class _Pass:
    """One pass's sums and what the calibration of each bin reads of it."""

    sums: np.ndarray  # bins x (1 + 2 aggregated): box_sums's columns per bin
    bins: np.ndarray  # bins x 2: each bin's interval [a, b] on x
    others: dict  # the other range columns' intervals
    found: dict  # the other range columns' candidate rows
    held: np.ndarray  # per bin: its interval is not empty
    reach: float  # how far from a box x's kernels reach (6 h times the widest bandwidth factor)
    aggregated: list  # the aggregated columns
    also: np.ndarray  # the same sums for the boxes of ``_one_pass(also=...)`` (none: 0 rows)


def _one_pass(base: AggregateQuery, column: str, boxes: list[Range], synopsis: Synopsis, layout: Layout,
              output_of_stratum: np.ndarray, also: Sequence[Range] = ()) -> _Pass:
    """The sums of :func:`parzen.aqp._box.box_sums` for every bin's query, from one pass over the rows;
    and for the boxes ``also`` on the same column (another set of bins), the same pass adds theirs."""
    models = synopsis.models
    model = models[column]
    others = {c: models[c].interval(r) for c, r in base.ranges.items() if c in models and c != column}
    every = np.array([model.interval(box) for box in [*boxes, *also]], dtype=np.float64).reshape(-1, 2)
    bins = every[:len(boxes)]
    aggregated = list(dict.fromkeys(a.column for a in base.aggregates if a.column is not None))
    whole = answers.whole_table(base, output_of_stratum)
    widest = 1.0 if whole or layout.row_scale is None else float(layout.row_scale.max(initial=1.0))
    reach_x = _REACH * model.bandwidth * widest
    found = {c: layout.view.candidates(c, a, b, _REACH * models[c].bandwidth * widest) for c, (a, b) in others.items()}
    held = every[:, 1] >= every[:, 0]
    sums = np.zeros((len(every), 1 + 2 * len(aggregated)))
    if held.any() and not any(b < a for a, b in others.values()):
        span = layout.view.candidates(column, float(every[held, 0].min()), float(every[held, 1].max()), reach_x)
        rows = _reached(list(found.values()) + [span], layout.data.shape[1])
        names = list(others)
        sums = _binned_sums(
            rows, layout.data, layout.position[column], every[:, 0].copy(), every[:, 1].copy(),
            every[:, 0] - reach_x, every[:, 1] + reach_x, held,
            np.array([0, len(boxes), len(every)], dtype=np.intp), model.bandwidth, 0.0 if model.lower is None else model.lower, model.lower is not None,
            np.array([layout.position[c] for c in names], dtype=np.intp),
            np.array([others[c][0] for c in names]), np.array([others[c][1] for c in names]),
            np.array([models[c].bandwidth for c in names]),
            np.array([0.0 if models[c].lower is None else models[c].lower for c in names]),
            np.array([models[c].lower is not None for c in names], dtype=np.bool_),
            np.array([c in aggregated for c in names], dtype=np.bool_), column in aggregated,
            answers._NO_SCALE if whole else layout.scale_of_row, layout.stratum_of_row, output_of_stratum,
            layout.weight, np.array([layout.position[y] for y in aggregated], dtype=np.intp),
            np.array([-1 if y == column else (names.index(y) if y in others else -2) for y in aggregated],
                     dtype=np.intp),
            _REACH)
    n = len(boxes)
    return _Pass(sums[:n], bins, others, found, held[:n], reach_x, aggregated, sums[n:])


def kernel_masses(base: AggregateQuery, column: str, boxes: list[Range], synopsis: Synopsis,
                  layout: Layout) -> np.ndarray:
    """Per box on ``column``, the sample's stratified kernel mass under ``base``'s other predicates,
    sum_i w_i P_x,i(B_k) prod_{c != x} P_c,i, not calibrated: the synopsis's density estimate of the
    rows in each box (``parzen serve``'s density curves, drawn at a finer width than the bars).

    Parameters
    ----------
    base : AggregateQuery
        The predicates (names spelled as in the synopsis); its aggregates are not read.
    column : str
        The modelled column x.
    boxes : list of Range
        Ranges on x, ascending and disjoint.
    synopsis : Synopsis
    layout : Layout

    Returns
    -------
    numpy.ndarray
        One mass (estimated rows) per box.
    """
    _, output_of_stratum = output_groups(base, synopsis, layout)
    counting = replace(base, select=())
    return _one_pass(counting, column, boxes, synopsis, layout, output_of_stratum).sums[:, 0].copy()


def _sample_values(base: AggregateQuery, column: str, boxes: list[Range], synopsis: Synopsis, layout: Layout,
                   output_of_stratum: np.ndarray, names: list[str],
                   also: Sequence[Range] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Per bin, :func:`parzen.aqp.answers.calibrated_values` of its query (``base`` with x in the
    bin), the sums from one pass, each bin's calibration factor as its query's; and per box of
    ``also``, its :func:`kernel_masses` from the same pass."""
    found = _one_pass(base, column, boxes, synopsis, layout, output_of_stratum, also)
    sizes = _candidate_counts(layout, column, found.bins, found.reach)
    factors = bin_factors(base, column, synopsis, layout, found.bins, found.held, found.sums, found.others,
                          {c: rows.size for c, rows in found.found.items()}, sizes, output_of_stratum)
    result = answers._aggregate_values(base, found.sums, found.aggregated, factors)  # elementwise, as per bin
    return np.stack([np.asarray(result[name], dtype=np.float64) for name in names], axis=1), found.also[:, 0].copy()


def bin_factors(base: AggregateQuery, column: str, synopsis: Synopsis, layout: Layout, bins: np.ndarray,
                held: np.ndarray, sums: np.ndarray, others: dict[str, tuple[float, float]], other_counts: dict[str, int],
                bin_counts: np.ndarray, output_of_stratum: np.ndarray,
                bin_margins: tuple[np.ndarray, np.ndarray] | None = None,
                other_margins: dict[str, tuple[float, float]] | None = None) -> np.ndarray:
    """Per bin, the calibration factor of its query (``base`` with x in the bin), as
    :func:`parzen.aqp.answers.calibration_factor` gives it, every bin at once.

    A histogram has no GROUP BY, so the factor is 1 unless the query is about the whole table
    (:func:`parzen.aqp.answers.whole_table`); then c, the range column with the fewest candidate
    rows (the bin's x or another; ties go to the one first in the WHERE clause, as
    :func:`parzen.aqp.answers.calibrated_values` sorts them), gives the ratio M / X of its box, or
    with exactly two range columns, both with grids, the raked 2 x 2 cell shrunk towards
    independence over the sample's (:func:`parzen.aqp.calibration.rake_2x2_each`,
    :func:`parzen.aqp.calibration.shrink_to_independence_each`: the scalar functions' operations
    elementwise, so the same numbers).

    Parameters
    ----------
    base : AggregateQuery
        The histogram's query without its bin, names spelled as in the synopsis.
    column : str
        The binned column x.
    synopsis : Synopsis
    layout : Layout
    bins : numpy.ndarray
        bins x 2: each bin's interval [a, b] on x.
    held : numpy.ndarray
        Per bin, whether its interval is not empty.
    sums : numpy.ndarray
        Per bin, :func:`parzen.aqp._box.box_sums`'s columns for its query.
    others : dict of str to (float, float)
        The other range columns' intervals.
    other_counts : dict of str to int
        Their candidate rows (:meth:`SampleView.candidates` at the query's reach).
    bin_counts : numpy.ndarray
        Per bin, its candidate rows.
    output_of_stratum : numpy.ndarray
        Per stratum, its answer row or -1.
    bin_margins : (numpy.ndarray, numpy.ndarray), optional
        Per bin, X and M of its box on x: the sample's kernel mass (:meth:`SampleView.marginal`) and
        the grid's exact rows (computed when not given and x has a grid).
    other_margins : dict of str to (float, float), optional
        X and M of the other range columns' boxes (computed when not given).

    Returns
    -------
    numpy.ndarray
        One factor per bin (1 for an empty bin or an empty range: every sum is 0).
    """
    factors = np.ones(len(bins))
    if any(b < a for a, b in others.values()) or not answers.whole_table(base, output_of_stratum):
        return factors  # every sum 0; or no calibration (calibration_factor without GROUP BY)
    grids = synopsis.grids
    ranged = [c for c in base.ranges if c in synopsis.models]  # a bin's range columns, in its query's order
    rest = sorted((c for c in ranged if c != column), key=other_counts.__getitem__)  # stable: WHERE order on ties
    if rest:
        ahead = ranged.index(column) < ranged.index(rest[0])  # x wins a tie with the column after it
        x_first = (bin_counts < other_counts[rest[0]]) | (ahead & (bin_counts == other_counts[rest[0]]))
    else:
        x_first = np.ones(len(bins), dtype=bool)
    if column in grids:
        if bin_margins is None:
            bin_margins = (np.array([layout.view.marginal(synopsis.models[column], a, b) for a, b in bins]),
                           grids[column].boxes(bins[:, 0], bins[:, 1])[0])
        x_sampled, x_exact = bin_margins
    else:
        x_sampled = x_exact = np.zeros(len(bins))
    margins = dict(other_margins or {})
    for c in rest[:1] if len(ranged) != 2 else rest:
        if c in grids and c not in margins:
            margins[c] = layout.view.marginal(synopsis.models[c], *others[c]), grids[c].box(*others[c])[0]
    other_sampled, other_exact = margins.get(rest[0], (0.0, 0.0)) if rest else (0.0, 0.0)
    out = sums[:, 0]
    first_gridded = np.where(x_first, column in grids, bool(rest) and rest[0] in grids)
    sampled = out if len(ranged) == 1 else np.where(x_first, x_sampled, other_sampled)
    exact = np.where(x_first, x_exact, other_exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(sampled > 0, exact / sampled, 1.0)  # calibration.ratio_factor
        if len(ranged) == 2:
            second_gridded = np.where(x_first, rest[0] in grids, column in grids)
            second_sampled = np.where(x_first, other_sampled, x_sampled)
            second_exact = np.where(x_first, other_exact, x_exact)
            table_rows = float(layout.rows.sum())
            raked = calibration.rake_2x2_each(out, sampled, second_sampled, table_rows, exact, second_exact)
            shrunk = calibration.shrink_to_independence_each(raked, table_rows, exact, second_exact,
                                                             layout.effective_rows,
                                                             float(layout.drawn.sum()) / table_rows)
            factor = np.where(second_gridded & (out > 0) & ~np.isnan(raked), shrunk / out, factor)
    return np.where(held & first_gridded & (sampled > 0), factor, factors)


def _no_groups() -> np.ndarray:
    raise AssertionError("a histogram query has no GROUP BY to rake")  # calibration_factor rakes GROUP BY only


def _candidate_counts(layout: Layout, column: str, bins: np.ndarray, reach: float) -> np.ndarray:
    """Per bin, how many sampled rows lie within ``reach`` of its box (the size of
    :meth:`~parzen.aqp.estimate.SampleView.candidates`), by binary search."""
    values, _ = layout.view._sort(column)
    low = np.searchsorted(values, bins[:, 0] - reach, side="left")
    high = np.searchsorted(values, bins[:, 1] + reach, side="right")
    return high - low


def _reached(candidates: list[np.ndarray], n: int) -> np.ndarray:
    """The rows (ascending) in every candidate set (:func:`parzen.aqp._box._reached_rows`)."""
    starts = np.cumsum([0] + [c.size for c in candidates])
    return _reached_rows(np.concatenate(candidates).astype(np.intp, copy=False), starts.astype(np.intp), n)


@njit(cache=True, inline="always")
def _bins_reached(x, reach_lows, reach_highs, start, step):
    """(first, last): the bins k with reach_lows[k] <= x <= reach_highs[k] are first .. last - 1 (both
    arrays ascending), found from the guess (x - start) / step of nearly equal bins and a walk to the
    exact ends (as np.searchsorted(reach_highs, x, "left") and np.searchsorted(reach_lows, x, "right"))."""
    bins = reach_lows.size
    guess = (x - start) / step
    k = 0 if not guess > 0.0 else (bins - 1 if guess >= bins - 1 else int(guess))
    first = k
    while first > 0 and reach_highs[first - 1] >= x:
        first -= 1
    while first < bins and reach_highs[first] < x:
        first += 1
    last = k
    while last > 0 and reach_lows[last - 1] > x:
        last -= 1
    while last < bins and reach_lows[last] <= x:
        last += 1
    return first, last


@njit(cache=True, nogil=True)  # answers may run in several threads (parzen serve)
def _binned_sums(rows, data, x_column, x_lows, x_highs, reach_lows, reach_highs, held, set_starts, x_bandwidth,
                 x_lower, x_reflect, columns, lows, highs, bandwidths, lowers, reflects, moments, x_moment, row_scale,
                 stratum_of_row, output_of_stratum, weight_of_stratum, aggregated, constrained, reach):
    """Per bin k: [sum w p, then per aggregated column: sum w COUNT-term, sum w SUM-term] as
    :func:`parzen.aqp._box.box_sums` gives them for bin k's query, p = P_x(B_k) times the other
    ranges' masses; ``constrained[q]`` is -1 when aggregated column q is x, its index among the
    other ranges, or -2 for an unconstrained column; moments (of the kernels near a box's ends, two
    exponentials) are computed only for aggregated columns (``moments``, ``x_moment``), as there.  A row counts in bin k when its x is within
    reach of its box, reach_lows[k] <= x <= reach_highs[k] (ascending within each set of bins: [x_lows[k], x_highs[k]]
    widened by 6 h times the widest bandwidth factor, as bin k's candidate rows are found).  The bins
    come in sets, set s the bins set_starts[s] .. set_starts[s + 1] - 1 (a histogram's bars and its
    density curve's finer bins): each row's other masses are computed once for all of them, and each
    bin's sums are those of a pass over its set alone."""
    bins = x_lows.size
    sets = set_starts.size - 1
    steps = np.ones(sets)
    for s_ in range(sets):
        a_, b_ = set_starts[s_], set_starts[s_ + 1]
        if b_ > a_:
            steps[s_] = (x_highs[b_ - 1] - x_lows[a_]) / (b_ - a_)
    cache_x = np.full(_CACHE, np.nan)  # (value, bandwidth, bin) -> x's (mass, moment): integer columns
    cache_h = np.zeros(_CACHE)  # repeat a few values near each bin's ends, each integrated once
    cache_k = np.full(_CACHE, -1, dtype=np.intp)
    cache_m = np.zeros(_CACHE)
    cache_mo = np.zeros(_CACHE)
    r = columns.size
    out = np.zeros((bins, 1 + 2 * aggregated.size))
    mass = np.empty(r)
    moment = np.empty(r)
    scaled = row_scale.size > 0
    for t in range(rows.size):
        i = rows[t]
        stratum = stratum_of_row[i]
        g = output_of_stratum[stratum]
        if g < 0:
            continue
        s = row_scale[i] if scaled else 1.0
        p_other = 1.0
        for j in range(r):
            m, mo = row_box(data[columns[j], i], lows[j], highs[j], bandwidths[j] * s, lowers[j], reflects[j], reach,
                            moments[j])
            mass[j] = m
            moment[j] = mo
            p_other *= m
        if p_other == 0.0:
            continue
        x = data[x_column, i]
        w = weight_of_stratum[stratum]
        for s_ in range(sets):
            start, end = set_starts[s_], set_starts[s_ + 1]
            if end == start or not (x >= reach_lows[start] and x <= reach_highs[end - 1]):  # also NaN: no bin
                continue
            first, last = _bins_reached(x, reach_lows[start:end], reach_highs[start:end], x_lows[start], steps[s_])
            _add_bins(out, x, start + first, start + last, held, x_lows, x_highs, x_bandwidth * s, x_lower, x_reflect,
                      reach, x_moment, w, p_other, mass, moment, r, aggregated, constrained, data, i, cache_x, cache_h,
                      cache_k, cache_m, cache_mo)
    return out


@njit(cache=True, inline="always")
def _add_bins(out, x, first, last, held, x_lows, x_highs, h, x_lower, x_reflect, reach, x_moment, w, p_other, mass,
              moment, r, aggregated, constrained, data, i, cache_x, cache_h, cache_k, cache_m, cache_mo):
    """Row i's terms added to bins first .. last - 1 (:func:`_binned_sums`)."""
    for k in range(first, last):
        if not held[k]:
            continue
        slot = (int(x) * 61 + k) & (_CACHE - 1) if abs(x) < _CACHE_MAX else -1
        if slot >= 0 and cache_x[slot] == x and cache_h[slot] == h and cache_k[slot] == k:
            m_x, mo_x = cache_m[slot], cache_mo[slot]
        else:
            m_x, mo_x = row_box(x, x_lows[k], x_highs[k], h, x_lower, x_reflect, reach, x_moment)
            if slot >= 0:
                cache_x[slot], cache_h[slot], cache_k[slot] = x, h, k
                cache_m[slot], cache_mo[slot] = m_x, mo_x
        p = m_x * p_other
        if p == 0.0:
            continue
        out[k, 0] += w * p
        for q in range(aggregated.size):
            c = constrained[q]
            if c == -1:
                out[k, 1 + 2 * q] += w * p
                out[k, 2 + 2 * q] += w * mo_x * p_other
            elif c >= 0:
                rest = m_x
                for j in range(r):
                    if j != c:
                        rest *= mass[j]
                out[k, 1 + 2 * q] += w * p
                out[k, 2 + 2 * q] += w * moment[c] * rest
            else:
                y = data[aggregated[q], i]
                if not math.isnan(y):
                    out[k, 1 + 2 * q] += w * p
                    out[k, 2 + 2 * q] += w * y * p
