"""Latency of the AQP answer path on the SF10 join workloads, two checkouts of parzen back to back (issue 19's
target: <= 2 ms per answered query).

The query sets of :mod:`aqp_workloads` (SSB's 13 queries, the TPC-H joins and their shapes, the DBEst TPC-DS set,
ORDER BY removed as there) and, with ``--flights``, the DeepDB / DBEst flights queries, are answered by
``Engine.query(sql, with_error=True)`` from the synopses stored in the workloads' DuckDB files, opened
read-only (nothing is built).  Each checkout (``--before DIR`` and ``--after DIR``, directories holding the
``parzen`` package) runs in its own process (:func:`measure`); the synopses are loaded without the staleness
scan (which loading pays once and no query pays).  The two processes alternate ``--rounds`` times; each query
keeps its best time over rounds and ``--repeats`` repeats after one warm answer (its *warm* time: the parse
kept, as every repeated query has it) and, apart, its *first* answer's time in the process (parse included).
The machine may be shared: the best is the least disturbed; CPU time (``time.thread_time``) is given beside
the wall time.  Every answer of the two checkouts, with intervals and without, is compared cell by cell
(values, interval ends, dtypes, row order): the script says how many differ.
Writes ``aqp_latency_sf10.{json,md}`` into benchmarks/results/::

    git archive <base commit> parzen | tar -x -C /tmp/base
    nice -n 10 python benchmarks/aqp_latency_sf10.py --before /tmp/base --after . \\
        --flights /work/data/perf/flights.duckdb --note " (shared machine)"
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from _checkouts import alternated
from _common import machine, write_results

RESULTS = Path(__file__).resolve().parent / "results"
#: Workload -> (DuckDB file name, tables whose synopses answer it).
WORKLOADS = {"ssb": ("ssb_sf10.duckdb", ["lineorder"]), "tpch": ("tpch_sf10.duckdb", ["lineitem"]),
             "tpcds": ("tpcds_sf10.duckdb", ["store_sales", "web_sales"])}


def queries(data: Path, workloads: list[str], flights: str | None, pilotdb_repo: str,
            files: dict[str, str] | None = None) -> list[dict]:
    """Per query: its database (``files[workload]``, else the workload's file in ``data``), the tables whose
    synopses it reads, family and SQL."""
    import duckdb
    from aqp_workloads import without_order
    from workload_queries import dbest_tpcds, ssb, tpch_joins
    from workload_queries import flights as flights_queries

    out = []
    for workload in workloads:
        name, tables = WORKLOADS[workload]
        database = (files or {}).get(workload) or str(data / name)
        if workload == "tpcds":
            with duckdb.connect(database, read_only=True) as con:
                listed = dbest_tpcds(con, Path(pilotdb_repo), 0)
        else:
            listed = {"ssb": ssb, "tpch": tpch_joins}[workload]()
        out += [{"database": database, "tables": tables, "family": f, "sql": without_order(s)} for f, s in listed]
    if flights:
        out += [{"database": flights, "tables": ["flights"], "family": f, "sql": s} for f, s in flights_queries()]
    return out


def _cells(frame) -> list:
    return [[v if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]


def _shape(frame) -> list[str]:
    return [*map(str, frame.columns), *map(str, frame.dtypes)]


def measure(listing: list[dict], repeats: int) -> dict:
    """In this process (the parzen on ``sys.path``): per query its first answer's time, its best time over
    ``repeats`` after that (wall and CPU), and its answers' cells with and without intervals (None: refused)."""
    from parzen.aqp import Engine
    from parzen.aqp.sql import UnsupportedQuery

    engines: dict[str, Engine] = {}
    out = []
    for item in listing:
        engine = engines.get(item["database"])
        if engine is None:
            engine = engines[item["database"]] = Engine(item["database"], read_only=True)
            for table in item["tables"]:
                engine._loaded(table)  # loaded without the staleness scan: no query pays it
        sql = item["sql"]
        try:
            started, started_cpu = time.perf_counter(), time.thread_time()
            answer = engine.query(sql, with_error=True)
            first, first_cpu = time.perf_counter() - started, time.thread_time() - started_cpu
        except UnsupportedQuery:
            out.append({"ms": None, "cells": None})
            continue
        plain = engine.query(sql)
        best = cpu = math.inf
        for _ in range(repeats):
            started, started_cpu = time.perf_counter(), time.thread_time()
            engine.query(sql, with_error=True)
            best = min(best, time.perf_counter() - started)
            cpu = min(cpu, time.thread_time() - started_cpu)
        out.append({"ms": 1e3 * best, "cpu_ms": 1e3 * cpu, "first_ms": 1e3 * first, "first_cpu_ms": 1e3 * first_cpu,
                    "cells": [_shape(answer), _cells(answer), _shape(plain), _cells(plain)]})
    return {"queries": out}


def _same(a, b) -> bool:
    """Cells alike: equal, NaN with NaN, and floats bit for bit (their repr, which tells -0.0 from 0.0)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        return repr(a) == repr(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _median(values: list) -> float | None:
    return float(np.median(values)) if values else None


def compare(before: str, after: str, listing: list[dict], rounds: int, repeats: int) -> dict:
    """Both checkouts, alternating ``rounds`` times; per family the medians of the queries' best times."""
    runs = alternated(__file__, listing, RESULTS.parent / ".aqp_latency_sf10_queries.json", {"before": before, "after": after}, rounds,
                      repeats)

    def best(name: str, key: str) -> list:
        return [min((r["queries"][i][key] for r in runs[name] if r["queries"][i]["ms"] is not None), default=None)
                for i in range(len(listing))]

    times = {(name, key): best(name, key) for name in runs for key in ("ms", "cpu_ms", "first_ms", "first_cpu_ms")}
    differing = [i for i, (b, a) in enumerate(zip(runs["before"][0]["queries"], runs["after"][0]["queries"]))
                 if not _same(b["cells"], a["cells"])]
    families = list(dict.fromkeys(item["family"] for item in listing))
    rows = []
    for family in families:
        index = [i for i, item in enumerate(listing) if item["family"] == family
                 and times["before", "ms"][i] is not None and times["after", "ms"][i] is not None]
        row: dict = {"family": family, "queries": sum(item["family"] == family for item in listing),
                     "answered": len(index)}
        for name in ("before", "after"):
            for key, label in (("ms", "ms"), ("cpu_ms", "CPU ms"), ("first_ms", "first ms"),
                               ("first_cpu_ms", "first CPU ms")):
                row[f"{name} median {label}"] = _median([times[name, key][i] for i in index])
        after = np.array([times["after", "ms"][i] for i in index])
        row["after <= 2 ms"] = float(np.mean(after <= 2.0)) if index else None
        first_cpu = np.array([times["after", "first_cpu_ms"][i] for i in index])
        row["after first CPU <= 2 ms"] = float(np.mean(first_cpu <= 2.0)) if index else None
        rows.append(row)
    return {"machine": machine(), "rounds": rounds, "repeats": repeats, "queries": len(listing),
            "answers differing": len(differing),
            "differing": [{"family": listing[i]["family"], "sql": listing[i]["sql"]} for i in differing],
            "families": rows}


def _number(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def markdown(result: dict, note: str, before: str, after: str) -> str:
    lines = ["# AQP answer latency on the SF10 join workloads: `Engine.query(sql, with_error=True)`", "",
             (f"Machine: {result['machine']}{note}. Before: {before}; after: {after}. Each checkout in its own "
              f"process on the same stored synopses (opened read-only), the two alternating {result['rounds']} "
              f"times; a query's time is its best over rounds and {result['repeats']} repeats after its first "
              "answer (warm: the parse kept); *first* is its first answer in the process (parse included), best "
              "over rounds. Medians over the family's answered queries. Answers differing between the checkouts "
              f"(values, interval ends, dtypes and row order, with and without intervals): "
              f"{result['answers differing']} of {result['queries']} queries."), "",
             ("| family | answered | before median ms | after median ms | speed-up | before median CPU ms "
              "| after median CPU ms | before first ms | after first ms | before first CPU ms | after first CPU ms "
              "| after <= 2 ms | after first CPU <= 2 ms |"),
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["families"]:
        b, a = r["before median ms"], r["after median ms"]
        speed = f"{b / a:.1f}x" if a and b else "-"
        share = "-" if r["after <= 2 ms"] is None else f"{100 * r['after <= 2 ms']:.0f} %"
        first_share = "-" if r["after first CPU <= 2 ms"] is None else f"{100 * r['after first CPU <= 2 ms']:.0f} %"
        lines.append(f"| {r['family']} | {r['answered']} / {r['queries']} | {_number(b)} | {_number(a)} | {speed} "
                     f"| {_number(r['before median CPU ms'])} | {_number(r['after median CPU ms'])} "
                     f"| {_number(r['before median first ms'])} | {_number(r['after median first ms'])} "
                     f"| {_number(r['before median first CPU ms'])} | {_number(r['after median first CPU ms'])} "
                     f"| {share} | {first_share} |")
    for d in result["differing"]:
        lines.append(f"- differs: {d['family']}: `{d['sql']}`")
    lines += ["", ("Milliseconds are wall-clock (what a caller waits); CPU ms the answering thread's CPU time "
              "(`time.thread_time`), which leaves out the time spent waiting for a core on a shared machine.")]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="directory holding the parzen package timed first")
    parser.add_argument("--after", default=".", help="directory holding the parzen package timed second")
    parser.add_argument("--data", type=Path, default=Path("/work/data/workloads"),
                        help="folder of the workloads' DuckDB files with their stored synopses")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--file", action="append", default=[], metavar="WORKLOAD=PATH",
                        help="the DuckDB file of a workload instead of the one in --data (e.g. ssb=ssb_sf1.duckdb)")
    parser.add_argument("--flights", help="nycflights13 DuckDB file with the demo's synopsis "
                        "(python benchmarks/aqp_latency.py --make-flights PATH)")
    parser.add_argument("--pilotdb-repo", default="/work/data/workloads/PilotDB", help="PilotDB checkout (DBEst set)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--note", default="", help="added after the machine's name, e.g. ' (shared)'")
    parser.add_argument("--label-before", default="", help="how the results name the checkout timed first")
    parser.add_argument("--label-after", default="", help="how the results name the checkout timed second")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(json.loads(Path(args.measure).read_text()), args.repeats)))
        return
    if not args.before:
        parser.error("give --before")
    files = dict(item.split("=", 1) for item in args.file if "=" in item)
    if len(files) != len(args.file) or not set(files) <= set(WORKLOADS):
        parser.error(f"--file takes WORKLOAD=PATH, WORKLOAD one of {', '.join(WORKLOADS)}: got {args.file}")
    result = compare(args.before, args.after, queries(args.data, args.workloads, args.flights, args.pilotdb_repo, files),
                     args.rounds, args.repeats)
    result["note"] = args.note
    text = markdown(result, args.note, args.label_before or args.before, args.label_after or args.after)
    write_results(RESULTS, "aqp_latency_sf10", result, text)
    print(text)


if __name__ == "__main__":
    main()
