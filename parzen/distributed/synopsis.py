"""Building a synopsis from a partitioned table on Dask workers: Parquet files or a dask DataFrame.

The build reads the partitions where they are, in three passes of one task per partition whose
summaries are added by a tree of tasks (:func:`parzen.distributed.tree.tree_sum`); only the sums
come back (:mod:`parzen.aqp.partitions`):

1. the scan: rows, exact COUNT / SUM / MIN / MAX per column and per group, the distinct values
   (up to a cap), the standard deviations, and the column summaries and distinct-count sketches
   per group (VAR, MIN/MAX, COUNT(DISTINCT));
2. the sample: bottom-k on random keys per stratum, each stratum's quota fixed by the scan as
   the database build fixes it (proportional, at least 1000 rows or all of the group); and, in
   the same read, PLUGIN's functionals: each column that may be smoothed linearly binned on a grid
   fixed by the scan's MIN and MAX (a column whose predicted binning error exceeds the tolerance
   is binned again, alone, in one more pass);
3. the gridded form: the exact C(t), S(t) at the grid points chosen from the sample.

Between the passes the build runs the database build's own steps
(:func:`parzen.aqp.build.assemble_synopsis`), so the synopsis has the same exact parts (row
count, totals, group totals, C and S at its points: counts exactly, sums to float64 round-off)
and the same kind of sample and bandwidths as one built from a DuckDB table of the same rows.
A worker lost during a pass has its tasks re-run by Dask; a pass that still fails raises, and
nothing is stored (:meth:`parzen.aqp.Engine.build` stores only a finished synopsis).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._progress import progress_bar
from ..aqp.bandwidths import ColumnSpread, first_grids
from ..aqp.build import (
    DISCRETE_MAX_VALUES,
    MIN_GROUP_SAMPLE,
    BuildOptions,
    Scan,
    TablePasses,
    assemble_synopsis,
    refuse_non_finite,
    selector_of,
)
from ..aqp.dates import temporal_kind
from ..aqp.grid import GRID_POINTS
from ..aqp.partitions import (
    ColumnCounts,
    DrawAndCounts,
    SampleDraw,
    TableScan,
    frame_types,
    group_sort_key,
    integer_keys,
    part_buckets,
)
from ..aqp.synopsis import Group, Synopsis
from .blocks import on_one_thread
from .client import dask_client
from .parquet import parquet_files
from .tree import tree_sum

#: Source kinds a synopsis records (``Synopsis.source["kind"]``).
PARQUET, DASK = "parquet", "dask DataFrame"


def parquet_source(path_or_glob) -> dict:
    """What a synopsis built from Parquet files records of them: the pattern (absolute), the files
    and each file's (size, modification time in ns), from which :func:`source_now` judges it stale.

    Parameters
    ----------
    path_or_glob : str or os.PathLike
        A Parquet file, a directory of them or a glob pattern.

    Returns
    -------
    dict
        ``{"kind": "parquet", "pattern": ..., "files": [...], "stamps": [[size, mtime_ns], ...]}``.

    Raises
    ------
    FileNotFoundError
        When nothing matches.
    """
    files = _file_list(path_or_glob)
    return {"kind": PARQUET, "pattern": os.path.abspath(os.fspath(path_or_glob)), "files": files,
            "stamps": [_stamp(f) for f in files]}


def _file_list(path_or_glob) -> list[str]:
    """The Parquet files ``path_or_glob`` names, absolute and sorted (a directory: its ``*.parquet``)."""
    found = parquet_files(path_or_glob)
    if isinstance(found, str):
        path = Path(found)
        found = [str(p) for p in sorted(path.glob("**/*.parquet"))] if path.is_dir() else [found]
    return sorted(found)


def _stamp(path: str) -> list[int]:
    status = os.stat(path)
    return [int(status.st_size), int(status.st_mtime_ns)]


def source_now(source: dict) -> tuple[int | None, str]:
    """The rows of a Parquet source now and why a synopsis built from it is stale ("" if it is not):
    files gone, added or removed, or a file's size or modification time changed.

    Parameters
    ----------
    source : dict
        As :func:`parquet_source` made it.

    Returns
    -------
    rows : int or None
        The rows of the files matched now (from their footers), None when none match.
    why : str
    """
    import pyarrow.parquet as pq

    try:
        files = _file_list(source["pattern"])
    except FileNotFoundError:
        return None, f"files gone: nothing matches {source['pattern']}"
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    added, removed = sorted(set(files) - set(source["files"])), sorted(set(source["files"]) - set(files))
    if added or removed:
        return rows, f"files changed: {len(added)} added, {len(removed)} removed"
    for f, stamp in zip(source["files"], source["stamps"]):
        if _stamp(f) != list(stamp):
            return rows, f"file changed: {f}"
    return rows, ""


def read_parquet_table(path_or_glob):
    """The Parquet files ``path_or_glob`` names as a dask DataFrame read on the workers, with Arrow
    types (no conversion to NumPy or Python objects: TPC-H lineitem's partitions read in 0.6 s
    instead of 1.35 s, and grouped by a string column in 0.15 s instead of 0.37 s)."""
    import dask.dataframe as dd

    return dd.read_parquet(_file_list(path_or_glob), dtype_backend="pyarrow")


def build_partitioned(frame, table: str, *, columns=None, sample: int = 100_000, bandwidth="plugin", group_by=None,
                      grid: int = GRID_POINTS, regression=None, seed: int = 0, client=None, progress: bool = False,
                      source: dict | None = None) -> Synopsis:
    """The synopsis of the rows of a dask DataFrame, built on the Dask workers (module docstring).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The table (e.g. :func:`read_parquet_table`).
    table : str
        The name the synopsis answers queries on.
    columns, sample, bandwidth, group_by, grid, regression, seed, progress
        As :meth:`parzen.aqp.Engine.build`.
    client : distributed.Client, optional
        The client to compute on (default: the current one).
    source : dict, optional
        What the synopsis records of its data (:func:`parquet_source`; default: a dask DataFrame).

    Returns
    -------
    Synopsis

    Raises
    ------
    ValueError
        For bad options (named as :meth:`parzen.aqp.Engine.build` names them), fewer than 2 rows,
        or a column with infinite values; a lost worker whose tasks failed again (Dask's
        ``KilledWorker``) as a ValueError saying so.
    """
    started = time.perf_counter()
    client = dask_client(client)
    types = frame_types(frame.dtypes)
    options = BuildOptions.checked(table, types, columns=columns, sample=sample, bandwidth=bandwidth,
                                   group_by=group_by, grid=grid, regression=regression, seed=seed)
    numeric, group_by = options.numeric, options.group_by
    parts = frame[[*numeric, *group_by]].to_delayed()
    run = _Passes(client, parts, progress)
    cap = max(DISCRETE_MAX_VALUES, sample // 10) + 1
    with progress_bar(progress, f"synopsis of {table}", total=options.steps) as bar:
        scan: TableScan = run("scanning", TableScan.of, numeric, group_by, cap)
        if scan.rows < 2:
            raise ValueError(f"table {table!r} has {scan.rows} rows; a synopsis needs at least 2")
        refuse_non_finite(table, {c: s.infinite for c, s in scan.columns.items()})
        bar.advance(1)
        quotas = _quotas(scan, group_by, sample)
        stats = {c: s.statistics() for c, s in scan.columns.items()}
        first = first_grids(_plugin_candidates(scan, stats, options))
        both: DrawAndCounts = run("sampling and binning", _draw_and_count, numeric, group_by, quotas, seed, first,
                                  indexed=True)
        groups, drawn, keys = _strata(scan, both.draw, numeric, group_by)
        bar.advance(1)
        totals = {c: (s.moments.rows, s.total) for c, s in scan.columns.items()}

        def bin_columns(specs: dict) -> dict:
            """The counts binned in the second pass where they are on ``specs``' grids, else a pass."""
            held = both.counts.counts
            if all(c in held and held[c].spec == spec for c, spec in specs.items()):
                return {c: held[c] for c in specs}
            return run("binning", ColumnCounts.of, specs).counts

        passes = TablePasses(bin_columns=bin_columns,
                             cumulate=lambda grids: run("gridding", part_buckets, grids).cumulated(grids),
                             statistics=lambda: (scan.summary, scan.sketches))
        synopsis = assemble_synopsis(options, Scan(scan.rows, totals, stats, groups, drawn, 0), passes, bar)
    synopsis.source = source or {"kind": DASK}
    synopsis.sample_keys = keys
    synopsis.temporal = {c: kind for c in numeric if (kind := temporal_kind(types[c])) is not None}
    synopsis.build_seconds = time.perf_counter() - started
    return synopsis


