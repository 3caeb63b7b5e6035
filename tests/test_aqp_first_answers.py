"""The first-answer shortcuts agree with the paths they shorten (issue 19, first answers).

A WHERE read term by term (no AND of copies made) parses as the whole condition did, and leaves a cached
template's tree as it was; a stratum key's IN / = test by set look-ups is ``_same`` literal by literal.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools

import pytest
from sqlglot import exp

from parzen.aqp import sql
from parzen.aqp.strata import _member_test, _same

STORED = [None, 1, 1.0, 2, True, False, 0, -0.0, float("nan"), 3.5, "a", "1", "1.0", "None", 2 ** 53 + 1]
LITERALS = [1, 2, 0, True, 3.5, float("nan"), -0.0, 2 ** 53, "a", "1", "None", "x"]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_member_test_is_same_literal_by_literal(size):
    for literals in map(frozenset, itertools.combinations(LITERALS, size)):
        test = _member_test(literals)
        for stored in STORED:
            assert test(stored) == any(_same(stored, v) for v in literals), (stored, literals)


def test_member_test_refuses_as_same_does():
    """A date stored against number literals raises TypeError in both (float() of a date)."""
    with pytest.raises(TypeError):
        any(_same(datetime.date(2020, 1, 1), v) for v in (1, 2))
    with pytest.raises(TypeError):
        _member_test(frozenset({1, 2}))(datetime.date(2020, 1, 1))


@pytest.mark.parametrize("where, members, ranges", [
    ("(a = 'x' OR a = 'y') AND b > 3 AND c = 1", {"a": {"x", "y"}}, {"b", "c"}),
    ("a = 'x' OR a = 'y'", {"a": {"x", "y"}}, set()),
    ("(a = 1 OR a = 2) AND (b = 'p' OR b IN ('q', 'r')) AND c BETWEEN 1 AND 5", {"a": {1, 2}, "b": {"p", "q", "r"}},
     {"c"}),
])
def test_a_conjunction_of_equalities_and_ors_parses_term_by_term(where, members, ranges):
    query = sql.parse(f"SELECT SUM(x) FROM t WHERE {where}")
    assert {c: _listed(v) for c, v in query.members.items()} == members
    assert set(query.ranges) == ranges and not query.boxes


def test_reading_terms_leaves_the_cached_template_as_it_was():
    first = "SELECT SUM(x) FROM t, u WHERE tk = uk AND (a = 1 OR a = 2) AND b > 3 AND c < 10"  # unqualified: read as is
    sql.parse(first)
    tree, qualified, _ = sql._template_tree(sql._NUMBERS.sub(_placeholders(), first), 4, 0)  # the parse's cached template
    assert not qualified
    before = repr(tree), [(id(node), id(node.parent)) for node in tree.walk()]  # its nodes and their parents
    again = sql.parse("SELECT SUM(x) FROM t, u WHERE tk = uk AND (a = 5 OR a = 6) AND b > 7 AND c < 8")
    assert (repr(tree), [(id(node), id(node.parent)) for node in tree.walk()]) == before
    assert _listed(again.members["a"]) == {5, 6} and again.ranges["b"].low == 7.0 and again.ranges["c"].high == 8.0


def test_the_template_tells_its_qualified_columns_in_the_walk_that_checks_its_placeholders(monkeypatch):
    """The template's one walk finds its placeholders and whether a column is qualified: the conversion of
    a query without qualified columns walks no tree for them (``find_all`` of columns), nor does that of a
    text without numbers (parsed as it is) and without a dot, and one with them is read as before (on a
    copy, its qualifiers removed)."""
    qualified_text = "SELECT u.b, SUM(t.x) FROM t JOIN u ON t.k = u.k WHERE t.a = 1 AND u.c > 2 GROUP BY u.b"
    plain_text = "SELECT b, SUM(x) FROM t JOIN u ON k = uk WHERE a = 1 AND c > 2 GROUP BY b"
    assert sql._template_tree(sql._NUMBERS.sub(_placeholders(), qualified_text), 2, 0)[1]
    tree, qualified, _ = sql._template_tree(sql._NUMBERS.sub(_placeholders(), plain_text), 2, 0)
    assert not qualified
    sql.parse.cache_clear()
    walked = []
    find_all = type(tree).find_all
    monkeypatch.setattr(type(tree), "find_all", lambda self, *types, **kw: walked.append(types) or find_all(self, *types, **kw))
    query = sql.parse(plain_text)
    without_numbers = sql.parse("SELECT b, COUNT(*) FROM t JOIN u ON k = uk WHERE a = 'x' GROUP BY b")  # no template
    assert exp.Column not in [t for types in walked for t in types]  # neither a dot in the text
    assert query.join_on == without_numbers.join_on == (((None, "k"), (None, "uk")),)
    assert without_numbers.members == {"a": frozenset({"x"})}
    monkeypatch.undo()
    query = sql.parse(qualified_text)
    assert query.group_by == ("b",) and query.joined == ("u",) and query.join_on == ((("t", "k"), ("u", "k")),)
    assert query.ranges == {"a": sql.Range("a", 1.0, 1.0), "c": sql.Range("c", low=2.0, low_inclusive=False)}


def _listed(values) -> set:
    """An IN's values: those of the set, or of an IN of numbers the points it lists (``among``)."""
    return set(getattr(values, "among", None) or values)


def _placeholders():
    count = itertools.count()
    return lambda m: m.group(1) or m.group(2) or f":parzen_{next(count)}"


def test_an_or_that_stays_takes_the_boxes_path():
    query = sql.parse("SELECT SUM(x) FROM t WHERE (a = 1 OR b = 2) AND c = 3")
    assert len(query.boxes) == 2


REPLACED_FROM = [
    "SELECT g, COUNT(*), SUM(x) FROM t WHERE a BETWEEN 1 AND 5 AND b IN ('p', 'q') GROUP BY g",
    "SELECT SUM(x * y) FROM t, u WHERE tk = uk AND c < d AND (a = 1 OR b > 2)",
]


@pytest.mark.parametrize("text", REPLACED_FROM)
@pytest.mark.parametrize("changes", [
    {}, {"table": "v"}, {"ranges": {}, "members": {}}, {"compared": ()}, {"joined": ("w",), "group_by": ()},
    {"select": ("g",)},
])
def test_replaced_is_dataclasses_replace(text, changes):
    """``AggregateQuery.replaced`` makes the query ``dataclasses.replace`` makes, with its cached properties made
    anew from the new fields (read once on the old query first, so that a copied cache would show)."""
    query = sql.parse(text)
    assert query.aggregates is query.aggregates  # cached on the old query
    made, expected = query.replaced(**changes), dataclasses.replace(query, **changes)
    assert made == expected and made is not query and type(made) is sql.AggregateQuery
    assert made.aggregates == expected.aggregates and made.columns == expected.columns
    assert vars(made).keys() - {"aggregates"} == {f.name for f in dataclasses.fields(sql.AggregateQuery)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.table = "x"  # type: ignore[misc]


def test_replaced_refuses_a_name_that_is_no_field():
    with pytest.raises(TypeError, match="no field 'tables'"):
        sql.parse("SELECT COUNT(*) FROM t").replaced(tables=("u",))
