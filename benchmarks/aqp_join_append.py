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
o_orderpriority ("join GROUP BY"); queries under 1 % exact selectivity are dropped; and half as many
with IN filters on one or two categorical columns of either table, grouped by o_orderpriority ("join
categorical GROUP BY": answered from the exact aggregate tables where one covers them, which the
refresh adds the new rows into).  The answers' forms are counted.

``--grow-orders``: the dimension grows too.  ``orders`` before the append lacks ``orders_new``, the
orders that only lineitem_new's rows name (from ``orders_all``, TPC-H's orders), which are appended to
it with them (:mod:`parzen.aqp.dimension_appends`).

Writes aqp_join_append.{json,md} (aqp_join_append_orders.{json,md} with ``--grow-orders``) into
``--output-dir`` (default benchmarks/results).  Usage::

    cp /work/data/workloads/tpch_sf1.duckdb /work/data/s8-refresh/
    nice -n 10 python benchmarks/aqp_join_append.py --database /work/data/s8-refresh/tpch_sf1.duckdb
    nice -n 10 python benchmarks/aqp_join_append.py --database /work/data/s8-refresh/tpch_sf1.duckdb --grow-orders
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from importlib.metadata import version
from pathlib import Path

import _refresh  # benchmarks/_refresh.py: what the refresh benchmarks share
import duckdb
import numpy as np
import pandas as pd
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)

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


def orders_as_before(con, grow: bool) -> None:
    """``orders`` as it was before the append: all of TPC-H's (kept in ``orders_all``), or with
    ``grow`` without ``orders_new``, the orders that only lineitem_new's rows name (appended with them)."""
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "orders_all" not in tables:
        con.execute("CREATE TABLE orders_all AS SELECT * FROM orders ORDER BY rowid")
    if "orders_new" not in tables:
        con.execute("CREATE TABLE orders_new AS SELECT * FROM orders_all WHERE o_orderkey IN "
                    "(SELECT l_orderkey FROM lineitem_new EXCEPT SELECT l_orderkey FROM lineitem_base) ORDER BY rowid")
    kept = "WHERE o_orderkey NOT IN (SELECT o_orderkey FROM orders_new) " if grow else ""
    con.execute(f"CREATE OR REPLACE TABLE orders AS SELECT * FROM orders_all {kept}ORDER BY rowid")


def base_synopsis(con, options: dict) -> tuple[Synopsis, float]:
    """The join synopsis of ``lineitem`` as loaded and its build's seconds (kept in bench_join_synopsis)."""
    def kept(payload: bytes) -> Synopsis | None:
        synopsis = Synopsis.from_bytes(payload)
        changes = table_changes(con, synopsis, joins.ensure_view(con, TABLE, synopsis.joins))
        usable = changes.appended_only(synopsis) and not changes.new_rows \
            and synopsis.build_options()["columns"] == COLUMNS and synopsis.fact_fingerprint \
            and not joins.dimension_changes(con, synopsis)
        return synopsis if usable else None

    return _refresh.kept_or_built(con, "bench_join_synopsis", kept, lambda: Engine(con).build(TABLE, joins=JOINS, **options))


#: Categorical filters of the "join categorical" family (answered from the exact tables when one covers them).
FILTERS = {"l_shipmode": ["AIR", "MAIL", "SHIP", "RAIL", "TRUCK", "FOB", "REG AIR"], "l_returnflag": ["A", "N", "R"],
           "o_orderstatus": ["F", "O", "P"], "l_linestatus": ["F", "O"]}


def categorical_queries(rng, count: int) -> list[dict]:
    """COUNT(*) and SUM(l_extendedprice) by o_orderpriority under IN filters on one or two categorical columns."""
    out = []
    for _ in range(count):
        where = _refresh.in_filters(rng, FILTERS)
        out.append({"family": "join categorical GROUP BY", "where": where,
                    "sql": f"SELECT o_orderpriority, COUNT(*) AS n, SUM(l_extendedprice) AS revenue {FROM} "
                           f"WHERE {where} GROUP BY o_orderpriority"})
    return out


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


