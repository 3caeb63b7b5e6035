"""DATE and TIMESTAMP columns as modelled numbers: days since 1970-01-01.

A synopsis models a DATE column as the float64 number of days since 1970-01-01 (integers; the
column's kind is then "integer", with the continuity correction of docs/aqp.md, "How columns are
treated") and a TIMESTAMP column (any precision, or WITH TIME ZONE, read in UTC) as days with a
fraction (``epoch_us / 86 400 000 000``: float64 keeps a microsecond exact within +-280 years of
1970).  The build reads them through :func:`as_double`; the synopsis keeps each one's logical type
(``Synopsis.temporal``: column -> "date" or "timestamp"), so MIN, MAX and quantiles of them come
back as dates (:func:`typed_answer`).

Date constants in predicates are folded to the same numbers when a query is parsed
(:func:`fold`): ``DATE '1994-01-01'``, ``TIMESTAMP '...'``, ``CAST('...' AS DATE)``, ``'...'::DATE``,
and those plus or minus ``INTERVAL 'n' YEAR | MONTH | DAY | HOUR | MINUTE | SECOND`` (months added as
DuckDB adds them, the day clamped to the month's last) or an integer number of days.  A folded
bound is a :class:`Days` (a float that remembers it was a date), so that the engine can refuse a
date compared with a number column, or a number with a date column, and the exact path writes it
back as a date literal (:func:`literal`).  ``EXTRACT(YEAR FROM col)`` and ``YEAR(col)`` compared
with integers become ranges of dates (:func:`years_as_dates`).  Anything else about dates raises
:class:`parzen.aqp.sql.UnsupportedQuery` naming it.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math

import numpy as np
import pandas as pd
from sqlglot import exp

#: Logical types of the columns a synopsis keeps as days.
DATE, TIMESTAMP = "date", "timestamp"
_EPOCH = dt.datetime(1970, 1, 1)
_MICROSECONDS_PER_DAY = 86_400_000_000
#: Days per unit of an INTERVAL of fixed length (months and years are added on the calendar).
_FIXED_UNITS = {"DAY": 1.0, "WEEK": 7.0, "HOUR": 1 / 24, "MINUTE": 1 / 1440, "SECOND": 1 / 86_400}
_CALENDAR_UNITS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
_DATE_TYPES = {exp.DataType.Type.DATE: DATE}
_TIMESTAMP_TYPES = {exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.TIMESTAMPTZ,
                    exp.DataType.Type.TIMESTAMP_S, exp.DataType.Type.TIMESTAMP_MS, exp.DataType.Type.TIMESTAMP_NS,
                    exp.DataType.Type.DATETIME}


class Days(float):
    """A bound folded from a date or timestamp constant: days since 1970-01-01 (a float)."""

    __slots__ = ()


def temporal_kind(type_name: str) -> str | None:
    """"date" for DuckDB's DATE, "timestamp" for its TIMESTAMP types, else None."""
    if type_name == "DATE":
        return DATE
    if type_name.startswith("TIMESTAMP"):
        return TIMESTAMP
    return None


def as_double(quoted: str, kind: str | None) -> str:
    """SQL reading the quoted column ``quoted`` as DOUBLE: days since 1970-01-01 for ``kind`` "date"
    or "timestamp" (:func:`temporal_kind`; see the module's notes), a cast for None."""
    if kind == DATE:
        return f"CAST(({quoted} - DATE '1970-01-01') AS DOUBLE)"
    if kind == TIMESTAMP:
        return f"(epoch_us({quoted}) / {_MICROSECONDS_PER_DAY}.0)"
    return f"CAST({quoted} AS DOUBLE)"


def days(text: str, where: str = "") -> Days:
    """The days since 1970-01-01 of an ISO date or timestamp text ('1994-01-01', '1994-01-01 10:30:00').

    Raises
    ------
    ValueError
        ``text`` is not an ISO date or timestamp (``where`` names the predicate).
    """
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r}{' in ' + where if where else ''} is not a date or timestamp "
                         "(write it as 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS')") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return Days((moment - _EPOCH) / dt.timedelta(microseconds=1) / _MICROSECONDS_PER_DAY)


def moment(value: float) -> dt.datetime:
    """The moment ``value`` days after 1970-01-01 (to the microsecond)."""
    return _EPOCH + dt.timedelta(microseconds=round(value * _MICROSECONDS_PER_DAY))


