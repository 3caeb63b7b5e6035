"""What the refresh benchmarks (aqp_append.py, aqp_join_append.py) share: the incremental refresh
timed against a rebuild, the exact parts of the two synopses compared, the exact answers of the
drawn queries, and the synopses' errors on them summarised per family."""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from parzen.aqp import Engine, StaleSynopsisWarning, store
from parzen.aqp.synopsis import Synopsis


@dataclass
class RefreshRuns:
    """The synopsis refreshed and rebuilt after an append, their times, and an engine answering from
    each, and from the synopsis before the append (``stale``)."""

    refreshed: Synopsis
    refresh_seconds: list[float]
    rebuilt: Synopsis
    rebuild_seconds: float
    fresh: Engine
    full: Engine
    stale: Engine


def add_run_options(parser: argparse.ArgumentParser, *, queries: int, results: Path) -> None:
    """The options both scripts take: the synopsis's sample and seed, the queries drawn, the refresh's
    repeats, DuckDB's memory limit and the output folder (default ``results``)."""
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=queries)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's memory_limit")
    parser.add_argument("--output-dir", type=Path, default=results)


def refresh_and_rebuild(con, table: str, before: Synopsis, repeats: int, *, incremental_only: bool = False) -> RefreshRuns:
    """``Engine(con).refresh(table)`` ``repeats`` times, ``before`` stored back before each (each time
    includes loading it); then ``refresh(table, full=True)``, timed once; ``incremental_only``: a
    refresh that rebuilds (and so warns) raises instead."""
    refresh_seconds = []
    for _ in range(repeats):
        store.save(con, before)
        started = time.perf_counter()
        with warnings.catch_warnings():
            if incremental_only:
                warnings.simplefilter("error")  # an incremental refresh: a rebuild would warn
            refreshed = Engine(con).refresh(table)
        refresh_seconds.append(time.perf_counter() - started)
    stale = Engine(con)
    stale._keep(before)  # answers from the synopsis before the append (no check: no staleness verdict)
    started = time.perf_counter()
    rebuilt = Engine(con).refresh(table, full=True)
    rebuild_seconds = time.perf_counter() - started
    store.save(con, refreshed)
    fresh, full = Engine(con), Engine(con)
    fresh._keep(refreshed)
    full._keep(rebuilt)
    return RefreshRuns(refreshed, refresh_seconds, rebuilt, rebuild_seconds, fresh, full, stale)


def exact_parts(refreshed: Synopsis, rebuilt: Synopsis, columns: Iterable[str], between: dict) -> dict:
    """The exact parts of the two synopses compared: rows, the ``columns``' COUNTs and SUMs, then
    ``between`` (the script's own comparisons), the samples' rows and keys in common, and C(t) of
    the refreshed grids at the rebuilt grids' points."""
    columns = list(columns)
    return {
        "rows": [refreshed.row_count, rebuilt.row_count],
        "column counts equal": all(refreshed.totals[c][0] == rebuilt.totals[c][0] for c in columns),
        "column sums max rel. difference": max(abs(refreshed.totals[c][1] - rebuilt.totals[c][1])
                                               / max(abs(rebuilt.totals[c][1]), 1e-300) for c in columns),
        **between,
        "sample rows": [refreshed.sample_size, rebuilt.sample_size],
        "sampled rows in common": int(np.intersect1d(refreshed.sample_keys, rebuilt.sample_keys).size),
        "grid C(t) max abs. difference (rows)": max(
            float(np.max(np.abs(np.array([refreshed.grids[c].cumulative(t)[0] for t in rebuilt.grids[c].points])
                                - rebuilt.grids[c].count))) for c in rebuilt.grids if not rebuilt.grids[c].steps),
    }


def exact_answers(con, drawn: Iterable[dict], count: int, kept: Callable[[dict], bool]
                  ) -> tuple[list[dict], dict[int, pd.DataFrame], list[float]]:
    """The first ``count`` of the ``drawn`` queries that ``kept`` admits, DuckDB's answer to each (by
    position) and each answer's milliseconds."""
    queries: list[dict] = []
    exact: dict[int, pd.DataFrame] = {}
    exact_ms: list[float] = []
    for item in drawn:
        if not kept(item):
            continue
        started = time.perf_counter()
        exact[len(queries)] = con.execute(item["sql"]).df()
        exact_ms.append(1e3 * (time.perf_counter() - started))
        queries.append(item)
        if len(queries) == count:
            break
    return queries, exact, exact_ms


def accuracy(engine: Engine, queries: list[dict], exact: dict[int, pd.DataFrame],
             error_of: Callable[[pd.DataFrame, pd.DataFrame, dict], float]) -> dict[str, list[float]]:
    """Per family, each query's error ``error_of(estimate, exact, query)`` of ``engine``'s answer (the
    stale synopsis's warnings silenced)."""
    errors: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleSynopsisWarning)
        for k, q in enumerate(queries):
            errors.setdefault(q["family"], []).append(error_of(engine.query(q["sql"]), exact[k], q))
    return errors


def summary(errors: dict[str, list[float]]) -> dict[str, dict]:
    """Per family and over all: the queries, and the median, 95th percentile and largest error."""
    out = {}
    for family, values in [*errors.items(), ("all", [v for vs in errors.values() for v in vs])]:
        out[family] = {"queries": len(values), "median": float(np.median(values)),
                       "p95": float(np.percentile(values, 95)), "max": float(np.max(values))}
    return out


def accuracy_rows(errors: dict[str, dict], families: Iterable[str]) -> list[str]:
    """The markdown rows of the accuracy table: per family that was drawn, its queries and the refreshed,
    rebuilt and stale synopses' median and 95th percentile errors in percent."""
    rows = []
    for family in families:
        if family not in errors["refreshed"]:
            continue
        cells = [f"{100 * errors[s][family][m]:.2f} %" for s in ("refreshed", "rebuilt", "stale") for m in ("median", "p95")]
        rows.append(f"| {family} | {errors['refreshed'][family]['queries']} | {' | '.join(cells)} |")
    return rows
