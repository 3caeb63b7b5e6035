"""Templates of query texts: a query's quoted texts cut out as holes, so that texts that differ only there
share one sqlglot parse (a dashboard asks TPC-H Q5 for another region, SSB Q2 for another brand).

:func:`cut` makes the template, the text with each quoted text replaced by the hole ``'parzen_t0'``,
``'parzen_t1'``, ...; the caller parses the template once (cached), :func:`holes` finds the holes in its
tree (:func:`read`), and :meth:`Template.filled` puts a query's texts back into a copy of it (0.03-0.1 ms
against the parse's 0.2-0.5 ms of a TPC-H join; the template's first text gets the parsed tree itself).  Used by :func:`parzen.aqp.sql.parse` and
:func:`parzen.aqp.case_aggregates.composite_tree`.
"""

from __future__ import annotations

import re
from typing import Generic, TypeVar

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
    return read(tree, 0)[1]


def read(tree: exp.Expr, count: int) -> tuple[list[str], bool, Holes | None]:
    """One walk of a template's ``tree``, :func:`detached` on the way: the names of its placeholders (``:name``),
    whether a column of it is qualified, and its holes, or None unless they are the ``count`` holes, each once,
    under :data:`PARENTS`."""
    placeholders: list[str] = []
    qualified = False
    found: dict[str, exp.Expr] | None = {}
    for node in tree.walk():
        node._meta = None
        node.comments = node.comments or None
        if isinstance(node, exp.Column):
            qualified = qualified or bool(node.table)
        elif isinstance(node, exp.Placeholder):
            placeholders.append(node.name)
        elif found is not None and isinstance(node, exp.Literal) and node.is_string and node.this.startswith(HOLE):
            if node.this in found or not isinstance(node.parent, PARENTS):
                found = None
            else:
                found[node.this] = node
    if found is None or sorted(found) != sorted(f"{HOLE}{k}" for k in range(count)):
        return placeholders, qualified, None
    by_parent: dict[tuple[Step, ...], list[tuple[str, int | None, int]]] = {}
    for k in range(count):
        *to_parent, (key, index) = _path(found[f"{HOLE}{k}"])
        by_parent.setdefault(tuple(to_parent), []).append((key, index, k))
    return placeholders, qualified, tuple((path, tuple(of_parent)) for path, of_parent in by_parent.items())


def _path(node: exp.Expr) -> tuple[Step, ...]:
    """The steps from the root to ``node``: (argument, index in it or None) each."""
    steps: list[Step] = []
    while (parent := node.parent) is not None:
        steps.append((str(node.arg_key), node.index))
        node = parent
    return tuple(reversed(steps))


class Template(Generic[Tree]):
    """A template's parsed tree (read only once handed out) and its holes (:func:`read`).

    :meth:`filled` gives the tree itself, its holes filled, to the first text (a text asked once pays no
    copy), and a copy to every later one: each fill writes every hole, and nothing reads a handed-out tree
    but to read it, so the copies never see the first text's texts.  Exactly one caller gets the tree itself,
    however many threads ask at once (a list's pop is atomic)."""

    __slots__ = ("_unused", "holes", "tree")

    def __init__(self, tree: Tree, holes: Holes) -> None:
        self.tree, self.holes, self._unused = tree, holes, [True]

    def filled(self, texts: list[str]) -> Tree:
        """The template's tree with ``texts`` in its holes: the tree itself for the first call, else a copy."""
        try:
            self._unused.pop()
            tree = self.tree
        except IndexError:
            tree = self.tree.copy()
        for path, of_parent in self.holes:
            parent: exp.Expr = tree
            for key, index in path:
                parent = parent.args[key] if index is None else parent.args[key][index]
            for key, index, k in of_parent:
                (parent.args[key] if index is None else parent.args[key][index]).args["this"] = texts[k]
        return tree