def literal(value: float) -> exp.Expr:
    """The DuckDB literal of ``value`` days: ``DATE 'YYYY-MM-DD'`` for whole days, else ``TIMESTAMP '...'``."""
    when = moment(value)
    if float(value).is_integer():
        return exp.cast(exp.Literal.string(when.date().isoformat()), exp.DataType.Type.DATE)
    return exp.cast(exp.Literal.string(when.isoformat(sep=" ")), exp.DataType.Type.TIMESTAMP)


def fold(node: exp.Expr, number) -> Days | None:
    """The days of a constant date expression (see the module's notes), or None when ``node`` is no
    date constant.  ``number(node)`` reads a number literal (the parser's, with its placeholders).

    Raises
    ------
    UnsupportedQuery
        An INTERVAL of a unit other than those listed, or arithmetic of dates other than +/- an
        interval or a number of days.
    ValueError
        A malformed date text.
    """
    node = node.unnest()
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        if node.to.this in _DATE_TYPES or node.to.this in _TIMESTAMP_TYPES:
            try:
                value = days(node.this.this)
            except ValueError:  # raised again, naming the literal (its SQL text is made only here: 0.1 ms)
                value = days(node.this.this, node.sql(dialect="duckdb"))
            return Days(math.floor(value)) if node.to.this in _DATE_TYPES else value  # np.floor of a Days: 1 us
        return None
    if isinstance(node, (exp.Add, exp.Sub)):
        from .sql import UnsupportedQuery  # imported where a refusal may come, not for every date constant

        base = fold(node.this, number)
        if base is None:
            return None
        sign = 1 if isinstance(node, exp.Add) else -1
        step = node.expression.unnest()
        if isinstance(step, exp.Interval):
            return _shifted(base, step, sign, number)
        try:
            return Days(base + sign * number(step))
        except UnsupportedQuery:
            raise UnsupportedQuery(f"{node.sql(dialect='duckdb')} (a date plus or minus an INTERVAL or a number of "
                                   "days)") from None
    return None


def _shifted(base: float, interval: exp.Interval, sign: int, number) -> Days:
    """``base`` days shifted by ``sign`` times ``interval``."""
    from .sql import UnsupportedQuery

    amount_node, unit_node = interval.this, interval.args.get("unit")
    unit = (unit_node.name if unit_node is not None else "").upper()
    text = amount_node.this if isinstance(amount_node, exp.Literal) and amount_node.is_string else None
    if text is not None and not unit:  # INTERVAL '90 days'
        parts = text.split()
        text, unit = (parts[0], parts[1].upper()) if len(parts) == 2 else (text, "")
    unit = unit.removesuffix("S")
    try:
        amount = float(text) if text is not None else number(amount_node)
    except ValueError:
        raise UnsupportedQuery(f"{interval.sql(dialect='duckdb')} (INTERVAL 'n' UNIT with one number)") from None
    if unit in _FIXED_UNITS:
        return Days(base + sign * amount * _FIXED_UNITS[unit])
    if unit in _CALENDAR_UNITS and amount.is_integer():
        return _add_months(base, sign * int(amount) * _CALENDAR_UNITS[unit])
    raise UnsupportedQuery(f"{interval.sql(dialect='duckdb')} (INTERVAL of whole years, quarters or months, or of "
                           "weeks, days, hours, minutes or seconds)")


def _add_months(base: float, months: int) -> Days:
    """``base`` days plus ``months`` calendar months, the day clamped to the month's last (as DuckDB)."""
    when = moment(base)
    total = when.year * 12 + when.month - 1 + months
    year, month = divmod(total, 12)
    day = min(when.day, calendar.monthrange(year, month + 1)[1])
    shifted = when.replace(year=year, month=month + 1, day=day)
    return Days((shifted - _EPOCH) / dt.timedelta(microseconds=1) / _MICROSECONDS_PER_DAY)


#: Functions of dates that :func:`years_as_dates` reads (YEAR) or refuses by name (the others).
DATE_PARTS = (exp.Extract, exp.Year, exp.Month, exp.Day, exp.DateTrunc, exp.TimestampTrunc)
#: EXTRACT(YEAR FROM col) <op> n as a range on col: (low year offset, high year offset) of
#: col >= DATE 'low-01-01' and col < DATE 'high-01-01' (None: no bound).
_YEAR_BOUNDS: dict[type[exp.Expr], tuple[int | None, int | None]] = {exp.EQ: (0, 1), exp.GTE: (0, None), exp.GT: (1, None), exp.LT: (None, 0), exp.LTE: (None, 1)}
_FLIPPED: dict[type[exp.Expr], type[exp.Expr]] = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}


