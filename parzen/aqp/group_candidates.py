"""Every group of a GROUP BY over categorical columns that no single exact table covers (issue 19, item 3(c)).

The build keeps exact tables of one column and of pairs of columns (:mod:`parzen.aqp.categories`).
When a query groups by three or more categorical columns (or by a pair the build did not keep),
no table lists the groups that exist.  But every existing group, with the values its rows have in
the query's other categorical columns, shows up in *every* exact table over those columns: its
value in each column is an existing value the query's filters admit, and each pair of its values
is an existing combination of that pair's table (when the build kept it).  The *candidates* are
the combinations of admitted values that pass every such table: a superset of the existing groups
(a join of the tables, Yannakakis-style, column by column), so no existing group is missed, while a
candidate may not exist (its rows 0).

For each candidate the tables give an upper bound on its rows: the smallest, over the tables whose
columns it groups by (and the filtered columns), of their rows in its values (summed over the
filtered values the query admits).  A candidate with no sampled row is answered by
:mod:`parzen.aqp.domains` with intervals that always hold, as a group of known size, but from 0 to
that bound (or to the rows a group can have and still be missed by the sample at the intervals'
level, :func:`parzen.aqp.domains.unsampled_rows_bound`, if fewer): COUNT in [0, U], SUM in
U [min(0, MIN), max(0, MAX)], AVG in [MIN, MAX]; its point
value is the tree (Chow-Liu) estimate of its rows from the pair tables that connect its columns,
prod_edges N(u, v) / prod_nodes N(w)^(deg w - 1), scaled so that the candidates' estimates add up to
the domain's estimated rows, and capped at U (docs/aqp.md, "GROUP BY any categorical column").

When the join would exceed :data:`CANDIDATE_LIMIT` combinations the candidates are not formed: the
answer then holds the groups found in the sample, and says so (:data:`LISTED`).
"""

from __future__ import annotations

import numpy as np

from .categories import Categories, ExactTable

#: More candidate combinations than this (at any step of the join) are not formed.
CANDIDATE_LIMIT = 1_000_000
#: ``DataFrame.attrs`` key: how the answer's list of groups relates to the groups that exist:
#: "exact" (the same list: an exact table covers the query, or strata), "superset" (every existing
#: group, and maybe some that do not exist, with rows 0 in truth), "sampled" (those found in the
#: sample: an existing group may be missing).
LISTED = "groups_listed"


class Candidates:
    """The candidate groups of a query: keys (mixed radix of the GROUP BY codes), upper bounds on
    their rows, and the tree estimates of their rows.

    Parameters
    ----------
    keys : numpy.ndarray
        int64 group keys (mixed radix of the codes of the GROUP BY columns, as
        :func:`parzen.aqp.domains._mixed_radix`), sorted.
    bounds : numpy.ndarray
        Per key, an upper bound on the table's rows in the group under the query's categorical filters.
    tree : numpy.ndarray
        Per key, the tree estimate of its rows (unscaled).
    """

    def __init__(self, keys: np.ndarray, bounds: np.ndarray, tree: np.ndarray) -> None:
        self.keys, self.bounds, self.tree = keys, bounds, tree


def candidates(group_by: tuple[str, ...], allowed: dict[str, np.ndarray], categories: Categories,
               radix: list[int]) -> Candidates | None:
    """The candidate groups of a GROUP BY over ``group_by`` under the filters ``allowed`` (module notes).

    Parameters
    ----------
    group_by : tuple of str
        The GROUP BY columns (categorical).
    allowed : dict of str to numpy.ndarray
        Per categorical column the query reads (its GROUP BY and filtered columns), per code
        whether its filters admit the value.
    categories : Categories
        The synopsis's categorical columns and exact tables.
    radix : list of int
        Per GROUP BY column, its number of values.

    Returns
    -------
    Candidates or None
        None: the join would pass :data:`CANDIDATE_LIMIT` combinations.
    """
    columns = list(allowed)
    singles = {t.columns[0]: t for t in categories.tables if len(t.columns) == 1}
    admitted = {c: allowed[c] & _present(singles[c], len(allowed[c])) for c in columns}
    pairs = [t for t in categories.tables if len(t.columns) == 2 and set(t.columns) <= set(columns)]
    state = _join(columns, admitted, pairs)
    if state is None:
        return None
    chosen, rows = state
    position = {c: k for k, c in enumerate(chosen)}
    keys = np.zeros(rows.shape[0], dtype=np.int64)
    for g, r in zip(group_by, radix):
        keys = keys * r + rows[:, position[g]]
    keys = np.unique(keys)
    codes = _decode(keys, radix)
    bounds = np.full(keys.size, np.inf)
    for table in [singles[g] for g in group_by] + pairs:
        grouped = [c for c in table.columns if c in group_by]
        if grouped:
            bounds = np.minimum(bounds, _table_bound(table, grouped, group_by, codes, admitted))
    tree = _tree_estimate(group_by, codes, admitted, singles, pairs)
    return Candidates(keys, bounds, np.minimum(tree, bounds))


def _present(single: ExactTable, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=bool)
    out[single.codes[single.rows > 0, 0]] = True
    return out


def _admitted_rows(table: ExactTable, admitted: dict[str, np.ndarray]) -> np.ndarray:
    keep = np.ones(table.rows.size, dtype=bool)
    for k, c in enumerate(table.columns):
        keep &= admitted[c][table.codes[:, k]]
    return keep


