"""Mergeable per-group summaries of numeric columns: COUNT, mean, sum of squared deviations, MIN, MAX.

A synopsis keeps one :class:`ColumnSummary` of its table (a row per group of its ``group_by``, one
row without): the exact answers to VAR/STDDEV and MIN/MAX without a numeric predicate
(:mod:`parzen.aqp.aggregates`).  It is computed from batches of rows (:meth:`ColumnSummary.of_batch`:
a dict column -> float64 array, NaN for NULL, and the group key arrays) and merged with ``+``, in
any order and grouping of the batches: the build adds up DuckDB's record batches, a distributed
build the summaries of its partitions.  Means and squared deviations merge by Chan, Golub and
LeVeque's pairwise update (Chan, Golub, LeVeque 1979, "Updating formulae and a pairwise algorithm
for computing sample variances", Stanford CS tech. report STAN-CS-79-773): with
delta = mean_b - mean_a and n = n_a + n_b,

    mean = mean_a + delta n_b / n,     M2 = M2_a + M2_b + delta^2 n_a n_b / n,

so no sum of squares of raw values (which cancels catastrophically for large means) is ever formed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: The per-group, per-column arrays of a summary, as stored in a synopsis.
FIELDS = ("count", "mean", "m2", "low", "high")


def normal_key(values) -> tuple:
    """A group key as summaries and synopses compare it: NULL (None, NaN) -> None, numbers -> float,
    text -> str, anything else -> its str (so a key read from a record batch and the same key read
    from a DataFrame compare equal)."""
    out: list[object] = []
    for v in values:
        v = v.item() if hasattr(v, "item") and not isinstance(v, str) else v
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
            out.append(None)
        elif isinstance(v, (bool, str)):
            out.append(v)
        elif isinstance(v, (int, float)):
            out.append(float(v))
        else:
            out.append(str(v))
    return tuple(out)


def batch_groups(columns: dict[str, np.ndarray], keys: Sequence[np.ndarray]) -> tuple[np.ndarray, tuple[tuple, ...]]:
    """:func:`group_codes` of a batch's key arrays, after checking that the batch's columns and key
    arrays have one length (a ValueError naming the lengths otherwise)."""
    lengths = {np.asarray(v).shape[0] for v in [*columns.values(), *keys]}
    if len(lengths) > 1:
        raise ValueError(f"a batch's columns and key arrays must have one length, got lengths {sorted(lengths)}")
    return group_codes(keys, lengths.pop() if lengths else 0)


def group_codes(keys: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, tuple[tuple, ...]]:
    """Each of the ``n`` rows' group index and the groups' keys (normalised by :func:`normal_key`).

    Parameters
    ----------
    keys : sequence of numpy.ndarray
        The group columns' values (None or NaN for NULL); empty: every row in one group ``()``.
    n : int
        The rows.

    Returns
    -------
    group : numpy.ndarray
        Per row, its group's index.
    group_keys : tuple of tuple
        Per group, its key.
    """
    if not keys:
        return np.zeros(n, dtype=np.intp), ((),)
    codes = np.zeros(n, dtype=np.int64)
    for key in keys:
        key_codes, uniques = pd.factorize(np.asarray(key, dtype=object), use_na_sentinel=False)
        codes = codes * max(len(uniques), 1) + key_codes
    _, first, group = np.unique(codes, return_index=True, return_inverse=True)
    return group.reshape(-1), tuple(normal_key([np.asarray(k, dtype=object)[i] for k in keys]) for i in first)


@dataclass(frozen=True)
class ColumnSummary:
    """Per group (``keys``, normalised by :func:`normal_key`) and column (``columns``): the non-NULL
    values' COUNT, mean, sum of squared deviations from the mean M2, MIN and MAX ((groups, columns)
    float64 arrays; mean and M2 0 and MIN, MAX NaN where COUNT is 0)."""

    columns: tuple[str, ...]
    keys: tuple[tuple, ...]
    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of_batch(cls, columns: dict[str, np.ndarray], keys: Sequence[np.ndarray] = ()) -> ColumnSummary:
        """The summary of one batch of rows.

        Parameters
        ----------
        columns : dict of str to numpy.ndarray
            Column -> its values in the batch (float64; NaN for NULL).
        keys : sequence of numpy.ndarray
            The group columns' values in the batch (any dtype; None or NaN for NULL); empty: one group.

        Returns
        -------
        ColumnSummary

        Raises
        ------
        ValueError
            Columns or key arrays of different lengths.
        """
        names = tuple(columns)
        group, group_keys = batch_groups(columns, keys)
        n = group.size
        order = np.argsort(group, kind="stable")
        starts = np.searchsorted(group[order], np.arange(len(group_keys)))
        shape = (len(group_keys), len(names))
        stats = {f: np.zeros(shape) for f in FIELDS}
        for c, name in enumerate(names):
            values = np.asarray(columns[name], dtype=np.float64)[order]
            valid = ~np.isnan(values)
            if not n:
                continue
            count = np.add.reduceat(valid.astype(np.float64), starts)
            total = np.add.reduceat(np.where(valid, values, 0.0), starts)
            mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
            deviation = np.where(valid, values - np.repeat(mean, np.diff(np.r_[starts, n])), 0.0)
            stats["count"][:, c], stats["mean"][:, c] = count, mean
            stats["m2"][:, c] = np.add.reduceat(deviation * deviation, starts)
            with np.errstate(invalid="ignore"):
                stats["low"][:, c] = np.fmin.reduceat(values, starts)
                stats["high"][:, c] = np.fmax.reduceat(values, starts)
        return cls(names, group_keys, **stats)

    def __add__(self, other: ColumnSummary) -> ColumnSummary:
        """The summary of the rows of both (Chan, Golub and LeVeque's update; see the module)."""
        if self.columns != other.columns:
            raise ValueError(f"summaries of different columns cannot merge: {self.columns} and {other.columns}")
        keys = tuple(dict.fromkeys(self.keys + other.keys))
        a, b = self.aligned(keys, missing_empty=True), other.aligned(keys, missing_empty=True)
        n = a.count + b.count
        delta = b.mean - a.mean
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(n > 0, b.count / n, 0.0)
            mean = a.mean + delta * share
            m2 = a.m2 + b.m2 + delta * delta * a.count * share
        return ColumnSummary(self.columns, keys, n, mean, m2, np.fmin(a.low, b.low), np.fmax(a.high, b.high))

    merge = __add__

    def aligned(self, keys: Sequence[tuple], *, missing_empty: bool = False) -> ColumnSummary:
        """The summary with one row per key of ``keys`` (normalised here), in that order.

        Parameters
        ----------
        keys : sequence of tuple
            Group keys, e.g. a synopsis's groups in order.
        missing_empty : bool
            A key the summary has not seen gets an empty row (COUNT 0); otherwise it raises.

        Returns
        -------
        ColumnSummary

        Raises
        ------
        ValueError
            A key the summary has not seen (unless ``missing_empty``).
        """
        keys = tuple(normal_key(k) for k in keys)
        where = {k: i for i, k in enumerate(self.keys)}
        missing = [k for k in keys if k not in where]
        if missing and not missing_empty:
            raise ValueError(f"the column summary has no group {missing[0]!r}")
        index = np.array([where.get(k, -1) for k in keys], dtype=np.intp)
        arrays = {}
        for f in FIELDS:
            values = getattr(self, f)
            empty = np.nan if f in ("low", "high") else 0.0
            arrays[f] = np.where((index >= 0)[:, None], values[np.maximum(index, 0)] if values.size else empty, empty) \
                if keys else np.zeros((0, len(self.columns)))
        return ColumnSummary(self.columns, keys, **arrays)

    def arrays(self) -> dict[str, np.ndarray]:
        """The (groups, columns) arrays by field name, to store."""
        return {f: getattr(self, f) for f in FIELDS}

    @classmethod
    def from_arrays(cls, columns: Sequence[str], keys: Sequence[tuple], arrays: dict[str, np.ndarray]) -> ColumnSummary:
        """The summary stored as :meth:`arrays`, for these columns and (normalised) keys."""
        return cls(tuple(columns), tuple(normal_key(k) for k in keys), *(np.asarray(arrays[f], dtype=np.float64)
                                                                           for f in FIELDS))

    def rows(self, groups: np.ndarray, column: str, answers: int) -> dict[str, np.ndarray]:
        """The summary of ``column`` over the answer rows: group k goes into answer row ``groups[k]``
        (-1: left out).

        Parameters
        ----------
        groups : numpy.ndarray
            Per group of the summary, its answer row or -1.
        column : str
            A summarised column.
        answers : int
            The answer rows.

        Returns
        -------
        dict of str to numpy.ndarray
            ``count``, ``mean``, ``m2``, ``low``, ``high``: one value per answer row.
        """
        c = self.columns.index(column)
        out = ColumnSummary((column,), (), np.zeros((answers, 1)), np.zeros((answers, 1)), np.zeros((answers, 1)),
                            np.full((answers, 1), np.nan), np.full((answers, 1), np.nan))
        for g in np.flatnonzero(groups >= 0):
            one = ColumnSummary((column,), (), self.count[g:g + 1, c:c + 1], self.mean[g:g + 1, c:c + 1],
                                self.m2[g:g + 1, c:c + 1], self.low[g:g + 1, c:c + 1], self.high[g:g + 1, c:c + 1])
            row = int(groups[g])
            merged = _pair(_row(out, row), one)
            for f in FIELDS:
                getattr(out, f)[row, 0] = getattr(merged, f)[0, 0]
        return {f: getattr(out, f)[:, 0] for f in FIELDS}


def _row(summary: ColumnSummary, row: int) -> ColumnSummary:
    return ColumnSummary(summary.columns, (), *(getattr(summary, f)[row:row + 1].copy() for f in FIELDS))


def _pair(a: ColumnSummary, b: ColumnSummary) -> ColumnSummary:
    """``a + b`` for two one-row summaries of one group."""
    return ColumnSummary(a.columns, ((),), a.count, a.mean, a.m2, a.low, a.high) + \
        ColumnSummary(b.columns, ((),), b.count, b.mean, b.m2, b.low, b.high)
