"""Data larger than memory: Parquet datasets and DuckDB tables, read in record batches.

:class:`ParquetData` and :class:`DuckDBData` are :class:`parzen.binned.source.ChunkedData`: every
selector of :mod:`parzen.bandwidth` and :meth:`parzen.KDE.fit` take them in place of an array and
summarise them batch by batch in this process (:meth:`ChunkedData.reduce`), so only one batch of
at most ``batch_rows`` rows is in memory at a time.  Rows where any of the columns (or the
weights) is NULL are skipped and counted; a non-finite value or a negative weight stops the pass
with a ValueError naming its column.

:func:`bin_parquet` and :func:`bin_duckdb` bin such data on one grid
(:class:`parzen.binned.grid.BinCounts` of disjoint parts add up).  The grid's range comes from

- a Parquet dataset's row-group statistics (min / max per column) when every row group has
  them and no NULLs, else a first pass over the batches (:func:`bin_parquet`);
- DuckDB's ``MIN`` / ``MAX`` (:func:`bin_duckdb`),

unless a ``spec`` is given.

DuckDB queries are built only from the table's and columns' names after checking them against
the database's catalog, each quoted as a DuckDB identifier (in double quotes, a double quote
doubled); no other text of the caller reaches the database, and a database file is opened
read-only.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .._extras import require
from .._progress import progress_bar
from .grid import BinCounts, GridSpec, linear_bin
from .source import Chunk, ChunkedData, S

#: Rows read, converted and summarised at a time.
BATCH_ROWS = 1 << 20


class ParquetData(ChunkedData):
    """Columns of a Parquet file or dataset, served in record batches.

    Parameters
    ----------
    path_or_glob : str, os.PathLike or sequence of them
        A Parquet file, a directory of Parquet files, a glob pattern (``"data/*.parquet"``) or
        a list of files.
    columns : str or sequence of str
        The 1 to 4 numeric columns, in axis order (one name: one column).
    weights : str, optional
        A numeric column of non-negative weights (default 1 per row).
    batch_rows : int, default BATCH_ROWS
        Rows per record batch (memory use is a few times batch_rows x columns x 8 bytes).

    Raises
    ------
    FileNotFoundError
        When nothing matches ``path_or_glob``.
    ValueError
        For a column not in the files (the message lists theirs), a non-numeric or repeated
        column, or a ``batch_rows`` that is not a positive integer.
    MissingExtraError
        Without pyarrow (the ``parquet`` extra).
    """

    def __init__(self, path_or_glob, columns: str | Sequence[str], *, weights: str | None = None,
                 batch_rows: int = BATCH_ROWS) -> None:
        require("pyarrow", extra="parquet", what="reading a Parquet dataset")
        import pyarrow.dataset as ds

        _check_batch_rows(batch_rows)
        self.source = str(path_or_glob)
        # pre_buffer=False: pre-buffering held ~1 GB for a file of 10^8 doubles (one column), and
        # without it a pass took 0.77 s against 5.1 s (pyarrow 2-core machine, file by DuckDB COPY)
        options = ds.ParquetFragmentScanOptions(pre_buffer=False)
        self.dataset = ds.dataset(_parquet_sources(path_or_glob),
                                  format=ds.ParquetFileFormat(default_fragment_scan_options=options))
        names, self._names = _checked_names(columns, weights, self.dataset.schema.names, "the Parquet data")
        _check_numeric_arrow(self.dataset.schema, self._names)
        self.columns = tuple(names)
        self.weights = weights
        self.batch_rows = int(batch_rows)

    @property
    def description(self) -> str:
        """``"<path> (<columns>)"``."""
        return f"{self.source} ({', '.join(self.columns)})"

    def reduce(self, summarise: Callable[[Chunk], S], *, what: str = "reading", progress: bool = False) -> S:
        """See :meth:`ChunkedData.reduce`; batches are read and summarised here, one after another."""
        return _reduce_batches(self._batches(), self.dataset.count_rows(), self, summarise, what, progress,
                               read_ahead=True)

    def _batches(self) -> Iterator:
        """The record batches, file after file, each read when it is asked for.

        ``pyarrow.parquet.ParquetFile.iter_batches`` without pre-buffering, not the dataset's
        scanner: the scanner decodes ahead on its own threads, and where the summaries were
        slower than the reading (moments of 10^8 doubles: 9.7 s against 2.6 s to read them) its
        decoded batches piled up, +650 MB; file by file it stays near one batch.
        """
        import pyarrow.parquet as pq

        for fragment in self.dataset.get_fragments():
            with pq.ParquetFile(fragment.path, pre_buffer=False, filesystem=self.dataset.filesystem) as file:
                yield from file.iter_batches(batch_size=self.batch_rows, columns=self._names)

    def statistics_range(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The columns' min and max from the row-group statistics, or (None, None) where some row
        group lacks them or holds NULLs in a column read (then a pass over the rows is needed).

        Returns
        -------
        lows, highs : numpy.ndarray or None
            (d,) each.
        """
        return _parquet_statistics_range(self.dataset, self._names, self.d)


