"""Refreshing a synopsis after rows were appended, in time proportional to the new rows (issue 19, item 4).

:meth:`parzen.aqp.Engine.refresh` first asks :func:`parzen.aqp.changes.table_changes` (one aggregate
query over a DuckDB table) or :func:`parquet_changes` (the files' list and stamps) what changed since the synopsis read
its table.  When the rows it read are all still there, unchanged, and rows were added after them,
only the new rows are read (:func:`appended_rows`) and summarised with the mergeable summaries of
the partitioned build (:mod:`parzen.aqp.partitions`), and :func:`merged` adds them to the synopsis:

- exact parts add: the row count, COUNT and SUM per column and per group (new groups join), MIN and
  MAX, the column summaries (Chan, Golub and LeVeque's update) and the HLL sketches (unions), the
  content fingerprint (a sum over rows), and the grids' C(t), S(t) (the new rows' counts and sums per
  bucket between the points, :class:`parzen.aqp.grid.GridBuckets`);
- the exact aggregate tables add (:func:`parzen.aqp.cubes.merged_cube`): the new rows grouped by each
  table's columns in one GROUPING SETS pass over them, their rows, sums and counts added into the
  cells (new cells, and new values' codes, as a build makes them), and the dependencies a -> b that
  the tables roll up along checked against the new rows' pairs (one that breaks is dropped); a numeric
  dimension (:mod:`parzen.aqp.cube_dimensions`: a date, its months, an integer or decimal of few values)
  takes the new rows' values, its old codes shifted to their merged positions, and rebuilds when it
  would pass its limit (:func:`parzen.aqp.cube_dimensions.with_appended`);
- a grid keeps its points.  New values beyond its first or last point get more points there, at the
  grid's mean spacing of its uniform half (integer columns: a whole number of units, so ranges still
  end on points; discrete columns: a step at each new value), up to :data:`MAX_GRID_GROWTH` of its
  points; C and S at those points are exact, because the rows read before all lie within the old points;
- the sample merges by bottom-k (Cohen & Kaplan 2007, PODC): each sampled row keeps its random key
  (hash(rowid, seed) for a DuckDB table, a uniform draw for Parquet rows), a stratum holds the rows of
  its smallest keys, so every row of the stratum with a key up to the largest kept one is in it; the
  new rows with such keys join, and the stratum keeps the rows of the smallest keys up to its quota,
  recomputed from the new row counts as the build computes it (proportional, at least
  min(rows, 1000)).  The result is the bottom-q of the whole stratum, a simple random sample of it
  without replacement, and, for the same rowids and quota, the rows a rebuild would draw.  A stratum
  whose quota grew by more than the new rows below its largest key supplied keeps all of them: fewer
  rows than a rebuild would draw, still a simple random sample of the stratum (its weight,
  rows / drawn, follows);
- bandwidths are kept, rescaled to the merged sample's size by n^(-1/3) (PLUGIN's h for n values,
  times the integral factor, goes as n^(-1/3): :func:`parzen.aqp.build.integral_factor`).  PLUGIN's
  density functionals are not estimated again: appended rows move Psi_4 by about their share of the
  rows, and h by a fifth of that (h ~ Psi_4^(-1/5)); so after :data:`MAX_APPENDED` of the rows of the
  last full build have been appended, refresh rebuilds instead;
- the kernel density c(t) at the grid points (the slopes of the interpolation between exact C(t)) is
  updated by the kernels of the rows that left the sample and of those that joined
  (:func:`_updated_density`); the regressions are fitted again on the merged sample.

A join synopsis (:mod:`parzen.aqp.joins`: the fact table's rows carry their dimensions' columns)
refreshes the same way when only its fact table got rows: the new rows are read from the join view
(the fact table's rowids, so the same keys hash(rowid, seed)), each with its dimensions' columns, and
merged as above (the categorical tables of dimension columns and keys too); their NULL foreign keys
are added to the edges' counts.  Rows appended to a dimension (new keys, its old rows unchanged) leave
the view's old rows as they were, and enter it only through fact rows appended with them: the
dimension's row count and fingerprint are brought up to date (:mod:`parzen.aqp.dimension_appends`).
It rebuilds when a dimension's old rows were deleted or updated, when a new key repeats one, or
when a dimension whose key is categorical grows past its limit (row count and content fingerprint
of each dimension's key and carried columns, below and beyond its rowid end at build; with the
dimensions unchanged or grown, the old fact rows are checked on the fact table alone,
:func:`parzen.aqp.changes.fact_changes`, not through the join), when an appended row's foreign key
matches no dimension row, or when NULL keys come into a dimension too large for a categorical key (a build
refuses both, and the rebuild says so).

A refresh rebuilds (and says why: :class:`Refresh`) when rows the synopsis read were deleted or
updated, when a column that held only integers gets fractions, a reflected column (non-negative at
build) a negative value, a column NULL at build its first values, or a grid would need more than
:data:`MAX_GRID_GROWTH` more points.  What :func:`parzen.aqp.changes.table_changes` detects, and what
it cannot, is in docs/aqp.md, "Appends and refresh".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from . import cube_dimensions, cubes, joins, parquet_tables
from .build import DISCRETE_MAX_VALUES, MIN_GROUP_SAMPLE, quote, refuse_non_finite
from .categories import CATEGORY_LIMIT, Categories, ExactTable, grouping_sets, plain_value, sample_codes, value_order
from .changes import FactChanges, TableChanges, fact_changes, table_changes
from .column_summary import normal_key
from .cubes import AppendedCells
from .dates import as_double
from .dimension_appends import grown_dimensions
from .estimate import _REACH, DISCRETE, ColumnModel
from .grid import ColumnGrid, GridBuckets, kernel_cumulative
from .partitions import TableScan, group_rows, group_sort_key, integer_keys, numeric_values
from .regression import fit_regression
from .synopsis import Group, Synopsis

#: An incremental refresh may bring the rows appended since the last full build up to this share of
#: that build's rows; beyond, refresh rebuilds (and selects the bandwidths again).
MAX_APPENDED = 0.25
#: Points a refresh may add to a column's grid for values beyond it, as a share of its points.
MAX_GRID_GROWTH = 0.25
#: Rows read at a time from the appended rows.
BATCH_ROWS = 1 << 20
#: The key above every other: a stratum whose every row is sampled takes every new row as a candidate.
ALL_ROWS = np.iinfo(np.uint64).max


@dataclass(frozen=True)
class Refresh:
    """What :meth:`parzen.aqp.Engine.refresh` found: the merged synopsis, or None and why it must be rebuilt.

    Parameters
    ----------
    synopsis : Synopsis or None
        The synopsis with the appended rows added (the same object when nothing changed), or None.
    why : str
        Why an incremental refresh is not possible ("" when it was).
    """

    synopsis: Synopsis | None
    why: str = ""


def database_batches(con, synopsis: Synopsis, changes: TableChanges,
                     relation: str | None = None) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """The appended rows of a DuckDB table (rowids from the synopsis's ``rowid_end`` to the end
    :func:`table_changes` found), a batch at a time: the modelled columns as DOUBLE, the group
    columns, and each row's key hash(rowid, seed) (the key the build sampled by).  ``relation``: a
    join synopsis's view (:func:`parzen.aqp.joins.ensure_view`), whose ``rowid`` is the fact table's,
    so the new fact rows come joined with their dimensions' rows."""
    numeric = list(synopsis.models)
    cols = [*(f"{as_double(quote(c), synopsis.temporal.get(c))} AS {quote(c)}" for c in numeric),
            *map(quote, synopsis.group_by),
            *(f"{quote(c)} AS {quote(LABEL + c)}" for c in _categorical(synopsis)),
            f"hash(rowid, {int(synopsis.seed)}) AS __key"]
    result = con.sql(f"SELECT {', '.join(cols)} FROM {quote(relation or synopsis.table)} "
                     f"WHERE rowid >= {int(synopsis.rowid_end)} AND rowid < {int(changes.rowid_end)}")
    reader = result.to_arrow_reader(BATCH_ROWS) if hasattr(result, "to_arrow_reader") else \
        result.fetch_arrow_reader(BATCH_ROWS)
    for batch in reader:
        frame = batch.to_pandas()
        yield frame, frame.pop("__key").to_numpy(dtype=np.uint64)


