"""What the refresh benchmarks (aqp_append.py, aqp_join_append.py) share: the timed incremental
refreshes and the rebuild of one synopsis, the queries kept with DuckDB's exact answers, the
accuracy per query family, and the exact aggregate tables of the refreshed synopsis against the
rebuilt one's."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from parzen.aqp import Engine, StaleSynopsisWarning, store
from parzen.aqp.synopsis import Synopsis


@dataclass
class Refreshes:
    """The refreshed synopsis and each refresh's seconds, the rebuilt one and its seconds, and an
    engine answering from each of the refreshed, the rebuilt and the stale (before the append) synopsis."""

    refreshed: Synopsis
    refresh_seconds: list[float]
    rebuilt: Synopsis
    rebuild_seconds: float
    engines: dict[str, Engine]


def refresh_and_rebuild(con, table: str, before: Synopsis, repeats: int, *, strict: bool = False) -> Refreshes:
    """``Engine(con).refresh(table)`` ``repeats`` times, ``before`` stored back before each (the time
    includes loading it and the change checks; ``strict``: a rebuild, which warns, raises instead),
    then ``refresh(table, full=True)`` (a rebuild with the same options); the refreshed synopsis is
    stored last."""
    refresh_seconds = []
    for _ in range(repeats):
        store.save(con, before)
        started = time.perf_counter()
        with warnings.catch_warnings():
            if strict:
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
    return Refreshes(refreshed, refresh_seconds, rebuilt, rebuild_seconds,
                     {"refreshed": fresh, "rebuilt": full, "stale": stale})


def kept_queries(con, relation: str, drawn, count: int, extra: list[dict]) -> tuple[list[dict], dict, list[float]]:
    """The first ``count`` of the ``drawn`` queries whose WHERE selects at least 1 % of the rows of
    ``relation`` (a FROM clause), then the ``extra`` ones, each with DuckDB's exact answer (by position)
    and its milliseconds."""
    total = con.execute(f"SELECT COUNT(*) {relation}").fetchall()[0][0]
    queries: list[dict] = []
    exact: dict[int, pd.DataFrame] = {}
    exact_ms: list[float] = []

    def answered(item: dict) -> None:
        started = time.perf_counter()
        exact[len(queries)] = con.execute(item["sql"]).df()
        exact_ms.append(1e3 * (time.perf_counter() - started))
        queries.append(item)

    for item in drawn:
        if con.execute(f"SELECT COUNT(*) {relation} WHERE {item['where']}").fetchall()[0][0] / total < 0.01:
            continue
        answered(item)
        if len(queries) == count:
            break
    for item in extra:
        answered(item)
    return queries, exact, exact_ms


def accuracy(engine: Engine, queries: list[dict], exact: dict[int, pd.DataFrame],
             error: Callable[[dict, pd.DataFrame, pd.DataFrame], float],
             forms: dict[str, int] | None = None) -> dict[str, list[float]]:
    """Per family, ``error(query, answer, exact answer)`` of each of ``engine``'s answers; ``forms``
    counts the answers' forms per family."""
    errors: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleSynopsisWarning)
        for k, q in enumerate(queries):
            answer = engine.query(q["sql"])
            if forms is not None:
                form = f"{q['family']}: {answer.attrs.get('form')}"
                forms[form] = forms.get(form, 0) + 1
            errors.setdefault(q["family"], []).append(error(q, answer, exact[k]))
    return errors


def summary(errors: dict[str, list[float]]) -> dict[str, dict]:
    """Per family and over all: the queries, and the median, 95th percentile and largest error."""
    out = {}
    for family, values in [*errors.items(), ("all", [v for vs in errors.values() for v in vs])]:
        out[family] = {"queries": len(values), "median": float(np.median(values)),
                       "p95": float(np.percentile(values, 95)), "max": float(np.max(values))}
    return out


