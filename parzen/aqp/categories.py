"""Categorical columns of a synopsis: their exact values and counts, and each sampled row's value.

A synopsis answers GROUP BY and IN / = on any categorical column of its table (or of the dimensions
its join synopsis carries, :mod:`parzen.aqp.joins`), not only on the ``group_by`` columns that
stratify its sample.  For that the build keeps, per categorical column:

- its exact distinct values and the table's rows per value (a GROUP BY of every row);
- per pair of categorical columns whose cardinality product is at most :data:`PAIR_LIMIT`, the
  table's rows per existing combination (one GROUPING SETS pass; at most :data:`MAX_PAIRS` pairs:
  first the *dependent* pairs, whose sample shows fewer than half the combinations that independent
  columns would show (a hierarchy such as city -> nation, or year -> year-month: the pairs that tell
  which groups of several columns exist, :mod:`parzen.aqp.group_candidates`), then the others, each
  kind by smallest product);
- the value of every sampled row (a code into the values), drawn with the sample.

The exact tables say which groups exist: a query's answer has one row per group that exists in
the table under its categorical filters whenever one table covers every categorical column the
query reads (one column, or a pair within the limit), including groups that no sampled row fell
in (:mod:`parzen.aqp.domains` answers them).  docs/aqp.md, "GROUP BY any categorical column", says
what is guaranteed.

Categorical columns are text and boolean columns with at most :data:`CATEGORY_LIMIT` distinct
values, integer columns that the synopsis does not model with at most :data:`CATEGORY_LIMIT` too
(codes such as a dimension's year-month 199401: = / IN / ranges / GROUP BY are the only ways to
read them), modelled integer columns with at most :data:`INTEGER_CATEGORY_LIMIT` (a measure with
more values is answered by its density model), and every ``group_by`` column.
Queries run here are generated from quoted identifiers read from the catalog, never user text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, pairwise

import numpy as np
import pandas as pd

#: Text and boolean columns with at most this many distinct values are categorical.
CATEGORY_LIMIT = 1_000
#: Modelled integer columns with at most this many distinct values are categorical too (their density model
#: stays); integer columns without a density model are categorical up to :data:`CATEGORY_LIMIT`.
INTEGER_CATEGORY_LIMIT = 64
#: Pairs of categorical columns whose cardinality product is at most this keep exact counts per combination ...
PAIR_LIMIT = 20_000
#: ... at most this many pairs, dependent pairs first, then those of the smallest products (a wide star
#: schema has hundreds of pairs, and each is one more aggregate of the build's GROUPING SETS pass over every row).
MAX_PAIRS = 96
#: A pair is dependent when its sample shows fewer than this share of the combinations independent columns would.
DEPENDENT_SHARE = 0.5
#: A dependent pair is kept up to this cardinality product (its combinations, at most :data:`PAIR_LIMIT`, are
#: few: a brand names its category), any other pair up to :data:`PAIR_LIMIT`.
WIDE_PAIR_LIMIT = 1_000_000
#: A column whose approximate distinct count is within this share above its limit is counted exactly.
APPROXIMATE_MARGIN = 0.1
_TEXT_TYPES = ("VARCHAR", "BOOLEAN")
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def plain_value(v):
    """A column value as a JSON-friendly Python scalar (None for NULL)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") else v


@dataclass
class ExactTable:
    """The table's rows per existing combination of ``columns`` (one or two categorical columns).

    ``codes[i, k]`` is the code (index into :attr:`Categories.values`) of ``columns[k]`` in
    combination i, ``rows[i]`` the table's rows holding it."""

    columns: tuple[str, ...]
    codes: np.ndarray  # (combinations, len(columns)) int32
    rows: np.ndarray  # (combinations,) int64


