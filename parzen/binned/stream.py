"""Linear binning of data larger than memory: Parquet datasets and DuckDB tables, in chunks.

The counts of disjoint parts of the data add up to the counts of the whole
(:class:`parzen.binned.grid.BinCounts`), so a table is read as record batches of at most
``batch_rows`` rows, each batch is binned on one :class:`GridSpec` and the counts are added:
only one batch is in memory at a time.  The grid's range comes from

- a Parquet dataset's row-group statistics (min / max per column) when every row group has
  them and no NULLs, else a first pass over the batches (:func:`bin_parquet`);
- DuckDB's ``MIN`` / ``MAX`` (:func:`bin_duckdb`),

unless a ``spec`` is given.  Rows where any of the columns (or the weights) is NULL are skipped
and counted; a non-finite value stops the pass with a ValueError naming its column.

DuckDB queries are built only from the table's and columns' names after checking them against
the database's catalog, each quoted as a DuckDB identifier (in double quotes, a double quote
doubled); no other text of the caller reaches the database.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._extras import require
from .._progress import progress_bar
from .grid import BinCounts, GridSpec, linear_bin

#: Rows read, converted and binned at a time.
BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class StreamedCounts:
    """Counts of a table binned in chunks, with what the passes saw.

    Parameters
    ----------
    bins : BinCounts
        The linear-binning counts of the rows without NULLs.
    rows : int
        The rows binned.
    null_rows : int
        The rows skipped because a column (or the weights) was NULL there.
    lows, highs : tuple of float
        The smallest and largest value binned on each axis (NaN where no row was binned).
    """

    bins: BinCounts
    rows: int
    null_rows: int
    lows: tuple[float, ...]
    highs: tuple[float, ...]


def bin_parquet(path_or_glob, columns: str | Sequence[str], *, spec: GridSpec | None = None, sizes=None,
                weights: str | None = None, batch_rows: int = BATCH_ROWS, backend="auto",
                progress: bool = False) -> StreamedCounts:
    """Linear binning of columns of a Parquet file or dataset, one record batch at a time.

    Parameters
    ----------
    path_or_glob : str, os.PathLike or sequence of them
        A Parquet file, a directory of Parquet files, a glob pattern (``"data/*.parquet"``) or
        a list of files.
    columns : str or sequence of str
        The 1 to 4 numeric columns binned, in the grid's axis order.
    spec : GridSpec, optional
        The grid.  Default: ``sizes`` nodes over the range of the rows binned (those without
        NULLs), from the files' row-group statistics when every row group has finite ones and
        no NULLs in the columns read, else from a first pass over the batches.
    sizes : int or sequence of int, optional
        Nodes per axis when ``spec`` is None (required then).
    weights : str, optional
        A numeric column of non-negative weights (default 1 per row).
    batch_rows : int
        Rows per record batch (memory use is a few times batch_rows x columns x 8 bytes).
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins each batch (see :func:`parzen.binned.grid.linear_bin`).
    progress : bool
        Show a progress bar over each pass's rows.

    Returns
    -------
    StreamedCounts

    Raises
    ------
    FileNotFoundError
        When nothing matches ``path_or_glob``.
    ValueError
        For a column not in the files (the message lists theirs), a non-numeric column, a
        non-finite value or negative weight (naming its column), no row without NULLs,
        neither ``spec`` nor ``sizes``, or a ``batch_rows`` that is not a positive integer.
    MissingExtraError
        Without pyarrow (the ``parquet`` extra).
    """
    require("pyarrow", extra="parquet", what="binning a Parquet dataset")
    import pyarrow.dataset as ds

    _check_batch_rows(batch_rows)
    dataset = ds.dataset(_parquet_sources(path_or_glob), format="parquet")
    columns, names = _checked_names(columns, weights, dataset.schema.names, "the Parquet data")
    _check_numeric_arrow(dataset.schema, names)
    total_rows = dataset.count_rows()
    source = str(path_or_glob)

    def batches(description: str) -> Iterator:
        with progress_bar(progress, description, total=total_rows) as bar:
            for batch in _regrouped(dataset.to_batches(columns=names, batch_size=batch_rows), batch_rows):
                yield batch
                bar.advance(batch.num_rows)

    if spec is None:
        _check_sizes(sizes)
        lows, highs = _parquet_statistics_range(dataset, names, len(names) - (weights is not None))
        if lows is None:
            lows, highs = _range_of(_arrays(batches(f"range of {source}"), columns, weights))
        spec = GridSpec.covering(lows, highs, sizes)
    return _bin_arrays(_arrays(batches(f"binning {source}"), columns, weights), spec, backend)


def bin_duckdb(con_or_path, table: str, columns: str | Sequence[str], *, spec: GridSpec | None = None, sizes=None,
               weights: str | None = None, batch_rows: int = BATCH_ROWS, backend="auto",
               progress: bool = False) -> StreamedCounts:
    """Linear binning of columns of a DuckDB table, fetched as record batches.

    Parameters
    ----------
    con_or_path : duckdb.DuckDBPyConnection, str or os.PathLike
        An open connection, or a database file (opened read-only and closed after).
    table : str
        A table or view of the database's main schema.
    columns : str or sequence of str
        The 1 to 4 numeric columns binned, in the grid's axis order (names as stored).
    spec : GridSpec, optional
        The grid.  Default: ``sizes`` nodes over DuckDB's MIN and MAX of each column over the
        rows without NULLs.
    sizes : int or sequence of int, optional
        Nodes per axis when ``spec`` is None (required then).
    weights : str, optional
        A numeric column of non-negative weights (default 1 per row).
    batch_rows : int
        Rows per fetched record batch.
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins each batch (see :func:`parzen.binned.grid.linear_bin`).
    progress : bool
        Show a progress bar over the table's rows.

    Returns
    -------
    StreamedCounts

    Raises
    ------
    ValueError
        For a table not in the database or a column not in the table (the message lists
        theirs), a non-numeric column, a non-finite value or negative weight (naming its
        column), no row without NULLs, neither ``spec`` nor ``sizes``, or a ``batch_rows``
        that is not a positive integer.
    MissingExtraError
        Without duckdb or pyarrow (the ``aqp`` extra).
    """
    require("duckdb", "pyarrow", extra="aqp", what="binning a DuckDB table")
    import duckdb

    if isinstance(con_or_path, (str, os.PathLike)):
        with duckdb.connect(str(con_or_path), read_only=True) as con:
            return bin_duckdb(con, table, columns, spec=spec, sizes=sizes, weights=weights,
                              batch_rows=batch_rows, backend=backend, progress=progress)
    _check_batch_rows(batch_rows)
    con = con_or_path
    types = _duckdb_columns(con, table)
    columns, names = _checked_names(columns, weights, list(types), f"table {table!r}")
    bad = [c for c in names if not _duckdb_numeric(types[c])]
    if bad:
        raise ValueError(f"column(s) {', '.join(map(repr, bad))} of {table!r} are not numeric "
                         f"({', '.join(types[c] for c in bad)}); choose numeric columns")
    source = quote_identifier(table)
    doubles = [f"CAST({quote_identifier(c)} AS DOUBLE)" for c in names]
    complete = " AND ".join(f"{c} IS NOT NULL" for c in doubles)
    nonfinite = [f"COUNT(*) FILTER (WHERE {complete} AND NOT isfinite({c}))" for c in doubles]
    bounds = [f"MIN({c}) FILTER (WHERE {complete}), MAX({c}) FILTER (WHERE {complete})" for c in doubles[: len(columns)]]
    (row,) = con.execute(f"SELECT COUNT(*), COUNT(*) FILTER (WHERE {complete}), "
                         f"{', '.join(nonfinite + bounds)} FROM {source}").fetchall()
    total_rows, complete_rows = row[:2]
    for name, count in zip(names, row[2 : 2 + len(names)]):
        if count:
            raise ValueError(f"column {name!r} holds {count} non-finite value(s) (inf or NaN); remove them first")
    if spec is None:
        _check_sizes(sizes)
        if not complete_rows:
            raise ValueError(f"no row of {table!r} has values in all of {', '.join(names)}")
        found = np.asarray(row[2 + len(names) :], dtype=np.float64)
        spec = GridSpec.covering(found[0::2], found[1::2], sizes)
    relation = con.sql(f"SELECT {', '.join(doubles)} FROM {source}")
    # DuckDB 1.4 renamed fetch_arrow_reader to to_arrow_reader
    reader = (relation.to_arrow_reader(batch_rows) if hasattr(relation, "to_arrow_reader")
              else relation.fetch_arrow_reader(batch_rows))

    def batches() -> Iterator:
        with progress_bar(progress, f"binning {table}", total=total_rows) as bar:
            for batch in _regrouped(reader, batch_rows):
                yield batch
                bar.advance(batch.num_rows)

    return _bin_arrays(_arrays(batches(), columns, weights, positional=True), spec, backend)


def _regrouped(batches: Iterable, rows: int) -> Iterator:
    """The record batches joined into batches of at least ``rows`` rows (the last one fewer).

    DuckDB hands out batches of about 10^5 rows whatever is asked, and a Parquet batch ends with
    its row group; binning each separately costs
    a parallel launch per batch, which on a busy machine took longer than the binning itself
    (2 cores at load 7: 10 ms per batch of 116 000 rows).
    """
    import pyarrow as pa

    group: list = []
    held = 0
    for batch in batches:
        group.append(batch)
        held += batch.num_rows
        if held >= rows:
            yield _joined(group, pa)
            group, held = [], 0
    if held:
        yield _joined(group, pa)


def _joined(batches: list, pa):
    """One record batch holding ``batches`` (the batch itself when there is one)."""
    return batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def quote_identifier(name: str) -> str:
    """``name`` as a DuckDB identifier: in double quotes, each double quote doubled.

    Parameters
    ----------
    name : str
        A table or column name already checked against the catalog.

    Returns
    -------
    str
    """
    return '"' + name.replace('"', '""') + '"'


def _parquet_sources(path_or_glob) -> list[str] | str:
    """The files (or the directory) that ``path_or_glob`` names."""
    if isinstance(path_or_glob, (list, tuple)):
        paths = [str(p) for p in path_or_glob]
    elif Path(path_or_glob).exists():
        return str(path_or_glob)
    else:
        paths = sorted(glob.glob(str(path_or_glob)))
    missing = [p for p in paths if not Path(p).is_file()]
    if not paths or missing:
        raise FileNotFoundError(f"no Parquet file at {', '.join(missing) or str(path_or_glob)!r}")
    return paths


def _check_sizes(sizes) -> None:
    if sizes is None:
        raise ValueError("pass spec= (a GridSpec) or sizes= (nodes per axis) to choose the grid")


def _check_batch_rows(batch_rows) -> None:
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")


def _checked_names(columns, weights, available: list[str], where: str) -> tuple[list[str], list[str]]:
    """The binned columns (one name or several), and those followed by the weights column,
    each checked to be in ``available``."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    if not 1 <= len(columns) <= 4:
        raise ValueError(f"bin 1 to 4 columns, got {len(columns)}")
    names = columns + ([] if weights is None else [weights])
    unknown = [c for c in names if not isinstance(c, str) or c not in available]
    if unknown:
        raise ValueError(f"no column {', '.join(map(repr, unknown))} in {where}; its columns: {', '.join(available)}")
    if len(set(names)) < len(names):
        raise ValueError(f"columns repeat: {', '.join(names)}; name each once")
    return columns, names


