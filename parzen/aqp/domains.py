"""Answers that GROUP BY or filter (IN / =) on categorical columns outside the synopsis's strata.

The sample's strata are the ``group_by`` groups of the build; any other categorical column
(:mod:`parzen.aqp.categories`, dimension columns of a join synopsis too) cuts the strata into
*domains*: the answer row of a sampled row is read from its own codes, not from its stratum.  The
estimators are the stratified ones of :func:`parzen.aqp.answers.stratified_estimates` summed over
a domain (Saerndal, Swensson and Wretman 1992, Model Assisted Survey Sampling, section 10.3,
domain estimation): with w_s = rows_s / drawn_s and t_i the row's term (its kernel mass, times y
for SUM; 1 without a numeric predicate),

    T_d = sum_s w_s sum_{i in s, i in d} t_i,
    Var(T_d) = sum_s rows_s^2 (1 - drawn_s / rows_s) S^2_{s,d} / drawn_s,

S^2_{s,d} the variance over *all* drawn rows of stratum s of t_i 1[i in d] (a domain's size is random
in the sample, which this variance counts).  When the build's exact tables give the domain's rows
N_d (one table covers every categorical column the query reads), COUNT and SUM are ratio estimates
N_d T_d / T_1d (T_1d the same sum of 1 over the domain's rows: calibration to the known domain size),
with the linearised variance of t_i - (T_d / T_1d) 1[i in d] (docs/statistics.md's calibration, one
constraint).  AVG is the ratio of SUM and COUNT(col), with the delta method.

Every group that exists under the query's categorical filters is returned when an exact table covers
the query's categorical columns; a group with no sampled row is then answered from the exact domain
size under independence of the numeric predicate (the whole query's share of rows in the ranges and
its averages), with intervals that always hold: COUNT in [0, N_d], SUM in N_d [min(0, MIN), max(0, MAX)],
AVG in [MIN, MAX] (the column's exact MIN and MAX).  docs/aqp.md, "GROUP BY any categorical column".
"""

from __future__ import annotations

import math

import numpy as np

from .categories import Categories, matches
from .estimate import Estimate, row_terms
from .sql import AggregateQuery, UnsupportedQuery
from .strata import Layout
from .synopsis import Synopsis


def needed(query: AggregateQuery, synopsis: Synopsis) -> bool:
    """Whether ``query`` groups or filters (IN / =) on a categorical column outside the strata.

    Parameters
    ----------
    query : AggregateQuery
        A query whose names are spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.

    Returns
    -------
    bool
    """
    if synopsis.categories is None:
        return False
    used = [*query.group_by, *query.members, *(c for _, members in query.boxes for c in members)]
    return any(c not in synopsis.group_by and c in synopsis.categories.values for c in used)