@contextmanager
def appended_view(con, synopsis: Synopsis, changes: TableChanges, relation: str | None = None) -> Iterator[str]:
    """A temporary view of the appended rows alone (rowids from the synopsis's ``rowid_end`` to the
    end now) of its table, or of ``relation`` (a join synopsis's view), dropped on leaving."""
    view = "parzen_appended_" + synopsis.table
    con.execute(f"CREATE OR REPLACE TEMP VIEW {quote(view)} AS SELECT * FROM {quote(relation or synopsis.table)} "
                f"WHERE rowid >= {int(synopsis.rowid_end)} AND rowid < {int(changes.rowid_end)}")
    try:
        yield view
    finally:
        con.execute(f"DROP VIEW IF EXISTS {quote(view)}")


def appended_combinations(con, synopsis: Synopsis, view: str) -> dict[tuple, Counter]:
    """Per exact table of the synopsis's categorical columns, the appended rows (``view``,
    :func:`appended_view`) per combination of their values: one GROUPING SETS pass
    (:func:`parzen.aqp.categories.grouping_sets`)."""
    if synopsis.categories is None:
        return {}
    sets = [t.columns for t in synopsis.categories.tables]
    found = grouping_sets(con, view, list(synopsis.categories.values), sets)
    return {columns: Counter(dict(found[columns])) for columns in sets}