def errors_of(estimate: pd.DataFrame, exact: pd.DataFrame, grouped: bool) -> float:
    """The median over groups and the two aggregates of the relative errors (a missed group: 100 %)."""
    if grouped:
        merged = exact.merge(estimate, on="o_orderpriority", how="left", suffixes=("", "_est"))
        pairs = [(merged[f"{c}_est"].fillna(0.0).to_numpy(float), merged[c].to_numpy(float)) for c in ("n", "revenue")]
    else:
        pairs = [(estimate[c].to_numpy(float), exact[c].to_numpy(float)) for c in ("n", "revenue")]
    return float(np.median(np.concatenate([np.abs(e - t) / np.maximum(np.abs(t), 1e-12) for e, t in pairs])))


def query_error(query: dict, estimate: pd.DataFrame, exact: pd.DataFrame) -> float:
    """:func:`errors_of` for one of the queries (grouped: the GROUP BY families)."""
    return errors_of(estimate, exact, query["family"].endswith("GROUP BY"))


def exact_parts(refreshed: Synopsis, rebuilt: Synopsis) -> dict:
    tables = [{t.columns: dict(zip(map(tuple, t.codes.tolist()), t.rows.tolist())) for t in s.categories.tables}
              for s in (refreshed, rebuilt)]
    shared = set(tables[0]) & set(tables[1])
    return {
        **_refresh.aggregate_tables(refreshed, rebuilt),
        "aggregate dependencies equal": (set(refreshed.cube.dependencies) == set(rebuilt.cube.dependencies))
        if refreshed.cube is not None and rebuilt.cube is not None else None,
        "rows": [refreshed.row_count, rebuilt.row_count],
        "column counts equal": all(refreshed.totals[c][0] == rebuilt.totals[c][0] for c in rebuilt.totals),
        "column sums max rel. difference": max(abs(refreshed.totals[c][1] - rebuilt.totals[c][1])
                                               / max(abs(rebuilt.totals[c][1]), 1e-300) for c in rebuilt.totals),
        "categorical values equal": refreshed.categories.values == rebuilt.categories.values,
        "exact tables equal": [sum(tables[0][c] == tables[1][c] for c in shared), len(shared)],
        "fingerprint equal": refreshed.fingerprint == rebuilt.fingerprint,
        "sample rows": [refreshed.sample_size, rebuilt.sample_size],
        "sampled rows in common": int(np.intersect1d(refreshed.sample_keys, rebuilt.sample_keys).size),
        "grid C(t) max abs. difference (rows)": max(
            float(np.max(np.abs(np.array([refreshed.grids[c].cumulative(t)[0] for t in rebuilt.grids[c].points])
                                - rebuilt.grids[c].count))) for c in rebuilt.grids if not rebuilt.grids[c].steps),
    }


