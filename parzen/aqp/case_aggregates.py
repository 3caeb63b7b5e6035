"""CASE inside aggregates and arithmetic of aggregates: a SELECT list split into totals under conditions.

A select item such as TPC-H Q14's

    100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
           / SUM(l_extendedprice * (1 - l_discount))

is an arithmetic expression (+, -, *, /, numbers) of *leaves*, each a total of the table under the
query's WHERE AND-ed with some CASE conditions: COUNT(*), COUNT(col) or SUM(expression of columns).
The CASE expressions become leaves by the rules of SQL (a WHEN that is NULL is not taken):

- branch k of ``CASE WHEN c_1 THEN v_1 ... WHEN c_m THEN v_m ELSE v_0 END`` is taken on the rows
  where c_k is true and no earlier c_j is, whose indicator is 1[c_k] prod_{j<k} (1 - 1[c_j]) =
  sum over subsets S of {1..k-1} of (-1)^|S| 1[c_k and c_S] (inclusion-exclusion; the ELSE branch
  the same with every c_j), so every leaf's condition is a conjunction, which goes through the same
  predicate translation as a WHERE (:func:`parzen.aqp.sql.parse`);
- SUM(CASE ...) = sum over branches and subsets of +-SUM(v) under the conjunction, where a number v
  gives v COUNT(*), and 0 or NULL nothing; COUNT(CASE ...) = the same with COUNT(v) (COUNT(*) for a
  literal, nothing for NULL); AVG(X) = SUM(X) / COUNT(X), for any X, so AVG(CASE WHEN c THEN x END)
  is SUM(x) / COUNT(x) under c;
- SUM(CASE ...) with a NULL branch (no ELSE, ELSE NULL, THEN NULL) is NULL, as in DuckDB, in a group
  where no row takes a branch of another value: the count of those rows (COUNT(*) of a literal's
  branch, COUNT(column) of a column's, COUNT(*) of an expression's) rides along as
  ``("null_if_none", sum, count)``; where the count is known to be 0 (exact: the exact aggregate
  tables, or the strata's exact totals) the answer is NULL, elsewhere the estimate
  (:func:`parzen.aqp.ratios.approximate`).  NULLs inside an expression under THEN are not counted.

Leaves under the same conjunction share one sub-query: ``SELECT <group columns>, <leaves> FROM <the
query's tables> WHERE (<its WHERE>) AND (<conditions>) GROUP BY <its groups>``, built from the query's
parsed tree and converted as :func:`parzen.aqp.sql.parse` converts a query (no SQL text is generated
and parsed again: the sub-query's tree shares the query's nodes, which stay unchanged); the first
sub-query has no condition and counts the rows, so that every group of the query is returned, also
one where a CASE total is 0.  :mod:`parzen.aqp.ratios` answers them and the arithmetic, with the
delta method.  DuckDB's exact answer runs the query re-generated from its tree (never the user's text).

Refused by name (:class:`~parzen.aqp.sql.UnsupportedQuery`): a CASE outside SUM / COUNT / AVG or
nested in an expression under them, nested CASEs, more than :data:`MAX_WHENS` WHEN branches, COUNT of
an expression, AVG of an expression in arithmetic, other aggregates or functions beside these.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from . import text_templates
from .sql import (
    _DUCKDB,
    AggregateQuery,
    SharedClauses,
    UnsupportedQuery,
    _query,
    _select,
    generated,
    narrowed,
    shared_clauses,
)

#: Most WHEN branches of one CASE (the ELSE branch expands to 2^m conjunctions).
MAX_WHENS = 3
#: The name of the row count every first sub-query carries.
ROWS = "__parzen_rows"
#: Prefix of the leaves' names in the sub-queries.
LEAF = "__parzen_leaf_"
#: DuckDB's text of COUNT(*) (:func:`_count_star`), the aggregate of most CASE leaves (never generated).
_COUNT_STAR = "COUNT(*)"

#: An arithmetic expression of leaves: ("leaf", k) | ("number", v) | ("+" | "-" | "*" | "/", a, b) |
#: ("null_if_none", a, n): a, NULL where the count n is known to be 0 (SUM of a CASE that can be NULL).
Expression = tuple


@dataclass(frozen=True)
class Leaf:
    """A total under the query's WHERE and ``conditions`` (DuckDB SQL texts, AND-ed, sorted).

    ``aggregate`` is the DuckDB text of COUNT(*), COUNT(column) or SUM(expression of columns).
    """

    aggregate: str
    conditions: tuple[str, ...]


@dataclass(frozen=True)
class Output:
    """One output column: its name (the alias, or DuckDB's text of the item) and its expression."""

    name: str
    expression: Expression


@dataclass(frozen=True)
class Composite:
    """A query whose SELECT list has CASE inside aggregates or arithmetic of aggregates.

    ``select``: group column names (as written) or :class:`Output`; ``leaves``; ``subqueries``: per
    distinct conjunction, the sub-query parsed (:class:`~parzen.aqp.sql.AggregateQuery`, names as
    written) and the indices of the leaves it answers (in its select order after the group columns,
    each named ``LEAF + index``); the first has no condition and selects :data:`ROWS` first.
    """

    select: tuple[str | Output, ...]
    group_by: tuple[str, ...]
    leaves: tuple[Leaf, ...]
    subqueries: tuple[tuple[AggregateQuery, tuple[int, ...]], ...]
    #: The query's parsed tree (read only: the sub-queries share its nodes).
    tree: exp.Select = field(repr=False, compare=False)

    @property
    def outputs(self) -> tuple[Output, ...]:
        return tuple(item for item in self.select if isinstance(item, Output))

    @functools.cached_property
    def exact_sql(self) -> str:
        """The query re-generated with every output aliased by its name (for DuckDB's exact answer, whose
        columns are then named as the approximate answer's); made when first read (the approximate
        answer never needs it)."""
        exact = self.tree.copy()  # a tree of its own: aliased and generated without more copies
        exact.set("expressions", [item if isinstance(selected, str) else
                                  exp.alias_(item.unalias(), selected.name, quoted=True, copy=False)
                                  for item, selected in zip(exact.expressions, self.select)])
        return exact.sql(dialect="duckdb", copy=False)


def split(sql: str) -> Composite | None:
    """The :class:`Composite` of ``sql``, or None when its SELECT list has neither CASE inside an
    aggregate nor arithmetic of aggregates (or it is not one parsable SELECT: :func:`parzen.aqp.sql.parse`
    says why).

    Parameters
    ----------
    sql : str
        One query.

    Returns
    -------
    Composite or None

    Raises
    ------
    UnsupportedQuery
        A CASE or an arithmetic of aggregates outside the forms in the module's notes, named.
    """
    tree = composite_tree(sql)
    return None if tree is None else _split(tree, shared_clauses(tree, _detached(tree)))


def composite_tree(sql: str) -> exp.Select | None:
    """``sql``'s parsed tree when it is one SELECT whose list has CASE inside an aggregate or arithmetic of
    aggregates; else None.

    Texts that differ only in their quoted texts share one parse (:func:`_templated`).

    Parameters
    ----------
    sql : str
        One query.

    Returns
    -------
    sqlglot.exp.Select or None
        Its tree (read only: a :class:`Composite`'s sub-queries share its nodes; :func:`split_refused`
        drops the parser's token positions from it).
    """
    templated = _templated(sql)
    if templated is not None:
        return templated if templated is not False else None
    try:
        statements = _DUCKDB.parse(sql)
    except ParseError:
        return None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        return None
    tree = statements[0]
    return tree if _has_composite(tree) else None


def _has_composite(tree: exp.Select) -> bool:
    return any(_is_composite(item.this if isinstance(item, exp.Alias) else item) for item in tree.expressions)


#: Key of a filled template's root meta: whether a column of it is qualified (:func:`_detached`).
_DETACHED = "parzen_detached_qualified"


@dataclass(frozen=True)
class _Template:
    """A composite query's template (:class:`parzen.aqp.text_templates.Template`, detached) and whether a column
    of it is qualified."""

    texts: text_templates.Template[exp.Select]
    qualified: bool


def _templated(sql: str) -> exp.Select | Literal[False] | None:
    """``sql``'s tree from its template's (:mod:`parzen.aqp.text_templates`: the text with each quoted text a
    hole): the template's tree, parsed once, with the texts put back (a copy from the template's second text
    on, 0.03-0.1 ms instead of the parse's 0.3-0.4 ms for a TPC-H query); False when that template is not a
    composite query; None where no template applies (no text, anything unusual: parsed as written)."""
    found = text_templates.cut(sql)
    if found is None:
        return None
    template, texts = found
    made = _template(template, len(texts))
    if made is None or made is False:
        return made
    tree = made.texts.filled(texts)
    tree._meta = {_DETACHED: made.qualified}  # read by _detached instead of a walk of the tree
    return tree


@functools.lru_cache(maxsize=256)
def _template(template: str, count: int) -> _Template | Literal[False] | None:
    """The :class:`_Template` of a composite query's template with ``count`` holes; False: one SELECT that is
    not composite; None: the template is unusual (not one SELECT, its holes not the ``count`` texts each once
    under :data:`parzen.aqp.text_templates.PARENTS`)."""
    try:
        statements = _DUCKDB.parse(template)
    except (ParseError, TokenError):  # the text's own parse says why
        return None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        return None
    tree = statements[0]
    _, qualified, holes = text_templates.read(tree, count)
    if holes is None:
        return None
    if not _has_composite(tree):
        return False
    return _Template(text_templates.Template(tree, holes), qualified)


def _detached(tree: exp.Select) -> bool:
    """:func:`parzen.aqp.text_templates.detached` of ``tree`` (whether a column of it is qualified; then
    :func:`parzen.aqp.sql.shared_clauses` walks the tree no more); a filled template (:func:`_templated`)
    is detached already, and says whether."""
    meta = tree._meta
    if meta is not None and _DETACHED in meta:
        tree._meta = None
        return meta[_DETACHED]
    return text_templates.detached(tree)


def split_refused(tree: exp.Select) -> Composite | None:
    """The :class:`Composite` of a :func:`composite_tree` when the plain subset refuses the query, else None.

    The plain subset's verdict is :func:`parzen.aqp.sql.parse`'s, read from the same tree (parse's
    conversion of the user's text): a query whose SELECT list has CASE inside an aggregate or arithmetic
    of aggregates is refused there, so this costs one conversion instead of parse's two parses and
    conversions of a refused text.  The conversion reads the tree without its WHERE: it raises at the
    first such item, before it reads the WHERE, and what it reads before (clauses, tables, join
    conditions, GROUP BY, the items before) raises nothing but refusals, or parse's own error of an
    item (:class:`ValueError`), which stands.  Where :func:`parzen.aqp.sql.shared_clauses` reads the
    clauses without an error (for the sub-queries too), only the SELECT list is left to read.

    Parameters
    ----------
    tree : sqlglot.exp.Select
        :func:`composite_tree` of the query.

    Returns
    -------
    Composite or None

    Raises
    ------
    UnsupportedQuery
        As :func:`split`.
    ValueError
        As :func:`parzen.aqp.sql.parse` (a literal that is no finite number, say).
    """
    shared = shared_clauses(tree, _detached(tree))  # read once, for the sub-queries too
    try:
        if shared is None:
            _query(_unowned(exp.Select, {**tree.args, "where": None}), [])
        else:  # its clauses read without an error: what is left of the conversion is the SELECT list's
            _select(tree.expressions, shared.group_by)
    except UnsupportedQuery:
        return _split(tree, shared)
    return None


def _split(tree: exp.Select, shared: SharedClauses | None) -> Composite:
    """:func:`split` of a :func:`composite_tree`, whose clauses ``shared`` read (:func:`parzen.aqp.sql.shared_clauses`)."""
    items = [(item.this if isinstance(item, exp.Alias) else item) for item in tree.expressions]
    group_nodes = list(tree.args["group"].expressions) if tree.args.get("group") else []
    group_by = tuple(g.name if isinstance(g, exp.Column) else g.sql(dialect="duckdb") for g in group_nodes)
    translator = _Translator()
    select: list[str | Output] = []
    for item, node in zip(tree.expressions, items):
        alias = item.alias if isinstance(item, exp.Alias) else None
        if isinstance(node, exp.Column):  # as the plain subset reads a selected column (parzen.aqp.sql)
            if not any(isinstance(g, exp.Column) and g.name.casefold() == node.name.casefold() for g in group_nodes):
                raise UnsupportedQuery(f"the column {node.name} in SELECT without GROUP BY {node.name}")
            if alias and alias != node.name:
                raise UnsupportedQuery(f"renaming the group column {node.name} AS {alias}")
            select.append(node.name)
            continue
        shown = _Shown(node)
        expression = translator.arithmetic(node, shown)
        select.append(Output(alias or str(shown), expression))
    return Composite(tuple(select), group_by, tuple(translator.leaves),
                     _subqueries(tree, group_nodes, translator, shared), tree)


class _Shown:
    """A select item's DuckDB text, generated when first read: the output's name when it has no alias,
    or an error message (generating it copies the item's tree)."""

    __slots__ = ("_node", "_text")

    def __init__(self, node: exp.Expr) -> None:
        self._node, self._text = node, ""

    def __str__(self) -> str:
        if not self._text:
            self._text = _DUCKDB.generate(self._node)
        return self._text


def _is_composite(node: exp.Expr) -> bool:
    """CASE under an aggregate, or a product or quotient of two aggregates (outside any aggregate)."""
    if any(isinstance(f, exp.AggFunc) and f.find(exp.Case) is not None for f in node.find_all(exp.AggFunc)):
        return True
    return any(op.find_ancestor(exp.AggFunc) is None and all(side.find(exp.AggFunc) is not None
                                                             for side in (op.this, op.expression))
               for op in node.find_all(exp.Div, exp.Mul))


class _Translator:
    """Turns select items into :data:`Expression` of leaves: ``leaves`` (leaf -> index), ``aggregates``
    (per index, its aggregate's node) and ``conditions`` (the CASE conditions' nodes by their text)."""

    def __init__(self) -> None:
        self.leaves: dict[Leaf, int] = {}
        self.aggregates: list[exp.Expr] = []
        self.conditions: dict[str, exp.Expr] = {}
        self.shown: _Shown | str = ""
        self.texts: dict[tuple[type, int], str] = {}  # (SUM or COUNT, id of its argument's node) -> text

    def arithmetic(self, node: exp.Expr, shown: _Shown | None = None) -> Expression:
        """The expression of the select item ``node`` (shown as ``shown`` in messages), or of a node of it."""
        if shown is not None:
            self.shown = shown
        if isinstance(node, exp.Paren):
            return self.arithmetic(node.this)
        if isinstance(node, exp.Neg):
            return ("-", ("number", 0.0), self.arithmetic(node.this))
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
            op = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}[type(node)]
            return (op, self.arithmetic(node.this), self.arithmetic(node.expression))
        if isinstance(node, exp.Literal) and not node.is_string:
            return ("number", float(node.this))
        if isinstance(node, exp.Count):
            return self.count(node.this, node)
        if isinstance(node, exp.Sum):
            return self.total(node.this, node)
        if isinstance(node, exp.Avg):
            if node.this.find(exp.Case) is None and not isinstance(node.this, exp.Column):
                raise UnsupportedQuery(f"{node.sql(dialect='duckdb')} in {self.shown} (AVG of a column or of a CASE "
                                       "in arithmetic of aggregates; write SUM(e) / COUNT(*) for an expression)")
            return ("/", self.total(node.this, node), self.count(node.this, node))
        if isinstance(node, exp.Case):
            raise UnsupportedQuery(f"{node.sql(dialect='duckdb')} outside an aggregate (CASE inside SUM, COUNT or AVG)")
        if isinstance(node, exp.Column):
            raise UnsupportedQuery(f"the column {node.sql(dialect='duckdb')} in {self.shown} (arithmetic of "
                                   "aggregates and numbers only)")
        raise UnsupportedQuery(f"{node.sql(dialect='duckdb')} in {self.shown} (arithmetic by +, -, *, / of "
                               "COUNT, SUM and AVG, with CASE inside them, and numbers)")

    def total(self, argument: exp.Expr, call: exp.Expr) -> Expression:
        """SUM(argument): a leaf, or for a CASE the sum over its branches."""
        if isinstance(argument, exp.Distinct):
            raise UnsupportedQuery(f"{call.sql(dialect='duckdb')} (DISTINCT in arithmetic of aggregates)")
        case = _unwrapped(argument)
        if not isinstance(case, exp.Case):
            if argument.find(exp.Case) is not None:
                raise UnsupportedQuery(f"{call.sql(dialect='duckdb')} (a CASE inside an expression under SUM: write "
                                       "SUM(CASE WHEN c THEN expression ELSE 0 END))")
            if isinstance(argument, exp.Star):
                raise UnsupportedQuery("SUM(*)")
            return self.leaf(_unowned(exp.Sum, {"this": argument}), ())
        out: Expression = ("number", 0.0)
        terms = [(sign, conditions, _unwrapped(value)) for sign, conditions, value in self.branches(case, call)]
        for sign, conditions, value in terms:
            if _is_null(value):
                continue
            if _is_number(value):
                k = _number(value)
                if k == 0.0:
                    continue
                term = ("*", ("number", sign * k), self.leaf(_count_star(), conditions))
            elif isinstance(value, exp.Literal):
                raise UnsupportedQuery(f"SUM of the text {value.sql(dialect='duckdb')} in {call.sql(dialect='duckdb')}")
            else:
                term = ("*", ("number", float(sign)), self.leaf(_unowned(exp.Sum, {"this": value}), conditions))
            out = ("+", out, term)
        if not any(_is_null(value) for _, _, value in terms):
            return out
        counted: Expression = ("number", 0.0)  # the rows whose CASE value is not NULL: SUM is NULL without one
        for sign, conditions, value in terms:
            if not _is_null(value):
                counted_rows = _unowned(exp.Count, {"this": value}) if isinstance(value, exp.Column) else _count_star()
                leaf = self.leaf(counted_rows, conditions)
                counted = ("+", counted, ("*", ("number", float(sign)), leaf))
        return ("null_if_none", out, counted)

    def count(self, argument: exp.Expr, call: exp.Expr) -> Expression:
        """COUNT(argument): a leaf, or for a CASE the sum over its branches."""
        if isinstance(argument, exp.Distinct):
            raise UnsupportedQuery(f"{call.sql(dialect='duckdb')} (COUNT(DISTINCT ...) in arithmetic of aggregates)")
        case = _unwrapped(argument)
        if isinstance(argument, exp.Star) or (argument is not None and _is_literal(case)):
            return self.leaf(_count_star(), ())
        if not isinstance(case, exp.Case):
            if not isinstance(argument, exp.Column):
                raise UnsupportedQuery(f"{call.sql(dialect='duckdb')} in {self.shown} (COUNT of *, a column or a "
                                       "CASE)")
            return self.leaf(_unowned(exp.Count, {"this": argument}), ())
        out: Expression = ("number", 0.0)
        for sign, conditions, value in self.branches(case, call):
            value = _unwrapped(value)
            if _is_null(value):
                continue
            if _is_literal(value):
                leaf = self.leaf(_count_star(), conditions)
            elif isinstance(value, exp.Column):
                leaf = self.leaf(_unowned(exp.Count, {"this": value}), conditions)
            else:
                raise UnsupportedQuery(f"COUNT of {value.sql(dialect='duckdb')} in {call.sql(dialect='duckdb')} "
                                       "(a CASE under COUNT gives a literal, a column or NULL)")
            out = ("+", out, ("*", ("number", float(sign)), leaf))
        return out

    def branches(self, case: exp.Case, call: exp.Expr):
        """(sign, conjunction, value) per term of the branches' inclusion-exclusion (module notes)."""
        if case.this is not None:
            raise UnsupportedQuery(f"the simple CASE {case.sql(dialect='duckdb')} in {call.sql(dialect='duckdb')} "
                                   "(write CASE WHEN column = value THEN ...)")
        ifs = case.args.get("ifs") or []
        if len(ifs) > MAX_WHENS:
            raise UnsupportedQuery(f"a CASE of {len(ifs)} WHEN branches in {call.sql(dialect='duckdb')} "
                                   f"(at most {MAX_WHENS})")
        default = case.args.get("default")
        if any(node is not case for node in case.find_all(exp.Case, exp.AggFunc)):  # one walk of the CASE
            _refuse_nesting(ifs, default, call)
        conditions = []
        for branch in ifs:
            text = generated(branch.this)
            self.conditions.setdefault(text, branch.this)
            conditions.append(text)
        taken = [(k, branch.args["true"]) for k, branch in enumerate(ifs)]
        taken.append((len(ifs), default if default is not None else exp.Null()))
        for k, value in taken:
            own = () if k == len(ifs) else (conditions[k],)
            for size in range(k + 1):
                for subset in itertools.combinations(conditions[:k], size):
                    yield (-1) ** size, tuple(sorted(set(own + subset))), value

    def leaf(self, aggregate: exp.Expr, conditions: tuple[str, ...]) -> Expression:
        """The leaf of ``aggregate`` (COUNT(*), or SUM / COUNT of a node of the query's tree) under ``conditions``;
        an aggregate's text is generated once per node (a branch's value is under several conjunctions)."""
        argument = aggregate.this
        text = _COUNT_STAR if isinstance(argument, exp.Star) else self.texts.get((type(aggregate), id(argument)))
        if text is None:
            text = self.texts[type(aggregate), id(argument)] = generated(aggregate)
        key = Leaf(text, conditions)
        index = self.leaves.setdefault(key, len(self.leaves))
        if index == len(self.aggregates):
            self.aggregates.append(aggregate)
        return ("leaf", index)