def refresh(con, synopsis: Synopsis) -> Refresh:
    """``synopsis`` brought up to date with the rows appended to its table (or the Parquet files added
    to its source) since it read them, reading only those; or why it must be rebuilt.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The database of its table (unused for a synopsis of Parquet files).
    synopsis : Synopsis
        The stored synopsis (left unchanged).

    Returns
    -------
    Refresh
        The merged synopsis (``synopsis`` itself when nothing changed), or None and why not.

    Raises
    ------
    ValueError
        The new rows of a floating-point column hold inf, -inf or NaN.
    duckdb.CatalogException, duckdb.BinderException
        The table, or a column the synopsis covers, is gone.
    """
    if synopsis.sample_keys is None:
        return Refresh(None, "the synopsis keeps no sample keys (built from a dask DataFrame)")

    if synopsis.source:
        added, now, why = parquet_changes(synopsis)
        if why or not added:
            return Refresh(None if why else synopsis, why)
        appended = AppendedRows.read(synopsis, parquet_batches(synopsis, added))
        if synopsis.categories is not None:  # its tables (cube= at build): the added rows added in
            why = parquet_tables.appended_tables(synopsis, added, appended)
            if why:
                return Refresh(None, why)
        out = merged(synopsis, appended)
        if out.synopsis is None:
            return out
        merged_synopsis = replace(out.synopsis, source=now)  # a copy even when the files added no rows
        return Refresh(merged_synopsis)
    relation = joins.ensure_view(con, synopsis.table, synopsis.joins) if synopsis.joins else None
    if relation is not None and synopsis.fact_fingerprint:  # the old fact rows alone, not joined
        changes: TableChanges = fact_changes(con, synopsis, relation)
    else:
        changes = table_changes(con, synopsis, relation)
    if not changes.appended_only(synopsis):
        return Refresh(None, changes.why(synopsis))
    if synopsis.joins:
        growth = grown_dimensions(con, synopsis)
        if growth.why:
            return Refresh(None, growth.why)
        if growth.grown:  # only new dimension rows: the view's old rows are unchanged (dimension_appends)
            synopsis = replace(synopsis, joins=growth.edges, dimension_rows=growth.rows)
    if not changes.new_rows:
        return Refresh(synopsis)
    edges = synopsis.joins
    if synopsis.joins:
        edges, why = joins.appended_edges(con, synopsis, changes.rowid_end)
        if why:
            return Refresh(None, why)
    refuse_non_finite(synopsis.table, changes.non_finite)
    appended = AppendedRows.read(synopsis, database_batches(con, synopsis, changes, relation))
    with appended_view(con, synopsis, changes, relation) as view:
        appended.combinations = appended_combinations(con, synopsis, view)
        if synopsis.cube is not None and synopsis.categories is not None:
            values = _merged_values(synopsis.categories, appended.combinations)
            if isinstance(values, str):
                return Refresh(None, values)
            dimensions = cube_dimensions.with_appended(con, view, synopsis.cube.dimensions)
            if isinstance(dimensions, str):
                return Refresh(None, dimensions)
            appended.cells = cubes.appended_cells(con, view, synopsis.cube, values, dimensions)
    out = merged(synopsis, appended)
    if out.synopsis is not None:
        out.synopsis.fingerprint = synopsis.fingerprint + changes.new_fingerprint
        out.synopsis.rowid_end = changes.rowid_end
        out.synopsis.joins = edges
        if isinstance(changes, FactChanges):
            out.synopsis.fact_fingerprint = synopsis.fact_fingerprint + changes.new_fact_fingerprint
    return out


def parquet_changes(synopsis: Synopsis) -> tuple[list[str], dict, str]:
    """The Parquet files added since ``synopsis`` was built from its files, or why it must be rebuilt
    (files removed or changed: size or modification time).

    Parameters
    ----------
    synopsis : Synopsis
        A synopsis built from Parquet files (``source["pattern"]``).

    Returns
    -------
    added : list of str
        The added files (empty: none, or a rebuild is needed).
    now : dict
        The source as it is now (:func:`parzen.distributed.synopsis.parquet_source`), or {}.
    why : str
        "" or why an incremental refresh is not possible.
    """
    from ..distributed.synopsis import parquet_source, source_now

    _, why = source_now(synopsis.source)
    if not why.startswith("files changed"):
        return [], {}, why
    now = parquet_source(synopsis.source["pattern"])
    before = dict(zip(synopsis.source["files"], map(list, synopsis.source["stamps"])))
    stamps = dict(zip(now["files"], now["stamps"]))
    removed = [f for f in before if f not in stamps]
    if removed:
        return [], {}, f"files removed: {removed[0]}" + (f" and {len(removed) - 1} more" if len(removed) > 1 else "")
    changed = [f for f, stamp in before.items() if stamps[f] != stamp]
    if changed:
        return [], {}, f"file changed: {changed[0]}"
    return [f for f in now["files"] if f not in before], now, ""


