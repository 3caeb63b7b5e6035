"""Join synopses along foreign keys: the fact table's sample carries its rows' dimension attributes.

Acharya, Gibbons, Poosala and Ramaswamy, "Join synopses for approximate query answering",
SIGMOD 1999: a join of a fact table with dimension tables along foreign keys (each fact row meets
exactly one row of each dimension) has exactly the fact table's rows, so a uniform sample of the
fact table joined with its dimensions is a uniform sample of the join, and one synopsis of the
join answers every query over any connected part of it (star and snowflake schemas alike).

Here the join is a temporary view over the database's tables, generated from quoted identifiers
checked against the catalog (never user text): ``fact JOIN dim1 ON fk = pk JOIN dim2 ...``, the
dimensions' columns under their own names (a dimension's key column is left out: it equals the
foreign key).  The build reads that view as it reads a table (:func:`parzen.aqp.build.build_synopsis`),
so the sample's rows carry their dimension attributes and every exact total, stratum, categorical
table (:mod:`parzen.aqp.categories`) and gridded form covers dimension columns too.

Checks, each a ValueError naming what is wrong: a missing table or column; a dimension joined twice
(role-playing dimensions need one view per role); a key that is not unique in its dimension; a column
name found in two joined tables; fact rows without a match (NULL or dangling foreign keys: the view
is an inner join, so a synopsis with them would describe fewer rows than the fact table, and the
build refuses, saying how many rows of which key).
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``Engine.build(joins=DECLARED)``: the database's declared FOREIGN KEY constraints.
DECLARED = "declared"
#: The join view's column holding the fact table's rowid (the build's sampling reads it).
ROWID = "rowid"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class JoinEdge:
    """``child.column`` references ``parent.key`` (``child`` is the fact table or a dimension joined before)."""

    child: str
    column: str
    parent: str
    key: str


def view_name(table: str) -> str:
    """The temporary view that holds the join synopsis of ``table``."""
    return f"parzen_join_{table}"


def edges_of(con, fact: str, joins) -> list[JoinEdge]:
    """The foreign keys of a join synopsis of ``fact``, ordered so that each child is joined before.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The database.
    fact : str
        The fact table.
    joins : dict of str to str, or "declared"
        ``{"l_orderkey": "orders.o_orderkey", "orders.o_custkey": "customer.c_custkey"}``: a fact
        column (or ``table.column`` of the fact or of a dimension) to ``dimension.key``; or
        :data:`DECLARED` for the database's FOREIGN KEY constraints reachable from ``fact``.

    Returns
    -------
    list of JoinEdge

    Raises
    ------
    ValueError
        A malformed entry, a missing table or column, a dimension joined twice, a key reached from
        no joined table, or (declared) no foreign keys.
    """
    if isinstance(joins, str):
        if joins != DECLARED:
            raise ValueError(f"joins must be a dict {{'fk': 'dimension.key', ...}} or {DECLARED!r}, got {joins!r}")
        edges = _declared(con, fact)
        if not edges:
            raise ValueError(f"table {fact!r} has no declared FOREIGN KEY constraints; give joins={{'fk': "
                             "'dimension.key', ...}} instead")
    elif isinstance(joins, dict) and joins:
        edges = [_edge(fact, child, parent) for child, parent in joins.items()]
    else:
        raise ValueError(f"joins must be a non-empty dict {{'fk': 'dimension.key', ...}} or {DECLARED!r}, got {joins!r}")
    return _ordered(con, fact, edges)


def _edge(fact: str, child: str, parent: str) -> JoinEdge:
    if not isinstance(child, str) or not isinstance(parent, str) or parent.count(".") != 1 or child.count(".") > 1:
        raise ValueError(f"joins entry {child!r}: {parent!r} must map a column ('fk' for the fact table, "
                         "'table.fk' for a dimension) to 'dimension.key'")
    child_table, column = child.split(".") if "." in child else (fact, child)
    parent_table, key = parent.split(".")
    return JoinEdge(child_table, column, parent_table, key)


def _declared(con, fact: str) -> list[JoinEdge]:
    """The FOREIGN KEY constraints reachable from ``fact`` (DuckDB's ``duckdb_constraints()``)."""
    rows = con.execute(
        "SELECT table_name, constraint_column_names, referenced_table, referenced_column_names "
        "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND schema_name = 'main'").fetchall()
    by_child: dict[str, list] = {}
    for table, columns, parent, keys in rows:
        by_child.setdefault(table, []).append((list(columns), parent, list(keys)))
    edges, todo, seen = [], [fact], {fact}
    while todo:
        child = todo.pop(0)
        for columns, parent, keys in by_child.get(child, ()):
            if len(columns) != 1 or len(keys) != 1:
                raise ValueError(f"the foreign key {child}({', '.join(columns)}) -> {parent}({', '.join(keys)}) has "
                                 "several columns; join synopses follow one-column keys: give joins={...} without it")
            edges.append(JoinEdge(child, columns[0], parent, keys[0]))
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return edges


def _ordered(con, fact: str, edges: list[JoinEdge]) -> list[JoinEdge]:
    """``edges`` checked against the catalog and ordered from the fact table outwards."""
    from .build import table_columns

    parents = [e.parent for e in edges]
    twice = sorted({p for p in parents if parents.count(p) > 1} | ({fact} & set(parents)))
    if twice:
        raise ValueError(f"the join synopsis of {fact!r} joins {twice[0]!r} more than once; a dimension joined in "
                         "several roles needs one view per role (CREATE VIEW ... AS SELECT ... FROM the dimension)")
    for e in edges:
        for table, column in ((e.child, e.column), (e.parent, e.key)):
            if column not in table_columns(con, table):
                raise ValueError(f"joins: table {table!r} has no column {column!r}; its columns: "
                                 f"{', '.join(table_columns(con, table))}")
    ordered, reached, left = [], {fact}, list(edges)
    while left:
        ready = [e for e in left if e.child in reached]
        if not ready:
            raise ValueError(f"joins: {left[0].child}.{left[0].column} is on {left[0].child!r}, which is neither "
                             f"{fact!r} nor a dimension joined to it")
        for e in ready:
            ordered.append(e)
            reached.add(e.parent)
            left.remove(e)
    return ordered


def view_sql(con, fact: str, edges: list[JoinEdge]) -> tuple[str, dict[str, list[str]]]:
    """The SELECT of the join view and, per dimension, the columns it carries.

    Raises
    ------
    ValueError
        A column name in two joined tables (other than a dimension's key, which is left out).
    """
    from .build import table_columns

    alias = {fact: "t0", **{e.parent: f"t{k + 1}" for k, e in enumerate(edges)}}
    owner = {c: fact for c in table_columns(con, fact)}
    if ROWID in owner:
        raise ValueError(f"table {fact!r} has a column named {ROWID!r}, which a join synopsis uses for the rowid")
    carried: dict[str, list[str]] = {}
    for e in edges:
        carried[e.parent] = [c for c in table_columns(con, e.parent) if c != e.key]
        for c in carried[e.parent]:
            if c in owner:
                raise ValueError(f"joins: column {c!r} is in both {owner[c]!r} and {e.parent!r}; a join synopsis "
                                 f"needs distinct column names: join a view of {e.parent!r} that renames it")
            owner[c] = e.parent
    items = [f"t0.rowid AS {ROWID}", "t0.*"]
    items += [f"{alias[e.parent]}.{_quote(c)}" for e in edges for c in carried[e.parent]]
    joined = " ".join(f"LEFT JOIN {_quote(e.parent)} AS {alias[e.parent]} ON {alias[e.child]}.{_quote(e.column)} = "
                      f"{alias[e.parent]}.{_quote(e.key)}" for e in edges)  # NULL keys keep their rows (check)
    return f"SELECT {', '.join(items)} FROM {_quote(fact)} AS t0 {joined}", carried


def check(con, fact: str, edges: list[JoinEdge],
          carried: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]:
    """Refuse keys that are not unique and fact rows whose key matches nothing; the dimensions'
    exact rows, per dimension the rows whose foreign key is NULL, and each dimension's content
    fingerprint (:func:`dimension_state`: what :func:`dimension_changes` compares with later).

    A NULL foreign key joins nothing (SQL's inner join drops its row), but the row stays in the
    fact table: the view keeps it (a LEFT JOIN, the dimension's columns NULL) and a query that
    joins the dimension drops it again (:func:`inner_rows`).  A non-NULL key without a match is
    refused: it is a broken key, which no answer should hide.

    Parameters
    ----------
    carried : dict of str to list of str
        Per dimension, the columns the view carries (:func:`view_sql`).

    Returns
    -------
    rows : dict of str to int
        Per dimension, its rows.
    nulls : dict of str to int
        Per dimension, the rows (of the table it is joined to) whose foreign key is NULL.
    fingerprints : dict of str to int
        Per dimension, SUM(hash(key, carried columns)) over its rows.
    ends : dict of str to int
        Per dimension, one past its largest rowid (rows appended later get rowids from there:
        :mod:`parzen.aqp.dimension_appends`).

    Raises
    ------
    ValueError
        A dimension key with duplicate values, or fact rows whose non-NULL key has no match.
    """
    from .build import fingerprint_sql

    rows, fingerprints, ends = {}, {}, {}
    for e in edges:
        total, duplicates, fingerprint, ends[e.parent] = con.execute(
            f"SELECT COUNT(*), COUNT({_quote(e.key)}) - COUNT(DISTINCT {_quote(e.key)}), "
            f"{fingerprint_sql([e.key, *carried[e.parent]])}, COALESCE(MAX(rowid) + 1, 0) "
            f"FROM {_quote(e.parent)}").fetchall()[0]
        if duplicates:
            raise ValueError(f"joins: {e.parent}.{e.key} is not unique ({duplicates} duplicate value(s)), so it is no "
                             f"key: a join along {e.child}.{e.column} could repeat fact rows")
        rows[e.parent], fingerprints[e.parent] = int(total), int(fingerprint or 0)
    nulls = {}
    for e, (dangling, nulls[e.parent]) in zip(edges, key_faults(con, fact, edges)):
        if dangling:
            raise ValueError(f"joins: {dangling} row(s) of {fact!r} have no match in {e.parent}.{e.key} (along "
                             f"{e.child}.{e.column}: keys that are not NULL and match no row); a join synopsis keeps "
                             "every fact row, so it refuses them: fix the keys, or build without this join")
    return rows, nulls, fingerprints, ends


def key_faults(con, fact: str, edges: list[JoinEdge], rowids: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """Per edge, the rows (of the fact table, or of those with rowid in ``[start, end)``) whose
    foreign key matches no row though it is not NULL (dangling), and those whose key is NULL; one
    scan of the fact table joined with its dimensions.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    fact : str
        The fact table.
    edges : list of JoinEdge
        The joins, fact table first (:func:`edges_of`).
    rowids : (int, int), optional
        [start, end) of the fact rows counted (default: every row).

    Returns
    -------
    list of (int, int)
        Per edge, (dangling, NULL) rows.
    """
    alias = {fact: "t0", **{e.parent: f"t{k + 1}" for k, e in enumerate(edges)}}
    joined = " ".join(f"LEFT JOIN {_quote(e.parent)} AS {alias[e.parent]} ON {alias[e.child]}.{_quote(e.column)} = "
                      f"{alias[e.parent]}.{_quote(e.key)}" for e in edges)
    counts = ", ".join(f"COUNT(*) FILTER (WHERE {alias[e.parent]}.{_quote(e.key)} IS NULL AND "
                       f"{alias[e.child]}.{_quote(e.column)} IS NOT NULL), "
                       f"COUNT(*) FILTER (WHERE {alias[e.child]}.{_quote(e.column)} IS NULL)" for e in edges)
    where = f" WHERE t0.rowid >= {int(rowids[0])} AND t0.rowid < {int(rowids[1])}" if rowids else ""
    found = con.execute(f"SELECT {counts} FROM {_quote(fact)} AS t0 {joined}{where}").fetchall()[0]  # the connection is free
    return [(int(found[2 * k]), int(found[2 * k + 1])) for k in range(len(edges))]


def dimension_state(con, edge: dict) -> tuple[int, int]:
    """A stored edge's dimension now: its rows and SUM(hash(key, carried columns)) over them (as
    :func:`check` computed them at build), in one scan of the dimension.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    edge : dict
        A stored edge (``Synopsis.joins``: "parent", "key", "columns").

    Returns
    -------
    (int, int)
        Rows and fingerprint.
    """
    from .build import fingerprint_sql

    row = con.execute(f"SELECT COUNT(*), {fingerprint_sql([edge['key'], *edge['columns']])} "
                      f"FROM {_quote(edge['parent'])}").fetchall()[0]
    return int(row[0]), int(row[1] or 0)


def dimension_changes(con, synopsis) -> str:
    """Why the dimensions of a join synopsis are not as it read them ("" when they are): per
    dimension, its row count and content fingerprint against those kept at build (rows appended,
    deleted or updated: a changed key or attribute, also of rows no fact row references).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    synopsis : Synopsis
        A join synopsis.

    Returns
    -------
    str
        The first change found, "" for none.

    Raises
    ------
    duckdb.CatalogException, duckdb.BinderException
        A dimension, or a column it carries, is gone.
    """
    for e in synopsis.joins:
        if "fingerprint" not in e:
            return (f"the synopsis keeps no fingerprint of dimension {e['parent']!r} (built by an older parzen), so "
                    "changes to it cannot be ruled out")
        rows, fingerprint = dimension_state(con, e)
        before = synopsis.dimension_rows[e["parent"]]
        if rows != before:
            return f"dimension {e['parent']!r} changed: {before} rows at build, {rows} now"
        if fingerprint != int(e["fingerprint"]):
            return f"dimension {e['parent']!r} changed: contents changed (same row count)"
    return ""


def fact_columns(con, synopsis) -> list[str]:
    """The fact table's columns that a join synopsis's fingerprint covers (its modelled, group and
    categorical columns of the fact table) and its foreign keys: with the dimensions unchanged
    (:func:`dimension_changes`), the join's rows of the fact rows are unchanged when these are.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    synopsis : Synopsis
        A join synopsis.

    Returns
    -------
    list of str
        The columns, each once, in the order: covered columns, then foreign keys.
    """
    from .build import fingerprint_columns, table_columns

    own = table_columns(con, synopsis.table)
    categorical = synopsis.categories.values if synopsis.categories is not None else ()
    covered = fingerprint_columns(synopsis.models, synopsis.group_by, categorical)
    keys = [e["column"] for e in synopsis.joins if e["child"] == synopsis.table]
    return list(dict.fromkeys(c for c in [*covered, *keys] if c in own))


def fact_fingerprint(con, synopsis) -> int:
    """SUM(hash(:func:`fact_columns`)) over the fact rows the synopsis read (rowid below its ``rowid_end``).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    synopsis : Synopsis
        A join synopsis.

    Returns
    -------
    int
        The fingerprint (0 for no row), kept as ``Synopsis.fact_fingerprint``.
    """
    from .build import fingerprint_sql

    row = con.execute(f"SELECT {fingerprint_sql(fact_columns(con, synopsis))} FROM {_quote(synopsis.table)} "
                      f"WHERE rowid < {int(synopsis.rowid_end)}").fetchall()[0]
    return int(row[0] or 0)


def appended_edges(con, synopsis, rowid_end: int) -> tuple[list[dict], str]:
    """A join synopsis's stored edges with the NULL foreign keys among the fact rows appended since
    it read them (rowids from its ``rowid_end`` to ``rowid_end``) added, or why they cannot be:
    appended rows whose key matches no dimension row (which a build refuses), or NULL keys into a
    dimension of more than :data:`parzen.aqp.categories.CATEGORY_LIMIT` rows (no categorical column
    tells the rows a join drops; a build refuses them too).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    synopsis : Synopsis
        A join synopsis.
    rowid_end : int
        One past the fact table's largest rowid now.

    Returns
    -------
    edges : list of dict
        The edges with their "nulls" counts grown ([] when ``why``).
    why : str
        Why the appended rows cannot be added ("" when they can).
    """
    from .categories import CATEGORY_LIMIT

    fact = synopsis.table
    edges = [JoinEdge(e["child"], e["column"], e["parent"], e["key"]) for e in synopsis.joins]
    faults = key_faults(con, fact, edges, (int(synopsis.rowid_end), int(rowid_end)))
    out = []
    for e, (dangling, nulls) in zip(synopsis.joins, faults):
        if dangling:
            return [], (f"{dangling} appended row(s) of {fact!r} have no match in {e['parent']}.{e['key']} (along "
                        f"{e['child']}.{e['column']})")
        if nulls and synopsis.dimension_rows[e["parent"]] > CATEGORY_LIMIT:
            return [], (f"{nulls} appended row(s) of {e['child']!r} have a NULL {e['column']}, and {e['parent']!r} has "
                        f"more than {CATEGORY_LIMIT} rows")
        out.append({**e, "nulls": int(e.get("nulls", 0)) + nulls})
    return out, ""


def inner_rows(query, synopsis):
    """``query`` with SQL's inner-join semantics for NULL foreign keys: for each dimension it joins
    whose foreign key is NULL in some rows (they join nothing), a filter keeping the rows whose key
    is one of its non-NULL values (the key is a categorical column of the synopsis).

    Raises
    ------
    UnsupportedQuery
        A joined dimension whose NULL keys no categorical column describes (a dimension of more
        than :data:`parzen.aqp.categories.CATEGORY_LIMIT` rows).
    """
    from .sql import UnsupportedQuery

    read = {t.casefold() for t in (query.table, *query.joined)}
    keep: dict[str, frozenset] = {}
    for e in synopsis.joins:
        if not e.get("nulls") or e["parent"].casefold() not in read:
            continue
        known = synopsis.categories.values.get(e["column"]) if synopsis.categories is not None else None
        if known is None:
            raise UnsupportedQuery(f"the join with {e['parent']}: {e['nulls']} rows have a NULL {e['column']}, which "
                                   f"the join drops, and {e['column']} is no categorical column of the synopsis")
        keep[e["column"]] = frozenset(v for v in known if v is not None)
    if not keep:
        return query

    def narrowed(members: dict[str, frozenset]) -> dict[str, frozenset]:
        out = dict(members)
        for column, values in keep.items():
            out[column] = out[column] & values if column in out else values
        return out

    if query.boxes:
        return query.replaced(boxes=tuple((ranges, narrowed(members)) for ranges, members in query.boxes))
    return query.replaced(members=narrowed(query.members))


def ensure_view(con, fact: str, joins: list[dict]) -> str:
    """(Re)create the temporary join view of a stored synopsis's ``joins``; its name."""
    edges = [JoinEdge(e["child"], e["column"], e["parent"], e["key"]) for e in joins]
    sql, _ = view_sql(con, fact, edges)
    name = view_name(fact)
    con.execute(f"CREATE OR REPLACE TEMP VIEW {_quote(name)} AS {sql}")
    return name


def prepare(con, fact: str, joins) -> tuple[str, list[dict], dict[str, int]]:
    """Check a build's ``joins`` and create its view: the view's name, the edges as the synopsis
    stores them (with the columns each dimension carries, the rows whose key is NULL and the
    dimension's content fingerprint, :func:`check`) and the dimensions' rows."""
    edges = edges_of(con, fact, joins)
    _, carried = view_sql(con, fact, edges)
    dimension_rows, nulls, fingerprints, ends = check(con, fact, edges, carried)
    stored = [{"child": e.child, "column": e.column, "parent": e.parent, "key": e.key, "columns": carried[e.parent],
               "nulls": nulls[e.parent], "fingerprint": str(fingerprints[e.parent]), "rowid_end": int(ends[e.parent])}
              for e in edges]
    return ensure_view(con, fact, stored), stored, dimension_rows


def _edge_maps(synopsis) -> tuple[dict[str, dict], dict[str, str]]:
    """The synopsis's join edges by their dimension (casefolded), and each dimension column's dimension
    (by the column casefolded), made once per list of edges and kept on the synopsis (they depend on
    its joins only, never on a query: 50 casefolds per answer on SSB's four dimensions)."""
    kept = synopsis.__dict__.get("_edge_maps")
    if kept is None or kept[0] is not synopsis.joins:
        edges = synopsis.joins
        kept = synopsis.__dict__["_edge_maps"] = (
            edges, {e["parent"].casefold(): e for e in edges},
            {c.casefold(): e["parent"] for e in edges for c in e["columns"]})
    return kept[1], kept[2]


def covered(query, synopsis) -> None:
    """Refuse, naming it, a join of ``query`` that the synopsis does not hold.

    The query's tables must be the synopsis's fact table and some of its dimensions; each of its
    join conditions (an equality of two columns) one of the synopsis's foreign keys; each
    dimension it reads joined by its foreign key to a table the query also reads; and every column
    of a dimension it uses must be of a dimension the query joins.  Joining fewer dimensions than
    the synopsis holds is fine: a join along a foreign key keeps every fact row once.

    Parameters
    ----------
    query : AggregateQuery
        The parsed query (names as written).
    synopsis : Synopsis
        The synopsis chosen to answer it.

    Raises
    ------
    UnsupportedQuery
        Naming the join, condition or column that the synopsis does not cover.
    """
    from .sql import UnsupportedQuery

    fact, edges = synopsis.table, synopsis.joins
    held, owner = _edge_maps(synopsis)
    tables = [query.table, *query.joined]
    read = {t.casefold() for t in tables}
    for t in tables:
        if t.casefold() != fact.casefold() and t.casefold() not in held:
            have = ", ".join(e["parent"] for e in edges) or "no table"
            raise UnsupportedQuery(f"the join with {t} (the synopsis of {fact!r} joins {have}; rebuild it with "
                                   f"engine.build({fact!r}, joins={{...}}) along the foreign key to {t})")
    met = set()
    for (table_a, column_a), (table_b, column_b) in query.join_on:
        pair = {column_a.casefold(), column_b.casefold()}
        edge = next((e for e in edges if pair == {e["column"].casefold(), e["key"].casefold()}
                     and all(t is None or t.casefold() in (e["child"].casefold(), e["parent"].casefold())
                             for t in (table_a, table_b))), None)
        if edge is None:
            shown = " = ".join(f"{t}.{c}" if t else c for t, c in ((table_a, column_a), (table_b, column_b)))
            keys = ", ".join(f"{e['child']}.{e['column']} = {e['parent']}.{e['key']}" for e in edges) or "none"
            raise UnsupportedQuery(f"the join condition {shown}, which is no foreign key of the synopsis of {fact!r} "
                                   f"(its keys: {keys})")
        met.add(edge["parent"].casefold())
    for t in read - {fact.casefold()}:
        e = held[t]
        if e["child"].casefold() not in read:
            raise UnsupportedQuery(f"the join with {e['parent']} through {e['child']}, which the query does not join")
        if t not in met:
            raise UnsupportedQuery(f"the join with {e['parent']} without its condition {e['child']}.{e['column']} = "
                                   f"{e['parent']}.{e['key']} (a cross join)")
    for column in sorted(query.columns):
        dimension = owner.get(column.casefold())
        if dimension is not None and dimension.casefold() not in read:
            raise UnsupportedQuery(f"the column {column} of {dimension}, which the query does not join")
