"""Binned PLUGIN over Parquet data on Dask workers: 1 against 2 workers of 1 thread, in one run.

Usage: python benchmarks/distributed_binned.py [--n 1000000000] [--repeat 2] [--workdir DIR] [--output-dir DIR]

The target (issue 18): on the 2-core machine, 2 workers x 1 thread at least 1.7x faster than 1 worker
for binned PLUGIN over 10^9 values in Parquet.

Data: n bimodal values (half N(-2, 0.5^2), half N(2, 0.5^2)) written by DuckDB into Parquet files
(benchmarks/binned_stream.py's ``write_dataset``; about 8 GB at 10^9, removed after).  Each
configuration runs ``plugin_stages`` (binned, tolerance 1e-4) on
``parzen.distributed.parquet.read_parquet_columns(files, ["x"])``: the workers read and bin their
partitions (Numba on one thread per task), and the summaries are added by a tree of tasks; only the
grids come back.  For reference, the same files streamed in this process (``ParquetData``, reading
ahead on a second thread and binning on every core).  Times are the best of ``--repeat`` after one
run that loads the files into the page cache and compiles; ``rel. h`` is |h - h_1| / h_1 against the
one worker.  Writes distributed_binned.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)
from binned_stream import best_time, write_dataset
from distributed import Client, LocalCluster

from parzen.bandwidth import plugin_stages
from parzen.binned import ParquetData
from parzen.distributed.parquet import read_parquet_columns

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e9)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    n = int(args.n)
    folder = Path(tempfile.mkdtemp(prefix="parzen-distributed-binned-", dir=args.workdir))
    rows = []
    try:
        glob = write_dataset(folder, n)
        files = sorted(str(p) for p in folder.glob("*.parquet"))
        for workers in (1, 2):
            with (
                LocalCluster(processes=True, n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster,
                Client(cluster) as client,
            ):
                data = read_parquet_columns(files, ["x"], client=client)
                partitions = data.description
                plugin_stages(data, method="binned")  # page cache, Numba's cache on the workers
                seconds, stages = best_time(lambda data=data: plugin_stages(data, method="binned"), args.repeat)
            rows.append({"config": f"Dask, {workers} worker(s) x 1 thread", "seconds": seconds, "h": stages.h,
                         "grid_size": stages.grid_size, "partitions": partitions})
            print(json.dumps(rows[-1]), flush=True)
        streamed = ParquetData(glob, ["x"])
        seconds, stages = best_time(lambda: plugin_stages(streamed, method="binned"), args.repeat)
        rows.append({"config": "streamed in this process (every core)", "seconds": seconds, "h": stages.h,
                     "grid_size": stages.grid_size, "partitions": None})
        print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    h_1 = rows[0]["h"]
    for r in rows:
        r["rel_h"] = abs(r["h"] - h_1) / h_1
        r["speed-up vs 1 worker"] = rows[0]["seconds"] / r["seconds"]
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    meta = {"machine": machine(), "n": n, "repeat": args.repeat, "note": f"load average at the end {load}"}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "distributed_binned.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [(f"Binned PLUGIN over n = {n} values in Parquet files, {meta['machine']} (best of {args.repeat}; "
             f"{meta['note']})"), "", "| configuration | data | seconds | speed-up vs 1 worker | rel. h |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['config']} | {r['partitions'] or '-'} | {r['seconds']:.2f} | {r['speed-up vs 1 worker']:.2f} | "
              f"{r['rel_h']:.1e} |" for r in rows]
    table = "\n".join(lines) + "\n"
    (args.output_dir / "distributed_binned.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
