"""Which exact aggregate tables a synopsis keeps: functional dependencies and the greedy view selection.

An exact aggregate table (a *view* of the data cube, Gray, Chaudhuri, Bosworth, Layman, Reichart,
Venkatrao, Pellow and Pirahesh, "Data cube", Data Mining and Knowledge Discovery 1, 1997) groups
every row of the table by a set of categorical columns and keeps per existing combination its rows
and the SUM of each measure (:mod:`parzen.aqp.cubes`).  A view answers every query whose columns it
holds or *determines*: a functional dependency a -> b (each value of a occurs with one value of b,
as city -> nation -> region, brand -> category -> mfgr, year-month -> year) lets a view on a roll up
to b by the exact map from a's values to b's.

Dependencies (:func:`dependencies`): a pair holds in the sample (each sampled value of a with one
value of b, a necessary condition), then is checked exactly in the table both columns come from (a
joined dimension's table is small), by one GROUPING SETS pass per table; the exact map is kept.

Selection (:func:`select_views`): the greedy algorithm of Harinarayan, Rajaraman and Ullman,
"Implementing data cubes efficiently", SIGMOD 1996, with benefit per unit space (their section 4.3):
the lattice is the sets of at most :data:`MAX_VIEW_COLUMNS` columns with no column determined by
the others; a query (a set of the lattice, all equally likely) costs the cells of the smallest
chosen view that covers it, or the table's rows when none does; each step keeps the view of the
largest benefit sum_q max(0, cost(q) - cells(v)) per byte that still fits the byte budget.  The
lattice ranges over the columns of the schema's hierarchies (a column that rolls up to another or
that another rolls up to: HRU's dimension hierarchies, their section 5), or over every categorical
column when there is none.  A view's cells are estimated as the product of its columns' numbers of
values, at most the table's rows.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np

#: A view groups by at most this many columns (beyond them its cells are as many as the rows).
MAX_VIEW_COLUMNS = 4
#: The lattice ranges over at most this many columns (the fewest values first): its sets grow as columns^4.
MAX_LATTICE_COLUMNS = 32


def sample_dependencies(codes: dict[str, np.ndarray], cardinality: dict[str, int]) -> list[tuple[str, str]]:
    """The pairs (a, b) of columns with a -> b in the sample: each sampled code of a with one code of b.

    Only pairs with at least as many values of a as of b, both of more than one value, are tried
    (a column of fewer values determines one of more only where the latter's extra values are unseen).

    Parameters
    ----------
    codes : dict of str to numpy.ndarray
        Per categorical column, its sampled rows' codes (:attr:`parzen.aqp.categories.Categories.codes`).
    cardinality : dict of str to int
        Per column, its exact number of values.

    Returns
    -------
    list of (str, str)
    """
    columns = [c for c in codes if cardinality[c] > 1]
    found = []
    for a in columns:
        code_a = codes[a].astype(np.int64)
        for b in columns:
            if a == b or cardinality[a] < cardinality[b]:
                continue
            pairs = np.unique(code_a * cardinality[b] + codes[b].astype(np.int64))
            if np.unique(pairs // cardinality[b]).size == pairs.size:
                found.append((a, b))
    return found


def exact_dependencies(found: dict[tuple[str, str], list], values: dict[str, list]) -> dict[tuple[str, str], np.ndarray]:
    """The pairs (a, b) whose combinations in the table (``found``) give each value of a one value of b,
    each with its map: per code of a, the code of b (a NULL of a, from a fact row that no dimension row
    matches, maps to b's NULL; -1: a value of a the table's pass did not see).

    Parameters
    ----------
    found : dict of (str, str) to list of ((value_a, value_b), rows)
        Per pair, its combinations in the table the columns come from (:func:`parzen.aqp.categories.grouping_sets`).
    values : dict of str to list
        Per column, its exact values in the synopsis's order of codes.

    Returns
    -------
    dict of (str, str) to numpy.ndarray
    """
    maps = {}
    for (a, b), combos in found.items():
        code_b = {v: k for k, v in enumerate(values[b])}
        code_a = {v: k for k, v in enumerate(values[a])}
        mapping = np.full(len(values[a]), -1, dtype=np.int32)
        holds = True
        for (va, vb), _ in combos:
            k = code_a.get(va)
            if k is None:  # a dimension row no fact row references
                continue
            target = code_b.get(vb, -2)
            if mapping[k] not in (-1, target) or target == -2:
                holds = False
                break
            mapping[k] = target
        if holds and None in code_a and mapping[code_a[None]] == -1:  # unmatched fact rows: NULL -> NULL
            if None not in code_b:
                continue
            mapping[code_a[None]] = code_b[None]
        if holds and (mapping >= 0).all():
            maps[(a, b)] = mapping
    return maps


def hierarchy_columns(columns: Sequence[str], dependencies, cardinality: dict[str, int]) -> list[str]:
    """The columns that take part in a strict dependency a -> b (a of more values than b): the levels of
    the schema's hierarchies; ``columns`` itself when there is none."""
    inside = {c for a, b in dependencies if cardinality[a] > cardinality[b] for c in (a, b)}
    return [c for c in columns if c in inside] or list(columns)


def select_views(columns: Sequence[str], cardinality: dict[str, int], dependencies, rows: int,
                 cell_bytes, budget: int, prior: Sequence[tuple[str, ...]] = ()) -> list[tuple[str, ...]]:
    """The views (column sets) the greedy algorithm of HRU keeps within ``budget`` bytes (module notes).

    Parameters
    ----------
    columns : sequence of str
        The lattice's columns (:func:`hierarchy_columns`).
    cardinality : dict of str to int
        Per column, its number of values.
    dependencies : collection of (str, str)
        The exact dependencies a -> b.
    rows : int
        The table's rows: the cost of a query no view covers, and the most cells a view can have.
    cell_bytes : callable
        Bytes of one cell of a view, given its columns.
    budget : int
        Bytes the views may take in all.
    prior : sequence of tuple of str
        Views chosen already (not paid out of ``budget``): the queries they cover cost their cells
        before the first step, so the greedy continues from them.

    Returns
    -------
    list of tuple of str
        The views in the order chosen (none of ``prior``).
    """
    columns = sorted(columns, key=lambda c: (cardinality[c], c))[:MAX_LATTICE_COLUMNS]
    bit = {c: 1 << k for k, c in enumerate(columns)}
    determines = {c: bit[c] for c in columns}  # each column's mask of the lattice's columns it determines
    for a, b in dependencies:
        if a in bit and b in bit:
            determines[a] |= bit[b]
    for c in columns:  # equivalent columns (a -> b and b -> a): the lattice keeps the first (of those kept)
        if any(determines[d] & bit[c] and determines[c] & bit[d] for d in columns
               if d != c and d in bit and bit[d] < bit[c]):
            del bit[c]
    kept = [c for c in columns if c in bit]
    lattice: dict[int, int] = {}  # mask -> index
    sets: list[tuple[str, ...]] = []
    cells: list[int] = []
    closures: list[int] = []
    for k in range(1, MAX_VIEW_COLUMNS + 1):
        for combo in combinations(kept, k):
            closure = 0
            for c in combo:
                closure |= determines[c]
            if any(_determined(c, combo, determines, bit) for c in combo):
                continue  # not reduced: a column of it is determined by the others
            view_cells = min(rows, int(np.prod([cardinality[c] for c in combo], dtype=np.float64)))
            if view_cells * cell_bytes(combo) > budget:
                continue
            lattice[sum(bit[c] for c in combo)] = len(sets)
            sets.append(combo)
            cells.append(view_cells)
            closures.append(closure)
    if not sets:
        return []
    covered = [_covered(closure, lattice) for closure in closures]
    cost = np.full(len(sets), float(rows))
    size = np.array(cells, dtype=np.float64)
    for view in prior:  # views of the lattice chosen before (others cover none of its reduced sets by mask)
        i = lattice.get(sum(bit.get(c, 0) for c in view)) if all(c in bit for c in view) else None
        if i is not None:
            cost[covered[i]] = np.minimum(cost[covered[i]], size[i])
    nbytes = np.array([cells[i] * cell_bytes(sets[i]) for i in range(len(sets))], dtype=np.float64)

    def per_byte(i: int) -> float:
        return float(np.maximum(cost[covered[i]] - size[i], 0.0).sum()) / nbytes[i]

    def take(i: int) -> None:
        cost[covered[i]] = np.minimum(cost[covered[i]], size[i])

    kept_prior = set(prior)
    return [sets[i] for i in lazy_greedy(per_byte, nbytes, budget, take,
                                         [i for i in range(len(sets)) if sets[i] not in kept_prior])]


def lazy_greedy(per_byte: Callable[[int], float], nbytes: np.ndarray, budget: float,
                take: Callable[[int], None], candidates: Sequence[int]) -> list[int]:
    """HRU's greedy with benefit per unit space (their section 4.3), evaluated lazily: a candidate's
    benefit only falls as others are chosen, so the heap's top is re-evaluated and chosen only when it
    still beats the next stale benefit (Minoux's accelerated greedy).

    Parameters
    ----------
    per_byte : callable
        A candidate's benefit per byte now, given its index.
    nbytes : numpy.ndarray
        Per candidate, its bytes.
    budget : float
        Bytes the chosen candidates may take in all.
    take : callable
        Called with each chosen index, before the next step (it updates what ``per_byte`` reads).
    candidates : sequence of int
        The indices that may be chosen.

    Returns
    -------
    list of int
        The chosen indices, in the order chosen.
    """
    heap = [(-per_byte(i), i) for i in candidates]
    heapq.heapify(heap)
    chosen: list[int] = []
    left = float(budget)
    while heap:
        _, i = heapq.heappop(heap)
        if nbytes[i] > left:
            continue
        now = per_byte(i)
        if now <= 0.0:
            continue
        if heap and now < -heap[0][0]:
            heapq.heappush(heap, (-now, i))
            continue
        chosen.append(i)
        left -= nbytes[i]
        take(i)
    return chosen


def _determined(c: str, combo: tuple[str, ...], determines: dict[str, int], bit: dict[str, int]) -> bool:
    return any(determines[d] & bit[c] for d in combo if d != c)


def _covered(closure: int, lattice: dict[int, int]) -> np.ndarray:
    """The indices of the lattice's sets within ``closure`` (a mask)."""
    positions = [1 << k for k in range(closure.bit_length()) if closure >> k & 1]
    found = [lattice[m] for k in range(1, MAX_VIEW_COLUMNS + 1) for combo in combinations(positions, k)
             if (m := sum(combo)) in lattice]
    return np.array(found, dtype=np.intp)
