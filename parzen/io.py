"""Reading data tables for the command line: CSV or Parquet in, numeric columns out.

Data larger than memory are served in chunks by :class:`parzen.binned.ParquetData` and
:class:`parzen.binned.DuckDBData` (the library's constructors); :func:`open_columns` decides for
the command line whether to read a table into memory or to stream it.
"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pandas as pd

from ._extras import require
from .binned.source import Chunk, ChunkedData

#: File suffix -> pandas reader.
READERS = {".csv": pd.read_csv, ".parquet": pd.read_parquet, ".pq": pd.read_parquet}


def read_table(path) -> pd.DataFrame:
    """Read a CSV or Parquet file, chosen by its suffix.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.csv``, ``.parquet`` or ``.pq`` file (the suffix in any case).

    Returns
    -------
    pandas.DataFrame
        The whole table, as pandas reads it.

    Raises
    ------
    ValueError
        For another suffix.
    FileNotFoundError
        When ``path`` is not a file.
    MissingExtraError
        For a Parquet file without pyarrow (the ``parquet`` extra).
    """
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise ValueError(
            f"cannot read {str(path)!r}: unknown file type {path.suffix or '(no suffix)'!r}; "
            f"use one of {', '.join(READERS)}"
        )
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    if reader is pd.read_parquet:
        require("pyarrow", extra="parquet", what="reading a Parquet file")
    return reader(path)


def select_columns(df: pd.DataFrame, columns) -> tuple[pd.DataFrame, int]:
    """The named numeric columns as float64, without the rows where any is missing.

    Parameters
    ----------
    df : pandas.DataFrame
        The table read by :func:`read_table`.
    columns : iterable of str
        The columns to keep, each named once.

    Returns
    -------
    table : pandas.DataFrame
        Those columns as float64, without the rows where any of them is missing (NULL / NaN).
    dropped : int
        The number of rows dropped, so that the caller can report them.

    Raises
    ------
    ValueError
        When no column is named, a name is not in ``df`` or repeats, or a column is not numeric
        (booleans included); the message lists the available columns or an offending value.
    """
    columns = list(columns)
    if not columns:
        raise ValueError(f"name at least one column; available: {', '.join(map(str, df.columns))}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"no column {', '.join(map(repr, missing))} in the table; "
            f"available: {', '.join(map(str, df.columns))}"
        )
    if len(set(columns)) < len(columns):
        raise ValueError(f"columns repeat: {', '.join(columns)}; name each column once")
    table = df[columns]
    for name in columns:
        col = table[name]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            bad = col[pd.to_numeric(col, errors="coerce").isna() & col.notna()]
            example = f", e.g. {bad.iloc[0]!r}" if len(bad) else ""
            raise ValueError(f"column {name!r} is not numeric (type {col.dtype}{example}); choose numeric columns")
    kept = table.dropna()
    return kept.astype("float64"), len(table) - len(kept)


#: The command line streams a Parquet dataset or DuckDB table of more rows than this (binned,
#: chunk by chunk, memory bounded by the batch size) and reads smaller ones into memory, where
#: the selectors may sum pairs exactly; ``--exact`` reads any size into memory.
STREAM_FROM_ROWS = 10_000_000


def is_parquet_source(path) -> bool:
    """Whether ``path`` names Parquet data: a ``.parquet`` / ``.pq`` file, a directory, or a glob
    pattern (``*``, ``?`` or ``[``) of them that is not itself the name of a file."""
    path = Path(path)
    if path.is_file():
        return path.suffix.lower() in (".parquet", ".pq")
    return path.suffix.lower() in (".parquet", ".pq") or path.is_dir() or glob.has_magic(str(path))


def open_columns(path, columns, *, table: str | None = None, exact: bool = False,
                 stream_from: int | None = None) -> tuple[pd.DataFrame | ChunkedData, int | None]:
    """The columns of a file as the command line uses them: a DataFrame, or data to stream.

    Parameters
    ----------
    path : str or os.PathLike
        A CSV or Parquet file, a directory or glob of Parquet files, or (with ``table``) a
        DuckDB database file.
    columns : sequence of str
        The numeric columns.
    table : str, optional
        The table of a DuckDB database.
    exact : bool, default False
        Read the rows into memory whatever their number (exact pair sums need them there).
    stream_from : int, optional
        Parquet data and DuckDB tables of more rows are streamed (default :data:`STREAM_FROM_ROWS`).

    Returns
    -------
    data : pandas.DataFrame or ChunkedData
        The columns as float64 without the rows where any is missing, or the data to stream.
    dropped : int or None
        Rows dropped for a missing value (None when streamed: the passes count them).

    Raises
    ------
    ValueError, FileNotFoundError, MissingExtraError
        As :func:`read_table`, :class:`parzen.binned.ParquetData` and
        :class:`parzen.binned.DuckDBData`.
    """
    data, _, dropped = open_weighted_columns(path, columns, None, table=table, exact=exact, stream_from=stream_from)
    return data, dropped


def open_weighted_columns(path, columns, weights: str | None, *, table: str | None = None, exact: bool = False,
                          stream_from: int | None = None
                          ) -> tuple[pd.DataFrame | ChunkedData, np.ndarray | None, int | None]:
    """:func:`open_columns` with the rows' weights read from the column ``weights`` of the same data.

    Parameters
    ----------
    path, columns, table, exact, stream_from
        As in :func:`open_columns`.
    weights : str or None
        A numeric column of the rows' weights (not one of ``columns``), or None for none.

    Returns
    -------
    data : pandas.DataFrame or ChunkedData
        As :func:`open_columns` gives it; streamed data carry the weights as their own column
        (``weights=`` of :class:`parzen.binned.ParquetData` and :class:`parzen.binned.DuckDBData`).
    row_weights : numpy.ndarray or None
        (n,) the weights of the rows of a DataFrame (those kept); None without ``weights`` or when streamed.
    dropped : int or None
        Rows dropped for a missing value, the weight's included (None when streamed).

    Raises
    ------
    ValueError, FileNotFoundError, MissingExtraError
        As :func:`open_columns`; also when ``weights`` is one of ``columns``.
    """
    from .binned.stream import DuckDBData, ParquetData

    if weights is not None and weights in columns:
        raise ValueError(f"the weights column {weights!r} is also a data column; name it once, with --weights only")
    source: ParquetData | DuckDBData
    if table is not None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such DuckDB database file: {str(path)!r}")
        source = DuckDBData(path, table, list(columns), weights=weights)
        rows = source.profile()[0]
    elif is_parquet_source(path):
        source = ParquetData(path, list(columns), weights=weights)
        rows = source.dataset.count_rows()
    else:
        frame, dropped = select_columns(read_table(path), [*columns] + ([] if weights is None else [weights]))
        return frame[list(columns)], None if weights is None else frame[weights].to_numpy(), dropped
    if rows > (STREAM_FROM_ROWS if stream_from is None else stream_from) and not exact:
        return source, None, None
    frame, row_weights, dropped = rows_in_memory(source)
    return frame, row_weights, dropped


def in_memory(data: ChunkedData) -> tuple[pd.DataFrame, int]:
    """The rows of data served in chunks (without NULLs) as a DataFrame, and the rows left out.

    Parameters
    ----------
    data : ChunkedData
        The data (small enough for memory).

    Returns
    -------
    table : pandas.DataFrame
        float64 columns named as ``data.columns``.
    dropped : int
        Rows with a NULL, left out.
    """
    frame, _, dropped = rows_in_memory(data)
    return frame, dropped


def rows_in_memory(data: ChunkedData) -> tuple[pd.DataFrame, np.ndarray | None, int]:
    """:func:`in_memory` with the rows' weights (None where the data have no weights column).

    Parameters
    ----------
    data : ChunkedData
        The data (small enough for memory).

    Returns
    -------
    table : pandas.DataFrame
        float64 columns named as ``data.columns``.
    weights : numpy.ndarray or None
        (n,) the weights of those rows.
    dropped : int
        Rows with a NULL (in a column or the weight), left out.
    """
    chunks = data.reduce(_listed, what="reading")
    values = np.concatenate([c.values for c in chunks]) if chunks else np.zeros((0, data.d))
    weighted = [c.weights for c in chunks if c.weights is not None]
    weights = np.concatenate(weighted) if weighted and len(weighted) == len(chunks) else None
    return pd.DataFrame(values, columns=list(data.columns)), weights, sum(c.null_rows for c in chunks)


def _listed(chunk: Chunk) -> list[Chunk]:
    """A chunk as a one-item list: lists add up to all the chunks (a summary for ``reduce``)."""
    return [chunk]
