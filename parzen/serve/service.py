"""What ``parzen serve`` answers, without HTTP: queries, the tables' charts and brushes, as JSON-ready dicts.

One :class:`Service` per database file, opened read-only, its synopses loaded once.  Approximate
answers (a fraction of a millisecond to a few) run at once, up to :data:`APPROXIMATE_ENGINES` of
them, each on an Engine of its own that shares the loaded synopses (which never change while the
server runs) and reads the database, when it must, through a cursor of its own (a DuckDB connection
is not for threads); a request finding every engine busy past its time gets :class:`Busy`.  The
warnings of each answer are recorded per thread (:mod:`parzen.serve.captured`).  Exact answers run
in DuckDB on a small pool of cursors of the same read-only, locked-down connection
(:data:`parzen.aqp.engine.LOCKED_DOWN`), each under a timer that interrupts DuckDB at the deadline
(:class:`Timeout`), so a slow exact query neither holds up the approximate ones nor outlives its
request.  Brushes are answered by one :class:`~parzen.serve.crossfilter.Crossfilter` per table, made
(its kernel masses computed, its compiled code loaded) when the service starts.
"""

from __future__ import annotations

import inspect
import math
import queue
import threading
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from ..aqp import Engine
from ..aqp.sql import UnsupportedQuery
from .captured import captured
from .charts import Layout
from .crossfilter import Crossfilter

#: Cursors answering exact queries at once.
EXACT_CURSORS = 4
#: Engines answering approximate queries at once (the rest wait up to the request's time).
APPROXIMATE_ENGINES = 8


class BadRequest(ValueError):
    """A request whose JSON has a wrong type or value (HTTP 400)."""


class Timeout(Exception):
    """A request ran past its time (HTTP 504)."""


class Busy(Exception):
    """The engine stayed busy with other requests past this one's time (HTTP 503)."""


