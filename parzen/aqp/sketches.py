"""Mergeable distinct-count sketches per group and column (Apache DataSketches HLL), for COUNT(DISTINCT col).

A synopsis keeps one HyperLogLog sketch (Flajolet, Fusy, Gandouet, Meunier 2007; the `datasketches`
package's ``hll_sketch``, lg_k = :data:`LG_K`, HLL_4: relative standard error about 1.6 %, exact
for small cardinalities, at most 2^LG_K / 2 bytes serialised) of every modelled numeric column's
values per group of its ``group_by``.  :class:`DistinctSketches` is computed from batches of rows
like :class:`parzen.aqp.column_summary.ColumnSummary` (a dict column -> float64 array, NaN for NULL,
and the group key arrays) and merged with ``+`` (HLL unions), so a distributed build merges its
partitions'.  COUNT(DISTINCT col) of an answer row is the estimate of the union of its groups'
sketches, with the sketch's own bounds at 2 standard deviations as its interval.

DataSketches' Python binding updates one value per call (no numpy bulk update, version 5.2), so
each batch is reduced first to its distinct (group, value) pairs (``np.unique``), and only those
reach ``update``: a column with few distinct values costs next to nothing; one with all values
distinct costs one call per row (docs/aqp.md gives the measured rate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import datasketches
import numpy as np

from .column_summary import ColumnSummary, batch_groups, normal_key

#: log2 of the HLL sketches' registers: relative standard error about 1.04 / sqrt(2^LG_K) (1.6 %).
LG_K = 12


@dataclass(frozen=True)
class DistinctSketches:
    """Per group (``keys``, normalised by :func:`~parzen.aqp.column_summary.normal_key`) and column
    (``columns``), an HLL sketch of the column's distinct non-NULL values (``sketches[g][c]``)."""

    columns: tuple[str, ...]
    keys: tuple[tuple, ...]
    sketches: tuple[tuple[datasketches.hll_sketch, ...], ...]

    @classmethod
    def of_batch(cls, columns: dict[str, np.ndarray], keys: Sequence[np.ndarray] = ()) -> DistinctSketches:
        """The sketches of one batch of rows.

        Parameters
        ----------
        columns : dict of str to numpy.ndarray
            Column -> its values in the batch (float64; NaN for NULL).
        keys : sequence of numpy.ndarray
            The group columns' values in the batch; empty: one group.

        Returns
        -------
        DistinctSketches

        Raises
        ------
        ValueError
            Columns or key arrays of different lengths.
        """
        names = tuple(columns)
        group, group_keys = batch_groups(columns, keys)
        sketches = [[datasketches.hll_sketch(LG_K) for _ in names] for _ in group_keys]
        for c, name in enumerate(names):
            values = np.asarray(columns[name], dtype=np.float64)
            present = ~np.isnan(values)
            value, owner = values[present], group[present]
            if len(group_keys) > 1:  # the rows of each group together (a stable sort of small integers)
                order = np.argsort(owner, kind="stable")
                value, owner = value[order], owner[order]
            bounds = np.searchsorted(owner, np.arange(len(group_keys) + 1))
            for g in range(len(group_keys)):
                update = sketches[g][c].update
                for v in np.unique(value[bounds[g]:bounds[g + 1]]).tolist():  # each distinct value once
                    update(v)
        return cls(names, group_keys, tuple(tuple(row) for row in sketches))

    def __add__(self, other: DistinctSketches) -> DistinctSketches:
        """The sketches of the rows of both (HLL unions, per group and column)."""
        if self.columns != other.columns:
            raise ValueError(f"sketches of different columns cannot merge: {self.columns} and {other.columns}")
        keys = tuple(dict.fromkeys(self.keys + other.keys))
        mine, theirs = dict(zip(self.keys, self.sketches)), dict(zip(other.keys, other.sketches))
        merged = tuple(tuple(_union([row[c] for row in (mine.get(k), theirs.get(k)) if row is not None])
                             for c in range(len(self.columns))) for k in keys)
        return DistinctSketches(self.columns, keys, merged)

    merge = __add__

    def __reduce__(self):
        """Pickled as its serialised sketches (a distributed build ships partitions' sketches between
        processes; DataSketches' objects do not pickle themselves)."""
        return DistinctSketches.from_arrays, (self.columns, self.keys, self.to_arrays())

    def aligned(self, keys: Sequence[tuple]) -> DistinctSketches:
        """The sketches with one row per key of ``keys`` (normalised here), in that order; a key not seen
        gets empty sketches."""
        keys = tuple(normal_key(k) for k in keys)
        where = dict(zip(self.keys, self.sketches))
        empty = tuple(datasketches.hll_sketch(LG_K) for _ in self.columns)
        return DistinctSketches(self.columns, keys, tuple(where.get(k, empty) for k in keys))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The sketches serialised (compact), concatenated in group-major order, and their offsets."""
        blobs = [bytes(s.serialize_compact()) for row in self.sketches for s in row]
        return {"bytes": np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(),
                "offsets": np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64)}

    @classmethod
    def from_arrays(cls, columns: Sequence[str], keys: Sequence[tuple], arrays: dict[str, np.ndarray]) -> DistinctSketches:
        """The sketches stored as :meth:`to_arrays`, for these columns and keys."""
        data, offsets = arrays["bytes"].tobytes(), arrays["offsets"]
        flat = [datasketches.hll_sketch.deserialize(data[offsets[i]:offsets[i + 1]]) for i in range(offsets.size - 1)]
        width = len(columns)
        return cls(tuple(columns), tuple(normal_key(k) for k in keys),
                   tuple(tuple(flat[g * width:(g + 1) * width]) for g in range(len(keys))))

    def distinct(self, groups: np.ndarray, column: str, answers: int, deviations: int = 2) -> np.ndarray:
        """Per answer row: (estimate, lower bound, upper bound) of the distinct values of ``column``
        in its groups (group k goes into answer row ``groups[k]``; -1: left out).

        Parameters
        ----------
        groups : numpy.ndarray
            Per group, its answer row or -1.
        column : str
            A sketched column.
        answers : int
            The answer rows.
        deviations : int
            The bounds' standard deviations (1, 2 or 3).

        Returns
        -------
        numpy.ndarray
            Shape (answers, 3).
        """
        c = self.columns.index(column)
        out = np.zeros((answers, 3))
        for row in range(answers):
            merged = _union([self.sketches[g][c] for g in np.flatnonzero(groups == row)])
            out[row] = (merged.get_estimate(), merged.get_lower_bound(deviations), merged.get_upper_bound(deviations))
        return out


def _union(sketches) -> datasketches.hll_sketch:
    union = datasketches.hll_union(LG_K)
    for s in sketches:
        union.update(s)
    return union.get_result()


def table_statistics(batches) -> tuple[ColumnSummary, DistinctSketches]:
    """The column summary and the distinct-count sketches of ``batches``, in one pass over them.

    Parameters
    ----------
    batches : iterable of (dict of str to numpy.ndarray, sequence of numpy.ndarray)
        Per batch of rows, the columns and the group key arrays.

    Returns
    -------
    (ColumnSummary, DistinctSketches)

    Raises
    ------
    ValueError
        No batch.
    """
    summary: ColumnSummary | None = None
    sketches: DistinctSketches | None = None
    for columns, keys in batches:
        part, sketched = ColumnSummary.of_batch(columns, keys), DistinctSketches.of_batch(columns, keys)
        summary = part if summary is None else summary + part
        sketches = sketched if sketches is None else sketches + sketched
    if summary is None or sketches is None:
        raise ValueError("table statistics need at least one batch of rows")
    return summary, sketches
