"""The first-answer shortcuts agree with the paths they shorten (issue 19, first answers).

A WHERE read term by term (no AND of copies made) parses as the whole condition did, and leaves a cached
template's tree as it was; a stratum key's IN / = test by set look-ups is ``_same`` literal by literal.
"""

from __future__ import annotations

import datetime
import itertools

import pytest

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
    tree = sql._template_tree(sql._NUMBERS.sub(_placeholders(), first), 4, 0)  # the parse's cached template
    before = repr(tree), [(id(node), id(node.parent)) for node in tree.walk()]  # its nodes and their parents
    again = sql.parse("SELECT SUM(x) FROM t, u WHERE tk = uk AND (a = 5 OR a = 6) AND b > 7 AND c < 8")
    assert (repr(tree), [(id(node), id(node.parent)) for node in tree.walk()]) == before
    assert _listed(again.members["a"]) == {5, 6} and again.ranges["b"].low == 7.0 and again.ranges["c"].high == 8.0


def _listed(values) -> set:
    """An IN's values: those of the set, or of an IN of numbers the points it lists (``among``)."""
    return set(getattr(values, "among", None) or values)


def _placeholders():
    count = itertools.count()
    return lambda m: m.group(1) or m.group(2) or f":parzen_{next(count)}"


def test_an_or_that_stays_takes_the_boxes_path():
    query = sql.parse("SELECT SUM(x) FROM t WHERE (a = 1 OR b = 2) AND c = 3")
    assert len(query.boxes) == 2
