"""Rows appended to the dimensions of a join synopsis: when a refresh may keep it (issue 19, item 4).

A join synopsis (:mod:`parzen.aqp.joins`) describes the join view: each fact row with the one row of
each dimension its foreign key names.  When a dimension only got rows (new keys; every row it had is
there unchanged), no fact row the synopsis read names a new row: a build refuses fact rows whose
non-NULL key matches nothing, and a NULL key matches nothing before or after.  So the view's old rows
are what they were, and everything the synopsis holds still describes them; the new dimension rows
enter the view only through fact rows appended later, which the fact table's refresh reads joined
with their dimensions (:mod:`parzen.aqp.appends`: their categorical values, exact tables and
dependencies add as any appended rows').  What changes is the dimension's row count
(``Synopsis.dimension_rows``) and its fingerprint, which this module brings up to date.

The test, per dimension, in one scan of it: the rows below the rowid end recorded at build (DuckDB
gives appended rows the rowids after it) have the count and content fingerprint (SUM of hash(key,
carried columns)) of the whole dimension at build, and rows beyond exist.  A synopsis stored before
the rowid end was kept takes the build's row count for it (the rowids of a table without deletes);
where that is wrong the fingerprints differ, and the refresh rebuilds.  Then the new rows' keys must
be unique among all (a second scan, of the key column, semi-joined with the new keys).

It rebuilds (the reason said) when a dimension's old rows were deleted or updated, when a new key
repeats an old one, and when a dimension that the build made a categorical key of (at most
:data:`parzen.aqp.categories.CATEGORY_LIMIT` rows: exact rows per key) grows past that (a build would
not make it one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .build import fingerprint_sql, quote
from .categories import CATEGORY_LIMIT


@dataclass(frozen=True)
class DimensionGrowth:
    """What :func:`grown_dimensions` found.

    Parameters
    ----------
    edges : list of dict
        The synopsis's stored edges, with the fingerprint and rowid end now of each grown dimension.
    rows : dict of str to int
        Per dimension, its rows now.
    grown : dict of str to int
        Per grown dimension, the rows appended to it.
    why : str
        Why the synopsis must be rebuilt ("" when it need not).
    """

    edges: list[dict] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    grown: dict[str, int] = field(default_factory=dict)
    why: str = ""


def grown_dimensions(con, synopsis) -> DimensionGrowth:
    """The dimensions of a join synopsis as they are now, when each is as the build read it or only
    got rows (module notes); otherwise why it must be rebuilt.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The database.
    synopsis : Synopsis
        A join synopsis (``synopsis.joins`` not empty).

    Returns
    -------
    DimensionGrowth

    Raises
    ------
    duckdb.CatalogException, duckdb.BinderException
        A dimension, or a column it carries, is gone.
    """
    edges, rows, grown = [], dict(synopsis.dimension_rows), {}
    for e in synopsis.joins:
        parent = e["parent"]
        if "fingerprint" not in e:
            return DimensionGrowth(why=f"the synopsis keeps no fingerprint of dimension {parent!r} (built by an older "
                                       "parzen), so changes to it cannot be ruled out")
        before, end = synopsis.dimension_rows[parent], int(e.get("rowid_end", synopsis.dimension_rows[parent]))
        hashed = fingerprint_sql([e["key"], *e["columns"]])
        now, fingerprint, kept, kept_fingerprint, rowid_end = con.execute(
            f"SELECT COUNT(*), {hashed}, COUNT(*) FILTER (WHERE rowid < {end}), {hashed} FILTER (WHERE rowid < {end}), "
            f"COALESCE(MAX(rowid) + 1, 0) FROM {quote(parent)}").fetchall()[0]
        stored = int(e["fingerprint"])
        if (int(now), int(fingerprint or 0)) == (before, stored):
            edges.append(e)
            continue
        if int(kept) != before or int(kept_fingerprint or 0) != stored:
            why = f"{before} rows at build, {now} now" if now != before else "contents changed (same row count)"
            return DimensionGrowth(why=f"dimension {parent!r} changed: {why}")
        repeated = _repeated_keys(con, parent, e["key"], end)
        if repeated:
            return DimensionGrowth(why=f"dimension {parent!r} got rows whose {e['key']} repeats a key ({repeated} "
                                       "duplicate value(s)): it is no longer a key")
        if before <= CATEGORY_LIMIT < now:
            return DimensionGrowth(why=f"dimension {parent!r} grew from {before} to {now} rows, past the "
                                       f"{CATEGORY_LIMIT} up to which its key {e['column']} is a categorical column")
        edges.append({**e, "fingerprint": str(int(fingerprint or 0)), "rowid_end": int(rowid_end)})
        rows[parent], grown[parent] = int(now), int(now) - before
    return DimensionGrowth(edges, rows, grown)


def _repeated_keys(con, parent: str, key: str, end: int) -> int:
    """The duplicate values of ``key`` among the rows of ``parent`` that share a key with a row at or
    beyond rowid ``end`` (a new row): 0 when the new keys are new and distinct."""
    column = quote(key)
    found = con.execute(f"SELECT COUNT({column}) - COUNT(DISTINCT {column}) FROM {quote(parent)} WHERE {column} IN "
                        f"(SELECT {column} FROM {quote(parent)} WHERE rowid >= {int(end)})").fetchall()[0][0]
    return int(found or 0)
