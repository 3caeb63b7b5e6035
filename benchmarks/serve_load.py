"""A bounded load test of ``parzen serve`` (issue 22): 50 concurrent clients x 200 requests each against
a real uvicorn process on localhost, serving nycflights13 (the demo's database and synopsis, built if
missing).

Each client sends its requests one after another, cycling through a mix: the demo's 12 queries
(``parzen.aqp.demo.QUERIES``) answered from the synopsis, 2 of them with intervals, a histogram
query, a brush of the flights page (8 charts) and ``GET /tables`` (:func:`parzen.serve.load.run_load`).
Latencies are the clients' wall-clock times (queueing behind the other 49 clients included).  Writes
serve_load.{json,md} into benchmarks/results/.

    python benchmarks/serve_load.py [--clients 50] [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "results"
CHARTS = ["dep_time", "dep_delay", "arr_time", "arr_delay", "air_time", "distance", "carrier", "origin"]


def mix() -> list[tuple[str, str, dict | None]]:
    from parzen.aqp.demo import QUERIES

    requests: list[tuple[str, str, dict | None]] = [("POST", "/query", {"sql": sql}) for sql in QUERIES]
    requests += [("POST", "/query", {"sql": QUERIES[k], "with_error": True}) for k in (1, 8)]
    requests.append(("POST", "/query", {"sql": "SELECT FLOOR(distance / 100) * 100 AS bin, COUNT(*) AS n "
                                               "FROM flights WHERE dep_delay > 10 GROUP BY bin"}))
    requests.append(("POST", "/brush", {"table": "flights", "charts": CHARTS,
                                        "filters": {"dep_delay": [0, 60], "carrier": ["UA", "AA", "DL"]}}))
    requests.append(("GET", "/tables", None))
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, default=Path("/work/data/serve/flights.duckdb"))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    if not args.database.exists():
        from parzen.aqp.demo import open_demo_database

        args.database.parent.mkdir(parents=True, exist_ok=True)
        open_demo_database(args.database).con.close()
    from serve_support import serving

    from parzen.serve.load import run_load

    requests = mix()
    with serving(args.database) as url:
        result = run_load(url, requests, clients=args.clients, per_client=args.requests)
    summary = result.summary()
    out = {"machine": machine(), "note": args.note, "clients": args.clients, "per_client": args.requests,
           "mix": [f"{m} {p} {json.dumps(b) if b else ''}".strip() for m, p, b in requests], **summary,
           "first_errors": result.errors[:20]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve_load.json").write_text(json.dumps(out, indent=1))
    text = "\n".join([
        "# parzen serve: load test",
        "",
        f"Machine: {out['machine']}. {args.note}",
        "",
        (f"{args.clients} concurrent clients x {args.requests} requests each ({summary['requests']} in all) against "
        "one `parzen serve` process (uvicorn) on localhost serving nycflights13, each client sending its "
        f"requests one after another through a mix of {len(requests)}: the demo's 12 queries, 2 with intervals, "
        "a histogram query, a brush of the flights page (8 charts) and GET /tables "
        "(`python benchmarks/serve_load.py`)."),
        "",
        "| requests | errors | seconds | requests/s | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|",
        (f"| {summary['requests']} | {summary['errors']} | {summary['seconds']:.1f} | "
        f"{summary['requests_per_s']:.0f} | {summary['p50_ms']:.1f} | {summary['p95_ms']:.1f} | "
        f"{summary['p99_ms']:.1f} | {summary['max_ms']:.1f} |"),
        "",
        ("Latencies include queueing: up to 8 approximate answers run at once (an engine each), on the "
        "machine's cores, so with 50 clients a request waits for its share of them."),
    ]) + "\n"
    (RESULTS / "serve_load.md").write_text(text)
    print(text)
    if result.errors:
        raise SystemExit(f"{len(result.errors)} requests failed; first: {result.errors[0]}")


if __name__ == "__main__":
    main()
