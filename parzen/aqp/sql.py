"""The SQL subset that density synopses answer, parsed with sqlglot and re-generated.

    SELECT [g, ...,] COUNT(*) | COUNT(col) | SUM(col) | AVG(col) [AS alias], ...
                     (or VAR/STDDEV/MIN/MAX(col), SUM/AVG(polynomial of columns), sums of
                      multiples of those: :class:`Aggregate`)
    FROM table [alias] [[INNER] JOIN dim [alias] ON fk = pk [AND ...] | , dim [alias]] ...
                                (inner joins; the equalities of two columns in ON and WHERE are
                                 the join conditions, :func:`_joined`; columns may be qualified
                                 by a table or alias of the query)
    [WHERE p AND p AND ...]     p: col BETWEEN a AND b | col <, <=, >, >=, = number
                                   | col = 'text' | col IN (v, ...)
                                (or OR / NOT / <> over ranges: a union of boxes, :func:`_boxes`;
                                 an OR of equalities on one column is one IN)
                                a, b, number may be dates: DATE '...', CAST('...' AS DATE), '...'::DATE,
                                   TIMESTAMP '...', +/- INTERVAL, and EXTRACT(YEAR FROM col) / YEAR(col)
                                   compared with integers (:mod:`parzen.aqp.dates`)
                                text tests: col BETWEEN / <, <=, >, >= 'text', LIKE / NOT LIKE 'pattern',
                                   <> 'text', NOT IN ('text', ...), resolved against the synopsis's
                                   values (:mod:`parzen.aqp.string_predicates`)
                                col =, <>, <, <=, >, >= col: two columns of a row, AND-ed at the top
                                   level (:mod:`parzen.aqp.row_predicates`; an equality that is no
                                   foreign key of the join synopsis is such a filter, not a join)
    [GROUP BY g, ...]

Anything else raises :class:`UnsupportedQuery`, which names the construct and suggests
``exact=True``.  The exact path never runs the user's text: it runs :func:`to_sql` of the
parsed query, so only what this module understood reaches the database.
"""

from __future__ import annotations

import collections
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError, TokenError

from . import dates, text_templates
from .row_predicates import OPERATORS, ColumnComparison, conjuncts, split_comparisons, split_terms
from .string_predicates import POINTS, ValuesWhere, collapse_equalities, text_test

#: One DuckDB dialect for every parse: ``sqlglot.parse(read="duckdb")`` looks the dialect up by
#: name on every call (a third of a parse's time with the compiled parser, ``sqlglot[c]``).
_DUCKDB = DuckDB()
#: Node types whose DuckDB text sqlglot's generator makes by reading the node alone (:func:`generated`); its
#: methods of some others change the tree in place (a division's operands may be wrapped in a cast, say).
_READ_ONLY_IN_GENERATION = frozenset({
    exp.Column, exp.Identifier, exp.Literal, exp.Star, exp.Null, exp.Boolean, exp.Paren, exp.Neg, exp.Not, exp.And,
    exp.Or, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Like, exp.ILike, exp.Between, exp.Add,
    exp.Sub, exp.Mul, exp.Sum, exp.Count})
#: The arguments of an IN of a list of values (not IN (SELECT ...), IN UNNEST(...)).
_IN_VALUES = frozenset({"this", "expressions"})
#: Output column names DuckDB gives unaliased aggregates (kept so answers look alike).
_DEFAULT_NAME = {"count": "count({})", "sum": "sum({})", "avg": "avg({})"}
_AGGREGATES: dict[type[exp.Expr], str] = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg"}
#: Comparison -> (is the literal a lower bound when the column is on the left, inclusive).
_COMPARISONS: dict[type[exp.Expr], tuple[bool, bool]] = {exp.GT: (True, False), exp.GTE: (True, True), exp.LT: (False, False), exp.LTE: (False, True)}


class UnsupportedQuery(ValueError):
    """The query is outside the subset a synopsis answers; ``exact=True`` runs it in the database.

    ``construct`` names what is outside it: a text, or a function that writes the text when the message
    is first read (a refusal caught and discarded, as the CASE split's check of the plain subset's
    verdict, then never generates the SQL the message quotes: 0.05-0.1 ms a query)."""

    def __init__(self, construct: str | Callable[[], str]) -> None:
        super().__init__(construct)

    @property
    def construct(self) -> str:
        """What is outside the subset, as the message names it."""
        construct = self.args[0]
        if callable(construct):
            construct = construct()
            self.args = (construct,)
        return construct

    def __str__(self) -> str:
        return (f"{self.construct} is not supported by the approximate engine (it answers SELECT COUNT/SUM/AVG, "
                "VAR/STDDEV, MIN/MAX and SUM/AVG of arithmetic of columns FROM one table, or a fact table joined "
                "along the foreign keys of its join synopsis, WHERE range and IN predicates joined by AND, OR and "
                "NOT, GROUP BY columns; docs/aqp.md); "
                "pass exact=True (CLI: --exact) to run it in the database")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.construct!r})"

    def __reduce__(self):
        return type(self), (self.construct,)


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of the SELECT list, named as in the answer.

    Plain ones (:attr:`plain`): COUNT(*) (column None), COUNT(col), SUM(col) or AVG(col).  The others
    (:mod:`parzen.aqp.aggregates` answers them): ``func`` "var_samp", "var_pop", "stddev_samp",
    "stddev_pop", "min", "max", "quantile" (``parameter`` p), "count_distinct" of ``column``;
    "sum" / "avg" of a polynomial in columns (``polynomial``: (coefficient, columns multiplied) per
    term, column None); "combination": sum_k coefficient_k part_k (``parts``), e.g. SUM(a) - SUM(b).
    """

    func: str
    column: str | None
    name: str
    polynomial: tuple[tuple[float, tuple[str, ...]], ...] = ()
    parts: tuple[tuple[float, Aggregate], ...] = ()
    parameter: float | None = None

    @property
    def plain(self) -> bool:
        """COUNT(*), COUNT/SUM/AVG of one column: what :mod:`parzen.aqp.answers` answers itself."""
        return self.func in _DEFAULT_NAME and not self.polynomial

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every column the aggregate reads."""
        read = [] if self.column is None else [self.column]
        read += [c for _, columns in self.polynomial for c in columns]
        read += [c for _, part in self.parts for c in part.inputs]
        return tuple(dict.fromkeys(read))

    def renamed(self, stored) -> Aggregate:
        """The aggregate with every column name ``c`` replaced by ``stored(c)``."""
        return replace(self, column=self.column and stored(self.column),
                       polynomial=tuple((k, tuple(stored(c) for c in cs)) for k, cs in self.polynomial),
                       parts=tuple((k, part.renamed(stored)) for k, part in self.parts))


@dataclass(frozen=True)
class Range:
    """low <(=) column <(=) high; None means unbounded."""

    column: str
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def intersect(self, other: Range) -> Range:
        low, low_inc = _tighter(self.low, self.low_inclusive, other.low, other.low_inclusive, max)
        high, high_inc = _tighter(self.high, self.high_inclusive, other.high, other.high_inclusive, min)
        return Range(self.column, low, high, low_inc, high_inc)

    def contains(self, value: float) -> bool:
        above = self.low is None or value > self.low or (self.low_inclusive and value == self.low)
        below = self.high is None or value < self.high or (self.high_inclusive and value == self.high)
        return above and below


def _tighter(a, a_inc, b, b_inc, pick):
    if a is None:
        return b, b_inc
    if b is None or a == b:
        return a, (a_inc and b_inc) if b is not None else a_inc
    return (a, a_inc) if pick(a, b) == a else (b, b_inc)