class Service:
    """The answers of ``parzen serve``: one read-only database and its synopses.

    Parameters
    ----------
    database : str or pathlib.Path
        A DuckDB file holding synopses (``parzen aqp build``).
    timeout : float
        Seconds a request may take: an exact query is interrupted then (:class:`Timeout`); an
        approximate one waiting that long for the engine gives :class:`Busy`.
    allow_exact : bool
        Whether ``exact`` answers (any read-only SELECT over the database's tables) are served.
    on_stale : {"warn", "error"}
        As :class:`parzen.aqp.Engine`: answers from a stale synopsis carry a warning, or are refused.

    Raises
    ------
    ValueError
        No such file, or no synopsis stored in it.
    """

    def __init__(self, database: str | Path, *, timeout: float = 10.0, allow_exact: bool = True,
                 on_stale: str = "warn") -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.allow_exact = allow_exact
        self.engine = Engine(database, read_only=True, on_stale=on_stale)
        listing = self.engine.list()  # loads and checks every synopsis now, not in a request
        if listing.empty:
            raise ValueError(f"{database} holds no synopsis: build one with `parzen aqp build {database} TABLE`")
        self.stale = {row["table"]: row["why stale"] for row in listing.to_dict("records") if row["stale"]}
        self.layouts = {table: Layout.of(self.engine.synopsis(table)) for table in listing["table"]
                        if table not in self.stale or not str(self.stale[table]).startswith("corrupt")}
        self._crossfilters = {table: Crossfilter(layout, self.engine.synopsis(table), self.engine._layouts[table],
                                                 self.engine._resolved) for table, layout in self.layouts.items()}
        for crossfilter in self._crossfilters.values():  # the kernel masses and compiled code, not in a brush
            crossfilter.warm()
        self._cursors: queue.Queue = queue.Queue()
        for _ in range(EXACT_CURSORS):
            self._cursors.put(Engine(self.engine.con.cursor(), on_stale=on_stale))
        self._engines: queue.Queue = queue.Queue()
        for _ in range(APPROXIMATE_ENGINES):
            self._engines.put(_sharing(self.engine, on_stale))
        self._passes_max_rel_error = "max_rel_error" in inspect.signature(Engine.query).parameters
        self._tables: list[dict] | None = None
        self._tables_lock = threading.Lock()

    def close(self) -> None:
        """Close the cursors and the database."""
        for pool in (self._cursors, self._engines):
            while not pool.empty():
                pool.get_nowait().con.close()
        self.engine.con.close()

    # --- requests ---------------------------------------------------------------------------

    def query(self, sql, *, exact=False, with_error=False, max_rel_error=None) -> dict:
        """The answer to ``sql`` as a JSON-ready dict.

        Parameters
        ----------
        sql : str
            One query (:meth:`parzen.aqp.Engine.query`).
        exact : bool
            Run it in DuckDB.
        with_error : bool
            Add 95 % intervals.
        max_rel_error : float, optional
            Passed to the engine where it accepts it (an answer whose interval is wider falls back to
            DuckDB); refused by an engine without it.

        Returns
        -------
        dict
            "columns", "rows", "form", "intervals" (per aggregate, [low, high] per row; null without
            ``with_error``), "latency_ms" (the engine's), "warnings".

        Raises
        ------
        ValueError, UnsupportedQuery
            A bad request or query (HTTP 400).
        Timeout, Busy
            Out of time.
        """
        if not isinstance(sql, str) or not sql.strip():
            raise ValueError('"sql" takes the query, a non-empty string')
        for name, flag in (("exact", exact), ("with_error", with_error)):
            if not isinstance(flag, bool):
                raise BadRequest(f'"{name}" takes true or false, got {flag!r}')
        options: dict = {"with_error": with_error} if not exact else {}
        if max_rel_error is not None:
            if isinstance(max_rel_error, bool) or not isinstance(max_rel_error, (int, float)) \
                    or not 0 < max_rel_error < math.inf:
                raise ValueError(f'"max_rel_error" takes a positive number, got {max_rel_error!r}')
            if not self._passes_max_rel_error:
                raise ValueError('"max_rel_error" is not supported in this version of parzen (its Engine.query '
                                 'takes no max_rel_error); leave it out')
            options["max_rel_error"] = float(max_rel_error)
        if exact:
            frame = self._exact(sql)
            caught: list[str] = []
        else:
            frame, caught = self._approximate(lambda engine: engine.query(sql, **options))
        return _answer_json(frame, with_error and not exact, caught)

    def tables(self) -> list[dict]:
        """Every table with a synopsis: rows, columns (kind, bandwidth, minimum, maximum), groups and charts.

        Returns
        -------
        list of dict
        """
        with self._tables_lock:  # the main engine's connection serves one thread at a time
            if self._tables is None:  # the synopses do not change while the server runs
                self._tables = self._list_tables()
        return self._tables

    def _list_tables(self) -> list[dict]:
        listed = []
        for table, layout in self.layouts.items():
            synopsis = self.engine.synopsis(table)
            columns = [{"name": m.name, "kind": m.kind, "bandwidth": m.bandwidth, "minimum": m.minimum,
                        "maximum": m.maximum} for m in synopsis.models.values()]
            groups = [{"name": g.column, "values": [_json_value(v) for v in g.values]} for g in layout.groups.values()]
            listed.append({"table": table, "rows": synopsis.row_count, "sample_rows": synopsis.sample_size,
                           "stale": self.stale.get(table, ""), "columns": columns, "groups": groups,
                           "charts": _json_safe(layout.as_json())})
        return listed

    def brush(self, table, filters=None, charts=None, *, exact=False) -> dict:
        """Every chart of ``table`` under ``filters`` (each without its own), from the synopsis, and
        from DuckDB beside it when ``exact``.

        The charts come from the table's :class:`~parzen.serve.crossfilter.Crossfilter` (the rows'
        kernel masses under each filter once per brush, every chart's bins from them): each chart's
        bars are those that its SQL ("sql") gets from :meth:`query`.

        Parameters
        ----------
        table : str
            A table with a synopsis.
        filters : dict, optional
            {numeric column: [lo, hi], group column: [values]} (:meth:`Layout.checked_filters`).
        charts : list of str, optional
            The charts to answer (default: all).
        exact : bool
            Also answer each chart in DuckDB, with its latency and error.

        Returns
        -------
        dict
            "charts": per chart its "column", "type", "labels", "values" (rows per bar), "curve"
            (the density curve's "x" and "y", or null), "form", "ms" (the engine's time); with
            ``exact``, "exact": {"values", "ms", "error" (sum |approx - exact| / sum exact)};
            "server_ms": the approximate answers' time in all.

        Raises
        ------
        ValueError
            An unknown table, chart or a bad filter.
        Timeout, Busy
            Out of time.
        """
        if not isinstance(table, str) or table not in self.layouts:
            raise ValueError(f"no synopsis of table {table!r} to chart; tables: {', '.join(self.layouts)}")
        if not isinstance(exact, bool):
            raise BadRequest(f'"exact" takes true or false, got {exact!r}')
        layout = self.layouts[table]
        checked = layout.checked_filters(filters)
        names = list(layout.histograms) + list(layout.groups)
        if charts is not None:
            if not isinstance(charts, list) or any(c not in names for c in charts):
                raise ValueError(f'"charts" takes a list of chart names from {", ".join(names)}, got {charts!r}')
            names = [c for c in names if c in charts]
        plans = [_plan(layout, name, checked) for name in names]
        started = time.perf_counter()
        answered, caught = self._approximate(lambda engine: self._crossfiltered(table, checked, plans))
        server_ms = 1e3 * (time.perf_counter() - started)
        if exact:
            for plan, chart in zip(plans, answered):
                started = time.perf_counter()
                truth = _aligned(plan, self._exact(plan["sql"]))
                chart["exact"] = {"values": _floats(truth), "ms": 1e3 * (time.perf_counter() - started),
                                  "error": _l1_error(np.array(chart["values"], dtype=float), truth)}
        return {"table": table, "charts": answered, "server_ms": server_ms, "warnings": caught}

    def _crossfiltered(self, table: str, filters: dict, plans: list[dict]) -> list[dict]:
        """Every chart of ``plans`` from the table's :class:`~parzen.serve.crossfilter.Crossfilter`
        (after the engine's stale-synopsis warning or refusal)."""
        self.engine._answering(table)
        answers = self._crossfilters[table].answer(filters, [plan["column"] for plan in plans])
        return [_chart_json(plan, answer) for plan, answer in zip(plans, answers)]

    # --- the engines --------------------------------------------------------------------------

    def _approximate(self, work):
        """``work(engine)`` on a free engine of the pool, with the warnings it gave."""
        try:
            engine = self._engines.get(timeout=self.timeout)
        except queue.Empty:
            raise Busy(f"every engine stayed busy with other requests for {self.timeout:g} s; try again") from None
        try:
            with captured() as caught:
                result = work(engine)
        finally:
            self._engines.put(engine)
        return result, [str(message) for message in caught]

    def _exact(self, sql: str) -> pd.DataFrame:
        """``sql`` run in DuckDB on a free cursor, interrupted at the deadline."""
        if not self.allow_exact:
            raise ValueError("this server answers from synopses only (started with --no-exact)")
        try:
            engine = self._cursors.get(timeout=self.timeout)
        except queue.Empty:
            raise Busy(f"every exact cursor stayed busy for {self.timeout:g} s; try again") from None
        timer = threading.Timer(self.timeout, engine.con.interrupt)
        timer.start()
        try:
            return engine.query(sql, exact=True)
        except duckdb.InterruptException:
            raise Timeout(f"the exact query ran past {self.timeout:g} s and was stopped") from None
        except duckdb.Error as err:  # a column or function DuckDB does not know, a type error, ...
            raise ValueError(str(err)) from None
        finally:
            timer.cancel()
            self._cursors.put(engine)