def approximate(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None):
    """The answer to ``query`` by domain estimation (see the module's notes).

    Parameters
    ----------
    query : AggregateQuery
        COUNT / SUM / AVG with AND-ed predicates, names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis, with :attr:`~parzen.aqp.synopsis.Synopsis.categories`.
    layout : Layout
        The synopsis's strata.
    z : float or None
        The normal quantile of the intervals; None: none.

    Returns
    -------
    frame : pandas.DataFrame
        One row per group (every existing group when an exact table covers the query).
    form : str
        "sample".

    Raises
    ------
    UnsupportedQuery
        Other aggregates, OR / NOT, or a text range on a categorical column.
    """
    from .answers import frame  # answers dispatches here

    categories = synopsis.categories
    assert categories is not None
    outside = [c for c in [*query.group_by, *query.members] if c not in synopsis.group_by]
    if query.boxes or not all(a.plain for a in query.aggregates):
        raise UnsupportedQuery(f"GROUP BY / IN / = on {outside[0]!r} (a categorical column outside the synopsis's "
                               f"group_by) with OR / NOT or aggregates other than COUNT/SUM/AVG; rebuild with "
                               f"group_by=[{outside[0]!r}, ...] for those")
    read = list(dict.fromkeys([*query.group_by, *query.members,
                               *(c for c in query.ranges if c not in synopsis.models)]))
    allowed = {c: _allowed_codes(query, categories, c) for c in read}
    keep = np.ones(synopsis.sample_size, dtype=bool)
    for c in read:
        keep &= allowed[c][categories.codes[c]]
    radix = [len(categories.values[g]) for g in query.group_by]
    kept = np.flatnonzero(keep)
    key_of_row = _mixed_radix([categories.codes[g][kept] for g in query.group_by], radix, kept.size)
    exact = _exact_groups(query, categories, allowed, radix)
    sampled_keys, group = np.unique(key_of_row, return_inverse=True)
    keys = list(sampled_keys) + [k for k in (exact or {}) if k not in set(sampled_keys.tolist())]
    if not query.group_by and not keys:
        keys = [0]
    sizes = len(keys)
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    aggregated = {a.column for a in query.aggregates if a.column is not None}
    terms = _dense_terms(synopsis, layout, ranges, aggregated, keep, kept)
    stratum = layout.stratum_of_row[kept]
    weight = layout.weight[stratum]
    strata = len(layout.keys)

    def total(values):
        return np.bincount(group, weights=weight * values, minlength=sizes)

    def se(values):
        return np.sqrt(_domain_variance(values, stratum, group, layout, strata, sizes))

    ones = np.ones(kept.size)
    size_estimate = total(ones)
    exact_rows = np.array([np.nan if exact is None else exact.get(k, np.nan) for k in keys], dtype=np.float64)
    known = ~np.isnan(exact_rows) & (size_estimate > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(known, exact_rows / size_estimate, 1.0)

    sampled_rows = float(size_estimate.sum())
    overall: dict[str, float] = {}  # per aggregate: the whole query's rate per row (AVG: its average)

    def estimate(values, name):
        """A COUNT/SUM total per group: the ratio estimate where the domain size is known."""
        t = total(values)
        overall[name] = float(t.sum()) / sampled_rows if sampled_rows > 0 else 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(size_estimate > 0, t / size_estimate, 0.0)
        linear = np.where(known[group], values - mean[group], values)
        return share * t, share * se(linear)

    answers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for a in query.aggregates:
        if a.column is None:
            value, error = estimate(terms["count"], a.name)
            if not ranges:  # the domain's exact rows, where known (not a product that rounds)
                value, error = np.where(known, exact_rows, value), np.where(known, 0.0, error)
            answers[a.name] = value, error
        elif a.func == "avg":
            num, den = terms[f"sum {a.column}"], terms[f"count {a.column}"]
            num_total, den_total = total(num), total(den)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(den_total > 0, num_total / den_total, np.nan)
                overall[a.name] = float(num_total.sum() / den_total.sum()) if den_total.sum() > 0 else math.nan
                answers[a.name] = ratio, se(num - np.nan_to_num(ratio)[group] * den) / den_total
        else:
            answers[a.name] = estimate(terms[f"{a.func} {a.column}"], a.name)
    unsampled = size_estimate <= 0
    rows = {}
    for g, key in enumerate(keys):
        decoded = _decode(int(key), query.group_by, radix, categories)
        if unsampled[g]:
            rows[decoded] = _unsampled(query, synopsis, overall, exact_rows[g], bool(ranges), z)
        else:
            rows[decoded] = {name: _interval(float(v[g]), None if z is None else z * float(s[g]))
                             for name, (v, s) in answers.items()}
    return frame(query, rows, z is not None), "sample"


def _allowed_codes(query: AggregateQuery, categories: Categories, column: str) -> np.ndarray:
    """Per code of ``column``, whether the query's IN / = and range on it admit the value."""
    values = categories.values[column]
    ok = np.ones(len(values), dtype=bool)
    if column in query.members:
        ok &= np.array([any(matches(v, lit) for lit in query.members[column]) for v in values], dtype=bool)
    if column in query.ranges:
        r = query.ranges[column]
        if any(isinstance(v, str) for v in values):
            raise UnsupportedQuery(f"a range on the text column {column!r}")
        ok &= np.array([v is not None and r.contains(float(v)) for v in values], dtype=bool)
    return ok


def _mixed_radix(codes: list[np.ndarray], radix: list[int], n: int) -> np.ndarray:
    """One int64 key per row from the codes of several columns (``radix``: each column's values)."""
    out = np.zeros(n, dtype=np.int64)
    for c, r in zip(codes, radix):
        out = out * r + c
    return out


def _decode(key: int, columns, radix: list[int], categories: Categories) -> tuple:
    values = []
    for column, r in zip(reversed(columns), reversed(radix)):
        key, code = divmod(key, r)
        values.append(categories.values[column][code])
    return tuple(reversed(values))


def _exact_groups(query: AggregateQuery, categories: Categories, allowed: dict[str, np.ndarray],
                  radix: list[int]) -> dict[int, float] | None:
    """Per group key (mixed radix of the GROUP BY codes), the table's exact rows under the query's
    categorical filters, from the smallest exact table covering its categorical columns (None: none does)."""
    table = categories.covering(allowed)
    if table is None:
        return None
    position = {c: k for k, c in enumerate(table.columns)}
    admitted = np.ones(table.rows.size, dtype=bool)
    for c, ok in allowed.items():
        admitted &= ok[table.codes[:, position[c]]]
    keys = _mixed_radix([table.codes[admitted, position[g]] for g in query.group_by], radix, int(admitted.sum()))
    unique, inverse = np.unique(keys, return_inverse=True)
    rows = np.bincount(inverse, weights=table.rows[admitted].astype(np.float64), minlength=unique.size)
    return dict(zip(unique.tolist(), rows.tolist()))


def _dense_terms(synopsis: Synopsis, layout: Layout, ranges, aggregated, keep: np.ndarray,
                 kept: np.ndarray) -> dict[str, np.ndarray]:
    """Per kept sampled row: its COUNT(*) term ("count") and per aggregated column y its COUNT(y) and
    SUM(y) terms ("count y", "sum y"): kernel masses of the ranges (0 for rows out of their reach),
    or 1 without ranges."""
    out: dict[str, np.ndarray] = {}
    if not ranges:
        out["count"] = np.ones(kept.size)
        for y in aggregated:
            values = layout.view.columns[y][kept]
            valid = ~np.isnan(values)
            out[f"count {y}"], out[f"sum {y}"] = valid.astype(np.float64), np.where(valid, values, 0.0)
        return out
    terms = row_terms(layout.view, synopsis.models, ranges, aggregated, row_scale=layout.row_scale,
                      keep=lambda rows: keep[rows])
    at = np.searchsorted(kept, terms.rows)

    def dense(values):
        full = np.zeros(kept.size)
        full[at] = values
        return full

    out["count"] = dense(terms.count)
    for y in aggregated:
        out[f"count {y}"], out[f"sum {y}"] = dense(terms.count_y[y]), dense(terms.sum_y[y])
    return out


def _domain_variance(values, stratum, group, layout: Layout, strata: int, groups: int) -> np.ndarray:
    """Per group (domain): the variance of its stratified total of ``values`` (zero outside it)."""
    cell = stratum * groups + group
    s1 = np.bincount(cell, weights=values, minlength=strata * groups).reshape(strata, groups)
    s2 = np.bincount(cell, weights=values * values, minlength=strata * groups).reshape(strata, groups)
    n, rows = layout.drawn[:, None], layout.rows[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1), 0.0)
        contribution = rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows)
    return np.nan_to_num(contribution).sum(axis=0)


def _interval(value: float, half: float | None) -> Estimate:
    return Estimate(value) if half is None else Estimate(value, value - half, value + half)


def _unsampled(query: AggregateQuery, synopsis: Synopsis, overall: dict[str, float], rows: float, ranged: bool,
               z: float | None) -> dict[str, Estimate]:
    """A group that exists (``rows`` in the table) but has no sampled row: the whole query's rates
    per row and averages (``overall``) applied to its exact size, and intervals that always hold
    (module notes)."""
    out = {}
    for a in query.aggregates:
        model = synopsis.models.get(a.column) if a.column is not None else None
        low = -math.inf if model is None or model.minimum is None else model.minimum
        high = math.inf if model is None or model.maximum is None else model.maximum
        if a.func == "avg":
            value, bounds = overall[a.name], (low, high)
        elif a.column is None and not ranged:
            value, bounds = rows, (rows, rows)
        elif a.column is None or a.func == "count":
            value, bounds = rows * overall[a.name], (0.0, rows)
        else:
            value, bounds = rows * overall[a.name], (rows * min(0.0, low), rows * max(0.0, high))
        out[a.name] = Estimate(value) if z is None else Estimate(value, *bounds)
    return out
