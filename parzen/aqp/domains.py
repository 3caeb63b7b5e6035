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
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np
import pandas as pd

from ._box import box_sums
from ._cell_sums import (
    domain_cell_sums,
    one_domain_cells,
    one_domain_df,
    stratum_sums_of_runs,
    terms_of_kept,
    weighted_total,
)
from .categories import Categories
from .estimate import _REACH, Estimate, row_terms
from .group_candidates import LISTED, Candidates, candidates
from .row_predicates import row_mask
from .sql import AggregateQuery, UnsupportedQuery
from .strata import Layout
from .synopsis import Synopsis
from .tails import effective_df_of_cells, t_quantiles
from .value_index import member_mask

#: ``attrs`` key of a domain answer: the group keys whose intervals are bounds that hold (no sampled row)
BOUNDED_GROUPS = "parzen_bounded_groups"


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
    used = [*query.group_by, *query.members, *(c for _, members in query.boxes for c in members),
            *(c for c in query.ranges if c not in synopsis.models),  # a range on a categorical column only
            *(c for ranges, _ in query.boxes for c in ranges if c not in synopsis.models)]
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
    selected, estimates = _estimates(query, synopsis, layout, z)
    out = _frame(query, synopsis, selected, estimates, z is not None)
    out.attrs.update(_attrs(query, selected))
    return out, "sample"


def approximate_row(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None):
    """:func:`approximate`'s answer to a query without GROUP BY as its :class:`parzen.aqp.answers.Row`
    (the same floats, labels and ``attrs``).

    Parameters
    ----------
    query : AggregateQuery
        COUNT / SUM / AVG with AND-ed predicates, without GROUP BY, names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis, with :attr:`~parzen.aqp.synopsis.Synopsis.categories`.
    layout : Layout
        The synopsis's strata.
    z : float or None
        The normal quantile of the intervals; None: none.

    Returns
    -------
    row : parzen.aqp.answers.Row
    form : str
        "sample".

    Raises
    ------
    UnsupportedQuery
        As :func:`approximate`.
    """
    from .answers import one_row  # answers dispatches here

    if query.group_by:
        raise ValueError("approximate_row answers a query without GROUP BY")
    selected, estimates = _estimates(query, synopsis, layout, z)
    ((g, _),) = enumerate(selected.decoded)  # answers.frame's check: one answer row
    out = one_row(query, {name: Estimate(value[g], low[g], high[g]) if low is not None and high is not None
                          else Estimate(value[g]) for name, (value, low, high) in estimates.items()}, z is not None)
    out.attrs.update(_attrs(query, selected))
    return out, "sample"


def _attrs(query: AggregateQuery, selected: DomainSelection) -> dict:
    """The ``attrs`` of :func:`approximate`'s answer."""
    #: the groups without a sampled row: their intervals are bounds that hold (no bias term widens them)
    return {BOUNDED_GROUPS: [selected.decoded[g] for g in np.flatnonzero(selected.size_estimate <= 0)],
            LISTED: "exact" if selected.exact_list or not query.group_by else
            "superset" if selected.found is not None else "sampled"}


def bias_runs(query: AggregateQuery, synopses: list[Synopsis], layout: Layout) -> list[dict[str, np.ndarray]]:
    """The values of :func:`approximate`'s answers without intervals from synopses that differ in
    their bandwidths only, for the bias term of :func:`parzen.aqp.contract.cover_bias`: per synopsis,
    per aggregate one array whose row i is the answer's row i, with no DataFrame built.

    The groups and their order come from the query's :class:`DomainSelection`, which does not depend on
    the bandwidths (the copies share the synopsis's categories), so row i of every run is row i of the
    answer at the synopsis's own bandwidths; the values are the same floats as :func:`approximate`'s
    columns.

    Parameters
    ----------
    query : AggregateQuery
        COUNT / SUM / AVG with AND-ed predicates, names spelled as in the synopsis.
    synopses : list of Synopsis
        The synopsis with its bandwidths scaled (:func:`parzen.aqp.contract.with_bandwidths_scaled`).
    layout : Layout
        The synopsis's strata.

    Returns
    -------
    list of dict of str to numpy.ndarray
        Per synopsis, per aggregate name, the values in the answer's row order.

    Raises
    ------
    UnsupportedQuery
        As :func:`approximate`.
    """
    out: list[dict[str, np.ndarray]] = []
    for synopsis in synopses:
        selected = domain_selection(query, synopsis, layout)
        if out and not _smoothed_ranges(query, synopsis, selected):  # no kernel read: the same at every h
            out.append(out[-1])
            continue
        selected, estimates = _estimates(query, synopsis, layout, None)
        order = _answer_order(query, synopsis, selected)
        out.append({name: value[order] for name, (value, _, _) in estimates.items()})
    return out


def _smoothed_ranges(query: AggregateQuery, synopsis: Synopsis, selected: DomainSelection) -> dict:
    """The query's ranges that its kernels integrate: on modelled columns, but the point-mass ones
    that filter by their codes (``selected.discrete``)."""
    return {c: r for c, r in query.ranges.items() if c in synopsis.models and c not in selected.discrete}


