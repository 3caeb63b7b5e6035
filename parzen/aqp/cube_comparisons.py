"""Comparisons of two columns as dimensions of the exact aggregate tables: ``cmp(a,b)``.

A predicate comparing two columns of a row (TPC-H Q12's ``l_commitdate < l_receiptdate``, Q5's
``c_nationkey = s_nationkey``, :mod:`parzen.aqp.row_predicates`) selects no set of cells of a table
grouped by a, b or anything else short of both at full resolution.  A *comparison dimension*
``cmp(a,b)`` is a derived column of the table (or of a join synopsis's view, :mod:`parzen.aqp.joins`):
per row the sign of a - b,

    cmp(a,b) = -1 if a < b,  0 if a = b,  +1 if a > b,  NULL if a or b is NULL,

compared as DuckDB compares the two columns in their own types
(:func:`parzen.aqp.cube_dimensions.sign_of`).  Held as a numeric dimension of three values
(:class:`parzen.aqp.cube_dimensions.NumericDimension` with ``compares=(a, b)``), a table grouping by
it has at most three times the cells of one without it, and each comparison of a and b selects its
cells exactly (:func:`comparison_mask`): ``a < b`` the code of -1, ``a <= b`` those of -1 and 0,
``a = b`` 0, ``a <> b`` -1 and +1, ``a > b`` +1, ``a >= b`` 0 and +1; ``b op a`` is ``a op' b`` with
the operator mirrored (< and >, <= and >=); NULL's code never (SQL: a comparison with a NULL side
does not hold).  The same dimension answers an equality of two keys that reference one dimension
table (``cmp(c_nationkey,s_nationkey)``: rows whose customer and supplier share a nation).

Its name, as ``Engine.build(cube=[[..., "cmp(l_commitdate,l_receiptdate)"]])`` and
:meth:`parzen.aqp.Engine.rebuild_tables` take it, is ``cmp(a,b)`` (spaces after the comma allowed);
a and b must be columns of the table (or the join's view) of comparable types: both numbers, both
DATE / TIMESTAMP, or both text (:func:`comparison_dimensions` says which are not).  The default
choice of tables (no ``cube=``) considers the comparisons of two modelled DATE columns of one table
(:func:`implied`: l_shipdate, l_commitdate, l_receiptdate of TPC-H's lineitem) only with the bytes
its greedy leaves (:func:`parzen.aqp.cubes.build_cube`).  Two keys referencing one dimension table
are not implied: a join synopsis joins each dimension once, so the second key's reference is not
known to it; list them.
Queries run here are generated from quoted identifiers read from the catalog, never user text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from .cube_dimensions import NumericDimension, sign_of
from .dates import temporal_kind

#: The name of the comparison dimension of columns a and b.
NAME = "cmp({left},{right})"
_PATTERN = re.compile(r"^cmp\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)$", re.IGNORECASE)
#: Per operator of ``a op b``, the signs of a - b it admits (-1, 0, +1: the dimension's codes 0, 1, 2).
_ADMITS = {"<": (True, False, False), "<=": (True, True, False), "=": (False, True, False),
           "<>": (True, False, True), ">": (False, False, True), ">=": (False, True, True)}
#: ``b op a`` is ``a MIRRORED[op] b``.
MIRRORED = {"<": ">", "<=": ">=", "=": "=", "<>": "<>", ">": "<", ">=": "<="}
_NUMBER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "FLOAT", "DOUBLE", "REAL"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def parsed(name: str) -> tuple[str, str] | None:
    """The two columns (a, b) a comparison dimension's name ``cmp(a,b)`` names, None for any other name."""
    found = _PATTERN.match(name)
    return None if found is None else (found.group(1), found.group(2))


def _kind(type_name: str) -> str | None:
    """What a column of DuckDB type ``type_name`` compares as: "number", "date" (DATE and TIMESTAMP),
    "text", or None (no comparison dimension takes it)."""
    if type_name in _NUMBER_TYPES or type_name.startswith("DECIMAL"):
        return "number"
    if temporal_kind(type_name) is not None:
        return "date"
    if type_name == "VARCHAR":
        return "text"
    return None


