"""Predicates that compare two columns of a row (``l_commitdate < l_receiptdate``, ``c_nationkey = s_nationkey``).

A comparison of two columns of the fact table or of the dimensions its join synopsis carries
(:mod:`parzen.aqp.joins`) cannot be a box of ranges, but it can be read exactly off each sampled
row, which carries both columns.  The answer is then the domain estimate of
:mod:`parzen.aqp.domains` whose domain also requires the comparison: each sampled row's term t_i
(its kernel mass of the query's ranges, times y for SUM; its exact categorical part) is multiplied
by the indicator 1[pred holds on row i], so with w_s = rows_s / drawn_s

    T = sum_s w_s sum_{i in s} t_i 1[pred_i],
    Var(T) = sum_s rows_s^2 (1 - drawn_s / rows_s) S^2_s / drawn_s,

S^2_s the variance over all drawn rows of stratum s of t_i 1[pred_i].  This is the Horvitz-Thompson
estimator of a domain total under stratified sampling without replacement (Saerndal, Swensson and
Wretman 1992, Model Assisted Survey Sampling, sections 3.7 and 10.3; docs/statistics.md, "AQP:
integrals of the density over boxes"): the indicator is a fixed property of each population row,
so the estimate stays unbiased for the same target as without it (the population total of the
smoothed terms over the rows where pred holds), and its variance, the delta method for AVG and the
smoothing-bias term of :mod:`parzen.aqp.contract` apply unchanged.  The exact domain sizes of the
categorical tables no longer describe the domain (they do not know the comparison), so such answers
are not calibrated to them and return the groups that have a sampled row.

Equalities of two columns in a join's conditions are join conditions only where they are the
synopsis's foreign keys (:func:`separate_filters`): the others are such row predicates
(``c_nationkey = s_nationkey`` in TPC-H Q5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlglot import exp

#: The comparisons of two columns, by sqlglot node type.
OPERATORS: dict[type[exp.Expr], str] = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
                                         exp.GTE: ">="}
_NUMPY = {"=": np.equal, "<>": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
          ">=": np.greater_equal}


@dataclass(frozen=True)
class ColumnComparison:
    """``left op right`` on the same row; ``op`` one of =, <>, <, <=, >, >=."""

    left: str
    op: str
    right: str

    def renamed(self, stored) -> ColumnComparison:
        """The comparison with every column name ``c`` replaced by ``stored(c)``."""
        return ColumnComparison(stored(self.left), self.op, stored(self.right))

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


def split_comparisons(condition: exp.Expr, column_of, *, copy: bool = True) -> tuple[tuple[ColumnComparison, ...],
                                                                                      exp.Expr | None]:
    """The comparisons of two columns among the top-level AND-ed predicates of ``condition``, and
    the rest of it (None when nothing is left).

    Parameters
    ----------
    condition : sqlglot.exp.Expr
        A WHERE condition.
    column_of : callable
        A node's column name, or None when the node is no plain column.
    copy : bool
        Whether the rest is an AND of copies of ``condition``'s terms (its tree is left unchanged) or,
        for a condition that is the caller's own (made for this conversion), of the terms themselves
        (re-parented under the new AND: a copy deep-copies each term in Python).

    Returns
    -------
    comparisons : tuple of ColumnComparison
    rest : sqlglot.exp.Expr or None
    """
    compared, rest = split_terms([condition], column_of)
    if not compared:
        return (), condition
    return compared, (exp.and_(*rest, copy=copy) if rest else None)


def split_terms(terms: list[exp.Expr], column_of) -> tuple[tuple[ColumnComparison, ...], list[exp.Expr]]:
    """:func:`split_comparisons` of the AND of ``terms``, the rest as its list of terms (made into no
    new AND: the terms are read, never copied or changed).

    Parameters
    ----------
    terms : list of sqlglot.exp.Expr
        AND-ed predicates (each may itself be an AND chain).
    column_of : callable
        A node's column name, or None when the node is no plain column.

    Returns
    -------
    comparisons : tuple of ColumnComparison
    rest : list of sqlglot.exp.Expr
        The other top-level terms, in order.
    """
    compared, rest = [], []
    for node in (node for term in terms for node in conjuncts(term)):
        op = OPERATORS.get(type(node))
        left = column_of(node.this) if op else None
        right = column_of(node.expression) if op else None
        if op is not None and left is not None and right is not None:
            compared.append(ColumnComparison(left, op, right))
        else:
            rest.append(node)
    return tuple(compared), rest


def conjuncts(node: exp.Expr, chain: type[exp.Connector] = exp.And):
    """The terms of an AND chain (parentheses removed), in order; any other node is its own term (a stack,
    not a generator per level: a term of a chain of n ANDs passed up through n generators).  ``chain=exp.Or``:
    the branches of an OR chain alike."""
    stack = [node]
    while stack:
        node = stack.pop().unnest()
        if isinstance(node, chain):
            stack.append(node.right)
            stack.append(node.left)
        else:
            yield node


def separate_filters(query, synopsis):
    """``query`` whose equalities of two columns that are no foreign key of the synopsis are row
    predicates (:attr:`~parzen.aqp.sql.AggregateQuery.compared`), not join conditions.

    The query's equalities of two columns make classes of columns that must all be equal on a row.
    A foreign key ``child.column = parent.key`` whose two columns fall in one class is a join
    condition (met even when written through a third column: ``c_nationkey = s_nationkey AND
    s_nationkey = n_nationkey`` meets ``c_nationkey = n_nationkey``); the rest of each class, the
    columns those joins do not already make equal, becomes equalities filtering the joined rows
    (``c_nationkey = s_nationkey``).  A dimension's key is named by its foreign key, which the
    sample carries and which equals it on every row of the join.  A class holding the key of a
    foreign key that it does not meet (``s_quantity = o_orderkey``) stays as written, a join
    condition that :func:`parzen.aqp.joins.covered` refuses by name.

    Parameters
    ----------
    query : AggregateQuery
        The parsed query (names as written).
    synopsis : Synopsis
        The synopsis chosen to answer it.

    Returns
    -------
    AggregateQuery
        The query with ``join_on`` the foreign keys met and ``compared`` extended.
    """
    if not query.join_on:
        return query
    kept = synopsis.__dict__.setdefault("_separations", {})  # per join_on: (the synopsis's joins, the result)
    found = kept.get(query.join_on)
    if found is None or found[0] is not synopsis.joins:
        if len(kept) >= _SEPARATIONS_KEPT:
            kept.clear()
        found = kept[query.join_on] = (synopsis.joins, *_separation(query.join_on, synopsis.joins))
    _, join_on, compared = found
    return query.replaced(join_on=join_on, compared=tuple(dict.fromkeys([*query.compared, *compared])))


#: The join conditions whose separation a synopsis keeps (:func:`separate_filters`), the last ones.
_SEPARATIONS_KEPT = 64


def _separation(written_on: tuple, joins: list[dict]) -> tuple[tuple, list[ColumnComparison]]:
    """:func:`separate_filters`'s work on a query's join conditions ``written_on`` and a synopsis's
    ``joins``: the foreign keys met (and the conditions that stay as written), and the equalities of
    columns that filter the joined rows, in order (they depend on nothing else)."""
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        parent.setdefault(c, c)
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    written: dict[str, str] = {}
    for pair in written_on:
        a, b = (column.casefold() for _, column in pair)
        written.setdefault(a, pair[0][1])
        written.setdefault(b, pair[1][1])
        parent[find(a)] = find(b)
    met = [e for e in joins if e["column"].casefold() in parent and e["key"].casefold() in parent
           and find(e["column"].casefold()) == find(e["key"].casefold())]
    joined: dict[str, str] = {c: c for c in parent}  # components of the met joins alone

    def component(c: str) -> str:
        while joined[c] != c:
            c = joined[c]
        return c

    for e in met:
        joined[component(e["key"].casefold())] = component(e["column"].casefold())
    key_of = {e["key"].casefold(): e["column"] for e in joins}
    # a class with the key of a foreign key it does not meet stays a join condition: joins.covered names it
    unmet = {find(e["key"].casefold()) for e in joins if e not in met and e["key"].casefold() in parent}
    representative: dict[tuple[str, str], str] = {}  # (class, component) -> a column the sample carries
    for c in sorted(parent, key=lambda c: (c in key_of, c)):
        if find(c) not in unmet:
            representative.setdefault((find(c), component(c)), key_of.get(c, written[c]))
    first: dict[str, str] = {}
    compared: list[ColumnComparison] = []
    for (cls, _), column in representative.items():
        if cls in first:
            compared.append(ColumnComparison(first[cls], "=", column))
        else:
            first[cls] = column
    join_on = tuple(((e["child"], e["column"]), (e["parent"], e["key"])) for e in met)
    join_on += tuple(pair for pair in written_on if find(pair[0][1].casefold()) in unmet)
    return join_on, compared


def check_answerable(query, synopsis) -> None:
    """Refuse, naming it, a query whose column comparisons the sample's domain estimate cannot answer.

    Raises
    ------
    UnsupportedQuery
        Aggregates other than COUNT / SUM / AVG (of columns or of arithmetic of columns; under OR /
        NOT, :mod:`parzen.aqp.unions` names those it refuses), or a synopsis without categorical
        columns (an older format).
    """
    from .sql import UnsupportedQuery

    shown = " AND ".join(map(str, query.compared or next(pairs for pairs in query.box_compared if pairs)))
    other = [a.name for a in query.aggregates if not (a.plain or (a.polynomial and a.func in ("sum", "avg")))]
    if other:
        raise UnsupportedQuery(f"{other[0]} under the comparison of two columns {shown} (COUNT, SUM and AVG only)")
    if synopsis.categories is None:
        raise UnsupportedQuery(f"the comparison of two columns {shown} on a synopsis of an older format: "
                               f"rebuild it with engine.refresh({synopsis.table!r}, full=True)")


def row_mask(compared, synopsis, layout, rows: np.ndarray | None = None) -> np.ndarray:
    """Per sampled row (in the order of the synopsis's sample), or per row of ``rows``, whether every
    comparison holds (SQL's NULL semantics: a comparison with a NULL side does not hold).

    Parameters
    ----------
    compared : tuple of ColumnComparison
        Names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.
    layout : Layout
        Its strata (:meth:`parzen.aqp.strata.Layout.of`), whose view holds the sampled numeric values.
    rows : numpy.ndarray, optional
        The sampled rows to test (e.g. those that a query's categorical filters admit); None: every one.

    Returns
    -------
    numpy.ndarray of bool
        One per sampled row, or per row of ``rows``.

    Raises
    ------
    UnsupportedQuery
        A column the sample does not carry (with a rebuild hint), text compared with a number, or a
        date with a number.
    """
    from .sql import UnsupportedQuery

    keep = np.ones(synopsis.sample_size if rows is None else rows.size, dtype=bool)
    for c in compared:
        (left, left_kind), (right, right_kind) = (_values(c.left, c, synopsis, layout, rows),
                                                  _values(c.right, c, synopsis, layout, rows))
        if (left_kind == "text") != (right_kind == "text") or \
                ("date" in (left_kind, right_kind) and left_kind != right_kind):
            raise UnsupportedQuery(f"the comparison {c} of a {left_kind} column with a {right_kind} column")
        if left_kind == "text":
            present = np.array([a is not None and b is not None for a, b in zip(left, right)], dtype=bool)
            holds = np.array([_text_holds(a, c.op, b) for a, b in zip(left, right)], dtype=bool) if present.any() \
                else present
            keep &= present & holds
            continue
        with np.errstate(invalid="ignore"):
            keep &= _NUMPY[c.op](left, right) & ~np.isnan(left) & ~np.isnan(right)
    return keep


def _text_holds(a, op: str, b) -> bool:
    if a is None or b is None:
        return False
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _values(column: str, comparison: ColumnComparison, synopsis, layout,
            rows: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """The sampled rows' values of ``column`` (those of ``rows``; None: all) and their kind ("number",
    "date" or "text"): a modelled column's sampled values (dates as days), else a categorical column's
    values decoded."""
    from .sql import UnsupportedQuery

    if column in synopsis.models and column in layout.view.columns:
        sampled = layout.view.columns[column]
        return np.asarray(sampled if rows is None else sampled[rows], dtype=np.float64), \
            "date" if column in synopsis.temporal else "number"
    categories = synopsis.categories
    if categories is not None and column in categories.values:
        values = list(categories.values[column])
        codes = categories.codes[column] if rows is None else categories.codes[column][rows]
        if all(v is None or (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool))
               for v in values):
            decoded = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
            return decoded[codes], "number"
        if all(v is None or isinstance(v, str) for v in values):
            table = np.array(values, dtype=object)
            return table[codes], "text"
        raise UnsupportedQuery(f"the comparison {comparison} on {column!r}, whose values are neither numbers nor text")
    carried = sorted([*synopsis.models, *(categories.values if categories is not None else ())])
    raise UnsupportedQuery(f"the comparison {comparison}: the synopsis's sample does not carry {column!r} "
                           f"(it carries: {', '.join(carried)}); rebuild with columns=[..., {column!r}] "
                           f"(a number or date column) to compare it")