def _sharing(engine: Engine, on_stale: str) -> Engine:
    """An Engine on a new cursor of ``engine``'s connection that shares its loaded synopses, their
    strata and staleness verdicts (the same dicts: a synopsis loaded by one is there for all)."""
    sibling = Engine(engine.con.cursor(), on_stale=on_stale)
    sibling._cache, sibling._layouts, sibling._stale = engine._cache, engine._layouts, engine._stale
    return sibling


def _plan(layout: Layout, name: str, filters: dict) -> dict:
    """One chart's SQL (the query its bars answer, run in DuckDB for the exact answers) and its bars' labels."""
    if name in layout.histograms:
        chart = layout.histograms[name]
        return {"column": name, "type": "histogram", "sql": layout.histogram_sql(name, filters),
                "labels": chart.labels(), "width": chart.width, "curve_factor": chart.curve_factor,
                "first": chart.first, "count": chart.count}
    group = layout.groups[name]
    return {"column": name, "type": "groups", "sql": layout.groups_sql(name, filters), "labels": list(group.values)}


def _chart_json(plan: dict, answer: dict) -> dict:
    """One chart of a brush's answer: its bars per label of the layout, and its density curve."""
    curve = None
    if answer["masses"] is not None:
        factor, width = plan["curve_factor"], plan["width"] / plan["curve_factor"]
        curve = {"x": [float(v + width / 2) for v in answer["curve_labels"]],
                 "y": [float(v * factor) for v in answer["masses"]]}
    return {"column": plan["column"], "type": plan["type"], "sql": plan["sql"],
            "labels": _floats(plan["labels"]) if plan["type"] == "histogram" else [_json_value(v) for v in plan["labels"]],
            "values": _floats(answer["values"]), "form": answer["form"], "ms": answer["ms"], "curve": curve}


