"""Refreshing a join synopsis (TPC-H lineitem joined with orders) after 1 % of lineitem is appended,
against rebuilding it (issue 19, items 1 and 4).

Data: a copy of the TPC-H DuckDB file ``--database`` (e.g. /work/data/workloads/tpch_sf1.duckdb
copied to /work/data/s7-joinappend/; this script writes into it).  On its first run it splits
``lineitem`` in rowid order into ``lineitem_base`` (the first 99 %) and ``lineitem_new`` (the last
1 %: the last orders' lines, whose orders are already in ``orders``: only the fact table grows, as an
incremental refresh of a join synopsis requires).

Run: ``lineitem`` is a copy of ``lineitem_base``; its join synopsis is built
(``joins={"l_orderkey": "orders.o_orderkey"}``, ``sample=--sample``, grid 2048, PLUGIN, the numeric
and date columns of :data:`COLUMNS`; the categorical columns of both tables found by the build;
kept in ``bench_join_synopsis`` and reused while it matches); ``lineitem_new`` is appended; then
``Engine(con).refresh("lineitem")`` (incremental; ``--repeats`` times, the synopsis before it stored back
each time; the time includes loading it and the change checks: one scan of lineitem joined with
orders, one of orders) and ``refresh(full=True)`` (a rebuild).  Exact parts are compared, and the
accuracy of both (and of the stale synopsis) on ``--queries`` random join queries against DuckDB exact:
COUNT(*) and SUM(l_extendedprice) over lineitem JOIN orders with a range on one column of either
table (5-50 % of its values, from DuckDB's approx_quantile), ungrouped ("join range") or grouped by
o_orderpriority ("join GROUP BY"); queries under 1 % exact selectivity are dropped.

Writes aqp_join_append.{json,md} into ``--output-dir`` (default benchmarks/results).  Usage::

    cp /work/data/workloads/tpch_sf1.duckdb /work/data/s7-joinappend/
    nice -n 10 python benchmarks/aqp_join_append.py --database /work/data/s7-joinappend/tpch_sf1.duckdb
"""

from __future__ import annotations

import argparse
import platform
import time
from importlib.metadata import version
from pathlib import Path

import _refresh_runs as refresh_runs  # benchmarks/_refresh_runs.py
import duckdb
import numpy as np
import pandas as pd
from _common import machine, write_results  # benchmarks/_common.py (the scripts run from benchmarks/)

from parzen.aqp import Engine, joins, store
from parzen.aqp.changes import table_changes
from parzen.aqp.synopsis import Synopsis

RESULTS = Path(__file__).resolve().parent / "results"
TABLE = "lineitem"
JOINS = {"l_orderkey": "orders.o_orderkey"}
COLUMNS = ["l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate", "o_totalprice", "o_orderdate"]
RANGED = ["l_quantity", "l_extendedprice", "l_discount", "o_totalprice", "o_orderdate", "l_shipdate"]
FROM = "FROM lineitem JOIN orders ON l_orderkey = o_orderkey"


def split(con, share: float) -> None:
    """lineitem_base: the first 1 - ``share`` of lineitem's rows (rowid order); lineitem_new: the rest."""
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if {"lineitem_base", "lineitem_new"} <= tables:
        return
    rows = con.execute("SELECT COUNT(*) FROM lineitem").fetchall()[0][0]
    cut = int(rows * (1 - share))
    con.execute(f"CREATE TABLE lineitem_base AS SELECT * FROM lineitem WHERE rowid < {cut} ORDER BY rowid")
    con.execute(f"CREATE TABLE lineitem_new AS SELECT * FROM lineitem WHERE rowid >= {cut} ORDER BY rowid")


def base_synopsis(con, options: dict) -> tuple[Synopsis, float]:
    """The join synopsis of ``lineitem`` as loaded and its build's seconds (kept in bench_join_synopsis)."""
    con.execute("CREATE TABLE IF NOT EXISTS bench_join_synopsis (payload BLOB, seconds DOUBLE)")
    for payload, seconds in con.execute("SELECT payload, seconds FROM bench_join_synopsis").fetchall():
        kept = Synopsis.from_bytes(bytes(payload))
        changes = table_changes(con, kept, joins.ensure_view(con, TABLE, kept.joins))
        if changes.appended_only(kept) and not changes.new_rows and kept.build_options()["columns"] == COLUMNS \
                and kept.fact_fingerprint:
            return kept, seconds
    started = time.perf_counter()
    built = Engine(con).build(TABLE, joins=JOINS, **options)
    seconds = time.perf_counter() - started
    con.execute("DELETE FROM bench_join_synopsis")
    con.execute("INSERT INTO bench_join_synopsis VALUES (?, ?)", [built.to_bytes(), seconds])
    return built, seconds


