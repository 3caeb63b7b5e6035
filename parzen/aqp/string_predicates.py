"""Text predicates on categorical columns, and text compared with DATE columns, decided per synopsis.

A query's WHERE may compare a text column with strings by order (``p_brand BETWEEN 'MFGR#2221'
AND 'MFGR#2228'``, ``<``, ``<=``, ``>``, ``>=``), by pattern (``p_type LIKE 'PROMO%'``, ``NOT
LIKE``, ``%`` and ``_``), or exclude values (``<> 'x'``, ``NOT IN (...)``).  Which values pass is
known only against the column's values, so the parser keeps such a predicate as a
:class:`ValuesWhere` among the query's IN sets (``members``), and :func:`resolve_box` turns it into
the IN set of the column's exact values that pass (the build's exact per-column value list,
:mod:`parzen.aqp.categories`), before anything answers: the answer is then that of the IN query,
exact in the set it reads.  Strings compare as DuckDB compares VARCHAR (by code point, as Python
compares ``str``).  The same text compared with a DATE or TIMESTAMP column is a date
(``l_shipdate >= '1994-01-01'``), and :func:`resolve_box` makes it a range of days
(:mod:`parzen.aqp.dates`).

An OR of equalities and IN lists with strings on one column (SSB Q3's ``(c_city = 'UNITED KI1' OR
c_city = 'UNITED KI5')``) is one IN list (:func:`collapse_equalities`), so that it reads like any
other IN on a categorical column rather than as a union of boxes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

from . import dates
from .row_predicates import conjuncts

_DUCKDB = DuckDB()  # node.sql(dialect="duckdb") looks the dialect up and makes a new one per call

#: Tests on a string: (operator, operands); operators "<", "<=", ">", ">=", "between", "like",
#: "not like", "<>", "not in".
_OPERATORS: dict[type[exp.Expr], str] = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.NEQ: "<>"}
_ORDER = {"<": lambda v, a: v < a, "<=": lambda v, a: v <= a, ">": lambda v, a: v > a, ">=": lambda v, a: v >= a}


@dataclass(frozen=True)
class TextTest:
    """One test of a text value: ``operator`` with its ``operands`` (strings), and the predicate's
    ``node`` (its SQL, :attr:`shown`, is made only for a message)."""

    operator: str
    operands: tuple[str, ...]
    node: exp.Expr = field(compare=False, repr=False)

    @functools.cached_property
    def shown(self) -> str:
        """The predicate's DuckDB SQL, generated when first read (0.02-0.05 ms a test, in messages only)."""
        return _DUCKDB.generate(self.node)

    def holds(self, value: str) -> bool:
        """Whether ``value`` passes (as DuckDB compares VARCHAR values and matches LIKE patterns)."""
        return bool(self.passing([value]))

    def passing(self, values: list[str]) -> list[str]:
        """The ``values`` that pass, in order (one pass over them: a column may have 1000 values)."""
        op, first = self.operator, self.operands[0]
        if op in _ORDER:
            test = _ORDER[op]
            return [v for v in values if test(v, first)]
        if op == "between":
            return [v for v in values if first <= v <= self.operands[1]]
        if op in ("like", "not like"):
            match, wanted = _pattern(first).fullmatch, op == "like"
            return [v for v in values if (match(v) is not None) == wanted]
        if op == "<>":
            return [v for v in values if v != first]
        excluded = set(self.operands)  # "not in"
        return [v for v in values if v not in excluded]


def _pattern(like: str) -> re.Pattern:
    """The regular expression of a LIKE pattern: ``%`` any run, ``_`` any one character (no escapes)."""
    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in like), re.DOTALL)


class ValuesWhere(frozenset):
    """The values of a column that pass :attr:`tests` (and lie in :attr:`among`, when given): an IN
    set known only against the synopsis, which :func:`resolve_box` makes one.  It stands among a
    query's IN sets, so ``&`` with another set (two predicates on one column) keeps both; it is
    truthy (a box with it is not empty on its face)."""

    tests: tuple[TextTest, ...]
    among: frozenset | None

    def __new__(cls, tests: tuple[TextTest, ...], among: frozenset | None = None) -> Self:
        made = super().__new__(cls)
        made.tests, made.among = tests, among
        return made

    def __and__(self, other):  # type: ignore[override]
        return _both(self, other)

    def __rand__(self, other):  # type: ignore[override]
        return _both(other, self)

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, ValuesWhere) and (self.tests, self.among) == (other.tests, other.among)

    def __hash__(self) -> int:
        return hash((self.tests, self.among))

    def __repr__(self) -> str:
        return f"ValuesWhere({' AND '.join(t.shown for t in self.tests)}{'' if self.among is None else f', among {sorted(self.among, key=str)}'})"