def comparison_dimensions(con, table: str, types: dict[str, str], names: Iterable[str]) -> dict[str, NumericDimension]:
    """The comparison dimensions named among ``names`` (other names are skipped), each under its
    canonical name ``cmp(a,b)`` (the columns spelled as in ``types``), with one pass over ``table``
    telling which have NULLs.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    types : dict of str to str
        Column -> DuckDB type name (a join view's columns, the rowid column left out).
    names : iterable of str
        The names listed in ``cube=`` (:func:`parzen.aqp.build.checked_views`).

    Returns
    -------
    dict of str to NumericDimension
        Values -1, 0, +1 (codes 0, 1, 2), NULL's code 3 when a or b has NULLs; ``compares=(a, b)``.

    Raises
    ------
    ValueError
        A name ``cmp(a,b)`` whose a or b is no column of ``table`` (the columns are listed), names the
        same column twice, or compares columns of types that do not compare (a date with a number or
        text, a number with text; a column that is neither number, date nor text).
    """
    spelled = {c.casefold(): c for c in types}
    pairs: dict[str, tuple[str, str]] = {}
    for name in names:
        columns = parsed(name)
        if columns is None:
            continue
        unknown = [c for c in columns if c.casefold() not in spelled]
        if unknown:
            raise ValueError(f"cube: {name!r} compares {', '.join(map(repr, unknown))}, no column of {table!r} "
                             f"(its columns: {', '.join(types)})")
        left, right = (spelled[c.casefold()] for c in columns)
        if left == right:
            raise ValueError(f"cube: {name!r} compares {left!r} with itself; name two columns, cmp(a,b)")
        kinds = [_kind(types[left]), _kind(types[right])]
        if None in kinds or kinds[0] != kinds[1]:
            raise ValueError(f"cube: {name!r} compares {left!r} ({types[left]}) with {right!r} ({types[right]}): "
                             "a comparison dimension takes two numbers, two dates / timestamps or two text columns")
        pairs[NAME.format(left=left, right=right)] = (left, right)
    if not pairs:
        return {}
    nulls = con.execute("SELECT " + ", ".join(f"COUNT(*) > COUNT({sign_of(a, b)})" for a, b in pairs.values())
                        + f" FROM {_quote(table)}").fetchone()
    signs = np.array([-1.0, 0.0, 1.0])
    return {name: NumericDimension(signs.copy(), bool(null), 0, False, compares=pair)
            for (name, pair), null in zip(pairs.items(), nulls)}


def implied(table: str, types: dict[str, str], modelled: Iterable[str], sources: dict[str, str],
            totals: dict[str, tuple[int, float]], rows: int) -> dict[str, NumericDimension]:
    """The comparison dimensions the schema implies for the default choice of tables: per pair (a, b)
    of modelled DATE columns of one database table (a before b in ``modelled``), ``cmp(a,b)``; it has
    NULLs when a or b has (their exact COUNT in ``totals`` below ``rows``), so no pass is needed.

    Parameters
    ----------
    table : str
        The table, or a join synopsis's view (its own columns' table).
    types : dict of str to str
        Column -> DuckDB type name.
    modelled : iterable of str
        The synopsis's modelled columns.
    sources : dict of str to str
        Per column of a join view, the database table it comes from (a column not named: ``table``).
    totals : dict of str to (int, float)
        Per modelled column, its exact COUNT and SUM.
    rows : int
        The table's rows.

    Returns
    -------
    dict of str to NumericDimension
    """
    dates = [c for c in modelled if types.get(c) == "DATE"]
    found = {}
    for k, a in enumerate(dates):
        for b in dates[k + 1:]:
            if sources.get(a, table) == sources.get(b, table):
                nulls = totals[a][0] < rows or totals[b][0] < rows
                found[NAME.format(left=a, right=b)] = NumericDimension(np.array([-1.0, 0.0, 1.0]), nulls, 0, False,
                                                                       compares=(a, b))
    return found


def renamed_views(views: list[list[str]], dimensions: dict[str, NumericDimension]) -> list[list[str]]:
    """``views`` (``cube=``) with each comparison dimension's name written as its canonical name (the
    key of ``dimensions``, :func:`comparison_dimensions`), so ``cmp(A, b)`` and ``cmp(a,b)`` are one."""
    canonical = {d.compares: name for name, d in dimensions.items() if d.compares is not None}
    spelled = {(a.casefold(), b.casefold()): (a, b) for a, b in canonical}

    def named(column: str) -> str:
        columns = parsed(column)
        if columns is None:
            return column
        pair = spelled.get((columns[0].casefold(), columns[1].casefold()))
        return column if pair is None else canonical[pair]

    return [[named(c) for c in v] for v in views]


def comparison_mask(dimensions: dict[str, NumericDimension], left: str, op: str,
                    right: str) -> tuple[str, np.ndarray] | None:
    """The comparison dimension that decides ``left op right`` and the mask of its codes that the
    comparison admits (module notes), or None when no dimension compares the two columns.

    Parameters
    ----------
    dimensions : dict of str to NumericDimension
        The exact tables' numeric dimensions (:attr:`parzen.aqp.cubes.Cube.dimensions`).
    left, right : str
        The compared columns, named as in the synopsis.
    op : str
        One of =, <>, <, <=, >, >=.

    Returns
    -------
    (str, numpy.ndarray of bool) or None
        The dimension's name and, per code (NULL's last), whether the comparison holds.
    """
    for a, b, written in ((left, right, op), (right, left, MIRRORED[op])):
        name = NAME.format(left=a, right=b)
        found = dimensions.get(name)
        if found is not None and found.compares == (a, b):
            admitted = [_ADMITS[written][int(v) + 1] for v in found.values]
            return name, np.array([*admitted, *([False] if found.nulls else [])], dtype=bool)
    return None
