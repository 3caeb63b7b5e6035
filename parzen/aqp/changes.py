"""What changed in a DuckDB table since a synopsis read it, from one statement (issue 19, item 4).

The staleness check of every synopsis load (:meth:`parzen.aqp.Engine.check`) and the first step of
:meth:`parzen.aqp.Engine.refresh` (:mod:`parzen.aqp.appends`): a build records one past the table's
largest rowid, and DuckDB gives appended rows the rowids after it, so the rows the synopsis read are
those below it.  Their COUNT(*) and content fingerprint (:func:`parzen.aqp.build.fingerprint_sql`)
as at build mean they are all there unchanged; rows beyond are appended.  Light to import: the query
path loads it, not the merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from .build import fingerprint_columns, quote
from .synopsis import Synopsis


@dataclass(frozen=True)
class TableChanges:
    """A DuckDB table against its synopsis, from one statement (:func:`table_changes`).

    Parameters
    ----------
    kept_rows, kept_fingerprint : int
        COUNT(*) and the content fingerprint (:func:`parzen.aqp.build.fingerprint_sql`) of the rows
        whose rowid is below the synopsis's ``rowid_end`` (the rows it read).
    new_rows, new_fingerprint : int
        The same of the rows beyond (appended since).
    rowid_end : int
        One past the largest rowid now.
    non_finite : dict
        Floating-point column -> its inf, -inf or NaN values among the new rows.
    """

    kept_rows: int
    kept_fingerprint: int
    new_rows: int
    new_fingerprint: int
    rowid_end: int
    non_finite: dict[str, int]

    @property
    def rows(self) -> int:
        """The table's rows now."""
        return self.kept_rows + self.new_rows

    def appended_only(self, synopsis: Synopsis) -> bool:
        """Whether every row the synopsis read is there unchanged (rows may have been added)."""
        return self.kept_rows == synopsis.row_count and self.kept_fingerprint == synopsis.fingerprint

    def why(self, synopsis: Synopsis) -> str:
        """"" when the table is the one the synopsis read; "k rows appended (...)" when rows were only
        added; otherwise "contents changed (same row count)" or "rows changed: ... at build, ... now"
        (rows deleted or updated)."""
        if self.appended_only(synopsis):
            return f"{self.new_rows} rows appended ({synopsis.row_count} at build, {self.rows} now)" \
                if self.new_rows else ""
        if self.rows == synopsis.row_count:
            return "contents changed (same row count)"
        return f"rows changed: {synopsis.row_count} at build, {self.rows} now"


