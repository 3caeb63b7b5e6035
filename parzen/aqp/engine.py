"""The AQP engine: build synopses of DuckDB tables and answer aggregate SQL from them."""

from __future__ import annotations

import functools
import math
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from . import store
from ._box import box_sums
from .build import build_synopsis, content_fingerprint, fingerprint_columns
from .estimate import _REACH, Estimate, SampleView, row_terms, warm_up, z_value
from .grid import GRID_POINTS
from .sql import AggregateQuery, Range, UnsupportedQuery, parse, read_only_sql, to_sql
from .synopsis import CorruptSynopsis, Synopsis

#: ``Engine(on_stale=...)``: what an answer from a synopsis found stale does.
ON_STALE = ("warn", "error")


class StaleSynopsisWarning(UserWarning):
    """The answer comes from a synopsis whose table changed since it was built."""


class StaleSynopsisError(ValueError):
    """``Engine(on_stale="error")`` refuses to answer from a synopsis whose table changed since it was built."""


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
    """

    def __init__(self, database, *, read_only: bool = False, on_stale: str = "warn") -> None:
        if on_stale not in ON_STALE:
            raise ValueError(f"on_stale must be 'warn' or 'error', got {on_stale!r}")
        self.on_stale = on_stale
        self._stale: dict[str, str] = {}  # table -> why its synopsis is stale, as the last check found
        if isinstance(database, duckdb.DuckDBPyConnection):
            self.con = database
        else:
            path = str(database)
            if read_only and path != ":memory:" and not Path(path).exists():
                raise ValueError(f"no database file {path!r}")
            self.con = _connect_locked_down(path, read_only)
        self._cache: dict[str, Synopsis] = {}
        self._layouts: dict[str, Layout] = {}

    # --- synopses -------------------------------------------------------------------------

    def build(self, table: str, columns=None, *, sample: int = 100_000, bandwidth="plugin", group_by=None,
              grid: int = GRID_POINTS, regression=None, seed: int = 0, progress: bool = False) -> Synopsis:
        """Read ``table`` once and store its synopsis.

        ``columns``: numeric columns to model (default: all numeric ones).  ``sample``: rows in
        the uniform sample (DuckDB's reservoir sampling).  ``bandwidth``: "plugin" (default),
        "scott", "silverman", "normal_scale", a number, or a dict column -> number; selected per
        column on <= 10 000 sampled values, rescaled to the sample size by n^(-1/5) and then to
        the n^(-1/3) rate of integrals (:func:`parzen.aqp.build.integral_factor`; numbers are
        used as given).
        ``group_by``: categorical columns for GROUP BY and IN/= predicates: the sample is then
        stratified by their groups (proportional, each group >= 1000 rows or all of it), and
        each group keeps exact totals.  ``grid``: points of the gridded form of each column
        (:mod:`parzen.aqp.grid`; 0: none), which answers one-column range queries without GROUP BY
        in microseconds.  ``regression``: pairs ``(y, x)`` of modelled numeric columns, e.g.
        ``[("arr_delay", "dep_delay")]``: a regression r(x) = E[y | x] on a 1-D sparse grid
        (:mod:`parzen.aqp.regression`, fitted on the sample; needs ``grid`` > 0), with which
        ``query(sql, method="regression")`` answers SUM/AVG(y) WHERE x in a range as
        N int r(x) f(x) dx (DBEst's answer) instead of integrating the joint density.
        """
        synopsis = build_synopsis(self.con, table, columns=columns, sample=sample, bandwidth=bandwidth,
                                  group_by=group_by, grid=grid, regression=regression, seed=seed, progress=progress)
        store.save(self.con, synopsis)
        self._keep(synopsis)
        self._stale.pop(table, None)
        return synopsis

    def refresh(self, table: str, *, progress: bool = False) -> Synopsis:
        """Rebuild ``table``'s synopsis with the options it was built with (columns, groups, requested
        sample size, bandwidth, grid, regressions, seed): on unchanged data, the same synopsis.  A
        corrupt one, or one of an older format, is rebuilt with the defaults."""
        try:
            options = self._loaded(table).build_options()
        except ValueError:
            options = {}
        return self.build(table, progress=progress, **options)

    def synopsis(self, table: str) -> Synopsis:
        """The stored synopsis of ``table``; loading it (once) checks it against the table (see the
        class's notes on staleness; answers from a stale one warn or refuse, this does neither)."""
        if table not in self._cache:
            self._loaded(table)
            self.check(table)
        return self._cache[table]

    def check(self, table: str) -> str:
        """Why the synopsis of ``table`` is stale ("" if it describes the table): its row count and
        content fingerprint against the table's now (one scan of the columns it covers).  The engine
        remembers the verdict: later answers from a stale synopsis warn or refuse (``on_stale``)."""
        return self._check(table)[1]

    def _check(self, table: str) -> tuple[int | None, str]:
        """:meth:`check`, with the table's row count now (None if it was dropped)."""
        rows, why = _table_now(self.con, self._loaded(table))
        if why:
            self._stale[table] = why
        else:
            self._stale.pop(table, None)
        return rows, why

    def _loaded(self, table: str) -> Synopsis:
        """The synopsis of ``table``, loaded (and kept) if it is not yet, without checking it."""
        if table not in self._cache:
            self._keep(store.load(self.con, table))
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
        orders, its regressions' values at their knots, and the compiled box integrals (Numba
        compiles them once per installation)."""
        self._cache[synopsis.table] = synopsis
        self._layouts[synopsis.table] = Layout.of(synopsis)
        for regression in synopsis.regressions.values():  # r at its knots, once
            regression(regression.feature_min)
        warm_up()

    def list(self) -> pd.DataFrame:
        """One row per stored synopsis: columns, rows then and now, staleness and why ("rows changed",
        "contents changed", "table dropped", "columns changed", or "corrupt: rebuild with
        engine.refresh(...)" for one that cannot be read), bytes (of the grids and regressions too),
        regressions, build time.  It checks every synopsis (:meth:`check`) and the engine remembers the
        verdicts."""
        rows = []
        for table in store.stored_tables(self.con):
            try:
                s = self._loaded(table)
            except CorruptSynopsis:
                rows.append({"table": table, "stale": True, "why stale": f"corrupt: rebuild with engine.refresh({table!r})"})
                continue
            current, why = self._check(table)
            size = s.nbytes()
            rows.append({
                "table": table, "columns": len(s.models), "group_by": ", ".join(s.group_by),
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
              method: str = "density") -> pd.DataFrame:
        """The answer to ``sql`` as a DataFrame shaped like DuckDB's (one row per group).

        ``exact=True`` runs the query in DuckDB (one read-only query over the database's tables,
        re-generated by sqlglot, without file access: :meth:`_exact`).
        ``with_error=True`` adds ``<name> low`` / ``<name> high`` columns: a normal-theory
        interval at ``confidence`` from the sample variance of the per-row kernel masses
        (finite-population corrected; stratified over groups).  It covers the sampling error,
        not the smoothing bias, and describes the plain stratified estimate, which it then returns.
        Without ``with_error``, whole-table answers from the sample are calibrated to the table's
        exact margins held by the grids (:func:`_fused_answers`).  ``df.attrs["seconds"]`` holds
        the latency and ``df.attrs["form"]`` what answered: "grid" (one range column, no GROUP BY,
        IN or intervals), "sample", "totals" (no numeric predicate), "regression" or "exact".

        ``method``: "density" (default) integrates the joint density (grid, sample or totals, as
        above); "regression" answers from a regression y ~ x built with ``build(regression=...)``:
        one range on x, no GROUP BY or IN, COUNT(*) and COUNT/SUM/AVG of x or of the y's
        regressed on x (SUM(y) = N int r(x) f(x) dx); any other query raises a ValueError saying why.
        """
        started = time.perf_counter()
        if method not in ("density", "regression"):
            raise ValueError(f"method must be 'density' or 'regression', got {method!r}")
        if exact:
            if method != "density":
                raise ValueError("exact=True runs the query in the database; it takes no method")
            result, form = self._exact(sql), "exact"
        elif method == "regression":
            if with_error:
                raise ValueError("method='regression' gives no intervals; with_error=True needs method='density'")
            result, form = self._regression(self._resolved(parse(sql))), "regression"
        else:
            result, form = self._approximate(self._resolved(parse(sql)), with_error, z_value(confidence))
        result.attrs["seconds"] = time.perf_counter() - started
        result.attrs["form"] = form
        return result

    def compare(self, sql: str, *, method: str = "density") -> pd.DataFrame:
        """Approximate (by ``method``, see :meth:`query`) beside exact: per aggregate, both values
        and the relative error.

        ``attrs["approximate_seconds"]`` and ``attrs["exact_seconds"]`` hold the latencies,
        ``attrs["form"]`` what answered (see :meth:`query`).
        """
        query = self._resolved(parse(sql))
        approx = self.query(sql, method=method)
        exact = self._run(to_sql(query))
        keys = list(query.group_by)
        merged = approx.merge(exact, on=keys, how="outer", suffixes=(" approx", " exact")) if keys else \
            approx.add_suffix(" approx").join(exact.add_suffix(" exact"))
        for a in query.aggregates:
            e = merged[f"{a.name} exact"].astype(float)
            merged[f"{a.name} rel. error"] = (merged[f"{a.name} approx"] - e).abs() / e.abs()
        merged.attrs = {"approximate_seconds": approx.attrs["seconds"], "exact_seconds": exact.attrs["seconds"],
                        "form": approx.attrs["form"]}
        return merged

    def _resolved(self, query: AggregateQuery) -> AggregateQuery:
        """``query`` with its table and column names spelled as in the synopsis.

        DuckDB matches identifiers case-insensitively, quoted or not (a table or a table's columns
        cannot hold two names that differ only in case), so ``FROM T WHERE X > 1`` reads ``t.x``;
        it names a selected column as stored, an aggregate as written, and so do the answers here.
        A name that matches as written costs a dict lookup; only the others are looked up casefolded.
        """
        table = self._synopsis_name(query.table)
        synopsis = self._cache.get(table) or self.synopsis(table)
        has = synopsis.models.keys() | set(synopsis.group_by)
        if table == query.table and query.columns <= has:
            return query
        folded = {name.casefold(): name for name in has}

        def stored(name: str) -> str:
            return name if name in has else folded.get(name.casefold(), name)

        ranges: dict[str, Range] = {}
        for column, r in query.ranges.items():
            r = replace(r, column=stored(column))
            ranges[r.column] = ranges[r.column].intersect(r) if r.column in ranges else r
        members: dict[str, frozenset] = {}
        for column, values in query.members.items():
            members[stored(column)] = members.get(stored(column), values) & values
        select = tuple(stored(item) if isinstance(item, str) else
                       replace(item, column=item.column and stored(item.column)) for item in query.select)
        return AggregateQuery(table, select, ranges, members, tuple(stored(g) for g in query.group_by))

    def _synopsis_name(self, table: str) -> str:
        """The name under which ``table``'s synopsis is kept, matched case-insensitively as DuckDB
        matches table names (``table`` itself when none matches: loading it then says so)."""
        if table in self._cache:
            return table
        folded = table.casefold()
        for names in (lambda: self._cache, lambda: store.stored_tables(self.con)):  # the database only if needed
            for name in names():
                if name.casefold() == folded:
                    return name
        return table

    def _exact(self, sql: str) -> pd.DataFrame:
        """``sql`` run in DuckDB, in two layers: :func:`read_only_sql` admits one read-only query
        over tables that exist (case-insensitively, as DuckDB resolves names) and re-generates it;
        DuckDB runs the result on a connection that cannot touch files (``enable_external_access``
        false: no ``read_csv``, no replacement scan of a file name, no ATTACH or COPY), in a
        read-only transaction (:meth:`_run`)."""
        _require_no_external_access(self.con)
        text, tables = read_only_sql(sql)
        known, names = _catalog_tables(self.con)
        missing = sorted(".".join(parts) for parts in tables if tuple(p.casefold() for p in parts) not in known)
        if missing:
            raise ValueError(f"no table {missing[0]!r} in the database; its tables: {', '.join(names)}")
        return self._run(text)

    def _run(self, text: str) -> pd.DataFrame:
        """The result of ``text``, which must be one SELECT by DuckDB's own parser, run inside
        ``BEGIN TRANSACTION READ ONLY`` ... ``ROLLBACK`` (writes fail, nothing is kept); a file
        read that DuckDB refuses (external access disabled) becomes a ValueError."""
        statements = self.con.extract_statements(text)
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise ValueError(f"the database runs one SELECT statement here, not {text!r}")
        try:
            self.con.execute("BEGIN TRANSACTION READ ONLY")
        except duckdb.TransactionException as err:
            raise ValueError("exact answers run in their own read-only transaction, but the connection has one "
                             "open: commit or roll it back first") from err
        try:
            started = time.perf_counter()
            frame = self.con.execute(statements[0]).df()
            frame.attrs["seconds"] = time.perf_counter() - started
        except duckdb.PermissionException as err:  # e.g. a view over read_csv(...)
            raise ValueError(f"the query reads a file, which this connection may not: {err}") from err
        finally:
            self.con.execute("ROLLBACK")
        return frame

    def _approximate(self, query: AggregateQuery, with_error: bool, z: float) -> tuple[pd.DataFrame, str]:
        synopsis = self._answering(query.table)
        _check_columns(query, synopsis)
        if not any(c in synopsis.models for c in query.ranges):
            form = "totals"
        elif not with_error and (grid := _grid_for(query, synopsis)) is not None:
            return _frame(query, {(): _grid_answers(query, synopsis, grid)}, False), "grid"
        else:
            form = "sample"
        layout = self._layouts[synopsis.table]
        keys, output_of_stratum = _output_groups(query, synopsis, layout)
        answers = _answers(query, synopsis, layout, output_of_stratum, len(keys), z if with_error else None)
        return _frame(query, dict(zip(keys, answers)), with_error), form

    def _regression(self, query: AggregateQuery) -> pd.DataFrame:
        synopsis = self._answering(query.table)
        _check_columns(query, synopsis)
        x = _regression_column(query, synopsis)
        (predicate,) = query.ranges.values()
        a, b = synopsis.models[x].interval(predicate)
        grid = synopsis.grids[x]
        rows, sum_x = grid.box(a, b)
        integrals = {}  # y -> (int dC, int r dC) over [a, b]
        answers = {}
        for agg in query.aggregates:
            if agg.column in (None, x):
                value = {"count": rows, "sum": sum_x, "avg": sum_x / rows if rows > 0 else math.nan}[agg.func]
            else:
                r = synopsis.regressions[(agg.column, x)]
                if agg.column not in integrals:
                    integrals[agg.column] = r.integrals(grid, a, b)
                mass, total = integrals[agg.column]
                value = {"count": r.present * mass, "sum": r.present * total,
                         "avg": total / mass if mass > 0 else math.nan}[agg.func]
            answers[agg.name] = Estimate(value)
        return _frame(query, {(): answers}, False)


def _table_now(con, synopsis: Synopsis) -> tuple[int | None, str]:
    """The row count of the synopsis's table now (None if it was dropped) and why the synopsis is
    stale ("" if it is not): the table or a column it covers is gone, the row count changed, or
    (same rows) the content fingerprint changed."""
    table = synopsis.table
    try:
        rows, fingerprint = content_fingerprint(con, table, fingerprint_columns(synopsis.models, synopsis.group_by))
    except duckdb.CatalogException:
        return None, "table dropped"
    except duckdb.BinderException:
        return None, "columns changed (a column it models or groups by is gone)"
    if rows != synopsis.row_count:
        return rows, f"rows changed: {synopsis.row_count} at build, {rows} now"
    if fingerprint != synopsis.fingerprint:
        return rows, "contents changed (same row count)"
    return rows, ""


#: The configuration of the DuckDB instance an Engine opens itself: no file access beyond the
#: database file (no ``read_csv``, ``glob``, replacement scans of file names, ATTACH, COPY, extension
#: installs), no Python variables read as tables, and the configuration locked so no query can
#: change it back (DuckDB refuses SET and RESET then).
LOCKED_DOWN = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True}


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


def _check_columns(query: AggregateQuery, synopsis: Synopsis) -> None:
    categorical = set(synopsis.group_by)
    for column in set(query.group_by) | set(query.members):
        if column not in categorical:
            raise UnsupportedQuery(
                f"GROUP BY / IN / = on {column!r}, which the synopsis has no groups for "
                f"(rebuild with group_by=[{column!r}, ...])"
            )
    for column in query.ranges:
        if column not in synopsis.models and column not in categorical:
            raise ValueError(f"the synopsis of {synopsis.table!r} has no column {column!r}; "
                             f"modelled: {', '.join(synopsis.models)}")
    for a in query.aggregates:
        if a.column is not None and a.column not in synopsis.models:
            raise ValueError(f"{a.func.upper()}({a.column}): the synopsis of {synopsis.table!r} models no numeric "
                             f"column {a.column!r}; modelled: {', '.join(synopsis.models)}")


def _regression_column(query: AggregateQuery, synopsis: Synopsis) -> str:
    """The range column x of a query that regressions y ~ x answer; a ValueError saying why not."""
    have = ", ".join(r.name for r in synopsis.regressions.values())
    if not have:
        raise ValueError(f"method='regression': the synopsis of {synopsis.table!r} has no regressions; rebuild it "
                         f"with engine.build({synopsis.table!r}, regression=[(y, x), ...])")
    why = None
    if query.group_by or query.members:
        why = "has GROUP BY or IN / = on a group column"
    elif len(query.ranges) != 1:
        why = f"has range predicates on {len(query.ranges)} columns, not one"
    elif next(iter(query.ranges)) not in synopsis.models:
        why = f"has its range on {next(iter(query.ranges))!r}, a group column"
    if why is None:
        (x,) = query.ranges
        missing = [a.column for a in query.aggregates if a.column not in (None, x)
                   and (a.column, x) not in synopsis.regressions]
        if not missing and any(on == x for _, on in synopsis.regressions):
            return x
        why = (f"aggregates {', '.join(dict.fromkeys(missing))}, which the synopsis has no regression on {x!r} for"
               if missing else f"has a range on {x!r}, which no regression is on")
    raise ValueError(f"method='regression' answers COUNT/SUM/AVG(y) WHERE one range on x, without GROUP BY or IN, "
                     f"for a regression y ~ x of the synopsis ({have}); this query {why}")


def _grid_for(query: AggregateQuery, synopsis: Synopsis):
    """The column grid that answers ``query`` alone, or None: one range column, no GROUP BY or
    IN/=, and every aggregate COUNT(*) or COUNT/SUM/AVG of that column."""
    if query.group_by or query.members or len(query.ranges) != 1:
        return None
    (column,) = query.ranges
    if column not in synopsis.grids or any(a.column not in (None, column) for a in query.aggregates):
        return None
    return synopsis.grids[column]


def _grid_answers(query: AggregateQuery, synopsis: Synopsis, grid) -> dict[str, Estimate]:
    """COUNT = C(b) - C(a), SUM = S(b) - S(a), AVG = their ratio (see :mod:`parzen.aqp.grid`)."""
    ((column, predicate),) = query.ranges.items()
    rows, total = grid.box(*synopsis.models[column].interval(predicate))
    value = {"count": rows, "sum": total, "avg": total / rows if rows > 0 else math.nan}
    return {a.name: Estimate(value[a.func]) for a in query.aggregates}


@dataclass(frozen=True)
class Layout:
    """The synopsis's sample as strata: one per group (or one for an ungrouped synopsis).

    Stratum g has ``rows[g]`` rows in the table and ``drawn[g]`` in the sample; every sampled row
    weighs rows/drawn of its stratum, and its kernels are widened by ``scale[g]`` =
    (n / n_g)^(1/5) (bandwidths were chosen for the whole sample of n rows).
    """

    keys: list[tuple]
    rows: np.ndarray
    drawn: np.ndarray
    totals: list[dict]
    stratum_of_row: np.ndarray
    row_scale: np.ndarray | None
    view: SampleView
    data: np.ndarray  # the sample as one (columns x rows) array, for :func:`box_sums`
    position: dict[str, int]  # column -> its row in ``data``
    scale_of_row: np.ndarray  # ``row_scale``, or ones
    weight: np.ndarray  # rows / drawn per stratum
    whole: np.ndarray  # zero per stratum: every stratum in answer row 0 (do not modify)

    @functools.cached_property
    def effective_rows(self) -> float:
        """Kish's effective sample size of the whole sample (Kish 1965, Survey Sampling),
        (sum_i w_i)^2 / sum_i w_i^2 = N^2 / sum_g rows_g^2 / drawn_g: the drawn rows when every
        row weighs alike, fewer when small groups were drawn more densely."""
        drawn = np.maximum(self.drawn, 1.0)
        return float(self.rows.sum() ** 2 / (self.rows * self.rows / drawn).sum())

    @classmethod
    def of(cls, synopsis: Synopsis) -> Layout:
        stratum_of_row, weight_of_row, row_scale = synopsis.strata()
        view = SampleView(synopsis.sample, weights=weight_of_row, sort_now=True)
        names = list(synopsis.sample)
        data = np.ascontiguousarray(np.stack([synopsis.sample[c] for c in names]).astype(np.float64, copy=False)) \
            if names else np.zeros((0, 0))
        position = {c: k for k, c in enumerate(names)}
        if not synopsis.groups:
            rows, drawn = np.array([float(synopsis.row_count)]), np.array([float(synopsis.sample_size)])
            return cls([()], rows, drawn, [synopsis.totals], stratum_of_row, None, view, data, position,
                       np.ones(synopsis.sample_size), rows / np.maximum(drawn, 1.0), np.zeros(1, dtype=np.intp))
        drawn = np.array([g.stop - g.start for g in synopsis.groups], dtype=np.float64)
        rows = np.array([float(g.rows) for g in synopsis.groups])
        return cls([g.key for g in synopsis.groups], rows, drawn, [g.totals for g in synopsis.groups],
                   stratum_of_row, row_scale, view, data, position, np.ascontiguousarray(row_scale, dtype=np.float64),
                   rows / np.maximum(drawn, 1.0), np.zeros(len(synopsis.groups), dtype=np.intp))


def _output_groups(query: AggregateQuery, synopsis: Synopsis, layout: Layout) -> tuple[list[tuple], np.ndarray]:
    """The answer's group keys, and for each stratum the index of its answer row (-1: filtered out)."""
    if not query.group_by and not query.members and not any(c in synopsis.group_by for c in query.ranges):
        return [()], layout.whole  # the whole table: every stratum in the one answer row
    positions = [synopsis.group_by.index(g) for g in query.group_by]
    index: dict[tuple, int] = {}
    output = np.full(len(layout.keys), -1, dtype=np.intp)
    for sid, key in enumerate(layout.keys):
        if not synopsis.groups or _key_matches(key, synopsis.group_by, query):
            output[sid] = index.setdefault(tuple(key[p] for p in positions), len(index))
    if not index and not query.group_by:  # no group passes the filters: one row of zeros, as in SQL
        index[()] = 0
    return list(index), output


def _key_matches(key: tuple, group_by: tuple, query: AggregateQuery) -> bool:
    for column, value in zip(group_by, key):
        if column in query.members and not any(_same(value, v) for v in query.members[column]):
            return False
        if column in query.ranges and (
            value is None or isinstance(value, str) or not query.ranges[column].contains(float(value))
        ):
            return False
    return True


def _same(stored, literal) -> bool:
    if isinstance(literal, str) or isinstance(stored, str):
        return str(stored) == str(literal)
    return stored is not None and float(stored) == float(literal)


def _answers(query, synopsis, layout: Layout, output_of_stratum, groups: int, z) -> list[dict[str, Estimate]]:
    """Per answer row, per aggregate: the stratified estimate (weighted sample sums).

    COUNT and SUM: sum over strata g of rows_g / drawn_g * sum of the rows' terms; AVG: the ratio
    of the SUM and COUNT(col) totals.  Interval variances add over strata:
    rows_g^2 s_g^2 / drawn_g (1 - drawn_g / rows_g), s_g^2 the terms' variance in stratum g (for
    AVG, of the linearised terms num - R den, divided by the COUNT total: delta method).
    Without numeric predicates the exact totals answer.
    """
    ranges = {c: r for c, r in query.ranges.items() if c in synopsis.models}
    if not ranges:
        members = [np.flatnonzero(output_of_stratum == g) for g in range(groups)]
        return [{a.name: _exact_total(a, [(layout.rows[s], layout.totals[s]) for s in m]) for a in query.aggregates}
                for m in members]
    if z is None:
        return _fused_answers(query, synopsis, layout, ranges, output_of_stratum, groups)
    aggregated = {a.column for a in query.aggregates if a.column is not None}
    whole = _whole_table(query, output_of_stratum)
    terms = row_terms(layout.view, synopsis.models, ranges, aggregated, row_scale=None if whole else layout.row_scale,
                      keep=lambda rows: output_of_stratum[layout.stratum_of_row[rows]] >= 0)
    stratum = layout.stratum_of_row[terms.rows]
    group = output_of_stratum[stratum]
    weight = (layout.rows / layout.drawn)[stratum]

    def total(values):
        return np.bincount(group, weights=weight * values, minlength=groups)

    def interval(estimate, values, divisor):
        if z is None:
            return [Estimate(v) for v in estimate]
        se = np.sqrt(_stratified_variance(values, stratum, group, layout, output_of_stratum, groups)) / divisor
        return [Estimate(v, v - z * e, v + z * e) for v, e in zip(estimate, se)]

    out: list[dict[str, Estimate]] = [{} for _ in range(groups)]
    for a in query.aggregates:
        if a.func == "avg":
            num, den = terms.sum_y[a.column], terms.count_y[a.column]
            num_total, den_total = total(num), total(den)
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.where(den_total > 0, num_total / den_total, np.nan)
            estimates = interval(r, num - np.nan_to_num(r)[group] * den, den_total)
        else:
            values = terms.sum_y[a.column] if a.func == "sum" else \
                terms.count if a.column is None else terms.count_y[a.column]
            estimates = interval(total(values), values, 1.0)
        for g, e in enumerate(estimates):
            out[g][a.name] = e
    return out


def _rake(n11: float, n1: float, m1: float, n: float, row_target: float, column_target: float) -> float | None:
    """Cell (1, 1) of the 2 x 2 table [[n11, n1 - n11], [m1 - n11, n - n1 - m1 + n11]] raked to the
    margins (row_target, n - row_target) and (column_target, n - column_target), or None when a
    cell is empty (then one margin calibrates).

    Raking (iterative proportional fitting; Deming and Stephan 1940) keeps the table's odds ratio
    theta = n11 n00 / (n10 n01), so the raked cell x solves x (n - R - C + x) = theta (R - x)(C - x):
    a quadratic, with one root between max(0, R + C - n) and min(R, C).
    """
    n10, n01 = n1 - n11, m1 - n11
    n00 = n - n1 - m1 + n11
    if min(n11, n10, n01, n00) <= 0.0:
        return None
    theta = n11 * n00 / (n10 * n01)
    r, c = row_target, column_target
    low, high = max(0.0, r + c - n), min(r, c)
    qa, qb, qc = 1.0 - theta, (n - r - c) + theta * (r + c), -theta * r * c
    if abs(qa) < 1e-12:
        roots = [-qc / qb] if qb != 0.0 else []
    else:
        disc = qb * qb - 4.0 * qa * qc
        if disc < 0.0:
            return None
        q = -0.5 * (qb + math.copysign(math.sqrt(disc), qb))
        roots = [q / qa] + ([qc / q] if q != 0.0 else [])
    slack = 1e-9 * max(n, 1.0)
    inside = [x for x in roots if low - slack <= x <= high + slack]
    return min(max(inside[0], low), high) if inside else None


def _shrink_to_independence(x: float, n: float, row_target: float, column_target: float, drawn: float,
                            fraction: float) -> float:
    """Cell (1, 1) of the raked 2 x 2 table (``x``, margins R = ``row_target`` and C =
    ``column_target`` of n rows) shrunk towards R C / n, the table with the same margins and no
    interaction, by as much as the sample fails to tell the two apart (empirical Bayes).

    With both margins exact, the table has one free cell.  Its share d = (x - R C / n) / n (the
    departure from independence) is estimated with variance

        s^2 = (1 - f) / (m sum_ij 1 / p_ij),

    p_ij the raked table's shares, m = ``drawn`` the (effective) sampled rows and f =
    ``fraction`` the sampled fraction of the table's rows: the variance of the cell's indicator
    left after its regression on both margins' indicators, which is what raking's calibration
    leaves (Deville and Saerndal 1992; the residual lies along the table's one free direction
    (+1, -1, -1, +1) / p_ij), i.e. the inverse Fisher information of that cell.  With a normal
    prior d ~ N(0, tau^2) and tau^2 estimated by max(0, d^2 - s^2), the posterior mean is
    (Efron and Morris 1973, JASA 68: the empirical Bayes form of Stein's rule)

        d (1 - s^2 / d^2)  when d^2 > s^2,   else 0.

    Columns whose dependence the sample shows clearly (|d| >> s) keep the raked cell; independent
    ones get R C / n, whose error is only the table's own departure from independence.  With one
    parameter the rule trades risk (simulated, d_hat ~ N(d, s^2)): its mean squared error is
    0.33 s^2 at d = 0 and at most 1.49 s^2 (near |d| = 2.5 s), against the raked cell's s^2.
    The result keeps both margins (it mixes two tables that have them).
    """
    independent = row_target * column_target / n
    cells = (x, row_target - x, column_target - x, n - row_target - column_target + x)
    if drawn <= 0.0 or min(cells) <= 0.0:
        return x
    variance = max(1.0 - fraction, 0.0) / (drawn * n * sum(1.0 / c for c in cells))
    d = (x - independent) / n
    if d * d <= variance:
        return independent
    return independent + (x - independent) * (1.0 - variance / (d * d))


def _rake_groups(inside: np.ndarray, rows: np.ndarray, target: float) -> np.ndarray:
    """Per answer group: the factor that rakes the groups x (in, out of a box) table to the
    groups' exact rows and the table's exact rows in the box (``target``).

    ``inside``: the groups' estimated rows in the box; out of it, the rest of each group's
    ``rows``.  Iterative proportional fitting (Deming and Stephan 1940) alternates the two
    margins; one group is the ratio estimator target / inside.  Each group's estimate then
    shares the correction of the sum of all groups' (independent, stratified) errors: with G
    equal groups its variance falls by about 1/G.
    """
    start = np.asarray(inside, dtype=np.float64)
    cells_in, cells_out = start.copy(), np.maximum(rows - start, 0.0)
    total = float(rows.sum())
    for _ in range(200):
        have_in, have_out = cells_in.sum(), cells_out.sum()
        if have_in <= 0.0:
            return np.ones_like(start)
        cells_in *= target / have_in
        if have_out > 0.0:
            cells_out *= max(total - target, 0.0) / have_out
        both = cells_in + cells_out
        scale = np.divide(rows, both, out=np.ones_like(both), where=both > 0)
        cells_in *= scale
        cells_out *= scale
        if abs(cells_in.sum() - target) <= 1e-12 * max(total, 1.0):
            break
    return np.divide(cells_in, start, out=np.ones_like(start), where=start > 0)


def _whole_table(query: AggregateQuery, output_of_stratum: np.ndarray) -> bool:
    """Whether ``query`` asks about the whole table (no GROUP BY, no group filtered out): its
    answer is then a KDE of all n sampled rows, whose bandwidths were chosen for n rows, so the
    strata's wider kernels ((n / n_g)^(1/5), for answers per group) would only add bias; and the
    table's exact marginals (the grids) calibrate it."""
    return not query.group_by and not query.members and bool((output_of_stratum >= 0).all())


def _fused_answers(query, synopsis, layout: Layout, ranges, output_of_stratum, groups: int) -> list[dict]:
    """The estimates of :func:`_answers` without intervals, from one compiled pass (:func:`box_sums`).

    Whole-table queries (:func:`_whole_table`) are calibrated to the table's exact margins, which
    the grids hold (Deville and Saerndal 1992, calibration estimators): c is the range column
    with the fewest sampled rows near its box [a, b]; with M = the table's rows in [a, b] and
    X = sum_i w_i P_c(x_ic) the sample's estimate of M (:meth:`SampleView.marginal`; a ratio
    estimator),

        COUNT(*) = M / X sum_i w_i p_i,   SUM(y) = M / X sum_i w_i y_i p_i  (and so on),

    whose error comes from the other predicates and from y alone: COUNT(*) of one range is M.
    With exactly two range columns the factor is the 2 x 2 table's raked cell over its sample
    value instead (:func:`_rake`: both margins), the raked cell shrunk towards the margins'
    product as far as the sample cannot tell the columns' dependence from noise
    (:func:`_shrink_to_independence`).  GROUP BY answers without IN / = filters get
    one factor per group, raking the groups' rows in c's box to M (:func:`_rake_groups`).  AVG,
    a ratio already, is unchanged.
    """
    models = synopsis.models
    whole = _whole_table(query, output_of_stratum)
    boxes = {c: models[c].interval(r) for c, r in ranges.items()}
    rake_groups = bool(query.group_by) and not query.members and bool((output_of_stratum >= 0).all())
    aggregated = list(dict.fromkeys(a.column for a in query.aggregates if a.column is not None))
    if any(b < a for a, b in boxes.values()):
        order = list(boxes)
        out = np.zeros((groups, 1 + 2 * len(aggregated)))
        inside = np.zeros(groups)
    else:
        widest = 1.0 if whole or layout.row_scale is None else float(layout.row_scale.max(initial=1.0))
        found = {c: layout.view.candidates(c, a, b, _REACH * models[c].bandwidth * widest) for c, (a, b) in boxes.items()}
        order = sorted(found, key=lambda c: found[c].size)  # the column with the fewest rows near its box first
        scale = _NO_SCALE if whole else layout.scale_of_row
        out = _box_sums(layout, models, boxes, found, order, aggregated, scale, output_of_stratum, groups)
        # the groups' (weighted) sample rows in the first column's box, for raking them
        inside = None
        if rake_groups and order[0] in synopsis.grids:
            inside = out[:, 0] if len(order) == 1 else \
                _box_sums(layout, models, boxes, found, order[:1], [], scale, output_of_stratum, groups)[:, 0]
    first = order[0]
    factor: float | np.ndarray = 1.0  # one per group when raking the groups
    if whole and first in synopsis.grids:
        # X above (one range: the sums' own sum of w p)
        sampled = out[0, 0] if len(order) == 1 else layout.view.marginal(models[first], *boxes[first])
        if sampled > 0:
            exact = synopsis.grids[first].box(*boxes[first])[0]
            factor = exact / sampled
            if len(boxes) == 2 and (second := order[1]) in synopsis.grids and out[0, 0] > 0:
                table_rows = float(layout.rows.sum())
                column_target = synopsis.grids[second].box(*boxes[second])[0]
                raked = _rake(out[0, 0], sampled, layout.view.marginal(models[second], *boxes[second]),
                              table_rows, exact, column_target)
                if raked is not None:
                    raked = _shrink_to_independence(raked, table_rows, exact, column_target, layout.effective_rows,
                                                    float(layout.drawn.sum()) / table_rows)
                    factor = raked / out[0, 0]
    elif rake_groups and first in synopsis.grids:
        if inside is None:  # summed above whenever rake_groups and order[0] in synopsis.grids
            raise RuntimeError("the groups' rows in the first column's box were not summed")
        rows = np.bincount(output_of_stratum, weights=layout.rows, minlength=groups)
        factor = _rake_groups(inside, rows, synopsis.grids[first].box(*boxes[first])[0])
    slot = {y: 1 + 2 * q for q, y in enumerate(aggregated)}
    answers: list[dict[str, Estimate]] = [{} for _ in range(groups)]
    for a in query.aggregates:
        if a.column is None:
            values = factor * out[:, 0]
        elif a.func == "count":
            values = factor * out[:, slot[a.column]]
        elif a.func == "sum":
            values = factor * out[:, slot[a.column] + 1]
        else:
            count, total = out[:, slot[a.column]], out[:, slot[a.column] + 1]
            with np.errstate(invalid="ignore", divide="ignore"):
                values = np.where(count > 0, total / count, np.nan)
        for g in range(groups):
            answers[g][a.name] = Estimate(float(values[g]))
    return answers


def _box_sums(layout: Layout, models, boxes, found, order: list[str], aggregated: list[str], scale, output_of_stratum,
              groups: int) -> np.ndarray:
    """:func:`box_sums` of the ranges on the columns ``order`` (boxes, candidate rows ``found``)."""
    return box_sums(
        found[order[0]] if len(order) == 1 else np.concatenate([found[c] for c in order]),
        np.cumsum([0] + [found[c].size for c in order]), layout.data,
        np.array([layout.position[c] for c in order], dtype=np.intp),
        np.array([boxes[c][0] for c in order]), np.array([boxes[c][1] for c in order]),
        np.array([models[c].bandwidth for c in order]),
        np.array([0.0 if models[c].lower is None else models[c].lower for c in order]),
        np.array([models[c].lower is not None for c in order]), scale, layout.stratum_of_row,
        output_of_stratum, layout.weight, groups, np.array([layout.position[y] for y in aggregated], dtype=np.intp),
        np.array([order.index(y) if y in boxes else -1 for y in aggregated], dtype=np.intp), _REACH,
        np.array([c in aggregated for c in order]), np.array([layout.view.repeats(c) for c in order]),
    )


def _stratified_variance(values, stratum, group, layout: Layout, output_of_stratum, groups: int) -> np.ndarray:
    """Per answer row: the variance of the stratified total of ``values`` (sampling without replacement)."""
    strata = len(layout.keys)
    s1 = np.bincount(stratum, weights=values, minlength=strata)  # rows outside the candidates are 0
    s2 = np.bincount(stratum, weights=values * values, minlength=strata)
    n, rows = layout.drawn, layout.rows
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n > 1, np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1), 0.0)
        contribution = rows * rows * var / n * np.maximum(0.0, 1.0 - n / rows)
    contribution = np.where((n < 2) & (n < rows), np.inf, np.nan_to_num(contribution))
    used = output_of_stratum >= 0
    return np.bincount(output_of_stratum[used], weights=contribution[used], minlength=groups)


