"""Exact aggregate tables chosen for a workload of example queries (``Engine.build(workload=[...])``).

Per example query, the columns a table must hold or determine to answer it exactly are those
:func:`parzen.aqp.cube_answers.answer` looks for (:func:`needed_columns`, which calls that module's
own checks): the GROUP BY columns, the columns of categorical filters (=, IN, <>, LIKE and text ranges
resolved to sets of values), each range on a numeric dimension at full resolution (a DATE range at
its months, ``d@month``, where every bound cuts no month, else at its days), each comparison of two
columns as its comparison dimension ``cmp(a,b)`` (:mod:`parzen.aqp.cube_comparisons`) and the
categorical factors of the aggregates; measures are summed, never dimensions.  A query with CASE
in its aggregates or a ratio of aggregates (:mod:`parzen.aqp.case_aggregates`) needs the union over
its sub-queries.  A query none of whose needs a table can hold (a column that is neither
categorical nor a numeric dimension, an OR across columns, MIN / MAX, ...) is skipped.

Choice (:func:`select_for_workload`): the greedy algorithm of Harinarayan, Rajaraman and Ullman
("Implementing data cubes efficiently", SIGMOD 1996, benefit per unit space, their section 4.3) with
the queries weighted by their frequency in the workload (Gupta, "Selection of views to materialize in
a data warehouse", ICDT 1997, section 3): the candidate views are the queries' column sets and the
unions of two of them of at most max(:data:`parzen.aqp.cube_lattice.MAX_VIEW_COLUMNS`, the largest
query set) columns; a query q of frequency f_q costs the cells of the smallest chosen view that holds
or determines its columns (a functional dependency a -> b lets a view on a answer for b, as
:meth:`parzen.aqp.cubes.Cube.covering` reads it; a query's columns determined by others of them are
dropped from its set, :func:`reduced`), or the table's rows N when none does; each step keeps
the candidate v of the largest

    B(v) / bytes(v),   B(v) = sum over q answered by v of f_q max(0, cost(q) - cells(v)),

that still fits the bytes left; bytes(v) counts only the measures v keeps, those summed by the queries
it answers (:func:`kept_measures`: a table answering only COUNT(*) queries keeps none), and the chosen
tables keep those.  A view's cells are the least of the product of its columns' numbers
of values, N, and their count in the table by one pass of HyperLogLog sketches over every candidate
(:func:`counted_cells`, times 1.1 for the sketch's error of a few per cent): the product alone
overestimates columns of different tables that determine each other (TPC-H's n_name and r_name,
whose dependency is checked only within one table) five-fold.  Tables past the budget once built (a
count off by more than the margin) are dropped, the last chosen first (:func:`within_budget`), so the
budget always holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np

from . import cube_answers, cube_comparisons
from .cube_dimensions import NumericDimension, read_as_numbers
from .cube_lattice import MAX_VIEW_COLUMNS, lazy_greedy
from .cubes import Cube
from .sql import AggregateQuery

#: A view's HyperLogLog count of cells is scaled by this (its relative error is about 2 %, :func:`counted_cells`).
APPROXIMATE_MARGIN = 1.1


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def workload_needs(con, table: str, types: dict[str, str], workload: Sequence[tuple[str, Sequence[AggregateQuery]]],
                   values: dict[str, list], measures: list[str], nullable: list[str],
                   dimensions: dict[str, NumericDimension]) -> tuple[list[tuple[str, ...]], list[frozenset],
                                                                     dict[str, NumericDimension], list[str]]:
    """Per example query, the columns a table needs (:func:`needed_columns`) and the measures it sums, with
    the comparison dimensions ``cmp(a,b)`` the queries' comparisons of two columns need
    (:func:`parzen.aqp.cube_comparisons.comparison_dimensions`; a pair of columns that no dimension can
    compare leaves its queries unanswerable).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    types : dict of str to str
        Its columns' DuckDB types.
    workload : sequence of (str, sequence of AggregateQuery)
        Per query, its text and its parses (:func:`needed_columns`; none: a query no table answers).
    values, measures, nullable, dimensions
        As for :func:`needed_columns` (``dimensions``: the numeric ones, :func:`parzen.aqp.cube_dimensions.find`).

    Returns
    -------
    needs : list of tuple of str
        The column sets of the queries a table can answer.
    summed : list of frozenset of str
        Per query of ``needs``, the measures it sums (its sums and counts a table must keep).
    comparisons : dict of str to NumericDimension
        The comparison dimensions those need.
    skipped : list of str
        The texts of the queries no table can answer.
    """
    names = list(dict.fromkeys(cube_comparisons.NAME.format(left=c.left, right=c.right)
                               for _, parts in workload for q in parts for c in q.compared))
    try:
        found = cube_comparisons.comparison_dimensions(con, table, types, names)
    except ValueError:  # two columns that do not compare: the others one by one
        found = {}
        for name in names:
            try:
                found.update(cube_comparisons.comparison_dimensions(con, table, types, [name]))
            except ValueError:
                continue
    every = {**dimensions, **found}
    needs, summed, skipped = [], [], []
    for text, parts in workload:
        read: set[str] = set()
        columns = needed_columns(parts, values, measures, nullable, every, read) if parts else None  # none: a histogram
        if columns is None:
            skipped.append(text)
        else:
            needs.append(columns)
            summed.append(frozenset(read))
    used = {c for n in needs for c in n}
    return needs, summed, {c: d for c, d in found.items() if c in used}, skipped


def needed_columns(parts: Sequence[AggregateQuery], values: dict[str, list], measures: list[str],
                   nullable: list[str], dimensions: dict[str, NumericDimension],
                   summed: set[str] | None = None) -> tuple[str, ...] | None:
    """The columns one exact table must hold or determine to answer a query (the union over its
    ``parts``: a plain query's one parse, or a CASE / ratio query's sub-queries), or None when no
    table can answer it (module notes).

    Parameters
    ----------
    parts : sequence of AggregateQuery
        The query's parses, names as in the synopsis (:meth:`parzen.aqp.Engine.query` resolves them).
    values : dict of str to list
        Per categorical column, its values.
    measures : list of str
        The summed columns (:attr:`parzen.aqp.cubes.Cube.measures`).
    nullable : list of str
        The measures with NULLs.
    dimensions : dict of str to NumericDimension
        The numeric and comparison dimensions a table may group by (days, ``d@month``, ``cmp(a,b)``).
    summed : set of str, optional
        Gets the measures the query sums (:func:`parzen.aqp.cube_answers._inputs`).

    Returns
    -------
    tuple of str or None
        The columns in the order the query names them.
    """
    cube = Cube(list(measures), list(nullable), dimensions=dict(dimensions))
    every = cube.values_with(values)
    needed: dict[str, None] = {}
    for query in parts:
        compared = cube_answers._comparison_filters(query, cube)
        if query.boxes or compared is None:
            return None
        query = cube_answers._by_months(query, cube)
        filtered = [*query.members, *query.ranges, *compared]
        if any(c not in every for c in [*filtered, *query.group_by]) or not cube_answers._dimensions_usable(query, cube):
            return None
        factors: set[str] = set()
        for a in query.aggregates:
            inputs = cube_answers._inputs(a, cube, every, summed)
            if inputs is None:
                return None
            factors |= inputs
        needed.update(dict.fromkeys([*query.group_by, *filtered, *sorted(factors)]))
    return tuple(needed)


def select_for_workload(needs: Sequence[tuple[str, ...]], cardinality: dict[str, int], dependencies, rows: int,
                        cell_bytes: Callable[..., int], budget: float, counted: dict[frozenset, float] | None = None,
                        summed: Sequence[frozenset] | None = None) -> list[tuple[str, ...]]:
    """The views HRU's greedy keeps within ``budget`` bytes for the workload's column sets (module notes).

    Parameters
    ----------
    needs : sequence of tuple of str
        Per answerable query of the workload, its columns (:func:`needed_columns`); a set that occurs
        k times weighs k.
    cardinality : dict of str to int
        Per column, its number of values.
    dependencies : collection of (str, str)
        The exact dependencies a -> b.
    rows : int
        The table's rows: the cost of a query no view answers, and the most cells a view can have.
    cell_bytes : callable
        Bytes of one cell of a view, given its columns (and, with ``summed``, the measures it keeps).
    budget : float
        Bytes the views may take in all.
    counted : dict of frozenset to float, optional
        Per candidate view (:func:`candidate_views`), its cells as counted in the table
        (:func:`counted_cells`): a view's cells are the least of these, the product of its columns'
        numbers of values and ``rows``.
    summed : sequence of frozenset of str, optional
        Per query of ``needs``, the measures it sums: a view keeps those of the queries it answers
        (:func:`kept_measures`) and its bytes count those only (None: every measure).

    Returns
    -------
    list of tuple of str
        The views in the order chosen.
    """
    determined = determinants(cardinality, dependencies)
    needs = [reduced(n, determined) for n in needs]
    frequency = Counter(frozenset(n) for n in needs if n)
    queries = list(frequency)
    if not queries or budget <= 0:
        return []
    weight = np.array([frequency[q] for q in queries], dtype=np.float64)
    candidates = candidate_views(needs)

    def answers(view: frozenset, query: frozenset) -> bool:
        return all(any(c in determined.get(v, {v}) for v in view) for c in query)

    cells = np.array([min(rows, float(np.prod([cardinality[c] for c in v], dtype=np.float64)),
                          (counted or {}).get(v, np.inf)) for v in candidates])
    if summed is None:
        nbytes = np.array([cells[i] * cell_bytes(sorted(v)) for i, v in enumerate(candidates)])
    else:
        nbytes = np.array([cells[i] * cell_bytes(sorted(v), kept_measures(v, needs, summed, determined))
                           for i, v in enumerate(candidates)])
    covered = [np.array([j for j, q in enumerate(queries) if answers(v, q)], dtype=np.intp) for v in candidates]
    cost = np.full(len(queries), float(rows))

    def per_byte(i: int) -> float:
        return float((weight[covered[i]] * np.maximum(cost[covered[i]] - cells[i], 0.0)).sum()) / max(nbytes[i], 1.0)

    def take(i: int) -> None:
        cost[covered[i]] = np.minimum(cost[covered[i]], cells[i])

    fitting = [i for i in range(len(candidates)) if nbytes[i] <= budget]
    return [tuple(sorted(candidates[i])) for i in lazy_greedy(per_byte, nbytes, budget, take, fitting)]


def choose(con, table: str, needs: Sequence[tuple[str, ...]], cardinality: dict[str, int], dependencies, rows: int,
           cell_bytes: Callable[..., int], budget: float, dimensions: dict[str, NumericDimension],
           summed: Sequence[frozenset] | None = None) -> list[tuple[str, ...]]:
    """The views for the workload's column sets ``needs`` within ``budget`` bytes: their candidates' cells
    counted in ``table`` by one pass (:func:`counted_cells`), then :func:`select_for_workload` (the
    other parameters are its own; ``dimensions``: the numeric and comparison dimensions the sets name)."""
    determined = determinants(cardinality, dependencies)
    counted = counted_cells(con, table, candidate_views([reduced(n, determined) for n in needs]), dimensions)
    return select_for_workload(needs, cardinality, dependencies, rows, cell_bytes, budget, counted, summed)


def kept_measures(view, needs: Sequence[tuple[str, ...]], summed: Sequence[frozenset],
                  determined: dict[str, set[str]]) -> frozenset:
    """The measures a ``view`` chosen for a workload keeps: those summed (``summed``) by each query whose
    columns (``needs``) it holds or determines (``determined``: :func:`determinants`), so it answers every
    query it covers; a query of no columns is covered by every view."""
    kept: frozenset = frozenset()
    for columns, measures in zip(needs, summed):
        if measures - kept and all(any(c in determined.get(v, {v}) for v in view) for c in columns):
            kept |= measures
    return kept


def determinants(cardinality: dict[str, int], dependencies) -> dict[str, set[str]]:
    """Per column, the columns it determines (itself included) by the dependencies a -> b."""
    determined = {c: {c} for c in cardinality}
    for a, b in dependencies:
        determined.setdefault(a, {a}).add(b)
    return determined


def reduced(columns: tuple[str, ...], determined: dict[str, set[str]]) -> tuple[str, ...]:
    """``columns`` without those another of them determines (``determined``: per column, the columns it
    determines, itself included): a table on the rest answers for them through the dependencies' maps,
    with no more cells (of two columns that determine each other, the last is kept)."""
    kept = list(columns)
    for c in columns:
        if any(other != c and c in determined.get(other, {other}) for other in kept):
            kept.remove(c)
    return tuple(kept)


def candidate_views(needs: Sequence[tuple[str, ...]]) -> list[frozenset]:
    """The candidate views of a workload: its queries' column sets (``needs``) and the unions of two of
    them of at most max(:data:`parzen.aqp.cube_lattice.MAX_VIEW_COLUMNS`, the widest set) columns."""
    queries = list(dict.fromkeys(frozenset(n) for n in needs if n))
    if not queries:
        return []
    widest = max(MAX_VIEW_COLUMNS, max(len(q) for q in queries))
    return list(dict.fromkeys([*queries, *(a | b for a, b in combinations(queries, 2) if len(a | b) <= widest)]))


def counted_cells(con, table: str, views: Sequence[frozenset], dimensions: dict[str, NumericDimension]) -> dict[frozenset, float]:
    """Per view, its cells in ``table`` counted by one pass: DuckDB's HyperLogLog estimate of the distinct
    combinations of the view's columns (``approx_count_distinct`` of their hash; numeric, month and
    comparison dimensions read as the tables read them, :func:`parzen.aqp.cube_dimensions.read_as_numbers`),
    times :data:`APPROXIMATE_MARGIN` (HyperLogLog is off by a few per cent; the build drops the last chosen
    tables past the budget, :func:`within_budget`).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    views : sequence of frozenset of str
        The views (:func:`candidate_views`).
    dimensions : dict of str to NumericDimension
        The numeric and comparison dimensions the views may name.

    Returns
    -------
    dict of frozenset to float
    """
    if not views:
        return {}
    used = {c: d for c, d in dimensions.items() if any(c in v for v in views)}
    counts = ", ".join(f"approx_count_distinct(hash({', '.join(_quote(c) for c in sorted(v))}))" for v in views)
    row = con.execute(f"SELECT {counts} FROM {read_as_numbers(table, used)}").fetchone()
    return {v: float(n or 0) * APPROXIMATE_MARGIN + 1.0 for v, n in zip(views, row)}


def within_budget(tables: list, budget: float) -> list:
    """The first of ``tables`` (in the order chosen) whose bytes add up to at most ``budget``: the tables
    of cells counted by HyperLogLog (:func:`counted_cells`) may exceed their estimate."""
    kept, spent = [], 0
    for table in tables:
        if spent + table.nbytes <= budget:
            kept.append(table)
            spent += table.nbytes
    return kept