@dataclass(frozen=True)
class AggregateQuery:
    """A parsed query: ``select`` lists output columns in order (group column names or aggregates)."""

    table: str
    select: tuple[str | Aggregate, ...]
    ranges: dict[str, Range] = field(default_factory=dict)
    members: dict[str, frozenset] = field(default_factory=dict)
    group_by: tuple[str, ...] = ()
    #: A WHERE with OR / NOT: the union of these boxes (ranges, members), each a conjunction
    #: (:func:`_boxes`); ``ranges`` and ``members`` are then empty.  :mod:`parzen.aqp.unions` answers it.
    boxes: tuple[tuple[dict[str, Range], dict[str, frozenset]], ...] = ()
    #: The other tables of an inner join (FROM ``table`` JOIN ... or FROM ``table``, ...), in order.
    joined: tuple[str, ...] = ()
    #: The join conditions: per equality of two columns, ((table or None, column), (table or None, column)),
    #: the table named by its qualifier (None: unqualified).  :mod:`parzen.aqp.joins` checks them.
    join_on: tuple[tuple[tuple[str | None, str], tuple[str | None, str]], ...] = ()
    #: AND-ed comparisons of two columns of a row (:mod:`parzen.aqp.row_predicates`), answered from the sample.
    compared: tuple[ColumnComparison, ...] = ()
    #: With ``boxes``: per box, the comparisons of two columns AND-ed into it (a WHERE whose OR / NOT
    #: reach comparisons of two columns, :mod:`parzen.aqp.row_predicates`); () when no box has any.
    box_compared: tuple[tuple[ColumnComparison, ...], ...] = ()

    def replaced(self, **changes) -> AggregateQuery:
        """:func:`dataclasses.replace` of the query: its fields with ``changes``, its cached properties made
        anew.  Without ``replace``'s look-up of the fields and keyword call of ``__init__`` on each call
        (1 us instead of 4; an answer's path makes a query anew 5-10 times).

        Parameters
        ----------
        **changes
            New values of fields, by name.

        Returns
        -------
        AggregateQuery

        Raises
        ------
        TypeError
            A name that is no field.
        """
        unknown = changes.keys() - _QUERY_FIELDS
        if unknown:
            raise TypeError(f"AggregateQuery has no field {min(unknown)!r}")
        query = object.__new__(AggregateQuery)
        made, kept = query.__dict__, self.__dict__
        for name in _QUERY_FIELDS:
            made[name] = changes[name] if name in changes else kept[name]
        return query

    @functools.cached_property
    def aggregates(self) -> tuple[Aggregate, ...]:
        """The aggregates of ``select``, in order (made once: a query does not change)."""
        return tuple(item for item in self.select if isinstance(item, Aggregate))

    @property
    def columns(self) -> set[str]:
        """Every column the query reads."""
        used = set(self.ranges) | set(self.members) | set(self.group_by)
        used |= {c for ranges, members in self.boxes for c in [*ranges, *members]}
        used |= {c for comparison in (*self.compared, *(c for box in self.box_compared for c in box))
                 for c in (comparison.left, comparison.right)}
        return used | {c for a in self.aggregates for c in a.inputs}


#: The names of :class:`AggregateQuery`'s fields, in order (:meth:`AggregateQuery.replaced`).
_QUERY_FIELDS = tuple(f.name for f in fields(AggregateQuery))