def _join(columns: list[str], admitted: dict[str, np.ndarray], pairs: list[ExactTable]):
    """The combinations of admitted codes over ``columns`` that pass every pair table: (column
    order, (combinations, columns) int64 codes), or None past :data:`CANDIDATE_LIMIT`."""
    remaining = sorted(columns, key=lambda c: int(admitted[c].sum()))
    first = remaining.pop(0)
    chosen = [first]
    rows = np.flatnonzero(admitted[first]).astype(np.int64).reshape(-1, 1)
    while remaining:
        def links(c):
            return sum(1 for t in pairs if c in t.columns and set(t.columns) - {c} <= set(chosen))
        nxt = max(remaining, key=lambda c: (links(c), -int(admitted[c].sum())))
        remaining.remove(nxt)
        linking = [t for t in pairs if nxt in t.columns and set(t.columns) - {nxt} <= set(chosen)]
        if linking:  # extend along the first table, filter by the others
            extended = _extend(rows, chosen, nxt, linking[0], admitted)
            if extended is None:
                return None
            rows = extended
            for t in linking[1:]:
                rows = rows[_passes(rows, chosen, nxt, t)]
        else:
            values = np.flatnonzero(admitted[nxt]).astype(np.int64)
            if rows.shape[0] * values.size > CANDIDATE_LIMIT:
                return None
            rows = np.column_stack([np.repeat(rows, values.size, axis=0), np.tile(values, rows.shape[0])])
        if rows.shape[0] > CANDIDATE_LIMIT:
            return None
        chosen.append(nxt)
    return chosen, rows


def _extend(rows: np.ndarray, chosen: list[str], new: str, table: ExactTable, admitted) -> np.ndarray | None:
    """``rows`` joined with ``table`` (a pair of one chosen column and ``new``) on the chosen column
    (None: more than :data:`CANDIDATE_LIMIT` combinations)."""
    old = table.columns[0] if table.columns[1] == new else table.columns[1]
    k_old, k_new = table.columns.index(old), table.columns.index(new)
    keep = _admitted_rows(table, admitted)
    left, right = table.codes[keep, k_old].astype(np.int64), table.codes[keep, k_new].astype(np.int64)
    order = np.argsort(left, kind="stable")
    left, right = left[order], right[order]
    at = rows[:, chosen.index(old)]
    start, stop = np.searchsorted(left, at, "left"), np.searchsorted(left, at, "right")
    count = stop - start
    if int(count.sum()) > CANDIDATE_LIMIT:
        return None
    repeated = np.repeat(np.arange(rows.shape[0]), count)
    offsets = np.arange(repeated.size) - np.repeat(np.cumsum(count) - count, count)
    return np.column_stack([rows[repeated], right[np.repeat(start, count) + offsets]])


def _passes(rows: np.ndarray, chosen: list[str], new: str, table: ExactTable) -> np.ndarray:
    """Whether each row's pair of values in ``table``'s columns is one of its combinations."""
    order = [*chosen, new]
    a, b = (order.index(c) for c in table.columns)
    width = int(max(table.codes[:, 1].max(initial=0), rows[:, b].max(initial=0))) + 1
    existing = table.codes[:, 0].astype(np.int64) * width + table.codes[:, 1]
    return np.isin(rows[:, a] * width + rows[:, b], existing)


def _decode(keys: np.ndarray, radix: list[int]) -> np.ndarray:
    codes = np.zeros((keys.size, len(radix)), dtype=np.int64)
    rest = keys.copy()
    for k in range(len(radix) - 1, -1, -1):
        rest, codes[:, k] = np.divmod(rest, radix[k])
    return codes


def _table_bound(table: ExactTable, grouped: list[str], group_by, codes: np.ndarray, admitted) -> np.ndarray:
    """Per candidate, ``table``'s rows in its values of ``grouped`` (summed over the admitted values of
    the table's other column): an upper bound on the candidate's rows."""
    keep = _admitted_rows(table, admitted)
    sizes = [int(admitted[c].size) for c in grouped]
    own = np.zeros(int(keep.sum()), dtype=np.int64)
    wanted = np.zeros(codes.shape[0], dtype=np.int64)
    for c, size in zip(grouped, sizes):
        own = own * size + table.codes[keep, table.columns.index(c)]
        wanted = wanted * size + codes[:, group_by.index(c)]
    unique, inverse = np.unique(own, return_inverse=True)
    if unique.size == 0:
        return np.zeros(codes.shape[0])
    rows = np.bincount(inverse, weights=table.rows[keep].astype(np.float64), minlength=unique.size)
    at = np.minimum(np.searchsorted(unique, wanted), unique.size - 1)
    return np.where(unique[at] == wanted, rows[at], 0.0)


def _tree_estimate(group_by, codes: np.ndarray, admitted, singles: dict[str, ExactTable],
                   pairs: list[ExactTable]) -> np.ndarray:
    """Per candidate, prod_edges N(u, v) / prod_nodes N(w)^(deg w - 1) over a spanning forest of the
    pair tables among the GROUP BY columns (unconnected parts multiply as independent: their
    estimates are relative, and the caller scales them to the domain's rows)."""
    log = np.zeros(codes.shape[0])
    component = {g: g for g in group_by}

    def root(c):
        while component[c] != c:
            c = component[c]
        return c

    degree = dict.fromkeys(group_by, 0)
    for t in sorted((t for t in pairs if set(t.columns) <= set(group_by)), key=lambda t: t.rows.size):
        a, b = t.columns
        if root(a) == root(b):
            continue
        component[root(a)] = root(b)
        degree[a] += 1
        degree[b] += 1
        log += np.log(np.maximum(_table_bound(t, [a, b], group_by, codes, admitted), 1e-300))
    for g in group_by:
        if degree[g] != 1:
            log -= (degree[g] - 1) * np.log(np.maximum(_table_bound(singles[g], [g], group_by, codes, admitted), 1e-300))
    return np.exp(log)