def _both(a: frozenset, b: frozenset) -> ValuesWhere:
    tests = (a.tests if isinstance(a, ValuesWhere) else ()) + (b.tests if isinstance(b, ValuesWhere) else ())
    sets = [s.among if isinstance(s, ValuesWhere) else frozenset(s) for s in (a, b)]
    present = [s for s in sets if s is not None]
    among = None if not present else present[0] if len(present) == 1 else present[0] & present[1]
    return ValuesWhere(tests, among)


def text_test(node: exp.Expr, column_side, literal_text) -> ValuesWhere | None:
    """The :class:`ValuesWhere` of a predicate comparing a column with strings, or None when ``node``
    is none: a comparison or BETWEEN with string literals, LIKE, NOT LIKE, ``<>`` a string and NOT IN
    strings.  ``literal_text(node)`` is a string literal's text or None."""
    def made(operator: str, operands) -> ValuesWhere:
        return ValuesWhere((TextTest(operator, tuple(operands), node),))

    negated = isinstance(node, exp.Not)
    inner = node.this.unnest() if negated else node
    if isinstance(inner, exp.Like) and (text := literal_text(inner.expression)) is not None:
        like = negated == bool(inner.args.get("negate"))  # sqlglot writes col NOT LIKE p as LIKE with negate
        return made("like" if like else "not like", (text,))
    if negated and isinstance(inner, exp.In) and not inner.args.get("query"):
        texts = [literal_text(v) for v in inner.expressions]
        return made("not in", texts) if texts and all(t is not None for t in texts) else None
    if negated:
        return None
    if isinstance(node, exp.Between):
        low, high = literal_text(node.args["low"]), literal_text(node.args["high"])
        return None if low is None or high is None else made("between", (low, high))
    operator = _OPERATORS.get(type(node))
    if operator is None:
        return None
    left_is_column = column_side(node.this)
    text = literal_text(node.expression if left_is_column else node.this)
    if text is None:
        return None
    if not left_is_column:  # 'a' < col is col > 'a'
        operator = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(operator, operator)
    return made(operator, (text,))


#: The mark (in a sqlglot node's ``meta``) of an IN that :func:`collapse_equalities` made of ORs of
#: equalities with numbers: on a column that is not categorical it is the union of those points.
POINTS = "parzen_points"


def collapse_equalities(condition: exp.Expr, column_name: Callable[[exp.Expr], str | None],
                        literal_text: Callable[[exp.Expr], str | None],
                        is_number: Callable[[exp.Expr], bool]) -> exp.Expr:
    """``condition`` with each OR whose every branch is ``col = literal`` or ``col IN (literals)`` on one
    column, all strings or all numbers, replaced by one ``col IN (...)`` (order kept, duplicate strings
    dropped); one of numbers is marked :data:`POINTS`.  ``column_name(node)`` names a column node
    (None: not a column); ``literal_text(node)`` reads a string literal (None: not one);
    ``is_number(node)`` tells a number literal."""

    def literal(node: exp.Expr) -> exp.Expr | None:
        return node if literal_text(node) is not None or is_number(node) else None

    def equality(node: exp.Expr) -> tuple[str, exp.Expr, list[exp.Expr]] | None:
        if isinstance(node, exp.EQ):
            for col, lit in ((node.this, node.expression), (node.expression, node.this)):
                if (name := column_name(col)) is not None and literal(lit) is not None:
                    return name, col, [lit]
        if isinstance(node, exp.In) and not node.args.get("query") and (name := column_name(node.this)) is not None \
                and node.expressions and all(literal(v) is not None for v in node.expressions):
            return name, node.this, list(node.expressions)
        return None

    def rewrite(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Or):
            return node
        found = [equality(b) for b in conjuncts(node, exp.Or)]
        if any(f is None for f in found) or len({f[0] for f in found if f is not None}) != 1:
            return node
        values = [v for f in found if f is not None for v in f[2]]
        texts = [literal_text(v) for v in values]
        if all(t is not None for t in texts):
            first = found[0]
            assert first is not None
            return exp.In(this=first[1].copy(), expressions=[exp.Literal.string(t) for t in dict.fromkeys(texts)])
        if any(t is not None for t in texts):  # strings and numbers: left as it is
            return node
        first = found[0]
        assert first is not None
        collapsed = exp.In(this=first[1].copy(), expressions=[v.copy() for v in values])
        collapsed.meta[POINTS] = True
        return collapsed

    whole = rewrite(condition)  # an OR made one IN as a whole: the IN is made of copies, no copy of the OR needed
    return whole if whole is not condition else condition.transform(rewrite, copy=True)