#: Number literals and quoted identifiers outside quoted text: text (group 1) is matched first and
#: kept, quoted identifiers are group 2, numbers group 3.
_NUMBERS = re.compile(r"""('(?:[^']|'')*')|("(?:[^"]|"")*")|(?<![\w.$:])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])""")
#: Quoted identifiers after these words (a table, an alias) stay in the template: no placeholder goes there.
_NAMED_AFTER = re.compile(r"(?:\bAS|\bFROM|\bJOIN|\.)\s*$", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def parse(sql: str) -> AggregateQuery:
    """Parse ``sql`` into an :class:`AggregateQuery`, or raise :class:`UnsupportedQuery`.

    Cached by text (dashboards repeat queries); callers must not modify the result.  Queries
    that differ only in their numbers and quoted column names share one sqlglot parse: those
    are cut out into placeholders (``:parzen_0``, ... and ``:parzen_c0``, ...; quoted names
    after AS, FROM, JOIN or a dot stay), the template's tree is cached, and the numbers and
    names are read back while the tree is converted (a new query text costs 0.15 ms instead of
    0.5 ms after a DuckDB query has cooled the caches).  Its quoted texts are holes too
    (:mod:`parzen.aqp.text_templates`), put back into the template's tree for its first text and
    into a copy of it for each later one: queries that differ in their texts share the parse as
    well.  Anything unusual (a template whose placeholders are not exactly the cut ones, any
    error) is parsed again from the user's text.
    """
    numbers: list[str] = []
    names: list[str] = []
    source, texts = sql, None
    if (found := text_templates.cut(sql)) is not None:
        source, texts = found

    def hole(match: re.Match) -> str:
        if match.group(1):
            return match.group(1)
        if match.group(2):
            if _NAMED_AFTER.search(source, 0, match.start()) or source.startswith(".", match.end()):
                return match.group(2)
            names.append(match.group(2)[1:-1].replace('""', '"'))
            return f":parzen_c{len(names) - 1}"
        numbers.append(match.group(3))
        return f":parzen_{len(numbers) - 1}"

    template = _NUMBERS.sub(hole, source)
    if (numbers or names or texts) and \
            (read := _template_tree(template, len(numbers), len(names), len(texts or ()))) is not None:
        tree = read[0] if read[2] is None else read[2].filled(texts or [])  # a Template only where texts were cut
        try:
            return _query(tree, numbers, names, read[1])
        except (UnsupportedQuery, ValueError):
            pass  # parsed again below, so that the message quotes the user's text
    # a qualified column is written with a dot: a text without one needs no walk of its tree to look for one
    return _query(_tree(sql), [], qualified=False if "." not in sql else None)


@functools.lru_cache(maxsize=256)
def _template_tree(template: str, count: int, named: int = 0,
                   texts: int = 0) -> tuple[exp.Expr, bool, text_templates.Template | None] | None:
    """The template's tree (read only, detached: :func:`parzen.aqp.text_templates.read`), whether a column of
    it is qualified (:func:`_joined`'s ``qualified``) and, where it has ``texts`` text holes, the
    :class:`~parzen.aqp.text_templates.Template` that fills them (None: no text holes), or None unless its
    placeholders are the ``count`` cut numbers and ``named`` cut names and its holes the ``texts`` cut texts."""
    try:
        statements = _DUCKDB.parse(template)
    except (ParseError, TokenError):
        return None
    if len(statements) != 1 or statements[0] is None:
        return None
    tree = statements[0]
    found, qualified, holes = text_templates.read(tree, texts)  # one walk (30 us on a join of five tables)
    expected = sorted([f"parzen_{k}" for k in range(count)] + [f"parzen_c{k}" for k in range(named)])
    if sorted(found) != expected or (texts and holes is None):
        return None
    return tree, qualified, None if not texts or holes is None else text_templates.Template(tree, holes)


def _statements(sql: str) -> list[exp.Expr | None]:
    try:
        return _DUCKDB.parse(sql)
    except ParseError as err:
        raise ValueError(f"could not parse the SQL: {err}") from err


def _tree(sql: str) -> exp.Expr:
    statements = _statements(sql)
    if len(statements) != 1 or statements[0] is None:
        raise UnsupportedQuery(f"{len(statements)} statements (give exactly one SELECT)")
    return statements[0]


def _query(tree: exp.Expr, numbers: list[str], names=(), qualified: bool | None = None) -> AggregateQuery:
    """The query of a parsed statement; ``numbers[k]`` is the text of placeholder ``:parzen_k``,
    ``names[k]`` the column name of ``:parzen_ck``; ``qualified`` as :func:`_joined`'s."""
    tree, tables, join_on, terms, where, owned = _joined(_check_clauses(tree), names, qualified=qualified)
    table, joined = tables[0], tuple(tables[1:])
    group_by = _group_by(tree, names)
    select = _select(tree.expressions, group_by, names, numbers)
    ranges: dict[str, Range] = {}
    members: dict[str, frozenset] = {}
    compared: tuple[ColumnComparison, ...] = ()
    column_of = lambda node: _column(node, "WHERE", names) if _is_column(node) else None
    read = _read_alone(terms, column_of) if terms else None
    if read is not None:
        compared = _add_terms(read, ranges, members, column_of, numbers, names)
        return AggregateQuery(table, select, ranges, members, group_by, joined=joined, join_on=join_on,
                              compared=compared)
    condition = _conjunction(terms, where, owned)
    own = False  # whether the condition is made here (a copy, or an AND of the owned tree's terms), not the tree's
    if condition is not None:
        condition = _rewritten(condition, numbers, names)
        own = where is None or condition is not where.this
        compared, condition = split_comparisons(condition, column_of, copy=not own)  # comparisons of two columns
    if condition is not None and condition.find(exp.Or, exp.Not, exp.NEQ) is not None:
        boxes, box_compared = _boxes(condition, numbers, names, copy=not own)
        if len(boxes) > 1:
            return AggregateQuery(table, select, {}, {}, group_by, boxes=boxes, joined=joined, join_on=join_on,
                                  compared=compared, box_compared=box_compared if any(box_compared) else ())
        ranges, members = boxes[0] if boxes else ({}, {})
        return AggregateQuery(table, select, ranges, members, group_by, joined=joined, join_on=join_on,
                              compared=compared + (box_compared[0] if box_compared else ()))
    for predicate in conjuncts(condition) if condition is not None else ():
        _add_predicate(predicate, ranges, members, numbers, names)
    return AggregateQuery(table, select, ranges, members, group_by, joined=joined, join_on=join_on, compared=compared)


def _check_clauses(tree: exp.Expr) -> exp.Select:
    """``tree``, refused where it is no SELECT or has a clause outside the subset."""
    if not isinstance(tree, exp.Select):
        raise UnsupportedQuery(f"{tree.sql(dialect='duckdb')!r} (not a SELECT statement)")
    for arg, construct in (("having", "HAVING"), ("order", "ORDER BY"), ("limit", "LIMIT"),
                           ("offset", "OFFSET"), ("distinct", "SELECT DISTINCT"), ("with_", "WITH"),
                           ("qualify", "QUALIFY"), ("windows", "WINDOW")):
        if tree.args.get(arg):
            raise UnsupportedQuery(construct)
    return tree


def _group_by(tree: exp.Select, names) -> tuple[str, ...]:
    """The GROUP BY's column names."""
    return tuple(_column(g, "GROUP BY", names) for g in (tree.args["group"].expressions if tree.args.get("group") else ()))


def _select(items, group_by: tuple[str, ...], names=(), numbers=()) -> tuple[str | Aggregate, ...]:
    """The SELECT list ``items`` read (group columns and :class:`Aggregate`), refused without an aggregate."""
    select = tuple(_select_item(item, group_by, names, numbers) for item in items)
    if not any(isinstance(item, Aggregate) for item in select):
        raise UnsupportedQuery("a SELECT without an aggregate")
    return select


def _read_alone(terms: list[exp.Expr], column_of) -> list[exp.Expr] | None:
    """WHERE's terms (AND-ed) with their ORs of equalities on one column made IN, term by term (as
    :func:`_rewritten` makes them in the whole condition), when each is then read alone
    (:func:`_add_terms`): no OR, NOT or dates' parts left, and ``<>`` only as a term ``column <> 'text'``
    (a text test, of which the OR / NOT path, :func:`_boxes`, makes the same one box).  None otherwise:
    the whole condition is rewritten, and read as a union of boxes where it has OR / NOT."""
    read = []
    for t in terms:
        found = list(t.find_all(exp.Or, exp.Not, exp.NEQ, *dates.DATE_PARTS))  # one walk of the term tells all
        if not found:  # most terms
            read.append(t)
            continue
        if any(isinstance(n, (exp.Not, *dates.DATE_PARTS)) for n in found) or \
                (any(isinstance(n, exp.NEQ) for n in found) and not _is_text_inequality(t)):
            return None
        if not any(isinstance(n, exp.Or) for n in found):
            read.append(t)
            continue
        collapsed = collapse_equalities(t, column_of, _string, _is_number)  # a copy, its ORs of equalities made IN
        if collapsed.find(exp.Or) is not None:
            return None
        read.append(collapsed)
    return read


def _is_text_inequality(node: exp.Expr) -> bool:
    """``column <> 'text'`` (either way round)."""
    if not isinstance(node, exp.NEQ):
        return False
    sides = (node.this, node.expression)
    return any(_is_column(a) and _string(b) is not None for a, b in (sides, sides[::-1]))


def _add_terms(read: list[exp.Expr], ranges: dict[str, Range], members: dict[str, frozenset], column_of,
               numbers, names) -> tuple[ColumnComparison, ...]:
    """Add the terms of :func:`_read_alone` to a box (the terms are read as they are, no AND made of copies of
    them); returns their comparisons of two columns."""
    compared, rest = split_terms(read, column_of)
    for predicate in rest:
        _add_predicate(predicate, ranges, members, numbers, names)
    return compared


@dataclass(frozen=True)
class SharedClauses:
    """The clauses that queries differing only in their SELECT list and in conditions AND-ed to the WHERE
    share, read once (:func:`shared_clauses`): tables, join conditions, GROUP BY, and the WHERE's
    comparisons of two columns and box (read only; :func:`narrowed` copies it)."""

    table: str
    joined: tuple[str, ...]
    join_on: tuple[tuple[tuple[str | None, str], tuple[str | None, str]], ...]
    group_by: tuple[str, ...]
    compared: tuple[ColumnComparison, ...]
    ranges: dict[str, Range]
    members: dict[str, frozenset]


def shared_clauses(tree: exp.Select, qualified: bool | None = None) -> SharedClauses | None:
    """The clauses of ``tree`` (its SELECT list aside) as :func:`_query` reads them, for :func:`narrowed`;
    None where a query over them may be read otherwise than term after term: a qualified column anywhere
    in ``tree`` (read on a copy), a WHERE that :func:`_read_alone` leaves to the OR / NOT path, or any
    error (the query's own conversion then raises it in its place).

    Parameters
    ----------
    tree : sqlglot.exp.Select
        A parsed query without placeholders (read, never changed).
    qualified : bool, optional
        Whether a column of ``tree`` is qualified, where the caller has walked the tree already
        (None: looked for here, one more walk of it).

    Returns
    -------
    SharedClauses or None
    """
    if qualified:
        return None
    column_of = lambda node: _column(node, "WHERE") if _is_column(node) else None
    try:
        tree, tables, join_on, terms, _, owned = _joined(_check_clauses(tree), (), qualified)
        if owned:
            return None
        group_by = _group_by(tree, ())
        read = _read_alone(terms, column_of)
        if read is None:
            return None
        ranges: dict[str, Range] = {}
        members: dict[str, frozenset] = {}
        compared = _add_terms(read, ranges, members, column_of, [], ())
    except (UnsupportedQuery, ValueError):
        return None
    return SharedClauses(tables[0], tuple(tables[1:]), join_on, group_by, compared, ranges, members)


def narrowed(shared: SharedClauses, items: list[exp.Expr], conditions: list[exp.Expr]) -> AggregateQuery | None:
    """:func:`_query` of the query over ``shared``'s clauses with the SELECT list ``items`` and its WHERE
    AND-ed with ``conditions`` (``WHERE (w) AND (c_1) AND ...``), reading only ``items`` and ``conditions``
    (nodes of the tree ``shared`` was read from: no qualified column).  None where the conditions' terms are
    not read alone (:func:`_read_alone`): the caller converts the whole query.

    Parameters
    ----------
    shared : SharedClauses
        :func:`shared_clauses` of the query's tree.
    items : list of sqlglot.exp.Expr
        The SELECT list.
    conditions : list of sqlglot.exp.Expr
        Conditions AND-ed to the WHERE, in order.

    Returns
    -------
    AggregateQuery or None

    Raises
    ------
    UnsupportedQuery, ValueError
        As :func:`_query` of that query (its items and conditions are read in its order).
    """
    select = _select(items, shared.group_by)
    column_of = lambda node: _column(node, "WHERE") if _is_column(node) else None
    join_on, terms = list(shared.join_on), []
    for node in (node for condition in conditions for node in conjuncts(condition)):
        if shared.joined and isinstance(node, exp.EQ) and _is_column(node.left) and _is_column(node.right):
            join_on.append((_qualified(node.left, {}, ()), _qualified(node.right, {}, ())))  # as _joined: unqualified
        else:
            terms.append(node)
    read = _read_alone(terms, column_of)
    if read is None:
        return None
    ranges, members = dict(shared.ranges), dict(shared.members)
    compared = shared.compared + _add_terms(read, ranges, members, column_of, [], ())
    return AggregateQuery(shared.table, select, ranges, members, shared.group_by, joined=shared.joined,
                          join_on=tuple(join_on), compared=compared)


def _rewritten(condition: exp.Expr, numbers, names) -> exp.Expr:
    """A WHERE with the years of dates compared with integers made ranges of dates
    (:func:`parzen.aqp.dates.years_as_dates`) and ORs of string equalities on one column made one IN
    (:func:`parzen.aqp.string_predicates.collapse_equalities`)."""
    if condition.find(exp.Or, *dates.DATE_PARTS) is None:  # each rewrite copies the tree: only when it has work
        return condition
    if condition.find(*dates.DATE_PARTS) is not None:
        condition = dates.years_as_dates(condition, lambda node: _number(node, condition, numbers))
    if condition.find(exp.Or) is None:
        return condition
    return collapse_equalities(condition, lambda node: _column(node, "WHERE", names) if _is_column(node) else None,
                               _string, _is_number)


def _string(node: exp.Expr) -> str | None:
    """A string literal's text (None: ``node`` is no string literal)."""
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _joined(tree: exp.Select, names,
            qualified: bool | None = None) -> tuple[exp.Select, list[str], tuple, list[exp.Expr], exp.Where | None, bool]:
    """The query's tables (FROM first), its join conditions and the terms of the rest of its WHERE
    (with the ON clauses' other predicates; :func:`_conjunction` makes them one condition), on a copy of
    ``tree`` whose columns lost their qualifiers (``tree`` itself when none is qualified: it is read,
    never changed), the WHERE and whether the terms are the copy's (owned).

    Inner joins only: ``JOIN d ON ...``, ``INNER JOIN``, ``CROSS JOIN`` and ``FROM a, b``; every
    equality of two columns in ON, or in WHERE's top-level conjunction, is a join condition here (the
    engine keeps those that are, or imply, the foreign keys of its join synopsis and makes the others
    row filters, :func:`parzen.aqp.row_predicates.separate_filters`; :func:`parzen.aqp.joins.covered`
    refuses what is left).
    A qualifier must name a table or alias of the query; a table read twice, outer, semi, anti,
    natural, ASOF and USING joins raise :class:`UnsupportedQuery`.  ``qualified``: whether a column of
    ``tree`` is qualified, where the caller knows it (None: looked for here, a walk of the whole tree).
    """
    first = _table(tree)
    entries = [first]
    joins = tree.args.get("joins") or []
    for j in joins:
        side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
        if side or kind not in ("", "INNER", "CROSS") or j.args.get("method") or j.args.get("match_condition"):
            shown = " ".join(w for w in (j.args.get("method") or "", side, kind) if w).upper()
            raise UnsupportedQuery(f"{shown} JOIN (only inner joins along foreign keys)")
        if j.args.get("using"):
            raise UnsupportedQuery("JOIN ... USING (write the join condition as ON fk = pk)")
        entries.append(_table_entry(j.this))
    if qualified is None:
        qualified = any(column.table for column in tree.find_all(exp.Column))
    if not joins and not qualified:
        where = tree.args.get("where")
        return tree, [first[0]], (), [] if where is None else list(conjuncts(where.this)), where, False
    by_name: dict[str, str] = {}
    reads = collections.Counter(n.casefold() for n, _ in entries)  # how often each table is read
    for name, alias in entries:
        for label in {name.casefold(), (alias or name).casefold()}:
            if label in by_name and by_name[label] != name or reads[name.casefold()] > 1:
                raise UnsupportedQuery(f"the table {name} read twice (a self-join)")
            by_name[label] = name
    if qualified:  # the qualifiers are removed below, on a copy (``tree`` may be a cached template's)
        tree = tree.copy()
    terms: list[exp.Expr] = []
    for j in tree.args.get("joins") or []:
        if j.args.get("on") is not None:
            terms.extend(conjuncts(j.args["on"]))
    where = tree.args.get("where")
    if where is not None:
        terms.extend(conjuncts(where.this))
    join_on, rest = [], []
    for node in terms:
        if isinstance(node, exp.EQ) and _is_column(node.left) and _is_column(node.right):
            join_on.append(tuple(_qualified(side, by_name, names) for side in (node.left, node.right)))
        else:
            rest.append(node)
    for column in list(tree.find_all(exp.Column)) if qualified else ():
        if column.table:
            if column.table.casefold() not in by_name or column.args.get("db") or column.args.get("catalog"):
                raise UnsupportedQuery(f"the qualified column {column.sql(dialect='duckdb')} (its qualifier names no "
                                       "table or alias of the query)")
            column.set("table", None)
    return tree, [name for name, _ in entries], tuple(join_on), rest, where, bool(qualified)


def _conjunction(rest: list[exp.Expr], where: exp.Where | None, owned: bool) -> exp.Expr | None:
    """The AND of ``rest`` (None: empty): WHERE's own condition when ``rest`` is its terms, as they are
    (read, never changed: no copy); else a new AND, of ``rest`` itself where the tree is ``owned`` (a
    copy made here), of copies otherwise (``rest`` may be a cached template's)."""
    if not rest:
        return None
    if where is not None and len(rest) == sum(1 for _ in conjuncts(where.this)) and \
            all(a is b for a, b in zip(rest, conjuncts(where.this))):
        return where.this
    return exp.and_(*rest, copy=not owned)


def _qualified(node: exp.Expr, by_name: dict[str, str], names) -> tuple[str | None, str]:
    """(table or None, column) of a join condition's side."""
    table = node.table if isinstance(node, exp.Column) else ""
    if table and table.casefold() not in by_name:
        raise UnsupportedQuery(f"the qualified column {node.sql(dialect='duckdb')} (its qualifier names no table "
                               "or alias of the query)")
    column = node.name if isinstance(node, exp.Column) else _column(node, "a join condition", names)
    return (by_name[table.casefold()] if table else None), column


def _table(tree: exp.Select) -> tuple[str, str | None]:
    """The FROM table's name and alias."""
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None:
        raise UnsupportedQuery("a SELECT without FROM")
    return _table_entry(source.this)


def _table_entry(table: exp.Expr) -> tuple[str, str | None]:
    """A table of FROM or JOIN: its name and alias (None: none)."""
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise UnsupportedQuery(f"FROM {table.sql(dialect='duckdb')} (a subquery or table function)")
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedQuery(f"a qualified table name {table.sql(dialect='duckdb')}")
    return table.name, (table.alias or None)


def _is_column(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) or (isinstance(node, exp.Placeholder) and node.name.startswith("parzen_c"))


def _column(node: exp.Expr, where: str, names=()) -> str:
    if isinstance(node, exp.Placeholder) and node.name.startswith("parzen_c") and names:
        return names[int(node.name.removeprefix("parzen_c"))]
    if not isinstance(node, exp.Column) or node.table:
        raise UnsupportedQuery(f"{node.sql(dialect='duckdb')!s} in {where} (only plain column names)")
    return node.name


def _select_item(item: exp.Expr, group_by: tuple[str, ...], names=(), numbers=()) -> str | Aggregate:
    alias = None
    if isinstance(item, exp.Alias):
        alias, item = item.alias, item.this
    if _is_column(item):
        name = _column(item, "SELECT", names)
        grouped = next((g for g in group_by if g.casefold() == name.casefold()), None)  # DuckDB ignores case
        if grouped is None:
            raise UnsupportedQuery(f"the column {name} in SELECT without GROUP BY {name}")
        if alias and alias != name:
            raise UnsupportedQuery(f"renaming the group column {name} AS {alias}")
        return grouped
    func = _AGGREGATES.get(type(item))
    if func is None or isinstance(item.this, exp.Distinct) or (func != "count" and not _is_column(item.this)
                                                                and not isinstance(item.this, exp.Star)):
        return _extended_aggregate(item, alias, names, numbers)
    argument = item.this
    if isinstance(argument, exp.Star):
        if func != "count":
            raise UnsupportedQuery(f"{func.upper()}(*)")
        return Aggregate("count", None, alias or "count_star()")
    column = _column(argument, f"{func.upper()}(...)", names)
    return Aggregate(func, column, alias or _DEFAULT_NAME[func].format(column))


# --- aggregates beyond COUNT/SUM/AVG of a column (answered by parzen.aqp.aggregates) ---------

#: One-column aggregates by sqlglot's node: (func, DuckDB's name of the output column's function).
_ONE_COLUMN: dict[type[exp.Expr], tuple[str, str]] = {
    exp.Variance: ("var_samp", "var_samp"), exp.VariancePop: ("var_pop", "var_pop"),
    exp.Stddev: ("stddev_samp", "stddev"), exp.StddevSamp: ("stddev_samp", "stddev_samp"),
    exp.StddevPop: ("stddev_pop", "stddev_pop"), exp.Min: ("min", "min"), exp.Max: ("max", "max"),
    exp.Median: ("quantile", "median"),
}
#: Highest total degree of a polynomial under SUM / AVG.
MAX_DEGREE = 4


def _extended_aggregate(item: exp.Expr, alias: str | None, names, numbers) -> Aggregate:
    """The :class:`Aggregate` of a SELECT item that is not COUNT(*), COUNT/SUM/AVG(column): VAR_SAMP,
    VAR_POP, VARIANCE, STDDEV[_SAMP|_POP], MIN, MAX, MEDIAN, QUANTILE_CONT(x, p), PERCENTILE_CONT(p)
    WITHIN GROUP (ORDER BY x), COUNT(DISTINCT x), SUM / AVG of a polynomial in columns, and sums of
    multiples of aggregates (``SUM(a) - 2 * SUM(b)``); anything else raises :class:`UnsupportedQuery`."""
    shown = _Shown(item, names, numbers)
    if isinstance(item, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.Paren)):
        parts = _linear_parts(item, names, numbers, shown)
        return Aggregate("combination", None, alias or str(shown), parts=tuple((k, a) for a, k in parts.items()))
    if type(item) in _ONE_COLUMN:
        func, function_name = _ONE_COLUMN[type(item)]
        if any(v for k, v in item.args.items() if k != "this"):
            raise UnsupportedQuery(f"{shown} in SELECT (one column as the only argument)")
        column = _column(item.this, f"{function_name.upper()}(...)", names)
        return Aggregate(func, column, alias or f"{function_name}({column})", parameter=0.5 if func == "quantile" else None)
    if isinstance(item, exp.PercentileCont) and item.args.get("expression") is not None:  # QUANTILE_CONT(x, p)
        column = _column(item.this, "QUANTILE_CONT(...)", names)
        name = f"quantile_cont({column}, {_shown(item.expression, names, numbers)})"
        return Aggregate("quantile", column, alias or name, parameter=_fraction(item.expression, item, numbers))
    if isinstance(item, exp.WithinGroup) and isinstance(item.this, exp.PercentileCont):
        ordered = item.expression.expressions if isinstance(item.expression, exp.Order) else []
        if len(ordered) != 1 or item.this.args.get("expression") is not None:
            raise UnsupportedQuery(f"{shown} (PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY one column))")
        p = _fraction(item.this.this, item, numbers)
        column = _column(ordered[0].this, "PERCENTILE_CONT(...) WITHIN GROUP (ORDER BY ...)", names)
        name = f"quantile_cont({_shown(item.this.this, names, numbers)} ORDER BY {column})"
        return Aggregate("quantile", column, alias or name, parameter=1.0 - p if ordered[0].args.get("desc") else p)
    if isinstance(item, exp.Count) and isinstance(item.this, exp.Distinct):
        arguments = item.this.expressions
        if len(arguments) != 1:
            raise UnsupportedQuery(f"{shown} (COUNT(DISTINCT one column))")
        column = _column(arguments[0], "COUNT(DISTINCT ...)", names)
        return Aggregate("count_distinct", column, alias or f"count(DISTINCT {column})")
    if isinstance(item, (exp.Sum, exp.Avg)) and not isinstance(item.this, (exp.Star, exp.Distinct)):
        terms = _polynomial(item.this, names, numbers, shown)
        if max(len(columns) for columns in terms) > MAX_DEGREE:
            raise UnsupportedQuery(f"{shown} (a polynomial of degree above {MAX_DEGREE})")
        if not any(columns for columns in terms):
            raise UnsupportedQuery(f"{shown} (SUM / AVG of a constant: use COUNT(*))")
        func = "sum" if isinstance(item, exp.Sum) else "avg"
        return Aggregate(func, None, alias or str(shown), polynomial=tuple((k, m) for m, k in terms.items()))
    if isinstance(item, (exp.Sum, exp.Avg, exp.Count)) and isinstance(item.this, exp.Distinct):
        raise UnsupportedQuery(f"{type(item).__name__.upper()}(DISTINCT ...)")
    raise UnsupportedQuery(f"{shown} in SELECT")


