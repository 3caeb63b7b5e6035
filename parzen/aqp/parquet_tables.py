"""Exact tables for a synopsis built from Parquet files, and the rows of added files merged into them.

A synopsis built on Dask workers from Parquet files (:mod:`parzen.distributed.synopsis`) samples its
strata's columns (``group_by``) beside the modelled ones, and no other column.  With ``cube=`` or
``cube_bytes=`` (:meth:`parzen.aqp.Engine.build`), its ``group_by`` columns of at most
:data:`parzen.aqp.categories.CATEGORY_LIMIT` values become its categorical columns, and DuckDB, over
the files and no other (the engine's locked-down connection, :func:`parzen.aqp.engine._parquet_connection`),
makes what a build over a database table makes for them: the categorical exact tables
(:func:`parzen.aqp.categories.exact_tables`) and the exact aggregate tables, numeric dimensions too
(:func:`parzen.aqp.cubes.build_cube`, :func:`parzen.aqp.cube_dimensions.find`); the sampled rows'
codes come from their strata's keys.  That is one pass over the files in this process, which is why
it is asked for, not the default.

:func:`appended_tables` reads the added files' rows into them as :func:`parzen.aqp.appends.refresh`
does a database table's appended rows: their combinations per categorical table, the numeric
dimensions' new values and their cells per aggregate table, merged by :func:`parzen.aqp.appends.merged`
(:func:`parzen.aqp.cubes.merged_cube`); so a refreshed synopsis's tables equal a rebuild's.
"""

from __future__ import annotations

import numpy as np

from . import cube_dimensions, cubes
from .build import checked_views, table_columns
from .categories import CATEGORY_LIMIT, Categories, exact_tables, sample_codes
from .synopsis import Synopsis


def add_tables(synopsis: Synopsis, con, cube_bytes: int | None, cube) -> None:
    """Give ``synopsis`` (built from Parquet files) its categorical and exact aggregate tables, read
    by DuckDB over its files (module notes).

    Parameters
    ----------
    synopsis : Synopsis
        Built from the Parquet files that ``con``'s view ``synopsis.table`` reads; changed in place.
    con : duckdb.DuckDBPyConnection
        A connection with that view (:func:`parzen.aqp.engine._parquet_connection`).
    cube_bytes : int or None
        The aggregate tables' byte budget (None: as a database build's default).
    cube : list of lists of str or None
        The aggregate tables' column sets instead of the greedy choice.

    Raises
    ------
    ValueError
        ``cube`` names a column that is no categorical column (one of ``group_by``), or none is.
    """
    table = synopsis.table
    sampled = {c: np.empty(synopsis.sample_size, dtype=object) for c in synopsis.group_by}
    for group in synopsis.groups:
        for c, value in zip(synopsis.group_by, group.key):
            sampled[c][group.start:group.stop] = value
    categorical = [c for c in synopsis.group_by if len(set(sampled[c])) <= CATEGORY_LIMIT]
    views = checked_views(cube, categorical)
    synopsis.cube_bytes, synopsis.cube_views = cube_bytes, views
    if not categorical:
        return
    sampled = {c: sampled[c] for c in categorical}
    values, tables = exact_tables(con, table, categorical, sampled)
    synopsis.categories = Categories(values, sample_codes(values, sampled), tables)
    budget = cubes.default_budget(synopsis.sample, synopsis.categories.codes) if cube_bytes is None else int(cube_bytes)
    numeric = list(synopsis.models)
    dimensions = cube_dimensions.find(con, table, table_columns(con, table), numeric, values)
    built = cubes.build_cube(con, table, values, synopsis.categories.codes,
                             measures=[c for c in numeric if c not in synopsis.temporal], totals=synopsis.totals,
                             rows=synopsis.row_count, budget=budget, sources={}, views=views, dimensions=dimensions)
    synopsis.cube = built if built.tables else None


def appended_tables(synopsis: Synopsis, files: list[str], appended) -> str:
    """Read the rows of the added Parquet ``files`` into ``appended`` (an
    :class:`parzen.aqp.appends.AppendedRows`): their combinations per categorical table and, with
    exact aggregate tables, their cells (module notes); or say why the synopsis must be rebuilt
    ("" when it need not).

    Parameters
    ----------
    synopsis : Synopsis
        A synopsis built from Parquet files, with categorical tables.
    files : list of str
        The added files.
    appended : AppendedRows
        The added rows' summaries, whose ``combinations`` and ``cells`` this sets.

    Returns
    -------
    str
        Why not ("" when read): a categorical column or numeric dimension past its limit.
    """
    from .appends import _merged_values, appended_combinations
    from .engine import _parquet_connection

    con = _parquet_connection(synopsis.table, files)
    try:
        appended.combinations = appended_combinations(con, synopsis, synopsis.table)
        if synopsis.cube is None or synopsis.categories is None:
            return ""
        values = _merged_values(synopsis.categories, appended.combinations)
        if isinstance(values, str):
            return values
        dimensions = cube_dimensions.with_appended(con, synopsis.table, synopsis.cube.dimensions)
        if isinstance(dimensions, str):
            return dimensions
        appended.cells = cubes.appended_cells(con, synopsis.table, synopsis.cube, values, dimensions)
        return ""
    finally:
        con.close()