def parquet_batches(synopsis: Synopsis, files: list[str]) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """The rows of the added Parquet ``files``, a batch at a time, with Arrow types (as the partitioned
    build reads them), and uniform random keys as uint64 (:func:`parzen.aqp.partitions.integer_keys`)
    from a generator seeded by (seed, the synopsis's rows, the file's position): a stream apart from
    every partition's of the build, seeded by (seed, part), and from earlier refreshes'.  The
    categorical columns (:mod:`parzen.aqp.parquet_tables`) come again as labels, as
    :func:`database_batches` reads them."""
    import pyarrow.parquet as pq

    columns = [*synopsis.models, *synopsis.group_by]
    for k, path in enumerate(files):
        random = np.random.default_rng([synopsis.seed % (1 << 63), synopsis.row_count, k])
        for batch in pq.ParquetFile(path).iter_batches(BATCH_ROWS, columns=columns):
            frame = batch.to_pandas(types_mapper=pd.ArrowDtype)
            for c in _categorical(synopsis):  # group_by columns (parzen.aqp.parquet_tables), read once
                frame[LABEL + c] = frame[c]
            yield frame, integer_keys(random.random(len(frame)))


#: Prefix of the appended rows' categorical columns as read (as stored, beside a numeric column's DOUBLE).
LABEL = "parzen_label_"


@dataclass
class _Candidates:
    """One stratum's new rows that may enter the sample: their keys, values (rows, columns) and group key."""

    key: tuple
    keys: np.ndarray
    values: np.ndarray
    labels: np.ndarray  # (rows, categorical columns) object: their categorical values

    def add(self, keys: np.ndarray, values: np.ndarray, labels: np.ndarray, cap: int) -> None:
        """Add rows, keeping those of the ``cap`` smallest keys (no quota exceeds ``cap``)."""
        self.keys, self.values = np.concatenate([self.keys, keys]), np.concatenate([self.values, values])
        self.labels = np.concatenate([self.labels, labels])
        if self.keys.size > cap:
            kept = np.argpartition(self.keys, cap - 1)[:cap]
            self.keys, self.values, self.labels = self.keys[kept], self.values[kept], self.labels[kept]


@dataclass
class AppendedRows:
    """The summaries of the appended rows, added batch by batch (:meth:`add`).

    Parameters
    ----------
    scan : TableScan or None
        Rows, per-column and per-group totals, MIN / MAX, the column summaries and sketches.
    candidates : dict
        Normalised group key -> the new rows that may enter its stratum's sample.
    buckets : GridBuckets or None
        The new rows' counts and sums between the synopsis's grid points.
    outside : dict
        Gridded column -> the new values below its first point or above its last.
    combinations : dict or None
        Per exact table of the synopsis's categorical columns (its columns), the new rows per
        combination of their values (:func:`appended_combinations`); None: not read.
    cells : AppendedCells or None
        The new rows' cells of the synopsis's exact aggregate tables (:func:`parzen.aqp.cubes.appended_cells`).
    """

    scan: TableScan | None
    candidates: dict[tuple, _Candidates]
    buckets: GridBuckets | None
    outside: dict[str, list[np.ndarray]]
    combinations: dict[tuple, Counter] | None = None
    cells: AppendedCells | None = None

    @classmethod
    def read(cls, synopsis: Synopsis, batches) -> AppendedRows:
        """The summaries of every row of ``batches`` (pairs of a DataFrame and the rows' uint64 keys)."""
        appended = cls(None, {}, GridBuckets.empty(synopsis.grids) if synopsis.grids else None,
                       {c: [] for c in synopsis.grids})
        thresholds = stratum_thresholds(synopsis)
        cap = max(synopsis.requested_sample, MIN_GROUP_SAMPLE) if synopsis.group_by else synopsis.requested_sample
        for frame, keys in batches:
            appended.add(synopsis, frame, keys, thresholds, cap)
        return appended

    def add(self, synopsis: Synopsis, frame: pd.DataFrame, keys: np.ndarray, thresholds: dict[tuple, int],
            cap: int) -> None:
        """Add one batch of appended rows (``keys``: their random keys)."""
        numeric, categorical = list(synopsis.models), _categorical(synopsis)
        scan = TableScan.of(frame, numeric, synopsis.group_by, DISCRETE_MAX_VALUES)
        self.scan = scan if self.scan is None else self.scan + scan
        values = {c: numeric_values(frame, c) for c in numeric}
        table = np.stack([values[c] for c in numeric], axis=1)
        label_columns = [frame[LABEL + c].to_numpy(dtype=object) for c in categorical]
        for key, rows in group_rows(frame, synopsis.group_by).items():
            normal = normal_key(key)
            chosen = rows[keys[rows] <= thresholds.get(normal, ALL_ROWS)]
            labels = np.empty((chosen.size, len(categorical)), dtype=object)  # only the rows that may be sampled
            for k, column in enumerate(label_columns):
                labels[:, k] = [plain_value(v) for v in column[chosen]]
            found = self.candidates.setdefault(normal, _Candidates(key, np.zeros(0, np.uint64),
                                                                   np.zeros((0, len(numeric))),
                                                                   np.empty((0, len(categorical)), dtype=object)))
            found.add(keys[chosen], table[chosen], labels, cap)
        if self.buckets is not None:
            self.buckets.add(synopsis.grids, values)
            for c, grid in synopsis.grids.items():
                v = values[c]
                self.outside[c].append(v[(v < grid.points[0]) | (v > grid.points[-1])])


