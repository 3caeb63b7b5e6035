"""WHERE clauses with OR and NOT: unions of boxes, answered by inclusion-exclusion over their intersections.

:func:`parzen.aqp.sql.parse` turns a WHERE with OR / NOT into a union of boxes B_1, ..., B_m (NOT
pushed down to the predicates, e.g. ``NOT (a BETWEEN l AND h)`` = ``a < l OR a > h``; then the
disjunctive normal form).  Every additive aggregate of the union is, by inclusion-exclusion,

    A(B_1 u ... u B_m) = sum over non-empty S of {1..m} of (-1)^(|S|+1) A(prod_{i in S} B_i),

and the intersection of boxes is a box, answered as any conjunctive query (totals, grid or the
calibrated sample: :func:`parzen.aqp.answers.approximate`); intersections empty on their face
(disjoint ranges, as in ``a < 10 OR a > 100``) are skipped.

A box may also hold comparisons of two columns (``a < b OR x > 5``; ``NOT (a < b)`` is ``a >= b``,
both false on NULL as SQL's NOT; :mod:`parzen.aqp.row_predicates`): an intersection holds all of its
boxes' comparisons, and is answered as a domain estimate whose indicator 1[every comparison holds]
is read off each sampled row (:func:`parzen.aqp.domains.approximate`).  The algebra stays exact per
row: with c_ij = 1[box j's comparisons hold on row i] and m_i(B) row i's term for the box B (its
kernel mass, times y for SUM), sum over S of (-1)^(|S|+1) m_i(cap_{j in S} B_j) prod_{j in S} c_ij
= m_i(union of the B_j whose comparisons hold on row i) (inclusion-exclusion over those j alone),
so the union's estimate is the Horvitz-Thompson domain estimate of the union with the per-row
indicators (Saerndal, Swensson and Wretman 1992, section 10.3) where every intersection is read
from the sample.  Additive: COUNT(*), COUNT(col),
SUM(col), SUM of a polynomial; AVG(col) = SUM(col) / COUNT(col) of the union; sums of aggregates add
up their parts.  MIN / MAX of the union are the least / greatest of the boxes' (bounds when a box
has a range, as in :mod:`parzen.aqp.aggregates`).  Other aggregates (VAR, STDDEV, AVG of a
polynomial) raise :class:`~parzen.aqp.sql.UnsupportedQuery` under OR / NOT.

Intervals: the terms are correlated, so the half width of a sum is the sum of the terms' half
widths (sd(X + Y) <= sd(X) + sd(Y): conservative), and AVG's is (w_SUM + |AVG| w_COUNT) / COUNT
(its first-order bound).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pandas as pd

from . import answers
from .estimate import Estimate
from .sql import Aggregate, AggregateQuery, Range, UnsupportedQuery
from .strata import Layout
from .synopsis import Synopsis


def approximate(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None) -> tuple[pd.DataFrame, str]:
    """The answer to a query whose WHERE is a union of boxes (``query.boxes``; see the module).

    Parameters
    ----------
    query : AggregateQuery
        The query (names spelled as in the synopsis), with ``boxes``.
    synopsis : Synopsis
        Its synopsis.
    layout : Layout
        The synopsis's strata.
    z : float or None
        The intervals' normal quantile; None: no intervals.

    Returns
    -------
    frame : pandas.DataFrame
        Shaped like DuckDB's answer; ``attrs["bounds"]`` names the MIN / MAX answers that are bounds.
    form : str
        "sample" if any intersection was answered from the sample, else "grid" if any from the grid,
        else "totals".

    Raises
    ------
    UnsupportedQuery
        An aggregate that is not additive, MIN or MAX.
    """
    parts: dict[Aggregate, Aggregate] = {}  # additive parts and extremes -> the same under a name of its own
    for a in query.aggregates:
        _collect(a, parts)
    additive = [p for p in parts.values() if p.func not in ("min", "max")]
    extremes = [p for p in parts.values() if p.func in ("min", "max")]
    groups = list(query.group_by)  # every group column, selected or not: the answer rows' keys
    totals: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    lowest: dict[tuple, dict[str, list[float]]] = defaultdict(dict)
    forms, bounds = set(), set()
    boxes = query.boxes
    pairs = query.box_compared or ((),) * len(boxes)
    for size in range(1, len(boxes) + 1):
        for chosen in itertools.combinations(range(len(boxes)), size):
            box = _intersection([boxes[k] for k in chosen])
            select = additive + (extremes if size == 1 else [])
            if box is None or not select:
                continue
            compared = tuple(dict.fromkeys([*query.compared, *(c for k in chosen for c in pairs[k])]))
            sub = replace(query, select=(*groups, *select), ranges=box[0], members=box[1], boxes=(), box_compared=(),
                          compared=compared)
            if compared:  # the comparisons' indicators per sampled row (parzen.aqp.row_predicates)
                from . import domains  # it builds on answers' forms, as this module does

                frame, form = domains.approximate(sub, synopsis, layout, z)
            else:
                frame, form = answers.approximate(sub, synopsis, layout, z)
            forms.add(form)
            bounds |= set(frame.attrs.get("bounds", ()))
            sign = 1.0 if size % 2 else -1.0
            for _, row in frame.iterrows():
                key = tuple(None if _is_null(row[g]) else row[g] for g in query.group_by)
                for p in additive:
                    value = float(row[p.name])
                    half = float(row[f"{p.name} high"]) - value if z is not None else 0.0
                    totals[key][p.name][0] += sign * value
                    totals[key][p.name][1] += abs(half)
                for p in extremes:
                    _keep_extreme(lowest[key], p, row, z is not None)
    keys = list(dict.fromkeys([*totals, *lowest])) or [()]
    rows = {key: {a.name: _combine(a, parts, totals[key], lowest[key], z is not None) for a in query.aggregates}
            for key in keys}
    result = answers.frame(query, rows, z is not None)
    result.attrs["bounds"] = [a.name for a in query.aggregates
                              if a.func in ("min", "max") and parts[replace(a, name="")].name in bounds]
    form = "sample" if "sample" in forms else "grid" if "grid" in forms else "totals"
    return result, form


def _collect(a: Aggregate, parts: dict[Aggregate, Aggregate]) -> None:
    """Add the additive aggregates and extremes that ``a`` is made of to ``parts`` (under new names)."""
    if a.func == "combination":
        for _, part in a.parts:
            _collect(part, parts)
        return
    if a.func == "avg" and a.plain:
        for piece in (replace(a, func="sum"), replace(a, func="count")):
            _collect(piece, parts)
        return
    additive = a.func in ("count", "sum") and (a.plain or a.func == "sum")
    if not additive and a.func not in ("min", "max"):
        raise UnsupportedQuery(f"{a.name} under OR / NOT (COUNT, SUM, AVG of a column, MIN and MAX are answered there)")
    key = replace(a, name="")
    if key not in parts:
        parts[key] = replace(a, name=f"__parzen_union_{len(parts)}")


def _intersection(boxes) -> tuple[dict[str, Range], dict[str, frozenset]] | None:
    """The box common to ``boxes``, or None when it is empty on its face."""
    ranges: dict[str, Range] = {}
    members: dict[str, frozenset] = {}
    for box_ranges, box_members in boxes:
        for column, r in box_ranges.items():
            ranges[column] = ranges[column].intersect(r) if column in ranges else r
        for column, values in box_members.items():
            members[column] = members[column] & values if column in members else values
    empty = any(r.low is not None and r.high is not None and (r.low > r.high or (
        r.low == r.high and not (r.low_inclusive and r.high_inclusive))) for r in ranges.values())
    return None if empty or not all(members.values()) else (ranges, members)


def _keep_extreme(kept: dict[str, list[float]], p: Aggregate, row, with_error: bool) -> None:
    """Fold one box's MIN / MAX (and its interval) into the union's: the least MIN, the greatest MAX."""
    value = float(row[p.name])
    low, high = (float(row[f"{p.name} low"]), float(row[f"{p.name} high"])) if with_error else (value, value)
    pick = np.fmin if p.func == "min" else np.fmax
    if p.name not in kept:
        kept[p.name] = [value, low, high]
    else:
        old = kept[p.name]
        kept[p.name] = [float(pick(old[0], value)), float(pick(old[1], low)), float(pick(old[2], high))]


def _combine(a: Aggregate, parts: dict[Aggregate, Aggregate], totals, extremes, with_error: bool) -> Estimate:
    """The union's answer to ``a`` from the inclusion-exclusion totals of its parts."""
    if a.func == "combination":
        value = half = 0.0
        for k, part in a.parts:
            e = _combine(part, parts, totals, extremes, with_error)
            value += k * e.value
            half += abs(k) * (e.high - e.value if with_error else 0.0)
        return _estimate(value, half, with_error)
    if a.func in ("min", "max"):
        value, low, high = extremes.get(parts[replace(a, name="")].name, [math.nan] * 3)
        return Estimate(value, low, high) if with_error else Estimate(value)
    if a.func == "avg" and a.plain:
        (total, total_half), (count, count_half) = (totals[parts[replace(a, func=f, name="")].name]
                                                    for f in ("sum", "count"))
        ratio = total / count if count > 0 else math.nan
        return _estimate(ratio, (total_half + abs(ratio) * count_half) / count if count > 0 else math.nan, with_error)
    value, half = totals[parts[replace(a, name="")].name]
    return _estimate(value, half, with_error)


def _is_null(value) -> bool:
    """A NULL group key as the answer frame holds it (None or NaN: NaN keys would not match each other)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _estimate(value: float, half: float, with_error: bool) -> Estimate:
    return Estimate(value, value - half, value + half) if with_error else Estimate(value)
