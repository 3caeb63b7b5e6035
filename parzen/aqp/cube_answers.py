"""Exact answers from a synopsis's exact aggregate tables (:mod:`parzen.aqp.cubes`).

A query is answered here when every predicate is on categorical columns (=, IN, and ranges, LIKE or
text comparisons, which :mod:`parzen.aqp.string_predicates` and this module turn into sets of codes)
or is a range on a numeric dimension (a DATE, integer or DECIMAL column of few values that the tables
hold at full resolution, :mod:`parzen.aqp.cube_dimensions`: the codes of the values in the range)
or compares two columns whose comparison dimension ``cmp(a,b)`` a table holds
(:mod:`parzen.aqp.cube_comparisons`: the codes of the signs the operator admits), with no OR across
columns, and one table holds or determines (by
an exact functional dependency, :mod:`parzen.aqp.cube_lattice`) every column it filters or groups
by and keeps every measure it sums (:attr:`parzen.aqp.cubes.CubeTable.measures`).  Its aggregates
may be COUNT(*), COUNT / SUM / AVG of a measure, SUM / AVG of a polynomial whose every term
multiplies at most one measure by categorical columns of numeric values (SUM(a - b), SUM(price *
discount) with discount categorical or a numeric dimension), and linear combinations of these
(SUM(a) - SUM(b)).  A numeric dimension is never a group column here, and a date never a number.
The cells of the table whose codes pass the filters are added up per group (the group columns'
codes, rolled up through the dependencies' maps):

    COUNT(*) = sum rows_c,   SUM(m * x * y) = sum_c x_c y_c SUM_c(m),   AVG(m) = SUM(m) / COUNT(m)

over the passing cells c of a group.  The answer is DuckDB's, up to floating-point rounding: its
interval has zero width, it lists every group that has rows under the filters (no other), and
``df.attrs["form"]`` is :data:`FORM`.  Anything else returns None and the synopsis's other forms
answer (docs/aqp.md, "Exact aggregate tables").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .categories import Categories
from .column_frames import frame_of
from .contract import RELATIVE_HALF_WIDTH, relative_half_width_of, rounding_bound
from .cube_comparisons import comparison_mask
from .cube_dimensions import MONTH
from .cubes import Cube, CubeTable
from .sql import Aggregate, AggregateQuery, Range
from .value_index import member_mask

#: ``df.attrs["form"]`` of an answer from the exact aggregate tables.
FORM = "exact table"


def answer(query: AggregateQuery, cube: Cube, categories: Categories, with_error: bool,
           terms: int | None = None, drop_intervals: bool = False) -> pd.DataFrame | None:
    """The exact answer to ``query`` from ``cube``'s tables, or None when they cannot give it (module notes).

    Parameters
    ----------
    query : AggregateQuery
        The parsed query, names as in the synopsis, joins and text tests resolved
        (:meth:`parzen.aqp.Engine.query`).
    cube : Cube
        The synopsis's exact aggregate tables.
    categories : Categories
        The synopsis's categorical columns (their values decode the codes).
    with_error : bool
        Whether to add ``<name> low`` / ``<name> high`` (equal to the value).
    terms : int, optional
        With ``with_error``: the most terms DuckDB's own sums add (the table's rows); each interval
        is then value -+ :func:`parzen.aqp.contract.rounding_bound` of the value, the float64
        round-off between the two sums (as :func:`parzen.aqp.contract.cover_rounding` would widen it).
    drop_intervals : bool
        With ``with_error``: leave the intervals out of the frame and put their largest relative half
        width (:func:`parzen.aqp.contract.relative_half_width` of the frame with them) in
        ``df.attrs["relative_half_width"]`` (the contract's check, made on the arrays: the frame with
        intervals and the one without them cost 0.1 ms).

    Returns
    -------
    pandas.DataFrame or None
        One row per group with rows under the filters, sorted as DuckDB's ORDER BY of the group
        columns would (NULLs last).
    """
    found = _totals(query, cube, categories)
    if found is None:
        return None
    spans: dict[str, tuple] | None = {} if with_error and drop_intervals else None
    frame = _frame(query, found.keys, cube, cube.values_with(categories.values), found.totals, with_error, terms, spans)
    if spans is not None:
        frame.attrs[RELATIVE_HALF_WIDTH] = relative_half_width_of([a for s in spans.values() for a in s],
                                                                  found.keys.shape[0])
    return frame


@dataclass(frozen=True)
class Totals:
    """A query's exact totals from the tables: ``keys`` (groups x group columns), the groups' codes in the
    values' order, rows sorted as :func:`answer`'s frame sorts its groups (lexicographically); ``totals``,
    per aggregate's name, its value per group (float64)."""

    keys: np.ndarray
    totals: dict[str, np.ndarray]


