"""Synopses persisted inside the database itself: table ``parzen_synopses`` (one row per table).

Each row holds the serialised synopsis (:meth:`Synopsis.to_bytes`), its SHA-256, the table's
row count when it was built and the build time, so a new :class:`parzen.aqp.Engine` reloads
them, detects corruption, and reports stale ones.
"""

from __future__ import annotations

from .synopsis import CorruptSynopsis, Synopsis, checksum

TABLE = "parzen_synopses"


def ensure(con) -> None:
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (table_name VARCHAR PRIMARY KEY, built_at VARCHAR, row_count BIGINT, "
        "nbytes BIGINT, sha256 VARCHAR, payload BLOB)"
    )


def save(con, synopsis: Synopsis) -> int:
    """Store (or replace) ``synopsis``; returns its size in bytes."""
    ensure(con)
    payload = synopsis.to_bytes()
    con.execute(f"DELETE FROM {TABLE} WHERE table_name = ?", [synopsis.table])
    con.execute(
        f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?)",
        [synopsis.table, synopsis.built_at, synopsis.row_count, len(payload), checksum(payload), payload],
    )
    return len(payload)


def stored_tables(con) -> list[str]:
    if not _exists(con):
        return []
    return [r[0] for r in con.execute(f"SELECT table_name FROM {TABLE} ORDER BY table_name").fetchall()]


def load(con, table: str) -> Synopsis:
    """The stored synopsis of ``table``; clear errors if there is none or it is corrupt."""
    row = con.execute(f"SELECT sha256, payload FROM {TABLE} WHERE table_name = ?", [table]).fetchone() if _exists(con) else None
    if row is None:
        known = stored_tables(con)
        raise ValueError(
            f"no synopsis of table {table!r} in this database (synopses: {', '.join(known) or 'none'}); "
            f"build one with engine.build({table!r}) or `parzen aqp build DB {table}`"
        )
    digest, payload = row
    where = f" of table {table!r}"
    if payload is None:
        raise CorruptSynopsis(f"the synopsis{where} has no bytes (a NULL payload); rebuild it with engine.refresh({table!r})")
    payload = bytes(payload)
    if checksum(payload) != digest:
        raise CorruptSynopsis(
            f"the synopsis{where} is corrupt (its SHA-256 does not match); rebuild it with engine.refresh({table!r})"
        )
    return Synopsis.from_bytes(payload, where=where)


def _exists(con) -> bool:
    return bool(con.execute(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = ? AND table_schema = 'main'", [TABLE]
    ).fetchone()[0])
