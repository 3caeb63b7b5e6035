"""Dask collections as :class:`parzen.binned.source.ChunkedData`: summarised on the workers.

A dask array or DataFrame is never gathered: each partition is turned into a
:class:`~parzen.binned.source.Chunk` and summarised on the worker that holds (or reads) it, and
the partitions' summaries are added by a tree of tasks (:func:`parzen.distributed.tree.tree_sum`);
only the total comes back.  Because the summaries add exactly (the counts of linear binning,
Wand 1994, section 2; the pairwise moments of Chan, Golub & LeVeque 1979, eq. 2.1), the result
equals one process summarising every row, to float64 round-off (docs/distributed.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from .._progress import progress_bar
from ..binned.source import Chunk, ChunkedData
from .blocks import on_one_thread
from .client import dask_client
from .tree import tree_sum

S = TypeVar("S")


def array_block_chunk(values: np.ndarray, weights: np.ndarray | None, columns: Sequence[str]) -> Chunk:
    """One block of a dask array as a Chunk (on the worker).

    Parameters
    ----------
    values : numpy.ndarray
        (k,) or (k, d) the block's rows.
    weights : numpy.ndarray or None
        (k,) their weights.
    columns : sequence of str
        The column names, for errors.

    Returns
    -------
    Chunk

    Raises
    ------
    ValueError
        For a non-finite value (naming its column) or a negative weight: an array has no NULLs.
    """
    values = np.asarray(values, dtype=np.float64).reshape(len(values), len(columns))
    finite = np.isfinite(values).all(axis=0)
    if not finite.all():
        name = columns[int(np.argmin(finite))]
        raise ValueError(
            f"column {name!r} of the dask array holds non-finite values (inf or NaN); remove them first "
            "(in a dask DataFrame, NaN counts as NULL and its row is left out)"
        )
    return Chunk(values, _checked_weights(weights, "the weights"), 0)


def frame_partition_chunk(frame, columns: Sequence[str], weights: str | None) -> Chunk:
    """One partition of a dask DataFrame as a Chunk (on the worker), without its NULL rows.

    A row is NULL when any of its columns (or its weight) is missing: pandas' NA or NaN, which
    is how a float column of a DataFrame holds Parquet's NULL.  Such rows are counted in
    ``null_rows``, as :func:`parzen.binned.stream.bin_parquet` counts them.

    Parameters
    ----------
    frame : pandas.DataFrame
        The partition.
    columns : sequence of str
        The value columns, in axis order.
    weights : str or None
        The weight column.

    Returns
    -------
    Chunk

    Raises
    ------
    ValueError
        For an infinite value (naming its column) or a negative weight.
    """
    names = list(columns) + ([] if weights is None else [weights])
    table = frame[names].to_numpy(dtype=np.float64, na_value=np.nan)
    complete = ~np.isnan(table).any(axis=1)
    kept = table[complete]
    infinite = np.isinf(kept).any(axis=0)
    if infinite.any():
        raise ValueError(f"column {names[int(np.argmax(infinite))]!r} holds infinite values; remove them first")
    w = kept[:, -1] if weights is not None else None
    return Chunk(kept[:, : len(columns)], _checked_weights(w, f"column {weights!r}"), int(len(table) - len(kept)))


def _checked_weights(weights, what: str) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError(f"{what} hold negative or non-finite weights; weights must be finite and >= 0")
    return w


def summarise_array_block(values, weights, columns: Sequence[str], summarise: Callable[[Chunk], S]) -> S:
    """``summarise`` of one dask-array block (a task on a worker, Numba on one thread:
    :func:`parzen.distributed.blocks.on_one_thread`)."""
    return on_one_thread(summarise, array_block_chunk(values, weights, columns))


def summarise_frame_partition(frame, columns: Sequence[str], weights: str | None, summarise: Callable[[Chunk], S]) -> S:
    """``summarise`` of one dask-DataFrame partition (a task on a worker, Numba on one thread)."""
    return on_one_thread(summarise, frame_partition_chunk(frame, columns, weights))


class DaskData(ChunkedData):
    """A dask array or dask DataFrame, summarised partition by partition on the Dask workers.

    Parameters
    ----------
    data : dask.array.Array, dask.dataframe.DataFrame or dask.dataframe.Series
        A 1-D or 2-D array (rows x columns; any chunking), or a DataFrame (e.g.
        ``dd.read_parquet(path)[["x", "y"]]``) or Series of numeric columns.
    weights : optional
        For an array: a dask array (or array_like) of one non-negative weight per row.  For a
        DataFrame: the name of its weight column.
    columns : sequence of str, optional
        Array: the column names (default ``x0``, ``x1``, ...).  DataFrame: the value columns
        (default every column but the weight column).
    client : distributed.Client, optional
        The client to compute on (default: the current one, looked up at each :meth:`reduce`).

    Raises
    ------
    ValueError
        For an array that is not 1-D or 2-D, weights of another length or chunking that cannot be
        aligned, unknown or non-numeric DataFrame columns, or misnamed columns.
    TypeError
        For data that are not a dask array, DataFrame or Series.

    Notes
    -----
    NULLs: in a DataFrame a row with NaN (or pandas' NA) in a used column or in the weight is
    left out and counted in the chunks' ``null_rows``; an infinite value raises.  An array has
    no NULLs: any non-finite value raises, naming its column.
    """

    def __init__(self, data, weights=None, *, columns: Sequence[str] | None = None, client=None) -> None:
        import dask.array as da
        import dask.dataframe as dd

        self._client = client
        if isinstance(data, da.Array):
            self._init_array(da, data, weights, columns)
        elif isinstance(data, (dd.DataFrame, dd.Series)):
            self._init_frame(data.to_frame() if isinstance(data, dd.Series) else data, weights, columns)
        else:
            raise TypeError(
                f"DaskData takes a dask array, DataFrame or Series, got {type(data).__name__}; "
                "wrap NumPy arrays with dask.array.from_array or use parzen.binned.source.ArrayChunks"
            )

    def _init_array(self, da, data, weights, columns) -> None:
        if data.ndim not in (1, 2):
            raise ValueError(f"a dask array of data must be 1-D or 2-D (rows x columns), got shape {data.shape}")
        values = data if data.ndim == 2 else data[:, None]
        self._values = values.rechunk({1: -1})  # whole rows in each block
        d = values.shape[1]
        self.columns = tuple(columns) if columns is not None else tuple(f"x{a}" for a in range(d))
        if len(self.columns) != d:
            raise ValueError(f"{len(self.columns)} column names for {d} columns")
        self._weights = None
        if weights is not None:
            w = da.asarray(weights)
            if w.shape != (values.shape[0],):
                raise ValueError(f"weights must be one number per row ({values.shape[0]}), got shape {w.shape}")
            self._weights = w.rechunk((values.chunks[0],))
        self._frame = None

    def _init_frame(self, frame, weights, columns) -> None:
        if weights is not None and not isinstance(weights, str):
            raise ValueError("for a dask DataFrame, weights= is the name of its weight column")
        names = [c for c in frame.columns if c != weights] if columns is None else list(columns)
        unknown = [c for c in names + ([weights] if weights else []) if c not in frame.columns]
        if unknown:
            raise ValueError(f"no column {unknown[0]!r} in the DataFrame; it has {', '.join(map(repr, frame.columns))}")
        if not names:
            raise ValueError("the DataFrame has no value column besides the weights")
        for name in names + ([weights] if weights else []):
            if frame[name].dtype.kind not in "biuf":
                raise ValueError(f"column {name!r} is not numeric ({frame[name].dtype}); pick numeric columns")
        self.columns = tuple(str(c) for c in names)
        self._frame = frame[names + ([weights] if weights else [])]
        self._weight_column = weights

    @property
    def description(self) -> str:
        """``"a dask array of n rows in k blocks"`` or ``"a dask DataFrame in k partitions"``."""
        if self._frame is not None:
            return f"a dask DataFrame in {self._frame.npartitions} partitions"
        return f"a dask array of {self._values.shape[0]} rows in {len(self._values.chunks[0])} blocks"

    def _partition_tasks(self, summarise: Callable[[Chunk], S]) -> list:
        """One delayed summary per partition."""
        from dask import delayed

        if self._frame is not None:
            task = delayed(summarise_frame_partition, pure=True)
            return [task(part, self.columns, self._weight_column, summarise) for part in self._frame.to_delayed()]
        blocks = self._values.to_delayed().ravel()
        weights = [None] * len(blocks) if self._weights is None else list(self._weights.to_delayed().ravel())
        task = delayed(summarise_array_block, pure=True)
        return [task(block, w, self.columns, summarise) for block, w in zip(blocks, weights)]

    def reduce(self, summarise: Callable[[Chunk], S], *, what: str = "reading", progress: bool = False) -> S:
        """See :meth:`parzen.binned.source.ChunkedData.reduce`: ``summarise`` runs on the workers,
        one task per partition, and the summaries are added by a tree of tasks of fan-in
        :data:`parzen.distributed.tree.FAN_IN`; only the total is gathered.

        ``summarise`` must be picklable (a module-level function or a ``functools.partial`` of
        one).  Errors raised on a worker (a non-finite value, a row outside a grid) are raised
        here.
        """
        from distributed import as_completed

        client = dask_client(self._client)
        parts = client.compute(self._partition_tasks(summarise))
        total = tree_sum(client, parts)
        with progress_bar(progress, f"{what} {self.description}", total=len(parts)) as bar:
            for _ in as_completed(parts, loop=client.loop):
                bar.advance()
        result: Any = total.result()
        return result
