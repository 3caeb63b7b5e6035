"""What a synopsis build needs from each part of a partitioned table, as summaries that add.

A table split into parts (the partitions of a dask DataFrame, e.g. the row groups of Parquet
files) is summarised part by part where the part is, and the summaries are added (``+``, by a
tree of tasks: :mod:`parzen.distributed.synopsis`).  Each summary adds exactly, so the build
sees what one pass over the whole table would:

- :class:`TableScan`: rows; per column COUNT, SUM, MIN, MAX, whether every value is an integer,
  the infinite values, the mean and scatter for the standard deviation (Chan, Golub & LeVeque's
  pairwise update, :class:`parzen.binned.source.Moments`) and its distinct values up to a cap
  (the build only asks whether there are at most 64, or few against the sample); per group its
  rows and per-column COUNT and SUM.  Counts, MIN, MAX and the distinct values are exact; sums
  to float64 round-off (they are added in another order than one scan's).
- :class:`SampleDraw`: the sample, by bottom-k (Cohen & Kaplan 2007, "Summarizing data using
  bottom-k sketches", PODC): every row gets a uniform random key from a generator seeded by
  (seed, part), and each stratum keeps the rows of its ``quota`` smallest keys.  The bottom-k of a
  union is the bottom-k of the parts' bottom-k's, so the merged draw is a simple random sample
  without replacement of each stratum, the same for the same seed and partitioning whatever order
  the parts are added in.
- :class:`ColumnCounts`: linear-binning counts for PLUGIN's functionals
  (:mod:`parzen.aqp.bandwidths`), and :class:`parzen.aqp.grid.GridBuckets` for the gridded form.

Values are read as float64 with NULL as NaN (:func:`numeric_values`): pandas' NA, a NaN of a
float column, or Arrow's null; Arrow decimals are cast by Arrow (no Python objects).  Dates and
timestamps (Arrow date32 / date64 / timestamp, pandas datetime64 with or without a time zone) are
read as days since 1970-01-01, as a DuckDB table's are (:mod:`parzen.aqp.dates`): a date's whole
days, a timestamp's microseconds since the epoch (UTC; nanoseconds truncated, as DuckDB's
``epoch_us``) divided by 86 400 000 000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..binned.grid import BinCounts, GridSpec, linear_bin
from ..binned.source import Chunk, Moments
from .build import plain_key
from .column_summary import ColumnSummary
from .grid import ColumnGrid, GridBuckets
from .sketches import DistinctSketches

#: Column type names (DuckDB's spelling) given to a DataFrame's dtypes (:func:`frame_types`).
INTEGER, FLOATING, DECIMAL, BOOLEAN, OTHER = "BIGINT", "DOUBLE", "DECIMAL", "BOOLEAN", "VARCHAR"
DATE_TYPE, TIMESTAMP, TIMESTAMP_TZ = "DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"
#: Microseconds per day: a timestamp's days since 1970-01-01 are its epoch microseconds over this.
MICROSECONDS_PER_DAY = 86_400_000_000


def frame_types(dtypes: pd.Series) -> dict[str, str]:
    """Column name -> a DuckDB type name for each of a DataFrame's ``dtypes``: BIGINT for integers,
    DOUBLE for floats, DECIMAL for Arrow decimals, BOOLEAN, DATE for Arrow dates, TIMESTAMP for Arrow
    timestamps and pandas datetime64 (TIMESTAMP WITH TIME ZONE with a time zone), and VARCHAR for
    anything else (strings, categories: group columns, never modelled).

    Parameters
    ----------
    dtypes : pandas.Series
        ``frame.dtypes`` of a pandas or dask DataFrame.

    Returns
    -------
    dict
        Column name (as str) -> type name.
    """
    types = {}
    for name, dtype in dtypes.items():
        arrow = getattr(dtype, "pyarrow_dtype", None)
        types[str(name)] = _arrow_kind(arrow) if arrow is not None else _numpy_kind(dtype)
    return types


def _numpy_kind(dtype) -> str:
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return TIMESTAMP_TZ if isinstance(dtype, pd.DatetimeTZDtype) else TIMESTAMP
    if pd.api.types.is_bool_dtype(dtype):
        return BOOLEAN
    if pd.api.types.is_integer_dtype(dtype):
        return INTEGER
    return FLOATING if pd.api.types.is_float_dtype(dtype) else OTHER


def _arrow_kind(arrow_type) -> str:
    """The kind of an Arrow type, by pyarrow's own predicates (pandas' fail on some, e.g. string_view)."""
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return BOOLEAN
    if pa.types.is_integer(arrow_type):
        return INTEGER
    if pa.types.is_floating(arrow_type):
        return FLOATING
    if pa.types.is_date(arrow_type):
        return DATE_TYPE
    if pa.types.is_timestamp(arrow_type):
        return TIMESTAMP_TZ if arrow_type.tz is not None else TIMESTAMP
    return DECIMAL if pa.types.is_decimal(arrow_type) else OTHER


def numeric_values(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The values of ``frame[column]`` as a float64 array, NULL (NA, NaN, Arrow null) as NaN.

    Parameters
    ----------
    frame : pandas.DataFrame
        One part of the table.
    column : str
        A numeric column (integer, float or Arrow decimal), or a date or timestamp column (read as
        days since 1970-01-01: the module's notes).

    Returns
    -------
    numpy.ndarray
    """
    series = frame[column]
    if isinstance(series.dtype, pd.ArrowDtype):
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pa.chunked_array(pa.array(series.array))
        if pa.types.is_date(array.type):
            array = pc.cast(pc.cast(array, pa.date32()), pa.int32())  # whole days since 1970-01-01
        elif pa.types.is_timestamp(array.type):  # the UTC instant's microseconds, truncated as DuckDB's epoch_us
            micros = pc.cast(pc.cast(array, pa.timestamp("us", array.type.tz), safe=False), pa.int64())
            return np.asarray(pc.cast(micros, pa.float64()).to_numpy(), dtype=np.float64) / MICROSECONDS_PER_DAY
        array = pc.cast(array, pa.float64())
        return np.asarray(array.to_numpy(), dtype=np.float64)  # nulls become NaN
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        instants = series.dt.tz_convert("UTC").dt.tz_localize(None) if series.dt.tz is not None else series
        micros = instants.to_numpy(dtype="datetime64[us]").astype(np.int64).astype(np.float64)
        micros[instants.isna().to_numpy()] = np.nan
        return micros / MICROSECONDS_PER_DAY
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def group_rows(frame: pd.DataFrame, group_by: tuple[str, ...]) -> dict[tuple, np.ndarray]:
    """Key (values of the group columns, NULL as None: :func:`plain_key`) -> positions of its rows;
    one key ``()`` holding every row when ``group_by`` is empty."""
    if not group_by:
        return {(): np.arange(len(frame))}
    grouped = frame.groupby(list(group_by), dropna=False, sort=False, observed=True).indices
    return {plain_key(key if isinstance(key, tuple) else (key,)): np.asarray(rows) for key, rows in grouped.items()}


