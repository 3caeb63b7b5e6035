"""Data read in chunks: the one interface behind every input larger than one array.

A selector or :class:`parzen.KDE` that is handed data it cannot hold in memory (a Parquet
dataset, a DuckDB table, a Dask collection) never asks for the rows.  It asks the data for a
*summary*: a function of one chunk of rows whose results over disjoint chunks add up (with
``+``) to the result over all rows.  Linear-binning counts are such a summary
(:class:`parzen.binned.grid.BinCounts`), and so are the moments of :class:`Moments`.  Each kind
of data decides where the chunks are summarised (in this process, batch after batch, or on the
workers of a cluster, with a tree reduction of the partial results), so the statistics code is
the same for all of them.

:class:`ChunkedData` is the interface and :func:`as_chunked` recognises it; :class:`ArrayChunks`
serves an in-memory array in
chunks (the reference the other kinds are tested against).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .._progress import progress_bar
from ._numba_moments import column_moments
from .grid import BinCounts, GridSpec, linear_bin

S = TypeVar("S")


@dataclass(frozen=True)
class Chunk:
    """Rows of the data without NULLs, as float64 arrays.

    Parameters
    ----------
    values : numpy.ndarray
        (k, d) the rows (finite).
    weights : numpy.ndarray or None
        (k,) non-negative weights, or None for weight 1 per row.
    null_rows : int
        Rows of this part of the data left out because a column (or the weight) was NULL.
    """

    values: np.ndarray
    weights: np.ndarray | None = None
    null_rows: int = 0


@dataclass(frozen=True)
class Moments:
    """Rows, total weight, range, mean and scatter matrix: a summary that adds over chunks.

    The weighted mean and scatter S = sum_i w_i (x_i - mean)(x_i - mean)^T of two disjoint parts
    A and B combine exactly (Chan, Golub & LeVeque 1979, "Updating formulae and a pairwise
    algorithm for computing sample variances", Stanford CS report STAN-CS-79-773, eq. 2.1):

        W = W_A + W_B,  delta = mean_B - mean_A,  mean = mean_A + delta W_B / W,
        S = S_A + S_B + delta delta^T W_A W_B / W.

    Parameters
    ----------
    rows : int
        Rows summarised (without NULLs).
    null_rows : int
        Rows left out for a NULL.
    weight : float
        The total weight (``rows`` when unweighted).
    lows, highs : numpy.ndarray
        (d,) the smallest and largest value per column (+inf / -inf when ``rows`` is 0).
    mean : numpy.ndarray
        (d,) the weighted mean (0 when ``weight`` is 0).
    scatter : numpy.ndarray
        (d, d) the weighted scatter matrix S about the mean.
    """

    rows: int
    null_rows: int
    weight: float
    lows: np.ndarray
    highs: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray

    @classmethod
    def of(cls, chunk: Chunk) -> Moments:
        """The moments of one chunk (a summary function for :meth:`ChunkedData.reduce`).

        One column is summarised in one pass over the rows, without copies
        (:func:`parzen.binned._numba_moments.column_moments`: shifted sums, a second pass only where
        they would cancel); more columns by NumPy (the mean, then the centred rows' products).

        Parameters
        ----------
        chunk : Chunk
            The rows.

        Returns
        -------
        Moments
        """
        values = np.asarray(chunk.values, dtype=np.float64)
        k, d = values.shape
        if k == 0:
            return cls(0, chunk.null_rows, 0.0, np.full(d, np.inf), np.full(d, -np.inf), np.zeros(d), np.zeros((d, d)))
        if d == 1:  # one pass, no copies (:mod:`parzen.binned._numba_moments`)
            weighted = chunk.weights is not None
            w = np.asarray(chunk.weights, dtype=np.float64) if weighted else np.ones(1)
            weight, low, high, mean1, scatter1 = column_moments(np.ascontiguousarray(values[:, 0]), w, weighted)
            return cls(k, chunk.null_rows, float(weight), np.array([low]), np.array([high]), np.array([mean1]),
                       np.array([[scatter1]]))
        if chunk.weights is None:  # no array of ones: 0.15 s of 0.72 s for 10^7 rows in 1-D
            weight = float(k)
            mean = values.sum(axis=0) / weight
            centred = values - mean
            scatter = centred.T @ centred
        else:
            w = np.asarray(chunk.weights, dtype=np.float64)
            weight = float(w.sum())
            mean = (w @ values) / weight if weight > 0 else np.zeros(d)
            centred = values - mean
            scatter = (centred * w[:, None]).T @ centred
        return cls(k, chunk.null_rows, weight, values.min(axis=0), values.max(axis=0), mean, scatter)

    def __add__(self, other: Moments) -> Moments:
        """The moments of the union of two disjoint parts (class docstring)."""
        if not isinstance(other, Moments):
            return NotImplemented
        weight = self.weight + other.weight
        if weight > 0:
            delta = other.mean - self.mean
            mean = self.mean + delta * (other.weight / weight)
            scatter = self.scatter + other.scatter + np.outer(delta, delta) * (self.weight * other.weight / weight)
        else:
            mean, scatter = self.mean, self.scatter + other.scatter
        return Moments(
            self.rows + other.rows,
            self.null_rows + other.null_rows,
            weight,
            np.minimum(self.lows, other.lows),
            np.maximum(self.highs, other.highs),
            mean,
            scatter,
        )

    @property
    def covariance(self) -> np.ndarray:
        """(d, d) the sample covariance S / (W - 1), as ``np.cov`` (frequency weights).

        Raises
        ------
        ValueError
            When the total weight is at most 1.
        """
        if self.weight <= 1:
            raise ValueError(f"a covariance needs a total weight above 1, the data have {self.weight:g}")
        return self.scatter / (self.weight - 1.0)


def bin_chunk(chunk: Chunk, *, spec: GridSpec, backend="auto") -> BinCounts:
    """The linear-binning counts of one chunk on ``spec`` (a summary for :meth:`ChunkedData.reduce`).

    Use as ``data.reduce(functools.partial(bin_chunk, spec=spec))``.

    Parameters
    ----------
    chunk : Chunk
        The rows, inside the grid's box.
    spec : GridSpec
        The grid.
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Who bins (:func:`parzen.binned.grid.linear_bin`).

    Returns
    -------
    BinCounts
    """
    return linear_bin(chunk.values, spec, chunk.weights, backend=backend)


class ChunkedData(ABC):
    """Data served in chunks, summarised chunk by chunk (module docstring).

    Subclasses say where the chunks come from and where they are summarised; callers only
    :meth:`reduce`.
    """

    #: The column names, in axis order.
    columns: tuple[str, ...]

    @property
    def d(self) -> int:
        """The number of columns (axes)."""
        return len(self.columns)

    @property
    @abstractmethod
    def description(self) -> str:
        """Where the data are, in a few words (for progress bars and errors)."""

    @abstractmethod
    def reduce(self, summarise: Callable[[Chunk], S], *, what: str = "reading", progress: bool = False) -> S:
        """``summarise(chunk)`` of every chunk, added up with ``+``.

        Parameters
        ----------
        summarise : callable
            Chunk -> summary, where summaries of disjoint chunks add up to the summary of their
            union.  Kinds of data that summarise elsewhere (other processes) need it picklable:
            a module-level function or a :func:`functools.partial` of one.
        what : str
            What the pass does, for a progress bar ("binning", "range of ...").
        progress : bool
            Show a progress bar over the rows.

        Returns
        -------
        The summary of all rows.

        Raises
        ------
        ValueError
            When there are no chunks at all.
        """


class ArrayChunks(ChunkedData):
    """An in-memory array served in chunks of at most ``chunk_rows`` rows.

    Parameters
    ----------
    values : array_like of shape (n,) or (n, d)
        Finite data.
    weights : array_like of shape (n,), optional
        Non-negative weights.
    chunk_rows : int, default 2**20
        Rows per chunk.
    columns : sequence of str, optional
        Column names (default ``x0``, ``x1``, ...).

    Raises
    ------
    ValueError
        For non-finite values, negative or misshapen weights, or a ``chunk_rows`` below 1.
    """

    def __init__(self, values, weights=None, *, chunk_rows: int = 1 << 20, columns=None) -> None:
        values = np.asarray(values, dtype=np.float64)
        self.values = values.reshape(len(values), -1)
        if not np.isfinite(self.values).all():
            raise ValueError("the data hold non-finite values (inf or NaN); remove them first")
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        if self.weights is not None and (self.weights.shape != (len(self.values),) or (self.weights < 0).any()):
            raise ValueError(f"weights must be {len(self.values)} non-negative numbers, one per row")
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
        self.chunk_rows = int(chunk_rows)
        d = self.values.shape[1]
        self.columns = tuple(columns) if columns is not None else tuple(f"x{a}" for a in range(d))
        if len(self.columns) != d:
            raise ValueError(f"{len(self.columns)} column names for {d} columns")

    @property
    def description(self) -> str:
        """``"an array of n rows"``."""
        return f"an array of {len(self.values)} rows"

    def chunks(self) -> Iterator[Chunk]:
        """The chunks, in row order."""
        for start in range(0, max(len(self.values), 1), self.chunk_rows):
            stop = start + self.chunk_rows
            yield Chunk(self.values[start:stop], None if self.weights is None else self.weights[start:stop])

    def reduce(self, summarise: Callable[[Chunk], S], *, what: str = "reading", progress: bool = False) -> S:
        """See :meth:`ChunkedData.reduce`; chunks are summarised here, one after another."""
        total: Any = None
        with progress_bar(progress, f"{what} {self.description}", total=len(self.values)) as bar:
            for chunk in self.chunks():
                part = summarise(chunk)
                total = part if total is None else total + part
                bar.advance(len(chunk.values))
        return total


def as_chunked(x) -> ChunkedData | None:
    """``x`` if it is :class:`ChunkedData`, else None (an in-memory array or table).

    The selectors and :meth:`parzen.KDE.fit` call this first: data served in chunks take the
    binned path, summarised chunk by chunk; anything else is read into one array as before.
    A Dask collection (a dask array, DataFrame or Series) becomes a
    :class:`parzen.distributed.DaskData`, summarised on the workers of the current Dask client.

    Parameters
    ----------
    x : object
        What the caller passed as data.

    Returns
    -------
    ChunkedData or None

    Raises
    ------
    ValueError, TypeError
        For a Dask collection :class:`parzen.distributed.DaskData` does not take (its messages).
    """
    if isinstance(x, ChunkedData):
        return x
    dask = sys.modules.get("dask")  # a Dask collection can exist only where dask is imported
    if dask is not None and dask.is_dask_collection(x):
        from ..distributed import DaskData

        return DaskData(x)
    return None