def _shown(node: exp.Expr, names, numbers) -> str:
    """``node``'s DuckDB text with the cut numbers and names put back (for names and messages)."""
    def back(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Placeholder) and n.name.startswith("parzen_c") and names:
            return _ident(names[int(n.name.removeprefix("parzen_c"))])
        if isinstance(n, exp.Placeholder) and n.name.removeprefix("parzen_").isdigit() and numbers:
            return exp.Literal.number(numbers[int(n.name.removeprefix("parzen_"))])
        return n
    if names or numbers:  # the transform made a copy: the generator may change it
        return _DUCKDB.generate(node.transform(back), copy=False)
    return _DUCKDB.generate(node)  # node.sql(dialect="duckdb"), without looking the dialect up


class _Shown:
    """:func:`_shown` of a SELECT item, made when first read (``str``, or in an f-string): an aggregate's
    output name when it has no alias, or an error message; an aggregate with an alias never needs it
    (making it copies the item's tree and generates SQL: 0.1-0.3 ms)."""

    __slots__ = ("_names", "_node", "_numbers", "_text")

    def __init__(self, node: exp.Expr, names, numbers) -> None:
        self._node, self._names, self._numbers = node, names, numbers
        self._text: str | None = None

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = self._text = _shown(self._node, self._names, self._numbers)
        return text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _is_number(node: exp.Expr) -> bool:
    node = node.this if isinstance(node, exp.Neg) else node
    return (isinstance(node, exp.Literal) and not node.is_string) or (
        isinstance(node, exp.Placeholder) and node.name.removeprefix("parzen_").isdigit())