def _aligned(plan: dict, frame: pd.DataFrame) -> np.ndarray:
    """A chart's answer as one count per bar of the layout (0 for a bar the answer leaves out; a
    histogram's NULL bin and values outside the layout's bins dropped)."""
    values = np.zeros(len(plan["labels"]))
    rows = frame.to_numpy()  # [label, count] per row, by position (the answer's names differ from DuckDB's)
    if plan["type"] == "histogram":
        labels, counts = rows[:, 0].astype(np.float64), rows[:, 1].astype(np.float64)
        k = np.round(labels / plan["width"]) - plan["first"]  # NaN for the NULL bin
        kept = (k >= 0) & (k < plan["count"])
        values[k[kept].astype(np.intp)] = counts[kept]
        return values
    position = {v: k for k, v in enumerate(plan["labels"])}
    for label, count in rows:
        if label in position:
            values[position[label]] = float(count)
    return values


def _l1_error(approximate: np.ndarray, exact: np.ndarray) -> float | None:
    total = float(np.abs(exact).sum())
    return float(np.abs(approximate - exact).sum() / total) if total > 0 else None


def _floats(values) -> list:
    values = np.asarray(values, dtype=float)
    if np.isfinite(values).all():
        return values.tolist()
    return [None if not math.isfinite(v) else v for v in values.tolist()]


def _answer_json(frame: pd.DataFrame, with_error: bool, caught: list[str]) -> dict:
    """A query's answer: its columns and rows (intervals apart), what answered, and its latency."""
    columns = [str(c) for c in frame.columns]
    interval_of = {c: (f"{c} low", f"{c} high") for c in columns
                   if with_error and f"{c} low" in columns and f"{c} high" in columns}
    bounds = {b for pair in interval_of.values() for b in pair}
    shown = [c for c in columns if c not in bounds]
    rows = [[_json_value(v) for v in row] for row in frame[shown].itertuples(index=False, name=None)]
    intervals = {c: [[_json_value(lo), _json_value(hi)] for lo, hi in zip(frame[low], frame[high])]
                 for c, (low, high) in interval_of.items()} if with_error else None
    return {"columns": shown, "rows": rows, "form": frame.attrs.get("form", "exact"), "intervals": intervals,
            "latency_ms": 1e3 * float(frame.attrs.get("seconds", math.nan)), "warnings": caught}


def _json_value(value):
    """A cell as JSON: numbers (NaN and infinities as null), strings, booleans, null; anything else as text."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating, Decimal)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        return value
    return str(value)


def _json_safe(value):
    """``value`` (dicts, lists, numbers) with numpy numbers as Python's and non-finite floats as null."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return _json_value(value)


__all__ = ["BadRequest", "Busy", "Service", "Timeout", "UnsupportedQuery"]
