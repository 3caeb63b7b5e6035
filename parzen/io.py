"""Reading data tables for the command line: CSV or Parquet in, numeric columns out."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._extras import require

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