def _fraction(node: exp.Expr, item: exp.Expr, numbers) -> float:
    p = _number(node, item, numbers)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"the quantile's fraction in {_text(item)} must be between 0 and 1, got {p}")
    return p


def _linear_parts(node: exp.Expr, names, numbers, shown: _Shown) -> dict[Aggregate, float]:
    """``node`` (aggregates added, subtracted, multiplied or divided by numbers) as aggregate -> coefficient."""
    if isinstance(node, exp.Paren):
        return _linear_parts(node.this, names, numbers, shown)
    if isinstance(node, exp.Neg):
        return {a: -k for a, k in _linear_parts(node.this, names, numbers, shown).items()}
    if isinstance(node, (exp.Add, exp.Sub)):
        sign = 1.0 if isinstance(node, exp.Add) else -1.0
        parts = _linear_parts(node.this, names, numbers, shown)
        for a, k in _linear_parts(node.expression, names, numbers, shown).items():
            parts[a] = parts.get(a, 0.0) + sign * k
        return parts
    if isinstance(node, exp.Mul) and _is_number(node.this) != _is_number(node.expression):
        number, other = (node.this, node.expression) if _is_number(node.this) else (node.expression, node.this)
        k = _number(number, node, numbers)
        return {a: k * c for a, c in _linear_parts(other, names, numbers, shown).items()}
    if isinstance(node, exp.Div) and _is_number(node.expression) and not _is_number(node.this):
        k = _number(node.expression, node, numbers)
        if k == 0:
            raise ValueError(f"{shown} divides by 0")
        return {a: c / k for a, c in _linear_parts(node.this, names, numbers, shown).items()}
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg)) or _is_number(node) or _is_column(node):
        raise UnsupportedQuery(lambda: f"{shown} in SELECT (aggregates combine by +, -, and * or / by a number only)")
    aggregate = _select_item(node, (), names, numbers)
    assert isinstance(aggregate, Aggregate)  # a column without GROUP BY raised above
    return {aggregate: 1.0}


