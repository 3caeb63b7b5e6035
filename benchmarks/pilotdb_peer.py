"""PilotDB as a peer of :mod:`aqp_workloads`, run in PilotDB's own Python environment.

PilotDB (https://github.com/uiuc-kang-lab/PilotDB) pins sqlglot 26.30 and parzen needs >= 30, so it
runs in a process of its own: this script imports only PilotDB, DuckDB and the standard library.
It reads a JSON object ``{"database": path, "queries": [sql, ...], "error": e, "probability": p}``
on stdin, opens the DuckDB file through ``pilotdb.connect("duckdb", {"path": ...})``, answers each
query with ``pilotdb.run(conn, sql, error=e, probability=p)`` and writes one JSON line per query:
``{"ms": latency, "columns": [...], "rows": [[...], ...]}`` or ``{"error": "Type: message"}``.

Set up its environment (beside parzen's, never inside the project)::

    apt-get install -y unixodbc                # pyodbc, which PilotDB imports, loads libodbc.so.2
    git clone https://github.com/uiuc-kang-lab/PilotDB
    python -m venv /tmp/pilotdb-venv
    /tmp/pilotdb-venv/bin/pip install duckdb==<parzen's duckdb> sqlglot==26.30.0 numpy pandas scipy pyyaml \
        psycopg2-binary pyodbc flask gdown
    /tmp/pilotdb-venv/bin/pip install --no-deps -e PilotDB
"""

from __future__ import annotations

import json
import math
import sys
import time


def _plain(value):
    if value is None or type(value).__name__ == "NAType":  # pandas.NA (a NULL group key)
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def main() -> None:
    import pilotdb

    job = json.loads(sys.stdin.read())
    conn = pilotdb.connect("duckdb", {"path": job["database"]})
    try:
        for sql in job["queries"]:
            started = time.perf_counter()
            try:
                frame = pilotdb.run(conn, sql, error=job["error"], probability=job["probability"])
                out = {"ms": 1e3 * (time.perf_counter() - started), "columns": [str(c) for c in frame.columns],
                       "rows": [[_plain(v) for v in row] for row in frame.itertuples(index=False)]}
            except Exception as error:  # noqa: BLE001  (one query failing in PilotDB leaves the others)
                out = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
            print(json.dumps(out), flush=True)
    finally:
        pilotdb.close(conn)


if __name__ == "__main__":
    main()