def _refuse_nesting(ifs: list[exp.Expr], default: exp.Expr | None, call: exp.Expr) -> None:
    """Refuse, naming the first in branch order, a CASE nested in a CASE's branches (``ifs``, ``default``)
    or an aggregate in one of its conditions; an aggregate under THEN or ELSE is refused where its
    sub-query is read."""
    for branch in ifs:
        node = branch.this
        if node.find(exp.Case) is not None or branch.args["true"].find(exp.Case) is not None:
            raise UnsupportedQuery(f"a nested CASE in {call.sql(dialect='duckdb')}")
        if node.find(exp.AggFunc) is not None:
            raise UnsupportedQuery(f"an aggregate in the CASE condition {node.sql(dialect='duckdb')}")
    if default is not None and default.find(exp.Case) is not None:
        raise UnsupportedQuery(f"a nested CASE in {call.sql(dialect='duckdb')}")


def _unwrapped(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is_null(node) -> bool:
    return node is None or isinstance(node, exp.Null)


def _is_number(node) -> bool:
    node = node.this if isinstance(node, exp.Neg) else node
    return isinstance(node, exp.Literal) and not node.is_string


def _is_literal(node) -> bool:
    return _is_number(node) or (isinstance(node, exp.Literal) and node.is_string) or isinstance(node, exp.Boolean)


def _number(node) -> float:
    return -float(node.this.this) if isinstance(node, exp.Neg) else float(node.this)


def _unowned(kind: type[exp.Expr], args: dict) -> exp.Expr:
    """A node of ``kind`` over ``args`` (argument name -> value) that does not adopt them: nodes of the
    query's tree keep their parent there (sqlglot's constructor would re-parent them, and its generator
    reads parents), so that sub-queries share them without copies (a copy deep-copies every identifier's
    position: 0.1 ms for a TPC-H WHERE).  Such a tree is read, never changed; generating its SQL copies
    it first."""
    node = kind()
    node.args.update(args)
    return node


def _count_star() -> exp.Expr:
    return exp.Count(this=exp.Star())


def _subqueries(tree: exp.Select, group_nodes: list[exp.Expr], translator: _Translator,
                shared: SharedClauses | None) -> tuple[tuple[AggregateQuery, tuple[int, ...]], ...]:
    """One sub-query per distinct conjunction (the empty one first, with :data:`ROWS`): its SELECT list and
    conditions read on ``tree``'s clauses as ``shared`` read them once (:func:`parzen.aqp.sql.narrowed`), or
    where that does not apply converted whole, from a tree that shares ``tree``'s FROM, joins, WHERE, GROUP
    BY and condition nodes (:func:`_unowned`)."""
    by_conditions: dict[tuple[str, ...], list[int]] = {(): []}
    for leaf, index in translator.leaves.items():
        by_conditions.setdefault(leaf.conditions, []).append(index)
    clauses = {key: value for key, value in tree.args.items() if key != "expressions"}
    where = tree.args.get("where")
    out = []
    for conditions, indices in by_conditions.items():
        items: list[exp.Expr] = list(group_nodes)
        if not conditions:
            items.append(exp.alias_(_count_star(), ROWS, quoted=True, copy=False))
        items += [_unowned(exp.Alias, {"this": translator.aggregates[index],
                                       "alias": exp.to_identifier(f"{LEAF}{index}", quoted=True)}) for index in indices]
        query = None if shared is None else narrowed(shared, items, [translator.conditions[c] for c in conditions])
        if query is not None:
            out.append((query, tuple(indices)))
            continue
        args = {**clauses, "expressions": items}
        if conditions:  # (WHERE) AND (c_1) AND ...: the tree of that text, as exp.and_ nests it
            parts = ([where.this] if where is not None else []) + [translator.conditions[c] for c in conditions]
            conjunction = _unowned(exp.Paren, {"this": parts[0]})
            for part in parts[1:]:
                conjunction = _unowned(exp.And, {"this": conjunction, "expression": _unowned(exp.Paren, {"this": part})})
            args["where"] = _unowned(exp.Where, {"this": conjunction})
        out.append((_query(_unowned(exp.Select, args), []), tuple(indices)))
    return tuple(out)