def _totals(query: AggregateQuery, cube: Cube, categories: Categories, masks: dict | None = None) -> Totals | None:
    """:func:`answer`'s totals per group, before they are decoded into a frame (None: as :func:`answer`).

    ``masks`` keeps, per filter (its kind, column and literals or range), the mask of codes it admits, for
    the next query that has the same filter (:func:`answer_each`'s sub-queries share their WHERE); each
    mask is a function of its key only, and none is written to."""
    masks = {} if masks is None else masks
    compared = _comparison_filters(query, cube, masks)
    if query.boxes or compared is None:
        return None
    values = cube.values_with(categories.values)  # the numeric dimensions' too (parzen.aqp.cube_dimensions)
    ranges = _month_ranges(query, cube, masks)
    filtered = [*query.members, *ranges, *compared]
    if any(c not in values for c in [*filtered, *query.group_by]) or not _dimensions_usable(query, cube):
        return None
    factors: set[str] = set()
    summed: set[str] = set()
    for a in query.aggregates:
        needs = _inputs(a, cube, values, summed)
        if needs is None:
            return None
        factors |= needs
    found = _covering(cube, (*dict.fromkeys([*query.group_by, *filtered, *factors]),), frozenset(summed), masks)
    if found is None:
        return None
    table, rolled = found

    def source_of(column: str) -> tuple[str, np.ndarray | None]:  # the table's column read, and the map (None: as is)
        return (rolled[column], cube.dependencies[(rolled[column], column)]) if column in rolled else (column, None)

    allowed: dict[str, np.ndarray] = {}  # per column of the table, the codes its filters admit
    for column, mask in [*_filters(query.members, ranges, values, cube, masks), *compared.items()]:
        if mask is None:
            return None
        source, mapping = source_of(column)
        admitted = mask if mapping is None else mask[mapping]
        allowed[source] = allowed[source] & admitted if source in allowed else admitted
    cells = _passing(cube, table, allowed, masks)

    def codes_of(column: str) -> np.ndarray:  # the passing cells' codes of ``column``
        source, mapping = source_of(column)
        codes = cube.column(table, source).take(cells)
        return codes if mapping is None else mapping.take(codes)

    if query.group_by:  # one number per group: its codes in mixed radix (their order is the values' order)
        key = codes_of(query.group_by[0]).astype(np.int64)
        for c in query.group_by[1:]:
            key = key * len(values[c]) + codes_of(c)
        unique_keys, group_of_cell = _groups_of(key, math.prod(len(values[c]) for c in query.group_by))
        groups = unique_keys.size
        keys = np.empty((groups, len(query.group_by)), dtype=np.int64)
        for k in range(len(query.group_by) - 1, -1, -1):
            unique_keys, keys[:, k] = np.divmod(unique_keys, len(values[query.group_by[k]]))
    else:
        keys, group_of_cell, groups = np.zeros((1, 0), dtype=np.int64), np.zeros(cells.size, dtype=np.intp), 1
    totals = {}
    for a in query.aggregates:
        totals[a.name] = _aggregate(a, table, cube, values, cells, group_of_cell, groups, codes_of)
    return Totals(keys, totals)