def resolve_box(ranges: dict, members: dict, temporal: dict[str, str], known_values: dict[str, list],
                stored: Callable[[str], str]) -> list[tuple[dict, dict]]:
    """A box (ranges, IN sets) of a parsed query made concrete for one synopsis: the boxes whose union it is.

    - A :class:`ValuesWhere` on a categorical column becomes the IN set of its exact values that pass
      (``known_values[column]``, NULL never passes); on a DATE / TIMESTAMP column (``temporal``), its
      order tests become ranges of days, and an equality with a date's text a one-day range.
    - Ranges on DATE / TIMESTAMP columns must have date bounds (:class:`parzen.aqp.dates.Days`), and
      others must not.
    - An OR of equalities with numbers on one column (:data:`POINTS`) is an IN set on a categorical
      column, and on a modelled one the union of one box per value (a one-point range each).

    ``stored(name)`` spells a column as the synopsis does.  This is the one translation of text
    predicates: a WHERE's box and a CASE WHEN condition's alike.

    Parameters
    ----------
    ranges : dict of str to Range
        The box's ranges.
    members : dict of str to frozenset
        Its IN sets, some of them :class:`ValuesWhere`.
    temporal : dict of str to str
        The synopsis's DATE / TIMESTAMP columns (``Synopsis.temporal``).
    known_values : dict of str to list
        Each categorical column's exact values (``Categories.values``).
    stored : callable
        Column name as written -> as the synopsis spells it.

    Returns
    -------
    list of (dict, dict)
        Boxes (ranges, plain IN sets) whose union the box is: one unless points were expanded.

    Raises
    ------
    UnsupportedQuery
        A text predicate on a column that is neither categorical nor a date, a date compared with a
        number column, a number with a date column, or a text test that has no meaning on dates.
    ValueError
        Text compared with a date column that is not a date.
    """
    from .sql import Range, UnsupportedQuery

    ranges, plain = dict(ranges), {}
    points: dict[str, frozenset] = {}
    for column, values in members.items():
        name = stored(column)
        if name in temporal:
            for r in _date_ranges(name, values):
                ranges[name] = ranges[name].intersect(r) if name in ranges else r
            continue
        if isinstance(values, ValuesWhere) and not values.tests and values.among is not None:  # points
            if name in known_values:
                plain[column] = values.among
            else:
                points[column] = values.among
            continue
        if isinstance(values, ValuesWhere):
            if name not in known_values:
                raise UnsupportedQuery(f"{values.tests[0].shown} (text comparisons and LIKE on categorical columns "
                                       f"and dates only; {name!r} is neither)")
            known = known_values[name]
            passing = [v for v in known if isinstance(v, str)]  # NULL never passes
            if len(passing) < len(known) - (None in known):
                raise UnsupportedQuery(f"{values.tests[0].shown} (text compared with {name!r}, a categorical column "
                                       "of numbers or booleans: compare it with numbers)")
            if values.among is not None:
                passing = [v for v in passing if v in values.among]
            for test in values.tests:
                passing = test.passing(passing)
            values = frozenset(passing)
        plain[column] = values
    for column, r in ranges.items():
        is_date = stored(column) in temporal
        for bound in (r.low, r.high):
            if bound is not None and isinstance(bound, dates.Days) != is_date:
                what = (f"the {temporal[stored(column)].upper()} column {column!r} compared with the number {bound!r} "
                        "(compare it with a date: DATE 'YYYY-MM-DD')") if is_date else \
                    f"the column {column!r}, which is not a DATE or TIMESTAMP column, compared with a date"
                raise UnsupportedQuery(what)
    boxes = [(ranges, plain)]
    for column, values in points.items():  # one box per point of each column
        boxes = [({**r, column: r[column].intersect(Range(column, v, v)) if column in r else Range(column, v, v)}, m)
                 for r, m in boxes for v in sorted(values)]
    return boxes


def _days(text: str, test: TextTest) -> dates.Days:
    """:func:`parzen.aqp.dates.days` of an operand of ``test``, whose SQL the error names (made only then)."""
    try:
        return dates.days(text)
    except ValueError:
        return dates.days(text, test.shown)  # raises again, naming the predicate


