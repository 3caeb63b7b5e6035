"""Two checkouts of parzen compared on one workload's first answers, in alternated processes.

On a shared virtual machine the CPU's speed drifts over seconds (``_common.host_steadiness``: a fixed loop's
median was 1.1-2.0x its best within one benchmark run on session 13's host), so two codes timed in runs a
few minutes apart differ by the host's state more than by their code.  This script alternates short
processes of the two codes, ``--processes`` pairs, half of them in each order (A B, then B A), so that the
host's drifts and the position in a pair fall on both alike.  Each process opens the synopsis read-only,
answers every query once (warm-up; refused ones are left out), then ``--rounds`` times empties the per-text
caches (``aqp_workloads.forget_parses``) and answers every query (``with_error=True``): each time a first
answer, as ``aqp_workloads.py`` measures it.  Per family and code: the median over queries of each query's
median and of its best over all its first answers, and new / base.  Answers are not compared here
(``aqp_answers_identical.py`` does that)::

    cd benchmarks && python aqp_alternated.py /work/data/workloads/tpch_sf10.duckdb tpch \\
        --code new=/work/main --code base=/work/wt/b12 --processes 6 --rounds 5 --output-dir results
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine, write_results

HERE = Path(__file__).resolve().parent


def measure(database: str, workload: str, rounds: int, out: str) -> None:
    """The worker: first answers of every answered query of ``workload``, ``rounds`` times, written to
    ``out`` as JSON ``{family: [[seconds, ...] per query]}`` (run with the checkout on ``PYTHONPATH``)."""
    from aqp_workloads import forget_parses, without_order
    from workload_queries import flights, ssb, tpch_joins

    from parzen.aqp import Engine
    from parzen.aqp.sql import UnsupportedQuery

    engine = Engine(database, read_only=True)
    texts = []
    for family, sql in {"tpch": tpch_joins, "ssb": ssb, "flights": flights}[workload]():
        sql = without_order(sql)
        try:
            engine.query(sql, with_error=True)
        except UnsupportedQuery:
            continue
        texts.append((family, sql))
    seconds: list[list[float]] = [[] for _ in texts]
    for _ in range(rounds):
        forget_parses()
        for k, (_, sql) in enumerate(texts):
            started = time.perf_counter()
            engine.query(sql, with_error=True)
            seconds[k].append(time.perf_counter() - started)
    by_family: dict[str, list[list[float]]] = {}
    for (family, _), times in zip(texts, seconds):
        by_family.setdefault(family, []).append(times)
    Path(out).write_text(json.dumps(by_family))


def _run(checkout: str, database: str, workload: str, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([checkout, str(HERE)])}
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", database, workload,
                        "--rounds", str(rounds), "--out", str(out)], env=env, check=True, cwd=HERE)
        return json.loads(out.read_text())


def compare(codes: dict[str, str], database: str, workload: str, processes: int, rounds: int) -> dict:
    """Run ``processes`` pairs of workers, the first half in the codes' order, the rest reversed; pool
    each code's first answers per query."""
    names = list(codes)
    pooled: dict[str, dict[str, list[list[float]]]] = {name: {} for name in names}
    for pair in range(processes):
        for name in (names if pair < (processes + 1) // 2 else names[::-1]):
            for family, queries in _run(codes[name], database, workload, rounds).items():
                kept = pooled[name].setdefault(family, [[] for _ in queries])
                for times, new in zip(kept, queries):
                    times.extend(new)
            print(f"pair {pair + 1}/{processes}: {name} done", flush=True)
    summary = []
    for family in pooled[names[0]]:
        row = {"family": family, "queries": len(pooled[names[0]][family])}
        for name in names:
            queries = pooled[name].get(family, [])
            row[name] = {"median ms": 1e3 * statistics.median(statistics.median(q) for q in queries),
                         "best ms": 1e3 * statistics.median(min(q) for q in queries),
                         "answers": sum(len(q) for q in queries)}
        summary.append(row)
    return {"workload": workload, "database": database, "codes": codes, "processes": processes, "rounds": rounds,
            "machine": machine(), "summary": summary}


def markdown(result: dict) -> str:
    new, base = list(result["codes"])
    lines = [f"# First answers of two parzen checkouts, alternated processes: {result['workload']}", "",
             (f"Machine: {result['machine']}. Codes: " + ", ".join(f"{k} = `{v}`" for k, v in result["codes"].items())
              + f". {result['processes']} processes per code, alternated ({new} first in the first half of the pairs, "
              f"{base} first in the rest), {result['rounds']} rounds each (per-text caches emptied before each). "
              "Per family: the median over queries of each query's median and best first answer (ms)."), "",
             f"| family | queries | {new} median | {base} median | {new} / {base} | {new} best | {base} best |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in result["summary"]:
        a, b = row[new], row[base]
        lines.append(f"| {row['family']} | {row['queries']} | {a['median ms']:.2f} | {b['median ms']:.2f} "
                     f"| {a['median ms'] / b['median ms']:.3f} | {a['best ms']:.2f} | {b['best ms']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database", help="a DuckDB file holding the workload's stored synopsis (opened read-only)")
    parser.add_argument("workload", choices=["tpch", "ssb", "flights"])
    parser.add_argument("--code", action="append", default=[], metavar="NAME=CHECKOUT",
                        help="a checkout of parzen to time, twice: the first is 'new', the second 'base'")
    parser.add_argument("--processes", type=int, default=6, help="pairs of processes (default 6)")
    parser.add_argument("--rounds", type=int, default=5, help="first answers per query and process (default 5)")
    parser.add_argument("--output-dir", type=Path, default=HERE / "results")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.processes < 1:
        parser.error("--rounds and --processes must be at least 1")
    if args.worker:
        measure(args.database, args.workload, args.rounds, args.out)
        return
    if len(args.code) != 2 or not all("=" in c for c in args.code):
        parser.error("give two --code NAME=CHECKOUT (e.g. --code new=/work/main --code base=/tmp/old)")
    codes = dict(c.split("=", 1) for c in args.code)
    if len(codes) != 2:
        parser.error("the two --code names must differ")
    result = compare(codes, args.database, args.workload, args.processes, args.rounds)
    write_results(args.output_dir, f"aqp_alternated_{args.workload}", result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