def answer_each(queries: Sequence[AggregateQuery], cube: Cube,
                categories: Categories) -> tuple[list[Sequence], list[Totals]] | None:
    """The exact answers to all of ``queries`` from ``cube``'s tables, or None as soon as one of them is
    outside what the tables give (:func:`answer`): the first one's group columns and every one's
    :class:`Totals` (no frame is made: the totals are placed among the first one's groups by their codes).

    This answers the sub-queries of a CASE / ratio query (:mod:`parzen.aqp.case_aggregates`): each is the
    query's WHERE AND-ed with a conjunction of its CASE conditions, so a CASE condition on categorical
    columns is one more filter that selects cells, and :func:`parzen.aqp.ratios.exact` combines the
    leaves' exact totals.

    Parameters
    ----------
    queries : sequence of AggregateQuery
        Parsed queries, names as in the synopsis (:meth:`parzen.aqp.Engine.query`).
    cube : Cube
        The synopsis's exact aggregate tables.
    categories : Categories
        The synopsis's categorical columns.

    Returns
    -------
    (list, list of Totals) or None
        Per group column of the first query (GROUP BY order), its value per group as :func:`answer`'s
        frame holds them: pandas' string array where every group column is text with a value that is
        not NULL (the dtype a DataFrame infers from the texts), else the frame's column as a list; and
        per query its totals.
    """
    out = []
    masks: dict = {}  # the filters' masks, made once for the sub-queries' shared WHERE
    for query in queries:
        found = _totals(query, cube, categories, masks)
        if found is None:
            return None
        out.append(found)
    values = cube.values_with(categories.values)
    first = queries[0]
    texts = [_texts(cube, column, values[column], out[0].keys[:, k]) for k, column in enumerate(first.group_by)]
    if all(t is not None for t in texts):
        return texts, out
    frame = _frame(first, out[0].keys, cube, values, out[0].totals, False, None)
    return [frame[column].tolist() for column in first.group_by], out


def _texts(cube: Cube, column: str, column_values: list, codes: np.ndarray):
    """The values of text column ``column`` at ``codes`` as :func:`_frame` holds them (pandas' string
    array), or None where it holds them otherwise (a column that is no text, or NULLs only)."""
    strings = cube.strings(column, column_values)
    if strings is None or not codes.size or strings[1][codes].all():
        return None
    return _taken(cube, column, strings[0], codes)