def _estimates(query: AggregateQuery, synopsis: Synopsis, layout: Layout, z: float | None
               ) -> tuple[DomainSelection, dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]]:
    """The query's selection and, per aggregate, its value, low and high end (None without ``z``)
    per group of the selection (in the order of its keys): the work of :func:`approximate` but the frame."""
    categories = synopsis.categories
    assert categories is not None
    outside = [c for c in [*query.group_by, *query.members, *query.ranges, *(c for b in query.boxes for c in [*b[0], *b[1]])]
               if c not in synopsis.group_by and c in categories.values]
    if query.boxes or not all(a.plain or (a.polynomial and a.func in ("sum", "avg")) for a in query.aggregates):
        raise UnsupportedQuery(f"GROUP BY / IN / = on {outside[0]!r} (a categorical column outside the synopsis's "
                               f"group_by) with OR / NOT or aggregates other than COUNT/SUM/AVG (of columns or "
                               f"of arithmetic of columns); rebuild with "
                               f"group_by=[{outside[0]!r}, ...] for those")
    selected = domain_selection(query, synopsis, layout)
    keep, kept, group, sizes = selected.keep, selected.kept, selected.group, selected.sizes
    stratum, weight, size_estimate = selected.stratum, selected.weight, selected.size_estimate
    exact_rows, known, share = selected.exact_rows, selected.known, selected.share
    found = selected.found
    ranges = _smoothed_ranges(query, synopsis, selected)
    aggregated = list(dict.fromkeys(a.column for a in query.aggregates if a.column is not None and a.plain))
    plain = any(a.plain for a in query.aggregates)  # else only the polynomials' own terms are read
    totals = _point_totals(synopsis, layout, ranges, aggregated, keep, kept, group, weight, sizes, selected) \
        if plain else {}
    polynomials = [a for a in query.aggregates if a.polynomial]
    dense = _polynomial_terms(query, synopsis, layout, ranges, polynomials, keep, kept) if polynomials else {}
    read = {f"sum {a.name}" for a in polynomials} | {f"count {a.name}" for a in polynomials if a.func == "avg"}
    for name, values in dense.items():
        if name in read or name in totals:  # a SUM's COUNT terms: no total reads them
            totals[name] = np.array([weighted_total(np.ascontiguousarray(weight, dtype=np.float64),
                                                    np.ascontiguousarray(values, dtype=np.float64))]) \
                if sizes == 1 and group.size else np.bincount(group, weights=weight * values, minlength=sizes)
    sampled_rows = float(size_estimate.sum())
    terms = None if z is None else \
        {**(_dense_terms(synopsis, layout, ranges, aggregated, keep, kept) if plain else {}), **dense}
    strata = len(layout.keys)

    def half_width(values):  # z se, with Student's t of the variance's degrees of freedom for z
        variance, df = domain_spread(values, stratum, group, layout, strata, sizes) if sizes != 1 else \
            one_domain_spread(values, kept, layout)
        return t_quantiles(z, df) * np.sqrt(variance)

    overall: dict[str, float] = {}  # per aggregate: the whole query's rate per row (AVG: its average)
    answers: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    poisson: dict[str, np.ndarray] = {}  # per COUNT / SUM: the groups whose intervals take Garwood's limits too
    for a in query.aggregates:
        if a.polynomial:
            name, num_name, den_name = f"sum {a.name}", f"sum {a.name}", f"count {a.name}"
        else:
            name = "count" if a.column is None else f"{'count' if a.func == 'count' else 'sum'} {a.column}"
            num_name, den_name = f"sum {a.column}", f"count {a.column}"
        if a.func == "avg":
            num_total, den_total = totals[num_name], totals[den_name]
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(den_total > 0, num_total / den_total, np.nan)
                overall[a.name] = float(num_total.sum() / den_total.sum()) if den_total.sum() > 0 else math.nan
                error = None if terms is None or z is None else \
                    half_width(terms[num_name] - np.nan_to_num(ratio)[group] * terms[den_name]) / den_total
            answers[a.name] = ratio, error
            continue
        t = totals[name]  # COUNT / SUM: the ratio estimate where the domain's size is known
        overall[a.name] = float(t.sum()) / sampled_rows if sampled_rows > 0 else 0.0
        value, error = share * t, None
        if terms is not None and z is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(size_estimate > 0, t / size_estimate, 0.0)
            if sizes == 1:  # one domain: its mean off every row's term where its size is known (no gathers)
                centred = terms[name] - mean[0] if known[0] else terms[name]
            else:
                centred = np.where(known[group], terms[name] - mean[group], terms[name])
            error = share * half_width(centred)
        if a.func == "count" and a.column is None and not ranges:  # the domain's exact rows, where known (not a product that rounds)
            value = np.where(known, exact_rows, value)
            error = None if error is None else np.where(known, 0.0, error)
        answers[a.name] = value, error
        if z is not None:  # a domain of unknown size: its sampled rows' count is Poisson-like (Garwood's limits)
            poisson[a.name] = ~known
    #: intervals cut to bounds that always hold (t quantiles of few degrees of freedom reach beyond them):
    #: AVG of a column in its exact [MIN, MAX]; COUNT and SUM of a domain of known rows N_d as in _unsampled
    averaged = {a.name for a in query.aggregates if a.func == "avg" and a.plain}
    counted = {a.name for a in query.aggregates if a.func == "count"}
    held = {a.name: _column_range(synopsis, a.column) for a in query.aggregates if a.plain}
    unsampled = size_estimate <= 0
    factors = None if z is None or not poisson or known.all() else \
        garwood_factors(np.bincount(group, minlength=sizes) if sizes != 1 else np.array([group.size]), z)
    bound, guess = (None, None) if found is None else _candidate_sizes(found, selected.keys, sampled_rows)
    if bound is not None and guess is not None and z is not None:  # more rows: unsampled with chance <= alpha
        bound = np.minimum(bound, unsampled_rows_bound(layout, z))
        guess = np.minimum(guess, bound)
    sized = np.where(known, exact_rows, math.nan)  # N_d where known
    estimates = {}
    for name, (v, e) in answers.items():  # the sampled groups: value -+ the half-width (t se)
        value = np.array(v, dtype=np.float64)
        low = high = None
        if z is not None:
            if e is None:
                low, high = np.full(sizes, math.nan), np.full(sizes, math.nan)
            else:
                half = np.asarray(e, dtype=np.float64)
                low, high = value - half, value + half
            if name in poisson and factors is not None:  # hold value x Garwood's factors too (None: no group to widen)
                widen = poisson[name]
                ends = (value * factors[0], value * factors[1])
                low, high = np.where(widen, _least(low, *ends), low), np.where(widen, _greatest(high, *ends), high)
            if name in held:  # cut to the bounds that hold, on the sampled groups whose bounds are numbers
                lowest, highest = held[name]
                if name in averaged:
                    low_b, high_b = np.full(sizes, lowest), np.full(sizes, highest)
                elif name in counted:
                    low_b, high_b = np.zeros(sizes), sized
                else:
                    low_b, high_b = sized * min(0.0, lowest), sized * max(0.0, highest)
                cut = ~unsampled & ~np.isnan(low_b) & ~np.isnan(high_b)
                low = np.where(cut, _greatest(low, _least(low_b, value)), low)
                high = np.where(cut, _least(high, _greatest(high_b, value)), high)
        estimates[name] = value, low, high
    if unsampled.any():  # the groups without a sampled row: rates per row and bounds that hold
        unseen = np.flatnonzero(unsampled)
        if bound is not None and guess is not None:
            filled = _unsampled_candidates(query, synopsis, overall, bound[unseen], guess[unseen], z)
        else:
            filled = _unsampled(query, synopsis, overall, exact_rows[unseen], bool(ranges), z)
        for name, (value, low, high) in estimates.items():
            value[unseen], unseen_ends = filled[name]
            if low is not None and high is not None and unseen_ends is not None:
                low[unseen], high[unseen] = unseen_ends
        unknown = unseen[np.isnan(exact_rows[unseen])] if bound is None or guess is None else unseen[:0]
        if unknown.size:  # unknown size (comparisons of two columns), none sampled
            domain = _unsampled_domain(query, synopsis, None if z is None else unsampled_rows_bound(layout, z), z)
            for name, (value, low, high) in estimates.items():
                value[unknown] = domain[name].value
                if low is not None and high is not None:
                    low[unknown], high[unknown] = domain[name].low, domain[name].high
    return selected, estimates


