"""Histogram queries: ``SELECT FLOOR(x / w) * w AS bin, COUNT(*) ... GROUP BY bin``, one answer per bin.

    SELECT FLOOR(x / w) * w AS bin, agg, ...    (or FLOOR(x / w) AS bin: the bin's index k;
    FROM table                                    w * FLOOR(x / w); FLOOR(x) for w = 1)
    [WHERE p AND p AND ...]                     the predicates of :mod:`parzen.aqp.sql`
    GROUP BY bin                                (the alias, the position, or the expression again)
    [ORDER BY bin [ASC | DESC]]

A row with value v falls in bin k = FLOOR(v / w), as DuckDB computes it (a double division, so that
``FLOOR(0.3 / 0.1)`` is 2): bin k holds the values v with e_k <= v < e_{k+1}, e_k the least double
whose quotient by w reaches k (:func:`bin_edge`).  Each bin is then one more range on x, added to the
query's own, and answered as any query is (:func:`parzen.aqp.answers.approximate`): from the gridded
form when x is the query's only range column and there is no GROUP BY or IN (exact at grid points,
C(e_{k+1}) - C(e_k)), from the sample's box integrals otherwise, with the same intervals
(``with_error``).  The bins run from that of the column's minimum to that of its maximum in the
table (kept in the synopsis: :attr:`parzen.aqp.estimate.ColumnModel.minimum`), narrowed by the
query's range on x, so every bin that holds rows is answered.  A bin to which the synopsis gives no
rows (every aggregate 0 or NULL: no point mass of a discrete column in it) is left out, as DuckDB lists
no empty group; a smoothed column's bins between its minimum and maximum that hold no row in the table
keep their small answers (near 0), where DuckDB lists no row.  DuckDB's bin of the rows
whose x is NULL is left out (a histogram draws no bar for it).  DuckDB 2.0 has no ``width_bucket``;
it is refused with the FLOOR form to use instead.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from sqlglot import exp

from . import answers, histogram_pass
from .row_predicates import conjuncts
from .sql import (
    AggregateQuery,
    Range,
    UnsupportedQuery,
    _add_predicate,
    _select_item,
    _statements,
    _table,
    _text,
    to_sql,
)
from .strata import Layout
from .synopsis import Synopsis

#: The most bins one query may ask for (each is a box integral); a wider w asks for fewer.
MAX_BINS = 10_000


@dataclass(frozen=True)
class HistogramQuery:
    """A parsed histogram query.

    Parameters
    ----------
    base : AggregateQuery
        The aggregates and the WHERE clause, without GROUP BY; its ranges include one on ``column``
        (unbounded when the WHERE clause has none), so that resolving names resolves it too.
    column : str
        The binned column x.
    width : float
        The bin width w (> 0).
    label : str
        The bin's output column (its alias).
    index : bool
        True for FLOOR(x / w) (the bin's index k), False for FLOOR(x / w) * w (k times w).
    position : int
        Where the bin column sits in the SELECT list.
    descending : bool
        ORDER BY the bin DESC.
    """

    base: AggregateQuery
    column: str
    width: float
    label: str
    index: bool
    position: int
    descending: bool = False


def is_histogram(sql: str) -> bool:
    """Whether ``sql`` selects a FLOOR(...) or width_bucket(...) expression (a histogram query, to
    :func:`parse_histogram`); cheap, on the text, so other queries pay nothing."""
    folded = sql.casefold()
    return "floor" in folded or "width_bucket" in folded


@functools.lru_cache(maxsize=256)
def parse_histogram(sql: str) -> HistogramQuery | None:
    """The histogram query of ``sql``, or None when its SELECT list has no FLOOR(...) item (any
    other query: :func:`parzen.aqp.sql.parse` reads it).

    Cached by text; callers must not modify the result.

    Parameters
    ----------
    sql : str
        One SELECT statement.

    Returns
    -------
    HistogramQuery or None

    Raises
    ------
    UnsupportedQuery
        A histogram query outside the supported form (see the module docstring): GROUP BY other
        columns, a bin without an alias, a width that is not a positive number literal, width_bucket,
        JOIN, HAVING, LIMIT, ...
    ValueError
        SQL that does not parse.
    """
    if not is_histogram(sql):
        return None
    statements = _statements(sql)
    tree = statements[0] if len(statements) == 1 else None
    if not isinstance(tree, exp.Select):
        return None
    items = [item.this if isinstance(item, exp.Alias) else item for item in tree.expressions]
    if any(isinstance(item, exp.WidthBucket) for item in items):
        raise UnsupportedQuery("width_bucket(x, lo, hi, n) (DuckDB has no such function; bin with "
                               "FLOOR(x / w) * w AS bin ... GROUP BY bin, w = (hi - lo) / n)")
    bins = [k for k, item in enumerate(items) if _floor_of(item) is not None]
    if not bins:
        return None
    if len(bins) > 1:
        raise UnsupportedQuery("two FLOOR(...) bins in one SELECT (one histogram column per query)")
    (position,) = bins
    item = tree.expressions[position]
    if not isinstance(item, exp.Alias):
        raise UnsupportedQuery(f"the bin {_text(item)} without a name (write {_text(item)} AS bin ... GROUP BY bin)")
    column, width, index = _bin(items[position])
    label = item.alias
    for arg, construct in (("joins", "JOIN"), ("having", "HAVING"), ("limit", "LIMIT"), ("offset", "OFFSET"),
                           ("distinct", "SELECT DISTINCT"), ("with_", "WITH"), ("qualify", "QUALIFY"),
                           ("windows", "WINDOW")):
        if tree.args.get(arg):
            raise UnsupportedQuery(f"{construct} in a histogram query")
    _check_group_by(tree, items[position], label, position)
    descending = _descending(tree, items[position], label, position)
    select = tuple(_select_item(item, ()) for k, item in enumerate(tree.expressions) if k != position)
    if not select:
        raise UnsupportedQuery("a histogram without COUNT, SUM or AVG")
    ranges: dict[str, Range] = {}
    members: dict[str, frozenset] = {}
    where = tree.args.get("where")
    for predicate in conjuncts(where.this) if where else ():
        _add_predicate(predicate, ranges, members, [])
    ranges.setdefault(column, Range(column))
    base = AggregateQuery(_table(tree)[0], select, ranges, members, ())
    return HistogramQuery(base, column, width, label, index, position, descending)


def _floor_of(node: exp.Expr) -> exp.Floor | None:
    """The FLOOR(...) of a bin expression FLOOR(...), FLOOR(...) * w or w * FLOOR(...), else None."""
    if isinstance(node, exp.Floor):
        return node
    if isinstance(node, exp.Mul):
        return next((side for side in (node.this, node.expression) if isinstance(side, exp.Floor)), None)
    return None


def _bin(node: exp.Expr) -> tuple[str, float, bool]:
    """(column, width, whether the bin is the index k) of a bin expression."""
    floor = _floor_of(node)
    assert floor is not None  # the caller found it
    if floor.args.get("decimals") is not None or floor.args.get("to") is not None:
        raise UnsupportedQuery(f"{_text(floor)} (FLOOR takes one argument here: FLOOR(x / w))")
    inner = floor.this.unnest()
    if isinstance(inner, exp.Column):
        column, width = inner, 1.0
    elif isinstance(inner, exp.Div) and isinstance(inner.this.unnest(), exp.Column):
        column, width = inner.this.unnest(), _width(inner.expression, node)
    else:
        raise UnsupportedQuery(f"the bin {_text(node)} (bin a column by FLOOR(x / w) or FLOOR(x / w) * w)")
    if column.table:
        raise UnsupportedQuery(f"{_text(column)} in the bin (only plain column names)")
    if floor is node:
        return column.name, width, True
    factor = node.expression if node.this is floor else node.this
    if _width(factor, node) != width:
        raise UnsupportedQuery(f"the bin {_text(node)} multiplies by another number than it divides by "
                               f"(FLOOR(x / w) * w: both w)")
    return column.name, width, False


def _width(node: exp.Expr, bin_: exp.Expr) -> float:
    """The bin width, a positive finite number literal."""
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if not isinstance(literal, exp.Literal) or literal.is_string:
        raise UnsupportedQuery(f"{_text(node)} in the bin {_text(bin_)} (the width w must be a number literal)")
    width = -float(literal.this) if negative else float(literal.this)
    if not (math.isfinite(width) and width > 0):
        raise ValueError(f"the bin width in {_text(bin_)} must be a positive number, got {_text(node)}")
    return width


def _names_bin(node: exp.Expr, bin_: exp.Expr, label: str, position: int) -> bool:
    """Whether ``node`` (in GROUP BY or ORDER BY) names the bin: its alias, its position (1-based) or
    the expression itself."""
    node = node.unnest()
    if isinstance(node, exp.Column) and not node.table:
        return node.name.casefold() == label.casefold()
    if isinstance(node, exp.Literal) and not node.is_string:
        return node.this == str(position + 1)
    return node == bin_


def _check_group_by(tree: exp.Select, bin_: exp.Expr, label: str, position: int) -> None:
    group = tree.args.get("group")
    keys = group.expressions if group else []
    if len(keys) != 1 or not _names_bin(keys[0], bin_, label, position):
        found = ", ".join(_text(k) for k in keys) or "none"
        raise UnsupportedQuery(f"a histogram grouped by {found} (GROUP BY the bin only: GROUP BY {label})")


def _descending(tree: exp.Select, bin_: exp.Expr, label: str, position: int) -> bool:
    order = tree.args.get("order")
    if order is None:
        return False
    keys = order.expressions
    if len(keys) != 1 or not _names_bin(keys[0].this, bin_, label, position):
        raise UnsupportedQuery(f"{_text(order)} in a histogram query (ORDER BY the bin only: ORDER BY {label})")
    return bool(keys[0].args.get("desc"))


def bin_edge(k: float, width: float) -> float:
    """e_k: the least double v with v / w >= k in floating point, so that FLOOR(v / w) = k exactly
    for e_k <= v < e_{k+1} (the quotient rounds monotonically in v).

    Parameters
    ----------
    k : float
        The bin's index (an integer value).
    width : float
        The bin width w > 0.

    Returns
    -------
    float
    """
    edge = k * width
    while edge / width >= k:
        edge = math.nextafter(edge, -math.inf)
    while edge / width < k:
        edge = math.nextafter(edge, math.inf)
    return edge


def bins(query: HistogramQuery, synopsis: Synopsis) -> np.ndarray:
    """The bin indices k to answer: from FLOOR(lo / w) to FLOOR(hi / w), [lo, hi] the column's span in
    the table narrowed by the query's range on it.

    Parameters
    ----------
    query : HistogramQuery
        With names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.

    Returns
    -------
    numpy.ndarray
        Ascending bin indices (float64 integers); empty when the range holds no value of the table.

    Raises
    ------
    ValueError
        The column is not a modelled numeric one, the synopsis predates kept minima and maxima, or
        more than :data:`MAX_BINS` bins.
    """
    model = synopsis.models.get(query.column)
    if model is None:
        raise ValueError(f"the synopsis of {synopsis.table!r} models no numeric column {query.column!r} to bin; "
                         f"modelled: {', '.join(synopsis.models)}")
    if model.minimum is None or model.maximum is None:
        if synopsis.totals.get(query.column, (0, 0.0))[0] == 0:
            return np.zeros(0)  # every value NULL: no bin
        raise ValueError(f"the synopsis of {synopsis.table!r} was built before synopses kept each column's minimum "
                         f"and maximum, which a histogram's bins span: engine.refresh({synopsis.table!r}) rebuilds it")
    where = query.base.ranges[query.column]
    low, high = model.minimum, model.maximum
    if where.low is not None and where.low > low:
        low = where.low
    if where.high is not None and where.high < high:
        high = where.high
    if low > high:
        return np.zeros(0)
    first, last = math.floor(low / query.width), math.floor(high / query.width)
    if last - first + 1 > MAX_BINS:
        raise ValueError(f"FLOOR({query.column} / {query.width:g}) asks for {last - first + 1} bins over "
                         f"[{low:g}, {high:g}], more than {MAX_BINS}: choose a wider bin or narrow the WHERE range")
    return np.arange(first, last + 1, dtype=np.float64)


def answer(query: HistogramQuery, synopsis: Synopsis, layout: Layout, z: float | None, *,
           one_pass: bool = True) -> tuple[pd.DataFrame, str]:
    """One row per bin: the bin's label, then each aggregate (and its interval when ``z`` is given).

    Bin k's answer is that of the query with the range x in [e_k, e_{k+1}) added
    (:func:`parzen.aqp.answers.approximate`); every bin is answered in one pass over the sample
    (:func:`parzen.aqp.histogram_pass.one_pass_answers`, equal to the per-bin answers to 1e-12),
    or, for an aggregate other than COUNT / SUM / AVG, one query per bin.

    Parameters
    ----------
    query : HistogramQuery
        With names spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.
    layout : Layout
        Its strata.
    z : float or None
        The normal quantile of the intervals; None: no intervals.
    one_pass : bool
        Answer every bin in one pass where the query allows (False: one query per bin, which the
        tests compare it with).

    Returns
    -------
    frame : pandas.DataFrame
        Columns in the SELECT list's order, bins ascending (descending for ORDER BY ... DESC); bins
        whose every aggregate is 0 or NaN left out.
    form : str
        What answered each bin ("grid" or "sample"; "none" for no bins).
    """
    ks = bins(query, synopsis)
    names = [a.name for a in query.base.aggregates]
    columns = [n for name in names for n in ((name, f"{name} low", f"{name} high") if z is not None else (name,))]
    boxes = bin_ranges(query, ks)
    binned = histogram_pass.one_pass_answers(query.base, query.column, boxes, synopsis, layout, z) \
        if one_pass else None
    if binned is not None:
        values, form = binned.values, binned.form
    else:
        values = np.empty((ks.size, len(columns)))
        forms = set()
        for row, box in enumerate(boxes):
            one = replace(query.base, ranges={**query.base.ranges, query.column: box})
            frame, one_form = answers.approximate(one, synopsis, layout, z)
            values[row] = frame.to_numpy(dtype=np.float64)[0]  # its one row: the aggregates (and intervals) in order
            forms.add(one_form)
        form = "+".join(sorted(forms)) or "none"
    return _framed(query, ks, values, z, columns), form


def _framed(query: HistogramQuery, ks: np.ndarray, values: np.ndarray, z: float | None,
            columns: list[str]) -> pd.DataFrame:
    """:func:`answer`'s frame from its values per bin: bins without rows left out, the bin's label
    placed in the SELECT list's order, descending for ORDER BY ... DESC."""
    point = values[:, ::3] if z is not None else values  # the answers, without their intervals
    held = ~((point == 0.0) | np.isnan(point)).all(axis=1)  # a bin the synopsis gives no rows: as DuckDB, no row
    ks, values = ks[held], values[held]
    labels = ks if query.index else ks * query.width
    if query.descending:
        labels, values = labels[::-1], values[::-1]
    at = query.position * (3 if z is not None else 1)  # aggregates only before the bin
    table = np.column_stack([values[:, :at], labels, values[:, at:]])
    return pd.DataFrame(table, columns=pd.Index([*columns[:at], query.label, *columns[at:]]))


def answer_with_density(query: HistogramQuery, fine: HistogramQuery, synopsis: Synopsis,
                        layout: Layout) -> tuple[pd.DataFrame, str, np.ndarray, np.ndarray]:
    """:func:`answer` of ``query`` without intervals and :func:`density` of ``fine`` (the same query
    at a finer bin width: a chart's bars and its density curve), the same numbers as those two give,
    from one pass over the sample where both read it (COUNT(*) bars answered from the sample:
    :func:`parzen.aqp.histogram_pass.one_pass_answers` with ``also``, which computes each row's
    masses in the other ranges once for both sets of bins).

    Parameters
    ----------
    query : HistogramQuery
        The bars, with names spelled as in the synopsis.
    fine : HistogramQuery
        The curve's bins: the same column and WHERE clause as ``query``.
    synopsis : Synopsis
    layout : Layout

    Returns
    -------
    frame : pandas.DataFrame
        As :func:`answer` gives it.
    form : str
        What answered the bars.
    labels, masses : numpy.ndarray
        As :func:`density` gives them.
    """
    base = query.base
    shared = (fine.column == query.column and fine.base.ranges == base.ranges and fine.base.members == base.members
              and not base.boxes and not fine.base.boxes and all(a.func == "count" and a.column is None
                                                                 for a in base.aggregates))
    ks, fine_ks = bins(query, synopsis), bins(fine, synopsis)
    if shared and ks.size and fine_ks.size:
        boxes, fine_boxes = bin_ranges(query, ks), bin_ranges(fine, fine_ks)
        binned = histogram_pass.one_pass_answers(base, query.column, boxes, synopsis, layout, None, also=fine_boxes)
        if binned is not None and binned.masses is not None:
            names = [a.name for a in base.aggregates]
            return (_framed(query, ks, binned.values, None, names), binned.form,
                    (fine_ks if fine.index else fine_ks * fine.width), binned.masses)
    frame, form = answer(query, synopsis, layout, None)
    labels, masses = density(fine, synopsis, layout)
    return frame, form, labels, masses


def bin_ranges(query: HistogramQuery, ks: np.ndarray) -> list[Range]:
    """Bin k's range on x, [e_k, e_{k+1}) (:func:`bin_edge`), within the query's own range on x.

    Parameters
    ----------
    query : HistogramQuery
    ks : numpy.ndarray
        Bin indices (:func:`bins`).

    Returns
    -------
    list of Range
    """
    where = query.base.ranges[query.column]
    edges = bin_edges(np.append(ks, ks[-1] + 1) if ks.size else ks, query.width).tolist()
    boxes = []
    for low, high in itertools.pairwise(edges):
        box = Range(query.column, low, high, True, False)
        inside = (where.low is None or where.low < low) and (where.high is None or high <= where.high)
        boxes.append(box if inside else where.intersect(box))  # inside: the intersection is the bin itself
    return boxes


def bin_edges(ks: np.ndarray, width: float) -> np.ndarray:
    """:func:`bin_edge` of every k at once: its steps elementwise, a few at a time over the array; a k
    that needs more (k = 0 with a wide bin steps through the subnormal doubles) gets :func:`bin_edge`.

    Parameters
    ----------
    ks : numpy.ndarray
        Bin indices (integer values).
    width : float
        The bin width w > 0.

    Returns
    -------
    numpy.ndarray
    """
    ks = np.asarray(ks, dtype=np.float64)
    edges = ks * width
    for _ in range(_VECTOR_STEPS):
        down = edges / width >= ks
        if not down.any():
            break
        edges[down] = np.nextafter(edges[down], -np.inf)
    unsettled = edges / width >= ks
    for _ in range(_VECTOR_STEPS):
        up = (edges / width < ks) & ~unsettled
        if not up.any():
            break
        edges[up] = np.nextafter(edges[up], np.inf)
    unsettled |= edges / width < ks
    for k in np.flatnonzero(unsettled):
        edges[k] = bin_edge(float(ks[k]), width)
    return edges


#: Steps of :func:`bin_edges` taken over the whole array before the stragglers go one by one.
_VECTOR_STEPS = 4


def density(query: HistogramQuery, synopsis: Synopsis, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """The synopsis's density estimate integrated over the query's bins: with no predicate but on x,
    the gridded form's C(b) - C(a) (the table's kernel density, as :func:`answer` gives it); otherwise,
    not calibrated, sum_i w_i P_x,i(bin) prod_{c != x} P_c,i over the sampled rows (stratified
    weights w_i, kernel masses P) in one pass (:func:`parzen.aqp.histogram_pass.kernel_masses`).
    ``parzen serve`` draws it as the density curve over a chart's bars, at a finer width.

    Parameters
    ----------
    query : HistogramQuery
        With names spelled as in the synopsis; its aggregates are not read.
    synopsis : Synopsis
    layout : Layout

    Returns
    -------
    labels : numpy.ndarray
        The bins' labels, as :func:`answer` gives them.
    masses : numpy.ndarray
        The estimated rows per bin.
    """
    ks = bins(query, synopsis)
    boxes = bin_ranges(query, ks)
    alone = not query.base.members and set(query.base.ranges) == {query.column}
    if alone and query.column in synopsis.grids:  # the gridded form: the table's own, C(b) - C(a)
        model = synopsis.models[query.column]
        ends = np.array([model.interval(box) for box in boxes], dtype=np.float64).reshape(-1, 2)
        masses = synopsis.grids[query.column].boxes(ends[:, 0], ends[:, 1])[0]
    else:
        masses = histogram_pass.kernel_masses(query.base, query.column, boxes, synopsis, layout)
    return (ks if query.index else ks * query.width), masses


def exact_sql(query: HistogramQuery) -> str:
    """DuckDB SQL of ``query`` over the rows it answers (x not NULL), identifiers quoted, for
    :meth:`parzen.aqp.Engine.compare`.

    Parameters
    ----------
    query : HistogramQuery

    Returns
    -------
    str
    """
    base = replace(query.base, ranges={c: r for c, r in query.base.ranges.items()
                                       if c != query.column or r.low is not None or r.high is not None})
    tree: exp.Select = exp.maybe_parse(to_sql(base), into=exp.Select, dialect="duckdb")
    column = exp.column(exp.to_identifier(query.column, quoted=True))
    bin_: exp.Expr = exp.Floor(this=exp.Div(this=column, expression=exp.Literal.number(repr(query.width))))
    if not query.index:
        bin_ = exp.Mul(this=bin_, expression=exp.Literal.number(repr(query.width)))
    items = list(tree.expressions)
    items.insert(query.position, exp.alias_(bin_, query.label, quoted=True))
    tree.set("expressions", items)
    tree = tree.where(exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null())))
    tree = tree.group_by(exp.column(exp.to_identifier(query.label, quoted=True)))
    return tree.order_by(exp.Ordered(this=exp.column(exp.to_identifier(query.label, quoted=True)),
                                     desc=query.descending)).sql(dialect="duckdb")