def random_join_queries(con, rng, count: int) -> list[dict]:
    """Join queries with a range on one column (5-50 % of its values); half grouped by o_orderpriority."""
    points = ", ".join(f"{p:.3f}" for p in np.linspace(0, 1, 201))
    row = con.execute(f"SELECT {', '.join(f'approx_quantile({c}, [{points}])' for c in RANGED)} {FROM}").fetchall()[0]
    quantiles = dict(zip(RANGED, row))
    out = []
    for k in range(count):
        c = RANGED[rng.integers(len(RANGED))]
        width = rng.uniform(0.05, 0.5)
        start = rng.uniform(0, 1 - width)
        low, high = quantiles[c][int(start * 200)], quantiles[c][int((start + width) * 200)]
        literal = (lambda v: f"DATE '{v}'") if c.endswith("date") else (lambda v: repr(float(v)))
        where = f"{c} BETWEEN {literal(low)} AND {literal(high)}"
        grouped = k % 2 == 1
        select = "o_orderpriority, " if grouped else ""
        tail = " GROUP BY o_orderpriority" if grouped else ""
        out.append({"family": "join GROUP BY" if grouped else "join range", "where": where,
                    "sql": f"SELECT {select}COUNT(*) AS n, SUM(l_extendedprice) AS revenue {FROM} WHERE {where}{tail}"})
    return out


def errors_of(estimate: pd.DataFrame, exact: pd.DataFrame, query: dict) -> float:
    """The median over groups and the two aggregates of the relative errors (a missed group: 100 %)."""
    if query["family"].endswith("GROUP BY"):
        merged = exact.merge(estimate, on="o_orderpriority", how="left", suffixes=("", "_est"))
        pairs = [(merged[f"{c}_est"].fillna(0.0).to_numpy(float), merged[c].to_numpy(float)) for c in ("n", "revenue")]
    else:
        pairs = [(estimate[c].to_numpy(float), exact[c].to_numpy(float)) for c in ("n", "revenue")]
    return float(np.median(np.concatenate([np.abs(e - t) / np.maximum(np.abs(t), 1e-12) for e, t in pairs])))


def join_exact_parts(refreshed: Synopsis, rebuilt: Synopsis) -> dict:
    """:func:`_refresh_runs.exact_parts` with the categorical columns' values and exact tables and the
    fingerprints compared too."""
    tables = [{t.columns: dict(zip(map(tuple, t.codes.tolist()), t.rows.tolist())) for t in s.categories.tables}
              for s in (refreshed, rebuilt)]
    shared = set(tables[0]) & set(tables[1])
    return refresh_runs.exact_parts(refreshed, rebuilt, rebuilt.totals, {
        "categorical values equal": refreshed.categories.values == rebuilt.categories.values,
        "exact tables equal": [sum(tables[0][c] == tables[1][c] for c in shared), len(shared)],
        "fingerprint equal": refreshed.fingerprint == rebuilt.fingerprint})


def run(args) -> dict:
    con = duckdb.connect(str(args.database))
    con.execute(f"SET memory_limit = '{args.memory_limit}'")
    split(con, args.share)
    con.execute("CREATE OR REPLACE TABLE lineitem AS SELECT * FROM lineitem_base ORDER BY rowid")
    options = {"sample": args.sample, "columns": COLUMNS, "seed": args.seed}
    before, build_seconds = base_synopsis(con, options)
    store.save(con, before)
    started = time.perf_counter()
    con.execute("INSERT INTO lineitem SELECT * FROM lineitem_new ORDER BY rowid")
    insert_seconds = time.perf_counter() - started
    appended = con.execute("SELECT COUNT(*) FROM lineitem_new").fetchall()[0][0]
    why_stale = Engine(con).check(TABLE)
    runs = refresh_runs.refresh_and_rebuild(con, TABLE, before, args.repeats, incremental_only=True)
    refreshed, rebuilt = runs.refreshed, runs.rebuilt

    rng = np.random.default_rng(args.seed)
    total = con.execute(f"SELECT COUNT(*) {FROM}").fetchall()[0][0]

    def selective(item: dict) -> bool:  # queries under 1 % exact selectivity are dropped
        return con.execute(f"SELECT COUNT(*) {FROM} WHERE {item['where']}").fetchall()[0][0] >= 0.01 * total

    drawn = random_join_queries(con, rng, args.queries * 2)
    queries, exact, exact_ms = refresh_runs.exact_answers(con, drawn, args.queries, selective)
    errors = {name: refresh_runs.summary(refresh_runs.accuracy(engine, queries, exact, errors_of))
              for name, engine in (("refreshed", runs.fresh), ("rebuilt", runs.full), ("stale", runs.stale))}
    return {
        "machine": machine(), "python": platform.python_version(), "duckdb": duckdb.__version__,
        "parzen": version("parzen"), "database": str(args.database), "rows before": before.row_count,
        "rows appended": appended, "orders rows": before.dimension_rows["orders"], "why stale": why_stale,
        "options": options, "categorical columns": list(before.categories.values) if before.categories else [],
        "build seconds": build_seconds, "insert seconds": insert_seconds,
        "refresh seconds": runs.refresh_seconds, "refresh note": refreshed.refreshed,
        "rebuild seconds": runs.rebuild_seconds,
        "speed-up (rebuild / best refresh)": runs.rebuild_seconds / min(runs.refresh_seconds),
        "exact parts": join_exact_parts(refreshed, rebuilt), "errors": errors, "exact median ms": float(np.median(exact_ms)),
        "queries": [q["sql"] for q in queries],
    }