class DuckDBData(ChunkedData):
    """Columns of a DuckDB table or view, fetched as Arrow record batches.

    Parameters
    ----------
    con_or_path : duckdb.DuckDBPyConnection, str or os.PathLike
        An open connection, or a database file (opened read-only for each pass and closed after).
    table : str
        A table or view of the database's main schema.
    columns : str or sequence of str
        The 1 to 4 numeric columns, in axis order (names as stored).
    weights : str, optional
        A numeric column of non-negative weights (default 1 per row).
    batch_rows : int, default BATCH_ROWS
        Rows per summarised batch (DuckDB's batches are joined up to it).

    Raises
    ------
    ValueError
        For a table not in the database or a column not in the table (the message lists
        theirs), a non-numeric or repeated column, or a ``batch_rows`` that is not a positive
        integer.
    MissingExtraError
        Without duckdb or pyarrow (the ``aqp`` extra).
    """

    def __init__(self, con_or_path, table: str, columns: str | Sequence[str], *, weights: str | None = None,
                 batch_rows: int = BATCH_ROWS) -> None:
        require("duckdb", "pyarrow", extra="aqp", what="reading a DuckDB table")
        _check_batch_rows(batch_rows)
        self._database = con_or_path
        self.table = table
        with self._connection() as con:
            types = _duckdb_columns(con, table)
        names, self._names = _checked_names(columns, weights, list(types), f"table {table!r}")
        bad = [c for c in self._names if not _duckdb_numeric(types[c])]
        if bad:
            raise ValueError(f"column(s) {', '.join(map(repr, bad))} of {table!r} are not numeric "
                             f"({', '.join(types[c] for c in bad)}); choose numeric columns")
        self.columns = tuple(names)
        self.weights = weights
        self.batch_rows = int(batch_rows)
        self._doubles = [f"CAST({quote_identifier(c)} AS DOUBLE)" for c in self._names]

    @property
    def description(self) -> str:
        """``"table <name> (<columns>)"``."""
        return f"table {self.table} ({', '.join(self.columns)})"

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """The open connection given, or the database file opened read-only for this block."""
        if not isinstance(self._database, (str, os.PathLike)):
            yield self._database
            return
        import duckdb

        with duckdb.connect(str(self._database), read_only=True) as con:
            yield con

    def reduce(self, summarise: Callable[[Chunk], S], *, what: str = "reading", progress: bool = False) -> S:
        """See :meth:`ChunkedData.reduce`; batches are fetched and summarised here, one after another."""
        with self._connection() as con:
            ((total,),) = con.execute(f"SELECT COUNT(*) FROM {quote_identifier(self.table)}").fetchall()
            relation = con.sql(f"SELECT {', '.join(self._doubles)} FROM {quote_identifier(self.table)}")
            # DuckDB 1.4 renamed fetch_arrow_reader to to_arrow_reader
            reader = (relation.to_arrow_reader(self.batch_rows) if hasattr(relation, "to_arrow_reader")
                      else relation.fetch_arrow_reader(self.batch_rows))
            try:
                return _reduce_batches(reader, total, self, summarise, what, progress, positional=True)
            finally:  # a pass stopped by an error leaves the connection free for the next query
                reader.close()

    def profile(self) -> tuple[int, int, np.ndarray, np.ndarray]:
        """Rows, rows without NULLs, and the columns' MIN and MAX over those, by one DuckDB query.

        Returns
        -------
        rows, complete_rows : int
        lows, highs : numpy.ndarray
            (d,) each (NaN when no row is complete).

        Raises
        ------
        ValueError
            For a non-finite value (naming its column and how many).
        """
        complete = " AND ".join(f"{c} IS NOT NULL" for c in self._doubles)
        nonfinite = [f"COUNT(*) FILTER (WHERE {complete} AND NOT isfinite({c}))" for c in self._doubles]
        bounds = [f"MIN({c}) FILTER (WHERE {complete}), MAX({c}) FILTER (WHERE {complete})"
                  for c in self._doubles[: self.d]]
        with self._connection() as con:
            (row,) = con.execute(f"SELECT COUNT(*), COUNT(*) FILTER (WHERE {complete}), "
                                 f"{', '.join(nonfinite + bounds)} FROM {quote_identifier(self.table)}").fetchall()
        for name, count in zip(self._names, row[2 : 2 + len(self._names)]):
            if count:
                raise ValueError(f"column {name!r} holds {count} non-finite value(s) (inf or NaN); remove them first")
        found = np.asarray([np.nan if v is None else v for v in row[2 + len(self._names):]], dtype=np.float64)
        return int(row[0]), int(row[1]), found[0::2], found[1::2]