def _draw_and_count(frame, part: int, numeric, group_by, quotas, seed, specs) -> DrawAndCounts:
    return DrawAndCounts.of(frame, part, numeric, group_by, quotas, seed, specs)


def _plugin_candidates(scan: TableScan, stats: dict, options: BuildOptions) -> dict[str, ColumnSpread]:
    """The columns whose PLUGIN functionals the build may need (those the selector "plugin" smooths
    unless the sample finds them lumpy), binned in the sample's pass on the grids
    :func:`parzen.aqp.bandwidths.table_functionals` asks for first."""
    out = {}
    for c in options.numeric:
        low, high, distinct, _, sd = stats[c]
        if (low is not None and high > low and sd > 0 and distinct > DISCRETE_MAX_VALUES
                and selector_of(c, options.bandwidth) == "plugin"):
            out[c] = ColumnSpread(scan.columns[c].moments.rows, low, high, sd)
    return out


class _Passes:
    """One pass over the partitions: ``summarise(part, *args)`` per partition on the workers (Numba
    on one thread: the worker's threads are the parallelism), the results added by a tree of tasks,
    the sum returned (with a progress bar per pass)."""

    def __init__(self, client, parts: list, progress: bool) -> None:
        self.client, self.parts, self.progress = client, parts, progress

    def __call__(self, what: str, summarise: Callable, *args: Any, indexed: bool = False) -> Any:
        from dask import delayed
        from distributed import KilledWorker, as_completed

        task = delayed(on_one_thread, pure=True)
        tasks = [task(summarise, part, k, *args) if indexed else task(summarise, part, *args)
                 for k, part in enumerate(self.parts)]
        futures = self.client.compute(tasks)
        total = tree_sum(self.client, futures)
        try:
            with progress_bar(self.progress, f"{what} {len(self.parts)} partitions", total=len(futures)) as bar:
                for _ in as_completed(futures, loop=self.client.loop):
                    bar.advance()
            return total.result()
        except KilledWorker as err:
            raise ValueError(f"the synopsis build lost Dask workers while {what} and Dask's retries failed too "
                             f"({err}); nothing was stored: check the workers' memory and logs, then build again") from err