def stratum_thresholds(synopsis: Synopsis) -> dict[tuple, int]:
    """Per stratum (normalised key), the largest key among its sampled rows, below which every row of
    the stratum is sampled; :data:`ALL_ROWS` for a stratum sampled whole."""
    keys = synopsis.sample_keys
    if keys is None:
        raise ValueError("the synopsis keeps no sample keys")
    out = {}
    for key, start, stop, rows in _strata(synopsis):
        out[normal_key(key)] = ALL_ROWS if stop - start >= rows else int(keys[start:stop].max())
    return out


def _strata(synopsis: Synopsis) -> list[tuple[tuple, int, int, int]]:
    """(key, start, stop, rows) per stratum; one, ``()``, for an ungrouped synopsis."""
    if not synopsis.groups:
        return [((), 0, synopsis.sample_size, synopsis.row_count)]
    return [(g.key, g.start, g.stop, g.rows) for g in synopsis.groups]


def merged(synopsis: Synopsis, appended: AppendedRows) -> Refresh:
    """``synopsis`` with the ``appended`` rows added (module docstring), or why it must be rebuilt.

    Parameters
    ----------
    synopsis : Synopsis
        The stored synopsis (left unchanged).
    appended : AppendedRows
        The summaries of the rows appended since it read its table (at least one row).

    Returns
    -------
    Refresh
        The new synopsis (its fingerprint, rowid end and source for the caller to set), or why not.

    Raises
    ------
    ValueError
        A floating-point column of the new rows holds inf or -inf (as a build refuses it).
    """
    scan = appended.scan
    if scan is None or scan.rows == 0:
        return Refresh(synopsis)
    refuse_non_finite(synopsis.table, {c: s.infinite for c, s in scan.columns.items()})
    base = synopsis.full_build_rows or synopsis.row_count
    rows = synopsis.row_count + scan.rows
    if rows - base > MAX_APPENDED * base:
        return Refresh(None, f"{rows - base} rows appended since the last full build of {base} rows, more than "
                             f"{MAX_APPENDED:.0%}: its bandwidths are selected again")
    why = _model_changes(synopsis, scan) or _unread_tables(synopsis, appended)
    if why:
        return Refresh(None, why)
    groups, sample, keys, origin, labels = _merged_sample(synopsis, appended, rows)
    categories: Categories | None = None
    if synopsis.categories is not None:
        found = _merged_categories(synopsis.categories, appended.combinations or {}, labels, origin)
        if isinstance(found, str):
            return Refresh(None, found)
        categories = found
    models = _merged_models(synopsis, scan, sample)
    totals = {c: (n + scan.columns[c].moments.rows, s + scan.columns[c].total) for c, (n, s) in synopsis.totals.items()}
    cube = None
    if synopsis.cube is not None and synopsis.categories is not None and categories is not None \
            and appended.cells is not None:  # always, past _unread_tables: the tables are never dropped
        nullable = [m for m in synopsis.cube.measures if totals[m][0] < rows]
        cube = cubes.merged_cube(synopsis.cube, synopsis.categories.values, categories.values, appended.cells, nullable)
    out = replace(synopsis, row_count=rows, models=models, sample=sample, sample_keys=keys, groups=groups,
                  totals=totals, full_build_rows=base, built_at=datetime.now(UTC).isoformat(timespec="seconds"),
                  regressions={}, categories=categories, cube=cube)
    if synopsis.grids:
        _, weights, scale = out.strata()
        _, old_weights, old_scale = synopsis.strata()
        kept = origin >= 0
        stays = np.zeros(synopsis.sample_size, dtype=bool)
        stays[origin[kept]] = True
        removed = np.flatnonzero(~stays)
        rho = float(weights[kept].sum() / old_weights[origin[kept]].sum()) if kept.any() else 1.0
        grids = {}
        for c, grid in synopsis.grids.items():
            outside = np.concatenate(appended.outside[c]) if appended.outside[c] else np.zeros(0)
            assert appended.buckets is not None  # grids: read() made buckets
            extended = _extended_grid(grid, appended.buckets, c, outside, models[c], synopsis.grid_points, scale)
            if extended is None:
                return Refresh(None, f"new values of column {c!r} reach beyond its grid by more than "
                                     f"{MAX_GRID_GROWTH:.0%} of its points")
            if extended.steps:
                grids[c] = extended
                continue
            old = synopsis.models[c], synopsis.sample[c], old_weights, old_scale
            density = _updated_density(extended, grid, old, removed, rho,
                                       (models[c], sample[c][~kept], weights[~kept], scale[~kept]))
            grids[c] = ColumnGrid(extended.points, extended.count, extended.moment, density, False)
        out.grids = grids
    group_keys = out.group_keys
    if synopsis.summary is not None:
        out.summary = (synopsis.summary + scan.summary).aligned(group_keys)
    if synopsis.sketches is not None:
        out.sketches = (synopsis.sketches + scan.sketches).aligned(group_keys)
    for y, x in synopsis.regressions:
        out.regressions[(y, x)] = fit_regression(y, x, sample, out.strata()[1], seed=synopsis.seed)
    return Refresh(out)