def _date_ranges(column: str, values: frozenset) -> list:
    """The ranges of days that text tests or equalities with date texts on the date ``column`` mean."""
    from .sql import Range, UnsupportedQuery

    if isinstance(values, ValuesWhere):
        unordered = [t for t in values.tests if t.operator not in ("between", ">", ">=", "<", "<=")]
        if unordered:
            raise UnsupportedQuery(f"{unordered[0].shown} (on a date column: comparisons, BETWEEN and = with dates)")
    else:
        texts = [v for v in values if isinstance(v, str)]
        if len(values) != 1 or len(texts) != 1:
            raise UnsupportedQuery(f"IN / = on the date column {column!r} with {sorted(values, key=str)} (one date "
                                   "per equality; write a range: col >= DATE 'a' AND col < DATE 'b')")
        day = dates.days(texts[0], f"{column} = '{texts[0]}'")
        return [Range(column, day, day)]
    out = []
    if values.among is not None:
        out += _date_ranges(column, values.among)
    for test in values.tests:
        bounds = [_days(t, test) for t in test.operands]
        if test.operator == "between":
            out.append(Range(column, bounds[0], bounds[1]))
        elif test.operator in (">", ">="):
            out.append(Range(column, low=bounds[0], low_inclusive=test.operator == ">="))
        else:
            out.append(Range(column, high=bounds[0], high_inclusive=test.operator == "<="))
    return out


#: Aggregates of a DATE / TIMESTAMP column that a synopsis answers (and DuckDB computes on dates).
_DATE_AGGREGATES = ("count", "min", "max", "quantile", "count_distinct")


def _folded_names(synopsis) -> dict[str, str]:
    """The synopsis's column names (modelled, group, categorical) by their casefolded spelling, made once per
    synopsis and kept on it until its columns are replaced (every sub-query of a CASE / ratio query, every
    answer, reads them)."""
    sources = (synopsis.models, synopsis.group_by, synopsis.categories)
    kept = synopsis.__dict__.get("_folded_names")
    if kept is None or any(a is not b for a, b in zip(kept[0], sources)):
        folded = {name.casefold(): name for name in [*synopsis.models, *synopsis.group_by,
                                                     *(synopsis.categories.values if synopsis.categories else ())]}
        kept = synopsis.__dict__["_folded_names"] = (sources, folded)
    return kept[1]


def resolve_query(query, synopsis):
    """``query`` (a parsed :class:`parzen.aqp.sql.AggregateQuery`) with every box made concrete for
    ``synopsis`` by :func:`resolve_box`; an aggregate of a DATE / TIMESTAMP column other than COUNT,
    MIN, MAX, quantiles and COUNT(DISTINCT) raises :class:`parzen.aqp.sql.UnsupportedQuery`.
    A query with no text test on a synopsis without dates comes back as it is.

    Parameters
    ----------
    query : AggregateQuery
        The parsed query (names as written).
    synopsis : Synopsis
        The synopsis that answers it.

    Returns
    -------
    AggregateQuery
    """
    from .sql import MAX_BOXES, UnsupportedQuery

    temporal = synopsis.temporal
    boxes = [(query.ranges, query.members), *query.boxes]
    if not temporal and not any(isinstance(v, ValuesWhere) for _, members in boxes for v in members.values()):
        return query
    folded = _folded_names(synopsis)

    def stored(name: str) -> str:
        return folded.get(name.casefold(), name)

    for a in query.aggregates:
        dated = [c for c in a.inputs if stored(c) in temporal]
        if dated and (a.func not in _DATE_AGGREGATES or a.polynomial or a.parts):
            raise UnsupportedQuery(f"{a.name} (of the {temporal[stored(dated[0])].upper()} column {dated[0]!r}: "
                                   "COUNT, MIN, MAX, quantiles and COUNT(DISTINCT) only)")
    known = synopsis.categories.values if synopsis.categories is not None else {}
    pairs = query.box_compared or ((),) * len(query.boxes or boxes[:1])  # each box's comparisons of two columns
    resolved, compared = [], []
    for (ranges, members), box_pairs in zip(query.boxes or boxes[:1], pairs):
        for b in resolve_box(ranges, members, temporal, known, stored):
            resolved.append(b)
            compared.append(box_pairs)
    if len(resolved) == 1:
        return query.replaced(ranges=resolved[0][0], members=resolved[0][1], boxes=(), box_compared=(),
                       compared=query.compared + compared[0])
    if len(resolved) > MAX_BOXES:
        raise UnsupportedQuery(f"a WHERE whose OR / NOT expand to {len(resolved)} boxes (at most {MAX_BOXES})")
    return query.replaced(ranges={}, members={}, boxes=tuple(resolved),
                   box_compared=tuple(compared) if any(compared) else ())