def _check_numeric_arrow(schema, names: list[str]) -> None:
    import pyarrow.types as pat

    bad = [c for c in names if not (pat.is_integer(schema.field(c).type) or pat.is_floating(schema.field(c).type)
                                    or pat.is_decimal(schema.field(c).type))]
    if bad:
        raise ValueError(f"column(s) {', '.join(map(repr, bad))} are not numeric "
                         f"({', '.join(str(schema.field(c).type) for c in bad)}); choose numeric columns")


def _duckdb_columns(con, table: str) -> dict[str, str]:
    """Column name -> DuckDB type of ``table`` (main schema), from the catalog."""
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = ? ORDER BY ordinal_position", [table]).fetchall()
    if not rows:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
        ).fetchall()]
        raise ValueError(f"no table {table!r} in the database; its tables: {', '.join(tables) or '(none)'}")
    return dict(rows)


def _duckdb_numeric(type_name: str) -> bool:
    return type_name.split("(")[0] in {
        "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
        "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL"}


@dataclass(frozen=True)
class _Chunk:
    """One batch's rows without NULLs: values (k, d), weights (k,) or None, NULL rows skipped."""

    values: np.ndarray
    weights: np.ndarray | None
    null_rows: int


def _arrays(batches: Iterable, columns, weights: str | None, positional: bool = False) -> Iterator[_Chunk]:
    """Each record batch as float64 arrays without the rows where any column is NULL.

    Raises ValueError naming the column of a non-finite value or a negative weight.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = list(columns) + ([] if weights is None else [weights])
    for batch in batches:
        arrays = [batch.column(i if positional else name) for i, name in enumerate(names)]
        valid = None
        for array in arrays:
            if array.null_count:
                ok = pc.is_valid(array)
                valid = ok if valid is None else pc.and_(valid, ok)
        if valid is not None:
            arrays = [pc.filter(array, valid) for array in arrays]
        kept = [pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False) for array in arrays]
        for name, values in zip(names, kept):
            if not np.isfinite(values).all():
                raise ValueError(f"column {name!r} holds non-finite values (inf or NaN); remove them first")
        if weights is not None and (kept[-1] < 0).any():
            raise ValueError(f"column {weights!r} holds negative weights; weights must be >= 0")
        values = kept[0][:, None] if len(columns) == 1 else np.stack(kept[: len(columns)], axis=1)
        yield _Chunk(values, kept[-1] if weights is not None else None, batch.num_rows - len(values))


def _range_of(chunks: Iterable[_Chunk]) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest value on each axis over all chunks (a first pass)."""
    lows = highs = None
    for chunk in chunks:
        if len(chunk.values):
            lo, hi = chunk.values.min(axis=0), chunk.values.max(axis=0)
            lows = lo if lows is None else np.minimum(lows, lo)
            highs = hi if highs is None else np.maximum(highs, hi)
    if lows is None or highs is None:
        raise ValueError("no row has values in all of the columns (every row holds a NULL)")
    return lows, highs