def _polynomial(node: exp.Expr, names, numbers, shown: _Shown) -> dict[tuple[str, ...], float]:
    """``node``, an arithmetic expression of columns and numbers, as monomial (sorted columns) -> coefficient.
    Zero coefficients stay: a column's NULL makes the whole expression NULL, as in SQL."""
    if isinstance(node, exp.Paren):
        return _polynomial(node.this, names, numbers, shown)
    if _is_number(node):
        return {(): _number(node, node, numbers)}
    if _is_column(node):
        return {(_column(node, "SUM / AVG", names),): 1.0}
    if isinstance(node, exp.Neg):
        return {m: -k for m, k in _polynomial(node.this, names, numbers, shown).items()}
    if isinstance(node, (exp.Add, exp.Sub)):
        sign = 1.0 if isinstance(node, exp.Add) else -1.0
        terms = _polynomial(node.this, names, numbers, shown)
        for m, k in _polynomial(node.expression, names, numbers, shown).items():
            terms[m] = terms.get(m, 0.0) + sign * k
        return terms
    if isinstance(node, exp.Mul):
        left = _polynomial(node.this, names, numbers, shown)
        right = _polynomial(node.expression, names, numbers, shown)
        product: dict[tuple[str, ...], float] = {}
        for m1, k1 in left.items():
            for m2, k2 in right.items():
                m = tuple(sorted(m1 + m2))
                product[m] = product.get(m, 0.0) + k1 * k2
        return product
    if isinstance(node, exp.Div) and _is_number(node.expression):
        k = _number(node.expression, node, numbers)
        if k == 0:
            raise ValueError(f"{shown} divides by 0")
        return {m: c / k for m, c in _polynomial(node.this, names, numbers, shown).items()}
    raise UnsupportedQuery(lambda: f"{_shown(node, names, numbers)} in {shown} (SUM / AVG of columns and numbers "
                           "joined by +, -, * and / by a number)")


def aggregate_sql(a: Aggregate) -> str:
    """DuckDB SQL text of the aggregate ``a`` (identifiers quoted), built from its structure."""
    if a.func == "combination":
        return " + ".join(f"({k!r}) * ({aggregate_sql(part)})" for k, part in a.parts)
    if a.polynomial:
        terms = " + ".join(f"({k!r})" + "".join(f" * {_ident(c).sql(dialect='duckdb')}" for c in columns)
                           for k, columns in a.polynomial)
        return f"{a.func.upper()}({terms})"
    argument = "*" if a.column is None else _ident(a.column).sql(dialect="duckdb")
    if a.func == "count_distinct":
        return f"COUNT(DISTINCT {argument})"
    if a.func == "quantile":
        return f"quantile_cont({argument}, {a.parameter!r})"
    return f"{a.func.upper()}({argument})"


# --- OR and NOT: a union of boxes (answered by parzen.aqp.unions) --------------------------------

#: At most this many boxes in a WHERE's union (inclusion-exclusion integrates up to 2^k - 1 intersections).
MAX_BOXES = 6
#: NOT of a comparison: the comparison of the complement (the column's side kept).
_NEGATED: dict[type[exp.Expr], type[exp.Expr]] = {exp.GT: exp.LTE, exp.GTE: exp.LT, exp.LT: exp.GTE, exp.LTE: exp.GT}
#: NOT of a comparison of two columns: the opposite comparison (=, <> too).
_OPPOSITE: dict[type[exp.Expr], type[exp.Expr]] = {**_NEGATED, exp.EQ: exp.NEQ, exp.NEQ: exp.EQ}


def _boxes(node: exp.Expr, numbers, names, copy: bool = True) -> tuple[tuple[tuple[dict[str, Range],
                                                                               dict[str, frozenset]], ...],
                                                                   tuple[tuple[ColumnComparison, ...], ...]]:
    """A WHERE with OR / NOT as a union of boxes: NOT pushed down to the predicates (De Morgan;
    NOT BETWEEN and <> become two ranges, NOT of a comparison of two columns the opposite
    comparison), then the disjunctive normal form, each conjunction a box (ranges, members) as
    :func:`_add_predicate` makes them, and its comparisons of two columns; boxes that are empty on
    their face (a low end above the high end) are left out.  Each conjunction's AND is made of copies of
    its predicates unless not ``copy`` (``node`` is the caller's own: they are re-parented, which nothing
    here reads).

    Returns
    -------
    boxes : tuple of (ranges, members)
    compared : tuple of tuple of ColumnComparison
        Per box, its comparisons of two columns (:mod:`parzen.aqp.row_predicates`).
    """
    boxes, compared, first = [], [], None
    for conjunction in _disjuncts(node, False):
        ranges: dict[str, Range] = {}
        members: dict[str, frozenset] = {}
        pairs, rest = split_comparisons(exp.and_(*conjunction, copy=copy), lambda n: _column(n, "WHERE", names)
                                        if _is_column(n) else None, copy=False)
        for predicate in conjuncts(rest) if rest is not None else ():
            _add_predicate(predicate, ranges, members, numbers, names)
        first = first or ((ranges, members), pairs)
        if all(r.low is None or r.high is None or r.low <= r.high for r in ranges.values()) and \
                all(members.values()):
            boxes.append((ranges, members))
            compared.append(pairs)
    if len(boxes) > MAX_BOXES:
        raise UnsupportedQuery(f"a WHERE whose OR / NOT expand to {len(boxes)} boxes (at most {MAX_BOXES})")
    if not boxes and first is not None:  # every box empty: one of them answers 0
        return (first[0],), (first[1],)
    return tuple(boxes), tuple(compared)