def _unread_tables(synopsis: Synopsis, appended: AppendedRows) -> str:
    """Why the appended rows cannot be added into the synopsis's categorical tables and exact aggregate
    tables ("" when they can): their combinations (:func:`appended_combinations`) or cells
    (:func:`parzen.aqp.cubes.appended_cells`) were not read, so a merge would drop the tables or
    leave them without the new rows; a rebuild makes them again."""
    if synopsis.categories is not None and appended.combinations is None:
        return "the appended rows' categorical values were not read: the exact tables are built again"
    if synopsis.cube is not None and appended.cells is None:
        return "the appended rows' cells were not read: the exact aggregate tables are built again"
    return ""


def _model_changes(synopsis: Synopsis, scan: TableScan) -> str:
    """Why the new rows do not fit the columns' models ("" when they do): fractions in an integer
    column, values below a reflected column's edge, values in a column that had none."""
    for c, model in synopsis.models.items():
        column = scan.columns[c]
        if column.moments.rows == 0:
            continue
        low = float(column.moments.lows[0])
        if model.minimum is None:
            return f"column {c!r} had no values at build and has now"
        if model.integer and not column.integral:
            return f"column {c!r} held only integers at build and now has fractions"
        if model.lower is not None and low < model.lower:
            return f"column {c!r} was non-negative at build (reflected at {model.lower}) and now has {low}"
    return ""


def _merged_sample(synopsis: Synopsis, appended: AppendedRows,
                   rows: int) -> tuple[list[Group], dict, np.ndarray, np.ndarray, np.ndarray]:
    """The groups (old and new, in DuckDB's ORDER BY order) with their new rows and totals, the merged
    sample (per stratum the rows of the smallest keys up to its quota, in key order), its keys, per
    merged row its row in the old sample (-1: an appended row), and its categorical values (rows,
    categorical columns; :func:`_categorical`)."""
    scan = appended.scan
    assert scan is not None and synopsis.sample_keys is not None
    numeric = list(synopsis.models)
    old_table = np.stack([synopsis.sample[c] for c in numeric], axis=1)
    old_labels = _sample_labels(synopsis)
    strata: dict[tuple, tuple] = {}  # normal key -> (plain key, rows, totals, keys, values, origin, labels)
    old_groups = {normal_key(g.key): g for g in synopsis.groups}
    for key, start, stop, count in _strata(synopsis):
        totals = old_groups[normal_key(key)].totals if synopsis.groups else {}
        strata[normal_key(key)] = (key, count, totals, synopsis.sample_keys[start:stop], old_table[start:stop],
                                   np.arange(start, stop), old_labels[start:stop])
    new_groups = {normal_key(k): g for k, g in scan.groups.items()}
    width = old_labels.shape[1]
    for normal, found in appended.candidates.items():
        key, count, totals, keys, values, origin, labels = strata.get(
            normal, (found.key, 0, {}, np.zeros(0, np.uint64), np.zeros((0, len(numeric))), np.zeros(0, np.intp),
                     np.empty((0, width), dtype=object)))
        if synopsis.group_by:
            added = new_groups[normal]
            count += added.rows
            totals = {c: (totals.get(c, (0, 0.0))[0] + n, totals.get(c, (0, 0.0))[1] + s)
                      for c, (n, s) in added.totals.items()}
        else:
            count += scan.rows
        strata[normal] = (key, count, totals, np.concatenate([keys, found.keys]), np.concatenate([values, found.values]),
                          np.r_[origin, np.full(found.keys.size, -1, dtype=np.intp)],
                          np.concatenate([labels, found.labels]))
    order = sorted(strata.values(), key=lambda s: group_sort_key(s[0]))
    groups, blocks, kept_keys, kept_origin, kept_labels, start = [], [], [], [], [], 0
    for key, count, totals, keys, values, origin, labels in order:
        quota = _quota(count, rows, synopsis)
        kept = np.argsort(keys, kind="stable")[:quota]
        blocks.append(values[kept])
        kept_keys.append(keys[kept])
        kept_origin.append(origin[kept])
        kept_labels.append(labels[kept])
        if synopsis.group_by:
            groups.append(Group(key=key, rows=count, totals=totals, start=start, stop=start + kept.size))
        start += kept.size
    table = np.concatenate(blocks)
    return (groups, {c: np.ascontiguousarray(table[:, k]) for k, c in enumerate(numeric)}, np.concatenate(kept_keys),
            np.concatenate(kept_origin), np.concatenate(kept_labels))


def _categorical(synopsis: Synopsis) -> list[str]:
    """The synopsis's categorical columns (:mod:`parzen.aqp.categories`), in its order."""
    return list(synopsis.categories.values) if synopsis.categories is not None else []