@dataclass(frozen=True)
class ColumnScan:
    """One column of a part: its moments (rows, MIN, MAX, mean, scatter), SUM, whether every value
    is an integer, its infinite values and its distinct values (sorted; None: more than the cap)."""

    moments: Moments
    total: float
    integral: bool
    infinite: int
    distinct: np.ndarray | None
    cap: int

    @classmethod
    def of(cls, values: np.ndarray, cap: int) -> ColumnScan:
        """The scan of one part's ``values`` (float64, NaN = NULL), keeping up to ``cap`` distinct values."""
        present = values[~np.isnan(values)]
        infinite = int(np.count_nonzero(np.isinf(present)))
        finite = present[np.isfinite(present)] if infinite else present
        moments = Moments.of(Chunk(finite[:, None], None, int(values.size - present.size)))
        return cls(moments, float(finite.sum()), bool(np.all(finite == np.round(finite))), infinite,
                   _distinct(finite, cap), cap)

    def __add__(self, other: ColumnScan) -> ColumnScan:
        distinct = None
        if self.distinct is not None and other.distinct is not None:
            union = np.union1d(self.distinct, other.distinct)
            distinct = union if union.size <= self.cap else None
        return ColumnScan(self.moments + other.moments, self.total + other.total, self.integral and other.integral,
                          self.infinite + other.infinite, distinct, self.cap)

    def statistics(self) -> tuple:
        """(MIN, MAX, distinct values, all-integer, sample standard deviation), as the build's scan of
        a database table gives them (:func:`parzen.aqp.build.assemble_synopsis`); MIN and MAX None
        for a column of NULLs only, distinct values ``cap + 1`` when there are more than the cap."""
        m = self.moments
        if m.rows == 0:
            return None, None, 0, True, 0.0
        distinct = self.cap + 1 if self.distinct is None else int(self.distinct.size)
        sd = float(np.sqrt(m.scatter[0, 0] / (m.weight - 1.0))) if m.rows > 1 else 0.0
        return float(m.lows[0]), float(m.highs[0]), distinct, self.integral, sd