@dataclass
class Categories:
    """A synopsis's categorical columns: exact values, exact tables and the sample's codes.

    Parameters
    ----------
    values : dict of str to list
        Per column, its distinct values (None for NULL), in the order of its codes.
    codes : dict of str to numpy.ndarray
        Per column, the code of each sampled row (int16, int32 for a column of more than 32 766
        values; the synopsis's sample order).
    tables : list of ExactTable
        One per column (its values' rows), then one per pair within :data:`PAIR_LIMIT`.
    """

    values: dict[str, list] = field(default_factory=dict)
    codes: dict[str, np.ndarray] = field(default_factory=dict)
    tables: list[ExactTable] = field(default_factory=list)

    def covering(self, columns) -> ExactTable | None:
        """The smallest exact table whose columns include all of ``columns`` (None: none does)."""
        wanted = set(columns)
        fitting = [t for t in self.tables if wanted <= set(t.columns)]
        return min(fitting, key=lambda t: t.rows.size) if fitting else None

    def warm(self) -> None:
        """Make every column's value index (:func:`parzen.aqp.value_index.index_of`, which an = / IN
        filter reads), sort ranks (:meth:`sort_ranks`) and value arrays (:meth:`value_objects`,
        :meth:`frame_values`) now, when the synopsis is loaded, not in the first query that reads the
        column (0.1-0.5 ms each for columns of 100-1000 values)) and rows per code (:meth:`code_counts`);
        they grow with the values, not with the sample (:meth:`code_rows`, which does, stays made on
        first use)."""
        from .value_index import index_of

        for column, values in self.values.items():
            index_of(values)
            self.sort_ranks(column)
            self.value_objects(column)
            self.frame_values(column)
            self.code_counts(column)

    def sort_ranks(self, column: str) -> np.ndarray | None:
        """Per code of ``column``, its value's rank in the order of an answer's rows (ascending as
        DuckDB's ORDER BY, NULLs last: :func:`parzen.aqp.answers._row_order`; equal values share a
        rank), made once per column; None where Python cannot order the values so (a NaN, or values
        of types that do not compare).

        Parameters
        ----------
        column : str
            A categorical column.

        Returns
        -------
        numpy.ndarray or None
            One rank per code (int64).
        """
        kept = self.__dict__.setdefault("_sort_ranks", {})
        if column not in kept:
            kept[column] = _sort_ranks(self.values[column])
        return kept[column]

    def code_rows(self, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sampled rows by code of ``column``: the rows sorted by code (ascending rows within a
        code), where each code's rows start there, and how many each code has; made once per column.

        Parameters
        ----------
        column : str
            A categorical column.

        Returns
        -------
        order, starts, counts : numpy.ndarray
        """
        kept = self.__dict__.setdefault("_code_rows", {})
        if column not in kept:
            counts = self.code_counts(column)
            kept[column] = (np.argsort(self.codes[column], kind="stable"), np.cumsum(counts) - counts, counts)
        return kept[column]

    def code_counts(self, column: str) -> np.ndarray:
        """How many sampled rows hold each code of ``column`` (one count per value), made once per column
        (:meth:`warm` makes them all: a query's filters pick their most selective column by these
        without sorting the sample by the others, :meth:`code_rows`).

        Parameters
        ----------
        column : str
            A categorical column.

        Returns
        -------
        numpy.ndarray
            One count per code.
        """
        kept = self.__dict__.setdefault("_code_counts", {})
        if column not in kept:
            kept[column] = np.bincount(self.codes[column], minlength=len(self.values[column]))
        return kept[column]

    def value_objects(self, column: str) -> np.ndarray:
        """``values[column]`` as a numpy array of the same Python objects (to index by codes), made once.

        Parameters
        ----------
        column : str
            A categorical column.

        Returns
        -------
        numpy.ndarray
            dtype object.
        """
        kept = self.__dict__.setdefault("_value_objects", {})
        if column not in kept:
            values = self.values[column]
            kept[column] = np.empty(len(values), dtype=object)
            kept[column][:] = values
        return kept[column]

    def frame_values(self, column: str):
        """``values[column]`` as the array a DataFrame column of some of them holds (text: pandas'
        inferred string array; integers: int64), to ``take`` by codes, made once; None where the
        column's dtype would depend on which values it holds (NULLs, other or mixed types).

        Parameters
        ----------
        column : str
            A categorical column.

        Returns
        -------
        pandas.api.extensions.ExtensionArray, numpy.ndarray or None
        """
        kept = self.__dict__.setdefault("_frame_values", {})
        if column not in kept:
            values = self.values[column]
            kept[column] = None
            if values and all(type(v) is str for v in values):
                kept[column] = pd.Series(values).array
            elif values and all(type(v) is int and -(2 ** 63) <= v < 2 ** 63 for v in values):
                kept[column] = np.array(values, dtype=np.int64)
        return kept[column]

    # --- storage ------------------------------------------------------------------------------

    def meta(self) -> dict:
        return {"values": self.values, "tables": [list(t.columns) for t in self.tables]}

    def arrays(self) -> dict[str, np.ndarray]:
        out = {f"code/{c}": v for c, v in self.codes.items()}
        for k, t in enumerate(self.tables):
            out[f"exact/{k}/codes"], out[f"exact/{k}/rows"] = t.codes, t.rows
        return out

    @classmethod
    def from_stored(cls, meta: dict, arrays: dict[str, np.ndarray]) -> Categories:
        tables = [ExactTable(tuple(columns), arrays[f"exact/{k}/codes"], arrays[f"exact/{k}/rows"])
                  for k, columns in enumerate(meta["tables"])]
        codes = {c: arrays[f"code/{c}"] for c in meta["values"]}
        return cls({c: list(v) for c, v in meta["values"].items()}, codes, tables)


def discover(con, table: str, types: dict[str, str], group_by, modelled=()) -> list[str]:
    """The categorical columns of ``table`` (see the module's notes), in the table's order.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table (or the temporary view of a join synopsis).
    types : dict of str to str
        Column -> DuckDB type name.
    group_by : sequence of str
        Columns that are categorical whatever their number of values (the build's group columns,
        a join's foreign keys into small dimensions).
    modelled : collection of str
        The numeric columns the synopsis models as densities: an integer one is categorical up to
        :data:`INTEGER_CATEGORY_LIMIT` values, any other integer column up to :data:`CATEGORY_LIMIT`.

    Returns
    -------
    list of str
    """
    candidates = [c for c, t in types.items() if c not in group_by and (t in _TEXT_TYPES or t in _INTEGER_TYPES)]
    chosen = set(group_by)
    if candidates:
        parts = ", ".join(f"approx_count_distinct({_quote(c)})" for c in candidates)
        counts = con.execute(f"SELECT {parts} FROM {_quote(table)}").fetchone()
        near = []  # HyperLogLog's estimate is off by a few per cent: near the limit, count exactly
        limits = {c: _limit(types[c], c in modelled) for c in candidates}
        for c, n in zip(candidates, counts):
            limit = limits[c]
            if int(n or 0) <= limit:
                chosen.add(c)
            elif int(n or 0) <= limit * (1 + APPROXIMATE_MARGIN):
                near.append(c)
        if near:
            exact = con.execute(f"SELECT {', '.join(f'COUNT(DISTINCT {_quote(c)})' for c in near)} "
                                f"FROM {_quote(table)}").fetchone()
            chosen.update(c for c, n in zip(near, exact) if int(n) <= limits[c])
    return [c for c in types if c in chosen]


def _limit(duckdb_type: str, modelled: bool) -> int:
    return INTEGER_CATEGORY_LIMIT if modelled and duckdb_type in _INTEGER_TYPES else CATEGORY_LIMIT


def value_order(value) -> tuple:
    """The order of a categorical column's values (its codes): NULL last, then by type, then by value."""
    return value is None, str(type(value)), value


def exact_tables(con, table: str, columns: list[str], sampled: dict[str, np.ndarray] | None = None
                 ) -> tuple[dict[str, list], list[ExactTable]]:
    """The exact values of ``columns`` and their exact tables (one per column, one per pair within
    :data:`PAIR_LIMIT`, at most :data:`MAX_PAIRS`), from two GROUPING SETS passes over ``table``.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table (or a join synopsis's view).
    columns : list of str
        Its categorical columns.
    sampled : dict of str to numpy.ndarray, optional
        Per column, its sampled rows' values: the pairs the sample shows dependent come first
        (:func:`pair_order`); without it, pairs go by smallest product.

    Returns
    -------
    values : dict of str to list
        Per kept column, its values.
    tables : list of ExactTable
    """
    singles = grouping_sets(con, table, columns, [(c,) for c in columns])
    values: dict[str, list] = {}
    tables = []
    for c in columns:  # kept even when the approximate count was low: the synopsis's fingerprint covers them
        found = singles[(c,)]
        found.sort(key=lambda row: value_order(row[0][0]))
        values[c] = [key[0] for key, _ in found]
        tables.append(ExactTable((c,), np.arange(len(found), dtype=np.int32).reshape(-1, 1),
                                 np.array([n for _, n in found], dtype=np.int64)))
    kept = list(values)
    def product(pair):
        return len(values[pair[0]]) * len(values[pair[1]])

    pairs = pair_order(list(combinations(kept, 2)), values, sampled)[:MAX_PAIRS]
    if pairs:
        found_pairs = grouping_sets(con, table, kept, pairs)
        code = {c: {v: k for k, v in enumerate(values[c])} for c in kept}
        for p in pairs:  # combinations in code order: DuckDB returns groups in any order, a build is reproducible
            if len(found_pairs[p]) > PAIR_LIMIT:  # a wide dependent pair with more combinations than its sample showed
                continue
            rows = sorted((tuple(code[c][v] for c, v in zip(p, key)), n) for key, n in found_pairs[p])
            codes = np.array([k for k, _ in rows], dtype=np.int32).reshape(-1, 2)
            tables.append(ExactTable(p, codes, np.array([n for _, n in rows], dtype=np.int64)))
    return values, tables


def pair_order(pairs: list[tuple[str, str]], values: dict[str, list],
               sampled: dict[str, np.ndarray] | None) -> list[tuple[str, str]]:
    """The pairs of ``pairs`` the build may keep, in the order it keeps them: dependent pairs (cardinality
    product up to :data:`WIDE_PAIR_LIMIT`) first, then the others (product up to :data:`PAIR_LIMIT`),
    each by smallest product (ties in the given order).

    A pair (a, b) is dependent when its n sampled rows show fewer than :data:`DEPENDENT_SHARE` of
    the distinct combinations that independent columns with the sample's frequencies f_i, g_j
    would show, sum_ij 1 - (1 - f_i g_j)^n (each combination's chance to be seen at least once),
    and at most :data:`PAIR_LIMIT` combinations.

    Parameters
    ----------
    pairs : list of (str, str)
        Pairs of categorical columns.
    values : dict of str to list
        Per column, its exact values.
    sampled : dict of str to numpy.ndarray or None
        Per column, the sampled rows' values (None: no pair is judged dependent).

    Returns
    -------
    list of (str, str)
    """
    def product(pair):
        return len(values[pair[0]]) * len(values[pair[1]])

    codes = sample_codes({c: values[c] for c in {c for p in pairs for c in p}}, sampled) if sampled and pairs else {}
    n = next(iter(codes.values())).size if codes else 0

    def dependent(pair):
        if n == 0 or product(pair) > WIDE_PAIR_LIMIT:
            return False
        a, b = codes[pair[0]].astype(np.int64), codes[pair[1]].astype(np.int64)
        seen = int(np.count_nonzero(np.bincount(a * len(values[pair[1]]) + b, minlength=product(pair))))
        if seen > PAIR_LIMIT or seen >= DEPENDENT_SHARE * min(product(pair), n):  # expected <= min(product, n)
            return False
        f, g = np.bincount(a) / n, np.bincount(b) / n
        f, g = f[f > 0], g[g > 0]
        expected = float((1.0 - (1.0 - np.outer(f, g)) ** n).sum())
        return seen <= PAIR_LIMIT and seen < DEPENDENT_SHARE * expected

    judged = [(not dependent(p), product(p), p) for p in pairs]
    return [p for other, size, p in sorted(judged, key=lambda j: j[:2]) if size <= (PAIR_LIMIT if other else WIDE_PAIR_LIMIT)]


def grouping_sets(con, table: str, columns: list[str], sets: Sequence[tuple[str, ...]]) -> dict[tuple, list]:
    """Per grouping set, its (key, rows) pairs: one GROUP BY GROUPING SETS pass over ``table``."""
    columns = [c for c in columns if any(c in s for s in sets)]  # GROUPING() takes grouped columns only
    position = {c: k for k, c in enumerate(columns)}
    listed = ", ".join(_quote(c) for c in columns)
    grouping = ", ".join("(" + ", ".join(_quote(c) for c in s) + ")" for s in sets)
    result = con.execute(f"SELECT {listed}, GROUPING({listed}) AS parzen_set, COUNT(*) FROM {_quote(table)} "
                         f"GROUP BY GROUPING SETS ({grouping})").fetchall()
    width = len(columns)
    by_mask = {sum(1 << (width - 1 - position[c]) for c in columns if c not in s): s for s in sets}
    out: dict[tuple, list] = {s: [] for s in sets}
    for row in result:
        s = by_mask[int(row[width])]
        out[s].append((tuple(plain_value(row[position[c]]) for c in s), int(row[width + 1])))
    return out


def sample_codes(values: dict[str, list], sampled: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per column, the code of each sampled row's value (``sampled``: column -> its values in the sample's order)."""
    codes: dict[str, np.ndarray] = {}
    for c, known in values.items():
        code = {v: k for k, v in enumerate(known)}
        nan_code = code.get(None, -1)
        dtype = np.int16 if len(known) < np.iinfo(np.int16).max else np.int32  # 2 bytes a row
        codes[c] = np.array([nan_code if (v := plain_value(x)) is None else code.get(v, -1) for x in sampled[c]],
                            dtype=dtype)
        if (codes[c] < 0).any():  # a value the exact pass did not see: the table changed while building
            raise RuntimeError(f"column {c!r}: a sampled value is missing from its exact values (did the table "
                               "change during the build?); build again")
    return codes


def matches(value, literal) -> bool:
    """Whether a stored categorical ``value`` equals a query's ``literal`` (text as text, numbers as numbers)."""
    if value is None:
        return False
    if isinstance(literal, str) or isinstance(value, str):
        return str(value) == str(literal)
    try:
        return math.isclose(float(value), float(literal), rel_tol=0.0, abs_tol=0.0)
    except (TypeError, ValueError):
        return False


def _sort_ranks(values: list) -> np.ndarray | None:
    """:meth:`Categories.sort_ranks` of one column's values."""
    from .answers import _row_order

    if any(isinstance(v, float) and math.isnan(v) for v in values):  # Python sorts NaN by the order met
        return None
    keys = [_row_order((v,)) for v in values]
    try:
        order = sorted(range(len(values)), key=keys.__getitem__)
    except TypeError:
        return None
    ranks = np.zeros(len(values), dtype=np.int64)
    for before, code in pairwise(order):
        ranks[code] = ranks[before] + (keys[before] < keys[code])
    return ranks