def _taken(cube: Cube, column: str, strings: pd.api.extensions.ExtensionArray,
           codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """``strings.take(codes)`` (``strings``: text column ``column``'s values, :meth:`parzen.aqp.cubes.Cube.strings`),
    made once per column and codes and kept on ``cube``, the last :data:`_TEXTS_KEPT` lists of at most
    :data:`_TEXTS_SHORT` codes (the texts of a list of codes, no answer's values): each answer gets a copy,
    which shares the immutable Arrow array (2 us; a take of a few costs 30-40), so that an answer's frame
    written to leaves the kept one as it was."""
    if codes.size > _TEXTS_SHORT:
        return strings.take(codes)
    kept = cube._texts
    key = (column, codes.tobytes())
    found = kept.get(key)
    if found is None:
        if len(kept) >= _TEXTS_KEPT:
            kept.clear()
        found = kept[key] = strings.take(codes)
    return found.copy()

def _inputs(a: Aggregate, cube: Cube, values: dict[str, list], summed: set[str] | None = None) -> set[str] | None:
    """The categorical columns aggregate ``a`` multiplies by (None: the tables cannot answer it); the
    measures it reads (their sums, and counts) are added to ``summed`` where given."""
    if a.func == "combination":
        found: set[str] = set()
        for _, part in a.parts:
            needs = _inputs(part, cube, values, summed)
            if needs is None:
                return None
            found |= needs
        return found
    if a.func not in ("count", "sum", "avg"):
        return None
    if a.polynomial:
        if a.func == "count":
            return None
        found = set()
        for _, columns in a.polynomial:
            split = _split(columns, cube, values)
            if split is None:
                return None
            measure, factors = split
            if len(a.polynomial) > 1 and measure in cube.nullable:
                return None  # a NULL in one term makes the whole row NULL: cells do not tell which rows
            found |= set(factors)
            if measure is not None and summed is not None:
                summed.add(measure)
        return found
    if a.column is None or a.column in cube.measures:
        if a.column is not None and summed is not None:
            summed.add(a.column)
        return set()
    if a.column in values:  # COUNT / SUM / AVG of a categorical column: its value per cell
        return {a.column}
    return None


def _filters(members: dict[str, frozenset], ranges: dict[str, Range], values: dict[str, list], cube: Cube,
             masks: dict):
    """Per filter of a query (its IN / = ``members`` and its ``ranges``, :func:`_by_months`'), its column and
    the mask of the column's codes it admits (None: a range over values that are no numbers); a range on a
    numeric dimension compares in its exact scale
    (:meth:`parzen.aqp.cube_dimensions.NumericDimension.range_mask`).  ``masks``: as :func:`_totals`'."""
    for column, literals in members.items():
        key = ("in", column, literals)
        if key not in masks:
            masks[key] = member_mask(values[column], literals)
        yield column, masks[key]
    for column, r in ranges.items():
        yield column, _range_of(column, r, values, cube, masks)


def _range_of(column: str, r: Range, values: dict[str, list], cube: Cube, masks: dict) -> np.ndarray | None:
    """The mask of ``column``'s codes in range ``r`` (:func:`_filters`), kept in ``masks``."""
    key = ("range", column, r)
    if key not in masks:
        dimension = cube.dimensions.get(column)
        masks[key] = _range_mask(values[column], r) if dimension is None else dimension.range_mask(r)
    return masks[key]


def _comparison_filters(query: AggregateQuery, cube: Cube, masks: dict | None = None) -> dict[str, np.ndarray] | None:
    """Per comparison dimension deciding a comparison of two columns of ``query``, the mask of its codes
    that the comparisons admit (:func:`parzen.aqp.cube_comparisons.comparison_mask`); None when a
    comparison has no such dimension.  ``masks``: as :func:`_totals`'."""
    masks = {} if masks is None else masks
    admitted: dict[str, np.ndarray] = {}
    for c in query.compared:
        key = ("compared", c)
        if key not in masks:
            masks[key] = comparison_mask(cube.dimensions, c.left, c.op, c.right)
        found = masks[key]
        if found is None:
            return None
        name, mask = found
        admitted[name] = admitted[name] & mask if name in admitted else mask
    return admitted


def _by_months(query: AggregateQuery, cube: Cube, masks: dict | None = None) -> AggregateQuery:
    """``query`` with each range on a DATE column that cuts no month read as the same range on the
    column's month dimension (:mod:`parzen.aqp.cube_dimensions`): a table on the months answers it,
    and so does one on the days (they determine the months).  ``masks``: as :func:`_totals`' (the
    month dimension's mask is the one :func:`_filters` reads next)."""
    ranges = _month_ranges(query, cube, {} if masks is None else masks)
    return query if ranges is query.ranges else query.replaced(ranges=ranges)


def _month_ranges(query: AggregateQuery, cube: Cube, masks: dict) -> dict[str, Range]:
    """:func:`_by_months`' ranges (``query.ranges`` itself where none is read on months), kept in ``masks``
    for the next query of the same ranges: the sub-queries of a CASE / ratio query share their WHERE's."""
    key = ("months", *query.ranges.items())
    if key not in masks:
        masks[key] = _on_months(query.ranges, cube, masks)
    found = masks[key]
    return query.ranges if found is None else found


def _on_months(query_ranges: dict[str, Range], cube: Cube, masks: dict) -> dict[str, Range] | None:
    """:func:`_month_ranges`' ranges read anew (None: none is read on months)."""
    if not any(d.source is not None for d in cube.dimensions.values()):
        return None
    ranges = {}
    for column, r in query_ranges.items():
        month = MONTH.format(column=column)
        months = cube.dimensions.get(month)
        if months is not None and ("range", month, r) not in masks:
            masks[("range", month, r)] = months.range_mask(r)
        ranges[month if months is not None and masks[("range", month, r)] is not None else column] = r
    return None if list(ranges) == list(query_ranges) else ranges


def _covering(cube: Cube, columns: tuple[str, ...], measures: frozenset, masks: dict):
    """:meth:`parzen.aqp.cubes.Cube.covering` of ``columns`` and ``measures``, kept in ``masks`` (:func:`_totals`')
    for the next query of the same columns and measures (a CASE / ratio query's sub-queries mostly differ
    in filters only)."""
    key = ("covering", columns, measures)
    if key not in masks:
        masks[key] = cube.covering(columns, measures)
    return masks[key]


def _dimensions_usable(query: AggregateQuery, cube: Cube) -> bool:
    """Whether ``query`` uses its numeric dimensions (:mod:`parzen.aqp.cube_dimensions`) only as the
    tables can: in ranges (exact at full resolution), as factors of sums, in COUNT(col); never as a
    group column (the answer would show float64 values where DuckDB shows dates or decimals), nor
    a date as a number (summed, averaged or multiplied)."""
    if not cube.dimensions:
        return True
    if any(c in cube.dimensions for c in query.group_by):
        return False
    dates = {c for c, d in cube.dimensions.items() if d.temporal}
    if not dates:
        return True
    return not any(_numbers_read(a) & dates for a in query.aggregates)


def _numbers_read(a: Aggregate) -> set[str]:
    """The columns whose values aggregate ``a`` reads as numbers (sums, averages, products; not COUNT's).
    A function of the module, not a closure: a recursive closure is a reference cycle, which only the
    garbage collector frees (one per answer from the tables)."""
    if a.func == "combination":
        return set().union(*(_numbers_read(part) for _, part in a.parts))
    if a.polynomial:
        return {c for _, columns in a.polynomial for c in columns}
    return set() if a.func == "count" or a.column is None else {a.column}


def _passing(cube: Cube, table: CubeTable, allowed: dict[str, np.ndarray], masks: dict) -> np.ndarray:
    """The cells of ``table`` whose codes every filter admits (``allowed``: per column, the admitted codes).

    The column admitting the fewest cells is read through its index (cells by code,
    :meth:`parzen.aqp.cubes.Cube.index`), the others only on those cells: the work follows the
    cells that pass, not the table's size.

    ``masks`` (:func:`_totals`') keeps the table's last passing cells: where they were read the same way
    (the same first column, by its index both times or by every cell both times) under filters that
    ``allowed`` only narrows (every column of theirs filtered here by the same mask object, or by one
    admitting no code theirs did not), ``allowed``'s cells are those of them that pass ``allowed``'s other
    filters, in the same order: the sub-queries of a CASE / ratio query share their WHERE's cells."""
    if not allowed:
        return np.arange(table.rows.size)
    counts = {c: _cells_admitted(cube, table, c, mask, masks) for c, mask in allowed.items()}
    first = min(counts, key=counts.__getitem__)
    scan = 4 * counts[first] > table.rows.size  # most cells pass: one look-up per cell
    kept = masks.get(("cells", id(table)))
    if kept is not None and kept[0] is table and kept[2] == first and kept[3] == scan and \
            all(c in allowed and (allowed[c] is m or not (allowed[c] & ~m).any()) for c, m in kept[1].items()):
        cells = kept[4]
        for column, mask in allowed.items():
            if kept[1].get(column) is not mask and cells.size:
                cells = _narrowed(cells, mask, cube.column(table, column))
        return cells
    if scan:
        cells = np.flatnonzero(allowed[first].take(cube.column(table, first)))
    else:
        order, starts = cube.index(table, first, allowed[first].size)
        codes = np.flatnonzero(allowed[first])
        cells = np.concatenate([order[starts[k]:starts[k + 1]] for k in codes]) if codes.size else np.zeros(0, np.intp)
    for column, mask in allowed.items():
        if column != first and cells.size:
            cells = _narrowed(cells, mask, cube.column(table, column))
    masks[("cells", id(table))] = (table, allowed, first, scan, cells)
    return cells


def _narrowed(cells: np.ndarray, mask: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``cells[mask[codes[cells]]]``: the cells whose code (``codes``, a column of the table) ``mask`` admits, in
    order; ``take`` and ``compress`` skip fancy indexing's checks of its index (2x faster on 10^4 cells)."""
    return cells.compress(mask.take(codes.take(cells)))


def _cells_admitted(cube: Cube, table: CubeTable, column: str, mask: np.ndarray, masks: dict) -> int:
    """How many cells of ``table`` have a code of ``column`` that ``mask`` admits, kept in ``masks``
    (:func:`_totals`') with the mask for the next query filtering the column by the same mask object (it
    is held there, so no other array takes its id)."""
    key = ("admitted", id(table), column)
    kept = masks.get(key)
    if kept is None or kept[0] is not mask:
        kept = masks[key] = (mask, int(cube.cells_per_code(table, column, mask.size).dot(mask)))  # 2-3x a sum of a selection
    return kept[1]


def _split(columns: tuple[str, ...], cube: Cube, values: dict[str, list]) -> tuple[str | None, list[str]] | None:
    """A term's measure (summed in the tables; None: the term counts rows) and its categorical factors (read
    per cell): the measure is the one column that is no categorical column, else the first measure; None:
    the tables cannot give the term."""
    measures = [c for c in columns if c in cube.measures and c not in values] or \
        [c for c in columns if c in cube.measures][:1]
    factors = [c for c in columns if c not in measures[:1]]
    if len(measures) > 1 or any(c not in values for c in factors):
        return None
    return (measures[0] if measures else None), factors


def _aggregate(a: Aggregate, table: CubeTable, cube: Cube, values, cells: np.ndarray, group_of_cell: np.ndarray,
               groups: int, codes_of) -> np.ndarray:
    """Aggregate ``a`` per group, from the passing ``cells`` (NaN: DuckDB's NULL).

    A term whose measure has no NaN among the cells, under factors with no NULL, is added as it is (its
    cells all count): the masks that drop NULL cells would keep every cell, and the sums are the same
    float64 operations in the same order."""
    if a.func == "combination":
        return sum((k * _aggregate(part, table, cube, values, cells, group_of_cell, groups, codes_of)
                    for k, part in a.parts), np.zeros(groups))
    if a.column is not None and a.column not in cube.measures and not a.polynomial and a.func == "count":
        rows = cube.rows_per_cell(table).take(cells)
        present_value = np.array([v is not None for v in values[a.column]])[codes_of(a.column)]
        return np.bincount(group_of_cell, weights=np.where(present_value, rows, 0.0), minlength=groups)
    if a.polynomial:
        terms = a.polynomial
    elif a.column is None:
        return np.bincount(group_of_cell, weights=cube.rows_per_cell(table).take(cells),
                           minlength=groups)
    else:
        terms = ((1.0, (a.column,)),)
    split = [found for _, columns in terms if (found := _split(columns, cube, values)) is not None]  # all (_inputs)
    number = {c: cube.numbers(c, values[c]).take(codes_of(c)) for c in {c for _, factors in split for c in factors}}
    defined: np.ndarray | None = None  # the cell's categorical factors are not NULL (else the row's value is); None: all
    for c, per_cell in number.items():
        if np.isnan(cube.numbers(c, values[c])).any():  # a NULL (or no number) among the column's values
            defined = ~np.isnan(per_cell) if defined is None else defined & ~np.isnan(per_cell)
    total = np.zeros(groups)
    present = np.zeros(groups)  # per group, cells whose sum is not NULL, of the terms where not every cell counts
    every_cell_counted = False  # a term counted every cell: every group with a cell has a sum
    count: np.ndarray | None = None  # the rows per cell that COUNT / AVG count (None: the cells' rows)
    for (coefficient, _), (measure, factors) in zip(terms, split):
        if measure is None:
            term = cube.rows_per_cell(table).take(cells)
        else:
            j = table.measures.index(measure)  # the table keeps it (Cube.covering)
            term = cube.per_cell(table, f"sum {measure}", lambda j=j: np.ascontiguousarray(table.sums[:, j])).take(cells)
            if measure in cube.nullable:  # a one-term aggregate (_inputs): COUNT(m) is its non-NULL values
                count = table.counts[cells, table.nullable.index(measure)].astype(np.float64)
        if defined is None and not np.isnan(term).any():  # every cell counts
            weight: float | np.ndarray = float(coefficient)
            for c in factors:
                weight = weight * number[c]
            added = term if isinstance(weight, float) and weight == 1.0 else weight * term
            total += np.bincount(group_of_cell, weights=added, minlength=groups)
            every_cell_counted = True
            continue
        weight = np.full(cells.size, float(coefficient))
        for c in factors:
            weight = weight * (number[c] if defined is None else np.where(defined, number[c], 0.0))
        has = ~np.isnan(term) if defined is None else ~np.isnan(term) & defined
        total += np.bincount(group_of_cell, weights=np.where(has, weight * term, 0.0), minlength=groups)
        present += np.bincount(group_of_cell, weights=has, minlength=groups)
    if a.func == "sum":  # every group has a cell (its key is a cell's): where a term counted them all, each has a sum
        return total if every_cell_counted and cells.size else np.where(present > 0, total, np.nan)
    if count is None:
        count = cube.rows_per_cell(table).take(cells)
    counted = np.bincount(group_of_cell, weights=count if defined is None else np.where(defined, count, 0.0),
                          minlength=groups)
    if a.func == "count":
        return counted
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, total / np.where(counted > 0, counted, 1.0), np.nan)


def _groups_of(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` of keys in [0, ``space``): by a count per key where the space
    is small beside the keys (no sort), else by ``np.unique``."""
    if space > 4 * key.size + 4096:
        return np.unique(key, return_inverse=True)
    seen = np.bincount(key, minlength=space) > 0
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen), rank.take(key)


def _range_mask(column_values: list, r: Range) -> np.ndarray | None:
    """The codes whose value lies in ``r`` (None: a value that is no number, so the range is not over numbers)."""
    mask = np.zeros(len(column_values), dtype=bool)
    for k, v in enumerate(column_values):
        if v is None:
            continue
        if not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
            return None
        mask[k] = r.contains(float(v))
    return mask


def _frame(query: AggregateQuery, keys: np.ndarray, cube: Cube, values: dict[str, list],
           totals: dict[str, np.ndarray], with_error: bool, terms: int | None,
           spans: dict[str, tuple] | None = None) -> pd.DataFrame:
    """The answer shaped as :func:`parzen.aqp.answers.frame` shapes it (codes are in the values' sort order).

    Where every group column holds text or values that pandas keeps as objects, the frame is made at once
    from its columns' arrays, typed as pandas would infer them: a text column with a value that is not NULL
    taken from its values' string array made once (:meth:`parzen.aqp.cubes.Cube.strings`, the ``str``
    dtype), any other as its object array (:meth:`parzen.aqp.cubes.Cube.stays_object`); a
    ``pd.DataFrame`` of a dict infers and checks every column, 2-3x slower.  Otherwise (date-times, say)
    pandas infers the group columns' dtypes from their values as it does for DuckDB's answers.
    ``spans``: where given (with ``with_error``), it gets per aggregate's name (as the frame's columns, the
    last of a name) its value, low and high (float64), and the frame has no interval columns."""
    columns: dict[str, np.ndarray] = {}
    texts: dict[str, pd.api.extensions.ExtensionArray] = {}
    grouped = 0
    for item in query.select:
        if isinstance(item, str):
            grouped += 1
            codes = keys[:, query.group_by.index(item)]
            strings = cube.strings(item, values[item])
            columns[item] = cube.decoder(item, values[item])[codes]
            if strings is not None and codes.size and not strings[1][codes].all():
                texts[item] = _taken(cube, item, strings[0], codes)
            elif strings is not None or cube.stays_object(item, values[item]):  # NULLs only, no rows, or numbers
                texts[item] = columns[item]
            continue
        value = totals[item.name]
        columns[item.name] = value
        if with_error:
            bound = rounding_bound(value, terms) if terms is not None else None
            low, high = (value, value) if bound is None else (value - bound, value + bound)
            if spans is not None:  # as the frame's columns read them (contract.relative_half_width)
                spans[item.name] = tuple(np.asarray(a, dtype=np.float64) for a in (value, low, high))
            else:
                columns[f"{item.name} low"], columns[f"{item.name} high"] = low, high
    index = pd.RangeIndex(keys.shape[0])
    if len(texts) < grouped:  # a group column that pandas may type otherwise (date-times, say)
        return pd.DataFrame(columns, index=index)
    return frame_of([texts.get(name, array) for name, array in columns.items()], _column_index(cube, tuple(columns)),
                    index)


def _column_index(cube: Cube, names: tuple[str, ...]) -> pd.Index:
    """The column labels ``names`` as pandas' index of text (the dtype a DataFrame of a dict gets), an index of
    the answer's own: a view (1 us) of the one made once per list of names and kept on ``cube`` (keyed by the
    answer's columns, never by a query's text: queries that select the same columns share its labels; making
    one costs 25-60 us, 20 more reading the dtype's name, :data:`_TEXT`, read once), the last
    :data:`_LABELS_KEPT` lists.  A view shares the kept labels (immutable) but not their name, the one thing
    an answer's owner can set in place (``df.columns.name = ...``): that renames no other answer's columns."""
    kept = cube._labels
    found = kept.get(names)
    if found is None:
        if len(kept) >= _LABELS_KEPT:
            kept.clear()
        found = kept[names] = pd.Index(list(names), dtype=_TEXT)
    return found.view()


#: How many lists of column labels a cube keeps (:func:`_column_index`).
_LABELS_KEPT = 256

#: How many lists of a text column's values a cube keeps (:func:`_taken`), and the most values of one.
_TEXTS_KEPT = 256
_TEXTS_SHORT = 1024


#: The dtype of ``pd.Index(..., dtype="str")`` (pandas' text labels), read once.
_TEXT = pd.Index([], dtype="str").dtype