def markdown(r: dict) -> str:
    parts = r["exact parts"]
    lines = [
        "# Refresh of a join synopsis (TPC-H lineitem JOIN orders) after appending 1 % of lineitem, against a rebuild",
        "",
        (f"{r['database']}: lineitem's first {r['rows before']} rows (rowid order), then its last "
        f"{r['rows appended']} appended ({100 * r['rows appended'] / r['rows before']:.2f} %; their orders are among "
        f"the {r['orders rows']} rows of orders already, so only the fact table grows).  Join synopsis: "
        f"joins={JOINS}, sample {r['options']['sample']}, grid 2048, PLUGIN, columns "
        f"{', '.join(r['options']['columns'])}; categorical columns {', '.join(r['categorical columns'])}; built in "
        f"{r['build seconds']:.1f} s before the append.  After it, `check` said: \"{r['why stale']}\"."),
        "",
        f"Machine: {r['machine']}, shared with other jobs (timings noisy); DuckDB {r['duckdb']}.",
        "",
        "| step | seconds |",
        "| --- | --- |",
        f"| INSERT of the new rows (DuckDB) | {r['insert seconds']:.2f} |",
        (f"| refresh (incremental, with its change checks: lineitem's old rows alone, orders, the appended rows joined; "
        f"{len(r['refresh seconds'])} runs: best, median) | "
        f"{min(r['refresh seconds']):.2f}, {float(np.median(r['refresh seconds'])):.2f} |"),
        f"| rebuild (`refresh(full=True)`) | {r['rebuild seconds']:.1f} |",
        f"| **speed-up, rebuild / best refresh** | **{r['speed-up (rebuild / best refresh)']:.1f}x** |",
        "",
        (f"Refresh note: \"{r['refresh note']}\".  Exact parts, refreshed against rebuilt: rows {parts['rows'][0]} / "
        f"{parts['rows'][1]}; per-column COUNTs equal: {parts['column counts equal']}; per-column SUMs within "
        f"{parts['column sums max rel. difference']:.1e} (relative); categorical values equal: "
        f"{parts['categorical values equal']}; exact tables equal: {parts['exact tables equal'][0]} of "
        f"{parts['exact tables equal'][1]}; fingerprint equal: {parts['fingerprint equal']}; C(t) at the rebuilt "
        f"grids' points within {parts['grid C(t) max abs. difference (rows)']:.3g} rows (interpolated between the "
        f"refreshed grid's points where they differ); sample rows {parts['sample rows'][0]} / "
        f"{parts['sample rows'][1]}, {parts['sampled rows in common']} in common (the same keys hash(rowid, seed))."),
        "",
        ("Accuracy against DuckDB exact (relative error per query: median over COUNT and SUM, and over groups for "
        f"GROUP BY); DuckDB's exact median {r['exact median ms']:.0f} ms:"),
        "",
        "| family | queries | refreshed median | refreshed p95 | rebuilt median | rebuilt p95 | stale median | stale p95 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += refresh_runs.accuracy_rows(r["errors"], ["join range", "join GROUP BY", "all"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, default=Path("/work/data/s7-joinappend/tpch_sf1.duckdb"),
                        help="a copy of a TPC-H DuckDB file (written: lineitem is replaced)")
    parser.add_argument("--share", type=float, default=0.01, help="lineitem's share appended")
    refresh_runs.add_run_options(parser, queries=60, results=RESULTS)
    args = parser.parse_args()
    result = run(args)
    text = markdown(result)
    write_results(args.output_dir, "aqp_join_append", result, text, indent=1, default=str)
    print(text)


if __name__ == "__main__":
    main()