def run(args) -> dict:
    con = duckdb.connect(str(args.database))
    con.execute(f"SET memory_limit = '{args.memory_limit}'")
    split(con, args.share)
    orders_as_before(con, args.grow_orders)
    con.execute("CREATE OR REPLACE TABLE lineitem AS SELECT * FROM lineitem_base ORDER BY rowid")
    options = {"sample": args.sample, "columns": COLUMNS, "seed": args.seed}
    before, build_seconds = base_synopsis(con, options)
    store.save(con, before)
    started = time.perf_counter()
    if args.grow_orders:
        con.execute("INSERT INTO orders SELECT * FROM orders_new ORDER BY rowid")
    con.execute("INSERT INTO lineitem SELECT * FROM lineitem_new ORDER BY rowid")
    insert_seconds = time.perf_counter() - started
    appended = con.execute("SELECT COUNT(*) FROM lineitem_new").fetchall()[0][0]
    orders_appended = con.execute("SELECT COUNT(*) FROM orders_new").fetchall()[0][0] if args.grow_orders else 0
    why_stale = Engine(con).check(TABLE)
    runs = _refresh.refresh_and_rebuild(con, TABLE, before, args.repeats, strict=True)
    refreshed, rebuilt, refresh_seconds = runs.refreshed, runs.rebuilt, runs.refresh_seconds

    rng = np.random.default_rng(args.seed)
    drawn = random_join_queries(con, rng, args.queries * 2)
    queries, exact, exact_ms = _refresh.kept_queries(con, FROM, drawn, args.queries, categorical_queries(rng, args.queries // 2))
    forms: dict[str, dict[str, int]] = {name: {} for name in runs.engines}
    errors = {name: _refresh.summary(_refresh.accuracy(engine, queries, exact, query_error, forms[name]))
              for name, engine in runs.engines.items()}
    return {
        "machine": machine(), "python": platform.python_version(), "duckdb": duckdb.__version__,
        "parzen": version("parzen"), "database": str(args.database), "rows before": before.row_count,
        "rows appended": appended, "orders rows": before.dimension_rows["orders"], "why stale": why_stale,
        "orders appended": orders_appended, "forms": forms, "load average": list(os.getloadavg()),
        "options": options, "categorical columns": list(before.categories.values) if before.categories else [],
        "build seconds": build_seconds, "insert seconds": insert_seconds, "refresh seconds": refresh_seconds,
        "refresh note": refreshed.refreshed, "rebuild seconds": runs.rebuild_seconds,
        "speed-up (rebuild / best refresh)": runs.rebuild_seconds / min(refresh_seconds),
        "exact parts": exact_parts(refreshed, rebuilt), "errors": errors, "exact median ms": float(np.median(exact_ms)),
        "queries": [q["sql"] for q in queries],
    }


def markdown(r: dict) -> str:
    parts = r["exact parts"]
    grown = r["orders appended"]
    where = (f"{grown} new orders, those only they name, are appended to orders with them (before: {r['orders rows']} "
             "rows): the fact table and the dimension grow") if grown else \
        f"their orders are among the {r['orders rows']} rows of orders already, so only the fact table grows"
    title = "appending 1 % of lineitem and its new orders" if grown else "appending 1 % of lineitem"
    lines = [
        f"# Refresh of a join synopsis (TPC-H lineitem JOIN orders) after {title}, against a rebuild",
        "",
        (f"{r['database']}: lineitem's first {r['rows before']} rows (rowid order), then its last "
        f"{r['rows appended']} appended ({100 * r['rows appended'] / r['rows before']:.2f} %; {where}).  Join synopsis: "
        f"joins={JOINS}, sample {r['options']['sample']}, grid 2048, PLUGIN, columns "
        f"{', '.join(r['options']['columns'])}; categorical columns {', '.join(r['categorical columns'])}; built in "
        f"{r['build seconds']:.1f} s before the append.  After it, `check` said: \"{r['why stale']}\"."),
        "",
        (f"Machine: {r['machine']}, shared with other jobs (timings noisy; load average at the end "
         f"{', '.join(f'{v:.1f}' for v in r['load average'])}); DuckDB {r['duckdb']}."),
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
        f"{parts['sample rows'][1]}, {parts['sampled rows in common']} in common (the same keys hash(rowid, seed)).  "
        f"Exact aggregate tables (refreshed, rebuilt, shared): "
        f"{', '.join(map(str, parts['aggregate tables (refreshed, rebuilt, shared)']))}; shared tables with equal "
        f"cells and rows: {parts['aggregate tables with equal cells and rows']}; their SUMs within "
        f"{parts['aggregate table sums max rel. difference']:.1e} (relative); dependencies equal: "
        f"{parts['aggregate dependencies equal']}; tables grouping by numeric dimensions (refreshed): "
        f"{parts.get('aggregate tables on numeric dimensions (refreshed)', 0)}, the dimensions' values (refreshed, "
        f"rebuilt): " + (", ".join(f"{c} {a} / {b}" for c, (a, b) in
                                   parts.get("numeric dimensions (refreshed, rebuilt values)", {}).items()) or "none")
        + "."),
        "",
        ("Accuracy against DuckDB exact (relative error per query: median over COUNT and SUM, and over groups for "
        f"GROUP BY); DuckDB's exact median {r['exact median ms']:.0f} ms:"),
        "",
        "| family | queries | refreshed median | refreshed p95 | rebuilt median | rebuilt p95 | stale median | stale p95 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += _refresh.accuracy_rows(r["errors"], ["join range", "join GROUP BY", "join categorical GROUP BY", "all"])
    lines += ["", "Answers' forms (family: form, queries): " + "; ".join(
        f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["forms"][name].items())) for name in r["forms"]) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, default=Path("/work/data/s8-refresh/tpch_sf1.duckdb"),
                        help="a copy of a TPC-H DuckDB file (written: lineitem is replaced)")
    parser.add_argument("--share", type=float, default=0.01, help="lineitem's share appended")
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's memory_limit")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--grow-orders", action="store_true",
                        help="append the new lines' own orders to orders with them (a dimension append)")
    args = parser.parse_args()
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    name = "aqp_join_append_orders" if args.grow_orders else "aqp_join_append"
    (args.output_dir / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
    text = markdown(result)
    (args.output_dir / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
