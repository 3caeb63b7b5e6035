"""Parquet data read by the Dask workers, partition by partition, as :class:`DaskData`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..binned.stream import _parquet_sources
from .data import DaskData


def parquet_files(path_or_glob) -> list[str] | str:
    """The absolute paths of the Parquet files (or the directory) that ``path_or_glob`` names.

    The workers read them by these paths, so they must see them there (this machine's disk for
    a LocalCluster, a shared file system otherwise).

    Parameters
    ----------
    path_or_glob : str or os.PathLike
        A Parquet file, a directory of Parquet files, or a glob pattern (``"data/*.parquet"``).

    Returns
    -------
    list of str, or str
        The files matched, or the file or directory named.

    Raises
    ------
    FileNotFoundError
        When nothing matches ``path_or_glob``.
    """
    sources = _parquet_sources(path_or_glob)
    if isinstance(sources, str):
        return str(Path(sources).resolve())
    return [str(Path(p).resolve()) for p in sources]


def read_parquet_columns(path_or_glob, columns: Sequence[str], *, client=None) -> DaskData:
    """The named columns of Parquet files as :class:`DaskData`, read on the workers.

    ``dd.read_parquet(parquet_files(path_or_glob), columns=columns)``: each worker reads its
    partitions' columns and bins (or otherwise summarises) them where they are; no row comes to
    the client (docs/distributed.md).  Only the files' schema is read here, so this needs no
    cluster yet.

    Parameters
    ----------
    path_or_glob : str or os.PathLike
        As :func:`parquet_files`.
    columns : sequence of str
        The numeric columns, each named once.
    client : distributed.Client, optional
        The client to compute on (default: the current one when the data are summarised).

    Returns
    -------
    DaskData
        Rows with a NULL in a named column are left out and counted (``null_rows``).

    Raises
    ------
    FileNotFoundError
        When nothing matches ``path_or_glob``.
    ValueError
        When no column is named, one repeats, is not in the files (the message lists those that
        are) or is not numeric.
    """
    import dask.dataframe as dd

    columns = list(columns)
    files = parquet_files(path_or_glob)
    available = list(dd.read_parquet(files).columns)
    missing = [c for c in columns if c not in available]
    if not columns or missing:
        named = f"no column {', '.join(map(repr, missing))} in the Parquet data" if missing else "name at least one column"
        raise ValueError(f"{named}; available: {', '.join(map(str, available))}")
    if len(set(columns)) < len(columns):
        raise ValueError(f"columns repeat: {', '.join(columns)}; name each column once")
    return DaskData(dd.read_parquet(files, columns=columns), columns=columns, client=client)