def _least(first: np.ndarray, *others: np.ndarray) -> np.ndarray:
    """Per element, Python's ``min(first, *others)``: an other replaces the least so far only where
    it compares less (so NaN is kept where it comes first, as ``min`` keeps it)."""
    out = first
    for other in others:
        out = np.where(other < out, other, out)
    return out


def _greatest(first: np.ndarray, *others: np.ndarray) -> np.ndarray:
    """Per element, Python's ``max(first, *others)`` (see :func:`_least`)."""
    out = first
    for other in others:
        out = np.where(other > out, other, out)
    return out


def _frame(query: AggregateQuery, synopsis: Synopsis, selected: DomainSelection,
           estimates: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]], with_error: bool):
    """The answer as a DataFrame shaped like DuckDB's (:func:`parzen.aqp.answers.frame`): its rows in
    :func:`_answer_order`, its columns made from the arrays of :func:`_estimates` at once."""
    from .answers import frame  # answers dispatches here

    if not query.group_by or not selected.sizes:  # one row (or none): as answers.frame makes it
        rows = {decoded: {name: Estimate(value[g], low[g], high[g]) if low is not None and high is not None
                          else Estimate(value[g]) for name, (value, low, high) in estimates.items()}
                for g, decoded in enumerate(selected.decoded)}
        return frame(query, rows, with_error)
    order = _answer_order(query, synopsis, selected)
    categories = synopsis.categories
    assert categories is not None
    codes = _key_codes(selected.keys, query.group_by, categories)
    columns: dict[str, object] = {}
    for item in query.select:
        if isinstance(item, str):
            position = query.group_by.index(item)
            values = categories.frame_values(item)
            columns[item] = [selected.decoded[g][position] for g in order.tolist()] if values is None \
                else values.take(codes[position][order])
            continue
        value, low, high = estimates[item.name]
        columns[item.name] = value[order]
        if with_error and low is not None and high is not None:
            columns[f"{item.name} low"], columns[f"{item.name} high"] = low[order], high[order]
    return pd.DataFrame(columns)


def _answer_order(query: AggregateQuery, synopsis: Synopsis, selected: DomainSelection) -> np.ndarray:
    """The selection's groups in the order of the answer's rows: ascending as DuckDB's ORDER BY, NULLs
    last, ties in the keys' order (as a stable sort by :func:`parzen.aqp.answers._row_order` puts
    them), from each GROUP BY column's ranks of its values (:meth:`Categories.sort_ranks`)."""
    from .answers import _row_order

    categories = synopsis.categories
    assert categories is not None
    count = selected.sizes
    ranks = [categories.sort_ranks(c) for c in query.group_by]
    if not query.group_by or any(r is None for r in ranks):  # values that only Python can sort
        return np.array(sorted(range(count), key=lambda g: _row_order(selected.decoded[g])), dtype=np.intp)
    codes = _key_codes(selected.keys, query.group_by, categories)
    by_column = [rank[code] for rank, code in zip(reversed(ranks), reversed(codes))]  # type: ignore[index]
    return np.lexsort([np.arange(count), *by_column]).astype(np.intp)  # the last key sorts first


def _key_codes(keys: np.ndarray, columns, categories: Categories) -> list[np.ndarray]:
    """Per GROUP BY column, each key's code (the keys are the mixed radix of the codes)."""
    rest = np.asarray(keys, dtype=np.int64)
    codes = []
    for column in reversed(columns):  # the last column is the lowest digit
        rest, code = np.divmod(rest, len(categories.values[column]))
        codes.append(code)
    return codes[::-1]