def _reduce_batches(batches: Iterable, total_rows: int, data: ParquetData | DuckDBData,
                    summarise: Callable[[Chunk], S], what: str, progress: bool, positional: bool = False,
                    read_ahead: bool = False) -> S:
    """``summarise`` of each (regrouped) batch as a Chunk, added up, with a progress bar; with
    ``read_ahead``, the next chunk is read on another thread meanwhile (:func:`_read_ahead`)."""
    result: Any = None
    chunks = ((_chunk(batch, data.columns, data.weights, positional), batch.num_rows)
              for batch in _regrouped(batches, data.batch_rows))
    with (progress_bar(progress, f"{what} {data.description}", total=total_rows) as bar,
          _core_left_to_reader() if read_ahead else contextlib.nullcontext()):
        for chunk, rows in (_read_ahead(chunks) if read_ahead else chunks):
            part = summarise(chunk)
            result = part if result is None else result + part
            bar.advance(rows)
    if result is None:  # no batch at all: summarise the empty chunk
        result = summarise(Chunk(np.zeros((0, data.d))))
    return result


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

    def __add__(self, other: StreamedCounts) -> StreamedCounts:
        """The counts and tallies of two disjoint parts binned on one grid."""
        return StreamedCounts(self.bins + other.bins, self.rows + other.rows, self.null_rows + other.null_rows,
                              tuple(np.fmin(self.lows, other.lows).tolist()),
                              tuple(np.fmax(self.highs, other.highs).tolist()))

    @classmethod
    def of(cls, chunk: Chunk, *, spec: GridSpec, backend="auto") -> StreamedCounts:
        """The counts of one chunk on ``spec``, with its rows and range (a summary for
        :meth:`ChunkedData.reduce`)."""
        values = chunk.values
        empty = not len(values)
        bins = BinCounts(spec, np.zeros(spec.sizes)) if empty else linear_bin(values, spec, chunk.weights,
                                                                                  backend=backend)
        lows = np.full(spec.d, np.nan) if empty else values.min(axis=0)
        highs = np.full(spec.d, np.nan) if empty else values.max(axis=0)
        return cls(bins, len(values), chunk.null_rows, tuple(lows.tolist()), tuple(highs.tolist()))


def bin_chunked(data: ChunkedData, spec: GridSpec, *, backend="auto", progress: bool = False) -> StreamedCounts:
    """The linear-binning counts of chunked data on ``spec``, with the rows and range binned.

    Parameters
    ----------
    data : ChunkedData
        The data (:mod:`parzen.binned.source`).
    spec : GridSpec
        The grid (covering every row).
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins each chunk (:func:`parzen.binned.grid.linear_bin`).
    progress : bool
        Show a progress bar over the rows.

    Returns
    -------
    StreamedCounts
    """
    return data.reduce(partial(StreamedCounts.of, spec=spec, backend=backend), what="binning", progress=progress)


def bin_parquet(path_or_glob, columns: str | Sequence[str], *, spec: GridSpec | None = None, sizes=None,
                weights: str | None = None, batch_rows: int = BATCH_ROWS, backend="auto",
                progress: bool = False) -> StreamedCounts:
    """Linear binning of columns of a Parquet file or dataset, one record batch at a time.

    Parameters
    ----------
    path_or_glob, columns, weights, batch_rows
        As in :class:`ParquetData`.
    spec : GridSpec, optional
        The grid.  Default: ``sizes`` nodes over the range of the rows binned (those without
        NULLs), from the files' row-group statistics when every row group has finite ones and
        no NULLs in the columns read, else from a first pass over the batches.
    sizes : int or sequence of int, optional
        Nodes per axis when ``spec`` is None (required then).
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
        As :class:`ParquetData`, and for a non-finite value or negative weight (naming its
        column), no row without NULLs, or neither ``spec`` nor ``sizes``.
    MissingExtraError
        Without pyarrow (the ``parquet`` extra).
    """
    data = ParquetData(path_or_glob, columns, weights=weights, batch_rows=batch_rows)
    if spec is None:
        _check_sizes(sizes)
        lows, highs = data.statistics_range()
        if lows is None or highs is None:
            lows, highs = _range_of(data, progress)
        spec = GridSpec.covering(lows, highs, sizes)
    return bin_chunked(data, spec, backend=backend, progress=progress)