def _distinct(values: np.ndarray, cap: int) -> np.ndarray | None:
    """The sorted distinct ``values``, or None when there are more than ``cap`` (a prefix of the
    values is looked at first, so columns of many values cost little)."""
    head = pd.unique(values[: 8 * (cap + 1)])
    if head.size > cap:
        return None
    distinct = pd.unique(values) if values.size > 8 * (cap + 1) else head
    return np.sort(distinct) if distinct.size <= cap else None


@dataclass(frozen=True)
class GroupScan:
    """One group (stratum) of a part: its rows and per column (COUNT, SUM)."""

    rows: int
    totals: dict[str, tuple[int, float]]

    def __add__(self, other: GroupScan) -> GroupScan:
        return GroupScan(self.rows + other.rows, {c: (n + other.totals[c][0], s + other.totals[c][1])
                                                  for c, (n, s) in self.totals.items()})


@dataclass(frozen=True)
class TableScan:
    """The scan of a part (or, added, of the table): rows, :class:`ColumnScan` per column,
    :class:`GroupScan` per group key, and the column summaries and distinct-count sketches per
    group (:class:`parzen.aqp.column_summary.ColumnSummary`,
    :class:`parzen.aqp.sketches.DistinctSketches`: VAR, MIN/MAX, COUNT(DISTINCT))."""

    rows: int
    columns: dict[str, ColumnScan]
    groups: dict[tuple, GroupScan]
    summary: ColumnSummary
    sketches: DistinctSketches

    @classmethod
    def of(cls, frame: pd.DataFrame, numeric: list[str], group_by: tuple[str, ...], cap: int) -> TableScan:
        """The scan of one part.

        Parameters
        ----------
        frame : pandas.DataFrame
            The part's rows (at least the ``numeric`` and ``group_by`` columns).
        numeric : list of str
            The modelled columns.
        group_by : tuple of str
            The group columns (empty: no groups).
        cap : int
            Distinct values kept per column (:class:`ColumnScan`).

        Returns
        -------
        TableScan
        """
        values = {c: numeric_values(frame, c) for c in numeric}
        columns = {c: ColumnScan.of(v, cap) for c, v in values.items()}
        groups = {}
        if group_by:
            for key, rows in group_rows(frame, group_by).items():
                totals = {}
                for c, v in values.items():
                    part = v[rows]
                    present = part[~np.isnan(part)]
                    totals[c] = (int(present.size), float(present.sum()))
                groups[key] = GroupScan(int(rows.size), totals)
        keys = [frame[g].to_numpy(dtype=object, na_value=None) for g in group_by]
        return cls(len(frame), columns, groups, ColumnSummary.of_batch(values, keys),
                   DistinctSketches.of_batch(values, keys))

    def __add__(self, other: TableScan) -> TableScan:
        groups = dict(self.groups)
        for key, g in other.groups.items():
            groups[key] = groups[key] + g if key in groups else g
        return TableScan(self.rows + other.rows, {c: s + other.columns[c] for c, s in self.columns.items()}, groups,
                         self.summary + other.summary, self.sketches + other.sketches)