def garwood_factors(k: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Per domain with k sampled rows: L_k / k and U_k / k, Garwood's exact Poisson limits for the
    mean of a count k at the two-sided level of ``z`` (Garwood 1936, Biometrika 28), over k.

    A domain of unknown size holds a number of sampled rows that is binomial, near Poisson, so its
    estimated COUNT or SUM (its rows' weighted sum) may be off by these factors at least; the normal
    interval from the domain variance is too narrow when k is 1 or 2 (measured on SSB Q2.1: 44 %
    coverage at k = 1).  :func:`approximate` widens a COUNT / SUM interval to hold value x the factors.

    Parameters
    ----------
    k : numpy.ndarray
        Sampled rows per domain (>= 0).
    z : float
        The normal quantile of the intervals.

    Returns
    -------
    low, high : numpy.ndarray
        L_k / k and U_k / k (1 where k = 0: the caller does not use them there).
    """
    from scipy import special  # chi2.ppf(p, 2 k) / 2 = gammaincinv(k, p)

    alpha = 2.0 * (1.0 - NormalDist().cdf(z))
    counts, at = np.unique(np.asarray(k, dtype=np.float64), return_inverse=True)  # few distinct k: one limit each
    safe = np.maximum(counts, 1.0)
    low = np.where(counts > 0, special.gammaincinv(safe, alpha / 2) / safe, 1.0)
    high = np.where(counts > 0, special.gammaincinv(safe + 1, 1 - alpha / 2) / safe, 1.0)
    return low[at.reshape(-1)], high[at.reshape(-1)]


def unsampled_rows_bound(layout: Layout, z: float) -> float:
    """An upper confidence bound on the rows of a group that no sampled row holds.

    Each stratum s draws drawn_s of its rows_s rows uniformly, so a group of N rows is missed by the
    sample with probability at most (1 - f)^N, f the smallest drawn_s / rows_s: a group of more than
    B = ln(alpha) / ln(1 - f) rows is unsampled with probability at most alpha, and [0, B] covers
    an unsampled group's rows with probability >= 1 - alpha (the "rule of three" for alpha = 0.05:
    B ~ 3 / f; Hanley and Lippman-Hand 1983, "If nothing goes wrong, is everything all right?",
    JAMA 249).  alpha = 2 (1 - Phi(z)), the intervals' two-sided level.

    Parameters
    ----------
    layout : Layout
        The synopsis's strata.
    z : float
        The normal quantile of the intervals.

    Returns
    -------
    float
        B (infinite when some stratum is sampled whole or has no rows drawn).
    """
    alpha = 2.0 * (1.0 - NormalDist().cdf(z))
    filled = layout.rows > 0
    if not filled.any():
        return math.inf
    f = float(np.min(layout.drawn[filled] / layout.rows[filled]))
    if f <= 0.0 or f >= 1.0 or alpha <= 0.0:
        return 0.0 if f >= 1.0 else math.inf
    return math.log(alpha) / math.log1p(-f)


def _candidate_sizes(found: Candidates, keys: np.ndarray, domain_rows: float) -> tuple[np.ndarray, np.ndarray]:
    """Per answer group: its candidate bound on rows and its tree estimate of rows, scaled so the
    candidates' estimates add up to the domain's estimated rows and capped at the bound
    (:mod:`parzen.aqp.group_candidates`)."""
    at = np.searchsorted(found.keys, np.asarray(keys, dtype=np.int64))
    at = np.minimum(at, found.keys.size - 1)
    total = float(found.tree.sum())
    scale = domain_rows / total if total > 0 else 0.0
    return found.bounds[at], np.minimum(found.tree[at] * scale, found.bounds[at])


def _column_range(synopsis: Synopsis, column: str | None) -> tuple[float, float]:
    """The column's exact MIN and MAX from the build (infinite where the synopsis has none)."""
    model = synopsis.models.get(column) if column is not None else None
    low = -math.inf if model is None or model.minimum is None else model.minimum
    high = math.inf if model is None or model.maximum is None else model.maximum
    return low, high


def _unsampled_candidates(query: AggregateQuery, synopsis: Synopsis, overall: dict[str, float], bound: np.ndarray,
                          rows: np.ndarray, z: float | None) -> dict[str, tuple[np.ndarray, tuple | None]]:
    """Candidate groups (:mod:`parzen.aqp.group_candidates`) with no sampled row: ``rows`` (their tree
    estimates) times the whole query's rates per row, within intervals that hold whatever their rows
    are in [0, ``bound``]: COUNT in [0, bound], SUM in bound [min(0, MIN), max(0, MAX)], AVG in [MIN, MAX].
    Per aggregate, the values and (with ``z``) the interval's ends, one per group."""
    out = {}
    with np.errstate(invalid="ignore"):  # an infinite bound times a zero edge: NaN, as in Python
        for a in query.aggregates:
            low, high = _column_range(synopsis, a.column)
            bounds: tuple
            if a.func == "avg":
                value, bounds = np.full(rows.size, overall[a.name]), (low, high)
            elif a.func == "count":
                value, bounds = rows * overall[a.name], (0.0, bound)
            else:
                value, bounds = rows * overall[a.name], (bound * min(0.0, low), bound * max(0.0, high))
            out[a.name] = value, None if z is None else bounds
    return out


@dataclass
class DomainSelection:
    """What a domain answer reads of the sample before any kernel: the same at every bandwidth, so the
    answers at c h that :func:`parzen.aqp.contract.cover_bias` compares share it (:func:`domain_selection`).

    Parameters
    ----------
    keep : numpy.ndarray of bool
        Per sampled row, whether the query's categorical filters admit it.
    kept : numpy.ndarray
        The admitted rows' indices.
    keys : numpy.ndarray
        The answer's group keys (int64, mixed radix of the GROUP BY codes).
    decoded : list of tuple
        Each key's GROUP BY values.
    group : numpy.ndarray
        Per admitted row, its group's index in ``keys``.
    stratum, weight : numpy.ndarray
        Per admitted row, its stratum and the stratum's rows / drawn.
    size_estimate : numpy.ndarray
        Per group, the stratified estimate of its rows, T_1d.
    exact_rows : numpy.ndarray
        Per group, its exact rows N_d (NaN where no exact table covers the query).
    known : numpy.ndarray of bool
        Per group, whether N_d is known and T_1d > 0.
    share : numpy.ndarray
        Per group, N_d / T_1d where known, else 1.
    discrete : frozenset of str
        The range columns filtered by their codes (point-mass columns that are categorical too).
    found : Candidates or None
        The candidate groups of a GROUP BY that no exact table lists (:mod:`parzen.aqp.group_candidates`).
    exact_list : bool
        Whether an exact table lists the groups.
    """

    keep: np.ndarray
    kept: np.ndarray
    keys: np.ndarray
    decoded: list
    group: np.ndarray
    stratum: np.ndarray
    weight: np.ndarray
    size_estimate: np.ndarray
    exact_rows: np.ndarray
    known: np.ndarray
    share: np.ndarray
    discrete: frozenset
    found: Candidates | None
    exact_list: bool
    _cells: tuple | None = None

    @property
    def sizes(self) -> int:
        """The answer's number of groups."""
        return len(self.keys)

    def cells(self, layout: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per sampled row its cell stratum x group (filtered-out rows: the last cell, of no group), and
        per cell its group and weight (:func:`_point_totals`), made once."""
        if self._cells is None:
            self._cells = _cells(layout, self.keep, self.kept, self.group, self.sizes)
        return self._cells


def _cells(layout: Layout, keep: np.ndarray, kept: np.ndarray, group: np.ndarray,
           sizes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sampled row its cell stratum x group (rows not kept: the last cell, of no group), and per
    cell its group and its stratum's rows / drawn."""
    strata = len(layout.keys)
    cell = np.full(keep.size, strata * sizes, dtype=np.intp)  # filtered out: the last cell
    cell[kept] = layout.stratum_of_row[kept] * sizes + group
    output = np.append(np.tile(np.arange(sizes, dtype=np.intp), strata), -1)
    weights = np.append(np.repeat(layout.weight, sizes), 0.0)
    return cell, output, weights


#: The last selections made, by the identities of (categories, layout), which they hold, and what the
#: selection reads of the query (its GROUP BY, IN / = lists, ranges, which of them are on point-mass columns,
#: and comparisons of columns).
_SELECTIONS: OrderedDict[tuple, tuple[Categories, Layout, DomainSelection]] = OrderedDict()
_SELECTIONS_KEPT = 32
_SELECTIONS_LOCK = threading.Lock()  # answers may run in several threads (parzen serve)


def domain_selection(query: AggregateQuery, synopsis: Synopsis, layout: Layout) -> DomainSelection:
    """The query's :class:`DomainSelection` on ``synopsis``'s sample, made once per query (what it
    reads of it: GROUP BY, IN / = lists, ranges and comparisons of columns), categories and layout (a
    synopsis's categories and layout never change once loaded; a copy with other bandwidths,
    :func:`parzen.aqp.contract.with_bandwidths_scaled`, shares them), so that asking the same query
    again, in a new parse, reads it too.

    Parameters
    ----------
    query : AggregateQuery
        The query, names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis (with categories).
    layout : Layout
        The synopsis's strata.

    Returns
    -------
    DomainSelection
    """
    categories = synopsis.categories
    assert categories is not None
    models = synopsis.models
    key = (id(categories), id(layout), query.group_by, tuple(query.members.items()), tuple(query.ranges.items()),
           tuple(c in models and models[c].bandwidth == 0.0 for c in query.ranges), query.compared)
    with _SELECTIONS_LOCK:
        found = _SELECTIONS.get(key)
        if found is not None and found[0] is categories and found[1] is layout:
            _SELECTIONS.move_to_end(key)
            return found[2]
    # a range on a point-mass column (h = 0) that is categorical too filters by its codes: the same
    # rows as its indicator, and the exact tables then calibrate to the domain's size with it
    discrete = frozenset(c for c in query.ranges if c in synopsis.models and synopsis.models[c].bandwidth == 0.0
                         and c in categories.values)
    read = list(dict.fromkeys([*query.group_by, *query.members,
                               *(c for c in query.ranges if c not in synopsis.models or c in discrete)]))
    allowed = {c: _allowed_codes(query, categories, c) for c in read}
    kept, keep = _admitted_rows(categories, allowed, synopsis.sample_size)
    if query.compared:  # comparisons of two columns: 1[pred] per row, no exact domain sizes (parzen.aqp.row_predicates)
        kept, keep = kept[row_mask(query.compared, synopsis, layout, kept)], None  # tested on the admitted rows only
    if keep is None:
        keep = np.zeros(synopsis.sample_size, dtype=bool)
        keep[kept] = True
    radix = [len(categories.values[g]) for g in query.group_by]
    exact = None if query.compared else _exact_groups(query, categories, allowed, radix)
    listing = None if exact is not None or not query.group_by or query.compared else \
        candidates(query.group_by, allowed, categories, radix)
    listed = listing.keys if listing is not None else None if exact is None else exact[0]
    if query.group_by:
        keys, group = _groups(_mixed_radix([categories.codes[g][kept] for g in query.group_by], radix, kept.size),
                              radix, listed)
    else:  # one answer row, key 0, whether or not a row is kept (what _groups gives, without its passes)
        keys, group = np.zeros(1, dtype=np.int64), np.zeros(kept.size, dtype=np.intp)
    sizes = len(keys)
    stratum = layout.stratum_of_row[kept]
    weight = layout.weight[stratum]
    size_estimate = np.bincount(group, weights=weight, minlength=sizes)
    exact_rows = np.full(sizes, np.nan) if exact is None else _exact_rows(exact, keys)
    known = ~np.isnan(exact_rows) & (size_estimate > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(known, exact_rows / size_estimate, 1.0)
    decoded = _decoded(keys, query.group_by, categories)
    selected = DomainSelection(keep, kept, keys, decoded, group, stratum, weight, size_estimate, exact_rows, known,
                               share, discrete, listing, exact is not None)
    with _SELECTIONS_LOCK:
        _SELECTIONS[key] = (categories, layout, selected)
        if len(_SELECTIONS) > _SELECTIONS_KEPT:
            _SELECTIONS.popitem(last=False)
    return selected


def _allowed_codes(query: AggregateQuery, categories: Categories, column: str) -> np.ndarray:
    """Per code of ``column``, whether the query's IN / = and range on it admit the value."""
    values = categories.values[column]
    ok = np.ones(len(values), dtype=bool)
    if column in query.members:
        ok &= member_mask(values, query.members[column])  # matches(v, literal) for every pair
    if column in query.ranges:
        r = query.ranges[column]
        if any(isinstance(v, str) for v in values):
            raise UnsupportedQuery(f"a range on the text column {column!r}")
        ok &= np.array([v is not None and r.contains(float(v)) for v in values], dtype=bool)
    return ok


def _admitted_rows(categories: Categories, allowed: dict[str, np.ndarray],
                   size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The sampled rows (ascending) whose codes every column's ``allowed`` admits: from the rows of
    the admitted codes of the most selective column (:meth:`Categories.code_rows`), then the other
    columns' tests on those rows only; one pass of masks when no column keeps few rows.  With them,
    per sampled row whether it is admitted where that mask was made on the way (else None)."""
    filters = {c: ok for c, ok in allowed.items() if not ok.all()}
    if not filters:
        return np.arange(size), None
    counts = {c: int(categories.code_counts(c)[ok].sum()) for c, ok in filters.items()}
    first = min(filters, key=counts.__getitem__)
    if 4 * counts[first] > size:  # every filter keeps much: one pass of masks
        keep = np.ones(size, dtype=bool)
        for c, ok in filters.items():
            keep &= ok[categories.codes[c]]
        return np.flatnonzero(keep), keep
    order, starts, count = categories.code_rows(first)
    codes = np.flatnonzero(filters[first])
    lengths = count[codes]
    offsets = np.repeat(starts[codes] - (np.cumsum(lengths) - lengths), lengths)
    rows = order[offsets + np.arange(int(lengths.sum()))]
    marked = None
    if 16 * rows.size < size:  # few: sorted
        rows = np.sort(rows)
    else:  # many: marked and listed, in O(sample) without a sort
        marked = np.zeros(size, dtype=bool)
        marked[rows] = True
        rows = np.flatnonzero(marked)
    for c, ok in filters.items():
        if c != first:
            rows, marked = rows[ok[categories.codes[c][rows]]], None
    return rows, marked


def _mixed_radix(codes: list[np.ndarray], radix: list[int], n: int) -> np.ndarray:
    """One int64 key per row from the codes of several columns (``radix``: each column's values)."""
    out = np.zeros(n, dtype=np.int64)
    for c, r in zip(codes, radix):
        out = out * r + c
    return out


#: Group keys below this many combinations are found by counting (O(rows)), larger ones by sorting.
_COUNTED_KEYS = 1 << 22


def _groups(key_of_row: np.ndarray, radix: list[int], listed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The answer's group keys (those of sampled rows, ascending, then the others of ``listed``, the
    sorted keys of an exact table or of the candidates) and each kept row's group index."""
    combinations = int(np.prod(radix, dtype=np.float64)) if radix else 1
    if combinations <= min(_COUNTED_KEYS, 8 * key_of_row.size + 4096):  # counting costs O(combinations)
        present = np.flatnonzero(np.bincount(key_of_row, minlength=combinations))
        lookup = np.zeros(combinations, dtype=np.intp)
        lookup[present] = np.arange(present.size)
        group = lookup[key_of_row]
    else:
        present, inverse = np.unique(key_of_row, return_inverse=True)
        group = inverse.astype(np.intp)
    keys = present.astype(np.int64)
    if listed is not None and listed.size:
        keys = np.concatenate([keys, listed[~np.isin(listed, keys)].astype(np.int64)])
    return keys, group.reshape(-1)


def _point_totals(synopsis: Synopsis, layout: Layout, ranges, aggregated: list[str], keep: np.ndarray,
                  kept: np.ndarray, group: np.ndarray, weight: np.ndarray, sizes: int,
                  selected: DomainSelection | None = None) -> dict[str, np.ndarray]:
    """Per group, the stratified totals T of the COUNT(*) terms ("count") and of each aggregated
    column's COUNT and SUM terms: weighted bincounts without ranges, else one compiled pass of the
    box integrals (:func:`~parzen.aqp._box.box_sums`) over cells stratum x group, each weighing its
    stratum's rows / drawn (rows filtered out go to a cell of no group; ``selected``, the selection
    that ``keep`` ... ``sizes`` come from, keeps the cells between answers)."""
    from .answers import box_query

    out: dict[str, np.ndarray] = {}
    if not ranges:
        out["count"] = np.bincount(group, weights=weight, minlength=sizes)
        for y in aggregated:
            values = layout.view.columns[y][kept]
            valid = ~np.isnan(values)
            out[f"count {y}"] = np.bincount(group, weights=weight * valid, minlength=sizes)
            out[f"sum {y}"] = np.bincount(group, weights=weight * np.where(valid, values, 0.0), minlength=sizes)
        return out
    models = synopsis.models
    boxes = {c: models[c].interval(r) for c, r in ranges.items()}
    if any(b < a for a, b in boxes.values()):
        sums = np.zeros((sizes, 1 + 2 * len(aggregated)), dtype=np.float64)
    else:
        cell, output, weights = selected.cells(layout) if selected else _cells(layout, keep, kept, group, sizes)
        widest = 1.0 if layout.row_scale is None else float(layout.row_scale.max(initial=1.0))
        found = {c: layout.view.candidates(c, a, b, _REACH * models[c].bandwidth * widest) for c, (a, b) in boxes.items()}
        order = sorted(found, key=lambda c: found[c].size)
        if 2 * kept.size < keep.size:  # the rows filtered out add nothing (their cell has no group): not visited
            found = {c: rows[keep[rows]] for c, rows in found.items()}
        query = box_query(layout, synopsis, boxes, found, order, aggregated, layout.scale_of_row, output, sizes)
        sums = box_sums(replace(query, stratum_of_row=cell, output_of_stratum=output, weight_of_stratum=weights))
    out["count"] = sums[:, 0]
    for q, y in enumerate(aggregated):
        out[f"count {y}"], out[f"sum {y}"] = sums[:, 1 + 2 * q], sums[:, 2 + 2 * q]
    return out


def _decoded(keys: np.ndarray, columns, categories: Categories) -> list[tuple]:
    """Each key's GROUP BY values (the categories' own objects), decoding the mixed radix."""
    if not columns:
        return [()] * len(keys)
    return list(zip(*(categories.value_objects(c)[code].tolist()
                      for c, code in zip(columns, _key_codes(keys, columns, categories)))))


def _exact_rows(exact: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """Per key, its exact rows in ``exact`` (sorted keys, rows; 0 where absent)."""
    listed, rows = exact
    if not listed.size:
        return np.zeros(len(keys))
    at = np.minimum(np.searchsorted(listed, keys), listed.size - 1)
    return np.where(listed[at] == keys, rows[at], 0.0)


def _exact_groups(query: AggregateQuery, categories: Categories, allowed: dict[str, np.ndarray],
                  radix: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """The group keys (mixed radix of the GROUP BY codes, sorted) and each one's exact rows in the
    table under the query's categorical filters, from the smallest exact table covering its
    categorical columns (None: none does)."""
    table = categories.covering(allowed)
    if table is None:
        return None
    position = {c: k for k, c in enumerate(table.columns)}
    admitted = np.ones(table.rows.size, dtype=bool)
    for c, ok in allowed.items():
        admitted &= ok[table.codes[:, position[c]]]
    if query.group_by:
        keys = _mixed_radix([table.codes[admitted, position[g]] for g in query.group_by], radix, int(admitted.sum()))
        unique, inverse = np.unique(keys, return_inverse=True)
    else:  # one key, 0, where some row is admitted (what np.unique of the zeros gives)
        inverse = np.zeros(int(admitted.sum()), dtype=np.intp)
        unique = np.zeros(min(inverse.size, 1), dtype=np.int64)
    rows = np.bincount(inverse, weights=table.rows[admitted].astype(np.float64), minlength=unique.size)
    return unique.astype(np.int64), rows


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
    terms = row_terms(layout, synopsis.models, ranges, aggregated, row_scale=layout.row_scale,
                      keep=lambda rows: keep[rows])
    at = np.searchsorted(kept, terms.rows)  # kept ascends and holds every row kept (no sample-sized table)

    def dense(values):
        full = np.zeros(kept.size)
        full[at] = values
        return full

    out["count"] = dense(terms.count)
    for y in aggregated:
        out[f"count {y}"], out[f"sum {y}"] = dense(terms.count_y[y]), dense(terms.sum_y[y])
    return out


def _polynomial_terms(query: AggregateQuery, synopsis: Synopsis, layout: Layout, ranges, polynomials,
                      keep: np.ndarray, kept: np.ndarray) -> dict[str, np.ndarray]:
    """Per kept sampled row, for each SUM / AVG of a polynomial: its SUM term ("sum <name>": the
    polynomial's kernel moments, :class:`parzen.aqp.aggregates._SampleTerms`) and, for AVG, its
    COUNT term ("count <name>": the masses of the rows where no input is NULL; for SUM too outside
    :func:`parzen.aqp._kept.shared_terms`, where no total reads it).  Within
    :func:`parzen.aqp._kept.shared_terms` (a ratio's sub-query, whose per-row terms read
    every candidate row) the terms of all candidate rows are made once and the kept ones read from
    them (a SUM's from :meth:`~parzen.aqp.aggregates._SampleTerms.polynomial_every_row`, which the
    per-row terms read too); otherwise only the kept rows' are made (the same floats: each row's terms
    are its own)."""
    from ._kept import sharing
    from .aggregates import _SampleTerms, sample_terms

    every_row = np.zeros(len(layout.keys), dtype=np.intp)
    shared = sharing()
    sample = sample_terms(query, synopsis, layout, ranges, every_row, 1) if shared else \
        _SampleTerms(query, synopsis, layout, ranges, every_row, 1, within=keep)
    rows, kept = np.ascontiguousarray(sample.rows, dtype=np.intp), np.ascontiguousarray(kept, dtype=np.intp)
    out = {}
    for a in polynomials:
        if shared and a.func != "avg":  # a SUM: the kept rows' terms read from the whole sample's, kept with it
            out[f"sum {a.name}"] = sample.polynomial_every_row(a)[kept]
            continue
        terms, valid = sample.polynomial(a)
        out[f"sum {a.name}"], out[f"count {a.name}"] = terms_of_kept(rows, keep, kept, terms, sample.p, valid)
    return out


def _domain_variance(values, stratum, group, layout: Layout, strata: int, groups: int) -> np.ndarray:
    """Per group (domain): the variance of its stratified total of ``values`` (zero outside it)."""
    group_of_cell, contribution, _, _, _ = _cell_variances(values, stratum, group, layout, groups)
    return np.bincount(group_of_cell, weights=contribution, minlength=groups)


def _cell_variances(values, stratum, group, layout: Layout,
                    groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (stratum, domain) cells that hold admitted rows (a cell without one adds 0), ascending by
    stratum then domain: each cell's domain, stratum s's term rows_s^2 (1 - f_s) S^2_{s,d} / drawn_s of
    the domain variance (no (strata, domains) table is made), and each cell's rows, sum of the squared
    values and sum of their squares (:func:`_cell_sums`)."""
    return _variances_of_cells(_cell_sums(values, stratum, group, layout.drawn.size, groups), layout, groups)


def _variances_of_cells(sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], layout: Layout,
                        groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_cell_variances` from the cells' sums (:func:`_cell_sums`'s ids, rows, s1, s2, s4)."""
    ids, rows, s1, s2, s4 = sums
    stratum_of_cell, group_of_cell = np.divmod(ids, groups)
    n, drawn_rows = layout.drawn[stratum_of_cell], layout.rows[stratum_of_cell]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1), 0.0)
        contribution = np.nan_to_num(drawn_rows * drawn_rows * var / n * np.maximum(0.0, 1.0 - n / drawn_rows))
    return group_of_cell, contribution, rows, s2, s4


def _cell_sums(values, stratum, group, strata: int,
               groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells stratum x domain that hold rows (ascending) and per cell its rows and the sums of the
    values, their squares and their fourth powers: one compiled pass (:func:`parzen.aqp._cell_sums.domain_cell_sums`)
    where the strata x domains are not many more than the rows, else by sorting the cells' keys (the same floats)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if strata * groups <= min(_COUNTED_KEYS, 8 * values.size + 4096):
        return domain_cell_sums(values, np.ascontiguousarray(stratum, dtype=np.intp),
                                np.ascontiguousarray(group, dtype=np.intp), groups, strata * groups)
    ids, cell = _present(np.asarray(stratum, dtype=np.int64) * groups + group)
    square = values * values
    return (ids, np.bincount(cell, minlength=ids.size).astype(np.float64),
            np.bincount(cell, weights=values, minlength=ids.size), np.bincount(cell, weights=square, minlength=ids.size),
            np.bincount(cell, weights=square * square, minlength=ids.size))


def _present(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` of keys >= 0: by counting (O(rows + largest key), no sort)
    where the largest key is not much above the rows, the same arrays."""
    size = int(key.max(initial=-1)) + 1
    if size <= min(_COUNTED_KEYS, 8 * key.size + 4096):
        ids = np.flatnonzero(np.bincount(key, minlength=size))
        lookup = np.zeros(size, dtype=np.intp)
        lookup[ids] = np.arange(ids.size)
        return ids, lookup[key]
    ids, inverse = np.unique(key, return_inverse=True)
    return ids, inverse.reshape(-1)


def domain_spread(values, stratum, group, layout: Layout, strata: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group (domain): the variance of its stratified total of ``values`` (:func:`_domain_variance`)
    and that variance estimate's effective degrees of freedom (:func:`parzen.aqp.tails.effective_df_of_cells`:
    Box's kurtosis correction and Satterthwaite's rule, from each (stratum, domain) cell's sampled rows,
    with the kurtosis borrowed from all the query's domains).

    Parameters
    ----------
    values : numpy.ndarray
        Per admitted row, its term (zero outside its domain is implied).
    stratum, group : numpy.ndarray
        Per admitted row, its stratum and its domain.
    layout : Layout
        The synopsis's strata.
    strata, groups : int
        Their numbers.

    Returns
    -------
    variance, degrees_of_freedom : numpy.ndarray
        Per domain (inf degrees of freedom where the variance is 0).
    """
    return domain_spread_of_cells(_cell_sums(values, stratum, group, layout.drawn.size, groups), layout, groups)


def domain_spread_of_cells(sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], layout: Layout,
                           groups: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`domain_spread` from the sums of the (stratum, domain) cells that hold rows.

    Parameters
    ----------
    sums : tuple of numpy.ndarray
        The cells (``stratum * groups + group``, ascending) and per cell its rows and the sums of the
        values, their squares and their fourth powers (:func:`parzen.aqp._cell_sums.domain_cell_sums`'s).
    layout : Layout
        The synopsis's strata.
    groups : int
        The domains.

    Returns
    -------
    variance, degrees_of_freedom : numpy.ndarray
        Per domain, as :func:`domain_spread` gives them.
    """
    if groups == 1 and len(sums[0]):  # (no cell: NumPy's integer sums of nothing, kept as they are)
        return _one_domain_spread_of_cells(sums, layout)
    group_of_cell, contribution, rows, square, fourth = _variances_of_cells(sums, layout, groups)
    return (np.bincount(group_of_cell, weights=contribution, minlength=groups),
            effective_df_of_cells(group_of_cell, groups, contribution, rows, square, fourth))


def _one_domain_spread_of_cells(sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """:func:`domain_spread_of_cells` of one domain (the cells are strata): the same floats from two compiled
    loops over the cells (:func:`parzen.aqp._cell_sums.one_domain_cells`, ``one_domain_df``) and NumPy's sums
    of the kurtosis terms, instead of some thirty NumPy calls on arrays of a few strata."""
    ids, rows, s1, s2, s4 = sums
    f64 = np.float64
    contribution, variance, weighted, counted = one_domain_cells(
        np.ascontiguousarray(layout.drawn[ids], dtype=f64), np.ascontiguousarray(layout.rows[ids], dtype=f64),
        np.ascontiguousarray(rows, dtype=f64), np.ascontiguousarray(s1, dtype=f64), np.ascontiguousarray(s2, dtype=f64),
        np.ascontiguousarray(s4, dtype=f64))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # effective_df_of_cells's kurtosis
        kappa = max(float(weighted.sum() / counted.sum()), 1.0) if counted.size else 1.0
    return np.array([variance]), np.array([one_domain_df(contribution, np.ascontiguousarray(rows, dtype=f64), kappa)])


def stratum_runs(layout: Layout) -> np.ndarray:
    """Where each stratum's sampled rows start, and after the last where they end: the strata are runs of
    the sample (``Synopsis.strata``), so rows taken in ascending order split into the strata's runs at
    ``np.searchsorted(rows, stratum_runs(layout))``.

    Parameters
    ----------
    layout : Layout
        The synopsis's strata.

    Returns
    -------
    numpy.ndarray of int
    """
    return np.concatenate([[0], np.cumsum(layout.drawn.astype(np.intp))])


def one_domain_spread(values: np.ndarray, rows: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """:func:`domain_spread` of one domain whose admitted rows are ``rows`` (ascending): each stratum's
    sums over its run of them (:func:`parzen.aqp._cell_sums.stratum_sums_of_runs`), not over each row's
    stratum and domain: the same floats (a stratum's rows in the same order).

    Parameters
    ----------
    values : numpy.ndarray
        Per admitted row, its term.
    rows : numpy.ndarray of int
        The admitted rows, ascending.
    layout : Layout
        The synopsis's strata.

    Returns
    -------
    variance, degrees_of_freedom : numpy.ndarray
        Of the one domain, as :func:`domain_spread` gives them.
    """
    bounds = np.searchsorted(rows, stratum_runs(layout))
    s1, s2, s4 = stratum_sums_of_runs(np.ascontiguousarray(values, dtype=np.float64), bounds)
    counts = np.diff(bounds).astype(np.float64)
    held = np.flatnonzero(counts)  # the strata that hold admitted rows: the cells of the domain
    return domain_spread_of_cells((held, counts[held], s1[held], s2[held], s4[held]), layout, 1)


def _unsampled(query: AggregateQuery, synopsis: Synopsis, overall: dict[str, float], rows: np.ndarray, ranged: bool,
               z: float | None) -> dict[str, tuple[np.ndarray, tuple | None]]:
    """Groups that exist (``rows`` in the table, NaN: not known) but have no sampled row: the whole
    query's rates per row and averages (``overall``) applied to their exact sizes, and intervals that
    always hold (module notes).  Per aggregate, the values and (with ``z``) the interval's ends."""
    out = {}
    for a in query.aggregates:
        low, high = _column_range(synopsis, a.column)
        if a.func == "avg":
            some = rows > 0
            value = np.where(some, overall[a.name], math.nan)
            bounds: tuple = (np.where(some, low, math.nan), np.where(some, high, math.nan))
        elif a.func == "count" and a.column is None and not ranged:
            value, bounds = rows, (rows, rows)
        elif a.func == "count":
            value, bounds = rows * overall[a.name], (0.0, rows)
        else:
            value, bounds = rows * overall[a.name], (rows * min(0.0, low), rows * max(0.0, high))
        out[a.name] = value, None if z is None else bounds
    return out


def _unsampled_domain(query: AggregateQuery, synopsis: Synopsis, bound: float | None,
                      z: float | None) -> dict[str, Estimate]:
    """A domain of unknown size (a comparison of two columns decides it: no exact table knows its
    rows) that no sampled row falls in: COUNT and SUM are 0, the Horvitz-Thompson estimate with no
    sampled term, within [0, B] rows (``bound``, :func:`unsampled_rows_bound`: a domain of more
    rows is missed with probability at most alpha) times the column's range for SUM; AVG is NULL (NaN),
    as SQL's AVG of no rows, unless rows exist."""
    out = {}
    for a in query.aggregates:
        if z is None or bound is None:
            out[a.name] = Estimate(math.nan if a.func == "avg" else 0.0)
            continue
        low, high = _column_range(synopsis, a.column)
        if a.func == "avg":
            out[a.name] = Estimate(math.nan, low, high)
        elif a.func == "count":
            out[a.name] = Estimate(0.0, 0.0, bound)
        else:
            out[a.name] = Estimate(0.0, bound * low if low < 0 else 0.0, bound * high if high > 0 else 0.0)
    return out
