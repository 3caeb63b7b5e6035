"""Templates of query texts: a query's quoted texts cut out as holes, so that texts that differ only there
share one sqlglot parse (a dashboard asks TPC-H Q5 for another region, SSB Q2 for another brand).

:func:`cut` makes the template, the text with each quoted text replaced by the hole ``'parzen_t0'``,
``'parzen_t1'``, ...; the caller parses the template once (cached), :func:`holes` finds the holes in its
tree, and :func:`filled` puts a query's texts back into a copy of it (0.03-0.1 ms against the parse's
0.2-0.5 ms of a TPC-H join; a text asked once pays that copy beside the parse).  Used by :func:`parzen.aqp.sql.parse` and
:func:`parzen.aqp.case_aggregates.composite_tree`.
"""

from __future__ import annotations

import re
from typing import TypeVar

from sqlglot import exp

#: A quoted text ('...', no quote inside); the text between two of them is what :func:`cut` keeps.
TEXT = re.compile(r"'([^']*)'")
#: Parents of a text that sqlglot's parser builds alike whatever the text says (a function may read its
#: text argument: a format, a unit, a JSON path; INTERVAL reads its text): only texts under them are holes.
PARENTS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Like, exp.ILike, exp.Between,
           exp.If, exp.Case, exp.Cast)
#: Hole ``k`` of a template is the text ``'parzen_tk'``.
HOLE = "parzen_t"
#: A step from a node to one of its children: (argument, index in it or None).
Step = tuple[str, int | None]
#: Per parent of holes, its path from the root and its holes (argument, index or None, number of the text).
Holes = tuple[tuple[tuple[Step, ...], tuple[tuple[str, int | None, int], ...]], ...]

Tree = TypeVar("Tree", bound=exp.Expr)


def cut(sql: str) -> tuple[str, list[str]] | None:
    """``sql``'s template and its quoted texts in order, or None where it has none or its quoting is unusual:
    a double quote, backslash, dollar or comment anywhere, a quote inside a text (``'it''s'``), a text
    prefixed (E'...', X'...') or not followed by something."""
    parts = TEXT.split(sql)
    if len(parts) < 3 or any(mark in sql for mark in ('"', "\\", "$", "--", "/*")):
        return None
    outside = parts[::2]
    if any("'" in part or not part or part[-1:].isalnum() or part[-1:] == "_" for part in outside[:-1]) or \
            "'" in outside[-1]:
        return None  # adjacent texts ('it''s'), a stray quote, a prefixed text
    texts = parts[1::2]
    return "".join(part + (f"'{HOLE}{k}'" if k < len(texts) else "") for k, part in enumerate(outside)), texts


def detached(tree: exp.Expr) -> bool:
    """Drop the parser's token positions and empty comment lists from every node of ``tree`` (each copy of
    a node deep-copies them in Python: 4x the cost of the copy); whether a column of it is qualified, seen
    on the way."""
    qualified = False
    for node in tree.walk():
        node._meta = None
        node.comments = node.comments or None
        if isinstance(node, exp.Column) and node.table:
            qualified = True
    return qualified


def holes(tree: exp.Expr, count: int) -> Holes | None:
    """The holes of a template's ``tree``, or None unless they are the ``count`` holes, each once, under
    :data:`PARENTS`."""
    found = {}
    for node in tree.walk():
        if isinstance(node, exp.Literal) and node.is_string and node.this.startswith(HOLE):
            if node.this in found or not isinstance(node.parent, PARENTS):
                return None
            found[node.this] = node
    if sorted(found) != sorted(f"{HOLE}{k}" for k in range(count)):
        return None
    by_parent: dict[tuple[Step, ...], list[tuple[str, int | None, int]]] = {}
    for k in range(count):
        *to_parent, (key, index) = _path(found[f"{HOLE}{k}"])
        by_parent.setdefault(tuple(to_parent), []).append((key, index, k))
    return tuple((path, tuple(of_parent)) for path, of_parent in by_parent.items())


def _path(node: exp.Expr) -> tuple[Step, ...]:
    """The steps from the root to ``node``: (argument, index in it or None) each."""
    steps: list[Step] = []
    while (parent := node.parent) is not None:
        steps.append((str(node.arg_key), node.index))
        node = parent
    return tuple(reversed(steps))


def filled(tree: Tree, template_holes: Holes, texts: list[str]) -> Tree:
    """A copy of a template's ``tree`` with ``texts`` put in its holes (``template_holes``, :func:`holes`)."""
    tree = tree.copy()
    for path, of_parent in template_holes:
        parent = tree
        for key, index in path:
            parent = parent.args[key] if index is None else parent.args[key][index]
        for key, index, k in of_parent:
            (parent.args[key] if index is None else parent.args[key][index]).args["this"] = texts[k]
    return tree
