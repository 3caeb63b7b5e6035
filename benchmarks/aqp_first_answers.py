"""First answers of query texts never seen before by the process, per family, best of several rounds
(issue 19's latency target counts each query's first answer, parse included).

Each round answers every query of the workload with a new text (the query plus trailing spaces, so
that the parse and its template cache miss) and then once more (*repeated*); with ``--after-duckdb``
each first answer follows the same query run exactly in DuckDB, which leaves the CPU caches cold.
Times are the answering thread's CPU ms (``time.thread_time``: on a shared machine the wait for a
core is left out), with intervals (``with_error=True``); per family the least and the median over the
rounds and the family's queries.  Only the families answered by the exact aggregate tables are
printed (the form of the first answer).  The synopsis is read, never built::

    python benchmarks/aqp_first_answers.py /work/data/lead/tpch_sf10.duckdb tpch --rounds 10
    python benchmarks/aqp_first_answers.py /work/data/s8-datecube/ssb_sf10.duckdb ssb --rounds 3 --after-duckdb
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    from aqp_workloads import without_order
    from workload_queries import ssb, tpch_joins

    from parzen.aqp import Engine
    from parzen.aqp.cube_answers import FORM
    from parzen.aqp.sql import UnsupportedQuery

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database", help="a DuckDB file holding the workload's synopsis (opened read-only)")
    parser.add_argument("workload", choices=["tpch", "ssb"])
    parser.add_argument("--rounds", type=int, default=10, help="new texts per query (default 10)")
    parser.add_argument("--after-duckdb", action="store_true", help="run each query in DuckDB before its first answer")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    listing = [(family, without_order(sql)) for family, sql in {"tpch": tpch_joins, "ssb": ssb}[args.workload]()]
    engine = Engine(args.database, read_only=True)
    engine._loaded({"tpch": "lineitem", "ssb": "lineorder"}[args.workload])  # loaded and warmed before any query
    kept = []
    for family, sql in listing:
        try:
            if engine.query(sql, with_error=True).attrs["form"] == FORM:
                kept.append((family, sql))
        except UnsupportedQuery:
            continue
    times: dict[str, list[tuple[float, float]]] = {}
    for r in range(args.rounds):
        for family, sql in kept:
            text = sql + " " * (r + 10)
            if args.after_duckdb:
                engine.con.execute(sql).fetchall()
            started = time.thread_time()
            engine.query(text, with_error=True)
            first = time.thread_time() - started
            started = time.thread_time()
            engine.query(text, with_error=True)
            times.setdefault(family, []).append((1e3 * first, 1e3 * (time.thread_time() - started)))
    for family, pairs in times.items():
        a = np.array(pairs)
        print(f"{family:36s} first min {a[:, 0].min():5.2f} median {np.median(a[:, 0]):5.2f} | "
              f"repeated min {a[:, 1].min():5.2f} median {np.median(a[:, 1]):5.2f}")


if __name__ == "__main__":
    main()