def _exact_total(a, strata: list[tuple[float, dict]]) -> Estimate:
    rows = sum(r for r, _ in strata)
    if a.func == "count" and a.column is None:
        value = float(rows)
    else:
        count = sum(t[a.column][0] for _, t in strata)
        total = sum(t[a.column][1] for _, t in strata)
        value = {"count": float(count), "sum": total}.get(a.func, total / count if count else math.nan)
    return Estimate(value, value, value)


def _frame(query: AggregateQuery, groups: dict, with_error: bool) -> pd.DataFrame:
    """One row per group key (sorted as DuckDB's ORDER BY would, NULLs last), one column per item."""
    if not query.group_by:  # one row of floats: one array, column names made once per query shape
        ((_, answers),) = groups.items()
        aggregates = query.aggregates
        if len(aggregates) != len(query.select):
            raise ValueError("a query without GROUP BY selects aggregates only")
        values = []
        for agg in aggregates:
            e = answers[agg.name]
            values += [e.value, e.low, e.high] if with_error else [e.value]
        names = tuple(agg.name for agg in aggregates)
        return pd.DataFrame(np.array([values], dtype=np.float64), columns=_column_index(names, with_error),
                            index=_ONE_ROW, copy=False)
    keys = sorted(groups, key=lambda k: tuple((v is None, str(v) if isinstance(v, str) else v) for v in k))
    columns: dict[str, list] = {}
    for item in query.select:
        if isinstance(item, str):
            position = query.group_by.index(item)
            columns[item] = [key[position] for key in keys]
            continue
        estimates = [groups[key][item.name] for key in keys]
        columns[item.name] = [e.value for e in estimates]
        if with_error:
            columns[f"{item.name} low"] = [e.low for e in estimates]
            columns[f"{item.name} high"] = [e.high for e in estimates]
    return pd.DataFrame(columns)


_ONE_ROW = pd.RangeIndex(1)
#: :func:`box_sums`'s "every bandwidth factor is 1" (whole-table answers read no per-row factors).
_NO_SCALE = np.zeros(0)


@functools.lru_cache(maxsize=1024)
def _column_index(names: tuple[str, ...], with_error: bool) -> pd.Index:
    """The answer's column names (an Index is immutable, so answers of one query shape share it)."""
    if with_error:
        names = tuple(n for name in names for n in (name, f"{name} low", f"{name} high"))
    return pd.Index(names)