def _sample_labels(synopsis: Synopsis) -> np.ndarray:
    """The sampled rows' categorical values, (rows, categorical columns) object, decoded from their codes."""
    categories = synopsis.categories
    labels = np.empty((synopsis.sample_size, len(_categorical(synopsis))), dtype=object)
    if categories is not None:
        for k, (c, known) in enumerate(categories.values.items()):
            decoded = np.empty(len(known), dtype=object)
            decoded[:] = known
            labels[:, k] = decoded[categories.codes[c]]
    return labels


def _merged_categories(categories: Categories, combinations: dict[tuple, Counter],
                       labels: np.ndarray, origin: np.ndarray) -> Categories | str:
    """The categorical columns' exact values and tables with the appended rows' ``combinations`` added,
    and the merged sample's codes (``labels``: its rows' values; ``origin``: :func:`_merged_codes`); or why not (a column past
    :data:`parzen.aqp.categories.CATEGORY_LIMIT` values, no longer categorical: rebuild)."""
    values = _merged_values(categories, combinations)
    if isinstance(values, str):
        return values
    tables = []
    for exact in categories.tables:
        counts: Counter = Counter()
        old = [categories.values[c] for c in exact.columns]
        for codes, n in zip(exact.codes.tolist(), exact.rows.tolist()):
            counts[tuple(known[code] for known, code in zip(old, codes))] += n
        counts.update(combinations.get(exact.columns, Counter()))
        code = [{v: i for i, v in enumerate(values[c])} for c in exact.columns]
        encoded = sorted((tuple(m[v] for m, v in zip(code, key)), n) for key, n in counts.items())
        tables.append(ExactTable(exact.columns, np.array([e for e, _ in encoded], dtype=np.int32).reshape(-1, len(code)),
                                 np.array([n for _, n in encoded], dtype=np.int64)))
    return Categories(values, _merged_codes(categories, values, labels, origin), tables)


def _merged_values(categories: Categories, combinations: dict[tuple, Counter]) -> dict[str, list] | str:
    """Per categorical column, its values with the appended rows' new ones (sorted as a build sorts
    them, :func:`parzen.aqp.categories.value_order`), or why not (a column past
    :data:`parzen.aqp.categories.CATEGORY_LIMIT` values, no longer categorical: rebuild)."""
    values = {}
    for c in categories.values:
        seen = set(categories.values[c]) | {key[0] for key in combinations.get((c,), ())}
        if len(seen) > CATEGORY_LIMIT:
            return f"column {c!r} now has {len(seen)} values, more than a categorical column's {CATEGORY_LIMIT}"
        values[c] = sorted(seen, key=value_order)
    return values


def _merged_codes(categories: Categories, values: dict[str, list], labels: np.ndarray,
                  origin: np.ndarray) -> dict[str, np.ndarray]:
    """The merged sample's codes under the merged ``values``: a kept row's old code mapped to its
    value's new code (one array lookup per column), an appended row's value encoded
    (:func:`parzen.aqp.categories.sample_codes`, on the appended rows only); ``origin``: per merged
    row its row in the old sample, -1 for an appended one; ``labels``: the rows' values."""
    old = origin >= 0
    fresh = sample_codes(values, {c: labels[~old, k] for k, c in enumerate(values)})
    codes = {}
    for c, known in values.items():
        index = {v: i for i, v in enumerate(known)}
        remap = np.array([index[v] for v in categories.values[c]], dtype=fresh[c].dtype)
        merged_codes = np.empty(origin.size, dtype=fresh[c].dtype)
        merged_codes[old] = remap[categories.codes[c][origin[old]]]
        merged_codes[~old] = fresh[c]
        codes[c] = merged_codes
    return codes


def _quota(stratum_rows: int, rows: int, synopsis: Synopsis) -> int:
    """A stratum's sampled rows as the build allots them: the requested sample without groups; with
    groups, ceil(sample rows_g / rows) and at least min(rows_g, MIN_GROUP_SAMPLE)."""
    sample = synopsis.requested_sample
    if not synopsis.group_by:
        return min(sample, rows)
    return max(math.ceil(sample * stratum_rows / rows), min(stratum_rows, MIN_GROUP_SAMPLE))


def _merged_models(synopsis: Synopsis, scan: TableScan, sample: dict[str, np.ndarray]) -> dict[str, ColumnModel]:
    """The columns' models with the new MIN / MAX and, for smoothed columns whose bandwidth was
    selected, h rescaled to the merged sample's n present values by (n_old / n)^(1/3)."""
    models = {}
    for c, model in synopsis.models.items():
        column = scan.columns[c]
        low, high = model.minimum, model.maximum
        if column.moments.rows and low is not None and high is not None:
            low, high = min(low, float(column.moments.lows[0])), max(high, float(column.moments.highs[0]))
        h, source = model.bandwidth, model.bandwidth_from
        if model.kind != DISCRETE and source != "given":
            before = int(np.count_nonzero(~np.isnan(synopsis.sample[c])))
            after = int(np.count_nonzero(~np.isnan(sample[c])))
            if before and after and before != after:
                h *= (before / after) ** (1.0 / 3.0)
                source = source.split("; refreshed", 1)[0] + f"; refreshed: h rescaled to {after} sampled values"
        models[c] = replace(model, bandwidth=h, bandwidth_from=source, minimum=low, maximum=high)
    return models