def table_changes(con, synopsis: Synopsis, relation: str | None = None) -> TableChanges:
    """What changed in a DuckDB table since ``synopsis`` read it, in one statement (one scan of the
    columns the synopsis covers, and the appended rows apart: :func:`_below_and_beyond`): the rows below
    its ``rowid_end`` (count, fingerprint), those beyond (count, fingerprint, non-finite values) and the
    rowid end now.

    DuckDB gives appended rows rowids from one past the largest; a DELETE leaves the others' rowids
    (until a checkpoint compacts them, which shows as rows missing or changed below the end: refresh
    then rebuilds).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The database.
    synopsis : Synopsis
        A synopsis of a table of that database.
    relation : str, optional
        What it was built from when not its table: a join synopsis's view (:func:`parzen.aqp.joins.ensure_view`),
        whose ``rowid`` is the fact table's.

    Returns
    -------
    TableChanges

    Raises
    ------
    duckdb.CatalogException, duckdb.BinderException
        The table, or a column the synopsis covers, is gone.
    """
    end = int(synopsis.rowid_end)
    categorical = synopsis.categories.values if synopsis.categories is not None else ()
    columns = fingerprint_columns(synopsis.models, synopsis.group_by, categorical)
    hashed = f"CAST(hash({', '.join(quote(c) for c in columns)}) AS HUGEINT)"
    source = quote(relation or synopsis.table)
    types = {row[0]: row[1] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    floating = [c for c in synopsis.models if types.get(c) in ("FLOAT", "DOUBLE", "REAL")]
    non_finite = [f"COUNT(*) FILTER (WHERE NOT isfinite({quote(c)}))" for c in floating]
    kept_rows, kept_fingerprint, new_rows, new_fingerprint, rowid_end, counts = _below_and_beyond(
        con, source, hashed, end, non_finite)
    return TableChanges(kept_rows, kept_fingerprint, new_rows, new_fingerprint, rowid_end,
                        {c: int(n) for c, n in zip(floating, counts)})


def _below_and_beyond(con, source: str, hashed: str, end: int, beyond: list[str] | tuple = ()) -> tuple:
    """The rows of ``source`` below rowid ``end`` and those from it: (count, SUM of ``hashed`` below,
    count, SUM of ``hashed`` from ``end``, one past the largest rowid now, the ``beyond`` aggregates of
    the rows from ``end``), from one statement (one snapshot of the table).

    The statement aggregates all rows, and apart the rows from ``end`` (a rowid filter, which DuckDB
    pushes into a table's scan: only the appended rows are read); the rows below are the difference,
    exact in integers.  Each row is hashed once, where ``FILTER (WHERE rowid < end)`` and ``FILTER
    (WHERE rowid >= end)`` on one scan hashed every row twice: on SSB SF10's 13 fingerprinted columns of
    60 M rows (2 cores, warm cache) 1.75 s median instead of 2.32.
    """
    whole = f"SELECT COUNT(*), SUM({hashed}), COALESCE(MAX(rowid) + 1, 0) FROM {source}"
    appended = f"SELECT {', '.join(['COUNT(*)', f'SUM({hashed})', *beyond])} FROM {source} WHERE rowid >= {end}"
    row = con.execute(f"SELECT * FROM ({whole}) AS whole_rows, ({appended}) AS appended_rows").fetchall()[0]
    rows, total, rowid_end, new_rows, new_total = int(row[0]), int(row[1] or 0), int(row[2]), int(row[3]), int(row[4] or 0)
    return rows - new_rows, total - new_total, new_rows, new_total, rowid_end, row[5:]


@dataclass(frozen=True)
class FactChanges(TableChanges):
    """A join synopsis's fact table against it (:func:`fact_changes`): ``kept_fingerprint`` is the
    fact rows' own (:func:`parzen.aqp.joins.fact_columns`), compared with ``Synopsis.fact_fingerprint``;
    ``new_fingerprint`` the join's, of the appended rows; ``new_fact_fingerprint`` theirs alone."""

    new_fact_fingerprint: int = 0

    def appended_only(self, synopsis: Synopsis) -> bool:
        """Whether every fact row the synopsis read is there unchanged (rows may have been added)."""
        return self.kept_rows == synopsis.row_count and self.kept_fingerprint == synopsis.fact_fingerprint


def fact_changes(con, synopsis: Synopsis, relation: str) -> FactChanges:
    """What changed in the fact table of a join synopsis that keeps ``fact_fingerprint``, without
    joining its old rows: one scan of the fact table (the covered columns and foreign keys of the
    rows below ``rowid_end``: count and fingerprint; of those beyond: the fingerprint; the rowid
    end now), and the appended rows read through the join view ``relation`` (their count, the
    join's fingerprint, non-finite values).  With the dimensions unchanged
    (:func:`parzen.aqp.joins.dimension_changes`, which refresh asks too), the join's old rows are
    unchanged exactly when the fact rows' covered columns and keys are.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    synopsis : Synopsis
        A join synopsis that keeps ``fact_fingerprint``.
    relation : str
        Its join view (:func:`parzen.aqp.joins.ensure_view`).

    Returns
    -------
    FactChanges

    Raises
    ------
    duckdb.CatalogException, duckdb.BinderException
        The table, or a column the synopsis covers, is gone.
    """
    from .joins import fact_columns

    end = int(synopsis.rowid_end)
    hashed = f"CAST(hash({', '.join(quote(c) for c in fact_columns(con, synopsis))}) AS HUGEINT)"
    kept_rows, kept_fingerprint, _, new_fact_fingerprint, rowid_end, _ = _below_and_beyond(
        con, quote(synopsis.table), hashed, end)
    categorical = synopsis.categories.values if synopsis.categories is not None else ()
    columns = fingerprint_columns(synopsis.models, synopsis.group_by, categorical)
    types = {row[0]: row[1] for row in con.execute(f"DESCRIBE SELECT * FROM {quote(relation)}").fetchall()}
    floating = [c for c in synopsis.models if types.get(c) in ("FLOAT", "DOUBLE", "REAL")]
    parts = ["COUNT(*)", f"SUM(CAST(hash({', '.join(quote(c) for c in columns)}) AS HUGEINT))",
             *(f"COUNT(*) FILTER (WHERE NOT isfinite({quote(c)}))" for c in floating)]
    new = con.execute(f"SELECT {', '.join(parts)} FROM {quote(relation)} "
                      f"WHERE rowid >= {end} AND rowid < {rowid_end}").fetchall()[0]
    return FactChanges(kept_rows, kept_fingerprint, int(new[0]), int(new[1] or 0), rowid_end,
                       {c: int(n) for c, n in zip(floating, new[2:])}, new_fact_fingerprint)