def bin_duckdb(con_or_path, table: str, columns: str | Sequence[str], *, spec: GridSpec | None = None, sizes=None,
               weights: str | None = None, batch_rows: int = BATCH_ROWS, backend="auto",
               progress: bool = False) -> StreamedCounts:
    """Linear binning of columns of a DuckDB table, fetched as record batches.

    Parameters
    ----------
    con_or_path, table, columns, weights, batch_rows
        As in :class:`DuckDBData`.
    spec : GridSpec, optional
        The grid.  Default: ``sizes`` nodes over DuckDB's MIN and MAX of each column over the
        rows without NULLs.
    sizes : int or sequence of int, optional
        Nodes per axis when ``spec`` is None (required then).
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
        As :class:`DuckDBData`, and for a non-finite value (naming its column and how many) or a
        negative weight, no row without NULLs, or neither ``spec`` nor ``sizes``.
    MissingExtraError
        Without duckdb or pyarrow (the ``aqp`` extra).
    """
    data = DuckDBData(con_or_path, table, columns, weights=weights, batch_rows=batch_rows)
    _, complete_rows, lows, highs = data.profile()
    if spec is None:
        _check_sizes(sizes)
        if not complete_rows:
            raise ValueError(f"no row of {table!r} has values in all of {', '.join(data._names)}")
        spec = GridSpec.covering(lows, highs, sizes)
    return bin_chunked(data, spec, backend=backend, progress=progress)


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


_END = object()


def _read_ahead(items: Iterator) -> Iterator:
    """The items of ``items``, the next one made on a second thread while the caller works on this one.

    Reading and decoding Parquet (pyarrow) and the summaries' Numba loops release the GIL, so on
    two cores the read of batch i + 1 overlaps the summary of batch i: PLUGIN over 10^7 rows from
    one file took 0.064 s, against 0.087 s reading in turn (2 shared cores, best of 15).  At most
    three chunks are held at once (the one summarised, the next, and the one being read); the
    second thread is joined before this returns or fails.  The summaries meanwhile use one core
    fewer (:func:`_core_left_to_reader`).
    """
    with ThreadPoolExecutor(max_workers=1) as reader:
        pending = reader.submit(next, items, _END)
        while True:
            item = pending.result()
            if item is _END:
                return
            pending = reader.submit(next, items, _END)
            yield item


@contextlib.contextmanager
def _core_left_to_reader() -> Iterator[None]:
    """This thread's Numba loops on one thread fewer meanwhile (at least one), the reader's core.

    ``numba.set_num_threads`` holds for the calling thread only.  With both of 2 cores binning
    while the reader decoded, PLUGIN over 10^7 Parquet rows took 0.074 s; binning on one, 0.059 s
    (reading in turn, both cores binning: 0.084 s; 2 shared cores, best of 15).
    """
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(max(1, threads - 1))
    try:
        yield
    finally:
        numba.set_num_threads(threads)


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


def _chunk(batch, columns, weights: str | None, positional: bool = False) -> Chunk:
    """One record batch as float64 arrays without the rows where any column is NULL.

    Raises ValueError naming the column of a non-finite value or a negative weight.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = list(columns) + ([] if weights is None else [weights])
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
        if not np.isfinite(values.sum()) and not np.isfinite(values).all():  # a finite sum: all finite
            raise ValueError(f"column {name!r} holds non-finite values (inf or NaN); remove them first")
    if weights is not None and (kept[-1] < 0).any():
        raise ValueError(f"column {weights!r} holds negative weights; weights must be >= 0")
    values = kept[0][:, None] if len(columns) == 1 else np.stack(kept[: len(columns)], axis=1)
    return Chunk(values, kept[-1] if weights is not None else None, batch.num_rows - len(values))


def _range_of(data: ChunkedData, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest value on each axis over the rows without NULLs (a first pass)."""
    from .source import Moments

    moments = data.reduce(Moments.of, what="range of", progress=progress)
    if not moments.rows:
        raise ValueError("no row has values in all of the columns (every row holds a NULL)")
    return moments.lows, moments.highs


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