def _extended_grid(grid: ColumnGrid, buckets: GridBuckets, column: str, outside: np.ndarray, model: ColumnModel,
                   points: int, scale: np.ndarray) -> ColumnGrid | None:
    """``grid`` with the new rows' counts and sums added, and points added where new values lie beyond
    it (None when that needs more than :data:`MAX_GRID_GROWTH` of its points).  Rows read before lie
    within the old points, so C and S at the added points are the old total plus the new values'."""
    t = grid.points
    added = np.cumsum(buckets.count[column])[:-1], np.cumsum(buckets.total[column])[:-1]
    count, moment = grid.count + added[0], grid.moment + added[1]
    below, above = np.sort(outside[outside < t[0]]), np.sort(outside[outside > t[-1]])
    if not below.size and not above.size:
        return ColumnGrid(t, count, moment, grid.density, grid.steps)
    if grid.steps:
        lower, upper = np.unique(below), np.unique(above)
    else:
        spacing = (t[-1] - t[0]) / max(points // 2 - 1, 1)
        if model.integer:
            spacing = max(1.0, float(round(spacing)))
        reach = _REACH * model.bandwidth * float(scale.max())
        lower = t[0] - spacing * np.arange(math.ceil((t[0] - below[0] + reach) / spacing), 0, -1) \
            if below.size else np.zeros(0)
        upper = t[-1] + spacing * np.arange(1, math.ceil((above[-1] + reach - t[-1]) / spacing) + 1) \
            if above.size else np.zeros(0)
    if lower.size + upper.size > MAX_GRID_GROWTH * t.size:
        return None
    # below the old points: the new values only; above: every row up to the old last point, then the new values
    low_count = np.searchsorted(below, lower, side="right").astype(np.float64)
    low_moment = np.r_[0.0, np.cumsum(below)][np.searchsorted(below, lower, side="right")]
    high_index = np.searchsorted(above, upper, side="right")
    high_count = count[-1] + high_index
    high_moment = moment[-1] + np.r_[0.0, np.cumsum(above)][high_index]
    density = grid.density if grid.steps else np.r_[np.zeros(lower.size), grid.density, np.zeros(upper.size)]
    return ColumnGrid(np.r_[lower, t, upper], np.r_[low_count, count, high_count],
                      np.r_[low_moment, moment, high_moment], density, grid.steps)


def _updated_density(grid: ColumnGrid, before: ColumnGrid, old: tuple, removed: np.ndarray, rho: float,
                     added: tuple) -> np.ndarray:
    """c(t) = sum_i w_i K_i(t) of the merged sample at ``grid``'s points, updated from ``before``'s:

        c_new(t) = rho [c_old(t) - sum_{removed} w_i K_i(t)] + sum_{added} w'_j K'_j(t),

    with rho = sum w' / sum w over the old rows kept (their weights rows_g / drawn_g move with the
    strata's rows; exact for one stratum, a weighted mean of the strata's factors otherwise) and
    c_old at the points added beyond ``before``'s the old rows' kernels there.  Only the kernels of
    rows that left or joined the sample are evaluated (a recomputation evaluates every sampled
    row's, about 0.4 s per column for 100 000 rows and 2048 points); the kept rows' kernels keep their
    widths, which the merge moves by (n_old / n)^(1/3) and their stratum's (n / n_g)^(1/5): parts
    in a thousand for 1 % appended.  c only shapes the interpolation between exact C(t), S(t).

    ``old``: (model, values, weights, scale) of the old sample; ``added``: the same of the joined rows.
    """
    model, values, weights, scale = old
    t, inside = grid.points, np.isin(grid.points, before.points)
    density = np.zeros(t.size)
    density[inside] = before.density
    if not inside.all():
        density[~inside] = kernel_cumulative(model, values, weights, scale, t[~inside])[2]
    if removed.size:
        density -= kernel_cumulative(model, values[removed], weights[removed], scale[removed], t)[2]
    density *= rho
    joined, joined_values, joined_weights, joined_scale = added
    if joined_values.size:
        density += kernel_cumulative(joined, joined_values, joined_weights, joined_scale, t)[2]
    return np.maximum(density, 0.0)


def refreshed_note(before: Synopsis, after: Synopsis, seconds: float) -> str:
    """What :attr:`Synopsis.refreshed` says of an incremental refresh from ``before`` to ``after``:
    the appended rows, and the rows each dimension of a join synopsis got."""
    grown = [f"{after.dimension_rows[d] - n} to {d}" for d, n in before.dimension_rows.items()
             if after.dimension_rows.get(d, n) != n]
    dimensions = f" (dimension rows added: {', '.join(grown)})" if grown else ""
    return f"{after.row_count - before.row_count} appended rows{dimensions} added in {seconds:.2f} s"
