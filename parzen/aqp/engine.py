"""The AQP engine: build synopses of DuckDB tables and answer aggregate SQL from them.

The thin room of :mod:`parzen.aqp`: the connection (locked down when the engine opens it), the
stored synopses and their staleness checks, SQL to a query, and dispatch to the answer's forms
(:mod:`parzen.aqp.answers`, which uses :mod:`parzen.aqp.calibration`) or to DuckDB for exact
answers (docs/security.md).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import math
import os
import re
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from . import (
    answers,
    case_aggregates,
    contract,
    cube_answers,
    dates,
    domains,
    histogram,
    query_samples,
    ratios,
    row_predicates,
    store,
    stratum_filters,
    subquery_passes,
)
from . import joins as join_synopses
from .build import build_synopsis, checked_views, exact_tables, quote, table_columns
from .categories import CATEGORY_LIMIT
from .changes import TableChanges, fact_changes, table_changes
from .estimate import warm_up, z_value
from .grid import GRID_POINTS
from .group_candidates import LISTED
from .sql import AggregateQuery, Range, UnsupportedQuery, parse, read_only_sql, to_sql
from .strata import Layout, output_groups
from .string_predicates import resolve_query
from .synopsis import CorruptSynopsis, OutdatedSynopsis, Synopsis

#: ``Engine(on_stale=...)``: what an answer from a synopsis found stale does.
ON_STALE = ("warn", "error")


class StaleSynopsisWarning(UserWarning):
    """The answer comes from a synopsis whose table changed since it was built."""


class UncheckedSynopsisWarning(UserWarning):
    """A synopsis built from a dask DataFrame was loaded: nothing can tell whether its data changed."""


class StaleSynopsisError(ValueError):
    """``Engine(on_stale="error")`` refuses to answer from a synopsis whose table changed since it was built."""


class SynopsisRebuiltWarning(UserWarning):
    """:meth:`Engine.refresh` rebuilt a synopsis instead of adding appended rows, and says why."""


class Engine:
    """Approximate answers to ``SELECT COUNT/SUM/AVG ... WHERE ranges [GROUP BY]`` from density synopses.

    ``database`` is a DuckDB file path (created if missing), ``":memory:"`` or an open
    ``duckdb`` connection.  Synopses are stored in the database (table ``parzen_synopses``)
    and reloaded by a new Engine.  A path is opened with :data:`LOCKED_DOWN` (no file access
    but the database, no Python variables as tables, settings locked); a given connection is
    used as it is, and ``exact=True`` then needs it opened with ``enable_external_access``
    false (see :meth:`_exact`).

    Staleness: a synopsis keeps its table's row count and a content fingerprint (a sum of row
    hashes of the columns it models and groups by, :func:`parzen.aqp.build.fingerprint_sql`), so
    INSERT, DELETE and UPDATE all show, as do a dropped table or column.  Checking them scans
    those columns (about 40 ms for 4 columns of 8 M rows), so it happens when the engine loads a
    synopsis (its first use), in :meth:`list`, and in :meth:`check`; :meth:`build` and
    :meth:`refresh` make a fresh one.  A query checks nothing in the database (any round trip costs
    more than the 0.03-0.6 ms answer: a bare COUNT(*) 0.27 ms, 11 ms after a DELETE not yet
    checkpointed): it notices at once only what one of those checks found, which the engine
    remembers until a rebuild or a check that finds the synopsis fresh again.  Changes made while the
    engine is open are seen from the next :meth:`check` or :meth:`list` (or by a new Engine).
    ``on_stale``: what every answer from a synopsis found stale does: "warn" (default;
    :class:`StaleSynopsisWarning`, and the answer describes the data the synopsis was built from) or
    "error" (:class:`StaleSynopsisError`, naming the table and ``engine.refresh(table)``).

    Parameters
    ----------
    database : str, pathlib.Path or duckdb.DuckDBPyConnection
        A DuckDB file path (created if missing), ``":memory:"`` or an open connection.
    read_only : bool
        Open the file read-only (it must exist); synopses can then be read, not built.
    on_stale : {"warn", "error"}
        What an answer from a synopsis found stale does.

    Raises
    ------
    ValueError
        An unknown ``on_stale``; a missing file with ``read_only``; a file already open in this
        process through a connection of another configuration.
    """

    def __init__(self, database, *, read_only: bool = False, on_stale: str = "warn") -> None:
        if on_stale not in ON_STALE:
            raise ValueError(f"on_stale must be 'warn' or 'error', got {on_stale!r}")
        self.on_stale = on_stale
        self._stale: dict[str, str] = {}  # table -> why its synopsis is stale, as the last check found
        # tables whose synopsis a check judged since it was loaded, or that this engine built or refreshed: a
        # synopsis loaded for another reason (a join query's candidates, refresh) is checked before it answers
        self._checked: set[str] = set()
        if isinstance(database, duckdb.DuckDBPyConnection):
            self.con = database
        else:
            path = str(database)
            if read_only and path != ":memory:" and not Path(path).exists():
                raise ValueError(f"no database file {path!r}")
            self.con = _connect_locked_down(path, read_only)
        self._cache: dict[str, Synopsis] = {}
        self._layouts: dict[str, Layout] = {}
        self._sources: dict[str, duckdb.DuckDBPyConnection] = {}  # table -> connection reading its Parquet files
        self._listing: tuple[set[tuple[str, ...]], Sequence[str]] | None = None  # _catalog_tables, kept (_catalog)

    # --- synopses -------------------------------------------------------------------------

    def build(self, table: str, columns=None, *, sample: int = 100_000, bandwidth="plugin", group_by=None,
              grid: int = GRID_POINTS, regression=None, seed: int = 0, source=None, client=None,
              progress: bool = False, joins=None, cube_bytes: int | None = None, cube=None,
              workload=None) -> Synopsis:
        """Read ``table`` and store its synopsis.

        ``source``: where the rows are, when not in the database's table ``table``: Parquet files
        (a file, a directory or a glob such as ``"data/*.parquet"``) or a dask DataFrame, read and
        summarised on the workers of a Dask cluster (``client``, default: the current one) in one
        distributed build (:mod:`parzen.distributed.synopsis`; needs the ``dask`` extra).  The
        synopsis is stored in this database under the name ``table``, and queries on ``table``
        are answered from it as from any other; for Parquet files, ``exact=True`` runs them in
        DuckDB over those files (and no other), and staleness is judged from the files' list,
        sizes and modification times.  A synopsis of a dask DataFrame cannot be checked against
        its data, nor answer exactly (a warning says so when it is loaded).

        ``columns``: numeric columns to model (default: all numeric ones).  ``sample``: rows in
        the uniform sample (the rows of the smallest keys hash(rowid, seed): a merge of appended rows
        keeps it uniform, :meth:`refresh`).  ``bandwidth``: a selector's name
        from :data:`parzen.bandwidth.SELECTORS` ("plugin", the default, "lscv_h", "scott", ...), a
        number, or a dict column -> number (columns left out get "plugin").  "plugin" estimates
        PLUGIN's density functionals Psi_6 and Psi_4 from the binned counts of every row of the
        column (one streamed pass over the smoothed columns) and gives the bandwidth for the n
        sampled values, h = [R(K) / (mu_2^2 Psi_4 n)]^(1/5) (:mod:`parzen.aqp.bandwidths`); the
        other selectors run on <= 10 000 sampled values, rescaled to the sample size by n^(-1/5).
        Either is then scaled to the n^(-1/3) rate of integrals
        (:func:`parzen.aqp.build.integral_factor`); numbers are used as given.  Each column's
        ``ColumnModel.bandwidth_from`` (and :meth:`describe`) says how its h was chosen.
        ``group_by``: categorical columns whose groups stratify the sample (proportional, each
        group >= 1000 rows or all of it), each group keeping exact totals.  GROUP BY and IN / = work
        on every categorical column (text and boolean columns with <= 1000 values, integer ones
        with <= 1000 that are not in ``columns``, modelled integer ones with <= 64, and the
        ``group_by`` ones: :mod:`parzen.aqp.categories`, :mod:`parzen.aqp.domains`);
        strata make answers on their columns exact without a numeric predicate and more precise with one.
        ``joins``: a join synopsis (Acharya, Gibbons, Poosala and Ramaswamy, "Join synopses for
        approximate query answering", SIGMOD 1999; :mod:`parzen.aqp.joins`): the fact table
        ``table`` joined along foreign keys, ``{"l_orderkey": "orders.o_orderkey",
        "orders.o_custkey": "customer.c_custkey"}`` (a fact column, or ``dimension.column`` of a
        dimension joined before, to ``dimension.key``), or ``"declared"`` for the database's FOREIGN
        KEY constraints reachable from ``table``.  The sample's rows carry their dimensions' columns,
        which ``columns``, ``group_by`` and queries (``FROM fact JOIN dim ON fk = pk``, or
        ``FROM fact, dim WHERE fk = pk``) then use like the fact's own.  Keys must be unique in their
        dimension and every fact row must have its match (a ValueError says how many do not).  The
        synopsis keeps each dimension's exact rows (``Synopsis.dimension_rows``), and foreign keys
        into dimensions of at most 1000 rows are categorical columns (exact rows per key).
        ``grid``: points of the gridded form of each column
        (:mod:`parzen.aqp.grid`; 0: none), which answers one-column range queries without GROUP BY
        in microseconds.  ``regression``: pairs ``(y, x)`` of modelled numeric columns, e.g.
        ``[("arr_delay", "dep_delay")]``: a regression r(x) = E[y | x] on a 1-D sparse grid
        (:mod:`parzen.aqp.regression`, fitted on the sample; needs ``grid`` > 0), with which
        ``query(sql, method="regression")`` answers SUM/AVG(y) WHERE x in a range as
        N int r(x) f(x) dx (DBEst's answer) instead of integrating the joint density.
        ``cube_bytes``: bytes of exact aggregate tables (:mod:`parzen.aqp.cubes`): per chosen set of
        categorical columns of the table and its joined dimensions, every row grouped by them with
        its rows and each measure's SUM per existing combination, from which COUNT / SUM / AVG under
        categorical filters and GROUP BY are answered exactly (form "exact table",
        :mod:`parzen.aqp.cube_answers`).  The sets are chosen by the greedy algorithm of Harinarayan,
        Rajaraman and Ullman (SIGMOD 1996), benefit per byte, over the columns of the schema's
        hierarchies (functional dependencies such as city -> nation -> region, found in the data,
        let a table on city answer for nation and region: :mod:`parzen.aqp.cube_lattice`).  Default
        (None): as many bytes as the sample's values and codes (the tables at most double the
        synopsis); 0: none.  ``cube``: the column sets themselves, e.g.
        ``[["d_year", "p_brand", "s_region"]]``, instead of the greedy choice (no budget then).  A set
        may name, besides categorical columns, a numeric dimension (a DATE, integer or DECIMAL column
        of few values at full resolution, ``o_orderdate``, ``l_discount``; a DATE's months,
        ``o_orderdate@month``: :mod:`parzen.aqp.cube_dimensions`) and a comparison dimension
        ``cmp(a,b)``, the sign of a - b per row (-1, 0, +1; NULL if either is), for two numeric, two
        date or two text columns of the table or its joined dimensions: a table holding it answers
        ``a op b`` exactly for op in <, <=, =, <>, >, >= in either order (TPC-H Q12's
        ``cmp(l_commitdate,l_receiptdate)``, Q5's ``cmp(c_nationkey,s_nationkey)``:
        :mod:`parzen.aqp.cube_comparisons`).  An entry may be a dict ``{"columns": [...], "measures":
        [...]}``: that table keeps only the SUM (and COUNT) of those measures, 8 bytes a cell each instead of
        every measure's, and answers only queries that sum no other (``[]``: its rows only, COUNT(*)).
        ``workload``: example queries (SQL texts, a text repeated
        as often as it is asked) instead of ``cube``: the tables are chosen for them within ``cube_bytes``,
        each query's columns as the exact answer needs them (GROUP BY and filter columns, ranges on numeric
        dimensions at full resolution or a DATE's months, comparisons as ``cmp(a,b)``), by HRU's greedy
        weighted by the queries' frequencies (:mod:`parzen.aqp.cube_workload`); a warning names the queries
        no table can answer.  :meth:`rebuild_tables` changes a stored synopsis's
        tables without sampling again.  From
        Parquet files (``source=``) the tables are made only when ``cube_bytes`` or ``cube`` is
        given, over the ``group_by`` columns, by DuckDB over the files in this process
        (:mod:`parzen.aqp.parquet_tables`).

        Parameters
        ----------
        table : str
            The table to summarise.
        columns : list of str, optional
            Numeric columns to model.
        sample : int
            Rows in the sample.
        bandwidth : str, float or dict
            The bandwidth rule, or numbers (see above).
        group_by : list of str, optional
            Categorical columns for GROUP BY and IN / =.
        grid : int
            Points of each column's gridded form (0: none).
        regression : list of (str, str), optional
            Pairs (y, x) to fit regressions for.
        seed : int
            Seed of the sample.
        source : str, os.PathLike or dask.dataframe.DataFrame, optional
            Parquet files or a dask DataFrame holding the rows (default: the database's table).
        client : distributed.Client, optional
            The Dask client a ``source`` is read on (default: the current one).
        progress : bool
            Show a progress bar.
        joins : dict of str to str or "declared", optional
            Foreign keys to join the dimensions along (a join synopsis).
        cube_bytes : int, optional
            The byte budget of the exact aggregate tables (default: the sample's bytes; 0: none).
        cube : list of lists of str or of dicts, optional
            The exact aggregate tables' column sets, or dicts of columns and measures (default: chosen
            within ``cube_bytes``).
        workload : list of str, optional
            Example queries the tables are chosen for (with ``cube`` None).

        Returns
        -------
        Synopsis
            The stored synopsis.

        Raises
        ------
        ValueError
            Bad options, or (``joins``) a missing table or column, a key that is not unique, fact rows
            without a match, a column name in two joined tables; ``cube`` and ``workload`` both given,
            ``workload`` with ``source``, or a ``workload`` query that is no SQL or reads another table.
        """
        options = {"columns": columns, "sample": sample, "bandwidth": bandwidth, "group_by": group_by, "grid": grid,
                   "regression": regression, "seed": seed, "progress": progress}
        texts = _checked_workload(workload, cube)
        if texts is not None and source is not None:
            raise ValueError("workload= chooses exact tables over the database's table; a source= (Parquet files or "
                             "a dask DataFrame) takes cube= or cube_bytes=")
        tables = {"cube_bytes": 0 if texts is not None else cube_bytes, "cube": cube}  # workload: chosen after
        _check_cube_bytes(cube_bytes)
        if joins is not None:
            if source is not None:
                raise ValueError("joins= joins the database's tables; it cannot read a source= (Parquet files or a "
                                 "dask DataFrame): load them into tables first")
            view, edges, dimension_rows = join_synopses.prepare(self.con, table, joins)
            small_keys = [e["column"] for e in edges if dimension_rows[e["parent"]] <= CATEGORY_LIMIT]
            large_nullable = [e for e in edges if e["nulls"] and e["column"] not in small_keys]
            if large_nullable:
                e = large_nullable[0]
                raise ValueError(f"joins: {e['nulls']} row(s) of {e['child']!r} have a NULL {e['column']}, and "
                                 f"{e['parent']!r} has more than {CATEGORY_LIMIT} rows, so no categorical column can "
                                 "tell the rows a join drops: fix the keys, or build without this join")
            sources = {c: e["parent"] for e in edges for c in e["columns"]}
            synopsis = build_synopsis(self.con, view, hidden=(join_synopses.ROWID,), categorical=small_keys,
                                      sources={**sources, **dict.fromkeys(table_columns(self.con, table), table)},
                                      **tables, **options)
            synopsis.table, synopsis.joins, synopsis.dimension_rows = table, edges, dimension_rows
            synopsis.fact_fingerprint = join_synopses.fact_fingerprint(self.con, synopsis)  # refresh checks the fact alone
        elif source is None:
            if client is not None:
                raise ValueError("client= reads a source= (Parquet files or a dask DataFrame); a database table "
                                 "is read by DuckDB in this process")
            synopsis = build_synopsis(self.con, table, **tables, **options)
        else:
            if (cube_bytes or cube) and not isinstance(source, (str, os.PathLike)):
                raise ValueError("cube_bytes= / cube= (exact aggregate tables) need the table in the database or "
                                 "Parquet files; a dask DataFrame source= is built without them")
            synopsis = _build_from(source, table, client, options)
            if cube_bytes or cube:  # over the files, in this process
                from . import parquet_tables

                parquet_tables.add_tables(synopsis, _parquet_connection(table, synopsis.source["files"]),
                                          cube_bytes, cube)
        if texts is not None:  # the queries are read as this synopsis reads them
            started = time.perf_counter()
            self._keep(synopsis)
            synopsis = self._with_tables(synopsis, None, cube_bytes, texts)
            synopsis.build_seconds += time.perf_counter() - started
        store.save(self.con, synopsis)
        self._keep(synopsis)
        self._up_to_date(table)
        return synopsis

    def refresh(self, table: str, *, full: bool = False, client=None, progress: bool = False) -> Synopsis:
        """Bring ``table``'s synopsis up to date: add the rows appended since it read the table, or
        rebuild it with the options it was built with (columns, groups, requested sample size,
        bandwidth, grid, regressions, seed, and the Parquet files it was read from).

        Unless ``full``, one aggregate query (or, for Parquet files, their list and stamps) tells
        what changed (:mod:`parzen.aqp.appends`): nothing (the synopsis is returned as it is); rows
        appended to a DuckDB table, or Parquet files added, and nothing else (only the new rows are
        read, and their summaries added: exact totals, grids, sketches and summaries add, the sample
        merges by bottom-k on the rows' keys, bandwidths are kept, rescaled to the sample's size);
        or anything else, deleted or updated rows above all, which rebuilds it, with a
        :class:`SynopsisRebuiltWarning` saying why.  A join synopsis adds rows appended to its fact
        table alike (read joined with their dimensions' rows), takes rows appended to a dimension
        (new keys; :mod:`parzen.aqp.dimension_appends`) by updating its row count and fingerprint,
        and rebuilds when a dimension's rows were deleted or updated (each dimension's row count and
        fingerprint below and beyond its rowid end at build), a new key repeats one, or a
        dimension with a categorical key grows past 1000 rows.  The returned synopsis's ``refreshed`` says which
        happened.  ``full=True`` rebuilds whatever changed (on unchanged data, the same synopsis).
        A corrupt one, or one of an older format, is rebuilt from the database's table with the
        defaults.  docs/aqp.md, "Appends and refresh", lists what the check detects and what not.

        Parameters
        ----------
        table : str
            A table with a stored synopsis.
        full : bool
            Rebuild, without looking for appended rows.
        client : distributed.Client, optional
            The Dask client for a synopsis rebuilt from Parquet files (default: the current one);
            added files are read in this process.
        progress : bool
            Show a progress bar.

        Returns
        -------
        Synopsis
            The up-to-date synopsis (stored).

        Raises
        ------
        ValueError
            For a synopsis built from a dask DataFrame (build it again from the DataFrame).
        """
        try:
            synopsis = self._loaded(table)
        except ValueError:
            return self.build(table, progress=progress)
        if synopsis.source and "pattern" not in synopsis.source:
            raise ValueError(f"the synopsis of {table!r} was built from a dask DataFrame, which parzen cannot read "
                             f"again: engine.build({table!r}, source=frame) with the DataFrame")
        why = "full=True"
        if not full:
            from . import appends  # the merge's summaries (parzen.binned): only when refreshing

            started = time.perf_counter()
            outcome = appends.refresh(self.con, synopsis)
            if outcome.synopsis is not None:
                if outcome.synopsis is not synopsis:
                    outcome.synopsis.build_seconds = time.perf_counter() - started
                    outcome.synopsis.refreshed = appends.refreshed_note(synopsis, outcome.synopsis,
                                                                        outcome.synopsis.build_seconds)
                    store.save(self.con, outcome.synopsis)
                    self._keep(outcome.synopsis)
                    self._sources.pop(table, None)
                self._up_to_date(table)
                return outcome.synopsis
            why = outcome.why
            warnings.warn(f"refresh rebuilt the synopsis of {table!r}: {why}", SynopsisRebuiltWarning, stacklevel=2)
        rebuilt = self.build(table, progress=progress, **({"client": client} if synopsis.source else {}),
                             **synopsis.build_options())
        rebuilt.refreshed = f"rebuilt: {why}"
        store.save(self.con, rebuilt)
        self._sources.pop(table, None)
        return rebuilt

    def rebuild_tables(self, table: str, *, cube=None, cube_bytes: int | None = None, workload=None) -> Synopsis:
        """Rebuild only the exact aggregate tables of ``table``'s stored synopsis (:mod:`parzen.aqp.cubes`),
        from the database's table (a join synopsis's: joined with its dimensions) as it is now, which
        must be the data the synopsis describes; the sample, bandwidths, grids, totals and everything
        else stay as they are, and the synopsis stays valid (same fingerprint).  A build's tables take
        a small part of its time (TPC-H SF10: about 40 s of 27 min), so this is how to change them.

        ``cube`` and ``cube_bytes`` are those of :meth:`build`: listed column sets (a categorical
        column, a numeric dimension such as ``o_orderdate`` or ``o_orderdate@month``, or a comparison
        dimension ``cmp(a,b)``, :mod:`parzen.aqp.cube_comparisons`), or the greedy choice within a
        byte budget (0: no tables), or chosen for the example queries ``workload`` within it.  With none,
        the synopsis's own (those it was built with).  A later :meth:`refresh` that rebuilds uses the
        ones given here (for a workload: the tables it chose).

        Parameters
        ----------
        table : str
            A table with a stored synopsis.
        cube : list of lists of str or of dicts, optional
            The tables' column sets, or dicts of columns and measures (:meth:`build`).
        cube_bytes : int, optional
            The byte budget of the greedy choice (when ``cube`` is None).
        workload : list of str, optional
            Example queries the tables are chosen for (:meth:`build`).

        Returns
        -------
        Synopsis
            The synopsis with its new tables (stored).

        Raises
        ------
        ValueError
            No synopsis of ``table``; one built from Parquet files or a dask DataFrame (its rows are not in
            the database); a stale one (refresh it first); one without categorical columns; a bad
            ``cube`` or ``cube_bytes`` (an unknown column or measure, a comparison of columns of incompatible
            types);
            ``cube`` and ``workload`` both given, or a bad ``workload`` query (:meth:`build`).
        """
        texts = _checked_workload(workload, cube)
        _check_cube_bytes(cube_bytes)
        synopsis = self._loaded(table)
        if synopsis.source:
            raise ValueError(f"the synopsis of {table!r} was built from {'Parquet files' if 'pattern' in synopsis.source else 'a dask DataFrame'}, "
                             "whose rows are not in the database: exact aggregate tables need a database table")
        _, why = self._check(table)
        if why:
            raise ValueError(f"the synopsis of {table!r} is stale ({why}): its tables would not describe the rows its "
                             f"sample and totals do; engine.refresh({table!r}) first")
        if synopsis.categories is None:
            raise ValueError(f"the synopsis of {table!r} has no categorical column: no exact aggregate table can be "
                             "built")
        if cube is None and cube_bytes is None and texts is None:
            cube, cube_bytes = synopsis.cube_views, synopsis.cube_bytes
        rebuilt = self._with_tables(synopsis, cube, cube_bytes, texts)
        store.save(self.con, rebuilt)
        self._keep(rebuilt)
        return rebuilt

    def _with_tables(self, synopsis: Synopsis, cube, cube_bytes: int | None, workload: list[str] | None) -> Synopsis:
        """``synopsis`` (of a database table, with categorical columns) with new exact aggregate tables:
        ``cube``'s, or those chosen within ``cube_bytes`` over the lattice or for the example queries
        ``workload`` (parsed and read as ``synopsis`` reads queries: :meth:`_workload_parses`)."""
        assert synopsis.categories is not None
        table = synopsis.table
        views = checked_views(cube, list(synopsis.categories.values))
        relation, sources = table, {}
        if synopsis.joins:
            relation = join_synopses.ensure_view(self.con, table, synopsis.joins)
            sources = {**{c: e["parent"] for e in synopsis.joins for c in e["columns"]},
                       **dict.fromkeys(table_columns(self.con, table), table)}
        hidden = {join_synopses.ROWID} if synopsis.joins else set()
        types = {c: t for c, t in table_columns(self.con, relation).items() if c not in hidden}
        parses = None if workload is None else self._workload_parses(synopsis, workload)
        built = exact_tables(self.con, relation, types, synopsis, cube_bytes=cube_bytes, cube=views, sources=sources,
                             workload=parses)
        if parses is not None:  # a rebuild (refresh) makes the tables chosen, with their measures; none chosen: none
            views = built.listed() if built is not None else None
            cube_bytes = cube_bytes if views else 0
        return replace(synopsis, cube=built, cube_bytes=cube_bytes, cube_views=views)

    def _workload_parses(self, synopsis: Synopsis, workload: list[str]) -> list[tuple[str, list[AggregateQuery]]]:
        """Per example query of ``workload``, its text and its parses with names as in ``synopsis``
        (:meth:`_resolved`): one, or a CASE / ratio query's sub-queries (:mod:`parzen.aqp.case_aggregates`);
        none for a histogram query or one outside the subset parzen answers (:class:`UnsupportedQuery`:
        ORDER BY, ...), which no exact table answers.

        Raises
        ------
        ValueError
            A query that is no SQL, or that reads a table ``synopsis`` does not hold.
        """
        held = {synopsis.table.casefold(), *(e["parent"].casefold() for e in synopsis.joins or ())}
        found: list[tuple[str, list[AggregateQuery]]] = []
        for k, text in enumerate(workload):
            try:
                if histogram.parse_histogram(text) is not None:
                    found.append((text, []))
                    continue
                composite = _composite_of(text)
                parts = [q for q, _ in composite.subqueries] if composite is not None else [parse(text)]
                other = sorted({t for q in parts for t in (q.table, *q.joined) if t.casefold() not in held})
                if other:
                    raise ValueError(f"it reads {', '.join(map(repr, other))}, which the synopsis of "
                                     f"{synopsis.table!r} does not hold (it holds {', '.join(sorted(held))})")
                found.append((text, [self._resolved(q) for q in parts]))
            except UnsupportedQuery:  # valid SQL that no table answers: skipped, and named by the build's warning
                found.append((text, []))
            except ValueError as error:
                raise ValueError(f"workload: query {k + 1} cannot choose exact tables: {error}; the query: "
                                 f"{text}") from error
        return found

    def synopsis(self, table: str) -> Synopsis:
        """The stored synopsis of ``table``; loading it (once) checks it against the table (see the
        class's notes on staleness; answers from a stale one warn or refuse, this does neither).

        Parameters
        ----------
        table : str
            The table.

        Returns
        -------
        Synopsis

        Raises
        ------
        ValueError
            No synopsis of ``table`` is stored.
        CorruptSynopsis
            The stored one cannot be read (``refresh`` rebuilds it).
        """
        if table not in self._checked:
            loaded = self._loaded(table)
            self.check(table)
            if loaded.source and "pattern" not in loaded.source:
                warnings.warn(f"the synopsis of {table!r} was built from a dask DataFrame: parzen cannot check "
                              "whether its data changed since; build it again when they do",
                              UncheckedSynopsisWarning, stacklevel=2)
        return self._cache[table]

    def prepare(self, sql: str) -> float:
        """Load the synopsis that ``sql`` reads, if this engine has not yet (reading it, checking it
        against its table and warming it up: see :meth:`synopsis`), so that the next query's latency is
        its answer's alone.

        Parameters
        ----------
        sql : str
            A query of the supported subset (a histogram query too).

        Returns
        -------
        float
            The seconds spent loading (0 when the synopsis was loaded already).

        Raises
        ------
        UnsupportedQuery, ValueError, CorruptSynopsis
            As :meth:`query` would: the query is outside the subset, or its table has no readable synopsis.
        """
        binned = histogram.parse_histogram(sql)
        if binned is not None:
            parsed = binned.base
        else:
            composite = _composite_of(sql)
            parsed = parse(sql) if composite is None else composite.subqueries[0][0]
        table = self._answering_name(parsed)
        if table in self._checked:
            return 0.0
        started = time.perf_counter()
        self.synopsis(table)
        return time.perf_counter() - started

    def describe(self, table: str) -> pd.DataFrame:
        """One row per modelled column of the synopsis of ``table``: its kind, bandwidth and how
        the bandwidth was chosen.

        Kinds are "continuous", "integer" (continuity correction) and "discrete" (point masses,
        bandwidth 0); "reflected at" is the edge of a non-negative column's reflection (NaN:
        none).  "bandwidth from" is ``ColumnModel.bandwidth_from``, e.g. "plugin, every row:
        Psi_6, Psi_4 of 328521 rows (binned, 16545 nodes), h for 101457 sampled values"
        (:mod:`parzen.aqp.bandwidths`), "scott, sampled values: 10000 of 101457" or "given".

        Parameters
        ----------
        table : str
            The table.

        Returns
        -------
        pandas.DataFrame
            Columns "column", "kind", "bandwidth", "reflected at", "bandwidth from".

        Raises
        ------
        ValueError
            No synopsis of ``table`` is stored.
        CorruptSynopsis
            The stored one cannot be read (``refresh`` rebuilds it).
        """
        models = self.synopsis(table).models.values()
        return pd.DataFrame([{"column": m.name, "kind": m.kind, "bandwidth": m.bandwidth,
                              "reflected at": math.nan if m.lower is None else m.lower,
                              "bandwidth from": m.bandwidth_from} for m in models],
                            columns=["column", "kind", "bandwidth", "reflected at", "bandwidth from"])

    def check(self, table: str) -> str:
        """Why the synopsis of ``table`` is stale ("" if it describes the table): its row count and
        content fingerprint against the table's now (one scan of the columns it covers).  The engine
        remembers the verdict: later answers from a stale synopsis warn or refuse (``on_stale``).

        Parameters
        ----------
        table : str
            A table with a stored synopsis.

        Returns
        -------
        str
            "" or the reason ("rows changed: ...", "contents changed (same row count)", "table
            dropped", "columns changed ...").
        """
        return self._check(table)[1]

    def _check(self, table: str) -> tuple[int | None, str]:
        """:meth:`check`, with the table's row count now (None if it was dropped)."""
        rows, why = _table_now(self.con, self._loaded(table))
        if why:
            self._stale[table] = why
            self._checked.add(table)
        else:
            self._up_to_date(table)
        return rows, why

    def _up_to_date(self, table: str) -> None:
        """Record that ``table``'s synopsis describes the table now (a check found it so, or it was just built
        or refreshed)."""
        self._stale.pop(table, None)
        self._checked.add(table)

    def _loaded(self, table: str) -> Synopsis:
        """The synopsis of ``table``, loaded (and kept) if it is not yet, without checking it.

        Numba's compiled functions load (:func:`parzen.aqp.estimate.warm_up`, the first time in a process)
        in a thread while DuckDB reads the stored synopsis, which it does without holding the GIL: on SSB
        SF10 (190 MB) the load and the warm-up took 2.03-2.21 s against 2.43-2.78 s one after the other."""
        if table not in self._cache:
            warming = threading.Thread(target=_warm_up_quietly, name="parzen-warm-up", daemon=True)
            warming.start()
            try:
                synopsis = store.load(self.con, table)
            finally:
                warming.join()
            self._keep(synopsis)
        return self._cache[table]

    def _answering(self, table: str) -> Synopsis:
        """The synopsis that answers a query on ``table``, after the warning or refusal that a stale
        verdict calls for (a dictionary look-up: no query checks the database)."""
        synopsis = self.synopsis(table)
        why = self._stale.get(table)
        if why:
            message = (f"the synopsis of {table!r} is stale ({why}); its answers describe the data it was built "
                       f"from: engine.refresh({table!r}) rebuilds it")
            if self.on_stale == "error":
                raise StaleSynopsisError(message)
            warnings.warn(message, StaleSynopsisWarning, stacklevel=4)
        return synopsis

    def _keep(self, synopsis: Synopsis) -> None:
        """Cache ``synopsis`` ready to answer, so that no query pays for it: its sample's sorted
        orders, its regressions' values at their knots, the indexes of its exact aggregate tables,
        the value indexes and sort ranks of its categorical columns, the compiled box integrals (Numba compiles them once per installation) and pandas' first
        frame with named columns.  Then the objects alive (TPC-H SF10's synopsis: about 200 000) go
        to the garbage collector's permanent generation (:func:`gc.freeze`, after a collection): a
        full collection, which Python starts every so many allocations, then no longer walks them (on
        TPC-H SF10 it paused one answer in about 100 for 90 ms; after, no collection took over 1.2 ms)."""
        self._cache[synopsis.table] = synopsis
        self._layouts[synopsis.table] = Layout.of(synopsis)
        if synopsis.cube is not None and synopsis.categories is not None:
            synopsis.cube.warm(synopsis.categories.values)
        if synopsis.categories is not None:  # value indexes and sort ranks of the categorical columns
            synopsis.categories.warm()
        for regression in synopsis.regressions.values():  # r at its knots, once
            regression(regression.feature_min)
        warm_up()
        _warm_up_frames()
        gc.collect()
        gc.freeze()
        atexit.unregister(gc.unfreeze)  # registered once: at exit the interpreter's last collections free them
        atexit.register(gc.unfreeze)  # (else extension types such as the sketches report them as leaked)

    def list(self) -> pd.DataFrame:
        """One row per stored synopsis: columns, rows then and now, staleness and why ("rows changed",
        "contents changed", "table dropped", "columns changed", or "corrupt: rebuild with
        engine.refresh(...)" for one that cannot be read), bytes (of the grids and regressions too),
        regressions, build time (:meth:`describe` gives each column's model).  It checks every synopsis (:meth:`check`) and the engine remembers the
        verdicts.

        Returns
        -------
        pandas.DataFrame
            One row per stored synopsis.
        """
        rows = []
        for table in store.stored_tables(self.con):
            try:
                s = self._loaded(table)
            except CorruptSynopsis as error:
                kind = "older format" if isinstance(error, OutdatedSynopsis) else "corrupt"
                rows.append({"table": table, "stale": True, "why stale": f"{kind}: rebuild with engine.refresh({table!r})"})
                continue
            current, why = self._check(table)
            size = s.nbytes()
            rows.append({
                "table": table, "columns": len(s.models), "group_by": ", ".join(s.group_by),
                "joins": ", ".join(j["parent"] for j in s.joins),
                "sample rows": s.sample_size, "rows at build": s.row_count, "rows now": current,
                "stale": bool(why), "why stale": why, "bytes": size["total"], "grid bytes": size["grid"],
                "regressions": ", ".join(r.name for r in s.regressions.values()),
                "regression bytes": size["regression"],
                "built at": s.built_at,
                "build s": round(s.build_seconds, 3),
            })
        return pd.DataFrame(rows)

    # --- queries --------------------------------------------------------------------------

    def query(self, sql: str, *, exact: bool = False, with_error: bool = False, confidence: float = 0.95,
              method: str = "density", max_rel_error: float | None = None) -> pd.DataFrame:
        """The answer to ``sql`` as a DataFrame shaped like DuckDB's (one row per group).

        ``exact=True`` runs the query in DuckDB (one read-only query over the database's tables,
        re-generated by sqlglot, without file access: :meth:`_exact`).
        Answers from the sample are calibrated to the table's exact margins held by the grids
        (:func:`parzen.aqp.answers.calibration_factor`).  ``with_error=True`` adds
        ``<name> low`` / ``<name> high`` columns around the same answer (asking for an interval
        does not change it): value +- z se at ``confidence``, se the standard error of the plain
        stratified estimate from the sample variance of the per-row kernel masses
        (finite-population corrected; stratified over groups; conservative for calibrated
        answers), widened by the size of the smoothing bias's estimate, the larger of
        |A(c h) - A(h)| / |c^2 - 1| for the same answer at bandwidths c h, c = sqrt 2 and c = 0
        (:mod:`parzen.aqp.contract`; docs/aqp.md, "Error contract", gives the coverage measured per
        query family).
        ``max_rel_error``: answer from the synopsis only when every returned value's interval at
        ``confidence`` has half width <= ``max_rel_error`` |value| and its list of groups is complete;
        otherwise from a sample of the fact table drawn now, sized from the synopsis's interval, when at
        most 10 % of the table is needed and its interval meets the bound for every group (form "query
        sample", ``df.attrs["sampled_fraction"]``: :mod:`parzen.aqp.query_samples`); otherwise exactly
        in DuckDB (the query re-generated from its parse, read-only; form "exact").  A GROUP BY whose
        list of groups the synopsis cannot promise complete (``df.attrs["groups_listed"] ==
        "sampled"``, below) is answered exactly.  ``df.attrs["relative_half_width"]`` is the
        synopsis's largest half width / |value|, and with ``with_error`` an exact answer has intervals
        of width 0.
        ``df.attrs["groups_listed"]`` (GROUP BY on categorical columns outside the strata) says how
        the answer's groups relate to those that exist under the query's categorical filters:
        "exact" (the same), "superset" (every one, and maybe combinations that do not exist, whose
        intervals start at 0; three or more columns, :mod:`parzen.aqp.group_candidates`) or
        "sampled" (those found in the sample).
        ``df.attrs["seconds"]`` holds the latency and ``df.attrs["form"]`` what answered: "grid"
        (one range column, no GROUP BY or IN), "sample" (the synopsis's sample), "totals" (no
        numeric predicate), "regression", "query sample" or "exact".  CASE inside SUM / COUNT / AVG
        and arithmetic of aggregates (``SUM(a) / SUM(b)``, ``100.00 * SUM(CASE ...) / SUM(...)``)
        are answered from totals under the WHERE and the CASE conditions, with delta-method
        intervals (:mod:`parzen.aqp.case_aggregates`, :mod:`parzen.aqp.ratios`).  A histogram query (``SELECT FLOOR(x / w) * w AS bin, ... GROUP BY bin``,
        :mod:`parzen.aqp.histogram`) answers one row per bin, each bin a range on x answered as above.
        VAR/STDDEV, MIN/MAX, quantiles, COUNT(DISTINCT), SUM/AVG of arithmetic of
        columns and OR / NOT are answered too (:mod:`parzen.aqp.aggregates`, :mod:`parzen.aqp.unions`;
        docs/aqp.md, "More aggregates"); ``df.attrs["bounds"]`` then names the MIN / MAX answers that are
        bounds (under a range: the sample's extreme, with a guaranteed interval).

        ``method``: "density" (default) integrates the joint density (grid, sample or totals, as
        above); "regression" answers from a regression y ~ x built with ``build(regression=...)``:
        one range on x, no GROUP BY or IN, COUNT(*) and COUNT/SUM/AVG of x or of the y's
        regressed on x (SUM(y) = N int r(x) f(x) dx); any other query raises a ValueError saying why.

        Parameters
        ----------
        sql : str
            One query of the supported subset.
        exact : bool
            Run it in DuckDB instead.
        with_error : bool
            Add confidence intervals.
        confidence : float
            Their confidence, in (0, 1).
        method : {"density", "regression"}
            What answers.
        max_rel_error : float, optional
            The largest relative half width accepted from the synopsis (> 0); beyond it DuckDB answers.

        Returns
        -------
        pandas.DataFrame
            One row per group, one column per selected item (and its interval).

        Raises
        ------
        UnsupportedQuery
            The query is outside the supported subset, or groups by a column the synopsis has no
            groups for.
        ValueError
            A bad option, an unknown column, a query ``method="regression"`` cannot answer, or
            (``exact=True``) SQL that is not one read-only query over the database's tables.
        StaleSynopsisError
            The synopsis is stale and ``on_stale="error"``.
        """
        started = time.perf_counter()
        if method not in ("density", "regression"):
            raise ValueError(f"method must be 'density' or 'regression', got {method!r}")
        if max_rel_error is not None:
            return self._bounded(sql, max_rel_error, confidence, with_error, exact, method, started)
        return self._answer(sql, exact, with_error, confidence, method, started)

    def _answer(self, sql: str, exact: bool, with_error: bool, confidence: float, method: str, started: float,
                drop_intervals: bool = False) -> pd.DataFrame:
        """:meth:`query` without ``max_rel_error``; ``drop_intervals`` (with ``with_error``, for
        :meth:`_bounded`): an answer from the exact aggregate tables comes without its intervals and with
        their largest relative half width in ``df.attrs["relative_half_width"]``
        (:func:`parzen.aqp.cube_answers.answer`), any other with its intervals."""
        if exact:
            if method != "density":
                raise ValueError("exact=True runs the query in the database; it takes no method")
            result, form = self._exact(sql), "exact"
        elif (binned := histogram.parse_histogram(sql)) is not None:
            if method != "density":
                raise ValueError("a histogram query (FLOOR(x / w) ... GROUP BY bin) is answered by method='density'")
            result, form = self._histogram(binned, z_value(confidence) if with_error else None)
        elif method == "regression":
            if with_error:
                raise ValueError("method='regression' gives no intervals; with_error=True needs method='density'")
            result, form = self._regression(self._resolved(parse(sql))), "regression"
        elif (composite := _composite_of(sql)) is not None:  # CASE in aggregates, ratios (parzen.aqp.ratios)
            result, form = self._composite(composite, with_error, z_value(confidence), drop_intervals)
        else:
            result, form = self._approximate(self._resolved(parse(sql)), with_error, z_value(confidence), drop_intervals)
        result.attrs["seconds"] = time.perf_counter() - started
        result.attrs["form"] = form
        return result

    def compare(self, sql: str, *, method: str = "density") -> pd.DataFrame:
        """Approximate (by ``method``, see :meth:`query`) beside exact: per aggregate, both values
        and the relative error.

        ``attrs["approximate_seconds"]`` and ``attrs["exact_seconds"]`` hold the latencies,
        ``attrs["form"]`` what answered (see :meth:`query`).

        Parameters
        ----------
        sql : str
            One query of the supported subset.
        method : {"density", "regression"}
            What answers the approximate side.

        Returns
        -------
        pandas.DataFrame
            Per group: ``<name> approx``, ``<name> exact`` and ``<name> rel. error``.
        """
        names, keys, exact_answer = self._shape(sql)
        approx = self.query(sql, method=method)
        exact = exact_answer()
        merged = approx.merge(exact, on=keys, how="outer", suffixes=(" approx", " exact")) if keys else \
            approx.add_suffix(" approx").join(exact.add_suffix(" exact"))
        for name in names:
            e = merged[f"{name} exact"].astype(float)
            merged[f"{name} rel. error"] = (merged[f"{name} approx"] - e).abs() / e.abs()
        merged.attrs = {"approximate_seconds": approx.attrs["seconds"], "exact_seconds": exact.attrs["seconds"],
                        "form": approx.attrs["form"]}
        return merged

    def _bounded(self, sql: str, max_rel_error: float, confidence: float, with_error: bool, exact: bool,
                 method: str, started: float) -> pd.DataFrame:
        """:meth:`query` with ``max_rel_error``: the synopsis's answer when its intervals meet the
        bound (:func:`parzen.aqp.contract.meets`), else DuckDB's (:meth:`_exact_of`)."""
        contract.check_bound(max_rel_error, confidence)
        if exact or method != "density":
            raise ValueError("max_rel_error chooses between the synopsis's density answer and the exact one; "
                             "it takes neither exact=True nor method='regression'")
        # without with_error, an answer from the exact tables comes without its intervals, checked on its arrays
        approx = self._answer(sql, False, True, confidence, method, started, drop_intervals=not with_error)
        dropped = not with_error and contract.RELATIVE_HALF_WIDTH in approx.attrs
        answered = [] if dropped else contract.interval_names(approx)
        worst = approx.attrs.pop(contract.RELATIVE_HALF_WIDTH) if dropped else contract.relative_half_width(approx, answered)
        complete = approx.attrs.get(LISTED, "exact") != "sampled"  # an existing group may be missing: exact
        if worst <= max_rel_error and complete:  # the answer's own columns suffice: the query's shape is not read
            result = approx if with_error or dropped else contract.without_intervals(approx, answered)
            result.attrs.update(seconds=time.perf_counter() - started, relative_half_width=worst,
                                max_rel_error=max_rel_error, confidence=confidence)
            return result
        names, keys, exact_answer = self._shape(sql)
        if complete and (drawn := self._drawn(sql, approx, worst, max_rel_error, confidence, names, keys)) is not None:
            result = drawn if with_error else contract.without_intervals(drawn, names)
        else:
            ordered = [] if histogram.parse_histogram(sql) is not None else keys  # a histogram's SQL orders its bins
            result = contract.in_answer_order(exact_answer(), ordered)
            if with_error:
                result = contract.with_exact_intervals(result, names)
            result.attrs["form"] = "exact"
        result.attrs.update(seconds=time.perf_counter() - started, relative_half_width=worst,
                            max_rel_error=max_rel_error, confidence=confidence)
        return result

    def _drawn(self, sql: str, approx: pd.DataFrame, worst: float, bound: float, confidence: float,
               names: Sequence[str], keys: Sequence[str]) -> pd.DataFrame | None:
        """The answer from a sample of the fact table drawn now (:mod:`parzen.aqp.query_samples`), when
        the fraction the synopsis's relative half width ``worst`` calls for is at most
        :data:`~parzen.aqp.query_samples.MAX_FRACTION` and the drawn sample's intervals meet ``bound``
        for every group of the synopsis's answer ``approx`` (a sample that misses is drawn once more,
        sized from its own half width, which holds the blocks' design effect); None otherwise (DuckDB
        answers exactly).
        Histogram queries, aggregates that are not functions of totals, OR / NOT, and tables read from
        Parquet files or dask DataFrames get None."""
        if histogram.parse_histogram(sql) is not None:
            return None
        composite = _composite_of(sql)
        if composite is not None:
            subqueries = [self._resolved(q) for q, _ in composite.subqueries]
            query, planned = subqueries[0], query_samples.plan(None, composite, subqueries)
        else:
            query = self._resolved(parse(sql))
            planned = query_samples.plan(query)
        synopsis = self._answering(query.table)
        fraction = query_samples.fraction_needed(synopsis.sample_size, synopsis.row_count, worst, bound)
        if fraction > query_samples.MAX_FRACTION:
            return None  # decided before the catalog is read: a small table's exact answer costs no more
        read = {t.casefold() for t in query.joined}
        if planned is None or synopsis.source or (query.table.casefold(),) not in self._catalog([(query.table.casefold(),)])[0] \
                or any(e.get("nulls") and e["parent"].casefold() in read for e in synopsis.joins):
            return None  # Parquet / dask rows have no rowid; a join that drops NULL keys changes the rows N
        keys = list(keys)
        for _ in range(query_samples.DRAWS):
            if fraction > query_samples.MAX_FRACTION:
                return None
            drawn = query_samples.answer(self._run, planned, synopsis.row_count, 100.0 * fraction, z_value(confidence))
            if drawn is None or drawn[1] < query_samples.MIN_BLOCKS:
                return None
            frame = drawn[0].rename(columns={g: next((k for k in keys if k.casefold() == g.casefold()), g)
                                             for g in query.group_by})
            if keys:
                wanted = set(approx[keys].itertuples(index=False, name=None))
                if not wanted <= set(frame[keys].itertuples(index=False, name=None)):
                    return None  # a group of the table that the drawn sample missed
            reached = contract.relative_half_width(frame, names)
            if reached <= bound:
                frame = contract.in_answer_order(frame, keys)
                frame.attrs.update(form=query_samples.FORM, sampled_fraction=fraction)
                return frame
            fraction = query_samples.redrawn_fraction(fraction, reached, bound)
        return None

    def _shape(self, sql: str):
        """The aggregates' output names of ``sql``, the columns keying its rows (GROUP BY columns; a
        histogram's bin, which its SQL orders, only for :meth:`compare`) and a function giving DuckDB's
        answer: the SQL re-generated from the parse (:meth:`_exact_of`), or for CASE in aggregates and
        ratios (:mod:`parzen.aqp.case_aggregates`) the query re-generated with its outputs aliased as
        the approximate answer names them, run through the read-only allow-list of ``exact=True``
        (:meth:`_exact`)."""
        binned = histogram.parse_histogram(sql)
        composite = _composite_of(sql) if binned is None else None
        if composite is not None:
            return [o.name for o in composite.outputs], _selected_groups(composite), \
                lambda: self._exact(composite.exact_sql, generated=True)
        query = self._resolved(parse(sql) if binned is None else binned.base)
        keys = list(query.group_by) if binned is None else [binned.label]
        return [a.name for a in query.aggregates], keys, lambda: self._exact_of(query, binned)

    def _composite(self, composite: case_aggregates.Composite, with_error: bool, z: float,
                   drop_intervals: bool = False) -> tuple[pd.DataFrame, str]:
        """A query with CASE inside aggregates or arithmetic of aggregates: its generated sub-queries
        answered exactly from the exact aggregate tables when they give every one
        (:func:`parzen.aqp.ratios.exact`; with ``drop_intervals`` and ``with_error``, without its intervals and
        with their largest relative half width in ``df.attrs["relative_half_width"]``, as :meth:`_answer`), else
        by the engine's forms and combined by :func:`parzen.aqp.ratios.approximate`, widened by the bias
        estimate of the whole expression (:mod:`parzen.aqp.contract`)."""
        subqueries = [self._resolved(q) for q, _ in composite.subqueries]
        synopsis = self._answering(subqueries[0].table)
        for q in subqueries:
            _check_columns(q, synopsis, categorical=True)
        if synopsis.cube is not None and synopsis.categories is not None and any(  # as _approximate: totals first
                q.compared or domains.needed(q, synopsis) or not answers.answered_exactly(q, synopsis)
                for q in subqueries) and \
                (found := cube_answers.answer_each(subqueries, synopsis.cube, synopsis.categories)) is not None:
            return ratios.exact(composite, *found, synopsis.row_count, with_error, synopsis.cube,
                                drop_intervals), cube_answers.FORM
        layout = self._layouts[synopsis.table]
        smoothed = with_error and any(contract.reads_bandwidths(q, synopsis) for q in subqueries)  # else no bias
        passes = subquery_passes.SubqueryPasses(synopsis, layout, smoothed)  # the bias runs share the answer's passes
        placement: list = []
        result, form = ratios.approximate(composite, subqueries, synopsis, layout, passes.answer,
                                          z if with_error else None, placement,  # no bias: round-off widened there
                                          None if smoothed else synopsis.row_count)
        if smoothed:
            keys = _selected_groups(composite)
            result = contract.cover_bias(
                result, lambda s: ratios.approximate(composite, subqueries, s, layout, passes.answer, None)[0],
                synopsis, [o.name for o in composite.outputs], keys,
                answers_at=lambda ss: ratios.bias_runs(composite, subqueries, placement, ss, passes.runs))
            if form != "totals":  # float64 round-off against DuckDB's own sums (parzen.aqp.contract)
                result = contract.cover_rounding(result, [o.name for o in composite.outputs], synopsis.row_count)
        return result, form

    def _exact_of(self, query: AggregateQuery, binned: histogram.HistogramQuery | None = None) -> pd.DataFrame:
        """DuckDB's answer to a parsed query (names as in the synopsis): its SQL re-generated from the
        parse (:func:`parzen.aqp.sql.to_sql`, :func:`parzen.aqp.histogram.exact_sql`), run read-only
        (:meth:`_run`) on the database, or over the Parquet files of its synopsis."""
        in_database = (query.table.casefold(),) in self._catalog([(query.table.casefold(),)])[0]
        con = None if in_database or not self._parquet_source(query.table) else self._source_connection(query.table)
        return self._run(to_sql(query) if binned is None else histogram.exact_sql(self._resolved_histogram(binned)), con)

    def _resolved(self, query: AggregateQuery) -> AggregateQuery:
        """``query`` with its table and column names spelled as in the synopsis.

        DuckDB matches identifiers case-insensitively, quoted or not (a table or a table's columns
        cannot hold two names that differ only in case), so ``FROM T WHERE X > 1`` reads ``t.x``;
        it names a selected column as stored, an aggregate as written, and so do the answers here.
        A name that matches as written costs a dict lookup; only the others are looked up casefolded.
        """
        table = self._answering_name(query)
        synopsis = self._cache.get(table) or self.synopsis(table)
        query = row_predicates.separate_filters(query, synopsis)  # equalities that join no foreign key filter rows
        if query.joined or synopsis.joins:
            join_synopses.covered(query, synopsis)
            query = join_synopses.inner_rows(query, synopsis)
        query = resolve_query(query, synopsis)  # text tests and dates (parzen.aqp.string_predicates)
        has, folded = _names_held(synopsis)
        if query.columns <= has:  # names as stored: only the FROM table may differ (FROM orders, lineitem)
            if table == query.table:
                return query
            return query.replaced(table=table, joined=tuple(t for t in (query.table, *query.joined)
                                                           if t.casefold() != table.casefold()))

        def stored(name: str) -> str:
            return name if name in has else folded.get(name.casefold(), name)

        def box(query_ranges: dict[str, Range], query_members: dict[str, frozenset]):
            ranges: dict[str, Range] = {}
            for column, r in query_ranges.items():
                r = replace(r, column=stored(column))
                ranges[r.column] = ranges[r.column].intersect(r) if r.column in ranges else r
            members: dict[str, frozenset] = {}
            for column, values in query_members.items():
                members[stored(column)] = members.get(stored(column), values) & values
            return ranges, members

        select = tuple(stored(item) if isinstance(item, str) else item.renamed(stored) for item in query.select)
        ranges, members = box(query.ranges, query.members)
        joined = tuple(t for t in (query.table, *query.joined) if t.casefold() != table.casefold())
        return AggregateQuery(table, select, ranges, members, tuple(stored(g) for g in query.group_by),
                              boxes=tuple(box(*b) for b in query.boxes), joined=joined, join_on=query.join_on,
                              compared=tuple(c.renamed(stored) for c in query.compared),
                              box_compared=tuple(tuple(c.renamed(stored) for c in pairs) for pairs in query.box_compared))

    def _answering_name(self, query: AggregateQuery) -> str:
        """The synopsis that answers ``query``: its FROM table's, or for a join the first of its
        tables whose loaded synopsis holds them all, else the first of its tables that has one
        (a join synopsis is stored under its fact table)."""
        if query.joined:
            tables = [query.table, *query.joined]

            def held(name: str) -> int:  # how many of the query's tables its synopsis holds
                joined = {j["parent"].casefold() for j in self._loaded(name).joins} | {name.casefold()}
                return sum(t.casefold() in joined for t in tables)

            for table in tables:  # the first loaded synopsis that holds them all: no catalog read
                name = self._synopsis_name(table, loaded_only=True)
                if name in self._cache and held(name) == len(tables):
                    return name
            stored = store.stored_tables(self.con)  # one catalog read for all the tables
            found = [name for name in (self._synopsis_name(t, stored) for t in tables)
                     if name in self._cache or name in stored]
            if found:  # the one holding most of them (the first of those): its refusal names what it lacks
                return max(found, key=held)
        return self._synopsis_name(query.table)

    def _synopsis_name(self, table: str, stored: Sequence[str] | None = None, *, loaded_only: bool = False) -> str:
        """The name under which ``table``'s synopsis is kept, matched case-insensitively as DuckDB
        matches table names (``table`` itself when none matches: loading it then says so).  The
        database's list is read only when no loaded synopsis matches (``stored``: that list, read
        already; ``loaded_only``: never)."""
        if table in self._cache:
            return table
        folded = table.casefold()
        for name in self._cache:
            if name.casefold() == folded:
                return name
        if not loaded_only:
            for name in store.stored_tables(self.con) if stored is None else stored:
                if name.casefold() == folded:
                    return name
        return table

    def _exact(self, sql: str, *, generated: bool = False) -> pd.DataFrame:
        """``sql`` run in DuckDB, in two layers: :func:`read_only_sql` admits one read-only query
        over tables that exist (case-insensitively, as DuckDB resolves names) and re-generates it;
        DuckDB runs the result on a connection that cannot touch files (``enable_external_access``
        false: no ``read_csv``, no replacement scan of a file name, no ATTACH or COPY), in a
        read-only transaction (:meth:`_run`).  ``generated``: SQL that parzen wrote from its own
        parse of a query it answers (a CASE / ratio query's, :meth:`_shape`), which, like the SQL of
        :meth:`_exact_of`, also runs on a connection passed with external access on."""
        text, tables = read_only_sql(sql)
        known, names = self._catalog([tuple(p.casefold() for p in parts) for parts in tables])
        absent = [parts for parts in tables if tuple(p.casefold() for p in parts) not in known]
        parquet = [parts for parts in absent if len(parts) == 1 and self._parquet_source(parts[0])]
        if parquet:
            if len(tables) > 1:
                raise UnsupportedQuery(f"exact answers over Parquet files read one table; this query reads "
                                       f"{', '.join('.'.join(p) for p in tables)}")
            return self._run(text, self._source_connection(parquet[0][0]))
        if not generated:
            _require_no_external_access(self.con)
        if absent:
            missing = sorted(".".join(parts) for parts in absent)
            raise ValueError(f"no table {missing[0]!r} in the database; its tables: {', '.join(names)}")
        return self._run(text)

    def _catalog(self, wanted: Sequence[tuple[str, ...]]) -> tuple[set[tuple[str, ...]], Sequence[str]]:
        """:func:`_catalog_tables` of the engine's connection, kept between queries (reading DuckDB's
        catalog costs about a millisecond, as much as a small table's exact answer) and read again
        whenever a name of ``wanted`` (casefolded name parts) is not in the kept listing: a table
        created since is always found; one dropped since is DuckDB's to refuse when the query runs."""
        if self._listing is None or any(parts not in self._listing[0] for parts in wanted):
            self._listing = _catalog_tables(self.con)
        return self._listing

    def _parquet_source(self, table: str) -> dict | None:
        """The Parquet source of the stored synopsis of ``table`` (matched as DuckDB matches names),
        None when it has none (or no synopsis); a synopsis of a dask DataFrame raises: nothing can
        run its exact answers.  Asked only for a name that is not a table of the database (a
        database table answers exact queries under its own name)."""
        name = self._synopsis_name(table)
        if name not in self._cache and name not in store.stored_tables(self.con):
            return None
        source = self._loaded(name).source
        if source and "pattern" not in source:
            raise ValueError(f"the synopsis of {name!r} was built from a dask DataFrame, which DuckDB cannot read: "
                             "exact answers need the rows in a database table or Parquet files")
        return source or None

    def _source_connection(self, table: str) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection that reads the Parquet files of ``table``'s synopsis and no
        other file (:func:`_parquet_connection`), made once per table."""
        name = self._synopsis_name(table)
        if name not in self._sources:
            self._sources[name] = _parquet_connection(name, self._loaded(name).source["files"])
        return self._sources[name]

    def _run(self, text: str, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
        """The result of ``text``, which must be one SELECT by DuckDB's own parser, run on ``con``
        (default: the database's) inside ``BEGIN TRANSACTION READ ONLY`` ... ``ROLLBACK`` (writes
        fail, nothing is kept); a file read that DuckDB refuses (external access disabled) becomes
        a ValueError."""
        con = self.con if con is None else con
        statements = con.extract_statements(text)
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise ValueError(f"the database runs one SELECT statement here, not {text!r}")
        try:
            con.execute("BEGIN TRANSACTION READ ONLY")
        except duckdb.TransactionException as err:
            raise ValueError("exact answers run in their own read-only transaction, but the connection has one "
                             "open: commit or roll it back first") from err
        try:
            started = time.perf_counter()
            frame = con.execute(statements[0]).df()
            frame.attrs["seconds"] = time.perf_counter() - started
        except duckdb.PermissionException as err:  # e.g. a view over read_csv(...)
            raise ValueError(f"the query reads a file, which this connection may not: {err}") from err
        finally:
            con.execute("ROLLBACK")
        return frame

    def _approximate(self, query: AggregateQuery, with_error: bool, z: float,
                     drop_intervals: bool = False) -> tuple[pd.DataFrame, str]:
        synopsis = self._answering(query.table)
        _check_columns(query, synopsis, categorical=True)
        # GROUP BY / IN on a categorical column outside the strata: domain estimates (parzen.aqp.domains)
        # and comparisons of two columns (parzen.aqp.row_predicates): the domain estimate's kept rows
        in_domains = bool(query.compared) or domains.needed(query, synopsis)
        if synopsis.cube is not None and synopsis.categories is not None and (
                in_domains or not answers.answered_exactly(query, synopsis)):  # exact aggregate tables (cubes.py)
            # with_error: the float64 round-off against DuckDB's own sums, as for exact totals (parzen.aqp.contract)
            exact = cube_answers.answer(query, synopsis.cube, synopsis.categories, with_error, synopsis.row_count,
                                        drop_intervals)
            if exact is not None:
                if query.group_by:
                    exact.attrs[LISTED] = "exact"
                return exact, cube_answers.FORM
        layout = self._layouts[synopsis.table]
        query = stratum_filters.to_strata(query, synopsis)  # a dimension's filter that selects whole strata
        if query.compared or query.box_compared:
            row_predicates.check_answerable(query, synopsis)
        # OR / NOT: parzen.aqp.unions, which answers each intersection with comparisons as a domain estimate
        by_domain = (query.compared and not query.boxes) or domains.needed(query, synopsis)
        approximate = domains.approximate if by_domain else answers.approximate
        # the answers at c h of the bias term, unless no kernel the answer reads has a bandwidth (its bias is 0)
        smoothed = with_error and contract.reads_bandwidths(query, synopsis)
        scaled = [contract.with_bandwidths_scaled(synopsis, c) for c in contract.BIAS_STEPS] if smoothed else []
        if smoothed and approximate is answers.approximate:  # the answer and the bias runs' box integrals in one pass
            result, form, at_scaled = answers.approximate_with_bias_runs(query, synopsis, layout, z, scaled)
        else:
            result, form = approximate(query, synopsis, layout, z if with_error else None)
        bounded = result.attrs.pop(domains.BOUNDED_GROUPS, [])  # groups whose intervals are bounds that hold
        if with_error:  # the smoothing bias's estimate widens the interval (parzen.aqp.contract)
            def in_one_pass(ss: list[Synopsis]) -> list:  # values as arrays, no DataFrames
                if approximate is domains.approximate:
                    return domains.bias_runs(query, ss, layout)
                return at_scaled if [id(s) for s in ss] == [id(s) for s in scaled] else answers.bias_runs(query, ss, layout)

            bias = None if not smoothed else contract.bias_widths(
                result, lambda s: approximate(query, s, layout, None)[0], synopsis, [a.name for a in query.aggregates],
                query.group_by, held=bounded, answers_at=in_one_pass)
            # float64 round-off against DuckDB's own sums: over the table's rows for sample answers; for exact
            # totals, over the rows of the strata added into each answer row (DuckDB sums them in another order)
            terms = synopsis.row_count if form != "totals" else _strata_rows(query, synopsis, layout, result)
            rounding = contract.rounding_widths(result, contract.summed(query.aggregates), terms, query.group_by, bounded)
            result = contract.widened(result, [bias, rounding] if bias is not None else [rounding])  # columns set once
            if form == "grid":  # the grid's exact C bounds its COUNT
                result = contract.bracket_grid_counts(result, query, synopsis)
        if synopsis.temporal:  # MIN / MAX / quantiles of dates come back as dates
            result = dates.typed_answer(result, query.aggregates, synopsis.temporal)
        return result, form

    def _resolved_histogram(self, binned: histogram.HistogramQuery) -> histogram.HistogramQuery:
        """``binned`` with its table and column names spelled as in the synopsis (:meth:`_resolved`)."""
        base = self._resolved(binned.base)
        column = next(c for c in base.ranges if c.casefold() == binned.column.casefold())
        if column in self._cache[base.table].temporal:
            raise UnsupportedQuery(f"a histogram of the {self._cache[base.table].temporal[column].upper()} column "
                                   f"{column!r} (FLOOR(col / w) of a number column only)")
        return replace(binned, base=base, column=column)

    def _histogram(self, binned: histogram.HistogramQuery, z: float | None) -> tuple[pd.DataFrame, str]:
        binned = self._resolved_histogram(binned)
        synopsis = self._answering(binned.base.table)
        _check_columns(binned.base, synopsis)
        layout = self._layouts[synopsis.table]
        result, form = histogram.answer(binned, synopsis, layout, z)
        if z is not None:  # the smoothing bias's estimate widens the interval (parzen.aqp.contract)
            result = contract.cover_bias(result, lambda s: histogram.answer(binned, s, layout, None)[0], synopsis,
                                         [a.name for a in binned.base.aggregates], [binned.label])
            result = contract.cover_rounding(result, contract.summed(binned.base.aggregates), synopsis.row_count)
        return result, form

    def _regression(self, query: AggregateQuery) -> pd.DataFrame:
        if query.compared:
            raise UnsupportedQuery(f"method='regression' under the comparison of two columns {query.compared[0]} "
                                   "(method='density' answers it)")
        synopsis = self._answering(query.table)
        _check_columns(query, synopsis)
        return answers.regression(query, synopsis)


def _selected_groups(composite: case_aggregates.Composite) -> list[str]:
    """The group columns that ``composite`` selects, named as selected, in its GROUP BY's order (the
    order its answer's rows are sorted in)."""
    selected = [item for item in composite.select if isinstance(item, str)]
    return [name for g in composite.group_by for name in selected if name.casefold() == g.casefold()]


def _checked_workload(workload, cube) -> list[str] | None:
    """``build(workload=...)`` / ``rebuild_tables(workload=...)`` checked: a list of SQL texts, not given
    with ``cube`` (None: no workload)."""
    if workload is None:
        return None
    if cube is not None:
        raise ValueError("cube= lists the exact tables and workload= chooses them for example queries: give one "
                         "of them")
    if isinstance(workload, str) or not isinstance(workload, Sequence) or \
            not all(isinstance(q, str) for q in workload):
        raise ValueError(f"workload= takes a list of SQL texts, e.g. ['SELECT a, COUNT(*) FROM t GROUP BY a'], "
                         f"got {workload!r:.200}")
    return list(workload)


def _check_cube_bytes(cube_bytes) -> None:
    """Refuse a ``cube_bytes`` (:meth:`Engine.build`, :meth:`Engine.rebuild_tables`) that is no number of bytes >= 0."""
    if cube_bytes is not None and not (isinstance(cube_bytes, (int, float, np.integer, np.floating))
                                       and 0 <= cube_bytes < math.inf):
        raise ValueError(f"cube_bytes must be a number of bytes >= 0 (0: no exact aggregate tables), got "
                         f"{cube_bytes!r}")


#: The word CASE, in any case (:func:`_composite_of`).
_CASE_WORD = re.compile(r"\bcase\b", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _composite_of(sql: str) -> case_aggregates.Composite | None:
    """The split of ``sql`` when the plain subset refuses it and its SELECT list has CASE inside
    aggregates or arithmetic of aggregates (:func:`parzen.aqp.case_aggregates.split`), else None
    (the plain subset answers it, or ``parse`` raises again with its reason).  Kept per text, as
    :func:`parzen.aqp.sql.parse` keeps its parses (a split is immutable and depends on the text only).
    A text with the word CASE is parsed once and the plain subset's verdict read from that tree
    (:func:`parzen.aqp.case_aggregates.split_refused`); any other goes through ``parse`` first (a name
    that only holds the letters, ``showcase`` or ``case_id``, is not parsed for a CASE first)."""
    if _CASE_WORD.search(sql) is not None and (tree := case_aggregates.composite_tree(sql)) is not None:
        return case_aggregates.split_refused(tree)
    try:
        parse(sql)
    except UnsupportedQuery:
        composite = case_aggregates.split(sql)
        if composite is None:
            raise
        return composite
    return None


def _build_from(source, table: str, client, options: dict) -> Synopsis:
    """The synopsis of ``source`` (Parquet files or a dask DataFrame) built on Dask workers."""
    from .._extras import require

    require("dask", "distributed", extra="dask", what="Engine.build(source=...)")
    from ..distributed.synopsis import build_partitioned, parquet_source, read_parquet_table

    if isinstance(source, (str, os.PathLike)):
        where = parquet_source(source)
        return build_partitioned(read_parquet_table(source), table, client=client, source=where, **options)
    import dask.dataframe as dd

    if not isinstance(source, dd.DataFrame):
        raise TypeError(f"source= takes Parquet files (a path or glob) or a dask DataFrame, got {type(source).__name__}")
    return build_partitioned(source, table, client=client, **options)


def _warm_up_quietly() -> None:
    """:func:`parzen.aqp.estimate.warm_up` in :meth:`Engine._loaded`'s thread: a compilation that fails there
    fails again, and raises, in :meth:`Engine._keep`'s own call."""
    with contextlib.suppress(Exception):  # raised again by _keep's own warm_up, where the caller sees it
        warm_up()


def _warm_up_frames() -> None:
    """Make one DataFrame with string column names, as every answer has: the first one in a process
    sets up pandas' string type (backed by pyarrow, about 15 ms), which the first answer would
    otherwise pay (DuckDB's exact answers too)."""
    pd.DataFrame(np.zeros((1, 1)), columns=pd.Index(["count_star()"]))


def _table_now(con, synopsis: Synopsis) -> tuple[int | None, str]:
    """The row count of the synopsis's table now (None if it was dropped) and why the synopsis is
    stale ("" if it is not): the table or a column it covers is gone, rows were appended (and
    nothing else changed), rows were deleted or updated ("rows changed"), or (same rows) the content
    fingerprint changed (:func:`parzen.aqp.changes.table_changes`: one scan); for a join synopsis, its
    fact rows (:func:`parzen.aqp.changes.fact_changes`: one scan of the fact table, the appended rows
    joined) and, if they are as it read them, its dimensions (:func:`parzen.aqp.joins.dimension_changes`:
    one scan of each).  For a synopsis of Parquet files, their rows now
    and whether files came, went or changed (:func:`parzen.distributed.synopsis.source_now`); for
    one of a dask DataFrame, (None, ""): nothing to check against."""
    if synopsis.source:
        if "pattern" not in synopsis.source:
            return None, ""
        from ..distributed.synopsis import source_now

        return source_now(synopsis.source)
    table = synopsis.table
    try:
        relation = join_synopses.ensure_view(con, table, synopsis.joins) if synopsis.joins else table
    except (ValueError, duckdb.Error) as err:  # a joined table or column gone, or a new column name clash
        return None, f"its join no longer holds ({err})"
    try:
        if synopsis.joins and synopsis.fact_fingerprint:  # the fact rows alone and each dimension once, no join
            changes: TableChanges = fact_changes(con, synopsis, relation)
        else:
            changes = table_changes(con, synopsis, relation)
    except duckdb.CatalogException:
        return None, "a joined table dropped" if synopsis.joins else "table dropped"
    except duckdb.BinderException:
        return None, "columns changed (a column it models or groups by is gone)"
    why = changes.why(synopsis)
    if synopsis.joins and changes.appended_only(synopsis) and all("fingerprint" in e for e in synopsis.joins):
        why = join_synopses.dimension_changes(con, synopsis) or why  # one scan of each dimension
    return changes.rows, why


#: The configuration of the DuckDB instance an Engine opens itself: no file access beyond the
#: database file (no ``read_csv``, ``glob``, replacement scans of file names, ATTACH, COPY, extension
#: installs), no Python variables read as tables, and the configuration locked so no query can
#: change it back (DuckDB refuses SET and RESET then).
LOCKED_DOWN = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True}


def _parquet_connection(table: str, files: list[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view, ``table``, over the Parquet ``files``, which are the only
    files it may read: ``allowed_paths`` set to them before external access is disabled and the
    configuration locked (:data:`LOCKED_DOWN`); no other file, ATTACH, COPY or setting change."""
    con = duckdb.connect(":memory:", config={"python_enable_replacements": False})
    con.execute("SET allowed_paths = ?", [list(files)])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    paths = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    con.execute(f'CREATE VIEW {quote(table)} AS SELECT * FROM read_parquet([{paths}])')
    return con


def _connect_locked_down(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(path, read_only=read_only, config=dict(LOCKED_DOWN))
    except duckdb.ConnectionException as err:
        if "different configuration" not in str(err):
            raise
        raise ValueError(f"{path} is already open in this process through another duckdb connection (DuckDB "
                         "shares one instance per file, and an Engine opens its own without file access): "
                         "close that connection first, or pass it to Engine(con)") from err


def _require_no_external_access(con: duckdb.DuckDBPyConnection) -> None:
    row = con.execute("SELECT current_setting('enable_external_access')").fetchone()
    if row is None:  # a SELECT without FROM returns one row
        raise RuntimeError("DuckDB returned no row for current_setting('enable_external_access')")
    if row[0]:
        raise ValueError(
            "exact=True runs SQL only where DuckDB cannot read files, and this Engine was given a connection with "
            "external access enabled: open it with duckdb.connect(path, config={'enable_external_access': False}) "
            "(or run SET enable_external_access = false on it, which cannot be undone), or pass the database "
            "path to Engine, which opens it so"
        )


def _names_held(synopsis: Synopsis) -> tuple[frozenset[str], dict[str, str]]:
    """The column names the synopsis answers on (modelled, group and categorical columns) and each one by
    its casefolded spelling (:meth:`Engine._resolved`), made once per synopsis and kept on it (they
    depend on its columns only, never on a query)."""
    kept = synopsis.__dict__.get("_names_held")
    if kept is None:
        has = frozenset(synopsis.models.keys() | set(synopsis.group_by)
                        | set(synopsis.categories.values if synopsis.categories else ()))
        kept = synopsis.__dict__["_names_held"] = (has, {name.casefold(): name for name in has})
    return kept


def _strata_rows(query: AggregateQuery, synopsis: Synopsis, layout: Layout, result: pd.DataFrame) -> np.ndarray:
    """Per row of ``result`` (an answer from exact totals), the table rows whose values its sum adds: those
    of the strata that enter it (:func:`parzen.aqp.contract.rounding_bound`; the table's rows where a row's
    key is not found)."""
    keys, output_of_stratum = output_groups(query, synopsis, layout)
    used = output_of_stratum >= 0
    summed = np.bincount(output_of_stratum[used], weights=np.asarray(layout.rows, dtype=np.float64)[used],
                         minlength=len(keys))
    of_key = dict(zip(keys, summed.tolist()))
    rows = zip(*(result[g].tolist() for g in query.group_by)) if query.group_by else [()] * len(result)
    return np.array([of_key.get(tuple(key), float(synopsis.row_count)) for key in rows], dtype=np.float64)


def _catalog_tables(con: duckdb.DuckDBPyConnection) -> tuple[set[tuple[str, ...]], list[str]]:
    """The names, as casefolded name parts, under which DuckDB finds the database's tables and views
    (``t`` in the current catalog and schema or a temporary one, ``schema.t``, ``catalog.t`` of a
    ``main`` schema, ``catalog.schema.t``), and their plain names for messages."""
    rows = con.execute("SELECT table_catalog, table_schema, table_name, current_database(), current_schema() "
                       "FROM information_schema.tables").fetchall()
    known: set[tuple[str, ...]] = set()
    for catalog, schema, name, database, default_schema in rows:
        catalog, schema, name = catalog.casefold(), schema.casefold(), name.casefold()
        known.add((catalog, schema, name))
        if catalog in (database.casefold(), "temp"):
            known.add((schema, name))
            if schema == default_schema.casefold():
                known.add((name,))
        if schema == "main":
            known.add((catalog, name))
    return known, sorted({row[2] for row in rows})


def _check_columns(query: AggregateQuery, synopsis: Synopsis, categorical: bool = False) -> None:
    """A clear error for a column the synopsis cannot answer on; ``categorical``: GROUP BY / IN may
    use any categorical column (:mod:`parzen.aqp.domains`), not only the strata's group columns."""
    for ranges, members in query.boxes:
        _check_columns(AggregateQuery(query.table, (), ranges, members), synopsis, categorical)
    allowed = set(synopsis.group_by)
    if categorical and synopsis.categories is not None:
        allowed |= set(synopsis.categories.values)
    for column in dict.fromkeys([*query.group_by, *query.members]):  # the first one written is named
        if column not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise UnsupportedQuery(
                f"GROUP BY / IN / = on {column!r}, which the synopsis has no categorical column for (it has: "
                f"{known}; text columns with more than {CATEGORY_LIMIT} values are not categorical): "
                f"rebuild with group_by=[{column!r}, ...]"
            )
    categorical_columns = allowed
    for column in query.ranges:
        if column not in synopsis.models and column not in categorical_columns:
            raise UnsupportedQuery(f"the synopsis of {synopsis.table!r} has no column {column!r}; "
                                   f"modelled: {', '.join(synopsis.models)} (exact=True answers it in DuckDB)")
    for a in query.aggregates:
        for column in a.inputs:
            if column not in synopsis.models and not (a.func == "count_distinct" and column in synopsis.group_by):
                raise UnsupportedQuery(f"{a.name}: the synopsis of {synopsis.table!r} models no numeric column "
                                       f"{column!r}; modelled: {', '.join(synopsis.models)} (exact=True answers it)")