def accuracy_rows(errors: dict[str, dict], families: list[str]) -> list[str]:
    """The markdown rows of the accuracy table: per family, the median and p95 of the refreshed, rebuilt
    and stale synopses' errors (families without queries left out)."""
    lines = []
    for family in families:
        if family not in errors["refreshed"]:
            continue
        cells = [f"{100 * errors[s][family][m]:.2f} %" for s in ("refreshed", "rebuilt", "stale")
                 for m in ("median", "p95")]
        lines.append(f"| {family} | {errors['refreshed'][family]['queries']} | {' | '.join(cells)} |")
    return lines


def aggregate_tables(refreshed: Synopsis, rebuilt: Synopsis) -> dict:
    """The exact aggregate tables of both: how many, how many shared ones have equal cells and rows (codes
    decoded, numeric dimensions' too), and their SUMs' largest relative difference."""
    cells = [{t.columns: {tuple(s.cube.values_with(s.categories.values)[c][k] for c, k in zip(t.columns, codes)): (n, total)
                          for codes, n, total in zip(t.codes.tolist(), t.rows.tolist(), t.sums.tolist())}
              for t in s.cube.tables} if s.cube is not None and s.categories is not None else {}
             for s in (refreshed, rebuilt)]
    both = set(cells[0]) & set(cells[1])
    sums = [(np.array(cells[0][v][key][1]), np.array(total)) for v in both for key, (_, total) in cells[1][v].items()
            if key in cells[0][v]]
    return {"aggregate tables (refreshed, rebuilt, shared)": [len(cells[0]), len(cells[1]), len(both)],
            "aggregate tables with equal cells and rows": sum(
                {k: n for k, (n, _) in cells[0][v].items()} == {k: n for k, (n, _) in cells[1][v].items()}
                for v in both),
            "numeric dimensions (refreshed, rebuilt values)": {
                c: [d.values.size, rebuilt.cube.dimensions[c].values.size if c in rebuilt.cube.dimensions else None]
                for c, d in refreshed.cube.dimensions.items()} if refreshed.cube and rebuilt.cube else {},
            "aggregate tables on numeric dimensions (refreshed)": sum(
                any(c in refreshed.cube.dimensions for c in t.columns) for t in refreshed.cube.tables)
            if refreshed.cube else 0,
            "aggregate table sums max rel. difference": max(
                (float(np.nanmax(np.abs(a - b) / np.maximum(np.abs(b), 1e-300), initial=0.0)) for a, b in sums),
                default=0.0)}


def in_filters(rng, filters: dict[str, list[str]]) -> str:
    """A WHERE of IN filters on one or two of the ``filters``' columns, each with 1 to all but one of its values."""
    names, parts = list(filters), []
    for k in rng.choice(len(names), size=int(rng.integers(1, 3)), replace=False):
        values = filters[names[k]]
        picked = sorted(rng.choice(values, size=int(rng.integers(1, len(values))), replace=False))
        parts.append(f"{names[k]} IN ({', '.join(repr(str(v)) for v in picked)})")
    return " AND ".join(parts)


def kept_or_built(con, table: str, kept: Callable[[bytes], Synopsis | None],
                  build: Callable[[], Synopsis]) -> tuple[Synopsis, float]:
    """The synopsis stored in ``table`` (payload, seconds: a former run's) that ``kept`` accepts (the
    synopsis, or None) and its build's seconds; else ``build()``, timed and stored there."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {table} (payload BLOB, seconds DOUBLE)")
    for payload, seconds in con.execute(f"SELECT payload, seconds FROM {table}").fetchall():
        synopsis = kept(bytes(payload))
        if synopsis is not None:
            return synopsis, seconds
    started = time.perf_counter()
    built = build()
    seconds = time.perf_counter() - started
    con.execute(f"DELETE FROM {table}")
    con.execute(f"INSERT INTO {table} VALUES (?, ?)", [built.to_bytes(), seconds])
    return built, seconds