def _parquet_statistics_range(dataset, names: list[str], columns: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The min and max of the first ``columns`` of ``names`` over every row group's statistics.

    (None, None) unless every row group has statistics of every name, without NULLs (a column's
    statistics span its non-NULL values, which would be wider than the range of the rows binned
    when another column is NULL in some row), and finite (NaN is left out of them).
    """
    lows = np.full(columns, np.inf)
    highs = np.full(columns, -np.inf)
    for fragment in dataset.get_fragments():
        meta = fragment.metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            if group.num_rows == 0:
                continue
            index = {group.column(j).path_in_schema: j for j in range(group.num_columns)}
            for a, name in enumerate(names):
                stats = group.column(index[name]).statistics
                if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
                    return None, None
                if a < columns:
                    lows[a] = min(lows[a], float(stats.min))
                    highs[a] = max(highs[a], float(stats.max))
    if not (np.isfinite(lows).all() and np.isfinite(highs).all()):
        return None, None
    return lows, highs


def _bin_arrays(chunks: Iterable[_Chunk], spec: GridSpec, backend) -> StreamedCounts:
    """The sum of the chunks' counts on ``spec``, with the rows, NULL rows and range seen."""
    counts = BinCounts(spec, np.zeros(spec.sizes))
    rows = null_rows = 0
    lows = np.full(spec.d, np.inf)
    highs = np.full(spec.d, -np.inf)
    for chunk in chunks:
        null_rows += chunk.null_rows
        if not len(chunk.values):
            continue
        counts = counts + linear_bin(chunk.values, spec, chunk.weights, backend=backend)
        rows += len(chunk.values)
        lows = np.minimum(lows, chunk.values.min(axis=0))
        highs = np.maximum(highs, chunk.values.max(axis=0))
    if not rows:
        lows = highs = np.full(spec.d, np.nan)
    return StreamedCounts(counts, rows, null_rows, tuple(map(float, lows)), tuple(map(float, highs)))
