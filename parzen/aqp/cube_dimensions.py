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
:data:`NUMBER_LIMIT` (:data:`DATE_LIMIT` for dates: about eleven years of days).  Floating-point and
TIMESTAMP columns are never dimensions (their values are rarely few, and a range over them would
need float equality with DuckDB's).

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
from dataclasses import dataclass

import numpy as np

from .dates import DATE, as_double, temporal_kind
from .sql import Range

#: A modelled integer or decimal column is a dimension with at most this many distinct values.
NUMBER_LIMIT = 1_000
#: A DATE column is a dimension with at most this many distinct days.
DATE_LIMIT = 4_096
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
    """

    values: np.ndarray
    nulls: bool
    scale: int
    temporal: bool

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

    def range_mask(self, r: Range) -> np.ndarray:
        """The codes whose value lies in ``r``, compared in the column's exact scale (module notes); NULL's
        code never.

        Parameters
        ----------
        r : Range
            The query's range on the column (bounds as float64, dates folded to days).

        Returns
        -------
        numpy.ndarray of bool, of :attr:`size` entries
        """
        factor = 10.0 ** self.scale
        units = np.rint(self.values * factor) if self.scale else self.values
        mask = np.ones(self.values.size, dtype=bool)
        if r.low is not None:
            low = _in_scale(r.low, factor, self.scale)
            mask &= (units >= low) if r.low_inclusive else (units > low)
        if r.high is not None:
            high = _in_scale(r.high, factor, self.scale)
            mask &= (units <= high) if r.high_inclusive else (units < high)
        return np.concatenate([mask, np.zeros(int(self.nulls), dtype=bool)])

    # --- storage ------------------------------------------------------------------------------

    def meta(self) -> dict:
        return {"nulls": self.nulls, "scale": self.scale, "temporal": self.temporal}

    @classmethod
    def from_stored(cls, meta: dict, values: np.ndarray) -> NumericDimension:
        return cls(np.asarray(values, dtype=np.float64), bool(meta["nulls"]), int(meta["scale"]), bool(meta["temporal"]))


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
    limit = {c: DATE_LIMIT if types[c] == "DATE" else NUMBER_LIMIT for c in candidates}
    estimates = con.execute("SELECT " + ", ".join(f"approx_count_distinct({_quote(c)})" for c in candidates)
                            + f" FROM {_quote(table)}").fetchone()
    near = [c for c, n in zip(candidates, estimates) if 1 < int(n or 0) <= limit[c] * _APPROXIMATE_MARGIN]
    if not near:
        return {}
    read = ", ".join(f"list(DISTINCT {as_double(_quote(c), temporal_kind(types[c]))}), "
                     f"COUNT(*) > COUNT({_quote(c)})" for c in near)
    found = con.execute(f"SELECT {read} FROM {_quote(table)}").fetchone()
    dimensions = {}
    for k, c in enumerate(near):
        distinct = [v for v in found[2 * k] if v is not None]
        if 1 < len(distinct) <= limit[c]:
            dimensions[c] = NumericDimension(np.sort(np.array(distinct, dtype=np.float64)), bool(found[2 * k + 1]),
                                             scale_of(types[c]) or 0, types[c] == "DATE")
    return dimensions


def read_as_numbers(table: str, dimensions: dict[str, NumericDimension]) -> str:
    """SQL of ``table`` (quoted) with the dimensions' columns read as float64 (days for dates), as
    :func:`find` read them: ``(SELECT * REPLACE (...) FROM table)``."""
    if not dimensions:
        return _quote(table)
    replaced = ", ".join(f"{as_double(_quote(c), DATE if d.temporal else None)} AS {_quote(c)}"
                         for c, d in dimensions.items())
    return f"(SELECT * REPLACE ({replaced}) FROM {_quote(table)}) AS parzen_read"
