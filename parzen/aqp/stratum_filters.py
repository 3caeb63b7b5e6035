"""Filters on a dimension's columns that select whole strata of a join synopsis.

A join synopsis stratified by a foreign key (``build("store_sales", group_by=["ss_store_sk"],
joins={"ss_store_sk": "store.s_store_sk"})``) carries each fact row's dimension attributes, and the
dimension's key is unique (:mod:`parzen.aqp.joins` checks it), so every column of that dimension,
and of the dimensions joined through it (a snowflake), is a function of the stratum: each stratum
lies wholly inside or wholly outside ``s_number_employees = 298``.  Such a filter is the same as
``ss_store_sk IN (the strata whose store has 298 employees)``, which the strata answer from their
exact totals (form "totals": COUNT and SUM exact without a numeric predicate, stratified and
calibrated under one), where the categorical filter would be a domain estimate whose error is the
sampling error of a ratio (:mod:`parzen.aqp.domains`; on the DBEst TPC-DS joins of SF10, 2-6 % for
SUM / AVG of ss_net_profit of one store, against 0 from the totals).  :func:`to_strata` makes that
rewrite; it is the stratified estimator's own answer for a union of strata (Cochran 1977, section 5.1),
not an approximation.
"""

from __future__ import annotations

import numpy as np

from .categories import Categories
from .sql import AggregateQuery
from .synopsis import Synopsis
from .value_index import member_mask


def determined_columns(synopsis: Synopsis) -> set[str]:
    """The columns that the synopsis's one stratum column determines: those of the dimension it is the
    foreign key of, and of every dimension joined through that one (empty unless the synopsis is a join
    synopsis stratified by exactly one of the fact table's foreign keys).

    Parameters
    ----------
    synopsis : Synopsis
        The synopsis.

    Returns
    -------
    set of str
    """
    if len(synopsis.group_by) != 1 or not synopsis.joins:
        return set()
    key, fact = synopsis.group_by[0].casefold(), synopsis.table.casefold()
    reached = {e["parent"].casefold() for e in synopsis.joins
               if e["child"].casefold() == fact and e["column"].casefold() == key}
    grown = True
    while grown:
        more = {e["parent"].casefold() for e in synopsis.joins if e["child"].casefold() in reached}
        grown = not more <= reached
        reached |= more
    columns = {c for e in synopsis.joins if e["parent"].casefold() in reached for c in e.get("columns", ())}
    columns |= {e["column"] for e in synopsis.joins if e["child"].casefold() in reached}  # snowflake keys
    return columns


def to_strata(query: AggregateQuery, synopsis: Synopsis) -> AggregateQuery:
    """``query`` with its IN / = and ranges on columns that the stratum column determines
    (:func:`determined_columns`) replaced by an IN on the stratum column listing the strata they admit
    (module notes); ``query`` itself where there are none, where the query has OR / NOT or comparisons of
    two columns, or where a stratum has no sampled row to read its value from.

    Parameters
    ----------
    query : AggregateQuery
        The query, names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.

    Returns
    -------
    AggregateQuery
    """
    from .domains import _allowed_codes

    categories = synopsis.categories
    if categories is None or query.boxes or query.compared or not synopsis.groups:
        return query
    determined = determined_columns(synopsis) - set(query.group_by)
    filtered = [c for c in dict.fromkeys([*query.members, *query.ranges])
                if c in determined and c in categories.values and c not in synopsis.models]
    if not filtered:
        return query
    admitted = np.ones(len(synopsis.groups), dtype=bool)
    for column in filtered:
        allowed, code = _allowed_codes(query, categories, column), _stratum_codes(synopsis, categories, column)
        if code is None:  # a stratum with no row to read it from, or where it is not a function of the stratum
            return query
        admitted &= allowed[code]
    if not admitted.any():
        return query  # no stratum: the domain estimate answers 0 with its own bounds
    stratum_column = synopsis.group_by[0]
    values = _stratum_values(synopsis)
    if stratum_column in query.members:  # the query's own IN / = on the stratum column still holds
        admitted &= member_mask(values, query.members[stratum_column])
    if not admitted.any():
        return query
    members = {c: v for c, v in query.members.items() if c not in filtered}
    members[stratum_column] = frozenset(v for v, kept in zip(values, admitted) if kept)
    ranges = {c: r for c, r in query.ranges.items() if c not in filtered}
    return query.replaced(members=members, ranges=ranges)


def _stratum_codes(synopsis: Synopsis, categories: Categories, column: str) -> np.ndarray | None:
    """Per stratum of ``synopsis``, the code of categorical ``column`` that all its sampled rows hold;
    None where a stratum has no sampled row or rows of two codes (the column is then no function of the
    stratum for :func:`to_strata`).  Made once per synopsis and column and kept on the synopsis (it
    depends on the synopsis's strata and sample only, never on a query: the strata x rows scan it
    replaces cost 0.3 ms of each answer on TPC-DS's store joins).

    Parameters
    ----------
    synopsis : Synopsis
        A synopsis with strata.
    categories : Categories
        Its categorical columns (``synopsis.categories``).
    column : str
        One of them.

    Returns
    -------
    numpy.ndarray or None
        One code per stratum (intp).
    """
    kept = synopsis.__dict__.setdefault("_stratum_codes", {})
    if column not in kept:
        codes, found, complete = categories.codes[column], np.empty(len(synopsis.groups), dtype=np.intp), True
        for s, group in enumerate(synopsis.groups):
            held = codes[group.start:group.stop]
            if held.size == 0 or (held != held[0]).any():
                complete = False
                break
            found[s] = held[0]
        kept[column] = found if complete else None  # set once made (answers may run in several threads, parzen serve)
    return kept[column]


def _stratum_values(synopsis: Synopsis) -> list:
    """The stratum column's value of each stratum, one list per synopsis, kept on it (so that
    :func:`~parzen.aqp.value_index.member_mask` finds its index made once)."""
    kept = synopsis.__dict__.get("_stratum_values")
    if kept is None:
        kept = synopsis.__dict__["_stratum_values"] = [g.key[0] for g in synopsis.groups]
    return kept