def _quotas(scan: TableScan, group_by: tuple, sample: int) -> dict[tuple, int]:
    """Rows to draw per stratum, as the database build draws them: ``sample`` rows uniformly without
    groups; with groups, ceil(sample rows_g / rows) and at least min(rows_g, MIN_GROUP_SAMPLE)."""
    if not group_by:
        return {(): min(sample, scan.rows)}
    return {key: max(math.ceil(sample * g.rows / scan.rows), min(g.rows, MIN_GROUP_SAMPLE))
            for key, g in scan.groups.items()}


def _strata(scan: TableScan, draw: SampleDraw, numeric: list[str],
            group_by: tuple) -> tuple[list[Group], dict, np.ndarray]:
    """The groups (sorted by key, NULL last, as DuckDB's ORDER BY), the sample (column -> values,
    grouped by stratum, each stratum's rows in key order) and the sampled rows' keys in that order, as
    uint64 (:func:`parzen.aqp.partitions.integer_keys`)."""
    keys = sorted(scan.groups, key=group_sort_key) if group_by else [()]
    blocks, groups, start, drawn_keys = [], [], 0, []
    for key in keys:
        rows = draw.in_key_order(key)
        blocks.append(rows.reshape(-1, len(numeric)))
        drawn_keys.append(integer_keys(np.sort(draw.keys[key])) if key in draw.keys else np.zeros(0, np.uint64))
        if group_by:
            g = scan.groups[key]
            groups.append(Group(key=key, rows=g.rows, totals=g.totals, start=start, stop=start + len(rows)))
        start += len(rows)
    table = np.concatenate(blocks) if blocks else np.zeros((0, len(numeric)))
    return groups, {c: np.ascontiguousarray(table[:, k]) for k, c in enumerate(numeric)}, np.concatenate(drawn_keys)
