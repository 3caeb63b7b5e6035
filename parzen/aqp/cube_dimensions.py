"""Numeric columns as dimensions of the exact aggregate tables: dates, integers and decimals of few values.

The exact aggregate tables (:mod:`parzen.aqp.cubes`) group rows by categorical columns; a range on a
modelled numeric column (``lo_quantity < 25``, ``l_discount BETWEEN 0.05 AND 0.07``,
``o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1994-01-01' + INTERVAL 1 YEAR``) selects
no set of their cells.  A *numeric dimension* is such a column held at full resolution: each of its
distinct values is one code, so a table grouping by it has one cell per value (and combination of
the other columns), and a range selects exactly the cells whose value lies in it.

Which columns (:func:`find`): the synopsis's modelled numeric columns that are not categorical
already, of an exact type (DATE, read as days since 1970-01-01 as :mod:`parzen.aqp.dates` reads it;
an integer type; DECIMAL(p, s)), with more than one distinct value and at most
:data:`NUMBER_LIMIT` (:data:`DATE_LIMIT` for dates and whole numbers, integers and DECIMAL(p, 0):
about eleven years of days, as an integer key of days such as TPC-DS's ``ss_sold_date_sk`` holds).  Floating-point and
TIMESTAMP columns are never dimensions (their values are rarely few, and a range over them would
need float equality with DuckDB's).

A DATE column has a *month* dimension too, ``<column>@month`` (when it has more than
:data:`MONTH_AFTER_DAYS` days, and at most :data:`NUMBER_LIMIT` months): its codes are the months
(their first days), so a table on it has about 30 times fewer cells than one on the days.  It holds
the column at a coarser resolution, so it answers only a range that cuts no month: one whose every
month lies wholly inside or wholly outside it (``o_orderdate >= DATE '1994-01-01' AND o_orderdate <
DATE '1995-01-01'``, TPC-H's ranges all are); any other range is answered from a table on the days or
not from the tables (:meth:`NumericDimension.range_mask` returns None).  The days determine the
months (:func:`dependencies`): a table on the days answers a month's range too.

Comparisons (:meth:`NumericDimension.range_mask`) are made in the column's exact scale: a DECIMAL(p, s)
value v and a bound b are compared as the integers v * 10^s and b * 10^s, the latter snapped to the
nearest integer when it lies within float64 round-off of it (a literal 0.07 read as a double is the
decimal 0.07 at scale 2), so that a bound equal to a value is equal, as in DuckDB's DECIMAL
comparison.  Integers and dates (scale 0) compare as float64 numbers, which hold them exactly (a
date's bound may have a fraction of a day: a TIMESTAMP constant).
Queries run here are generated from quoted identifiers read from the catalog, never user text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from .dates import DATE, as_double, temporal_kind
from .sql import Range

#: A modelled DECIMAL column is a dimension with at most this many distinct values.
NUMBER_LIMIT = 1_000
#: A DATE column is a dimension with at most this many distinct days, a whole-number column with at most this many values.
DATE_LIMIT = 4_096
#: A DATE column of more than this many days also has a month dimension (``<column>@month``).
MONTH_AFTER_DAYS = 62
#: The name of a DATE column's month dimension.
MONTH = "{column}@month"
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
#: HyperLogLog's estimate is off by a few per cent: columns up to this factor past their limit are counted exactly.
_APPROXIMATE_MARGIN = 1.1


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class NumericDimension:
    """A numeric column held at full resolution by the exact aggregate tables.

    Parameters
    ----------
    values : numpy.ndarray
        Its distinct non-NULL values, ascending, as float64 (days since 1970-01-01 for a DATE): value k
        has code k.
    nulls : bool
        Whether it has NULLs (code ``values.size``).
    scale : int
        Its decimal digits: s of DECIMAL(p, s), 0 for integers and dates.
    temporal : bool
        Whether it is a DATE (its values are no numbers to multiply or sum).
    highs : numpy.ndarray, optional
        For a coarser resolution (a month dimension), per code the last value its bin can hold (``values``
        are then the bins' first values); None: full resolution.
    source : str, optional
        For a month dimension, the DATE column it bins; None: the dimension is its own column.
    compares : tuple of (str, str), optional
        For a comparison dimension (:mod:`parzen.aqp.cube_comparisons`), the two columns (a, b) whose
        sign(a - b) it holds (values -1, 0, +1; NULL when either is NULL); None: it is no comparison.
    """

    values: np.ndarray
    nulls: bool
    scale: int
    temporal: bool
    highs: np.ndarray | None = None
    source: str | None = None
    compares: tuple[str, str] | None = None

    @property
    def size(self) -> int:
        """Its number of codes (the NULL one included)."""
        return self.values.size + int(self.nulls)

    def as_list(self) -> list:
        """Its values in the order of their codes, NULL as None (as a categorical column's values)."""
        return [*map(float, self.values), *([None] if self.nulls else [])]

    def codes(self, numbers: Iterable[float | None]) -> np.ndarray:
        """The codes of ``numbers`` (values of the column as float64; None: NULL).

        Raises
        ------
        ValueError
            A number that is not one of the column's values (the table changed since its values were read).
        """
        read = np.array([np.nan if v is None else v for v in numbers], dtype=np.float64)
        null = np.isnan(read)
        codes = np.minimum(np.searchsorted(self.values, read), max(self.values.size - 1, 0))
        if null.any() and not self.nulls:
            raise ValueError("a NULL in a numeric dimension read as having none: the table changed during the "
                             "build; build again")
        if (self.values[codes][~null] != read[~null]).any():
            raise ValueError("a value that is not among the numeric dimension's values: the table changed during "
                             "the build; build again")
        return np.where(null, self.values.size, codes).astype(np.int64)

    def range_mask(self, r: Range) -> np.ndarray | None:
        """The codes whose value lies in ``r``, compared in the column's exact scale (module notes); NULL's
        code never.  Of a coarser resolution, the codes whose bin lies wholly in ``r``, or None when a bin
        lies partly in it (the tables cannot tell its rows apart).

        Parameters
        ----------
        r : Range
            The query's range on the column (bounds as float64, dates folded to days).

        Returns
        -------
        numpy.ndarray of bool, of :attr:`size` entries, or None
        """
        inside = self._in_range(self.values, r)
        if self.highs is not None:
            lows_in, highs_in = inside, self._in_range(self.highs, r)
            below = r.low is not None and (self.highs < r.low) | ((self.highs == r.low) & (not r.low_inclusive))
            above = r.high is not None and (self.values > r.high) | ((self.values == r.high) & (not r.high_inclusive))
            inside = lows_in & highs_in  # a range is convex: both ends of a bin in it, the bin in it
            if not (inside | below | above).all():
                return None
        return np.concatenate([inside, np.zeros(1, dtype=bool)]) if self.nulls else inside  # a new array either way

    def _in_range(self, values: np.ndarray, r: Range) -> np.ndarray:
        factor = 10.0 ** self.scale
        units = np.rint(values * factor) if self.scale else values
        mask = None  # each comparison makes a new array: none of ones to AND them into (3 numpy calls, not 5)
        if r.low is not None:
            low = _in_scale(r.low, factor, self.scale)
            mask = (units >= low) if r.low_inclusive else (units > low)
        if r.high is not None:
            high = _in_scale(r.high, factor, self.scale)
            below_high = (units <= high) if r.high_inclusive else (units < high)
            mask = below_high if mask is None else mask & below_high
        return np.ones(values.size, dtype=bool) if mask is None else mask

    # --- storage ------------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + (self.highs.nbytes if self.highs is not None else 0)

    def meta(self) -> dict:
        return {"nulls": self.nulls, "scale": self.scale, "temporal": self.temporal, "source": self.source,
                **({"compares": list(self.compares)} if self.compares is not None else {})}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"values": self.values, **({"highs": self.highs} if self.highs is not None else {})}

    @classmethod
    def from_stored(cls, meta: dict, arrays: dict[str, np.ndarray]) -> NumericDimension:
        highs = arrays.get("highs")
        return cls(np.asarray(arrays["values"], dtype=np.float64), bool(meta["nulls"]), int(meta["scale"]),
                   bool(meta["temporal"]), None if highs is None else np.asarray(highs, dtype=np.float64),
                   meta.get("source"), tuple(meta["compares"]) if meta.get("compares") else None)


def _in_scale(bound: float, factor: float, scale: int) -> float:
    """``bound`` in units of the scale (times 10^scale), snapped to the nearest integer within a few ulps of it."""
    if not scale:
        return float(bound)
    units = float(bound) * factor
    nearest = round(units)
    return float(nearest) if abs(units - nearest) <= 4 * np.finfo(np.float64).eps * max(1.0, abs(units)) else units


def scale_of(type_name: str) -> int | None:
    """The decimal digits of a DuckDB type that can be a numeric dimension (0 for integers and DATE), None otherwise."""
    if type_name in _INTEGER_TYPES or type_name == "DATE":
        return 0
    if type_name.startswith("DECIMAL(") and type_name.endswith(")"):
        return int(type_name[len("DECIMAL("):-1].split(",")[1])
    return None


def find(con, table: str, types: dict[str, str], modelled: Iterable[str],
         categorical: Iterable[str]) -> dict[str, NumericDimension]:
    """The numeric dimensions of ``table`` (module notes), in the order of ``modelled``.

    One pass estimates the candidates' distinct values (``approx_count_distinct``), one more reads
    the distinct values of those near or below their limit.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    types : dict of str to str
        Column -> DuckDB type name.
    modelled : iterable of str
        The synopsis's modelled numeric columns.
    categorical : iterable of str
        Its categorical columns (never numeric dimensions: they are dimensions already).

    Returns
    -------
    dict of str to NumericDimension
    """
    skip = set(categorical)
    candidates = [c for c in modelled if c not in skip and scale_of(types.get(c, "")) is not None]
    if not candidates:
        return {}
    limit = {c: DATE_LIMIT if scale_of(types[c]) == 0 else NUMBER_LIMIT for c in candidates}
    estimates = con.execute("SELECT " + ", ".join(f"approx_count_distinct({_quote(c)})" for c in candidates)
                            + f" FROM {_quote(table)}").fetchone()
    near = [c for c, n in zip(candidates, estimates) if 1 < int(n or 0) <= limit[c] * _APPROXIMATE_MARGIN]
    dated = [c for c, n in zip(candidates, estimates) if types[c] == "DATE" and int(n or 0) > MONTH_AFTER_DAYS]
    if not near and not dated:
        return {}
    read = [*(f"list(DISTINCT {as_double(_quote(c), temporal_kind(types[c]))})" for c in near),
            *(f"list(DISTINCT {_month_of(c)})" for c in dated),
            *(f"COUNT(*) > COUNT({_quote(c)})" for c in [*near, *dated])]
    row = con.execute(f"SELECT {', '.join(read)} FROM {_quote(table)}").fetchone()
    listed = len(near) + len(dated)
    found = dict(zip([*near, *(MONTH.format(column=c) for c in dated)], row[:listed]))
    nulls = dict(zip([*near, *dated], row[listed:]))
    dimensions = {}
    for c in candidates:
        distinct = [v for v in found.get(c, []) if v is not None]
        if c in near and 1 < len(distinct) <= limit[c]:
            dimensions[c] = NumericDimension(np.sort(np.array(distinct, dtype=np.float64)), bool(nulls[c]),
                                             scale_of(types[c]) or 0, types[c] == "DATE")
        months = np.sort(np.array([v for v in found.get(MONTH.format(column=c), []) if v is not None],
                                  dtype=np.float64))
        if c in dated and 1 < months.size <= NUMBER_LIMIT:
            dimensions[MONTH.format(column=c)] = NumericDimension(months, bool(nulls[c]), 0, True,
                                                                  _last_days(months), source=c)
    return dimensions


def _month_of(column: str) -> str:
    """SQL of the first day of the month of the DATE column ``column``, in days since 1970-01-01."""
    return as_double(f"CAST(date_trunc('month', {_quote(column)}) AS DATE)", DATE)


def sign_of(left: str, right: str) -> str:
    """SQL of sign(left - right) of two columns as DOUBLE, compared as DuckDB compares them in their own
    types (-1, 0, +1; NULL when either is NULL): a comparison dimension's value
    (:mod:`parzen.aqp.cube_comparisons`)."""
    a, b = _quote(left), _quote(right)
    return f"CAST(CASE WHEN {a} < {b} THEN -1 WHEN {a} = {b} THEN 0 WHEN {a} > {b} THEN 1 END AS DOUBLE)"


def _last_days(months: np.ndarray) -> np.ndarray:
    """Per first day of a month (days since 1970-01-01), the month's last day."""
    first = months.astype("datetime64[D]").astype("datetime64[M]")
    return ((first + 1).astype("datetime64[D]") - np.timedelta64(1, "D")).astype(np.int64).astype(np.float64)


def dependencies(dimensions: dict[str, NumericDimension]) -> dict[tuple[str, str], np.ndarray]:
    """Per month dimension whose DATE column is a dimension too, the dependency days -> months: per code
    of a day, the code of its month (NULL -> NULL; :mod:`parzen.aqp.cube_lattice`)."""
    maps = {}
    for name, d in dimensions.items():
        source = d.source
        if source is None or source not in dimensions:
            continue
        days = dimensions[source]
        code = np.searchsorted(d.values, days.values, side="right") - 1
        maps[(source, name)] = np.concatenate([code, [d.values.size] if days.nulls else []]).astype(np.int32)
    return maps


def with_appended(con, relation: str, dimensions: dict[str, NumericDimension]) -> dict[str, NumericDimension] | str:
    """``dimensions`` with the distinct values of the appended rows ``relation`` added, or why the tables
    must be rebuilt: one that would pass its limit (:data:`DATE_LIMIT` days or whole numbers,
    :data:`NUMBER_LIMIT` decimals or months) is no dimension of a build any more.

    The appended values are read as :func:`find` reads a column's (:func:`read_as_numbers`: float64, days
    for a date, a month's first day for a month dimension), so an old value and the same value appended
    are equal; the merged values are the union, ascending, as :func:`find` sorts them (a value's code is
    its position: old codes shift, :func:`parzen.aqp.cubes.merged_cube` maps them), a month dimension's
    bins' last days made again (:func:`_last_days`); scale, type and source stay.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    relation : str
        A view of the appended rows (of a join synopsis: joined with their dimension tables).
    dimensions : dict of str to NumericDimension
        The exact tables' numeric dimensions before the append.

    Returns
    -------
    dict of str to NumericDimension, or str
        The merged dimensions, in the order of ``dimensions``; or why not.
    """
    if not dimensions:
        return {}
    names = list(dimensions)
    read = [*(f"list(DISTINCT {_quote(c)})" for c in names), *(f"COUNT(*) > COUNT({_quote(c)})" for c in names)]
    row = con.execute(f"SELECT {', '.join(read)} FROM {read_as_numbers(relation, dimensions)}").fetchall()[0]
    merged = {}
    for c, found, nulls in zip(names, row[:len(names)], row[len(names):]):
        old = dimensions[c]
        values = np.union1d(old.values, np.array([v for v in found or () if v is not None], dtype=np.float64))
        limit = NUMBER_LIMIT if old.source is not None or old.scale else DATE_LIMIT
        if values.size > limit:
            return (f"numeric dimension {c!r} of the exact tables now has {values.size} values, more than its "
                    f"limit of {limit}")
        merged[c] = replace(old, values=values, nulls=old.nulls or bool(nulls),
                            highs=None if old.highs is None else _last_days(values))
    return merged


def read_as_numbers(table: str, dimensions: dict[str, NumericDimension]) -> str:
    """SQL of ``table`` (quoted) with the dimensions' columns read as float64 (days for dates) and the
    month and comparison dimensions added, as :func:`find` and
    :func:`parzen.aqp.cube_comparisons.comparison_dimensions` read them:
    ``(SELECT * REPLACE (...), ... FROM table)``."""
    if not dimensions:
        return _quote(table)
    own = {c: d for c, d in dimensions.items() if d.source is None and d.compares is None}
    replaced = ", ".join(f"{as_double(_quote(c), DATE if d.temporal else None)} AS {_quote(c)}" for c, d in own.items())
    added = "".join(f", {_month_of(d.source)} AS {_quote(c)}" for c, d in dimensions.items() if d.source is not None)
    added += "".join(f", {sign_of(*d.compares)} AS {_quote(c)}" for c, d in dimensions.items() if d.compares is not None)
    return f"(SELECT * {f'REPLACE ({replaced})' if own else ''}{added} FROM {_quote(table)}) AS parzen_read"