def years_as_dates(condition: exp.Expr, number) -> exp.Expr:
    """``condition`` with each ``EXTRACT(YEAR FROM col)`` / ``YEAR(col)`` compared with an integer
    (=, <, <=, >, >=, BETWEEN) replaced by the range of dates it means, e.g. ``YEAR(d) = 1994`` by
    ``d >= DATE '1994-01-01' AND d < DATE '1995-01-01'``.  Other EXTRACT / date functions raise
    :class:`parzen.aqp.sql.UnsupportedQuery` naming them."""
    from .sql import UnsupportedQuery

    def column_of(node: exp.Expr) -> exp.Expr | None:
        node = node.unnest()
        if isinstance(node, exp.Year):
            return node.this
        if isinstance(node, exp.Extract) and node.this.name.upper() in ("YEAR", "YEARS"):
            return node.expression
        return None

    def year_bounds(column: exp.Expr, low: int | None, high: int | None) -> exp.Expr:
        parts: list[exp.Expr] = []
        if low is not None:
            parts.append(exp.GTE(this=column.copy(), expression=literal(float(days(f"{low:04d}-01-01")))))
        if high is not None:
            parts.append(exp.LT(this=column.copy(), expression=literal(float(days(f"{high:04d}-01-01")))))
        return exp.paren(exp.and_(*parts))

    def year(node: exp.Expr, predicate: exp.Expr) -> int:
        value = number(node)
        if not float(value).is_integer():
            raise UnsupportedQuery(f"{predicate.sql(dialect='duckdb')} (compare a year with an integer)")
        return int(value)

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Between) and (column := column_of(node.this)) is not None:
            return year_bounds(column, year(node.args["low"], node), year(node.args["high"], node) + 1)
        if type(node) in _YEAR_BOUNDS:
            left, right, kind = node.this, node.expression, type(node)
            if column_of(left) is None and column_of(right) is not None:
                left, right, kind = right, left, _FLIPPED[kind]
            if (column := column_of(left)) is not None:
                n = year(right, node)
                low, high = _YEAR_BOUNDS[kind]
                return year_bounds(column, None if low is None else n + low, None if high is None else n + high)
        if isinstance(node, DATE_PARTS):
            raise UnsupportedQuery(f"{node.sql(dialect='duckdb')} in {node.parent.sql(dialect='duckdb') if node.parent else 'WHERE'} "
                                   "(of dates, only EXTRACT(YEAR FROM col) or YEAR(col) compared with integers)")
        return node

    return condition.transform(rewrite, copy=True)


def typed_answer(result: pd.DataFrame, aggregates, temporal: dict[str, str]) -> pd.DataFrame:
    """``result`` with the MIN, MAX and quantile answers of DATE / TIMESTAMP columns (and their
    intervals' ends) turned from days into datetime64 values, as DuckDB returns them.

    Parameters
    ----------
    result : pandas.DataFrame
        An answer, one column per aggregate name (and ``<name> low`` / ``<name> high``).
    aggregates : sequence of Aggregate
        The query's aggregates.
    temporal : dict of str to str
        The synopsis's DATE / TIMESTAMP columns and their logical types.

    Returns
    -------
    pandas.DataFrame
    """
    for a in aggregates:
        if a.func in ("min", "max", "quantile") and a.column in temporal:
            for name in (a.name, f"{a.name} low", f"{a.name} high"):
                if name in result:
                    result[name] = to_datetimes(result[name].to_numpy(dtype=np.float64), temporal[a.column])
    return result


def to_datetimes(values: np.ndarray, kind: str) -> np.ndarray:
    """Days since 1970-01-01 as datetime64[us] (NaN: NaT); DATE values rounded down to whole days."""
    values = np.floor(values) if kind == DATE else values
    micro = np.where(np.isnan(values), 0.0, np.round(values * _MICROSECONDS_PER_DAY)).astype(np.int64)
    out = micro.astype("datetime64[us]")
    out[np.isnan(values)] = np.datetime64("NaT")
    return out