def _disjuncts(node: exp.Expr, negate: bool) -> list[list[exp.Expr]]:
    """``node`` (negated if ``negate``) in disjunctive normal form: a list of conjunctions of predicates."""
    node = node.unnest()
    if isinstance(node, exp.Not):
        return _disjuncts(node.this, not negate)
    if isinstance(node, (exp.And, exp.Or)):
        left, right = _disjuncts(node.left, negate), _disjuncts(node.right, negate)
        if isinstance(node, exp.Or) != negate:  # OR, or NOT of AND
            return left + right
        if len(left) * len(right) > MAX_BOXES * MAX_BOXES:
            raise UnsupportedQuery(f"a WHERE whose OR / NOT expand to over {MAX_BOXES} boxes")
        return [a + b for a in left for b in right]
    if type(node) in OPERATORS and _is_column(node.this) and _is_column(node.expression):
        # a comparison of two columns: its negation is the opposite comparison (both false on NULL, as SQL's NOT)
        return [[_OPPOSITE[type(node)](this=node.this, expression=node.expression) if negate else node]]
    if isinstance(node, exp.NEQ):
        node, negate = exp.EQ(this=node.this, expression=node.expression), not negate
    if not negate:
        return [[node]]
    if type(node) in _NEGATED:
        return [[_NEGATED[type(node)](this=node.this, expression=node.expression)]]
    if isinstance(node, exp.Between):
        return [[exp.LT(this=node.this, expression=node.args["low"])],
                [exp.GT(this=node.this, expression=node.args["high"])]]
    if isinstance(node, exp.EQ) and not any(isinstance(side, exp.Literal) and side.is_string
                                            for side in (node.this, node.expression)):
        return [[exp.LT(this=node.this, expression=node.expression)], [exp.GT(this=node.this, expression=node.expression)]]
    if isinstance(node, exp.EQ):  # <> 'text': the values but one (parzen.aqp.string_predicates)
        return [[exp.NEQ(this=node.this, expression=node.expression)]]
    if isinstance(node, (exp.Like, exp.In)) and text_test(exp.Not(this=node), _is_column, _string) is not None:
        return [[exp.Not(this=node)]]  # NOT LIKE, NOT IN strings
    raise UnsupportedQuery(f"NOT / <> on {_text(node)} (negated ranges, and NOT IN, <> and NOT LIKE of strings, only)")


def _add_predicate(node: exp.Expr, ranges: dict[str, Range], members: dict[str, frozenset], numbers,
                   names=()) -> None:
    """Add one predicate to a box: a range (numbers, or dates folded to days: :mod:`parzen.aqp.dates`),
    an IN set, or a text test (an order or BETWEEN with strings, LIKE, NOT LIKE, <> or NOT IN strings:
    a :class:`parzen.aqp.string_predicates.ValuesWhere` that the engine resolves against the synopsis)."""
    tested = text_test(node, _is_column, _string)
    if tested is not None:
        side = node.this.unnest().this if isinstance(node, exp.Not) else node.this
        if not _is_column(side) and not isinstance(node, (exp.Between, exp.Not, exp.Like)):
            side = node.expression
        column = _column(side, "WHERE", names)
        members[column] = members[column] & tested if column in members else tested
        return
    if isinstance(node, exp.Between):
        new = Range(_column(node.this, "WHERE", names), _number(node.args["low"], node, numbers),
                    _number(node.args["high"], node, numbers))
    elif isinstance(node, exp.In):
        if node.args.get("query"):
            raise UnsupportedQuery(f"a subquery in {_text(node)}")
        values = frozenset(_value(v, node, numbers) for v in node.expressions)
        if node.meta.get(POINTS):  # ORs of equalities with numbers: categorical or not, the engine decides
            values = ValuesWhere((), values)
        column = _column(node.this, "WHERE", names)
        members[column] = members[column] & values if column in members else values
        return
    elif isinstance(node, exp.EQ):
        column, literal = _sides(node, names)
        value = _value(literal, node, numbers)
        if isinstance(value, str):
            members[column] = members[column] & {value} if column in members else frozenset({value})
            return
        new = Range(column, value, value)
    elif type(node) in _COMPARISONS:
        column, literal, flipped = _sides(node, names, with_flip=True)
        is_lower, inclusive = _COMPARISONS[type(node)]
        value = _number(literal, node, numbers)
        if is_lower != flipped:
            new = Range(column, low=value, low_inclusive=inclusive)
        else:
            new = Range(column, high=value, high_inclusive=inclusive)
    else:
        raise UnsupportedQuery(f"the predicate {_text(node)}")
    ranges[new.column] = ranges[new.column].intersect(new) if new.column in ranges else new


def _text(node: exp.Expr) -> str:
    return node.sql(dialect="duckdb")


def generated(node: exp.Expr) -> str:
    """DuckDB's text of ``node``, a node of a query's tree that stays unchanged: ``node.sql(dialect="duckdb")``.

    sqlglot's generator copies a tree before it generates it, since some of its methods change the tree;
    a tree of :data:`_READ_ONLY_IN_GENERATION` nodes alone (columns, literals, comparisons, IN lists of
    values, LIKE, BETWEEN, AND / OR / NOT, +, -, *, SUM, COUNT) is generated without the copy (a CASE
    condition of 30 texts: 0.02 ms instead of 0.1 ms).  Any other is copied first, as sqlglot does.

    Parameters
    ----------
    node : sqlglot.exp.Expr
        A node of a parsed tree (its parent may hold it or not).

    Returns
    -------
    str
    """
    for n in node.walk():
        if type(n) not in _READ_ONLY_IN_GENERATION or (type(n) is exp.In and not n.args.keys() <= _IN_VALUES):
            return _DUCKDB.generate(node)
    return _DUCKDB.generate(node, copy=False)


def _sides(node, names=(), with_flip=False):
    left, right = node.this, node.expression
    flipped = _is_column(right) and not _is_column(left)
    if flipped:
        left, right = right, left
    column = _column(left, "WHERE", names)
    return (column, right, flipped) if with_flip else (column, right)


def _value(node: exp.Expr, predicate: exp.Expr, numbers):
    """A literal: str for quoted text, float for numbers."""
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return _number(node, predicate, numbers)


def _number(node: exp.Expr, predicate: exp.Expr, numbers) -> float:
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if isinstance(node, exp.Placeholder) and node.name.removeprefix("parzen_").isdigit() and numbers:
        literal = numbers[int(node.name.removeprefix("parzen_"))]
    elif isinstance(node, exp.Literal) and not node.is_string:
        literal = node.this
    elif not negative and (folded := dates.fold(node, lambda n: _number(n, predicate, numbers))) is not None:
        return folded  # a date constant: days since 1970-01-01 (parzen.aqp.dates)
    else:
        raise UnsupportedQuery(f"{_text(node)} in {_text(predicate)} (compare columns with number literals or dates)")
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the literal {literal} in {_text(predicate)} is not a finite number")
    return -value if negative else value


# --- re-generation --------------------------------------------------------------------------