@dataclass(frozen=True)
class SampleDraw:
    """Per stratum key, the rows of the smallest random keys drawn so far (at most its quota).

    Parameters
    ----------
    quotas : dict
        Stratum key -> rows to keep.
    keys : dict
        Stratum key -> (k,) the kept rows' random keys in [0, 1).
    values : dict
        Stratum key -> (k, columns) the kept rows' values (NaN = NULL).
    """

    quotas: dict[tuple, int]
    keys: dict[tuple, np.ndarray]
    values: dict[tuple, np.ndarray]

    @classmethod
    def of(cls, frame: pd.DataFrame, part: int, numeric: list[str], group_by: tuple[str, ...],
           quotas: dict[tuple, int], seed: int) -> SampleDraw:
        """The bottom-``quota`` rows of each stratum of one part, the keys uniform from a generator
        seeded by (``seed``, ``part``)."""
        random = np.random.default_rng([seed % (1 << 63), part]).random(len(frame))
        kept = {key: rows[_smallest(random[rows], quotas[key])] for key, rows in group_rows(frame, group_by).items()}
        columns = [numeric_values(frame, c) for c in numeric]
        keys = {key: random[rows] for key, rows in kept.items()}
        values = {key: np.stack([v[rows] for v in columns], axis=1).reshape(rows.size, len(numeric))
                  for key, rows in kept.items()}
        return cls(quotas, keys, values)

    def __add__(self, other: SampleDraw) -> SampleDraw:
        keys, values = dict(self.keys), dict(self.values)
        for key, k in other.keys.items():
            if key in keys:
                merged_keys = np.concatenate([keys[key], k])
                merged_values = np.concatenate([values[key], other.values[key]])
                kept = _smallest(merged_keys, self.quotas[key])
                keys[key], values[key] = merged_keys[kept], merged_values[kept]
            else:
                keys[key], values[key] = k, other.values[key]
        return SampleDraw(self.quotas, keys, values)

    def in_key_order(self, key: tuple) -> np.ndarray:
        """The stratum's drawn rows (k, columns), ordered by their random keys."""
        return self.values[key][np.argsort(self.keys[key], kind="stable")] if key in self.keys else \
            np.zeros((0, 0))


def integer_keys(keys: np.ndarray) -> np.ndarray:
    """Random keys in [0, 1) (multiples of 2^-53, as NumPy draws them) as the integers key 2^53, exactly
    and in the same order: a synopsis keeps its sample's keys as uint64 (:mod:`parzen.aqp.appends`)."""
    return np.ldexp(keys, 53).astype(np.uint64)


def group_sort_key(key: tuple) -> tuple:
    """A sort key that orders group keys as DuckDB's ORDER BY does: per value, numbers by value and text
    by code points, NULL (None) last."""
    return tuple((v is None, "" if v is None else (0, v) if isinstance(v, (int, float)) else (1, str(v))) for v in key)


def _smallest(keys: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest ``keys`` (all of them when there are at most k)."""
    if keys.size <= k:
        return np.arange(keys.size)
    return np.argpartition(keys, k - 1)[:k]


@dataclass(frozen=True)
class ColumnCounts:
    """Column -> linear-binning counts on its own 1-D grid; adds column by column."""

    counts: dict[str, BinCounts]

    @classmethod
    def of(cls, frame: pd.DataFrame, specs: dict[str, GridSpec]) -> ColumnCounts:
        """The non-NULL values of each column of one part, linearly binned on ``specs[column]``."""
        counts = {}
        for column, spec in specs.items():
            values = numeric_values(frame, column)
            counts[column] = linear_bin(values[~np.isnan(values)], spec)
        return cls(counts)

    def __add__(self, other: ColumnCounts) -> ColumnCounts:
        return ColumnCounts({c: b + other.counts[c] for c, b in self.counts.items()})


@dataclass(frozen=True)
class DrawAndCounts:
    """A part's :class:`SampleDraw` and :class:`ColumnCounts` from one read of the part (the
    synopsis build's second pass: the sample and PLUGIN's first binning together)."""

    draw: SampleDraw
    counts: ColumnCounts

    @classmethod
    def of(cls, frame: pd.DataFrame, part: int, numeric: list[str], group_by: tuple[str, ...],
           quotas: dict[tuple, int], seed: int, specs: dict[str, GridSpec]) -> DrawAndCounts:
        """See :meth:`SampleDraw.of` and :meth:`ColumnCounts.of`."""
        return cls(SampleDraw.of(frame, part, numeric, group_by, quotas, seed), ColumnCounts.of(frame, specs))

    def __add__(self, other: DrawAndCounts) -> DrawAndCounts:
        return DrawAndCounts(self.draw + other.draw, self.counts + other.counts)


def part_buckets(frame: pd.DataFrame, grids: dict[str, ColumnGrid]) -> GridBuckets:
    """The :class:`parzen.aqp.grid.GridBuckets` of one part's rows."""
    return GridBuckets.of(grids, {c: numeric_values(frame, c) for c in grids})