def to_sql(query: AggregateQuery) -> str:
    """The DuckDB SQL of ``query``, built from the parsed structure (identifiers quoted)."""
    items: list[exp.Expr] = []
    for item in query.select:
        if isinstance(item, str):
            items.append(_ident(item))
            continue
        if not item.plain:
            items.append(exp.alias_(exp.maybe_parse(aggregate_sql(item), dialect="duckdb"), item.name, quoted=True))
            continue
        argument = exp.Star() if item.column is None else _ident(item.column)
        call = {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg}[item.func](this=argument)
        items.append(exp.alias_(call, item.name, quoted=True))
    select = exp.select(*items).from_(_table_ident(query.table))
    for other in query.joined:
        select = select.join(_table_ident(other))  # an inner join; its conditions go in WHERE
    conditions: list[exp.Expr] = [exp.EQ(this=_qualified_ident(*a), expression=_qualified_ident(*b))
                                   for a, b in query.join_on]
    conditions += _box_conditions(query.ranges, query.members)
    if query.boxes:
        box_compared = query.box_compared or ((),) * len(query.boxes)
        conditions = conditions[:len(query.join_on)] + [exp.or_(*(
            exp.paren(exp.and_(*_box_conditions(*box), *map(_comparison_sql, pairs)))
            if box[0] or box[1] or pairs else exp.true() for box, pairs in zip(query.boxes, box_compared)))]
    conditions += [_comparison_sql(c) for c in query.compared]
    if conditions:
        select = select.where(exp.and_(*conditions))
    if query.group_by:
        select = select.group_by(*(_ident(g) for g in query.group_by))
    return select.sql(dialect="duckdb")


#: A :class:`~parzen.aqp.row_predicates.ColumnComparison`'s operator -> its sqlglot node.
_COMPARISON_NODES: dict[str, type[exp.Expr]] = {op: node for node, op in OPERATORS.items()}


def _comparison_sql(c: ColumnComparison) -> exp.Expr:
    return _COMPARISON_NODES[c.op](this=_ident(c.left), expression=_ident(c.right))


def _box_conditions(ranges: dict[str, Range], members: dict[str, frozenset]) -> list[exp.Expr]:
    conditions = [_range_sql(r) for r in ranges.values()]
    return conditions + [exp.In(this=_ident(column), expressions=[_literal(v) for v in sorted(values, key=str)])
                         for column, values in members.items()]


def _ident(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _qualified_ident(table: str | None, name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(table, quoted=True) if table else None)


def _table_ident(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _literal(value) -> exp.Expr:
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dates.Days):
        return dates.literal(value)
    return exp.Literal.number(repr(float(value)))


def _range_sql(r: Range) -> exp.Expr:
    parts: list[exp.Expr] = []
    if r.low is not None:
        parts.append((exp.GTE if r.low_inclusive else exp.GT)(this=_ident(r.column), expression=_literal(r.low)))
    if r.high is not None:
        parts.append((exp.LTE if r.high_inclusive else exp.LT)(this=_ident(r.column), expression=_literal(r.high)))
    return exp.and_(*parts) if parts else exp.true()


#: Statements and clauses that write, change settings or run commands: refused anywhere in the tree.
_REFUSED_NODES = (exp.DML, exp.Create, exp.Drop, exp.Command, exp.Pragma, exp.Describe, exp.Summarize, exp.Set,
                  exp.Use, exp.Attach, exp.Detach, exp.Transaction, exp.Commit, exp.Rollback, exp.Show, exp.Analyze,
                  exp.Install, exp.Export)
#: Functions refused by name wherever they appear: scalars that read settings, variables, secrets or the
#: environment, or write (a sequence, the session's random seed), and the table functions that read files or
#: run SQL text (named for a clear message).  Every table function (read_csv, glob, query, duckdb_settings,
#: ...) is refused by position as well: a row source must be a table, a CTE in scope, a subquery or VALUES.
_REFUSED_FUNCTIONS = frozenset({
    "current_setting", "getvariable", "getenv", "which_secret", "nextval", "setseed",
    "read_text", "read_blob", "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json",
    "read_json_auto", "read_json_objects", "read_ndjson", "glob", "query", "query_table",
    "json_execute_serialized_sql",
})
#: Row sources (FROM, JOIN) exact=True reads: tables and CTEs by name, subqueries, VALUES lists, LATERAL subqueries.
_ROW_SOURCES = (exp.Table, exp.Subquery, exp.Values, exp.Lateral)


def read_only_sql(sql: str) -> tuple[str, set[tuple[str, ...]]]:
    """One read-only query, re-generated by sqlglot (for ``exact=True``), and the tables it reads.

    An allow-list, checked on the parsed query and again on its re-generated text (which is what
    runs): exactly one query (SELECT, set operations, WITH, subqueries; comments dropped); every
    row source a table name, a CTE visible in its scope, a subquery, VALUES or a LATERAL
    subquery, so no table function (``read_csv(...)``, ``glob``, ``query``, ``duckdb_settings()``,
    ...) and no file name; no statement or clause that writes or runs a command; none of
    :data:`_REFUSED_FUNCTIONS`.  The tables come as name parts (``("t",)``, ``("main", "t")``):
    the caller checks that they exist, because DuckDB would read a file named like a missing one.
    """
    tree = _one_query(sql)
    tables = _tables_read(tree)
    text = tree.sql(dialect="duckdb", comments=False)
    if _tables_read(_one_query(text)) != tables:
        raise ValueError(f"exact=True could not re-generate the query faithfully; got {text!r}")
    return text, tables


def _one_query(sql: str) -> exp.Query:
    statements = _statements(sql)
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ValueError("exact=True runs one SELECT statement and nothing else")
    return statements[0]


def _tables_read(tree: exp.Query) -> set[tuple[str, ...]]:
    """The name parts of the tables ``tree`` reads (CTE references left out, in their scopes),
    or a ValueError naming the first construct outside the allow-list of :func:`read_only_sql`."""
    refused = next((node for node in tree.walk() if isinstance(node, _REFUSED_NODES)), None)
    if refused is not None:
        raise ValueError(f"exact=True runs read-only queries: {refused.key.upper()} is not allowed")
    tables = set()
    for node in tree.walk():
        problem = _outside_allow_list(node)
        if problem is not None:
            raise ValueError(f"exact=True {problem}")
        if isinstance(node, exp.Table):
            parts = tuple(part.name for part in node.parts)
            if len(parts) > 1 or parts[0].casefold() not in _visible_ctes(node):
                tables.add(parts)
    return tables


def _outside_allow_list(node: exp.Expr) -> str | None:
    """What keeps ``node`` out of :func:`read_only_sql`'s allow-list, or None."""
    if isinstance(node, exp.Func) and _function_name(node) in _REFUSED_FUNCTIONS:
        return f"does not run {_text(node)}: {_function_name(node)}() reads files, settings or the environment, or writes"
    if isinstance(node, (exp.Subquery, exp.CTE)) and not isinstance(node.this, exp.Query):
        return f"runs SELECT queries only, not {_text(node.this)}"
    if (isinstance(node, (exp.From, exp.Join)) and not isinstance(node.this, _ROW_SOURCES)) or \
            (isinstance(node, exp.Lateral) and not isinstance(node.this, exp.Subquery)) or \
            (isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier)):
        return f"reads tables only, not {_text(node.this)} (a table function)"
    if isinstance(node, exp.Table) and not isinstance(node.parent, (exp.From, exp.Join)):
        place = "the statement" if node.parent is None else _text(node.parent)  # a Query's tables have a parent
        return f"reads tables in FROM and JOIN only, not {_text(node)} in {place}"
    return None


def _function_name(node: exp.Func) -> str:
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def _visible_ctes(table: exp.Table) -> set[str]:
    """The CTE names (casefolded: DuckDB matches them case-insensitively) that ``table`` can refer
    to, as DuckDB binds them: those of the WITH of every query that encloses it, where inside a
    CTE's own body only the CTEs defined before it are visible (and itself under WITH RECURSIVE).
    A CTE of a subquery is not visible outside that subquery."""
    visible: set[str] = set()
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            position = next(k for k, cte in enumerate(node.expressions) if cte is child)
            visible |= {cte.alias.casefold() for cte in node.expressions[:position + bool(node.recursive)]}
        elif isinstance(with_ := node.args.get("with_"), exp.With) and with_ is not child:
            visible |= {cte.alias.casefold() for cte in with_.expressions}
        child, node = node, node.parent
    return visible
